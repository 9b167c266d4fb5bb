// frontend/fast_parser.h — a hand-written recursive-descent parser for programs without errors.
//
// parse_fast() builds exactly the ast::Module (and comment list) that the
// ANTLR path (build_ast: the generated parser of grammar/Spmd.g4 and the
// parse-tree walk of ast_builder_tree.cpp) builds for the same file, without
// ANTLR: one pass over the tokens of scan_token(), no parse tree. It takes
// on only input about which the ANTLR path would report nothing: at the first
// thing that path would write a diagnostic about (a malformed token, nesting
// beyond the limits, a syntax error, a literal out of range, a signature rule
// the AST builder enforces) it gives up and returns nothing, having reported
// nothing, and the caller parses again with ANTLR, whose messages are the
// reference. Grammar/Spmd.g4 stays the specification; where the grammar is
// ambiguous this parser makes ANTLR's choice (see fast_parser.cpp), and
// tests/fuzz/parser_diff compares the two ASTs on the corpus and on
// generated programs.
#pragma once

#include <optional>

#include "frontend/ast_builder.h"
#include "support/source.h"

namespace spmd::frontend_detail {

/// The AST and comments of `file`, or nothing when the ANTLR path must parse
/// it (see the file comment). Never reports a diagnostic.
std::optional<RawParse> parse_fast(const SourceFile &file, FileId id);

}  // namespace spmd::frontend_detail
