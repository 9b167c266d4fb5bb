// frontend/parser.h — text to AST.
//
// parse() builds the ast::Module of one source file. It first runs the
// hand-written recursive-descent parser (fast_parser.h), which handles correct
// programs; on anything that deserves a diagnostic that parser gives up
// without reporting, and the file is parsed again by the ANTLR-generated
// parser of grammar/Spmd.g4 (ast_builder.cpp, the only files that see ANTLR
// types), which reports. Both build the same AST for a correct program
// (tests/fuzz/parser_diff). Syntax errors become diagnostics with spans
// ("syntax-error"); the returned module then holds whatever could be built and
// must not be lowered.
#pragma once

#include "frontend/ast.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd {

/// Which parsers parse() may use: Auto (the hand-written one, ANTLR's when it
/// gives up) or Antlr (only ANTLR's: `SPMDC_PARSER=antlr`, for comparisons).
enum class ParserChoice { Auto, Antlr };

ast::Module parse(const SourceManager &sources, FileId file, DiagnosticEngine &diags,
                  ParserChoice choice = ParserChoice::Auto);

}  // namespace spmd
