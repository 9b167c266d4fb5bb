// ops/variance_rules.cpp — the variance table of the design note, one case per op.
#include "ops/variance_rules.h"

namespace spmd {

AxisRequirement operand_requirement(OpCode op) {
  if (op_kind(op) != OpKind::Collective) return AxisRequirement::None;
  switch (op) {
    // Varying -> Invariant and Varying -> Varying: the operand must vary along
    // the named axes (psum of an invariant x is axis_size * x, so lifting it
    // with pbroadcast gives exactly that meaning).
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
    case OpCode::PsumScatter:
    case OpCode::AllToAll:
    case OpCode::Ppermute:
      return AxisRequirement::Varying;
    // Invariant -> Varying: these read only the local copy, so they are
    // meaningful only when every device along the axes holds the same value.
    case OpCode::Pbroadcast:
    case OpCode::Pscatter:
      return AxisRequirement::Invariant;
    case OpCode::AxisIndex:
      return AxisRequirement::None;
    default:
      return AxisRequirement::None;  // not a collective (handled above)
  }
}

AxisSet result_variance(OpCode op, AxisSet v, const Attrs &attrs) {
  AxisSet axes = AxisSet::of_all(collective_axes(op, attrs));
  switch (op_kind(op)) {
    case OpKind::Creation:
      return AxisSet();  // constants are the same on every device
    case OpKind::Collective:
      break;
    default:
      return v;  // non-collective ops preserve their (equal) operands' variance
  }
  switch (op) {
    case OpCode::Psum:  // Varying -> Invariant
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::AllGatherInvariant:  // Varying -> Invariant
      return v - axes;
    case OpCode::Pbroadcast:  // Invariant -> Varying
    case OpCode::Pscatter:
      return v | axes;
    case OpCode::AllGather:  // Varying -> Varying (a pbroadcast fused in)
    case OpCode::PsumScatter:
    case OpCode::AllToAll:
    case OpCode::Ppermute:
      return v;
    case OpCode::AxisIndex:  // () -> Varying
      return axes;
    default:
      return v;
  }
}

bool is_combinable_reduce(OpCode op) {
  return op == OpCode::Psum || op == OpCode::Pmax || op == OpCode::Pmin;
}

bool is_combinable_collective(OpCode op) {
  return is_combinable_reduce(op) || op == OpCode::AllGather || op == OpCode::AllGatherInvariant ||
         op == OpCode::PsumScatter;
}

SmallVector<AxisSet, 2> result_variances(OpCode op, std::span<const AxisSet> operand_variances,
                                         size_t num_results, const Attrs &attrs) {
  if (is_combinable_collective(op) && operand_variances.size() == num_results) {
    SmallVector<AxisSet, 2> out;
    for (AxisSet v : operand_variances) out.push_back(result_variance(op, v, attrs));
    return out;
  }
  AxisSet uni;
  for (AxisSet v : operand_variances) uni = uni | v;
  return SmallVector<AxisSet, 2>(num_results, result_variance(op, uni, attrs));
}

bool constant_operand_adapts(OpCode op) {
  switch (op_kind(op)) {
    case OpKind::Collective:
    case OpKind::Call:
    case OpKind::Control:
    case OpKind::Creation:
    case OpKind::Effect:
      return false;
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical:
    case OpKind::Select:
    case OpKind::Reduce:
    case OpKind::Contraction:
    case OpKind::Layout:
    case OpKind::Random:
      return true;
  }
  return false;
}

const char *variance_signature(OpCode op) {
  switch (operand_requirement(op)) {
    case AxisRequirement::Varying: {
      Attrs probe;
      probe.collective().axes = {0};
      return result_variance(op, AxisSet::of(0), probe).empty() ? "Varying -> Invariant"
                                                                : "Varying -> Varying";
    }
    case AxisRequirement::Invariant:
      return "Invariant -> Varying";
    case AxisRequirement::None:
      return op == OpCode::AxisIndex ? "() -> Varying" : "same as operands";
  }
  return "";
}

}  // namespace spmd
