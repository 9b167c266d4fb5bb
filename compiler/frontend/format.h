// frontend/format.h — canonical source formatting (`spmdc fmt`, `--emit=ast`).
//
// format_module prints an AST back as canonical .spmd source: two-space
// indentation, one space around binary operators, minimal parentheses chosen
// by precedence (plus those written in the source around sub-expressions is
// dropped unless needed), comments kept. Formatting is idempotent and the
// output re-parses to an equal AST.
#pragma once

#include <string>

#include "frontend/ast.h"
#include "support/source.h"

namespace spmd {

std::string format_module(const ast::Module &module);
std::string format_expr(const ast::Expr &expr);
std::string format_type(const ast::TypeExpr &type);

/// An indented tree dump of the AST, one node per line with its kind, payload
/// and line:col (`spmdc print --emit=ast`).
std::string dump_ast(const ast::Module &module, const SourceManager &sources);

}  // namespace spmd
