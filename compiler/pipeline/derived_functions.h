// pipeline/derived_functions.h — the check script's step that builds the
// functions a body names with `grad(f)`, `vjp(f)`, `jvp(f)` or `transpose(f)`.
//
// Variance inference types each such call from the derived function's
// signature (transforms/derived_signature.h) and leaves a declaration in the
// module where the function goes (middle/infer_variance.h: a
// PendingDerivative each). This step, after checking, builds them in the
// order they were met (a derivative of a derivative after its base):
//   1. copy the function derived and every function it calls into a scratch
//      module and make its pbroadcasts explicit, as the check script does to
//      a checked program before `spmdc grad` sees it;
//   2. derive it there with derive_function (pipeline/derive.h) — the very
//      steps `spmdc grad` and friends take, so the function is the program
//      the CLI prints;
//   3. put it in the declaration's place (a shmap stays a shmap, a def
//      instance gives a def), which must have exactly its types.
// A derivative that cannot be taken (not linear, not differentiable) is an
// error at each call of it. Then the calls no shmap reached (in `sharded`
// functions, which have no variance, and the defs only they call) are built
// the same way from the def instances lowering typed.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "middle/infer_variance.h"
#include "support/diagnostics.h"

namespace spmd {

void build_derived_functions(ir::Module &module, const DerivedCalls &calls,
                             DiagnosticEngine &diags);

}  // namespace spmd
