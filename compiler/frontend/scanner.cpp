// frontend/scanner.cpp — scan_token(): the token rules of grammar/Spmd.g4 by hand.
//
// ANTLR's lexer semantics, which this file reproduces: at each position the
// longest token any rule can match wins, and of equally long ones the rule
// written first (so `None` is NONE, not IDENT, while `Nonex` is IDENT); WS is
// a token here (the callers skip it); COMMENT, UNTERMINATED_STRING, BAD_BYTES
// and BAD_CHAR are the hidden channel's.
#include "frontend/scanner.h"

#include <array>
#include <charconv>

namespace spmd::frontend_detail {
namespace {

using K = TokenKind;

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
  TokenKind kind;
};
// The keyword rules, which come before IDENT in the grammar.
constexpr Keyword kKeywords[] = {
    {"import", K::Import},   {"mesh", K::Mesh},   {"def", K::Def},       {"shmap", K::Shmap},
    {"sharded", K::Sharded}, {"on", K::On},       {"return", K::Return}, {"for", K::For},
    {"in", K::In},           {"range", K::Range}, {"if", K::If},         {"else", K::Else},
    {"and", K::And},         {"or", K::Or},       {"not", K::Not},       {"true", K::True},
    {"false", K::False},     {"None", K::None},
};

TokenKind identifier_kind(std::string_view word) {
  if (word.size() > 7 || word.size() < 2) return K::Ident;  // keywords have 2..7 letters
  for (const Keyword &k : kKeywords)
    if (k.text == word) return k.kind;
  return K::Ident;
}

size_t digits_end(std::string_view bytes, size_t at) {
  while (at < bytes.size() && class_of(bytes[at]) == kDigit) ++at;
  return at;
}

/// The end of the `[eE] [+-]? DIGITS` starting at `at`, or `at` if none.
size_t exponent_end(std::string_view bytes, size_t at) {
  size_t k = at;
  if (k >= bytes.size() || (bytes[k] != 'e' && bytes[k] != 'E')) return at;
  ++k;
  if (k < bytes.size() && (bytes[k] == '+' || bytes[k] == '-')) ++k;
  if (k >= bytes.size() || class_of(bytes[k]) != kDigit) return at;
  return digits_end(bytes, k);
}

// INT : DIGITS ; FLOAT : DIGITS '.' DIGITS? EXPONENT? | DIGITS EXPONENT
TokenKind scan_number(std::string_view bytes, size_t at, size_t &end) {
  size_t digits = digits_end(bytes, at);
  if (digits < bytes.size() && bytes[digits] == '.') {
    end = exponent_end(bytes, digits_end(bytes, digits + 1));
    return K::Float;
  }
  end = exponent_end(bytes, digits);
  if (end > digits) return K::Float;
  end = digits;
  return K::Int;
}

// STRING : '"' BODY* '"' ; UNTERMINATED_STRING : '"' BODY* '\\'? ;
// BODY : ~["\\\r\n] | '\\' ~[\r\n]. A terminated string is always the longer.
TokenKind scan_string(std::string_view bytes, size_t at, size_t &end) {
  size_t k = at + 1;
  const size_t n = bytes.size();
  while (k < n) {
    char c = bytes[k];
    if (c == '"') {
      end = k + 1;
      return K::String;
    }
    if (c == '\r' || c == '\n') break;
    if (c == '\\') {
      if (k + 1 < n && bytes[k + 1] != '\r' && bytes[k + 1] != '\n') {
        k += 2;
        continue;
      }
      ++k;  // the optional trailing backslash
      break;
    }
    ++k;
  }
  end = k;
  return K::UnterminatedString;
}

}  // namespace

TokenKind scan_token(std::string_view bytes, size_t at, size_t &end) {
  const size_t n = bytes.size();
  const char c = bytes[at];
  const char next = at + 1 < n ? bytes[at + 1] : '\0';
  auto one = [&](TokenKind kind) {
    end = at + 1;
    return kind;
  };
  auto two_or_one = [&](char second, TokenKind kind2, TokenKind kind1) {
    end = at + (next == second && at + 1 < n ? 2 : 1);
    return end == at + 2 ? kind2 : kind1;
  };
  switch (class_of(c)) {
    case kSpace:
      end = at + 1;
      while (end < n && class_of(bytes[end]) == kSpace) ++end;
      return K::Ws;
    case kIdentStart:
      end = at + 1;
      while (end < n && (class_of(bytes[end]) & (kIdentStart | kDigit)) != 0) ++end;
      return identifier_kind(bytes.substr(at, end - at));
    case kDigit:
      return scan_number(bytes, at, end);
    case kHigh:
      end = at + 1;
      while (end < n && class_of(bytes[end]) == kHigh) ++end;
      return K::BadBytes;
    default:
      break;
  }
  switch (c) {
    case '-':
      return two_or_one('>', K::Arrow, K::Minus);
    case '*':
      return two_or_one('*', K::Pow, K::Star);
    case '/':
      return two_or_one('/', K::FloorDiv, K::Slash);
    case '<':
      return two_or_one('=', K::Le, K::Lt);
    case '>':
      return two_or_one('=', K::Ge, K::Gt);
    case '=':
      return two_or_one('=', K::Eq, K::Assign);
    case '!':
      return two_or_one('=', K::Ne, K::BadChar);
    case '+':
      return one(K::Plus);
    case '%':
      return one(K::Percent);
    case '@':
      return one(K::At);
    case '(':
      return one(K::LParen);
    case ')':
      return one(K::RParen);
    case '[':
      return one(K::LBrack);
    case ']':
      return one(K::RBrack);
    case '{':
      return one(K::LBrace);
    case '}':
      return one(K::RBrace);
    case ',':
      return one(K::Comma);
    case ':':
      return one(K::Colon);
    case ';':
      return one(K::Semi);
    case '.':
      // FLOAT : '.' DIGITS EXPONENT? ; ELLIPSIS : '...' ; DOT : '.'
      if (at + 1 < n && class_of(next) == kDigit) {
        end = exponent_end(bytes, digits_end(bytes, at + 1));
        return K::Float;
      }
      if (at + 2 < n && next == '.' && bytes[at + 2] == '.') {
        end = at + 3;
        return K::Ellipsis;
      }
      return one(K::Dot);
    case '"':
      return scan_string(bytes, at, end);
    case '#':
      end = at + 1;
      while (end < n && bytes[end] != '\r' && bytes[end] != '\n') ++end;
      return K::Comment;
    default:
      return one(K::BadChar);
  }
}

long decimal_magnitude(std::string_view s) {
  size_t e = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, e);
  long exponent = 0;
  if (e != std::string_view::npos) {
    const char *b = s.data() + e + 1, *end = s.data() + s.size();
    if (b < end && *b == '+') ++b;
    if (std::from_chars(b, end, exponent).ec == std::errc::result_out_of_range)
      exponent = *b == '-' ? -1000000 : 1000000;
  }
  size_t dot = mantissa.find('.');
  std::string_view integral = mantissa.substr(0, dot);
  size_t first = integral.find_first_not_of('0');
  if (first != std::string_view::npos) return exponent + long(integral.size() - first) - 1;
  std::string_view fraction = dot == std::string_view::npos ? "" : mantissa.substr(dot + 1);
  size_t nz = fraction.find_first_not_of('0');
  return nz == std::string_view::npos ? -1000000 : exponent - long(nz) - 1;
}

}  // namespace spmd::frontend_detail
