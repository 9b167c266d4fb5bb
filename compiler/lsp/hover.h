// lsp/hover.h — what `textDocument/hover` shows: types with their variance.
//
// For a value: its local type with its device variance, `f32[8, 4]{batch}`,
// from the checked IR (through ir::Function::bindings), one line per distinct
// type when a `def` is instantiated several times; a shmap parameter or
// result adds its global shape and partition spec; a function shows its
// declaration and typed signature, a mesh its axes, an axis its size.
#pragma once

#include <optional>
#include <string>

#include "lsp/analysis.h"

namespace spmd::lsp {

/// Markdown for the symbol at byte `offset` of the document; nullopt when
/// nothing there has anything to show.
std::optional<std::string> hover_markdown(const Analysis &analysis, uint32_t offset);

}  // namespace spmd::lsp
