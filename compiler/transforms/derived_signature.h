// transforms/derived_signature.h — the signatures of derived functions:
// what `transpose(f)`, `jvp(f)`, `vjp(f)` and `grad(f)` take and return,
// without building them. Lowering types a call of a derivative with them and
// variance inference declares the derived function from them
// (middle/infer_variance.h); the derive script that builds the functions is
// pipeline/derive.h, and derived_signature describes exactly the parameters
// and results it gives them. Problems are TransformErrors (user errors with
// a span).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/emitter.h"

namespace spmd {

using ir::DeriveKind;

/// The command that derives `k` (`transpose`, `jvp`, `vjp`, `grad`).
const char *derive_kind_name(DeriveKind k);

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

/// One line saying what derive_function(f, step) computes, for comments.
std::string describe_step(const FunctionSignature &f, const ir::DeriveStep &step);

}  // namespace spmd
