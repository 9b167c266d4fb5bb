// ops/families/families.h — what the op family files share (internal to the
// ops layer): the rule values each family file defines, registered by
// table.cpp, and the helpers their rules are built from.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops/op_rules.h"

namespace spmd::families {

// The rules, by family file (each value is registered for its ops in table.cpp).
// creation.cpp: constant, full, iota.
extern const OpRules kCreation;
// elementwise.cpp: the rows of spmdrt/unary_math.def and binary_math.def,
// cast, stop_gradient, where.
extern const OpRules kUnaryMath, kCast, kStopGradient, kBinaryMath, kSelect;
// reductions.cpp: sum, max, min, argmax, argmin.
extern const OpRules kReduction;
// contractions.cpp: einsum.
extern const OpRules kEinsum;
// layout.cpp: reshape ... dynamic_update_slice, constrain.
extern const OpRules kReshape, kTranspose, kReverse, kBroadcastTo, kSlice, kPad, kConcat,
    kDynamicSlice, kDynamicUpdateSlice, kConstrain;
// gather.cpp: take, scatter_add.
extern const OpRules kGather;
// collectives.cpp: psum ... axis_index.
extern const OpRules kAllReduce, kPbroadcast, kAllGather, kAllGatherInvariant, kPsumScatter,
    kPscatter, kAllToAll, kPpermute, kAxisIndex;
// random.cpp: key ... randint.
extern const OpRules kRandomKey, kRandomFoldIn, kKeyData, kRandomSplit, kRandomBits, kRandomUniform,
    kRandomNormal, kRandomInt;
// control.cpp: call, for.
extern const OpRules kCall, kFor;
// print.cpp: print.
extern const OpRules kPrint;

// Shape rule helpers (common.cpp).
std::string shp(const Shape &s);
/// NumPy broadcasting of two shapes; false when they do not broadcast.
bool broadcast(const Shape &a, const Shape &b, Shape &out);
ShapeRuleResult fail(std::string message);
/// A result whose size cannot be represented (spmdrt/checked.h).
ShapeRuleResult too_large(std::string what);
/// One result of this dtype and shape.
ShapeRuleResult one(DType d, Shape s);
inline bool valid_dim(int64_t d, int64_t rank) { return d >= 0 && d < rank; }

// Variance rule helpers.
/// Non-collective ops keep their (equal) operands' variance.
inline AxisSet same_variance(AxisSet operands, AxisSet) { return operands; }
/// Constants are the same on every device.
inline AxisSet invariant(AxisSet, AxisSet) { return AxisSet(); }

// Sharding rule helpers (common.cpp).
ShardingRule unsupported(std::string why);
/// Factors = the dimensions of `result`; each operand dimension that is not
/// broadcast (same size as the result's, NumPy alignment from the right) has
/// the result dimension's factor. Operands of rank 0 have no dimensions.
ShardingRule elementwise(const Type &result, std::span<const Type> operands);
/// Factors = the operand's dimensions; dimensions where `keep(d)` is false
/// are not split (kNoFactor in operand and result). Operand and result have
/// the same rank (layout ops that keep every dimension).
template <typename Keep>
ShardingRule same_rank_layout(RuleFamily family, const Type &x, Keep keep) {
  ShardingRule r;
  r.family = family;
  std::vector<int> dims;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (keep(d)) {
      dims.push_back(r.num_factors());
      r.factor_sizes.push_back(x.shape[d]);
      r.factor_kinds.push_back(FactorKind::Parallel);
    } else {
      dims.push_back(kNoFactor);
    }
  }
  r.operand_factors.push_back(dims);
  r.result_factors.push_back(dims);
  return r;
}

}  // namespace spmd::families
