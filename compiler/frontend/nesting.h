// frontend/nesting.h — the nesting limits both parsers enforce before parsing.
//
// The parsers, and every later walk of the AST, recurse once per level of an
// expression or a statement. NestingGuard reads the default-channel tokens in
// order (linear time, no parse) and stops at the first token that would nest
// deeper than the limits of ast_builder.h, so such input gets a located
// `nesting-too-deep` error instead of a stack overflow. The ANTLR path
// (ast_builder.cpp) reports it; the hand-written parser (fast_parser.cpp)
// gives up on it and lets the ANTLR path report, so both agree by construction.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "frontend/scanner.h"

namespace spmd::frontend_detail {

/// Limits that keep the parsers, the builder and every later recursive walk of
/// the AST far from the end of the stack (docs/limits.md).
inline constexpr size_t kMaxBracketNesting = 200;
inline constexpr size_t kMaxExpressionDepth = 500;

inline bool is_open(TokenKind k) {
  return k == TokenKind::LParen || k == TokenKind::LBrack || k == TokenKind::LBrace;
}
inline bool is_close(TokenKind k) {
  return k == TokenKind::RParen || k == TokenKind::RBrack || k == TokenKind::RBrace;
}
inline bool is_keyword(TokenKind k) { return k >= TokenKind::Import && k <= TokenKind::None; }

/// Tokens after which an expression is complete (so `-` or `[` is binary/postfix).
bool ends_operand(TokenKind k);

/// Prefix and binary operators of `expr` in Spmd.g4.
bool is_operator(TokenKind k);

/// Which limit a token breaks.
enum class NestingLimit {
  Expression,  ///< more than kMaxExpressionDepth operators/postfixes in one expression
  Brackets,    ///< more than kMaxBracketNesting open brackets
  IfChain,     ///< brackets plus `else if` links deeper than kMaxBracketNesting
};

/// Feed the default-channel tokens one by one; `feed` returns the limit the
/// token breaks (and then the input must not be parsed).
///
/// What counts as a level: each open bracket; in an expression, each binary or
/// prefix operator, each subscript or call applied to a bracketed result
/// (`a[0][0]`, `f(x)(y)`) and each `.member` of a member chain that starts on a
/// bracketed result (`(a).T.T`, `x.reshape(2, 2).reshape(4)`; a dotted name
/// such as `std.nn.relu` is one level); in statements, each `else if`, whose
/// `if` nests inside the `else` of the previous one.
class NestingGuard {
 public:
  std::optional<NestingLimit> feed(TokenKind k);

 private:
  struct Level {
    size_t ops = 0;             // operators of the current expression at this level
    size_t if_links = 0;        // `else if` links of the current chain at this level
    bool member_chain = false;  // inside `(...).a(...).b` at this level
  };
  std::vector<Level> levels_{Level{}};
  size_t total_ops_ = 0;
  size_t total_if_links_ = 0;
  TokenKind previous_ = TokenKind::Eof;
};

}  // namespace spmd::frontend_detail
