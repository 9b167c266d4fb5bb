// frontend/ast_builder.cpp — running the lexer and the ANTLR parser over one file.
//
// The hand-written lexer (lexer.cpp) turns the file's bytes into the token
// stream of Spmd.g4; token indices are byte offsets. After lexing, malformed
// tokens (hidden channel) become `syntax-error` diagnostics and comments are collected for
// attachment. Before the recursive-descent parser runs, a linear scan of the tokens rejects input
// whose bracket nesting or operator chains would recurse too deeply
// (`nesting-too-deep`). Syntax errors are reported by a custom error strategy
// that words them in plain language ("expected `)` to close the call to
// `psum`"); ANTLR's console output is never used. The parser first runs with
// SLL prediction and falls back to full LL only when that fails.
#include "frontend/ast_builder.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "SpmdParser.h"
#include "antlr4-runtime.h"
#include "frontend/ast_builder_internal.h"
#include "frontend/lexer.h"

namespace spmd::frontend_detail {

// ------------------------------------------------------------ SyntaxErrorSink

Diagnostic *SyntaxErrorSink::report(SourceSpan span, std::string message, std::string code) {
  if (full()) return nullptr;
  if (!positions_.insert(span.begin).second) return nullptr;
  ++count_;
  return &diags_.error(std::move(code), span, std::move(message));
}

SourceSpan SyntaxErrorSink::span(const antlr4::Token *token) const {
  uint32_t size = static_cast<uint32_t>(file_.text().size());
  if (token == nullptr) return {id_, size, size};
  size_t start = token->getStartIndex(), stop = token->getStopIndex();
  if (token->getType() == antlr4::Token::EOF || start == INVALID_INDEX || start > size) {
    // EOF, or a token conjured by error recovery: an empty span where it would be.
    uint32_t at = start == INVALID_INDEX || start > size ? size : static_cast<uint32_t>(start);
    return {id_, at, at};
  }
  size_t end = stop == INVALID_INDEX || stop < start ? start : std::min<size_t>(stop + 1, size);
  return {id_, static_cast<uint32_t>(start), static_cast<uint32_t>(end)};
}

SourceSpan SyntaxErrorSink::span(antlr4::tree::TerminalNode *node) const {
  return span(node != nullptr ? node->getSymbol() : nullptr);
}

SourceSpan SyntaxErrorSink::span(antlr4::ParserRuleContext *ctx) const {
  if (ctx == nullptr) return span(static_cast<const antlr4::Token *>(nullptr));
  SourceSpan first = span(ctx->getStart());
  const antlr4::Token *stop = ctx->getStop();
  if (stop == nullptr || stop->getTokenIndex() < ctx->getStart()->getTokenIndex()) return first;
  SourceSpan last = span(stop);
  if (last.end < first.begin) return first;
  return SourceSpan::cover(first, last);
}

std::string SyntaxErrorSink::text(const antlr4::Token *token) const {
  SourceSpan s = span(token);
  return file_.text().substr(s.begin, s.end - s.begin);
}

namespace {

// ------------------------------------------------------------------- helpers

bool is_open(size_t t) { return frontend_detail::is_open(static_cast<TokenKind>(t)); }
bool is_close(size_t t) { return frontend_detail::is_close(static_cast<TokenKind>(t)); }
size_t closer_of(size_t open) {
  return open == SpmdParser::LPAREN   ? SpmdParser::RPAREN
         : open == SpmdParser::LBRACK ? SpmdParser::RBRACK
                                      : SpmdParser::RBRACE;
}

bool is_operator(size_t t) { return frontend_detail::is_operator(static_cast<TokenKind>(t)); }

bool is_keyword(size_t t) { return t >= SpmdParser::IMPORT && t <= SpmdParser::NONE; }

bool starts_declaration_or_statement(size_t t) {
  switch (t) {
    case SpmdParser::IMPORT:
    case SpmdParser::MESH:
    case SpmdParser::DEF:
    case SpmdParser::SHMAP:
    case SpmdParser::SHARDED:
    case SpmdParser::RETURN:
    case SpmdParser::FOR:
    case SpmdParser::IF:
      return true;
    default:
      return false;
  }
}

/// How a token type is named in "expected ..." lists.
std::string describe_token_type(size_t t, const antlr4::dfa::Vocabulary &vocabulary) {
  switch (t) {
    case antlr4::Token::EOF:
      return "end of file";
    case SpmdParser::IDENT:
      return "a name";
    case SpmdParser::INT:
      return "an integer";
    case SpmdParser::FLOAT:
      return "a number";
    case SpmdParser::STRING:
      return "a string";
    default:
      break;
  }
  std::string literal = vocabulary.getLiteralName(t);
  if (literal.size() >= 2 && literal.front() == '\'')
    literal = literal.substr(1, literal.size() - 2);
  return "`" + literal + "`";
}

/// "`)`", "`)` or `,`", "one of `)`, `,`, an operator" — with groups folded into words.
std::string describe_expected(const antlr4::misc::IntervalSet &set,
                              const antlr4::dfa::Vocabulary &vocabulary) {
  std::vector<size_t> types;
  for (ssize_t t : set.toList()) types.push_back(static_cast<size_t>(t));
  auto has = [&](size_t t) { return std::find(types.begin(), types.end(), t) != types.end(); };
  auto drop = [&](std::initializer_list<size_t> group) {
    for (size_t t : group) types.erase(std::remove(types.begin(), types.end(), t), types.end());
  };
  std::vector<std::string> items;
  using P = SpmdParser;
  if (has(P::DEF) && has(P::SHMAP) && has(P::MESH)) {
    items.push_back("a declaration (`import`, `mesh`, `def`, `shmap` or `sharded`)");
    drop({P::IMPORT, P::MESH, P::DEF, P::SHMAP, P::SHARDED, P::LBRACK});
  }
  if (has(P::RETURN) && has(P::FOR) && has(P::IF)) {
    items.push_back("a statement");
    drop({P::IDENT, P::RETURN, P::FOR, P::IF, P::LBRACK});  // `[[` starts an attributed `for`
  }
  if (has(P::INT) && has(P::FLOAT) && has(P::LPAREN)) {
    items.push_back("an expression");
    drop({P::IDENT, P::INT, P::FLOAT, P::STRING, P::TRUE, P::FALSE, P::NONE, P::LPAREN, P::LBRACK,
          P::MINUS, P::NOT});
  }
  if (has(P::PLUS) && has(P::STAR)) {
    items.push_back("an operator");
    drop({P::POW, P::STAR, P::SLASH, P::AT, P::PLUS, P::MINUS, P::LT, P::LE, P::GT, P::GE, P::EQ,
          P::NE, P::AND, P::OR, P::LBRACK});
  }
  // "end of file" is worth saying only when nothing else would do.
  if (types.size() > 1 || !items.empty()) drop({antlr4::Token::EOF});
  std::vector<std::string> groups = std::move(items);
  items.clear();
  for (size_t t : types) items.push_back(describe_token_type(t, vocabulary));
  items.insert(items.end(), groups.begin(), groups.end());
  // Concrete tokens first, then words ("a name", "an expression").
  std::stable_sort(items.begin(), items.end(), [](const std::string &a, const std::string &b) {
    return (a.front() == '`') > (b.front() == '`');
  });
  constexpr size_t kMaxListed = 6;
  bool truncated = items.size() > kMaxListed;
  if (truncated) items.resize(kMaxListed);
  if (items.empty()) return "something else";
  if (items.size() == 1) return items[0];
  std::string out = truncated || items.size() > 2 ? "one of " : "";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += items.size() == 2 && !truncated ? " or " : ", ";
    out += items[i];
  }
  if (truncated) out += ", ...";
  return out;
}

// -------------------------------------------------------------- error strategy

/// Words ANTLR's syntax errors for people and reports them to the sink.
class FriendlyErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  FriendlyErrorStrategy(SyntaxErrorSink &sink, antlr4::CommonTokenStream &tokens)
      : sink_(sink), tokens_(tokens) {}

