// frontend/lexer.cpp — the token rules of grammar/Spmd.g4, by hand.
//
// ANTLR's lexer semantics, which this file reproduces: at each position the
// longest token any rule can match wins, and of equally long ones the rule
// written first (so `None` is NONE, not IDENT, while `Nonex` is IDENT); WS is
// skipped; COMMENT, UNTERMINATED_STRING, BAD_BYTES and BAD_CHAR go to the
// hidden channel. Line and column are those of the token's first byte: a
// '\n' starts a new line, every other byte (including '\r') is one column.
#include "frontend/lexer.h"

#include <algorithm>
#include <array>

#include "SpmdLexer.h"

namespace spmd::frontend_detail {
namespace {

using L = spmd_antlr::SpmdLexer;

enum CharClass : uint8_t {
  kOther = 0,
  kSpace = 1,       // [ \t\r\n\f]
  kIdentStart = 2,  // [a-zA-Z_]
  kDigit = 4,       // [0-9]
  kHigh = 8,        // [\u0080-\u00FF]
};

constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> c{};
  for (unsigned char s : {' ', '\t', '\r', '\n', '\f'}) c[s] = kSpace;
  for (int k = 'a'; k <= 'z'; ++k) c[k] = kIdentStart;
  for (int k = 'A'; k <= 'Z'; ++k) c[k] = kIdentStart;
  c['_'] = kIdentStart;
  for (int k = '0'; k <= '9'; ++k) c[k] = kDigit;
  for (int k = 0x80; k <= 0xFF; ++k) c[k] = kHigh;
  return c;
}
constexpr std::array<uint8_t, 256> kClasses = make_classes();

uint8_t class_of(char c) { return kClasses[static_cast<unsigned char>(c)]; }

struct Keyword {
  std::string_view text;
  size_t type;
};
// The keyword rules, which come before IDENT in the grammar.
constexpr Keyword kKeywords[] = {
    {"import", L::IMPORT},   {"mesh", L::MESH},   {"def", L::DEF},       {"shmap", L::SHMAP},
    {"sharded", L::SHARDED}, {"on", L::ON},       {"return", L::RETURN}, {"for", L::FOR},
    {"in", L::IN},           {"range", L::RANGE}, {"if", L::IF},         {"else", L::ELSE},
    {"and", L::AND},         {"or", L::OR},       {"not", L::NOT},       {"true", L::TRUE},
    {"false", L::FALSE},     {"None", L::NONE},
};

size_t identifier_type(std::string_view word) {
  for (const Keyword &k : kKeywords)
    if (k.text == word) return k.type;
  return L::IDENT;
}

bool hidden(size_t type) {
  return type == L::COMMENT || type == L::UNTERMINATED_STRING || type == L::BAD_BYTES ||
         type == L::BAD_CHAR;
}

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

size_t SpmdTokenSource::digits_end(size_t at) const {
  while (at < bytes_.size() && class_of(bytes_[at]) == kDigit) ++at;
  return at;
}

size_t SpmdTokenSource::exponent_end(size_t at) const {
  size_t k = at;
  if (k >= bytes_.size() || (bytes_[k] != 'e' && bytes_[k] != 'E')) return at;
  ++k;
  if (k < bytes_.size() && (bytes_[k] == '+' || bytes_[k] == '-')) ++k;
  if (k >= bytes_.size() || class_of(bytes_[k]) != kDigit) return at;
  return digits_end(k);
}

// INT : DIGITS ; FLOAT : DIGITS '.' DIGITS? EXPONENT? | DIGITS EXPONENT
size_t SpmdTokenSource::scan_number(size_t &end) const {
  size_t digits = digits_end(pos_);
  if (digits < bytes_.size() && bytes_[digits] == '.') {
    end = exponent_end(digits_end(digits + 1));
    return L::FLOAT;
  }
  end = exponent_end(digits);
  if (end > digits) return L::FLOAT;
  end = digits;
  return L::INT;
}

// STRING : '"' BODY* '"' ; UNTERMINATED_STRING : '"' BODY* '\\'? ;
// BODY : ~["\\\r\n] | '\\' ~[\r\n]. A terminated string is always the longer.
size_t SpmdTokenSource::scan_string(size_t &end) const {
  size_t k = pos_ + 1;
  const size_t n = bytes_.size();
  while (k < n) {
    char c = bytes_[k];
    if (c == '"') {
      end = k + 1;
      return L::STRING;
    }
    if (c == '\r' || c == '\n') break;
    if (c == '\\') {
      if (k + 1 < n && bytes_[k + 1] != '\r' && bytes_[k + 1] != '\n') {
        k += 2;
        continue;
      }
      ++k;  // the optional trailing backslash
      break;
    }
    ++k;
  }
  end = k;
  return L::UNTERMINATED_STRING;
}

size_t SpmdTokenSource::scan(size_t &end) const {
  const size_t n = bytes_.size();
  const size_t at = pos_;
  const char c = bytes_[at];
  const char next = at + 1 < n ? bytes_[at + 1] : '\0';
  auto one = [&](size_t type) {
    end = at + 1;
    return type;
  };
  auto two_or_one = [&](char second, size_t type2, size_t type1) {
    end = at + (next == second && at + 1 < n ? 2 : 1);
    return end == at + 2 ? type2 : type1;
  };
  switch (class_of(c)) {
    case kSpace:
      end = at + 1;
      while (end < n && class_of(bytes_[end]) == kSpace) ++end;
      return L::WS;
    case kIdentStart:
      end = at + 1;
      while (end < n && (class_of(bytes_[end]) & (kIdentStart | kDigit)) != 0) ++end;
      return identifier_type(bytes_.substr(at, end - at));
    case kDigit:
      return scan_number(end);
    case kHigh:
      end = at + 1;
      while (end < n && class_of(bytes_[end]) == kHigh) ++end;
      return L::BAD_BYTES;
    default:
      break;
  }
  switch (c) {
    case '-':
      return two_or_one('>', L::ARROW, L::MINUS);
    case '*':
      return two_or_one('*', L::POW, L::STAR);
    case '/':
      return two_or_one('/', L::FLOORDIV, L::SLASH);
    case '<':
      return two_or_one('=', L::LE, L::LT);
    case '>':
      return two_or_one('=', L::GE, L::GT);
    case '=':
      return two_or_one('=', L::EQ, L::ASSIGN);
    case '!':
      return two_or_one('=', L::NE, L::BAD_CHAR);
    case '+':
      return one(L::PLUS);
    case '%':
      return one(L::PERCENT);
    case '@':
      return one(L::AT);
    case '(':
      return one(L::LPAREN);
    case ')':
      return one(L::RPAREN);
    case '[':
      return one(L::LBRACK);
    case ']':
      return one(L::RBRACK);
    case '{':
      return one(L::LBRACE);
    case '}':
      return one(L::RBRACE);
    case ',':
      return one(L::COMMA);
    case ':':
      return one(L::COLON);
    case ';':
      return one(L::SEMI);
    case '.':
      // FLOAT : '.' DIGITS EXPONENT? ; ELLIPSIS : '...' ; DOT : '.'
      if (at + 1 < n && class_of(next) == kDigit) {
        end = exponent_end(digits_end(at + 1));
        return L::FLOAT;
      }
      if (at + 2 < n && next == '.' && bytes_[at + 2] == '.') {
        end = at + 3;
        return L::ELLIPSIS;
      }
      return one(L::DOT);
    case '"':
      return scan_string(end);
    case '#':
      end = at + 1;
      while (end < n && bytes_[end] != '\r' && bytes_[end] != '\n') ++end;
      return L::COMMENT;
    default:
      return one(L::BAD_CHAR);
  }
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
    const size_t type = scan(end);
    for (size_t k = start; k < end; ++k) {
      if (bytes_[k] == '\n') {
        ++line_;
        line_start_ = k + 1;
      }
    }
    pos_ = end;
    if (type == L::WS) continue;
    return std::make_unique<SpmdToken>(
        this, type, hidden(type) ? antlr4::Token::HIDDEN_CHANNEL : antlr4::Token::DEFAULT_CHANNEL,
        start, end - 1, line, column);
  }
}

}  // namespace spmd::frontend_detail
