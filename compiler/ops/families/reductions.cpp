// ops/families/reductions.cpp — sum, max, min, argmax, argmin over ReduceAttrs
// dims (removed from the shape). Splitting a reduced dimension leaves a
// partial sum (sum) or a partial extreme (max, min); argmax and argmin give a
// position, which a device holding one block cannot know.
#include <algorithm>

#include "ops/families/families.h"

namespace spmd::families {
namespace {

ShapeRuleResult reduction_shape(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                                const rt::Mesh &) {
  const Type &x = ops[0];
  const std::vector<int64_t> &dims = attrs.reduce().dims;
  Shape s;
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] <= dims[i - 1]) return fail("reduction axes must be distinct");
  for (int64_t d : dims)
    if (!valid_dim(d, x.rank()))
      return fail("reduction axis " + std::to_string(d) + " is out of range for " + shp(x.shape));
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) s.push_back(x.shape[d]);
  if (x.dtype == DType::Bool) return fail("cannot reduce bool values; cast them first");
  if (op != OpCode::ReduceSum)
    for (int64_t d : dims)
      if (x.shape[d] == 0) return fail(std::string(op_spelling(op)) + " over an empty dimension");
  if (op == OpCode::ArgMax || op == OpCode::ArgMin) return one(DType::I32, std::move(s));
  return one(x.dtype, std::move(s));
}

ShardingRule reduction_sharding(OpCode op, std::span<const Type> operands, std::span<const Type>,
                                const Attrs &attrs) {
  const Type &x = operands[0];
  ShardingRule r;
  r.family = RuleFamily::Reduction;
  FactorKind reduced = op == OpCode::ReduceSum   ? FactorKind::Sum
                       : op == OpCode::ReduceMax ? FactorKind::Max
                                                 : FactorKind::Min;
  // argmax/argmin give a position within the reduced dimensions, which a
  // device holding one block of them cannot know: those are not split.
  const bool positional = op == OpCode::ArgMax || op == OpCode::ArgMin;
  std::vector<int> in, out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool is_reduced = std::find(attrs.reduce().dims.begin(), attrs.reduce().dims.end(), d) !=
                      attrs.reduce().dims.end();
    if (is_reduced && positional) {
      in.push_back(kNoFactor);
      continue;
    }
    const int f = r.num_factors();
    in.push_back(f);
    r.factor_sizes.push_back(x.shape[d]);
    r.factor_kinds.push_back(is_reduced ? reduced : FactorKind::Parallel);
    if (!is_reduced) out.push_back(f);
  }
  r.operand_factors.push_back(in);
  r.result_factors.push_back(out);
  return r;
}

}  // namespace

const OpRules kReduction{
    .family = "reductions",
    .shape = reduction_shape,
    .computes_with_values = true,
    .requirement = AxisRequirement::None,
    .variance = same_variance,
    .constant_operand_adapts = true,
    .sharding = reduction_sharding,
};

}  // namespace spmd::families
