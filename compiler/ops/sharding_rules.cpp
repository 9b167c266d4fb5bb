// ops/sharding_rules.cpp — the sharding rule of every op (see sharding_rules.h):
// the entry point. Each family's factors sit beside its shape and variance
// rules in ops/families/<family>.cpp; op_rules() (ops/op_rules.h) finds them,
// and sharding_rule adds which operands may carry a partial sum.
#include "ops/sharding_rules.h"

#include "ops/op_rules.h"

namespace spmd {
namespace {

/// Which operands may carry a partial sum: those the op is linear in (ops.def's
/// Linearity column), one at a time for a product (x1 + x2) * y, together for
/// a sum (a1 + a2) + (b1 + b2).
void set_linear(ShardingRule &r, OpLinearity l) {
  r.linearity = l == OpLinearity::NotLinear ? Linearity::None
                : linear_together(l)        ? Linearity::Together
                                            : Linearity::Any;
  r.linear_operands.assign(r.operand_factors.size(), false);
  for (size_t k = 0; k < r.linear_operands.size(); ++k)
    r.linear_operands[k] = linear_in_operand(l, k);
}

}  // namespace

ShardingRule sharding_rule(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                           const Attrs &attrs) {
  ShardingRule r = op_rules(op).sharding(op, operands, results, attrs);
  if (r.family == RuleFamily::Unsupported) return r;
  // Two ops pass no partial sum although their column says InFirst: a cast
  // (to i32 it is not linear; the column is the float cast the transpose
  // rules invert) and constrain (its spec asks for a complete layout).
  const bool complete_result = op == OpCode::Cast || op == OpCode::Constrain;
  set_linear(r, complete_result ? OpLinearity::NotLinear : op_linearity(op));
  return r;
}

const char *rule_family_name(RuleFamily family) {
  switch (family) {
    case RuleFamily::Creation:
      return "creation";
    case RuleFamily::Elementwise:
      return "elementwise";
    case RuleFamily::Reduction:
      return "reduction";
    case RuleFamily::Contraction:
      return "contraction";
    case RuleFamily::Reshape:
      return "reshape";
    case RuleFamily::Transpose:
      return "transpose";
    case RuleFamily::BroadcastTo:
      return "broadcast";
    case RuleFamily::Slice:
      return "slice";
    case RuleFamily::Concat:
      return "concat";
    case RuleFamily::DynamicSlice:
      return "dynamic slice";
    case RuleFamily::Gather:
      return "gather";
    case RuleFamily::Identity:
      return "constrain";
    case RuleFamily::Random:
      return "random";
    case RuleFamily::Print:
      return "print";
    case RuleFamily::Unsupported:
      return "unsupported";
  }
  return "unsupported";
}

const char *rule_family_requirement(RuleFamily family) {
  switch (family) {
    case RuleFamily::Creation:
      return "a constant can be made in any split";
    case RuleFamily::Elementwise:
      return "elementwise ops need their operands split like the result on every dimension "
             "they do not broadcast, and broadcast dimensions not split";
    case RuleFamily::Reduction:
      return "a reduction keeps the split of the dimensions it keeps; a split reduced "
             "dimension leaves partial results";
    case RuleFamily::Contraction:
      return "a contraction needs each index split the same way in every operand (and in the "
             "result); a split contracted index leaves partial sums";
    case RuleFamily::Reshape:
      return "a reshape can split only the major dimension of each group of dimensions it "
             "merges or splits, by a divisor of both sides";
    case RuleFamily::Transpose:
      return "a transpose moves each dimension's split with the dimension";
    case RuleFamily::BroadcastTo:
      return "broadcast_to keeps the split of the dimensions it does not broadcast";
    case RuleFamily::Slice:
      return "a slice or pad cannot split a dimension it cuts into or pads";
    case RuleFamily::Concat:
      return "concat needs its operands split alike and the concatenation dimension not split";
    case RuleFamily::DynamicSlice:
      return "a dynamic slice cannot split the dimension it indexes";
    case RuleFamily::Gather:
      return "take and scatter_add keep the split of the array's other dimensions and of "
             "take's ids; a split indexed axis leaves take partial sums; split ids leave "
             "scatter_add partial sums";
    case RuleFamily::Identity:
      return "constrain requires exactly the written split";
    case RuleFamily::Random:
      return "a random draw can be made in any split (each device draws its block at its "
             "offset)";
    case RuleFamily::Print:
      return "print shows whole arrays: its operands are gathered first";
    case RuleFamily::Unsupported:
      return "this op cannot be split";
  }
  return "";
}

}  // namespace spmd
