// frontend/lexer.h — the hand-written lexer that feeds the ANTLR parser.
//
// SpmdTokenSource runs the token rules of grammar/Spmd.g4 (which stays the
// specification), written by hand in scanner.h, on the source bytes and hands
// the ANTLR parser exactly the token stream the generated SpmdLexer would: the same type,
// channel, start/stop byte offsets, line and column for every token, hidden
// tokens (comments, malformed input) included. The generated lexer walks an
// ATN with a locked DFA cache per character; this one is a switch per token.
// tests/fuzz/lexer_diff.cpp checks both token streams for equality over the
// corpus and over random and mutated bytes.
//
// ByteCharStream shows the bytes to ANTLR as code points 0..255 (a Latin-1
// view, without a copy), so token indices are byte offsets and no input,
// however malformed, makes a UTF-8 decoder throw. (The differential test runs
// the generated lexer on ANTLR's own input stream, so the token texts read
// through this class are checked too.)
//
// Only the ANTLR-facing files of the frontend (ast_builder.cpp) and the
// differential test include this header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "antlr4-runtime.h"

namespace spmd::frontend_detail {

/// The bytes of one file as an ANTLR character stream, one byte per code point.
/// Behaves like antlr4::ANTLRInputStream over the same code points.
class ByteCharStream final : public antlr4::CharStream {
 public:
  ByteCharStream(std::string_view bytes, std::string source_name)
      : bytes_(bytes), name_(std::move(source_name)) {}

  std::string_view bytes() const { return bytes_; }

  void consume() override;
  size_t LA(ssize_t i) override;
  ssize_t mark() override { return -1; }
  void release(ssize_t) override {}
  size_t index() override { return p_; }
  void seek(size_t index) override { p_ = std::min(index, bytes_.size()); }
  size_t size() override { return bytes_.size(); }
  std::string getSourceName() const override { return name_; }
  /// The text of [a, b] (clamped to the stream) as UTF-8 of the code points.
  std::string getText(const antlr4::misc::Interval &interval) override;
  std::string toString() const override;

 private:
  std::string_view bytes_;
  std::string name_;
  size_t p_ = 0;
};

class SpmdTokenSource;

/// A token of SpmdTokenSource: ANTLR's token interface in a third of
/// CommonToken's size (a large file has millions of tokens alive at once).
/// Its text is read from the input stream, like CommonToken's.
class SpmdToken final : public antlr4::WritableToken {
 public:
  SpmdToken(SpmdTokenSource *source, size_t type, size_t channel, size_t start, size_t stop,
            size_t line, size_t column);

  std::string getText() const override;
  size_t getType() const override { return type_ == kEof ? antlr4::Token::EOF : type_; }
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() const override { return column_; }
  size_t getChannel() const override { return channel_; }
  size_t getTokenIndex() const override { return index_; }
  size_t getStartIndex() const override { return start_; }
  size_t getStopIndex() const override { return stop_; }
  antlr4::TokenSource *getTokenSource() const override;
  antlr4::CharStream *getInputStream() const override;
  std::string toString() const override;

  void setText(const std::string &text) override { text_ = std::make_unique<std::string>(text); }
  void setType(size_t type) override {
    type_ = type == antlr4::Token::EOF ? kEof : static_cast<uint32_t>(type);
  }
  void setLine(size_t line) override { line_ = static_cast<uint32_t>(line); }
  void setCharPositionInLine(size_t column) override { column_ = static_cast<uint32_t>(column); }
  void setChannel(size_t channel) override { channel_ = static_cast<uint32_t>(channel); }
  void setTokenIndex(size_t index) override { index_ = index; }

 private:
  static constexpr uint32_t kEof = UINT32_MAX;  // Token::EOF (the largest size_t)

  SpmdTokenSource *source_;
  std::unique_ptr<std::string> text_;  // set only by setText (never by the lexer)
  size_t index_ = INVALID_INDEX;
  size_t start_, stop_;  // stop_ is start_ - 1 for EOF, so possibly INVALID_INDEX
  uint32_t type_, channel_, line_, column_;
};

/// The tokens of Spmd.g4 for the ANTLR parser (see the file comment).
class SpmdTokenSource final : public antlr4::TokenSource {
 public:
  explicit SpmdTokenSource(ByteCharStream &input) : input_(input), bytes_(input.bytes()) {}

  /// The next token: whitespace is skipped, everything else (comments and
  /// malformed input on the hidden channel) is a token; then EOF, repeatedly.
  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() override { return pos_ - line_start_; }
  antlr4::CharStream *getInputStream() override { return &input_; }
  std::string getSourceName() override { return input_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override;

 private:
  ByteCharStream &input_;
  std::string_view bytes_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t line_start_ = 0;  // offset just after the last '\n' before pos_
};

}  // namespace spmd::frontend_detail
