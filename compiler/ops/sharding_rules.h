// ops/sharding_rules.h — how each op may be split over a device mesh.
//
// The sharding rule of an op describes it as a loop nest over *factors*, the
// way an einsum names its indices: every dimension of every operand and
// result is mapped to one factor, or to kNoFactor when the op cannot work on
// a split of that dimension without moving data (the concatenation dimension
// of concat, a broadcast size-1 dimension, a dimension a slice cuts into). A
// sharding *strategy* (sharding/strategy.h) assigns disjoint lists of mesh
// axes to factors; each dimension then has the axes of its factor, and every
// kNoFactor dimension is not split. A factor that no result has is a
// reduction: splitting it leaves each device a partial result — a partial sum
// for sums and contractions (completed later by psum or psum_scatter), a
// partial max/min for max/min (completed at once by pmax/pmin).
//
// The rule for matmul, einsum("ij,jk->ik"), is the hidet table as a special
// case: split i (rows of A and C), k (columns of B and C) or j (contracted:
// C is a partial sum). Elementwise ops follow the ONNX formalism: operands are
// split like the result on every dimension they do not broadcast, and a
// broadcast dimension is not split (so [M,1] + [1,N] may split M and N over
// different axes: the composable broadcast case).
//
// Linear operands: a partial sum may flow through an op that is linear in an
// operand (the sum of the parts is the part of the sum), e.g. `-x`,
// `reshape(x)`, `sum(x)`, `x * c` or `x @ w` with x partial, or `a + b` with
// both partial over the same axes. `Linearity` says which operands may carry
// a partial sum and whether they must carry it together.
//
// sharding_rule is the one entry to these facts: each op's factors sit in its
// family's file (ops/families/<family>.cpp) beside its shape and variance
// rules, registered in op_rules()'s exhaustive switch over OpCode, so a new op
// does not compile until it states its rule (docs/adding-an-op.md,
// docs/sharding.md).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops/types.h"
#include "ops/op_info.h"

namespace spmd {

inline constexpr int kNoFactor = -1;

/// What splitting a factor means.
enum class FactorKind : uint8_t {
  Parallel,  // appears in a result: each device computes its block
  Sum,       // reduced by summation: the result is a partial sum (psum later)
  Max,       // reduced by max: completed at once with pmax
  Min,       // reduced by min: completed at once with pmin
};

/// Which operands may carry a partial sum through the op.
enum class Linearity : uint8_t {
  None,      // no operand may be a partial sum
  Any,       // any one of the linear operands (the others must be complete)
  Together,  // all linear operands, partial over the same axes
};

/// The rule families, for messages and docs/sharding.md's tables.
enum class RuleFamily : uint8_t {
  Creation,      // constants and iota: any split, computed locally
  Elementwise,   // unary, binary, compare, logical, where: NumPy broadcasting
  Reduction,     // sum/max/min over dims
  Contraction,   // einsum and @: one factor per index label
  Reshape,       // the major dimensions of matching groups
  Transpose,     // dimensions permuted
  BroadcastTo,   // broadcast dimensions not split
  Slice,         // dims a slice or pad cuts into are not split
  Concat,        // the concatenation dimension is not split
  DynamicSlice,  // the dimension indexed at run time is not split
  Gather,        // take, scatter_add: a split indexed axis looks up shifted ids
  Identity,      // constrain
  Random,        // random draws: any split, each device draws its block at its offset
  Print,         // print: whole arrays, every operand replicated
  Unsupported,   // collectives, calls, loops: not in sharded functions
};

struct ShardingRule {
  RuleFamily family = RuleFamily::Unsupported;
  std::vector<int64_t> factor_sizes;
  std::vector<FactorKind> factor_kinds;
  /// Per operand, per dimension: a factor index or kNoFactor.
  std::vector<std::vector<int>> operand_factors;
  /// Per result, per dimension: a factor index or kNoFactor.
  std::vector<std::vector<int>> result_factors;
  Linearity linearity = Linearity::None;
  std::vector<bool> linear_operands;  // which operands Linearity talks about
  /// Non-empty for RuleFamily::Unsupported: why the op cannot be split.
  std::string unsupported;

  int num_factors() const { return static_cast<int>(factor_sizes.size()); }
};

/// The rule of `op` with these global operand and result types.
ShardingRule sharding_rule(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                           const Attrs &attrs);

/// "elementwise", "contraction", ... (for messages).
const char *rule_family_name(RuleFamily family);
/// One sentence: what the family requires of its operands' splits.
const char *rule_family_requirement(RuleFamily family);

}  // namespace spmd
