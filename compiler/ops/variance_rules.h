// ops/variance_rules.h — device-variance typing of every op.
//
// Non-collective ops need operands of equal variance and produce that variance
// (infer_variance lifts disagreeing operands with pbroadcast first).
// Collectives follow the design note's table: each needs its operand varying
// or invariant along the axes it names, and produces a result that is varying
// or invariant along them. docs/device-variance.md explains each rule; each
// op's rule sits in its family's file (ops/families/collectives.cpp for the
// collectives), found through op_rules() (ops/op_rules.h).
#pragma once

#include <span>
#include <vector>

#include "ops/op_info.h"
#include "ops/types.h"
#include "support/small_vector.h"

namespace spmd {

/// What a collective needs of its (first) operand along attrs.collective().axes.
enum class AxisRequirement {
  None,       // not a collective with an operand (or axis_index)
  Varying,    // Varying -> ...: lifted with pbroadcast when invariant
  Invariant,  // Invariant -> ...: an error when varying
};

AxisRequirement operand_requirement(OpCode op);

/// The result variance of `op` given its operands' (already reconciled)
/// variance. For non-collectives that is `operand_variance` itself; creation
/// ops give {} and axis_index gives attrs.collective().axes.
AxisSet result_variance(OpCode op, AxisSet operand_variance, const Attrs &attrs);

/// True for an all-reduce (psum, pmax, pmin).
bool is_combinable_reduce(OpCode op);

/// True for the collectives with a combined form of several operands and as
/// many results, operand k going to result k as by the op alone, all of them
/// in one collective: the all-reduces (`psum((a, b), axes)`), all_gather,
/// all_gather_invariant (`all_gather((a, b), axes, axis=0)`) and psum_scatter
/// (`psum_scatter((a, b), axes)`); the components share the attributes.
bool is_combinable_collective(OpCode op);

/// The variance of each of `num_results` results given the operands'
/// variances: result k of a combined collective from operand k alone; for every
/// other op, result_variance of the union of all operands.
/// (Inline up to 2: no allocation for an ordinary op.)
SmallVector<AxisSet, 2> result_variances(OpCode op, std::span<const AxisSet> operand_variances,
                                         size_t num_results, const Attrs &attrs);

/// Whether a constant (a creation op's result) used as an operand of `op`
/// takes the variance of the op's other operands, as a literal does in
/// source: true for non-collective ops, false for collectives, calls and loops
/// (whose operands keep their own variance). Even then, an op whose operands
/// are all constants has nothing to adapt to. The checker (infer_variance),
/// the verifier and make_pbroadcasts_explicit share this rule.
bool constant_operand_adapts(OpCode op);

/// "Varying -> Invariant" etc., for docs and diagnostics.
const char *variance_signature(OpCode op);

}  // namespace spmd
