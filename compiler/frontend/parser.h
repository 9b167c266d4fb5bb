// frontend/parser.h — text to AST.
//
// parse() runs the ANTLR-generated lexer and parser over one source file and
// builds an ast::Module (ast_builder.cpp is the only file that sees ANTLR
// types). Syntax errors become diagnostics with spans ("syntax-error"); the
// returned module then holds whatever could be built and must not be lowered.
#pragma once

#include "frontend/ast.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd {

ast::Module parse(const SourceManager &sources, FileId file, DiagnosticEngine &diags);

}  // namespace spmd
