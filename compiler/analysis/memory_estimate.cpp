// analysis/memory_estimate.cpp — see memory_estimate.h.
//
// 1. Per block (a function body, a loop body), find each value's last use
//    (the returns or next values live to the end; a value a loop body reads
//    lives until the loop ends). An op that shares its operand's buffer
//    (pbroadcast, reshape, a sharding hint, stop_gradient) adds no bytes: its
//    uses count as uses of the operand. The top function's parameters (the
//    input blocks the caller holds) live to the end.
// 2. Walk the block: add each result's bytes, take the peak (a call adds what
//    its callee needs beyond its arguments, computed once per callee; a loop
//    adds the peak of its body; an einsum its scratch), then subtract the
//    values whose last use this was.
// 3. Remember the largest value met on the way.
#include "analysis/memory_estimate.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/loops.h"
#include "spmdrt/checked.h"
#include "spmdrt/kernels.h"

namespace spmd {
namespace {

int64_t bytes_of(const Type &t) {
  return rt::checked_array_bytes(t.shape, static_cast<int64_t>(rt::dtype_size(t.dtype)))
      .value_or(INT64_MAX);
}

class Estimator {
 public:
  Estimator(const ir::Module &module, const SourceManager *sources)
      : module_(module), sources_(sources), above_args_(module.functions.size()) {}

  /// Peak bytes while `f` runs, its parameters included (`held`: alive to
  /// the end, as the top function's inputs are).
  int64_t peak(const ir::Function &f, bool held = false) {
    std::vector<ir::ValueId> params;
    for (const ir::Param &p : f.params) params.push_back(p.value);
    std::vector<ir::ValueId> kept = f.returns;
    if (held) kept.insert(kept.end(), params.begin(), params.end());
    return block_peak(f, params, f.body, kept);
  }

  /// Peak bytes while a block of `f` runs: its parameters, then each
  /// instruction's results, freed after their last use; `kept` live to the
  /// end. An instruction with regions (a loop) adds the peak of its largest
  /// region, and what the region reads from outside lives until it ends.
  int64_t block_peak(const ir::Function &f, const std::vector<ir::ValueId> &params,
                     const std::vector<ir::Instr> &body, const std::vector<ir::ValueId> &kept) {
    const size_t n = body.size();
    // A value whose op shares its operand's buffer is that operand.
    std::unordered_map<ir::ValueId, ir::ValueId> shares;
    for (const ir::Instr &in : body)
      if (shares_buffer(in.op) && in.results.size() == 1 && in.operands.size() == 1) {
        auto it = shares.find(in.operands[0]);
        shares[in.results[0]] = it != shares.end() ? it->second : in.operands[0];
      }
    auto buffer = [&](ir::ValueId v) {
      auto it = shares.find(v);
      return it != shares.end() ? it->second : v;
    };
    std::unordered_map<ir::ValueId, size_t> last;  // absent: never read in this block
    for (size_t i = 0; i < n; ++i) {
      for (ir::ValueId v : body[i].operands) last[buffer(v)] = i;
      for (const ir::Region &r : body[i].regions)
        for (ir::ValueId v : ir::captured_values(r)) last[buffer(v)] = i;
    }
    for (ir::ValueId v : kept) last[buffer(v)] = n;  // kept to the end
    std::vector<std::vector<ir::ValueId>> dies(n + 1);
    for (const auto &[v, at] : last) dies[at].push_back(v);
    int64_t live = 0;
    std::unordered_set<ir::ValueId> owned;  // defined in this block and alive
    auto add_value = [&](ir::ValueId v) {
      if (owned.insert(v).second) live = rt::saturating_add(live, bytes_of(f.type(v)));
      note(f, v);
    };
    auto free_value = [&](ir::ValueId v) {  // values from outside stay
      if (owned.erase(v)) live -= std::min(live, bytes_of(f.type(v)));
    };
    for (ir::ValueId v : params) add_value(v);
    int64_t top = live;
    for (size_t i = 0; i < n; ++i) {
      const ir::Instr &in = body[i];
      int64_t inner = 0;  // what a callee or a region needs beyond what is live here
      if (in.op == OpCode::Call) inner = above_args(static_cast<size_t>(in.attrs.call().callee));
      if (in.op == OpCode::Einsum) inner = einsum_scratch(f, in);
      for (const ir::Region &r : in.regions)
        inner = std::max(inner, block_peak(f, r.params, r.body, r.yields));
      for (ir::ValueId r : in.results)
        if (!shares.count(r)) add_value(r);
      top = std::max(top, rt::saturating_add(live, inner));
      for (ir::ValueId v : dies[i]) free_value(v);
      for (ir::ValueId r : in.results)  // results nothing reads
        if (!last.count(r)) free_value(r);
    }
    return top;
  }

