// ops/families/collectives.cpp — psum ... axis_index (CollectiveAttrs: the mesh
// axes in written order, plus the gathered or scattered dimension). Their
// variance rules are the design note's table (docs/device-variance.md): each
// needs its operand varying or invariant along the axes it names and gives a
// result varying or invariant along them. They never appear in sharded
// functions, so they have no sharding rule.
#include "ops/families/families.h"
#include "spmdrt/checked.h"

namespace spmd {

bool is_combinable_reduce(OpCode op) {
  return op == OpCode::Psum || op == OpCode::Pmax || op == OpCode::Pmin;
}

bool is_combinable_collective(OpCode op) {
  return is_combinable_reduce(op) || op == OpCode::AllGather || op == OpCode::AllGatherInvariant ||
         op == OpCode::PsumScatter;
}

namespace families {
namespace {

// Shapes: the result of one operand x, given n = the number of devices along the axes.
using ComponentShape = ShapeRuleResult (*)(OpCode op, const Type &x, const Attrs &attrs, int64_t n);

ShapeRuleResult component(ComponentShape shape, OpCode op, const Type &x, const Attrs &attrs,
                          const rt::Mesh &mesh) {
  return shape(op, x, attrs, axes_size(mesh, attrs.collective().axes));
}

/// The collectives of one operand.
template <ComponentShape shape>
ShapeRuleResult single_shape(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                             const rt::Mesh &mesh) {
  return component(shape, op, ops[0], attrs, mesh);
}

/// psum((a, b, ...), axes), all_gather((a, b, ...), axes, ...), ...: one
/// result per operand, as the op gives it for that operand alone.
template <ComponentShape shape>
ShapeRuleResult combined_shape(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                               const rt::Mesh &mesh) {
  if (ops.empty()) return fail("a combined collective needs at least one operand");
  ShapeRuleResult r;
  for (size_t k = 0; k < ops.size(); ++k) {
    ShapeRuleResult one_result = component(shape, op, ops[k], attrs, mesh);
    if (!one_result.ok())
      return ops.size() == 1
                 ? one_result
                 : ShapeRuleResult{{},
                                   "component " + std::to_string(k) + ": " + one_result.error,
                                   one_result.code};
    r.results.push_back(std::move(one_result.results.at(0)));
  }
  return r;
}

/// Sums and extrema combine values arithmetically, as reductions do.
ShapeRuleResult bool_combined() {
  return fail("cannot combine bool values; cast them first (e.g. to i32)");
}

/// psum, pmax, pmin: the operand's shape.
ShapeRuleResult all_reduce_shape(OpCode, const Type &x, const Attrs &, int64_t) {
  if (x.dtype == DType::Bool) return bool_combined();
  return one(x.dtype, x.shape);
}

/// pbroadcast, ppermute: the operand's shape.
ShapeRuleResult same_shape(OpCode, const Type &x, const Attrs &, int64_t) {
  return one(x.dtype, x.shape);
}

/// all_gather, all_gather_invariant: dim grows n times (tiled) or a new
/// dimension of n is inserted at dim.
ShapeRuleResult gather_shape(OpCode, const Type &x, const Attrs &attrs, int64_t n) {
  const CollectiveAttrs &c = attrs.collective();
  Shape s = x.shape;
  if (c.tiled) {
    if (!valid_dim(c.dim, x.rank()))
      return fail("gather dimension " + std::to_string(c.dim) + " is out of range for " + shp(s));
    auto g = rt::checked_mul(s[c.dim], n);
    if (!g) return too_large("the gathered array");
    s[c.dim] = *g;
  } else {
    if (c.dim < 0 || c.dim > x.rank())
      return fail("gather dimension " + std::to_string(c.dim) + " is out of range");
    s.insert(s.begin() + c.dim, n);
  }
  return one(x.dtype, std::move(s));
}

/// pscatter: dim shrinks n times (tiled) or, of size n, is removed.
ShapeRuleResult scatter_shape(OpCode, const Type &x, const Attrs &attrs, int64_t n) {
  const CollectiveAttrs &c = attrs.collective();
  Shape s = x.shape;
  if (!valid_dim(c.dim, x.rank()))
    return fail("scatter dimension " + std::to_string(c.dim) + " is out of range for " + shp(s));
  if (c.tiled) {
    if (s[c.dim] % n != 0)
      return fail("scatter dimension " + std::to_string(c.dim) + " has size " +
                  std::to_string(s[c.dim]) + ", not divisible by the " + std::to_string(n) +
                  " devices along the axes");
    s[c.dim] /= n;
  } else {
    if (s[c.dim] != n)
      return fail("untiled scatter needs dimension " + std::to_string(c.dim) +
                  " to equal the number of devices (" + std::to_string(n) + ")");
    s.erase(s.begin() + c.dim);
  }
  return one(x.dtype, std::move(s));
}

/// psum_scatter: pscatter's shape, of values it sums.
ShapeRuleResult psum_scatter_shape(OpCode op, const Type &x, const Attrs &attrs, int64_t n) {
  if (x.dtype == DType::Bool) return bool_combined();
  return scatter_shape(op, x, attrs, n);
}

/// all_to_all: dim (split) shrinks n times, concat_dim grows n times.
ShapeRuleResult all_to_all_shape(OpCode, const Type &x, const Attrs &attrs, int64_t n) {
  const CollectiveAttrs &c = attrs.collective();
  Shape s = x.shape;
  if (!valid_dim(c.dim, x.rank()) || !valid_dim(c.concat_dim, x.rank()))
    return fail("all_to_all split/concat dimension out of range for " + shp(s));
  if (s[c.dim] % n != 0)
    return fail("all_to_all split dimension " + std::to_string(c.dim) + " has size " +
                std::to_string(s[c.dim]) + ", not divisible by the " + std::to_string(n) +
                " devices along the axes");
  s[c.dim] /= n;
  if (auto g = rt::checked_mul(s[c.concat_dim], n)) {
    s[c.concat_dim] = *g;
  } else {
    return too_large("the result of all_to_all");
  }
  return one(x.dtype, std::move(s));
}

/// axis_index: no operands; i32[].
ShapeRuleResult axis_index_shape(OpCode, std::span<const Type>, const Attrs &, const rt::Mesh &) {
  return one(DType::I32, {});
}

// Variance: v = the operand's variance, axes = the op's.
/// Varying -> Invariant (psum, pmax, pmin, all_gather_invariant).
AxisSet made_invariant(AxisSet v, AxisSet axes) { return v - axes; }
/// Invariant -> Varying (pbroadcast, pscatter): they read only the local copy.
AxisSet made_varying(AxisSet v, AxisSet axes) { return v | axes; }
/// () -> Varying (axis_index).
AxisSet the_axes(AxisSet, AxisSet axes) { return axes; }

ShardingRule no_sharding(OpCode, std::span<const Type>, std::span<const Type>, const Attrs &) {
  return unsupported(
      "a collective communicates between devices; a sharded function works on global arrays");
}

/// A collective's rules from its shape rule and its variance row. Varying ->
/// ...: the operand must vary along the named axes (psum of an invariant x is
/// axis_size * x, so lifting it with pbroadcast gives exactly that meaning).
/// Invariant -> Varying: meaningful only when every device along the axes
/// holds the same value.
constexpr OpRules collective_rules(decltype(OpRules::shape) shape, bool computes_with_values,
                                   AxisRequirement requirement,
                                   decltype(OpRules::variance) variance) {
  return {
      .family = "collectives",
      .shape = shape,
      .computes_with_values = computes_with_values,
      .requirement = requirement,
      .variance = variance,
      .constant_operand_adapts = false,  // operands keep their own variance
      .sharding = no_sharding,
  };
}

constexpr AxisRequirement kVarying = AxisRequirement::Varying;
constexpr AxisRequirement kInvariant = AxisRequirement::Invariant;

}  // namespace

const OpRules kAllReduce =
    collective_rules(combined_shape<all_reduce_shape>, true, kVarying, made_invariant);
const OpRules kPbroadcast =
    collective_rules(single_shape<same_shape>, false, kInvariant, made_varying);
// Varying -> Varying (a pbroadcast fused in).
const OpRules kAllGather =
    collective_rules(combined_shape<gather_shape>, false, kVarying, same_variance);
const OpRules kAllGatherInvariant =
    collective_rules(combined_shape<gather_shape>, false, kVarying, made_invariant);
const OpRules kPsumScatter =
    collective_rules(combined_shape<psum_scatter_shape>, true, kVarying, same_variance);
const OpRules kPscatter =
    collective_rules(single_shape<scatter_shape>, false, kInvariant, made_varying);
const OpRules kAllToAll =
    collective_rules(single_shape<all_to_all_shape>, false, kVarying, same_variance);
const OpRules kPpermute =
    collective_rules(single_shape<same_shape>, false, kVarying, same_variance);
const OpRules kAxisIndex =
    collective_rules(axis_index_shape, false, AxisRequirement::None, the_axes);

}  // namespace families
}  // namespace spmd
