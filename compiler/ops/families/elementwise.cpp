// ops/families/elementwise.cpp — the math functions of one operand (the rows
// of spmdrt/unary_math.def), of two (spmdrt/binary_math.def: arithmetic,
// comparisons, logic, with NumPy broadcasting), cast, stop_gradient and where.
// Their results vary as their operands do; they split like their result on
// every dimension they do not broadcast (the ONNX formalism).
#include "ops/families/families.h"

namespace spmd::families {
namespace {

ShapeRuleResult unary_math_shape(OpCode op, std::span<const Type> ops, const Attrs &,
                                 const rt::Mesh &) {
  const Type &x = ops[0];
  if (op == OpCode::Not) {
    if (x.dtype != DType::Bool) return fail("logical_not needs a bool operand");
    return one(DType::Bool, x.shape);
  }
  bool int_ok = op_accepts_int(op);  // spmdrt/unary_math.def
  if (x.dtype == DType::Bool || (!int_ok && !rt::is_float(x.dtype)))
    return fail(std::string("`") + std::string(op_spelling(op)) + "` needs a floating-point " +
                "operand, got " + dtype_name(x.dtype));
  return one(x.dtype, x.shape);
}

ShapeRuleResult cast_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                           const rt::Mesh &) {
  if (attrs.cast().dtype == DType::Key)
    return fail("keys are not made from numbers: use key(seed) with an i32 seed");
  return one(attrs.cast().dtype, ops[0].shape);
}

ShapeRuleResult identity_shape(OpCode, std::span<const Type> ops, const Attrs &, const rt::Mesh &) {
  return one(ops[0].dtype, ops[0].shape);
}

/// Arithmetic, comparisons and logic (the kinds of spmdrt/binary_math.def's rows).
ShapeRuleResult binary_math_shape(OpCode op, std::span<const Type> ops, const Attrs &,
                                  const rt::Mesh &) {
  const OpKind kind = op_kind(op);
  const Type &a = ops[0], &b = ops[1];
  if (a.dtype != b.dtype)
    return fail(std::string("operands have different dtypes ") + dtype_name(a.dtype) + " and " +
                dtype_name(b.dtype) + "; use cast(x, dtype)");
  Shape s;
  if (!broadcast(a.shape, b.shape, s))
    return fail("shapes " + shp(a.shape) + " and " + shp(b.shape) + " do not broadcast");
  if (kind == OpKind::Logical) {
    if (a.dtype != DType::Bool) return fail("logical operators need bool operands");
    return one(DType::Bool, std::move(s));
  }
  if (a.dtype == DType::Bool && kind == OpKind::Binary)
    return fail("arithmetic on bool values; cast them first");
  return one(kind == OpKind::Compare ? DType::Bool : a.dtype, std::move(s));
}

ShapeRuleResult select_shape(OpCode, std::span<const Type> ops, const Attrs &, const rt::Mesh &) {
  if (ops[0].dtype != DType::Bool) return fail("the condition of `where` must be bool");
  if (ops[1].dtype != ops[2].dtype)
    return fail(std::string("the branches of `where` have different dtypes ") +
                dtype_name(ops[1].dtype) + " and " + dtype_name(ops[2].dtype));
  Shape s1, s2;
  if (!broadcast(ops[1].shape, ops[2].shape, s1) || !broadcast(ops[0].shape, s1, s2))
    return fail("the operands of `where` do not broadcast together");
  return one(ops[1].dtype, std::move(s2));
}

ShardingRule elementwise_sharding(OpCode, std::span<const Type> operands,
                                  std::span<const Type> results, const Attrs &) {
  return elementwise(results[0], operands);
}

/// The rules every elementwise op shares but its shape rule and whether it
/// computes with its operands' values.
constexpr OpRules elementwise_rules(decltype(OpRules::shape) shape, bool computes_with_values) {
  return {
      .family = "elementwise",
      .shape = shape,
      .computes_with_values = computes_with_values,
      .requirement = AxisRequirement::None,
      .variance = same_variance,
      .constant_operand_adapts = true,
      .sharding = elementwise_sharding,
  };
}

}  // namespace

const OpRules kUnaryMath = elementwise_rules(unary_math_shape, true);
const OpRules kCast = elementwise_rules(cast_shape, true);
// The identity, for values of any dtype (keys included).
const OpRules kStopGradient = elementwise_rules(identity_shape, false);
const OpRules kBinaryMath = elementwise_rules(binary_math_shape, true);
const OpRules kSelect = elementwise_rules(select_shape, true);

}  // namespace spmd::families
