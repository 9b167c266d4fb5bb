// ops/families/print.cpp — print (PrintAttrs: the format string, one `{}` hole
// per operand; OpKind::Effect): no results, kept for its effect. It shows
// whole arrays, so in a sharded function every operand is gathered (and
// summed) first.
#include "ops/families/families.h"

namespace spmd::families {
namespace {

/// No results; any operands (lowering checks the format's holes).
ShapeRuleResult print_shape(OpCode, std::span<const Type>, const Attrs &, const rt::Mesh &) {
  return {};
}

ShardingRule print_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                            const Attrs &) {
  ShardingRule r;
  r.family = RuleFamily::Print;
  for (const Type &t : operands)
    r.operand_factors.push_back(std::vector<int>(static_cast<size_t>(t.rank()), kNoFactor));
  return r;
}

}  // namespace

const OpRules kPrint{
    .family = "print",
    .shape = print_shape,
    .computes_with_values = false,
    .requirement = AxisRequirement::None,
    .variance = same_variance,
    .constant_operand_adapts = false,
    .sharding = print_sharding,
};

}  // namespace spmd::families
