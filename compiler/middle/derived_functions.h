// middle/derived_functions.h — building the functions a body names with
// `grad(f)`, `vjp(f)`, `jvp(f)` or `transpose(f)`.
//
// Variance inference (infer_variance.h) builds a derived function when it
// meets the call, once the function derived is checked:
//   1. copy that function and every function it calls into a scratch module
//      and make its pbroadcasts explicit, as the pipeline does to a checked
//      program before `spmdc grad` sees it;
//   2. derive it there with derive_function — the very steps `spmdc grad`
//      and friends take, so the function is the program the CLI prints;
//   3. append it to the module (a shmap stays a shmap, a def instance gives a
//      def), under a name no other shmap has.
#pragma once

#include "ir/ir.h"

namespace spmd {

/// Appends the derivative `step` of `module.functions[primal]` (checked, as
/// are its callees) to `module` and returns its index. Throws TransformError
/// when the function cannot be derived (not linear, not differentiable).
int add_derived_function(ir::Module &module, int primal, const ir::DeriveStep &step);

}  // namespace spmd
