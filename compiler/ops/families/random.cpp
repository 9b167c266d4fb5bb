// ops/families/random.cpp — random keys and draws (spmdrt/random.h): key,
// fold_in, key_data and the draws split ... randint (RandomAttrs: the result's
// shape and dtype, and the global shape of the whole draw when the result is a
// block of it; then the last rank operands are the block's i32 offsets).
// Element i of a draw depends on the key and i's flat index in the global
// shape only, so a draw may be split any way: each device draws its block at
// its offset. Results vary as their operands do.
#include "ops/families/families.h"

namespace spmd::families {
namespace {

/// key(seed: i32) -> key, elementwise.
ShapeRuleResult key_shape(OpCode, std::span<const Type> ops, const Attrs &, const rt::Mesh &) {
  if (ops[0].dtype != DType::I32)
    return fail(std::string("key(seed) needs an i32 seed, got ") + dtype_name(ops[0].dtype));
  return one(DType::Key, ops[0].shape);
}

/// fold_in(key[], i32[]) -> key[].
ShapeRuleResult fold_in_shape(OpCode, std::span<const Type> ops, const Attrs &, const rt::Mesh &) {
  if (ops[0].dtype != DType::Key || ops[0].rank() != 0)
    return fail("fold_in needs one key (a key[] scalar) as its first operand, got " +
                shape_type_str(ops[0].dtype, ops[0].shape));
  if (ops[1].dtype != DType::I32 || ops[1].rank() != 0)
    return fail("fold_in folds in an i32 scalar, got " +
                shape_type_str(ops[1].dtype, ops[1].shape));
  return one(DType::Key, {});
}

/// key_data: key[s] -> i32[s..., 2].
ShapeRuleResult key_data_shape(OpCode, std::span<const Type> ops, const Attrs &, const rt::Mesh &) {
  if (ops[0].dtype != DType::Key)
    return fail(std::string("key_data needs keys, got ") + dtype_name(ops[0].dtype));
  Shape s = ops[0].shape;
  s.push_back(2);
  return one(DType::I32, std::move(s));
}

/// A draw (key, params..., offsets...) of values of dtype `want`.
ShapeRuleResult draw_shape(OpCode op, std::span<const Type> ops, const Attrs &attrs, DType want) {
  const std::string name(op_spelling(op));
  const RandomAttrs &r = attrs.random();
  if (ops[0].dtype != DType::Key || ops[0].rank() != 0)
    return fail(name + " draws from one key (a key[] scalar), got " +
                shape_type_str(ops[0].dtype, ops[0].shape) +
                (ops[0].dtype == DType::Key ? "; index the keys of a split: keys[0]" : ""));
  for (int64_t d : r.shape)
    if (d < 0) return fail("negative dimension in shape " + shp(r.shape));
  const size_t params = random_param_count(op);
  if (ops.size() < params) return fail(name + " needs " + std::to_string(params) + " operands");
  if (r.dtype != want)
    return fail(name + " draws " + dtype_name(want) + " values" +
                (op == OpCode::RandomUniform ? " (or f64)" : "") + ", not " + dtype_name(r.dtype));
  for (size_t k = 1; k < params; ++k)
    if (ops[k].dtype != want || ops[k].rank() != 0)
      return fail(std::string("the ") + (k == 1 ? "lower" : "upper") + " bound of " + name +
                  " must be a " + dtype_name(want) + " scalar, got " +
                  shape_type_str(ops[k].dtype, ops[k].shape));
  const size_t offsets = ops.size() - params;
  if (r.global.empty()) {
    if (offsets != 0) return fail(name + " has block offsets but no global shape");
  } else {
    if (r.global.size() != r.shape.size() || offsets != r.shape.size())
      return fail(name + " needs one offset per dimension of its global shape " + shp(r.global));
    for (size_t d = 0; d < r.shape.size(); ++d) {
      if (r.shape[d] > r.global[d])
        return fail("the block " + shp(r.shape) + " of " + name + " exceeds its global shape " +
                    shp(r.global));
      if (ops[params + d].dtype != DType::I32 || ops[params + d].rank() != 0)
        return fail("the block offsets of " + name + " must be i32 scalars");
    }
  }
  return one(r.dtype, r.shape);
}

/// split: keys; random_bits, randint: i32; normal: f32.
template <DType want>
ShapeRuleResult draw_of(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                        const rt::Mesh &) {
  return draw_shape(op, ops, attrs, want);
}

/// uniform: f32 or f64.
ShapeRuleResult uniform_shape(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                              const rt::Mesh &) {
  return draw_shape(op, ops, attrs, attrs.random().dtype == DType::F64 ? DType::F64 : DType::F32);
}

/// key and fold_in: elementwise.
ShardingRule key_sharding(OpCode, std::span<const Type> operands, std::span<const Type> results,
                          const Attrs &) {
  return elementwise(results[0], operands);
}

/// key_data adds a dimension of 2 words, not split.
ShardingRule key_data_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                               const Attrs &) {
  ShardingRule r =
      same_rank_layout(RuleFamily::Elementwise, operands[0], [](int64_t) { return true; });
  r.result_factors[0].push_back(kNoFactor);
  return r;
}

/// A draw: any split, each device draws its block at its offset.
ShardingRule draw_sharding(OpCode, std::span<const Type> operands, std::span<const Type> results,
                           const Attrs &) {
  ShardingRule r = elementwise(results[0], operands);
  r.family = RuleFamily::Random;
  return r;
}

constexpr OpRules random_rules(decltype(OpRules::shape) shape,
                               decltype(OpRules::sharding) sharding) {
  return {
      .family = "random",
      .shape = shape,
      .computes_with_values = false,
      .requirement = AxisRequirement::None,
      .variance = same_variance,
      .constant_operand_adapts = true,
      .sharding = sharding,
  };
}

}  // namespace

const OpRules kRandomKey = random_rules(key_shape, key_sharding);
const OpRules kRandomFoldIn = random_rules(fold_in_shape, key_sharding);
const OpRules kKeyData = random_rules(key_data_shape, key_data_sharding);
const OpRules kRandomSplit = random_rules(draw_of<DType::Key>, draw_sharding);
const OpRules kRandomBits = random_rules(draw_of<DType::I32>, draw_sharding);
const OpRules kRandomUniform = random_rules(uniform_shape, draw_sharding);
const OpRules kRandomNormal = random_rules(draw_of<DType::F32>, draw_sharding);
const OpRules kRandomInt = random_rules(draw_of<DType::I32>, draw_sharding);

}  // namespace spmd::families
