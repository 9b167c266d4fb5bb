// tests/fuzz/lexer_diff.cpp — the hand-written lexer against the generated one.
//
// spmdc parses with a hand-written lexer (compiler/frontend/lexer.cpp); the
// lexer ANTLR generates from grammar/Spmd.g4 is the reference. For every input
// both token streams must agree token by token: type, channel, text,
// start/stop offsets, line, column and token index, hidden tokens (comments,
// unterminated strings, bad bytes) and EOF included. The reference runs on
// ANTLR's own input stream, so ByteCharStream's text extraction is checked too.
//
// Inputs: every .spmd file under samples/, stdlib/, tests/ and exercises/ of the source
// tree; then --count generated inputs from --seed: random bytes, random strings
// over the characters that matter to the token rules, the corpus files mutated
// (bytes flipped, inserted, deleted, truncated mid-token) and random splices of
// tokens. A mismatch prints the input as an escaped C string and the first
// differing token; replay a file with --file PATH.
//
// Usage: lexer_diff [--count N] [--seed S] [--file PATH]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "SpmdLexer.h"
#include "antlr4-runtime.h"
#include "diff_driver.h"
#include "frontend/lexer.h"

namespace {

using spmd::fuzz::corpus_files;
using spmd::fuzz::escaped;
using spmd::fuzz::read_file;

namespace fs = std::filesystem;
using spmd::frontend_detail::ByteCharStream;
using spmd::frontend_detail::SpmdTokenSource;

/// ANTLR's input stream holding one code point per byte (Latin-1), as the
/// generated lexer saw the file before the hand-written lexer existed.
class Latin1InputStream : public antlr4::ANTLRInputStream {
 public:
  explicit Latin1InputStream(std::string_view bytes) {
    _data.reserve(bytes.size());
    for (char c : bytes) _data.push_back(static_cast<unsigned char>(c));
    p = 0;
  }
};

std::string describe(const antlr4::Token &t) {
  std::ostringstream s;
  s << "type " << static_cast<long long>(t.getType()) << " channel " << t.getChannel() << " ["
    << static_cast<long long>(t.getStartIndex()) << ", " << static_cast<long long>(t.getStopIndex())
    << "] line " << t.getLine() << " column " << t.getCharPositionInLine() << " index "
    << t.getTokenIndex() << " text " << escaped(t.getText());
  return s.str();
}

/// Compares the two token streams of `input`; on a difference prints it and returns false.
bool same_tokens(const std::string &input, const std::string &what, size_t &compared) {
  Latin1InputStream reference_input(input);
  spmd_antlr::SpmdLexer reference_lexer(&reference_input);
  reference_lexer.removeErrorListeners();
  antlr4::CommonTokenStream reference(&reference_lexer);
  reference.fill();

  ByteCharStream bytes(input, what);
  SpmdTokenSource lexer(bytes);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();

  const std::vector<antlr4::Token *> &want = reference.getTokens();
  const std::vector<antlr4::Token *> &got = tokens.getTokens();
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const antlr4::Token *w = i < want.size() ? want[i] : nullptr;
    const antlr4::Token *g = i < got.size() ? got[i] : nullptr;
    bool same = w != nullptr && g != nullptr && w->getType() == g->getType() &&
                w->getChannel() == g->getChannel() && w->getStartIndex() == g->getStartIndex() &&
                w->getStopIndex() == g->getStopIndex() && w->getLine() == g->getLine() &&
                w->getCharPositionInLine() == g->getCharPositionInLine() &&
                w->getTokenIndex() == g->getTokenIndex() && w->getText() == g->getText();
    if (!same) {
      std::cerr << "lexer_diff: token " << i << " differs on " << what
                << "\n  input: " << escaped(input)
                << "\n  generated lexer: " << (w ? describe(*w) : "(none)")
                << "\n  hand-written:    " << (g ? describe(*g) : "(none)") << "\n";
      return false;
    }
  }
  compared += got.size();
  return true;
}

