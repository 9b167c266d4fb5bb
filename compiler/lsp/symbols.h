// lsp/symbols.h — what each identifier of a document names, from its AST.
//
// index_symbols() walks the main module of a parsed program and records every
// identifier that names a value (parameter, assignment target, loop variable,
// or a use of one), a function (declaration, call, `grad(f)`), a mesh or a mesh
// axis, with the places that bind it. It resolves names as lowering does:
// statements in order, a name bound again rebinding it; after `if`/`for` a
// name may come from either branch or from before the loop, so it has several
// definitions. Only the AST is needed, so go-to-definition works on programs
// that do not type-check. The hover (lsp/hover.h) adds the types from the IR.
#pragma once

#include <string>
#include <vector>

#include "frontend/imports.h"

namespace spmd::lsp {

enum class SymbolKind {
  Value,      // a local name
  Parameter,  // the whole `x: f32[32] @ P(i)` of a parameter (its name is a Value)
  Result,     // the whole `-> f32[] @ P()` of one result
  Function,
  Mesh,
  Axis,
};

struct Symbol {
  SymbolKind kind = SymbolKind::Value;
  std::string name;
  SourceSpan span;                      // this occurrence
  std::vector<SourceSpan> definitions;  // where it is bound (may be in another file)
  /// The function whose body or signature holds the occurrence (null for a
  /// mesh declaration); for Function, the function named, when it is known.
  const ast::FuncDecl *function = nullptr;
  const ast::FuncDecl *named_function = nullptr;
  const ast::MeshDecl *mesh = nullptr;  // Mesh, Axis: the mesh
  size_t index = 0;                     // Parameter, Result: its position; Axis: the axis
};

struct SymbolIndex {
  std::vector<Symbol> symbols;
  /// The innermost symbol whose span contains byte `offset` of `file`
  /// (an identifier's end counts, so a cursor just after it finds it).
  const Symbol *find(FileId file, uint32_t offset) const;
};

/// Indexes the identifiers of program.modules[0] (the main file).
SymbolIndex index_symbols(const Program &program);

}  // namespace spmd::lsp
