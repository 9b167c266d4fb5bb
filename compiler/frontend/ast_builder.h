// frontend/ast_builder.h — private interface between parser.cpp and the ANTLR-based builder.
//
// build_ast() lexes and parses one file with the generated ANTLR parser and
// converts the parse tree to an ast::Module; it reports lexical and syntax
// errors. It returns the comments it found (ANTLR's hidden channel) so that
// parser.cpp can attach them to declarations and statements without seeing
// any ANTLR type. Nothing outside compiler/frontend/ includes this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/nesting.h"  // kMaxBracketNesting, kMaxExpressionDepth
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd::frontend_detail {

/// At most this many syntax errors are reported per file.
inline constexpr int kMaxSyntaxErrors = 20;

/// One `# ...` comment.
struct CommentToken {
  uint32_t begin = 0;  // offset of '#'
  uint32_t end = 0;
  std::string text;                // after '#', trailing whitespace removed
  bool follows_code = false;       // a code token precedes it on the same line
  uint32_t previous_code_end = 0;  // end offset of that token (when follows_code)
};

struct RawParse {
  ast::Module module;
  std::vector<CommentToken> comments;
};

RawParse build_ast(const SourceFile &file, FileId id, DiagnosticEngine &diags);

}  // namespace spmd::frontend_detail
