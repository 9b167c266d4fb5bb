// transforms/unroll_loops.cpp — see unroll_loops.h.
#include "transforms/unroll_loops.h"

#include "ir/value_map.h"

namespace spmd {
namespace {

class Unroller {
 public:
  explicit Unroller(ir::Function &f) : f_(f) {}

  void run() {
    std::vector<ir::Instr> body = std::move(f_.body);
    f_.body.clear();
    emit_block(body, f_.body, /*copy_results=*/false);
    for (auto &r : f_.returns) r = get(r);
  }

 private:
  ir::ValueId get(ir::ValueId v) const {
    const ir::ValueId *mapped = map_.find(v);
    return mapped ? *mapped : v;
  }

  /// Appends `block` to `out`, remapping operands; with copy_results every
  /// result gets a fresh value (a loop iteration), else results keep their ids.
  void emit_block(const std::vector<ir::Instr> &block, std::vector<ir::Instr> &out,
                  bool copy_results) {
    for (const ir::Instr &in : block) {
      if (in.op == OpCode::For) {
        emit_loop(in, out);
        continue;
      }
      ir::Instr copy = in;
      for (auto &o : copy.operands) o = get(o);
      if (copy_results) {
        for (auto &r : copy.results) {
          const ir::Value v = f_.values[r];
          ir::ValueId nr = f_.add_value(v.type, v.name, v.span);
          map_[r] = nr;
          r = nr;
        }
      }
      out.push_back(std::move(copy));
    }
  }

  void emit_loop(const ir::Instr &loop, std::vector<ir::Instr> &out) {
    const ir::Region &region = loop.regions.at(0);
    std::vector<ir::ValueId> carried;
    for (ir::ValueId o : loop.operands) carried.push_back(get(o));
    for (int64_t k = loop.attrs.dim; k < loop.attrs.dim2; ++k) {
      ir::Instr counter;
      counter.op = OpCode::Constant;
      counter.attrs.dtype = DType::I32;
      counter.attrs.value = static_cast<double>(k);
      counter.span = loop.span;
      counter.origin = ir::Origin::Lowering;
      const ir::Value &kv = f_.values[region.params[0]];
      counter.results.push_back(f_.add_value(kv.type, "", kv.span));
      map_[region.params[0]] = counter.results[0];
      out.push_back(std::move(counter));
      for (size_t j = 0; j < carried.size(); ++j) map_[region.params[j + 1]] = carried[j];
      emit_block(region.body, out, /*copy_results=*/true);
      for (size_t j = 0; j < carried.size(); ++j) carried[j] = get(region.yields[j]);
    }
    for (size_t j = 0; j < loop.results.size(); ++j) map_[loop.results[j]] = carried[j];
  }

  ir::Function &f_;
  ir::ValueMap<ir::ValueId> map_;
};

bool block_has_loops(const std::vector<ir::Instr> &body) {
  for (const auto &in : body)
    if (in.op == OpCode::For) return true;
  return false;
}

}  // namespace

bool has_loops(const ir::Module &module) {
  for (const auto &f : module.functions)
    if (block_has_loops(f.body)) return true;
  return false;
}

void unroll_loops(ir::Module &module) {
  for (auto &f : module.functions)
    if (block_has_loops(f.body)) Unroller(f).run();
}

}  // namespace spmd
