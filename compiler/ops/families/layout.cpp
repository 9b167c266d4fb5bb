// ops/families/layout.cpp — the ops that move elements around (LayoutAttrs,
// the fields each ops.def row names): reshape, transpose, flip, broadcast_to,
// slice, pad, concat, dynamic_slice, dynamic_update_slice, and constrain (the
// identity with a sharding requirement, ConstrainAttrs). Their results vary as
// their operands do; each keeps the split of the dimensions it leaves intact.
#include <algorithm>
#include <numeric>

#include "ops/families/families.h"
#include "spmdrt/checked.h"

namespace spmd::families {
namespace {

// reshape.

ShapeRuleResult reshape_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                              const rt::Mesh &) {
  const Type &x = ops[0];
  const LayoutAttrs &l = attrs.layout();
  if (!rt::shape_fits(l.shape, static_cast<int64_t>(rt::dtype_size(x.dtype))))
    return too_large(shape_type_str(x.dtype, l.shape));
  if (rt::num_elements(l.shape) != x.numel())
    return fail("cannot reshape " + shp(x.shape) + " (" + std::to_string(x.numel()) +
                " elements) to " + shp(l.shape));
  return one(x.dtype, l.shape);
}

/// The dimensions form groups with equal products ([a, b] -> [a*b], [a*b] ->
/// [a, b], [a] -> [a], ...). Splitting the major (first non-unit) dimension of
/// a group into n blocks gives each device the same contiguous range of
/// elements on both sides when n divides both major sizes, so the two major
/// dimensions share a factor of size gcd(major sizes); the other dimensions of
/// the group are not split.
ShardingRule reshape_sharding(OpCode, std::span<const Type> operands, std::span<const Type> results,
                              const Attrs &) {
  const Type &x = operands[0], &y = results[0];
  ShardingRule r;
  r.family = RuleFamily::Reshape;
  std::vector<int> in(static_cast<size_t>(x.rank()), kNoFactor);
  std::vector<int> out(static_cast<size_t>(y.rank()), kNoFactor);
  const bool has_zero = x.numel() == 0;
  size_t i = 0, j = 0;
  const size_t ni = x.shape.size(), no = y.shape.size();
  while (!has_zero && (i < ni || j < no)) {
    size_t i0 = i, j0 = j;
    int64_t pi = 1, pj = 1;
    if (i < ni) pi *= x.shape[i++];
    if (j < no) pj *= y.shape[j++];
    while (pi != pj) {
      if (pi < pj && i < ni) {
        pi *= x.shape[i++];
      } else if (pj < pi && j < no) {
        pj *= y.shape[j++];
      } else {
        break;
      }
    }
    if (pi != pj) break;  // cannot happen for equal element counts
    auto major = [](const Shape &s, size_t b, size_t e) {
      for (size_t k = b; k < e; ++k)
        if (s[k] > 1) return static_cast<int64_t>(k);
      return int64_t{-1};
    };
    int64_t mi = major(x.shape, i0, i), mj = major(y.shape, j0, j);
    if (mi >= 0 && mj >= 0) {
      int f = r.num_factors();
      r.factor_sizes.push_back(std::gcd(x.shape[mi], y.shape[mj]));
      r.factor_kinds.push_back(FactorKind::Parallel);
      in[mi] = f;
      out[mj] = f;
    }
  }
  r.operand_factors.push_back(std::move(in));
  r.result_factors.push_back(std::move(out));
  return r;
}

// transpose: dims = the permutation.

ShapeRuleResult transpose_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                                const rt::Mesh &) {
  const Type &x = ops[0];
  const std::vector<int64_t> &perm = attrs.layout().dims;
  if (static_cast<int64_t>(perm.size()) != x.rank())
    return fail("transpose permutation has " + std::to_string(perm.size()) +
                " entries but the operand has rank " + std::to_string(x.rank()));
  std::vector<bool> seen(perm.size(), false);
  Shape s;
  for (int64_t d : perm) {
    if (!valid_dim(d, x.rank()) || seen[d]) return fail("transpose needs a permutation");
    seen[d] = true;
    s.push_back(x.shape[d]);
  }
  return one(x.dtype, std::move(s));
}

/// Each dimension's split moves with the dimension.
ShardingRule transpose_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                                const Attrs &attrs) {
  ShardingRule r;
  r.family = RuleFamily::Transpose;
  std::vector<int> in, out;
  for (int64_t d = 0; d < operands[0].rank(); ++d) {
    in.push_back(static_cast<int>(d));
    r.factor_sizes.push_back(operands[0].shape[d]);
    r.factor_kinds.push_back(FactorKind::Parallel);
  }
  for (int64_t p : attrs.layout().dims) out.push_back(static_cast<int>(p));
  r.operand_factors.push_back(in);
  r.result_factors.push_back(out);
  return r;
}

// flip: dims = the reversed dimensions (sorted).

