// transforms/transpose.h — transposition of a function linear in some inputs.
//
// transpose_function takes a flat function f whose results marked in
// `spec.ct_results` are linear in the parameters marked `spec.linear_params`
// (the other parameters are constants: residuals) and builds
//   f_T(constant params..., cotangent of each ct result...) ->
//       (kept results..., cotangent of each linear param...)
// Step by step:
//   1. classify every value as linear (depends on a linear param) or constant,
//      checking each op is linear in its linear operands — otherwise a
//      TransformError "not-linear" at the first offending op;
//   2. copy the constant instructions forward (they compute residuals);
//   3. walk the linear instructions backwards, applying each op's transpose
//      rule (transforms/rules/) and summing cotangents of values used twice;
//   4. return the parameters' cotangents (zeros where none flowed).
// Variance makes this efficient: psum transposes to pbroadcast (no
// communication), pbroadcast to psum, all_gather to psum_scatter,
// all_gather_invariant to pscatter, all_to_all to all_to_all with the axes
// swapped, ppermute to the inverse permutation. At the shmap boundary in_specs
// and out_specs swap and nothing else is added.
//
// Loops. A loop's carried value is linear when its initial or (a fixpoint)
// its next value is. The loop splits in two:
//   * the forward loop (step 2) carries the constant values over the same
//     range and computes the constant part of the body;
//   * the backward loop (step 3) runs the range backwards, carrying the
//     cotangent of each linear carried value (it starts as the cotangent of
//     the loop's result and ends as that of the initial value) and the sum,
//     over iterations, of the cotangents of the linear values the body reads
//     from outside the loop (starting from their cotangent from the uses
//     after the loop, or zeros); its body is the body's linear part
//     transposed.
// The backward body needs values of the forward body (residuals). Those that
// do not depend on a constant carried value (the index, outside values,
// constants, what is computed from them) are recomputed in the backward
// body; the others are stacked: the forward loop carries an array with one
// row per iteration, filled with dynamic_update_slice, and the backward loop
// reads row k back with dynamic_slice. A loop marked [[remat]] (or
// TransposeSpec::remat) stacks only its constant carried values and
// recomputes the rest of the body from them. Transposing the backward loop
// again gives the forward loop back (the range reversed twice).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/emitter.h"

namespace spmd {

struct TransposeSpec {
  std::vector<bool> linear_params;  // per parameter
  std::vector<bool> ct_results;     // per result: receives a cotangent
  std::vector<bool> keep_results;   // per result: returned unchanged (must be constant)
  /// Per result with a cotangent: seed it with the constant 1 instead of a
  /// parameter (grad of a scalar output).
  std::vector<bool> seed_ones;
  std::string name;  // name of the new function
  /// Recompute the values every loop's backward pass needs instead of
  /// stacking them (as if every loop were marked [[remat]]).
  bool remat = false;
};

ir::Function transpose_function(const ir::Module &module, const ir::Function &function,
                                const TransposeSpec &spec);

/// "w" -> "w_bar", "w_dot" -> "w_bar", "w_bar" -> "w"; "" stays "".
std::string cotangent_name(const std::string &name);

}  // namespace spmd
