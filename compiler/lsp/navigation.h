// lsp/navigation.h — `textDocument/definition` and `textDocument/formatting`.
//
// Definition: the places that bind the name under the cursor (lsp/symbols.h):
// a value's assignment(s) or parameter, a function's declaration (in an
// imported module too), a mesh's or axis's declaration. Formatting: the
// document as `spmdc fmt` prints it (frontend/format.h), as one edit that
// replaces the whole text; no edit when it is already formatted or does
// not parse (formatting never changes what a program means, so it must not
// guess at a broken one).
#pragma once

#include "lsp/analysis.h"

namespace spmd::lsp {

/// LSP `Location[]` (empty when the cursor is on nothing that is bound).
Json definition_locations(const Analysis &analysis, uint32_t offset);

/// LSP `TextEdit[]` that formats the document.
Json formatting_edits(const Analysis &analysis);

}  // namespace spmd::lsp
