// frontend/ast_builder_internal.h — shared pieces of the ANTLR-based AST builder.
//
// Only ast_builder.cpp (running lexer and parser, bracket-depth guard, errors) and
// ast_builder_tree.cpp (parse tree to AST) include this header, and with it
// the generated ANTLR headers. SyntaxErrorSink collects `syntax-error`
// diagnostics for one file: it drops duplicates at the same position and stops
// the parse after kMaxSyntaxErrors.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "SpmdParser.h"
#include "frontend/ast.h"
#include "frontend/ast_builder.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd::frontend_detail {

using spmd_antlr::SpmdParser;

class SyntaxErrorSink {
 public:
  SyntaxErrorSink(const SourceFile &file, FileId id, DiagnosticEngine &diags)
      : file_(file), id_(id), diags_(diags) {}

  /// Reports a syntax error unless one was already reported at `span.begin`.
  /// Returns the diagnostic (for notes/fixes) or nullptr when it was dropped.
  Diagnostic *report(SourceSpan span, std::string message, std::string code = "syntax-error");
  /// True once kMaxSyntaxErrors were reported.
  bool full() const { return count_ >= kMaxSyntaxErrors; }
  int count() const { return count_; }

  const SourceFile &file() const { return file_; }
  FileId id() const { return id_; }
  /// The span of a token (byte offsets; conjured or EOF tokens give an empty span).
  SourceSpan span(const antlr4::Token *token) const;
  SourceSpan span(antlr4::tree::TerminalNode *node) const;
  SourceSpan span(antlr4::ParserRuleContext *ctx) const;
  /// The source bytes of a token (not ANTLR's re-encoded text).
  std::string text(const antlr4::Token *token) const;

 private:
  const SourceFile &file_;
  FileId id_;
  DiagnosticEngine &diags_;
  std::set<uint32_t> positions_;
  int count_ = 0;
};

/// `x` shown in a message: backticks, control and non-UTF-8 bytes as \xNN,
/// long text shortened.
std::string quote_source_text(std::string_view bytes);

/// Converts a parse tree (possibly partial after syntax errors) to the AST.
/// Also reports the errors the permissive grammar leaves to it (missing or
/// misplaced specs, `on`, chained comparisons, literal ranges).
ast::Module build_module(SpmdParser::Module_Context *tree, SyntaxErrorSink &errors,
                         DiagnosticEngine &diags);

}  // namespace spmd::frontend_detail
