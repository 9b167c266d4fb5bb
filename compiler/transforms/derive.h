// transforms/derive.h — the program transformations behind `spmdc transpose`,
// `jvp`, `vjp` and `grad`, and behind `grad(f)(x)` and friends in a body.
//
// derive_function takes a checked function, inlines its calls and simplifies
// it (derivable_form), then:
//   transpose: transposes it in the `wrt` parameters, which it must be linear
//              in; other parameters stay inputs;
//   jvp:       f_jvp(x..., dx for wrt...) -> (y..., dy...);
//   vjp:       f_vjp(x..., ybar for `of`...) -> (y..., xbar for wrt...),
//              the JVP transposed in its tangents;
//   grad:      f_grad(x...) -> (y..., xbar for wrt...), the vjp of the scalar
//              outputs in `of` seeded with 1;
// simplifies the result (dead code, CSE, trivial algebra, broadcasts moved
// out of adds (transforms/hoist_broadcasts.h) and the peepholes of
// transforms/peephole.h: transposing twice gives the derivable form back op
// for op), combines its
// independent all-reduces and makes its pbroadcasts explicit: it type-checks
// with automatic pbroadcast insertion off. derive() does this for the CLI
// (a shmap chosen by name, `wrt`/`of` given by name or index) and returns a
// module holding the function's mesh and the new function, verified, ready
// for ir::print_module. Problems are TransformErrors (user errors with a span).
//
// derived_signature describes the derived function's parameters and results
// without building it (what lowering needs to type a call of a derivative).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/combine_collectives.h"
#include "transforms/emitter.h"

namespace spmd {

using ir::DeriveKind;

/// The command that derives `k` (`transpose`, `jvp`, `vjp`, `grad`).
const char *derive_kind_name(DeriveKind k);

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
};

ir::Module derive(const ir::Module &module, const DeriveRequest &request);

/// Index of the shmap named `name` (or the only entry shmap when `name` is
/// empty); throws TransformError with a helpful message otherwise.
int find_shmap(const ir::Module &module, const std::string &name);

// ------------------------------------------------------------- signatures

/// One parameter or result of a function as the derivative rules see it:
/// its name, its (local) type and, for a shmap, its global shape and spec.
/// Every entry of a derived function is a copy, tangent or cotangent of an
/// entry of the function it derives, so it has that entry's type; `origin`
/// says which (a parameter, or a result when `from_result`), followed back
/// to the function the first derivative was taken of.
struct SignatureEntry {
  std::string name;
  Type type;
  Shape global_shape;
  rt::PartitionSpec spec;
  SourceSpan span;
  bool from_result = false;
  size_t origin = 0;
};

struct FunctionSignature {
  std::string name;
  ir::FunctionKind kind = ir::FunctionKind::Shmap;
  std::vector<SignatureEntry> params, results;
  /// Per result, the name its cotangent parameter is named after (its written
  /// name, else the returned value's, else its result name; see transpose.h).
  std::vector<std::string> cotangent_bases;
};

/// `f`'s own signature (origins: its own parameters and results).
FunctionSignature signature_of(const ir::Function &f);

/// The signature of `step` applied to a function with signature `f`: exactly
/// the parameters and results derive_function gives it, in order.
FunctionSignature derived_signature(const FunctionSignature &f, const ir::DeriveStep &step);

/// The name derive_function gives the derivative: f_transpose (f for
/// f_transpose), f_jvp, f_vjp, f_grad.
std::string derived_name(const std::string &name, DeriveKind kind);

/// The `wrt` flags for parameters named (or numbered) in `wrt` (empty: every
/// floating-point parameter); the `of` flags for results named (or numbered)
/// in `of` (empty: all for vjp, the first for grad). Unknown names, a
/// non-float `wrt`, a non-scalar output of grad are TransformErrors at `at`.
ir::DeriveStep select_step(const FunctionSignature &f, DeriveKind kind,
                           const std::vector<std::string> &wrt, const std::vector<std::string> &of,
                           SourceSpan at);

/// `function` as derive_function transforms it: calls inlined, combined
/// collectives split, simplified, broadcasts hoisted and peepholes rewritten
/// (transforms/hoist_broadcasts.h, transforms/peephole.h).
ir::Function derivable_form(const ir::Module &module, const ir::Function &function);

/// The derivative `step` of `function`, a checked function of `module` (which
/// holds its callees); see the file comment. Throws TransformError.
ir::Function derive_function(const ir::Module &module, const ir::Function &function,
                             const ir::DeriveStep &step, const CombineOptions &combine = {},
                             bool remat = false);

/// One line saying what derive_function(f, step) computes, for comments.
std::string describe_step(const FunctionSignature &f, const ir::DeriveStep &step);

}  // namespace spmd
