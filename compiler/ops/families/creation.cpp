// ops/families/creation.cpp — constant, full, iota: no operands, invariant
// results, made in any split.
#include "ops/families/families.h"

namespace spmd::families {
namespace {

ShapeRuleResult creation_shape(OpCode op, std::span<const Type>, const Attrs &attrs,
                               const rt::Mesh &) {
  const CreationAttrs &c = attrs.creation();
  if (c.dtype == DType::Key)
    return fail("keys are not made from numbers: use key(seed) with an i32 seed");
  if (op == OpCode::Constant) return one(c.dtype, {});
  for (int64_t d : c.shape)
    if (d < 0) return fail("negative dimension in shape " + shp(c.shape));
  if (op == OpCode::Iota && !valid_dim(c.dim, static_cast<int64_t>(c.shape.size())))
    return fail("iota dimension " + std::to_string(c.dim) + " is out of range for " + shp(c.shape));
  if (op == OpCode::Iota && c.dtype == DType::Bool) return fail("iota cannot be bool");
  if (op == OpCode::Iota && c.dtype == DType::I32 &&
      c.shape[static_cast<size_t>(c.dim)] > int64_t{1} << 31)
    return fail("an i32 iota counts at most to 2^31 - 1, but dimension " + std::to_string(c.dim) +
                " has size " + std::to_string(c.shape[static_cast<size_t>(c.dim)]) +
                "; use an f32 or f64 iota");
  return one(c.dtype, c.shape);
}

/// No operands; the result may be split any way (each device makes its own
/// block; iota adds its block's offset).
ShardingRule creation_sharding(OpCode, std::span<const Type>, std::span<const Type> results,
                               const Attrs &) {
  ShardingRule r = elementwise(results[0], {});
  r.family = RuleFamily::Creation;
  return r;
}

}  // namespace

const OpRules kCreation{
    .family = "creation",
    .shape = creation_shape,
    .computes_with_values = false,
    .requirement = AxisRequirement::None,
    .variance = invariant,  // constants are the same on every device
    .constant_operand_adapts = false,
    .sharding = creation_sharding,
};

}  // namespace spmd::families