ShapeRuleResult reverse_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                              const rt::Mesh &) {
  const Type &x = ops[0];
  const std::vector<int64_t> &dims = attrs.layout().dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!valid_dim(dims[i], x.rank()))
      return fail("flip dimension " + std::to_string(dims[i]) + " is out of range for " +
                  shp(x.shape));
    if (i > 0 && dims[i] <= dims[i - 1]) return fail("flip dimensions must be distinct and sorted");
  }
  return one(x.dtype, x.shape);
}

/// Flipping a split dimension would reorder the blocks: those are not split.
ShardingRule reverse_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                              const Attrs &attrs) {
  return same_rank_layout(RuleFamily::Slice, operands[0], [&](int64_t d) {
    return std::find(attrs.layout().dims.begin(), attrs.layout().dims.end(), d) ==
           attrs.layout().dims.end();
  });
}

// broadcast_to: shape (NumPy rules).

ShapeRuleResult broadcast_to_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                                   const rt::Mesh &) {
  const Type &x = ops[0];
  const Shape &to = attrs.layout().shape;
  Shape s;
  if (x.rank() > static_cast<int64_t>(to.size()) || !broadcast(x.shape, to, s) || s != to)
    return fail("cannot broadcast " + shp(x.shape) + " to " + shp(to));
  return one(x.dtype, to);
}

/// The dimensions it does not broadcast keep their split (as elementwise ops).
ShardingRule broadcast_to_sharding(OpCode, std::span<const Type> operands,
                                   std::span<const Type> results, const Attrs &) {
  ShardingRule r = elementwise(results[0], operands);
  r.family = RuleFamily::BroadcastTo;
  return r;
}

// slice: start/limit/stride.

ShapeRuleResult slice_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                            const rt::Mesh &) {
  const Type &x = ops[0];
  const LayoutAttrs &l = attrs.layout();
  if (l.start.size() != x.shape.size() || l.limit.size() != x.shape.size() ||
      l.stride.size() != x.shape.size())
    return fail("slice needs one start/limit/stride per dimension");
  Shape s;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    int64_t b = l.start[d], e = l.limit[d], st = l.stride[d];
    if (st <= 0) return fail("slice steps must be positive");
    if (b < 0 || e > x.shape[d] || b > e)
      return fail("slice " + std::to_string(b) + ":" + std::to_string(e) +
                  " is out of bounds for dimension " + std::to_string(d) + " of size " +
                  std::to_string(x.shape[d]));
    s.push_back(rt::range_length(b, e, st));
  }
  return one(x.dtype, std::move(s));
}

/// A dimension the slice cuts into is not split.
ShardingRule slice_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                            const Attrs &attrs) {
  const Type &x = operands[0];
  return same_rank_layout(RuleFamily::Slice, x, [&](int64_t d) {
    return attrs.layout().start[d] == 0 && attrs.layout().limit[d] == x.shape[d] &&
           attrs.layout().stride[d] == 1;
  });
}

// pad (slice's inverse): shape, start, stride.

ShapeRuleResult pad_shape(OpCode, std::span<const Type> ops, const Attrs &attrs, const rt::Mesh &) {
  const Type &x = ops[0];
  const LayoutAttrs &l = attrs.layout();
  if (l.shape.size() != x.shape.size() || l.start.size() != x.shape.size() ||
      l.stride.size() != x.shape.size())
    return fail("pad needs a target shape, start and stride per dimension");
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (l.stride[d] <= 0) return fail("pad strides must be positive");
    if (l.start[d] < 0) return fail("pad starts must not be negative");
    if (x.shape[d] == 0) continue;
    auto span = rt::checked_mul(x.shape[d] - 1, l.stride[d]);
    auto last = span ? rt::checked_add(l.start[d], *span) : std::nullopt;
    if (!last || *last >= l.shape[d]) return fail("pad places elements outside the target shape");
  }
  return one(x.dtype, l.shape);
}

/// A dimension it pads is not split.
ShardingRule pad_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                          const Attrs &attrs) {
  const Type &x = operands[0];
  return same_rank_layout(RuleFamily::Slice, x, [&](int64_t d) {
    return attrs.layout().start[d] == 0 && attrs.layout().stride[d] == 1 &&
           attrs.layout().shape[d] == x.shape[d];
  });
}

// concat: variadic; dim.

ShapeRuleResult concat_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                             const rt::Mesh &) {
  const Type &x = ops[0];
  const int64_t dim = attrs.layout().dim;
  if (!valid_dim(dim, x.rank()))
    return fail("concat axis " + std::to_string(dim) + " is out of range");
  Shape s = x.shape;
  for (size_t k = 1; k < ops.size(); ++k) {
    if (ops[k].dtype != x.dtype) return fail("concat operands have different dtypes");
    if (ops[k].rank() != x.rank()) return fail("concat operands have different ranks");
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != dim && ops[k].shape[d] != x.shape[d])
        return fail("concat operands " + shp(x.shape) + " and " + shp(ops[k].shape) +
                    " differ outside the concatenation axis");
    auto sum = rt::checked_add(s[dim], ops[k].shape[dim]);
    if (!sum) return too_large("the concatenation");
    s[dim] = *sum;
  }
  return one(x.dtype, std::move(s));
}

