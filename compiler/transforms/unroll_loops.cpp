// transforms/unroll_loops.cpp — see unroll_loops.h.
#include "transforms/unroll_loops.h"

#include "ir/loops.h"
#include "ir/value_map.h"

namespace spmd {
namespace {

/// `top`: the loop would land at the top level of the function.
bool should_unroll(const ir::Instr &loop, const UnrollPolicy &policy, bool top) {
  if (policy.keep_top_level) return !(top && kept_at_top_level(loop));
  return loop.attrs.loop().unroll ||
         (policy.max_trip_count > 0 && ir::trip_count(loop.attrs) <= policy.max_trip_count);
}

bool block_unrolls(const std::vector<ir::Instr> &body, const UnrollPolicy &policy, bool top) {
  for (const ir::Instr &in : body) {
    if (in.op != OpCode::For) continue;
    if (should_unroll(in, policy, top) || block_unrolls(in.regions.at(0).body, policy, false))
      return true;
  }
  return false;
}

class Unroller {
 public:
  Unroller(ir::Function &f, const UnrollPolicy &policy) : f_(f), policy_(policy) {}

  void run() {
    std::vector<ir::Instr> body = std::move(f_.body);
    f_.body.clear();
    emit_block(body, f_.body, /*fresh=*/false, /*top=*/true);
    for (auto &r : f_.returns) r = get(r);
  }

 private:
  ir::ValueId get(ir::ValueId v) const {
    const ir::ValueId *mapped = map_.find(v);
    return mapped ? *mapped : v;
  }

  /// A new value like `v`, recorded as its replacement.
  ir::ValueId renew(ir::ValueId v) {
    const ir::Value old = f_.values[v];
    ir::ValueId nv = f_.add_value(old.type, old.name, old.span);
    map_[v] = nv;
    return nv;
  }

  /// Appends `block` to `out`, remapping operands; with `fresh` every value the
  /// block defines gets a new id (an iteration of an unrolled loop). `top`:
  /// `out` is the function's body.
  void emit_block(const std::vector<ir::Instr> &block, std::vector<ir::Instr> &out, bool fresh,
                  bool top) {
    for (const ir::Instr &in : block) {
      if (in.op == OpCode::For && should_unroll(in, policy_, top)) {
        emit_unrolled(in, out, top);
        continue;
      }
      ir::Instr copy = in;
      for (auto &o : copy.operands) o = get(o);
      copy.regions.clear();
      for (const ir::Region &r : in.regions) {
        ir::Region nr;
        for (ir::ValueId p : r.params) nr.params.push_back(fresh ? renew(p) : p);
        emit_block(r.body, nr.body, fresh, /*top=*/false);
        for (ir::ValueId y : r.yields) nr.yields.push_back(get(y));
        copy.regions.push_back(std::move(nr));
      }
      if (fresh)
        for (auto &r : copy.results) r = renew(r);
      out.push_back(std::move(copy));
    }
  }

  void emit_unrolled(const ir::Instr &loop, std::vector<ir::Instr> &out, bool top) {
    const ir::Region &region = loop.regions.at(0);
    std::vector<ir::ValueId> carried;
    for (ir::ValueId o : loop.operands) carried.push_back(get(o));
    const int64_t trips = ir::trip_count(loop.attrs);
    for (int64_t n = 0; n < trips; ++n) {
      ir::Instr counter;
      counter.op = OpCode::Constant;
      counter.attrs.creation().dtype = DType::I32;
      counter.attrs.creation().value = static_cast<double>(ir::loop_index_at(loop.attrs, n));
      counter.span = loop.span;
      counter.origin = ir::Origin::Lowering;
      const ir::Value &kv = f_.values[region.params[0]];
      counter.results.push_back(f_.add_value(kv.type, "", kv.span));
      map_[region.params[0]] = counter.results[0];
      out.push_back(std::move(counter));
      for (size_t j = 0; j < carried.size(); ++j) map_[region.params[j + 1]] = carried[j];
      emit_block(region.body, out, /*fresh=*/true, top);
      for (size_t j = 0; j < carried.size(); ++j) carried[j] = get(region.yields[j]);
    }
    for (size_t j = 0; j < loop.results.size(); ++j) map_[loop.results[j]] = carried[j];
  }

  ir::Function &f_;
  const UnrollPolicy &policy_;
  ir::ValueMap<ir::ValueId> map_;
};

}  // namespace

bool kept_at_top_level(const ir::Instr &loop) {
  return !loop.attrs.loop().unroll && ir::trip_count(loop.attrs) >= 2;
}

bool unrolls_any(const ir::Module &module, const UnrollPolicy &policy) {
  for (const auto &f : module.functions)
    if (block_unrolls(f.body, policy, true)) return true;
  return false;
}

int64_t unrolled_size(const ir::Function &function, const UnrollPolicy &policy) {
  // (Used with max_trip_count; sharding counts its own size, sharding/problem.cpp.)
  return ir::unrolled_size(function.body, [&](const ir::Instr &loop) {
    return should_unroll(loop, policy, /*top=*/false);
  });
}

void unroll_loops(ir::Module &module, const UnrollPolicy &policy) {
  for (auto &f : module.functions) unroll_loops(f, policy);
}

void unroll_loops(ir::Function &function, const UnrollPolicy &policy) {
  if (block_unrolls(function.body, policy, true)) Unroller(function, policy).run();
}

}  // namespace spmd
