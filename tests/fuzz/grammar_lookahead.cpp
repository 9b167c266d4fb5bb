// tests/fuzz/grammar_lookahead.cpp — ANTLR's prediction reads a bounded number
// of tokens, however deep the input nests.
//
// spmdc parses a file with the ANTLR-generated parser of grammar/Spmd.g4 when
// the hand-written parser gives up on it (a syntax error, most often). ANTLR
// decides between a rule's alternatives by reading ahead until only one can
// go on; where two parses of the same tokens exist (an ambiguity) it reads
// until they meet again. Nested, that is quadratic: `f(f(...))` when a name
// could carry its own call or be called by the postfix `Apply`, or a dotted
// name `x.T.T...` when a dot could continue the name or be a `Member`, took
// seconds for a file of a few kilobytes (fuzz_parser input #22004, 5.4 s).
//
// This test parses hostile programs — deeply nested calls, calls of calls,
// method calls, lists, subscripts, tuples, a dotted name of 5,000 parts, each
// with and without a syntax error — and every .spmd file of the tree, with
// ANTLR's profiler in both prediction modes spmdc uses (SLL, then LL after
// an error), and fails when the predictions together read more than a few
// tokens per token of input. The hostile programs nest 150 levels, so a
// quadratic corner reads ~75 per token. It counts tokens, not seconds: a
// loaded machine cannot make it pass or fail.
//
// Usage: grammar_lookahead [--verbose]
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "SpmdLexer.h"
#include "SpmdParser.h"
#include "antlr4-runtime.h"

namespace {

// The most tokens all predictions together may read per token of input, and
// a little more for short files. Most decisions read one or two tokens; the
// corpus reads at most 1.5 per token. One decision reads far ahead, once per
// statement: `return f(...)` is told from a `return` followed by the
// statement `f(...)` only after the call's `)` (and LL mode reads it twice,
// SLL first) — 3.9 per token for `return` of a 150-level call. A quadratic
// corner reads ahead at every level of a nesting: about 75 per token there.
constexpr double kLookPerToken = 4.5;
constexpr long long kLookSlack = 64;

struct Look {
  long long total = 0;  ///< tokens read by all predictions together
  size_t tokens = 0;    ///< tokens in the input
  long long max = 0;    ///< the most one prediction read
  size_t decision = 0;  ///< ... at this decision
  std::string rule;     ///< ... of this rule
};

Look max_lookahead(const std::string &text, antlr4::atn::PredictionMode mode) {
  antlr4::ANTLRInputStream input(text);
  spmd_antlr::SpmdLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  spmd_antlr::SpmdParser parser(&tokens);
  parser.removeErrorListeners();
  parser.setProfile(true);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(mode);
  parser.module_();
  Look look;
  look.tokens = tokens.size();
  for (const antlr4::atn::DecisionInfo &d : parser.getParseInfo().getDecisionInfo()) {
    look.total += d.SLL_TotalLook + d.LL_TotalLook;
    const long long m = std::max(d.SLL_MaxLook, d.LL_MaxLook);
    if (m > look.max) {
      look.max = m;
      look.decision = d.decision;
      const antlr4::atn::DecisionState *state = parser.getATN().getDecisionState(d.decision);
      look.rule = parser.getRuleNames().at(state->ruleIndex);
    }
  }
  return look;
}

std::string repeat(const std::string &s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::vector<std::pair<std::string, std::string>> hostile_programs() {
  const int n = 150;  // under the bracket limit (kMaxBracketNesting, 200)
  const std::string head = "mesh M = (i: 2)\ndef g(v: f32[4]) -> f32[4] {\n  ";
  std::vector<std::pair<std::string, std::string>> exprs = {
      {"nested calls", repeat("f(", n) + "x" + repeat(")", n)},
      {"calls of calls", repeat("f(", n) + "f" + repeat(")", n / 2) + "(" + repeat("f(", n / 2) +
                             "x" + repeat(")", n + 1)},
      {"keyword arguments", repeat("f(k=", n) + "x" + repeat(")", n)},
      {"method calls", repeat("(a).m(", n / 2) + "x" + repeat(")", n / 2)},
      {"dotted calls", repeat("std.nn.relu(", n) + "x" + repeat(")", n)},
      {"lists", repeat("[", n) + "x" + repeat("]", n)},
      {"subscripts", repeat("a[", n) + "0" + repeat("]", n)},
      {"tuples", repeat("(a, ", n) + "x" + repeat(")", n)},
      {"dotted name", "x" + repeat(".T", 5000)},
      {"member chain", "(x)" + repeat(".T", 150)},
  };
  std::vector<std::pair<std::string, std::string>> programs;
  for (const auto &[what, e] : exprs) {
    programs.emplace_back(what, head + "y = " + e + "\n  return y\n}\n");
    programs.emplace_back(what + ", as a statement", head + "print(" + e + ")\n  return v\n}\n");
    programs.emplace_back(what + ", returned", head + "return " + e + "\n}\n");
    // A stray `)` after the expression, and a syntax error before it.
    programs.emplace_back(what + ", then an error", head + "y = " + e + ")\n  return y\n}\n");
    programs.emplace_back(what + ", after an error",
                          "mesh M = (i: 2)\ndef h(v: f32[ .5 4]) -> f32[4] { return v }\n" + head +
                              "y = " + e + "\n  return y\n}\n");
  }
  return programs;
}

}  // namespace

int main(int argc, char **argv) {
  const bool verbose = argc > 1 && std::string(argv[1]) == "--verbose";
  std::vector<std::pair<std::string, std::string>> inputs = hostile_programs();
  const std::filesystem::path root = SPMDC_SOURCE_DIR;
  for (const char *dir : {"samples", "stdlib", "tests", "exercises"}) {
    if (!std::filesystem::exists(root / dir)) continue;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (entry.path().extension() != ".spmd") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream buffer;
      buffer << in.rdbuf();
      inputs.emplace_back(std::filesystem::relative(entry.path(), root).string(), buffer.str());
    }
  }
  int failures = 0;
  for (const auto &[what, text] : inputs) {
    for (auto mode : {antlr4::atn::PredictionMode::SLL, antlr4::atn::PredictionMode::LL}) {
      const char *mode_name = mode == antlr4::atn::PredictionMode::SLL ? "SLL" : "LL";
      Look look = max_lookahead(text, mode);
      if (verbose)
        std::cout << what << " (" << mode_name << "): " << look.total << " tokens read for "
                  << look.tokens << ", at most " << look.max << " in rule `" << look.rule << "`\n";
      const double allowed = kLookPerToken * static_cast<double>(look.tokens) + kLookSlack;
      if (static_cast<double>(look.total) > allowed) {
        ++failures;
        std::cerr << "grammar_lookahead: " << what << " (" << mode_name << "): predictions read "
                  << look.total << " tokens for " << look.tokens << " (at most " << allowed
                  << " allowed); the longest, " << look.max << " tokens, at decision "
                  << look.decision << " in rule `" << look.rule << "`\n";
      }
    }
  }
  std::cout << "grammar_lookahead: " << inputs.size() << " inputs, " << failures << " failures\n";
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
