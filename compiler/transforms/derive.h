// transforms/derive.h — the program transformations behind `spmdc transpose`,
// `jvp`, `vjp` and `grad`, from a checked module to a new one.
//
// derive() picks the shmap, inlines its calls and simplifies it, then:
//   transpose: transposes it in the `wrt` parameters (default: all), which it
//              must be linear in; other parameters stay inputs;
//   jvp:       f_jvp(x..., dx for wrt...) -> (y..., dy...);
//   vjp:       f_vjp(x..., ybar for `of`...) -> (y..., xbar for wrt...),
//              the JVP transposed in its tangents;
//   grad:      f_grad(x...) -> (y..., xbar for wrt...), the vjp of the scalar
//              outputs in `of` (default: the first output) seeded with 1;
// simplifies the result (dead code, CSE, trivial algebra), combines its
// independent all-reduces (`psum((a, b), axes)`) and verifies it.
// The result module holds the function's mesh and the one new function, ready
// for ir::print_module; it type-checks with automatic pbroadcast insertion
// off. Problems are TransformErrors (user errors with a span).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/combine_collectives.h"
#include "transforms/emitter.h"

namespace spmd {

enum class DeriveKind { Transpose, Jvp, Vjp, Grad };

/// The command that derives `k` (`transpose`, `jvp`, `vjp`, `grad`).
const char *derive_kind_name(DeriveKind k);

struct DeriveRequest {
  DeriveKind kind = DeriveKind::Transpose;
  std::string function;          // shmap name; empty = the only shmap
  std::vector<std::string> wrt;  // parameter names; empty = all
  std::vector<std::string> of;   // result names or indices (vjp, grad); empty = default
  std::string source_path;       // for the generated comment
  /// Independent psums (pmaxs, pmins) of the result over the same axes become
  /// one combined collective (transforms/combine_collectives.h).
  CombineOptions combine;
  /// Transposing a loop recomputes what its backward pass needs instead of
  /// stacking it, as if every loop were marked [[remat]] (`--remat`).
  bool remat = false;
};

ir::Module derive(const ir::Module &module, const DeriveRequest &request);

/// Index of the shmap named `name` (or the only shmap when `name` is empty);
/// throws TransformError with a helpful message otherwise.
int find_shmap(const ir::Module &module, const std::string &name);

}  // namespace spmd