  /// What the runtime's einsum allocates beyond its result (rt::einsum_scratch_bytes).
  static int64_t einsum_scratch(const ir::Function &f, const ir::Instr &in) {
    std::vector<Shape> shapes;
    for (ir::ValueId v : in.operands) shapes.push_back(f.type(v).shape);
    if (shapes.empty() || shapes.size() > 2) return 0;
    return rt::einsum_scratch_bytes(in.attrs.einsum().spec, shapes, f.type(in.operands[0]).dtype);
  }

  /// Ops whose result is their operand's buffer when they run (interp/eval_op.cpp).
  static bool shares_buffer(OpCode op) {
    return op == OpCode::Pbroadcast || op == OpCode::Reshape || op == OpCode::Constrain ||
           op == OpCode::StopGradient;
  }

  rt::MemoryEstimate result(int64_t device_bytes) const {
    rt::MemoryEstimate e;
    e.device_bytes = device_bytes;
    e.largest_bytes = largest_bytes_;
    if (largest_fn_) {
      const ir::Value &v = largest_fn_->values[static_cast<size_t>(largest_)];
      e.largest = "`" + (v.name.empty() ? std::string() : v.name + ": ") +
                  shape_type_str(v.type.dtype, v.type.shape) + "`";
      if (sources_ && v.span.valid()) {
        SourceLocation loc = sources_->location(v.span);
        e.largest += " at " + std::string(loc.path) + ":" + std::to_string(loc.line) + ":" +
                     std::to_string(loc.column);
      }
    }
    return e;
  }

 private:
  int64_t above_args(size_t fi) {
    if (!above_args_[fi]) {
      const ir::Function &f = module_.functions[fi];
      int64_t args = 0;
      for (const ir::Param &p : f.params)
        args = rt::saturating_add(args, bytes_of(f.type(p.value)));
      const int64_t p = peak(f);
      above_args_[fi] = p == INT64_MAX ? INT64_MAX : p - std::min(p, args);
    }
    return *above_args_[fi];
  }

  void note(const ir::Function &f, ir::ValueId v) {
    const int64_t b = bytes_of(f.type(v));
    if (b > largest_bytes_) {
      largest_bytes_ = b;
      largest_fn_ = &f;
      largest_ = v;
    }
  }

  const ir::Module &module_;
  const SourceManager *sources_;
  std::vector<std::optional<int64_t>> above_args_;
  int64_t largest_bytes_ = 0;
  const ir::Function *largest_fn_ = nullptr;
  ir::ValueId largest_ = ir::kNoValue;
};

}  // namespace

rt::MemoryEstimate estimate_memory(const ir::Module &module, const ir::Function &function,
                                   const SourceManager *sources) {
  Estimator e(module, sources);
  const int64_t peak = e.peak(function, /*held=*/true);
  return e.result(peak);
}

int64_t host_io_bytes(const ir::Function &function) {
  int64_t total = 0;
  for (const ir::Param &p : function.params)
    total =
        rt::saturating_add(total, bytes_of(Type{function.type(p.value).dtype, p.global_shape, {}}));
  for (size_t k = 0; k < function.results.size() && k < function.returns.size(); ++k)
    total = rt::saturating_add(total, bytes_of(Type{function.type(function.returns[k]).dtype,
                                                    function.results[k].global_shape,
                                                    {}}));
  return total;
}

}  // namespace spmd
