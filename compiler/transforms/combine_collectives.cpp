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
  int64_t dim = 0;              // gathers and scatters: the dimension
  bool tiled = true;            // and the tiling (all-reduces have none)
  std::vector<size_t> members;  // instruction indices, in program order
  int64_t bytes = 0;

  /// Whether `in` is a collective of this bucket's kind: the same op over the
  /// same axes (all_gather and psum_scatter: along the same dimension, tiled alike).
  bool takes(const ir::Instr &in) const {
    if (in.op != op || in.attrs.collective().axes != axes) return false;
    return is_combinable_reduce(op) ||
           (in.attrs.collective().dim == dim && in.attrs.collective().tiled == tiled);
  }
};

/// A collective's size per device, as `spmdc cost` counts it: its operands'
/// bytes, or its results' for an all_gather (the gathered buffer).
int64_t collective_bytes(const ir::Function &f, const ir::Instr &in) {
  int64_t bytes = 0;
  auto add = [&](ir::ValueId v) {
    bytes += f.type(v).numel() * static_cast<int64_t>(rt::dtype_size(f.type(v).dtype));
  };
  if (in.op == OpCode::AllGather || in.op == OpCode::AllGatherInvariant) {
    for (ir::ValueId v : in.results) add(v);
  } else {
    for (ir::ValueId v : in.operands) add(v);
  }
  return bytes;
}

/// Calls `fn` on each value an instruction reads: its operands and, for a
/// loop, every value its body reads (a loop body may read any value defined
/// before the loop). Values the body defines itself are visited too; they are
/// never results of the block being combined, so they carry no dependence there.
template <typename Fn>
void for_each_read(const ir::Instr &in, Fn &&fn) {
  for (ir::ValueId v : in.operands) fn(v);
  for (const ir::Region &r : in.regions) {
    for (const ir::Instr &inner : r.body) for_each_read(inner, fn);
    for (ir::ValueId y : r.yields) fn(y);
  }
}

/// Per-value scratch tables shared by every block of one function, so that a
/// block costs time in its own size, not in the function's: each block sets
/// entries only for the values it touches and clears them again when done.
struct Scratch {
  explicit Scratch(size_t values) : mask(values, 0), flag(values, 0), pos(values, 0) {}
  std::vector<uint64_t> mask;    // the open buckets a value depends on
  std::vector<uint8_t> flag;     // kKey / kReadsMember / kTainted bits, see below
  std::vector<size_t> pos;       // where the instruction a key value is the first result of is
  std::vector<ir::ValueId> set;  // values with a flag set (cleared by clear_flags)
  void mark(ir::ValueId v, uint8_t bit) {
    if (!flag[v]) set.push_back(v);
    flag[v] |= bit;
  }
  void clear_flags(uint8_t bits) {
    for (ir::ValueId v : set) flag[v] &= static_cast<uint8_t>(~bits);
    std::erase_if(set, [&](ir::ValueId v) { return flag[v] == 0; });
  }
};
constexpr uint8_t kKey = 1, kReadsMember = 2, kTainted = 4;

/// A block being combined. Merging a bucket rewrites only the stretch from
/// its first member to its last: instructions move within it and the slots
/// it no longer needs are left dead (removed once, at the end), so the
/// positions of everything else stay put.
struct Block {
  std::vector<ir::Instr> &code;
  std::vector<bool> dead = std::vector<bool>(code.size(), false);
};

/// The live members of one bucket (their first results are flagged kKey) in
/// their current order, less those that read (through any chain of
/// instructions) an earlier one. Members of one bucket are independent in
/// the original program, but an earlier merge can join them up: if psums p1,
/// p2 over `a` and q1, q2 over `b` have q1 reading p1 and p2 reading q2, the
/// combined {p1, p2} reads q2 and feeds q1, so combining q1 with q2 would be
/// a cycle. Such a member stays alone. Only [lo, hi], where the keys are, is scanned.
std::vector<size_t> independent_members(Block &b, Scratch &s, size_t lo, size_t hi) {
  std::vector<size_t> members;
  for (size_t i = lo; i <= hi; ++i) {
    if (b.dead[i]) continue;
    const ir::Instr &in = b.code[i];
    const bool member = !in.results.empty() && (s.flag[in.results[0]] & kKey);
    bool depends = false;
    for_each_read(in, [&](ir::ValueId v) { depends = depends || (s.flag[v] & kReadsMember); });
    if (member && !depends) members.push_back(i);
    if (member || depends)
      for (ir::ValueId r : in.results) s.mark(r, kReadsMember);
  }
  s.clear_flags(kReadsMember);
  return members;
}

