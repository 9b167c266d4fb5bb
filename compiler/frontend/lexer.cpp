// frontend/lexer.cpp — the hand-written token rules (scanner.h) as an ANTLR token source.
//
// scan_token() finds each token; this file skips WS, sends COMMENT,
// UNTERMINATED_STRING, BAD_BYTES and BAD_CHAR to the hidden channel, and
// numbers lines and columns as ANTLR does: those of the token's first byte, a
// '\n' starts a new line, every other byte (including '\r') is one column.
#include "frontend/lexer.h"

#include <algorithm>

#include "SpmdLexer.h"
#include "frontend/scanner.h"

namespace spmd::frontend_detail {
namespace {

using L = spmd_antlr::SpmdLexer;
using K = TokenKind;

// TokenKind (scanner.h) numbers the token rules as the generated lexer does.
#define SPMDC_SAME_TYPE(kind, type) \
  static_assert(static_cast<size_t>(K::kind) == L::type, "TokenKind::" #kind " != " #type)
SPMDC_SAME_TYPE(Import, IMPORT);
SPMDC_SAME_TYPE(Mesh, MESH);
SPMDC_SAME_TYPE(Def, DEF);
SPMDC_SAME_TYPE(Shmap, SHMAP);
SPMDC_SAME_TYPE(Sharded, SHARDED);
SPMDC_SAME_TYPE(On, ON);
SPMDC_SAME_TYPE(Return, RETURN);
SPMDC_SAME_TYPE(For, FOR);
SPMDC_SAME_TYPE(In, IN);
SPMDC_SAME_TYPE(Range, RANGE);
SPMDC_SAME_TYPE(If, IF);
SPMDC_SAME_TYPE(Else, ELSE);
SPMDC_SAME_TYPE(And, AND);
SPMDC_SAME_TYPE(Or, OR);
SPMDC_SAME_TYPE(Not, NOT);
SPMDC_SAME_TYPE(True, TRUE);
SPMDC_SAME_TYPE(False, FALSE);
SPMDC_SAME_TYPE(None, NONE);
SPMDC_SAME_TYPE(Arrow, ARROW);
SPMDC_SAME_TYPE(Pow, POW);
SPMDC_SAME_TYPE(FloorDiv, FLOORDIV);
SPMDC_SAME_TYPE(Le, LE);
SPMDC_SAME_TYPE(Ge, GE);
SPMDC_SAME_TYPE(Eq, EQ);
SPMDC_SAME_TYPE(Ne, NE);
SPMDC_SAME_TYPE(Lt, LT);
SPMDC_SAME_TYPE(Gt, GT);
SPMDC_SAME_TYPE(Assign, ASSIGN);
SPMDC_SAME_TYPE(Plus, PLUS);
SPMDC_SAME_TYPE(Minus, MINUS);
SPMDC_SAME_TYPE(Star, STAR);
SPMDC_SAME_TYPE(Slash, SLASH);
SPMDC_SAME_TYPE(Percent, PERCENT);
SPMDC_SAME_TYPE(At, AT);
SPMDC_SAME_TYPE(LParen, LPAREN);
SPMDC_SAME_TYPE(RParen, RPAREN);
SPMDC_SAME_TYPE(LBrack, LBRACK);
SPMDC_SAME_TYPE(RBrack, RBRACK);
SPMDC_SAME_TYPE(LBrace, LBRACE);
SPMDC_SAME_TYPE(RBrace, RBRACE);
SPMDC_SAME_TYPE(Comma, COMMA);
SPMDC_SAME_TYPE(Colon, COLON);
SPMDC_SAME_TYPE(Semi, SEMI);
SPMDC_SAME_TYPE(Ellipsis, ELLIPSIS);
SPMDC_SAME_TYPE(Dot, DOT);
SPMDC_SAME_TYPE(Float, FLOAT);
SPMDC_SAME_TYPE(Int, INT);
SPMDC_SAME_TYPE(Ident, IDENT);
SPMDC_SAME_TYPE(String, STRING);
SPMDC_SAME_TYPE(Comment, COMMENT);
SPMDC_SAME_TYPE(Ws, WS);
SPMDC_SAME_TYPE(UnterminatedString, UNTERMINATED_STRING);
SPMDC_SAME_TYPE(BadBytes, BAD_BYTES);
SPMDC_SAME_TYPE(BadChar, BAD_CHAR);
#undef SPMDC_SAME_TYPE
static_assert(L::BAD_CHAR == 54, "a token rule was added to Spmd.g4: update TokenKind");

}  // namespace

// ------------------------------------------------------------ ByteCharStream

void ByteCharStream::consume() {
  if (p_ >= bytes_.size()) throw antlr4::IllegalStateException("cannot consume EOF");
  ++p_;
}

size_t ByteCharStream::LA(ssize_t i) {
  if (i == 0) return 0;  // undefined, as in ANTLRInputStream
  ssize_t at = static_cast<ssize_t>(p_) + (i < 0 ? i : i - 1);
  if (at < 0 || at >= static_cast<ssize_t>(bytes_.size())) return antlr4::IntStream::EOF;
  return static_cast<unsigned char>(bytes_[static_cast<size_t>(at)]);
}

namespace {
/// Code points 0..255 as UTF-8.
std::string latin1_to_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      out += c;
    } else {
      out += static_cast<char>(0xC0 | (u >> 6));
      out += static_cast<char>(0x80 | (u & 0x3F));
    }
  }
  return out;
}
}  // namespace

