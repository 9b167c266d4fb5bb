// support/text_scanner.h — a tiny scanner for the short texts of command-line
// options and spec strings: `(x: 2, y: 4)`, `f32[64, 64]`, `P(x, partial=y)`.
//
// Words are runs of letters, digits and `_`; white space between tokens is
// skipped. Programs are parsed by the ANTLR grammar, never by this.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

namespace spmd {

class TextScanner {
 public:
  explicit TextScanner(const std::string &text) : text_(text) {}

  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  /// Consumes `c` (after white space) when it comes next.
  bool eat(char c) {
    skip();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  /// The next word, or "" when none comes next.
  std::string word() {
    skip();
    size_t b = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    return text_.substr(b, pos_ - b);
  }
  /// The next word as a non-negative integer of at most 12 digits.
  std::optional<int64_t> integer() {
    std::string w = word();
    if (w.empty() || w.size() > 12 || w.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoll(w);
  }
  bool at_end() {
    skip();
    return pos_ == text_.size();
  }

 private:
  const std::string &text_;
  size_t pos_ = 0;
};

}  // namespace spmd
