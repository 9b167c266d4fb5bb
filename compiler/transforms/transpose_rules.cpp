// transforms/transpose_rules.cpp — transpose rules, one case per op (exhaustive switch).
//
// Notation: r = op(x, ...) is linear in the operands marked linear; ct is the
// cotangent of r; each rule returns the cotangent of each linear operand, with
// exactly that operand's type (dtype, shape, variance). The comment on each
// case is the rule; `<ct, f(x)> = <f^T(ct), x>` is what the tests check.
#include "transforms/transpose_rules.h"

#include "ops/shape_rules.h"

namespace spmd {
namespace {

int count(const std::vector<bool> &v) {
  int n = 0;
  for (bool b : v) n += b;
  return n;
}

std::string quoted(OpCode op) { return "`" + std::string(op_display_name(op)) + "`"; }

}  // namespace

std::optional<std::string> linearity_problem(const ir::Instr &in, const std::vector<bool> &lin,
                                             const std::vector<bool> &zero) {
  // Three ops need more than ops.def's Linearity column says.
  if (in.op == OpCode::StopGradient)
    return "`stop_gradient` blocks derivatives: the function is not linear in an input that "
           "flows through it";
  if (in.op == OpCode::Cast) {  // the column's InFirst is a cast between float types
    if (rt::is_float(in.attrs.cast().dtype)) return std::nullopt;
    return "a cast to " + std::string(dtype_name(in.attrs.cast().dtype)) + " is not linear";
  }
  if (in.op == OpCode::Call || in.op == OpCode::For)
    return "internal: calls are inlined first; loops are handled by transpose.cpp";
  if (op_has_effect(in.op)) return std::nullopt;  // a print of a linear value is dropped (transpose.cpp)
  // The operands that may depend on the transposed inputs (here at least one
  // does): those the op is linear in, one of them for a product, any of them
  // (the others zero) for a sum.
  const OpLinearity linearity = op_linearity(in.op);
  bool others = false;  // an operand it is not linear in depends on the inputs
  for (size_t k = 0; k < lin.size(); ++k)
    others = others || (lin[k] && !linear_in_operand(linearity, k));
  auto linear_or_zero = [&] {
    for (size_t k = 0; k < lin.size(); ++k)
      if (linear_in_operand(linearity, k) && !lin[k] && !zero[k]) return false;
    return true;
  };
  switch (linearity) {
    case OpLinearity::NotLinear:
      break;
    case OpLinearity::PerOperand:  // (a combined collective: each component on its own)
      return std::nullopt;
    case OpLinearity::InFirst:  // (a divisor or an index must not depend on them)
      if (!others) return std::nullopt;
      if (in.op == OpCode::Div)
        return "`/` divides by a value that depends on the transposed inputs";
      return "the index of " + quoted(in.op) + " depends on the transposed inputs";
    case OpLinearity::InEach:
      if (count(lin) == 1) return std::nullopt;
      return quoted(in.op) + " multiplies two values that both depend on the transposed inputs";
    case OpLinearity::InAll:
      if (linear_or_zero()) return std::nullopt;
      return quoted(in.op) +
             " combines a value that depends on the transposed inputs with one that does not: "
             "the function is affine, not linear";
    case OpLinearity::InBranches:
      if (others) return "the condition of `where` depends on the transposed inputs";
      if (linear_or_zero()) return std::nullopt;
      return "`where` selects between a value that depends on the transposed inputs and one "
             "that does not: the function is not linear";
    case OpLinearity::InArrayAndUpdate:
      if (others) return "the index of " + quoted(in.op) + " depends on the transposed inputs";
      if (linear_or_zero()) return std::nullopt;
      return quoted(in.op) + " mixes values that do and do not depend on the inputs";
  }
  return quoted(in.op) + " is not linear, but its operand depends on the inputs being transposed";
}

std::vector<std::pair<size_t, ir::ValueId>> apply_transpose_rule(Emitter &e,
                                                                 const TransposeRuleInput &in) {
  const ir::Instr &instr = in.instr;
  const Attrs &a = instr.attrs;
  const SourceSpan s = instr.span;
  const ir::ValueId ct = in.ct;
  auto shape = [&](size_t k) -> const Shape & { return in.operand_types[k].shape; };
  auto c = [&](size_t k) { return *in.constants[k]; };
  std::vector<std::pair<size_t, ir::ValueId>> out;
  auto give = [&](size_t k, ir::ValueId v) {
    if (in.linear[k]) out.emplace_back(k, v);
  };
  auto collective = [&](OpCode op, Attrs attrs) { return e.op(op, {ct}, std::move(attrs), s); };
  auto axes_only = [&] {
    Attrs ta;
    ta.collective().axes = a.collective().axes;
    return ta;
  };
  switch (instr.op) {
    case OpCode::Neg:  // (-x)^T ct = -ct
      give(0, e.neg(ct, s));
      break;
    case OpCode::Add:  // (x + y)^T ct = (ct, ct), summed over broadcast dims
      for (size_t k = 0; k < 2; ++k)
        if (in.linear[k]) give(k, e.unbroadcast(ct, shape(k), s));
      break;
    case OpCode::Sub:  // (x - y)^T ct = (ct, -ct)
      if (in.linear[0]) give(0, e.unbroadcast(ct, shape(0), s));
      if (in.linear[1]) give(1, e.unbroadcast(e.neg(ct, s), shape(1), s));
      break;
    case OpCode::Mul:  // (x * c)^T ct = ct * c
      for (size_t k = 0; k < 2; ++k)
        if (in.linear[k]) give(k, e.unbroadcast(e.mul(ct, c(1 - k), s), shape(k), s));
      break;
    case OpCode::Div:  // (x / c)^T ct = ct / c
      give(0, e.unbroadcast(e.div(ct, c(1), s), shape(0), s));
      break;
    case OpCode::Cast:  // back to the operand's float type
      give(0, e.cast(ct, in.operand_types[0].dtype, s));
      break;
    case OpCode::Select: {  // where(c, x, y)^T ct = (where(c, ct, 0), where(c, 0, ct))
      ir::ValueId zero = e.scalar_like(ct, 0.0, s);
      if (in.linear[1])
        give(1, e.unbroadcast(e.op(OpCode::Select, {c(0), ct, zero}, {}, s), shape(1), s));
      if (in.linear[2])
        give(2, e.unbroadcast(e.op(OpCode::Select, {c(0), zero, ct}, {}, s), shape(2), s));
      break;
    }
    case OpCode::ReduceSum:  // sum^T ct = ct broadcast back over the reduced dims
      give(0, e.expand_reduced(ct, shape(0), a.reduce().dims, s));
      break;
    case OpCode::Einsum: {
      // (A . B)^T for A: einsum("O,B->A", ct, B); indices of A found in neither
      // O nor B were summed away: broadcast over them.
      EinsumSpec spec;
      std::string error;
      parse_einsum(a.einsum().spec, spec, error);
      for (size_t k = 0; k < spec.inputs.size(); ++k) {
        if (!in.linear[k]) continue;
        // ct takes operand k's place, so transposing twice gives the einsum back.
        const std::string &target = spec.inputs[k];
        std::string others = spec.output;
        std::vector<ir::ValueId> ops = {ct};
        EinsumSpec t;
        t.inputs.push_back(spec.output);
        if (spec.inputs.size() == 2) {
          t.inputs.insert(t.inputs.begin() + static_cast<std::ptrdiff_t>(1 - k),
                          spec.inputs[1 - k]);
          others += spec.inputs[1 - k];
          ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(1 - k), c(1 - k));
        }
        std::string kept;
        Shape kept_shape;
        std::vector<int64_t> missing;
        for (size_t d = 0; d < target.size(); ++d) {
          if (others.find(target[d]) != std::string::npos) {
            kept += target[d];
          } else {
            missing.push_back(static_cast<int64_t>(d));
          }
        }
        t.output = kept;
        Attrs ta;
        ta.einsum().spec = einsum_to_string(t);
        ir::ValueId r = e.op(OpCode::Einsum, ops, ta, s);
        if (!missing.empty()) r = e.expand_reduced(r, shape(k), missing, s);
        give(k, r);
      }
      break;
    }
    case OpCode::Reshape:  // reshape^T = reshape back
      give(0, e.reshape(ct, shape(0), s));
      break;
    case OpCode::Reverse:  // flip^T = the same flip
      give(0, e.op(OpCode::Reverse, {ct}, a, s));
      break;
    case OpCode::Constrain:  // the identity (a sharding hint): constrain^T ct = constrain(ct)
      give(0, e.op(OpCode::Constrain, {ct}, a, s));
      break;
    case OpCode::Transpose: {  // transpose^T = transpose by the inverse permutation
      Attrs ta;
      ta.layout().dims.resize(a.layout().dims.size());
      for (size_t d = 0; d < a.layout().dims.size(); ++d)
        ta.layout().dims[a.layout().dims[d]] = static_cast<int64_t>(d);
      give(0, e.op(OpCode::Transpose, {ct}, ta, s));
      break;
    }
    case OpCode::BroadcastTo:  // broadcast^T = sum over the broadcast dims
      give(0, e.unbroadcast(ct, shape(0), s));
      break;
    case OpCode::Slice: {  // slice^T = pad with zeros
      Attrs ta;
      ta.layout().shape = shape(0);
      ta.layout().start = a.layout().start;
      ta.layout().stride = a.layout().stride;
      give(0, e.op(OpCode::Pad, {ct}, ta, s));
      break;
    }
    case OpCode::Pad: {  // pad^T = slice out the placed elements
      Attrs ta;
      ta.layout().start = a.layout().start;
      ta.layout().stride = a.layout().stride;
      for (size_t d = 0; d < shape(0).size(); ++d) {
        int64_t n = shape(0)[d];
        ta.layout().limit.push_back(n == 0
                                        ? a.layout().start[d]
                                        : a.layout().start[d] + (n - 1) * a.layout().stride[d] + 1);
      }
      give(0, e.op(OpCode::Slice, {ct}, ta, s));
      break;
    }
    case OpCode::Concat: {  // concat^T = the slices
      int64_t offset = 0;
      for (size_t k = 0; k < instr.operands.size(); ++k) {
        const Shape &sk = shape(k);
        if (in.linear[k]) {
          Attrs ta;
          const Shape full = e.type(ct).shape;
          ta.layout().start.assign(full.size(), 0);
          ta.layout().limit = full;
          ta.layout().stride.assign(full.size(), 1);
          ta.layout().start[a.layout().dim] = offset;
          ta.layout().limit[a.layout().dim] = offset + sk[a.layout().dim];
          give(k, e.op(OpCode::Slice, {ct}, ta, s));
        }
        offset += sk[a.layout().dim];
      }
      break;
    }
    case OpCode::DynamicSlice: {  // ^T = write ct into zeros at the index
      ir::ValueId zeros = e.zeros(in.operand_types[0], s);
      Attrs ta;
      ta.layout().dim = a.layout().dim;
      give(0, e.op(OpCode::DynamicUpdateSlice, {zeros, ct, c(1)}, ta, s));
      break;
    }
    case OpCode::DynamicUpdateSlice: {  // ^T = (ct with the block zeroed, the block)
      if (in.linear[0]) {
        ir::ValueId zeros = e.zeros(in.operand_types[1], s);
        give(0, e.op(OpCode::DynamicUpdateSlice, {ct, zeros, c(2)}, a, s));
      }
      if (in.linear[1]) {
        Attrs ta;
        ta.layout().dim = a.layout().dim;
        ta.layout().shape = shape(1);
        give(1, e.op(OpCode::DynamicSlice, {ct, c(2)}, ta, s));
      }
      break;
    }
    case OpCode::Take: {  // take(x, ids)^T ct = scatter_add(zeros like x, ct, ids)
      ir::ValueId zeros = e.zeros(in.operand_types[0], s);
      give(0, e.op(OpCode::ScatterAdd, {zeros, ct, c(1)}, a, s));
      break;
    }
    case OpCode::ScatterAdd: {  // scatter_add(x, u, ids)^T ct = (ct, take(ct, ids))
      if (in.linear[0]) give(0, ct);
      if (in.linear[1]) give(1, e.op(OpCode::Take, {ct, c(2)}, a, s));
      break;
    }
    // Collectives: the design note's table.
    case OpCode::Psum:  // psum^T = pbroadcast (no communication)
      give(0, collective(OpCode::Pbroadcast, axes_only()));
      break;
    case OpCode::Pbroadcast:  // pbroadcast^T = psum
      give(0, collective(OpCode::Psum, axes_only()));
      break;
    case OpCode::AllGather:  // all_gather^T = psum_scatter
      give(0, collective(OpCode::PsumScatter, a));
      break;
    case OpCode::PsumScatter:  // psum_scatter^T = all_gather
      give(0, collective(OpCode::AllGather, a));
      break;
    case OpCode::AllGatherInvariant:  // all_gather_invariant^T = pscatter (no communication)
      give(0, collective(OpCode::Pscatter, a));
      break;
    case OpCode::Pscatter:  // pscatter^T = all_gather_invariant
      give(0, collective(OpCode::AllGatherInvariant, a));
      break;
    case OpCode::AllToAll: {  // all_to_all^T = all_to_all with split and concat swapped
      Attrs ta = a;
      std::swap(ta.collective().dim, ta.collective().concat_dim);
      give(0, collective(OpCode::AllToAll, ta));
      break;
    }
    case OpCode::Ppermute: {  // ppermute^T = ppermute by the inverse permutation
      Attrs ta = a;
      for (auto &p : ta.collective().perm) std::swap(p.first, p.second);
      give(0, collective(OpCode::Ppermute, ta));
      break;
    }
    // The ops linear in no operand (ops.def's Linearity column), and stop_gradient.
#define OP(Name, spelling, Kind, Attrs, Comm, Linearity) \
  SPMD_IF_NOT_LINEAR_##Linearity(case OpCode::Name:)
#include "ops/ops.def"
    case OpCode::StopGradient:
      throw std::logic_error("transpose rule for a non-linear op `" +
                             std::string(op_spelling(instr.op)) + "`");
  }
  return out;
}

}  // namespace spmd
