// middle/spellings.h — the spellings users bring from NumPy, JAX and Python.
//
// A name spmdc does not know is often a habit from another array language:
// `True`, `jnp.concatenate`, `axis=`, `np.float32`, `lax.psum`. These tables
// map such spellings to what spmdc calls the same thing, so an unknown-name
// diagnostic can say "did you mean `true`?" and carry a fix-it. Edit-distance
// suggestions (support/suggest.h) cover plain typos; these cover the habits.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/diagnostics.h"

namespace spmd {

/// What spmdc calls a foreign spelling: `replacement` is source text that can
/// replace the name (empty when no mechanical rewrite exists) and `help` the
/// sentence to show.
struct ForeignSpelling {
  std::string replacement;
  std::string help;
};

/// `jnp.exp` -> `exp`, `lax.psum` -> `psum`: strips a NumPy/JAX/Python module
/// prefix (np., jnp., numpy., jax.numpy., lax., jax.lax., jax.nn., math.).
/// Returns the name unchanged when it has none.
std::string_view strip_foreign_prefix(std::string_view name);

/// A value name (`True`, `False`, `np.pi`).
std::optional<ForeignSpelling> foreign_value(std::string_view name);
/// A function name; `is_builtin` says whether a name is a builtin of spmdc.
std::optional<ForeignSpelling> foreign_function(std::string_view name,
                                                bool (*is_builtin)(const std::string &));
/// A keyword argument of a call whose parameters are `params`.
std::optional<ForeignSpelling> foreign_keyword(std::string_view keyword,
                                               const std::vector<std::string> &params);
/// A dtype (`float32`, `np.int32`, `float`).
std::optional<ForeignSpelling> foreign_dtype(std::string_view name);

/// Adds a suggestion to `d` for the unknown `written` at `span`: the foreign
/// spelling's help and fix-it when there is one, else "did you mean `x`?" for
/// the closest of `candidates` (with a fix-it). False when it found nothing.
bool suggest(Diagnostic &d, SourceSpan span, std::string_view written,
             const std::optional<ForeignSpelling> &foreign,
             const std::vector<std::string> &candidates);

}  // namespace spmd
