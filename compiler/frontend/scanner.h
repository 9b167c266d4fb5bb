// frontend/scanner.h — the token rules of grammar/Spmd.g4, by hand, without ANTLR.
//
// scan_token() finds the longest token starting at an offset (ANTLR's lexer
// semantics: longest match, the rule written first on ties). Both front ends
// use it: the ANTLR adapter in lexer.cpp (which tests/fuzz/lexer_diff checks
// token by token against the generated lexer) and the hand-written parser
// (fast_parser.cpp). TokenKind's values are the generated SpmdLexer's token
// types (lexer.cpp checks that at compile time), in the order of the token
// rules in Spmd.g4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace spmd::frontend_detail {

enum class TokenKind : uint8_t {
  // clang-format off
  Import = 1, Mesh, Def, Shmap, Sharded, On, Return, For, In, Range, If, Else, And, Or, Not,
  True, False, None,
  Arrow, Pow, FloorDiv, Le, Ge, Eq, Ne, Lt, Gt, Assign, Plus, Minus, Star, Slash, Percent, At,
  LParen, RParen, LBrack, RBrack, LBrace, RBrace, Comma, Colon, Semi, Ellipsis, Dot,
  Float, Int, Ident, String,
  Comment, Ws, UnterminatedString, BadBytes, BadChar,
  // clang-format on
  Eof = 0,  // not a rule: the end of the input
};

/// The kind of the longest token starting at `at` (< bytes.size()) and, in
/// `end`, the offset just after it. Whitespace runs are TokenKind::Ws.
TokenKind scan_token(std::string_view bytes, size_t at, size_t &end);

/// Roughly log10 of the value of a FLOAT token's spelling: > 0 when a literal
/// too large for a double overflows, not when a tiny one underflows (both
/// parsers report only the former, `literal-out-of-range`).
long decimal_magnitude(std::string_view spelling);

/// True for the kinds Spmd.g4 sends to the hidden channel (comments and
/// malformed input).
inline bool is_hidden(TokenKind kind) {
  return kind == TokenKind::Comment || kind == TokenKind::UnterminatedString ||
         kind == TokenKind::BadBytes || kind == TokenKind::BadChar;
}

}  // namespace spmd::frontend_detail