/// Pieces that exercise every rule and the boundaries between rules.
const std::vector<std::string> kPieces = {"import",   "mesh",
                                          "def",      "shmap",
                                          "sharded",  "on",
                                          "return",   "for",
                                          "in",       "range",
                                          "if",       "else",
                                          "and",      "or",
                                          "not",      "true",
                                          "false",    "None",
                                          "Nonex",    "_a1",
                                          "->",       "**",
                                          "//",       "<=",
                                          ">=",       "==",
                                          "!=",       "<",
                                          ">",        "=",
                                          "+",        "-",
                                          "*",        "/",
                                          "%",        "@",
                                          "(",        ")",
                                          "[",        "]",
                                          "{",        "}",
                                          ",",        ":",
                                          ";",        "...",
                                          "..",       ".",
                                          "1",        "12",
                                          "1.",       "1.5",
                                          ".5",       "1e5",
                                          "1E+5",     "1e-",
                                          "1e",       "2.e3",
                                          ".5e",      "\"s\"",
                                          "\"",       "\\",
                                          "\"a\\",    "\"\\\"",
                                          "#c",       "# x",
                                          " ",        "\t",
                                          "\n",       "\r",
                                          "\r\n",     "\f",
                                          "\v",       "!",
                                          "$",        "?",
                                          "`",        "'",
                                          "~",        "\x80",
                                          "\xC3\xA9", "\xEF\xBB\xBF",
                                          "\xFF",     std::string(1, '\0'),
                                          "\x7F",     "x",
                                          "e",        "E"};

/// Characters the token rules look at.
const std::string kAlphabet =
    std::string("aeEzN_09.\"\\#\n\r\t \f\v!=<>-*/+%@()[]{},:;$\x80\xFF") + std::string(1, '\0');

std::string generate(std::mt19937_64 &rng, const std::vector<std::string> &corpus) {
  auto below = [&rng](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % n); };
  std::string out;
  switch (below(5)) {
    case 0: {  // random bytes
      size_t n = below(64);
      for (size_t i = 0; i < n; ++i) out += static_cast<char>(below(256));
      break;
    }
    case 1: {  // random characters that matter
      size_t n = below(64);
      for (size_t i = 0; i < n; ++i) out += kAlphabet[below(kAlphabet.size())];
      break;
    }
    case 2: {  // random pieces, sometimes without separators
      size_t n = below(24);
      for (size_t i = 0; i < n; ++i) {
        out += kPieces[below(kPieces.size())];
        if (below(3) == 0) out += ' ';
      }
      break;
    }
    default: {  // a corpus file, mutated
      out = corpus.empty() ? std::string("def f() {}") : corpus[below(corpus.size())];
      size_t edits = 1 + below(6);
      for (size_t e = 0; e < edits && !out.empty(); ++e) {
        size_t at = below(out.size());
        switch (below(5)) {
          case 0:
            out[at] = static_cast<char>(below(256));
            break;
          case 1:
            out.insert(at, kPieces[below(kPieces.size())]);
            break;
          case 2:
            out.erase(at, 1 + below(8));
            break;
          case 3:
            out.resize(at);  // ends mid-token: unterminated strings, `1e`, ...
            break;
          default:
            out.insert(at, 1, kAlphabet[below(kAlphabet.size())]);
            break;
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  spmd::fuzz::DiffArgs args;
  args.count = 3000;
  if (auto stop = spmd::fuzz::parse_diff_args(argc, argv, "lexer_diff", args)) return *stop;
  const size_t count = args.count;
  const uint64_t seed = args.seed;
  const std::string &file = args.file;
  size_t compared = 0;
  if (!file.empty()) {
    bool ok = same_tokens(read_file(file), file, compared);
    std::cout << "lexer_diff: " << compared << " tokens agree\n";
    return ok ? 0 : 1;
  }
  std::vector<std::string> corpus;
  for (const std::string &path : corpus_files()) {
    corpus.push_back(read_file(path));
    if (!same_tokens(corpus.back(), path, compared)) return 1;
  }
  if (!spmd::fuzz::corpus_found("lexer_diff", corpus.size())) return 1;
  std::mt19937_64 rng(seed);
  for (const std::string &piece : kPieces)
    if (!same_tokens(piece, "the piece " + escaped(piece), compared)) return 1;
  for (size_t i = 0; i < count; ++i) {
    std::string input = generate(rng, corpus);
    if (!same_tokens(
            input, "generated input " + std::to_string(i) + " (seed " + std::to_string(seed) + ")",
            compared))
      return 1;
  }
  std::cout << "lexer_diff: " << corpus.size() << " files and " << count + kPieces.size()
            << " generated inputs (seed " << seed << "): " << compared << " tokens agree\n";
  return 0;
}