/// Merges one bucket (members at increasing live positions `at`, mutually
/// independent) into one instruction and moves the instructions between the
/// first and the last member that depend on a member's result to just after
/// it; the stretch [at.front(), at.back()] is rewritten in place.
void merge_bucket(Block &b, Scratch &s, const std::vector<size_t> &at) {
  const ir::Instr &first = b.code[at.front()];
  ir::Instr combined;
  combined.op = first.op;
  combined.attrs = first.attrs;
  combined.span = first.span;
  combined.origin = ir::Origin::Transform;
  for (size_t i : at) {
    const ir::Instr &m = b.code[i];
    combined.operands.insert(combined.operands.end(), m.operands.begin(), m.operands.end());
    combined.results.insert(combined.results.end(), m.results.begin(), m.results.end());
    for (ir::ValueId r : m.results) s.mark(r, kTainted);
  }
  std::vector<ir::Instr> kept, later;
  for (size_t i = at.front(), m = 0; i <= at.back(); ++i) {
    if (b.dead[i]) continue;
    if (m < at.size() && i == at[m]) {
      ++m;
      continue;
    }
    ir::Instr &in = b.code[i];
    bool depends = false;
    for_each_read(in, [&](ir::ValueId v) { depends = depends || (s.flag[v] & kTainted); });
    if (depends) {
      for (ir::ValueId r : in.results) s.mark(r, kTainted);
      later.push_back(std::move(in));
    } else {
      kept.push_back(std::move(in));
    }
  }
  s.clear_flags(kTainted);
  kept.push_back(std::move(combined));
  for (ir::Instr &in : later) kept.push_back(std::move(in));
  // Dead slots first, then the stretch's instructions in their new order.
  const size_t end = at.back() + 1, live_from = end - kept.size();
  for (size_t i = at.front(); i < live_from; ++i) {
    b.code[i] = ir::Instr{};
    b.dead[i] = true;
  }
  for (size_t i = live_from; i < end; ++i) {
    b.code[i] = std::move(kept[i - live_from]);
    b.dead[i] = false;
    if (!b.code[i].results.empty()) s.pos[b.code[i].results[0]] = i;
  }
}

/// Combines the collectives of one block (a function body or a loop body);
/// a loop inside it is one instruction that reads everything its body reads.
int combine_block(const ir::Function &f, std::vector<ir::Instr> &block,
                  const CombineOptions &options, Scratch &s) {
  // Buckets, in one pass. A value's mask says which open buckets (by slot) it
  // depends on; a candidate whose operands depend on its bucket closes it.
  constexpr size_t kSlots = 64;
  struct Open {
    size_t bucket;
    uint64_t bit;
  };
  std::vector<Bucket> buckets;
  std::vector<Open> open;  // at most one per (op, axes, dim, tiled)
  size_t next_slot = 0;
  for (size_t i = 0; i < block.size(); ++i) {
    const ir::Instr &in = block[i];
    uint64_t m = 0;
    for_each_read(in, [&](ir::ValueId v) { m |= s.mask[v]; });
    const int64_t bytes = is_combinable_collective(in.op) ? collective_bytes(f, in) : 0;
    if (is_combinable_collective(in.op) && bytes <= options.threshold_bytes) {  // (huge: alone)
      auto it = std::find_if(open.begin(), open.end(),
                             [&](const Open &o) { return buckets[o.bucket].takes(in); });
      if (it != open.end() &&
          ((m & it->bit) || buckets[it->bucket].bytes + bytes > options.threshold_bytes)) {
        open.erase(it);  // (1) dependent, or (2) full: closed
        it = open.end();
      }
      if (it == open.end()) {
        buckets.push_back({in.op,
                           in.attrs.collective().axes,
                           in.attrs.collective().dim,
                           in.attrs.collective().tiled,
                           {},
                           0});
        open.push_back({buckets.size() - 1, uint64_t{1} << (next_slot++ % kSlots)});
        it = open.end() - 1;
      }
      buckets[it->bucket].members.push_back(i);
      buckets[it->bucket].bytes += bytes;
      m |= it->bit;
    }
    for (ir::ValueId r : in.results) s.mask[r] = m;
  }
  for (const ir::Instr &in : block)
    for (ir::ValueId r : in.results) s.mask[r] = 0;

  // (3) Merge each bucket of two or more. Merging one bucket moves
  // instructions, so members are found again by their first result.
  std::vector<std::vector<ir::ValueId>> keys;
  for (const Bucket &bucket : buckets) {
    if (bucket.members.size() < 2) continue;
    keys.emplace_back();
    for (size_t i : bucket.members) keys.back().push_back(block[i].results.at(0));
  }
  Block b{block};
  for (size_t i = 0; i < block.size(); ++i)
    if (!block[i].results.empty()) s.pos[block[i].results[0]] = i;
  int merged = 0;
  for (const std::vector<ir::ValueId> &key : keys) {
    size_t lo = block.size(), hi = 0;
    for (ir::ValueId v : key) {
      s.mark(v, kKey);
      lo = std::min(lo, s.pos[v]);
      hi = std::max(hi, s.pos[v]);
    }
    std::vector<size_t> members = independent_members(b, s, lo, hi);
    s.clear_flags(kKey);
    if (members.size() < 2) continue;
    merged += static_cast<int>(members.size()) - 1;
    merge_bucket(b, s, members);
  }
  if (merged > 0) {
    size_t kept = 0;
    for (size_t i = 0; i < block.size(); ++i)
      if (!b.dead[i]) {
        if (kept != i) block[kept] = std::move(block[i]);
        ++kept;
      }
    block.resize(kept);
  }
  return merged;
}

int combine_nested(const ir::Function &f, std::vector<ir::Instr> &block,
                   const CombineOptions &options, Scratch &s) {
  int merged = 0;
  for (ir::Instr &in : block)
    for (ir::Region &r : in.regions) merged += combine_nested(f, r.body, options, s);
  return merged + combine_block(f, block, options, s);
}

}  // namespace

int combine_collectives(ir::Function &f, const CombineOptions &options) {
  if (options.threshold_bytes <= 0) return 0;
  Scratch s(f.values.size());
  return combine_nested(f, f.body, options, s);
}

namespace {

void split_block(std::vector<ir::Instr> &block) {
  std::vector<ir::Instr> body;
  body.reserve(block.size());
  for (ir::Instr &in : block) {
    for (ir::Region &r : in.regions) split_block(r.body);  // loop bodies too
    if (!is_combinable_collective(in.op) || in.operands.size() == 1) {
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
