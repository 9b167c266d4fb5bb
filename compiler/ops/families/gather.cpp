// ops/families/gather.cpp — take and scatter_add (GatherAttrs: the indexed
// axis and what an out-of-range id does): take(x, ids, axis) reads the entries
// of x at the i32 array ids along axis; scatter_add(x, updates, ids, axis)
// adds updates into x there, take's transpose.
#include "ops/families/families.h"

namespace spmd::families {
namespace {

/// take(x, ids): x.shape[:axis] + ids.shape + x.shape[axis+1:];
/// scatter_add(x, updates, ids): x's shape, updates shaped as take's result.
ShapeRuleResult gather_shape(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                             const rt::Mesh &) {
  const Type &x = ops[0];
  const Type &ids = op == OpCode::Take ? ops[1] : ops[2];
  const int64_t axis = attrs.gather().axis;
  if (ids.dtype != DType::I32)
    return fail("the ids must be i32, not " + std::string(dtype_name(ids.dtype)));
  if (!valid_dim(axis, x.rank()))
    return fail("axis " + std::to_string(axis) + " is out of range for " + shp(x.shape));
  Shape gathered(x.shape.begin(), x.shape.begin() + axis);
  gathered.insert(gathered.end(), ids.shape.begin(), ids.shape.end());
  gathered.insert(gathered.end(), x.shape.begin() + axis + 1, x.shape.end());
  if (op == OpCode::Take) return one(x.dtype, std::move(gathered));
  if (x.dtype == DType::Bool || x.dtype == DType::Key)
    return fail("cannot add " + std::string(dtype_name(x.dtype)) + " values");
  if (ops[1].dtype != x.dtype)
    return fail("the updates are " + std::string(dtype_name(ops[1].dtype)) + ", the array " +
                std::string(dtype_name(x.dtype)));
  if (ops[1].shape != gathered)
    return fail("the updates must have the shape take would give, " + shp(gathered) + ", not " +
                shp(ops[1].shape));
  return one(x.dtype, x.shape);
}

/// One factor per dimension of x, shared with the gathered values' copies of
/// those dimensions; take's ids dimensions are factors of their own, shared
/// with its result. The indexed axis may be split (Megatron's
/// vocabulary-parallel embedding): each device looks up only the ids in its
/// block, shifted by the block's offset, and reads zeros for the others (mode
/// "fill"; the sharded program's lowering adds the shift), so take's result is
/// a partial sum over the axis and scatter_add adds into its own block only, a
/// plain split. scatter_add's ids dimensions (shared with the updates' copies
/// of them) are Sum factors: split, each device adds only its share of the
/// updates, so the result is a partial sum over their axes (a data-parallel
/// embedding gradient: one psum, no gathered updates); the lowering keeps x on
/// the devices with index 0 along those axes and zeros elsewhere, so x counts
/// once.
ShardingRule gather_sharding(OpCode op, std::span<const Type> operands, std::span<const Type>,
                             const Attrs &attrs) {
  ShardingRule r;
  r.family = RuleFamily::Gather;
  const Type &x = operands[0];
  const Type &ids = op == OpCode::Take ? operands[1] : operands[2];
  const int64_t axis = attrs.gather().axis;
  auto new_factor = [&](int64_t size) {
    r.factor_sizes.push_back(size);
    r.factor_kinds.push_back(FactorKind::Parallel);
    return r.num_factors() - 1;
  };
  std::vector<int> array(static_cast<size_t>(x.rank()), kNoFactor);
  for (int64_t d = 0; d < x.rank(); ++d) array[static_cast<size_t>(d)] = new_factor(x.shape[d]);
  if (op == OpCode::Take) r.factor_kinds[static_cast<size_t>(axis)] = FactorKind::Sum;
  std::vector<int> index(static_cast<size_t>(ids.rank()), kNoFactor);
  for (int64_t d = 0; d < ids.rank(); ++d) {
    index[static_cast<size_t>(d)] = new_factor(ids.shape[d]);
    if (op == OpCode::ScatterAdd) r.factor_kinds.back() = FactorKind::Sum;
  }
  std::vector<int> gathered(array.begin(), array.begin() + axis);
  gathered.insert(gathered.end(), index.begin(), index.end());
  gathered.insert(gathered.end(), array.begin() + axis + 1, array.end());
  if (op == OpCode::Take) {
    r.operand_factors = {array, index};
    r.result_factors = {gathered};
  } else {
    r.operand_factors = {array, gathered, index};
    r.result_factors = {array};
  }
  return r;
}

}  // namespace

const OpRules kGather{
    .family = "gather",
    .shape = gather_shape,
    .computes_with_values = false,
    .requirement = AxisRequirement::None,
    .variance = same_variance,
    .constant_operand_adapts = true,
    .sharding = gather_sharding,
};

}  // namespace spmd::families
