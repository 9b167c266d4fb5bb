// transforms/hoist_broadcasts.cpp — see hoist_broadcasts.h.
//
// One walk over each block, in order:
//   1. every value that only broadcasts another (broadcast_to; a reshape or
//      a sum over size-1 dimensions that adds or drops leading 1s) is
//      remembered with the value it broadcasts, through chains of them;
//   2. an add or subtraction reads those values instead of its operands; when
//      they give the op's shape it just reads them; otherwise, when that is
//      fewer elements or every operand was a broadcast, a new instruction
//      computes the op on them (inserted just before, once the block has
//      been walked) and the op becomes the broadcast_to (or reshape) of that
//      instruction's result to its shape.
// Every rewrite is checked with the shape and variance rules and kept only
// when the op's result keeps exactly its type.
#include "transforms/hoist_broadcasts.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "ops/shape_rules.h"
#include "ops/variance_rules.h"

namespace spmd {
namespace {

/// Adds and subtractions only: their transposes distribute exactly over the
/// sum that transposes a broadcast. A factor would not (`broadcast_to(a) * c`
/// transposes to `sum(ct * c)`, `broadcast_to(a * c)` to `sum(ct) * c`: a
/// different rounding), and neither would a negation moved out of the
/// negation rules' reach (peephole.h).
bool hoisted(OpCode op) { return op == OpCode::Add || op == OpCode::Sub; }

class Hoister {
 public:
  Hoister(const ir::Module &module, ir::Function &f)
      : f_(f), mesh_(module.mesh_of(f)), source_(f.values.size(), ir::kNoValue) {}

  void run(std::vector<ir::Instr> &body) {
    std::vector<std::pair<size_t, ir::Instr>> inserted;  // (before index, instruction)
    for (size_t index = 0; index < body.size(); ++index) {
      ir::Instr &in = body[index];
      for (ir::Region &r : in.regions) run(r.body);
      if (hoisted(in.op) && in.results.size() == 1)
        if (std::optional<ir::Instr> before = hoist(in))
          inserted.emplace_back(index, std::move(*before));
      remember(in);
    }
    if (inserted.empty()) return;  // (the block is rebuilt only when something was added)
    std::vector<ir::Instr> out;
    out.reserve(body.size() + inserted.size());
    auto next = inserted.begin();
    for (size_t index = 0; index < body.size(); ++index) {
      for (; next != inserted.end() && next->first == index; ++next)
        out.push_back(std::move(next->second));
      out.push_back(std::move(body[index]));
    }
    body = std::move(out);
  }

 private:
  /// The value `v` broadcasts (through a chain of broadcasts), or v.
  ir::ValueId root(ir::ValueId v) const {
    const ir::ValueId s = source_[static_cast<size_t>(v)];
    return s == ir::kNoValue ? v : s;
  }

  /// Step 1: the value an instruction's result only broadcasts, if it does.
  void remember(const ir::Instr &in) {
    if (in.results.size() != 1 || in.operands.size() != 1) return;
    const ir::ValueId x = in.operands[0], r = in.results[0];
    bool broadcasts = in.op == OpCode::BroadcastTo;
    if (in.op == OpCode::Reshape || in.op == OpCode::ReduceSum) {
      const Shape &from = f_.type(x).shape;
      broadcasts = same_but_leading_ones(from, f_.type(r).shape);
      if (in.op == OpCode::ReduceSum)
        for (int64_t d : in.attrs.reduce().dims)
          broadcasts = broadcasts && from[static_cast<size_t>(d)] == 1;
    }
    if (broadcasts) source_[static_cast<size_t>(r)] = root(x);
  }

  /// The type of `op(operands, attrs)` by the shape and variance rules.
  std::optional<Type> typed(OpCode op, const std::vector<Type> &types, const Attrs &attrs) const {
    AxisSet variance;
    for (const Type &t : types) variance = variance | t.variance;
    ShapeRuleResult shapes = infer_shapes(op, types, attrs, mesh_);
    if (!shapes.ok() || shapes.results.size() != 1) return std::nullopt;
    Type t = shapes.results[0];
    t.variance = result_variance(op, variance, attrs);
    return t;
  }

  /// Step 2: rewrites `in`; returns the instruction to insert before it, if any.
  std::optional<ir::Instr> hoist(ir::Instr &in) {
    std::vector<ir::ValueId> sources;
    std::vector<Type> types;
    size_t broadcast = 0;
    for (ir::ValueId o : in.operands) {
      sources.push_back(root(o));
      types.push_back(f_.type(sources.back()));
      broadcast += sources.back() != o;
    }
    if (broadcast == 0) return std::nullopt;
    const Type want = f_.type(in.results[0]);
    const std::optional<Type> inner = typed(in.op, types, in.attrs);
    if (!inner || inner->dtype != want.dtype || inner->variance != want.variance)
      return std::nullopt;
    if (inner->shape == want.shape) {  // NumPy broadcasting does the rest
      in.operands = std::move(sources);
      return std::nullopt;
    }
    if (rt::num_elements(inner->shape) >= rt::num_elements(want.shape) &&
        broadcast < in.operands.size())
      return std::nullopt;
    Attrs to;
    to.layout().shape = want.shape;
    for (OpCode wrap : {OpCode::BroadcastTo, OpCode::Reshape}) {
      if (wrap == OpCode::Reshape && !same_but_leading_ones(inner->shape, want.shape)) break;
      const std::optional<Type> t = typed(wrap, {*inner}, to);
      if (!t || !(*t == want)) continue;
      ir::Instr before;
      before.op = in.op;
      before.operands = std::move(sources);
      before.attrs = in.attrs;
      before.span = in.span;
      before.origin = in.origin;
      before.results = {f_.add_value(*inner, "", in.span)};
      source_.push_back(ir::kNoValue);
      in.op = wrap;
      in.operands = before.results;
      in.attrs = to;
      return before;
    }
    return std::nullopt;
  }

  ir::Function &f_;
  const rt::Mesh &mesh_;
  std::vector<ir::ValueId> source_;  // per value: the value it broadcasts, or kNoValue
};

}  // namespace

void hoist_broadcasts(const ir::Module &module, ir::Function &function) {
  Hoister h(module, function);
  h.run(function.body);
}

}  // namespace spmd