/// The operands split alike; the concatenation dimension not split.
ShardingRule concat_sharding(OpCode, std::span<const Type> operands, std::span<const Type> results,
                             const Attrs &attrs) {
  ShardingRule r = same_rank_layout(RuleFamily::Concat, results[0],
                                    [&](int64_t d) { return d != attrs.layout().dim; });
  r.operand_factors.assign(operands.size(), r.result_factors[0]);
  return r;
}

// dynamic_slice: (x, i32 index) slices block index*size along dim, size shape[dim].

ShapeRuleResult dynamic_slice_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                                    const rt::Mesh &) {
  const Type &x = ops[0];
  if (ops[1].dtype != DType::I32 || ops[1].rank() != 0)
    return fail("dynamic_slice needs an i32 scalar index");
  if (!valid_dim(attrs.layout().dim, x.rank()) || attrs.layout().shape.size() != x.shape.size())
    return fail("dynamic_slice dimension out of range");
  return one(x.dtype, attrs.layout().shape);
}

/// The dimension indexed at run time is not split.
ShardingRule dynamic_slice_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                                    const Attrs &attrs) {
  ShardingRule r = same_rank_layout(RuleFamily::DynamicSlice, operands[0],
                                    [&](int64_t d) { return d != attrs.layout().dim; });
  r.operand_factors.push_back({});  // the index
  return r;
}

// dynamic_update_slice: (x, update, i32 index) along dim.

ShapeRuleResult dynamic_update_slice_shape(OpCode, std::span<const Type> ops, const Attrs &,
                                           const rt::Mesh &) {
  const Type &x = ops[0];
  if (ops[2].dtype != DType::I32 || ops[2].rank() != 0)
    return fail("dynamic_update_slice needs an i32 scalar index");
  if (ops[1].dtype != x.dtype || ops[1].rank() != x.rank())
    return fail("dynamic_update_slice update does not match the operand");
  return one(x.dtype, x.shape);
}

ShardingRule dynamic_update_slice_sharding(OpCode, std::span<const Type> operands,
                                           std::span<const Type>, const Attrs &attrs) {
  ShardingRule r = same_rank_layout(RuleFamily::DynamicSlice, operands[0],
                                    [&](int64_t d) { return d != attrs.layout().dim; });
  r.operand_factors.push_back(r.operand_factors[0]);  // the update
  r.operand_factors.push_back({});                    // the index
  return r;
}

// constrain: the identity; ConstrainAttrs::sharding is the global spec.

ShapeRuleResult constrain_shape(OpCode, std::span<const Type> ops, const Attrs &attrs,
                                const rt::Mesh &) {
  const Type &x = ops[0];
  if (attrs.constrain().sharding.size() > x.shape.size())
    return fail("the partition spec of `constrain` is longer than the value's rank");
  return one(x.dtype, x.shape);
}

ShardingRule constrain_sharding(OpCode, std::span<const Type> operands, std::span<const Type>,
                                const Attrs &) {
  return same_rank_layout(RuleFamily::Identity, operands[0], [](int64_t) { return true; });
}

/// The rules every layout op shares but its shape and sharding rules: its
/// result varies as its operands do, and it moves values without computing
/// with them (so it takes keys too).
constexpr OpRules layout_rules(decltype(OpRules::shape) shape,
                               decltype(OpRules::sharding) sharding) {
  return {
      .family = "layout",
      .shape = shape,
      .computes_with_values = false,
      .requirement = AxisRequirement::None,
      .variance = same_variance,
      .constant_operand_adapts = true,
      .sharding = sharding,
  };
}

}  // namespace

const OpRules kReshape = layout_rules(reshape_shape, reshape_sharding);
const OpRules kTranspose = layout_rules(transpose_shape, transpose_sharding);
const OpRules kReverse = layout_rules(reverse_shape, reverse_sharding);
const OpRules kBroadcastTo = layout_rules(broadcast_to_shape, broadcast_to_sharding);
const OpRules kSlice = layout_rules(slice_shape, slice_sharding);
const OpRules kPad = layout_rules(pad_shape, pad_sharding);
const OpRules kConcat = layout_rules(concat_shape, concat_sharding);
const OpRules kDynamicSlice = layout_rules(dynamic_slice_shape, dynamic_slice_sharding);
const OpRules kDynamicUpdateSlice =
    layout_rules(dynamic_update_slice_shape, dynamic_update_slice_sharding);
const OpRules kConstrain = layout_rules(constrain_shape, constrain_sharding);

}  // namespace spmd::families
