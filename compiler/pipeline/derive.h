// pipeline/derive.h — the derive script: the steps behind `spmdc transpose`,
// `jvp`, `vjp` and `grad`, and behind `grad(f)(x)` and friends in a body
// (pipeline/derived_functions.h).
//
// derive_function takes a checked function through these steps (each one
// pass of transforms/, run by a pipeline::Script: timed, logged under -v,
// verified in tests and debug builds, `--emit STEP` stops after it):
//   inline_calls, split_collectives, simplify, hoist_broadcasts, peephole
//                  its derivable form (derivable_form);
//   jvp, transpose the derivative itself:
//     transpose: transposes it in the `wrt` parameters, which it must be
//                linear in; other parameters stay inputs;
//     jvp:       f_jvp(x..., dx for wrt...) -> (y..., dy...);
//     vjp:       f_vjp(x..., ybar for `of`...) -> (y..., xbar for wrt...),
//                the JVP transposed in its tangents;
//     grad:      f_grad(x...) -> (y..., xbar for wrt...), the vjp of the
//                scalar outputs in `of` seeded with 1;
//   simplify_result, hoist_broadcasts_result, peephole_result
//                  dead code, CSE, trivial algebra, broadcasts moved out of
//                  adds (transforms/hoist_broadcasts.h) and the peepholes of
//                  transforms/peephole.h (transposing twice gives the
//                  derivable form back op for op);
//   combine_collectives, explicit_pbroadcast
//                  independent all-reduces combined, pbroadcasts made
//                  explicit: the result type-checks with automatic
//                  pbroadcast insertion off.
// derive() does this for the CLI (a shmap chosen by name, `wrt`/`of` given
// by name or index) and returns a module holding the function's mesh and the
// new function, verified, ready for ir::print_module. Problems are
// TransformErrors (user errors with a span). The signatures of derived
// functions (what lowering and variance inference type a call of a
// derivative with) are transforms/derived_signature.h.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/combine_collectives.h"
#include "transforms/derived_signature.h"

namespace spmd {

struct DeriveRequest {
  DeriveKind kind = DeriveKind::Transpose;
  std::string function;          // shmap name; empty = the only shmap
  std::vector<std::string> wrt;  // parameter names or indices; empty = all
  std::vector<std::string> of;   // result names or indices (vjp, grad); empty = default
  std::string source_path;       // for the generated comment
  /// Independent psums (pmaxs, pmins, all_gathers, psum_scatters) of the result
  /// over the same axes become one combined collective
  /// (transforms/combine_collectives.h).
  CombineOptions combine;
  /// Transposing a loop recomputes what its backward pass needs instead of
  /// stacking it, as if every loop were marked [[remat]] (`--remat`).
  bool remat = false;
  /// Stop after this step of the script (`--emit STEP`); the module returned
  /// then holds the function as that step left it, not verified.
  std::string stop_after;
};

/// The steps of the derive script, in order (for `--emit`).
const std::vector<std::string> &derive_steps();

ir::Module derive(const ir::Module &module, const DeriveRequest &request);

/// `function` as derive_function transforms it: calls inlined, combined
/// collectives split, simplified, broadcasts hoisted and peepholes rewritten
/// (transforms/hoist_broadcasts.h, transforms/peephole.h).
ir::Function derivable_form(const ir::Module &module, const ir::Function &function);

/// The derivative `step` of `function`, a checked function of `module` (which
/// holds its callees); see the file comment. Throws TransformError.
/// `stop_after`: as DeriveRequest's.
ir::Function derive_function(const ir::Module &module, const ir::Function &function,
                             const ir::DeriveStep &step, const CombineOptions &combine = {},
                             bool remat = false, const std::string &stop_after = {});

}  // namespace spmd