 protected:
  void reportNoViableAlternative(antlr4::Parser *parser,
                                 const antlr4::NoViableAltException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportInputMismatch(antlr4::Parser *parser,
                           const antlr4::InputMismatchException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportFailedPredicate(antlr4::Parser *parser,
                             const antlr4::FailedPredicateException &e) override {
    report(parser, e.getOffendingToken(), getExpectedTokens(parser));
  }
  void reportUnwantedToken(antlr4::Parser *parser) override {
    if (inErrorRecoveryMode(parser)) return;
    beginErrorCondition(parser);
    report(parser, parser->getCurrentToken(), getExpectedTokens(parser));
  }
  void reportMissingToken(antlr4::Parser *parser) override {
    if (inErrorRecoveryMode(parser)) return;
    beginErrorCondition(parser);
    report(parser, parser->getCurrentToken(), getExpectedTokens(parser));
  }

 private:
  void report(antlr4::Parser *parser, antlr4::Token *offending,
              const antlr4::misc::IntervalSet &expected) {
    if (sink_.full()) throw antlr4::ParseCancellationException("too many syntax errors");
    const antlr4::dfa::Vocabulary &vocabulary = parser->getVocabulary();
    SourceSpan at = sink_.span(offending);
    bool at_eof = offending == nullptr || offending->getType() == antlr4::Token::EOF;
    std::string found = at_eof ? "end of file" : quote_source_text(sink_.text(offending));
    size_t type = at_eof ? antlr4::Token::EOF : offending->getType();
    if (is_keyword(type) && !is_operator(type) && expected.contains(size_t(SpmdParser::IDENT)))
      found = "keyword " + found;

    std::string message = "unexpected " + found + "; expected ";
    std::string note;
    SourceSpan note_span;
    const antlr4::Token *opener = at_eof ? innermost_open_bracket(tokens_.size() - 1)
                                         : innermost_open_bracket(offending->getTokenIndex());
    bool closes = opener != nullptr && expected.contains(closer_of(opener->getType()));
    if (closes && cannot_continue(offending)) {
      std::string closer = describe_token_type(closer_of(opener->getType()), vocabulary);
      message += closer + " to close " + describe_opener(opener);
      note = "the unclosed " + quote_source_text(sink_.text(opener)) + " is here";
      note_span = sink_.span(opener);
    } else {
      message += describe_expected(expected, vocabulary);
    }
    Diagnostic *d = sink_.report(at, message);
    if (d != nullptr && !note.empty()) d->notes.push_back({note_span, note});
  }

  /// The innermost bracket opened before token index `before` and not yet closed.
  const antlr4::Token *innermost_open_bracket(size_t before) {
    int depth = 0;
    for (size_t i = before; i-- > 0;) {
      antlr4::Token *t = tokens_.get(i);
      if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
      if (is_close(t->getType())) ++depth;
      if (is_open(t->getType()) && depth-- == 0) return t;
    }
    return nullptr;
  }

  /// True when the offending token clearly starts something new (so the
  /// missing piece is most likely a closing bracket).
  bool cannot_continue(const antlr4::Token *offending) {
    if (offending == nullptr || offending->getType() == antlr4::Token::EOF) return true;
    size_t t = offending->getType();
    if (is_close(t) || starts_declaration_or_statement(t)) return true;
    // On a later line than the previous code token.
    for (size_t i = offending->getTokenIndex(); i-- > 0;) {
      antlr4::Token *prev = tokens_.get(i);
      if (prev->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
      return prev->getLine() < offending->getLine();
    }
    return false;
  }

  /// "the call to `psum`", "the parameter list of `f`", "this `[`".
  std::string describe_opener(const antlr4::Token *opener) {
    size_t index = opener->getTokenIndex();
    if (opener->getType() == SpmdParser::LPAREN && index > 0) {
      // Walk back over a dotted name.
      size_t i = index;
      std::string name;
      while (i > 0) {
        antlr4::Token *t = tokens_.get(i - 1);
        if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) break;
        if (t->getType() != SpmdParser::IDENT && t->getType() != SpmdParser::DOT) break;
        name = sink_.text(t) + name;
        --i;
      }
      if (!name.empty() && name.front() != '.') {
        antlr4::Token *before = i > 0 ? tokens_.get(i - 1) : nullptr;
        if (before != nullptr &&
            (before->getType() == SpmdParser::DEF || before->getType() == SpmdParser::SHMAP ||
             before->getType() == SpmdParser::SHARDED))
          return "the parameter list of `" + name + "`";
        if (name == "P") return "the partition spec `P(...)`";
        return "the call to `" + name + "`";
      }
      if (i > 0 && tokens_.get(i - 1)->getType() == SpmdParser::RANGE) return "`range(...)`";
    }
    return "this " + quote_source_text(sink_.text(opener));
  }

  SyntaxErrorSink &sink_;
  antlr4::CommonTokenStream &tokens_;
};

// ------------------------------------------------------------ lexical checks

/// Reports malformed tokens and collects comments. Returns false when the
/// error limit was reached.
/// The end of `'name'` starting at `at` (one past the closing quote), or 0.
uint32_t quoted_name_end(const std::string &text, uint32_t at) {
  size_t k = at + 1;
  if (k >= text.size() || !(std::isalpha(static_cast<unsigned char>(text[k])) || text[k] == '_'))
    return 0;
  while (k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_'))
    ++k;
  return k < text.size() && text[k] == '\'' ? static_cast<uint32_t>(k + 1) : 0;
}

bool scan_hidden_tokens(const std::vector<antlr4::Token *> &all, SyntaxErrorSink &sink,
                        std::vector<CommentToken> &comments) {
  const std::string &text = sink.file().text();
  const antlr4::Token *previous_code = nullptr;
  const antlr4::Token *previous = nullptr;
  size_t skip_quote_at = std::string::npos;
  for (const antlr4::Token *t : all) {
    size_t type = t->getType();
    if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) {
      if (type != antlr4::Token::EOF) previous_code = t;
      previous = t;
      continue;
    }
    SourceSpan span = sink.span(t);
    if (type == SpmdParser::COMMENT) {
      CommentToken c;
      c.begin = span.begin;
      c.end = span.end;
      c.text = text.substr(span.begin + 1, span.end - span.begin - 1);
      while (!c.text.empty() && (c.text.back() == ' ' || c.text.back() == '\t')) c.text.pop_back();
      if (previous_code != nullptr && previous_code->getLine() == t->getLine()) {
        c.follows_code = true;
        c.previous_code_end = sink.span(previous_code).end;
      }
      comments.push_back(std::move(c));
    } else if (type == SpmdParser::UNTERMINATED_STRING) {
      sink.report(span,
                  "unterminated string literal; a string must end with `\"` on the same line");
    } else if (type == SpmdParser::BAD_CHAR && text[span.begin] == '\'' &&
               !(previous != nullptr && previous->getType() == SpmdParser::BAD_CHAR &&
                 previous->getStopIndex() + 1 == t->getStartIndex()) &&
               quoted_name_end(text, span.begin) != 0) {
      // `'i'` (a JAX habit: P('batch'), psum(x, 'batch')): one error for the
      // name in quotes; the parser sees the name itself.
      const uint32_t end = quoted_name_end(text, span.begin);
      const std::string name = text.substr(span.begin + 1, end - span.begin - 2);
      Diagnostic *d =
          sink.report({span.file, span.begin, end},
                      "`'" + name + "'`: names are not strings in spmd; drop the quotes");
      if (d != nullptr)
        d->help("write `" + name + "` (axis names in P(...) and collectives are plain names)")
            .fixit({span.file, span.begin, end}, name);
      skip_quote_at = end - 1;
    } else if (type == SpmdParser::BAD_CHAR && t->getStartIndex() == skip_quote_at) {
      // The closing quote of a name reported above.
    } else if (type == SpmdParser::BAD_BYTES || type == SpmdParser::BAD_CHAR) {
      // One diagnostic per run of adjacent bad characters.
      bool continues_run = previous != nullptr &&
                           (previous->getType() == SpmdParser::BAD_BYTES ||
                            previous->getType() == SpmdParser::BAD_CHAR) &&
                           previous->getStopIndex() + 1 == t->getStartIndex();
      if (!continues_run) {
        std::string_view bytes = std::string_view(text).substr(span.begin, span.end - span.begin);
        size_t n = utf8_sequence_length(bytes, 0);
        std::string shown = std::string(bytes.substr(0, n > 0 ? n : 1));
        if (span.begin == 0 && shown == "\xEF\xBB\xBF") {  // an editor's byte order mark
          Diagnostic *d =
              sink.report({span.file, 0, 3}, "the file starts with a UTF-8 byte order mark (BOM)");
          if (d != nullptr)
            d->fix = "save the file as UTF-8 without a BOM (remove its first three bytes)";
          previous = t;
          continue;
        }
        Diagnostic *d = sink.report({span.file, span.begin, span.begin + uint32_t(shown.size())},
                                    "unexpected character " + quote_source_text(shown));
        if (d != nullptr && n > 0)
          d->fix =
              "identifiers and operators are ASCII; non-ASCII text may appear only in "
              "comments and strings";
      }
    }
    previous = t;
  }
  return !sink.full();
}

/// Habits from Python and JAX that derail the parser into many errors; each
/// is reported once, with what to write instead, and parsing stops (false).
///   * `def f(x):` — Python's function syntax (a `:` after the parameters);
///   * `P("i")` — an axis name as a string in a partition spec.
bool check_habits(const std::vector<antlr4::Token *> &all, SyntaxErrorSink &sink) {
  std::vector<const antlr4::Token *> code;
  for (const antlr4::Token *t : all)
    if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) code.push_back(t);
  auto type = [&](size_t i) { return i < code.size() ? code[i]->getType() : antlr4::Token::EOF; };
  bool clean = true;
  for (size_t i = 0; i < code.size(); ++i) {
    // def NAME ( ... ) :
    if (type(i) == SpmdParser::DEF && type(i + 1) == SpmdParser::IDENT &&
        type(i + 2) == SpmdParser::LPAREN) {
      size_t j = i + 3;
      int depth = 1;
      for (; j < code.size() && depth > 0; ++j) {
        if (type(j) == SpmdParser::LPAREN || type(j) == SpmdParser::LBRACK) ++depth;
        if (type(j) == SpmdParser::RPAREN || type(j) == SpmdParser::RBRACK) --depth;
      }
      if (depth == 0 && type(j) == SpmdParser::COLON) {
        const std::string name = sink.text(code[i + 1]);
        Diagnostic *d = sink.report(sink.span(code[j]),
                                    "this is Python's function syntax; an spmd `def` declares "
                                    "the types of its parameters and result and has a body in "
                                    "braces");
        if (d != nullptr) {
          d->help("write `def " + name + "(x: f32[n]) -> f32[n] { ... }` (or generic: `def " +
                  name + "[T](x: T[...]) -> T[...] { ... }`); see docs/language.md");
          d->note(sink.span(code[i + 1]), "`" + name + "` is declared here");
        }
        clean = false;
      }
    }
    // P( "name" ... ) or P( ..., "name" ...)
    if (type(i) == SpmdParser::STRING && i >= 2 &&
        (type(i - 1) == SpmdParser::LPAREN || type(i - 1) == SpmdParser::COMMA)) {
      size_t k = i - 1;
      int depth = 0;
      while (k > 0 && !(type(k) == SpmdParser::LPAREN && depth == 0)) {
        if (type(k) == SpmdParser::RPAREN) ++depth;
        if (type(k) == SpmdParser::LPAREN) --depth;
        --k;
      }
      if (type(k) == SpmdParser::LPAREN && k > 0 && type(k - 1) == SpmdParser::IDENT &&
          sink.text(code[k - 1]) == "P") {
        const std::string quoted = sink.text(code[i]);
        const std::string name = quoted.substr(1, quoted.size() - 2);
        Diagnostic *d =
            sink.report(sink.span(code[i]), "`" + quoted +
                                                "`: mesh axis names in P(...) are names, not "
                                                "strings; drop the quotes");
        if (d != nullptr) d->help("write `" + name + "`").fixit(sink.span(code[i]), name);
        clean = false;
      }
    }
  }
  return clean;
}

/// Rejects nesting that would make the recursive parser (or any later AST
/// walk) recurse too deeply (NestingGuard, nesting.h). Linear in the number of
/// tokens.
bool check_nesting(const std::vector<antlr4::Token *> &all, SyntaxErrorSink &sink) {
  NestingGuard guard;
  for (const antlr4::Token *t : all) {
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    std::optional<NestingLimit> broken = guard.feed(static_cast<TokenKind>(t->getType()));
    if (!broken) continue;
    Diagnostic *d = nullptr;
    switch (*broken) {
      case NestingLimit::Expression:
        d = sink.report(sink.span(t),
                        "expression is nested too deeply (more than " +
                            std::to_string(kMaxExpressionDepth) + " levels of operators)",
                        "nesting-too-deep");
        if (d != nullptr) d->fix = "split the expression into several assignments";
        break;
      case NestingLimit::Brackets:
        d = sink.report(sink.span(t),
                        "brackets are nested too deeply (more than " +
                            std::to_string(kMaxBracketNesting) + " levels)",
                        "nesting-too-deep");
        if (d != nullptr) d->fix = "split the expression or block into smaller pieces";
        break;
      case NestingLimit::IfChain:
        d = sink.report(sink.span(t),
                        "`if` statements are nested too deeply (more than " +
                            std::to_string(kMaxBracketNesting) +
                            " levels; each `else if` nests one level deeper)",
                        "nesting-too-deep");
        if (d != nullptr)
          d->fix = "split the `else if` chain into several `if` statements, or select with `where`";
        break;
    }
    return false;
  }
  return true;
}

}  // namespace

