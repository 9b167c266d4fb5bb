// ops/families/control.cpp — calls of def instances and shmaps (CallAttrs) and
// static loops (`for`, LoopAttrs). Their result types come from the callee and
// from the carried values (lowering), not from a shape rule; their results
// vary as their operands do, and their operands keep their own variance. Calls
// are inlined and loops unrolled before sharding.
#include "ops/families/families.h"

namespace spmd::families {
namespace {

ShapeRuleResult call_shape(OpCode, std::span<const Type>, const Attrs &, const rt::Mesh &) {
  return fail("internal: call types come from the callee");
}

ShapeRuleResult loop_shape(OpCode, std::span<const Type>, const Attrs &, const rt::Mesh &) {
  return fail("internal: loop types come from their carried values");
}

ShardingRule call_sharding(OpCode, std::span<const Type>, std::span<const Type>, const Attrs &) {
  return unsupported("calls are inlined before sharding");
}

ShardingRule loop_sharding(OpCode, std::span<const Type>, std::span<const Type>, const Attrs &) {
  return unsupported("loops are unrolled before sharding");
}

}  // namespace

const OpRules kCall{
    .family = "control",
    .shape = call_shape,
    .computes_with_values = false,
    .requirement = AxisRequirement::None,
    .variance = same_variance,
    .constant_operand_adapts = false,
    .sharding = call_sharding,
};

const OpRules kFor{
    .family = "control",
    .shape = loop_shape,
    .computes_with_values = false,
    .requirement = AxisRequirement::None,
    .variance = same_variance,
    .constant_operand_adapts = false,
    .sharding = loop_sharding,
};

}  // namespace spmd::families