std::string ByteCharStream::getText(const antlr4::misc::Interval &interval) {
  if (interval.a < 0 || interval.b < 0) return "";
  size_t start = static_cast<size_t>(interval.a);
  size_t stop = std::min(static_cast<size_t>(interval.b), bytes_.size() - 1);
  if (start >= bytes_.size() || stop < start) return "";
  return latin1_to_utf8(bytes_.substr(start, stop - start + 1));
}

std::string ByteCharStream::toString() const { return latin1_to_utf8(bytes_); }

// ------------------------------------------------------------------ SpmdToken

SpmdToken::SpmdToken(SpmdTokenSource *source, size_t type, size_t channel, size_t start,
                     size_t stop, size_t line, size_t column)
    : source_(source),
      start_(start),
      stop_(stop),
      type_(type == antlr4::Token::EOF ? kEof : static_cast<uint32_t>(type)),
      channel_(static_cast<uint32_t>(channel)),
      line_(static_cast<uint32_t>(line)),
      column_(static_cast<uint32_t>(column)) {}

antlr4::TokenSource *SpmdToken::getTokenSource() const { return source_; }

antlr4::CharStream *SpmdToken::getInputStream() const { return source_->getInputStream(); }

// As CommonToken::getText.
std::string SpmdToken::getText() const {
  if (text_ != nullptr) return *text_;
  antlr4::CharStream *input = getInputStream();
  size_t n = input->size();
  if (start_ < n && stop_ < n) return input->getText(antlr4::misc::Interval(start_, stop_));
  return "<EOF>";
}

// As CommonToken::toString: [@index,start:stop='text',<type>,line:column].
std::string SpmdToken::toString() const {
  auto number = [](size_t n) { return std::to_string(static_cast<long long>(n)); };
  return "[@" + number(index_) + "," + number(start_) + ":" + number(stop_) + "='" + getText() +
         "',<" + number(getType()) + ">" + (channel_ > 0 ? ",channel=" + number(channel_) : "") +
         "," + number(line_) + ":" + number(column_) + "]";
}

// ------------------------------------------------------------ SpmdTokenSource

antlr4::TokenFactory<antlr4::CommonToken> *SpmdTokenSource::getTokenFactory() {
  return antlr4::CommonTokenFactory::DEFAULT.get();
}

std::unique_ptr<antlr4::Token> SpmdTokenSource::nextToken() {
  for (;;) {
    const size_t line = line_, column = pos_ - line_start_;
    if (pos_ >= bytes_.size()) {
      // As ANTLR's Lexer::emitEOF: start at the end, stop just before it.
      return std::make_unique<SpmdToken>(this, antlr4::Token::EOF, antlr4::Token::DEFAULT_CHANNEL,
                                         pos_, pos_ - 1, line, column);
    }
    const size_t start = pos_;
    size_t end = start;
    const TokenKind kind = scan_token(bytes_, start, end);
    const size_t type = static_cast<size_t>(kind);
    for (size_t k = start; k < end; ++k) {
      if (bytes_[k] == '\n') {
        ++line_;
        line_start_ = k + 1;
      }
    }
    pos_ = end;
    if (kind == K::Ws) continue;
    return std::make_unique<SpmdToken>(
        this, type,
        is_hidden(kind) ? antlr4::Token::HIDDEN_CHANNEL : antlr4::Token::DEFAULT_CHANNEL, start,
        end - 1, line, column);
  }
}

}  // namespace spmd::frontend_detail
