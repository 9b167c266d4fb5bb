// transforms/combine_collectives.cpp — see combine_collectives.h.
#include "transforms/combine_collectives.h"

#include <algorithm>
#include <optional>

#include "ops/variance_rules.h"

namespace spmd {
namespace {

struct Bucket {
  OpCode op = OpCode::Psum;
  std::vector<int> axes;
  std::vector<size_t> members;  // instruction indices, in program order
  int64_t bytes = 0;
};

int64_t operand_bytes(const ir::Function &f, const ir::Instr &in) {
  int64_t bytes = 0;
  for (ir::ValueId v : in.operands)
    bytes += f.type(v).numel() * static_cast<int64_t>(rt::dtype_size(f.type(v).dtype));
  return bytes;
}

/// The values an instruction reads: its operands and, for a loop, every value
/// its body reads (a loop body may read any value defined before the loop).
/// Values the body defines itself are included too; they are never results of
/// the block being combined, so they carry no dependence there.
void collect_reads(const ir::Instr &in, std::vector<ir::ValueId> &out) {
  out.insert(out.end(), in.operands.begin(), in.operands.end());
  for (const ir::Region &r : in.regions) {
    for (const ir::Instr &inner : r.body) collect_reads(inner, out);
    out.insert(out.end(), r.yields.begin(), r.yields.end());
  }
}

std::vector<ir::ValueId> reads(const ir::Instr &in) {
  if (in.regions.empty()) return in.operands;
  std::vector<ir::ValueId> out;
  collect_reads(in, out);
  return out;
}

/// Merges one bucket (members at increasing positions of `block`, mutually
/// independent) into its last member and moves the instructions between the
/// first and the last member that depend on a member's result to just after
/// the combined collective.
void merge_bucket(const ir::Function &f, std::vector<ir::Instr> &block,
                  const std::vector<ir::Instr *> &members) {
  std::vector<size_t> at;
  for (size_t i = 0, m = 0; i < block.size() && m < members.size(); ++i)
    if (&block[i] == members[m]) at.push_back(i), ++m;
  ir::Instr combined;
  combined.op = members.front()->op;
  combined.attrs = members.front()->attrs;
  combined.span = members.front()->span;
  combined.origin = ir::Origin::Transform;
  std::vector<bool> tainted(f.values.size(), false);
  for (ir::Instr *m : members) {
    combined.operands.insert(combined.operands.end(), m->operands.begin(), m->operands.end());
    combined.results.insert(combined.results.end(), m->results.begin(), m->results.end());
    for (ir::ValueId r : m->results) tainted[r] = true;
  }
  std::vector<ir::Instr> body, later;
  body.reserve(block.size());
  for (size_t i = 0; i < at.front(); ++i) body.push_back(std::move(block[i]));
  for (size_t i = at.front(), m = 0; i <= at.back(); ++i) {
    if (m < at.size() && i == at[m]) {
      ++m;
      continue;
    }
    ir::Instr &in = block[i];
    bool depends = false;
    for (ir::ValueId v : reads(in)) depends = depends || tainted[v];
    if (depends) {
      for (ir::ValueId r : in.results) tainted[r] = true;
      later.push_back(std::move(in));
    } else {
      body.push_back(std::move(in));
    }
  }
  body.push_back(std::move(combined));
  for (ir::Instr &in : later) body.push_back(std::move(in));
  for (size_t i = at.back() + 1; i < block.size(); ++i) body.push_back(std::move(block[i]));
  block = std::move(body);
}

/// The instructions whose first result is a key, in their current order,
/// less those that read (through any chain of instructions) an earlier one.
/// Members of one bucket are independent in the original program, but an
/// earlier merge can join them up: if psums p1, p2 over `a` and q1, q2 over
/// `b` have q1 reading p1 and p2 reading q2, the combined {p1, p2} reads q2
/// and feeds q1, so combining q1 with q2 would be a cycle. Such a member
/// stays alone.
std::vector<ir::Instr *> independent_members(const ir::Function &f, std::vector<ir::Instr> &block,
                                             const std::vector<bool> &is_key) {
  std::vector<ir::Instr *> members;
  std::vector<bool> reads_member(f.values.size(), false);
  for (ir::Instr &in : block) {
    const bool member = !in.results.empty() && is_key[in.results[0]];
    if (members.empty() && !member) continue;
    bool depends = false;
    for (ir::ValueId v : reads(in)) depends = depends || reads_member[v];
    if (member && !depends) members.push_back(&in);
    if (member || depends)
      for (ir::ValueId r : in.results) reads_member[r] = true;
  }
  return members;
}

/// Combines the all-reduces of one block (a function body or a loop body);
/// a loop inside it is one instruction that reads everything its body reads.
int combine_block(const ir::Function &f, std::vector<ir::Instr> &block,
                  const CombineOptions &options) {
  // Buckets, in one pass. A value's mask says which open buckets (by slot) it
  // depends on; a candidate whose operands depend on its bucket closes it.
  constexpr size_t kSlots = 64;
  struct Open {
    size_t bucket;
    uint64_t bit;
  };
  std::vector<Bucket> buckets;
  std::vector<Open> open;  // at most one per (op, axes)
  std::vector<uint64_t> mask(f.values.size(), 0);
  size_t next_slot = 0;
  for (size_t i = 0; i < block.size(); ++i) {
    const ir::Instr &in = block[i];
    uint64_t m = 0;
    for (ir::ValueId v : reads(in)) m |= mask[v];
    const int64_t bytes = is_combinable_reduce(in.op) ? operand_bytes(f, in) : 0;
    if (is_combinable_reduce(in.op) && bytes <= options.threshold_bytes) {  // (huge: alone)
      auto it = std::find_if(open.begin(), open.end(), [&](const Open &o) {
        return buckets[o.bucket].op == in.op && buckets[o.bucket].axes == in.attrs.axes;
      });
      if (it != open.end() &&
          ((m & it->bit) || buckets[it->bucket].bytes + bytes > options.threshold_bytes)) {
        open.erase(it);  // (1) dependent, or (2) full: closed
        it = open.end();
      }
      if (it == open.end()) {
        buckets.push_back({in.op, in.attrs.axes, {}, 0});
        open.push_back({buckets.size() - 1, uint64_t{1} << (next_slot++ % kSlots)});
        it = open.end() - 1;
      }
      buckets[it->bucket].members.push_back(i);
      buckets[it->bucket].bytes += bytes;
      m |= it->bit;
    }
    for (ir::ValueId r : in.results) mask[r] = m;
  }

  // (3) Merge each bucket of two or more. Merging one bucket moves
  // instructions, so members are found again by their first result.
  std::vector<std::vector<ir::ValueId>> keys;
  for (const Bucket &b : buckets) {
    if (b.members.size() < 2) continue;
    keys.emplace_back();
    for (size_t i : b.members) keys.back().push_back(block[i].results.at(0));
  }
  int merged = 0;
  std::vector<bool> is_key(f.values.size(), false);
  for (const std::vector<ir::ValueId> &key : keys) {
    for (ir::ValueId v : key) is_key[v] = true;
    std::vector<ir::Instr *> members = independent_members(f, block, is_key);
    for (ir::ValueId v : key) is_key[v] = false;
    if (members.size() < 2) continue;
    merged += static_cast<int>(members.size()) - 1;
    merge_bucket(f, block, members);
  }
  return merged;
}

int combine_nested(const ir::Function &f, std::vector<ir::Instr> &block,
                   const CombineOptions &options) {
  int merged = 0;
  for (ir::Instr &in : block)
    for (ir::Region &r : in.regions) merged += combine_nested(f, r.body, options);
  return merged + combine_block(f, block, options);
}

}  // namespace

int combine_collectives(ir::Function &f, const CombineOptions &options) {
  if (options.threshold_bytes <= 0) return 0;
  return combine_nested(f, f.body, options);
}

namespace {

void split_block(std::vector<ir::Instr> &block) {
  std::vector<ir::Instr> body;
  body.reserve(block.size());
  for (ir::Instr &in : block) {
    for (ir::Region &r : in.regions) split_block(r.body);  // loop bodies too
    if (!is_combinable_reduce(in.op) || in.operands.size() == 1) {
      body.push_back(std::move(in));
      continue;
    }
    for (size_t k = 0; k < in.operands.size(); ++k) {
      ir::Instr one;
      one.op = in.op;
      one.attrs = in.attrs;
      one.span = in.span;
      one.origin = in.origin;
      one.operands = {in.operands[k]};
      one.results = {in.results[k]};
      body.push_back(std::move(one));
    }
  }
  block = std::move(body);
}

}  // namespace

void split_collectives(ir::Function &f) { split_block(f.body); }

}  // namespace spmd
