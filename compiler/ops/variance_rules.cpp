// ops/variance_rules.cpp — the variance table of the design note: the entry
// points. Each family's variance rule sits beside its shape and sharding rules
// in ops/families/<family>.cpp (the collectives' in collectives.cpp);
// op_rules() (ops/op_rules.h) finds it.
#include "ops/variance_rules.h"

#include "ops/op_rules.h"

namespace spmd {

AxisRequirement operand_requirement(OpCode op) { return op_rules(op).requirement; }

AxisSet result_variance(OpCode op, AxisSet v, const Attrs &attrs) {
  return op_rules(op).variance(v, AxisSet::of_all(collective_axes(op, attrs)));
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

bool constant_operand_adapts(OpCode op) { return op_rules(op).constant_operand_adapts; }

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