std::string quote_source_text(std::string_view bytes) {
  constexpr size_t kMaxShown = 32;
  std::string out = "`";
  auto escaped = [&out](const char *prefix, unsigned value) {  // prefix, 2 hex digits
    static const char *hex = "0123456789ABCDEF";
    out += prefix;
    out += hex[(value >> 4) & 15];
    out += hex[value & 15];
  };
  size_t i = 0;
  for (; i < bytes.size() && i < kMaxShown;) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    size_t n = c >= 0x80 ? utf8_sequence_length(bytes, i) : 0;
    if (n > 0 && is_c1_control(bytes, i, n)) {  // U+0080..U+009F: never raw
      escaped("\\u00", (c & 0x1Fu) << 6 | (static_cast<unsigned char>(bytes[i + 1]) & 0x3Fu));
      i += n;
    } else if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else if (c < 0x20 || c >= 0x7F) {
      escaped("\\x", c);
      ++i;
    } else {
      out += static_cast<char>(c);
      ++i;
    }
  }
  if (i < bytes.size()) out += "...";
  return out + "`";
}

RawParse build_ast(const SourceFile &file, FileId id, DiagnosticEngine &diags) {
  RawParse result;
  result.module.file = id;
  SyntaxErrorSink sink(file, id, diags);
  if (file.text().size() >= UINT32_MAX) {
    sink.report({id, 0, 0}, "file is too large (4 GiB or more)");
    return result;
  }
  try {
    ByteCharStream input(file.text(), file.path());
    SpmdTokenSource lexer(input);  // every input lexes: bad characters are tokens
    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    const std::vector<antlr4::Token *> &all = tokens.getTokens();
    if (!scan_hidden_tokens(all, sink, result.comments)) return result;
    if (!check_nesting(all, sink)) return result;
    if (!check_habits(all, sink)) return result;

    SpmdParser parser(&tokens);
    parser.removeErrorListeners();
    // Two stages, the usual way to run ANTLR fast: SLL prediction (no full
    // context, much cheaper) bailing out at the first syntax error; only when
    // that fails (a real error, or a rare input SLL cannot decide) parse
    // again with full LL prediction and the error strategy that reports.
    auto *atn = parser.getInterpreter<antlr4::atn::ParserATNSimulator>();
    atn->setPredictionMode(antlr4::atn::PredictionMode::SLL);
    parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
    SpmdParser::Module_Context *tree = nullptr;
    try {
      tree = parser.module_();
    } catch (const antlr4::ParseCancellationException &) {
      tree = nullptr;
    }
    if (tree == nullptr) {
      tokens.seek(0);
      parser.reset();
      atn->setPredictionMode(antlr4::atn::PredictionMode::LL);
      parser.setErrorHandler(std::make_shared<FriendlyErrorStrategy>(sink, tokens));
      try {
        tree = parser.module_();
      } catch (const antlr4::ParseCancellationException &) {
        return result;  // too many errors; what was built is not worth converting
      }
    }
    result.module = build_module(tree, sink, diags);
    result.module.file = id;
  } catch (const std::exception &e) {
    diags.internal({id, 0, 0}, std::string("the parser failed: ") + e.what());
  }
  return result;
}

}  // namespace spmd::frontend_detail
