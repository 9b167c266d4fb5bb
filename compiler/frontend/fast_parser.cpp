// frontend/fast_parser.cpp — grammar/Spmd.g4 by recursive descent, straight to the AST.
//
// The algorithm, for one file:
//   1. Lex with scan_token() into a flat array of code tokens (kind and byte
//      offsets) and the list of comments; any other hidden token (a malformed
//      one) gives up.
//   2. Run the same linear nesting check as the ANTLR path (check_nesting in
//      ast_builder.cpp, `nesting-too-deep`) and give up where it would report;
//      this also bounds the recursion below.
//   3. Parse by recursive descent, one function per grammar rule, building
//      the AST nodes the parse-tree walk of ast_builder_tree.cpp builds, with
//      the same spans (a rule's span runs from its first to its last token).
//      Expressions use precedence climbing with the precedences ANTLR gives
//      the alternatives of the left-recursive `expr` rule (listed below).
//   4. Give up (throw Fallback, caught in parse_fast) at anything the ANTLR
//      path would report: a syntax error, a literal out of range, an unknown
//      string escape, and each signature rule ast_builder_tree.cpp enforces.
//
// Where Spmd.g4 is ambiguous, ANTLR's adaptive prediction takes the lowest
// numbered alternative, i.e. optional parts and loops are greedy, and so is
// this parser: `a.b.c` is one dotted name (never a member of `a.b`), `f(x)` is
// a call of a name (never Apply on a name), `x[None]` is a new axis, and an
// `else if`'s trailing `;` belongs to the inner `if`. Two decisions need more
// than one token of lookahead: an index never starts at `[[` (the grammar's
// predicate: that opens a loop's attributes), and `return` has values unless
// an assignment (`a, b: T = ...`) follows it.
#include "frontend/fast_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/nesting.h"
#include "frontend/scanner.h"

namespace spmd::frontend_detail {
namespace {

using K = TokenKind;

struct Token {
  TokenKind kind;
  uint32_t begin, end;
};

/// Thrown where the ANTLR path must parse the file instead; never leaves this file.
struct Fallback {};

// -------------------------------------------------------------- lexing (1, 2)

/// Lexes `text` into code tokens (then three EOF tokens, so that lookahead
/// needs no bounds checks) and comments. False when a malformed token occurs.
bool lex(std::string_view text, std::vector<Token> &tokens, std::vector<CommentToken> &comments) {
  tokens.reserve(text.size() / 4 + 4);
  bool newline_since_code = true;
  uint32_t previous_code_end = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = pos;
    const TokenKind kind = scan_token(text, pos, end);
    if (kind == K::Ws) {
      if (std::memchr(text.data() + pos, '\n', end - pos) != nullptr) newline_since_code = true;
    } else if (kind == K::Comment) {
      CommentToken c;
      c.begin = static_cast<uint32_t>(pos);
      c.end = static_cast<uint32_t>(end);
      c.text = std::string(text.substr(pos + 1, end - pos - 1));
      while (!c.text.empty() && (c.text.back() == ' ' || c.text.back() == '\t')) c.text.pop_back();
      if (!newline_since_code) {
        c.follows_code = true;
        c.previous_code_end = previous_code_end;
      }
      comments.push_back(std::move(c));
    } else if (is_hidden(kind)) {
      return false;
    } else {
      tokens.push_back({kind, static_cast<uint32_t>(pos), static_cast<uint32_t>(end)});
      newline_since_code = false;
      previous_code_end = static_cast<uint32_t>(end);
    }
    pos = end;
  }
  const auto size = static_cast<uint32_t>(text.size());
  for (int k = 0; k < 3; ++k) tokens.push_back({K::Eof, size, size});
  return true;
}

/// False where check_nesting (ast_builder.cpp) reports `nesting-too-deep`:
/// the same NestingGuard over the same tokens.
bool nesting_within_limits(const std::vector<Token> &tokens) {
  NestingGuard guard;
  for (const Token &t : tokens) {
    if (t.kind == K::Eof) break;
    if (guard.feed(t.kind)) return false;
  }
  return true;
}

bool starts_expression(K k) {
  switch (k) {
    case K::Ident:
    case K::Int:
    case K::Float:
    case K::String:
    case K::True:
    case K::False:
    case K::None:
    case K::LParen:
    case K::LBrack:
    case K::Minus:
    case K::Not:
      return true;
    default:
      return false;
  }
}

bool is_comparison(ast::BinaryOpKind op) {
  using B = ast::BinaryOpKind;
  return op == B::Lt || op == B::Le || op == B::Gt || op == B::Ge || op == B::Eq || op == B::Ne;
}

// The precedences ANTLR gives the alternatives of `expr` (19 alternatives;
// alternative k has precedence 20 - k): a suffix or binary operator of
// precedence q continues an expression parsed at level p when q >= p; the
// right operand of a left-associative operator is parsed at q + 1, of `**`
// at q; a prefix operator's operand at its own precedence.
constexpr int kIndexPrec = 11, kMemberPrec = 10, kApplyPrec = 9, kPowPrec = 8, kNegPrec = 7,
              kMulPrec = 6, kAddPrec = 5, kComparePrec = 4, kNotPrec = 3, kAndPrec = 2, kOrPrec = 1;

struct BinaryOperator {
  ast::BinaryOpKind op;
  int precedence;
  int rhs_precedence;
};

/// The binary operator a token is, if any.
std::optional<BinaryOperator> binary_operator(K k) {
  using B = ast::BinaryOpKind;
  auto left = [](B op, int p) { return BinaryOperator{op, p, p + 1}; };
  switch (k) {
    case K::Pow:
      return BinaryOperator{B::Pow, kPowPrec, kPowPrec};  // right-associative
    case K::Star:
      return left(B::Mul, kMulPrec);
    case K::Slash:
      return left(B::Div, kMulPrec);
    case K::FloorDiv:
      return left(B::FloorDiv, kMulPrec);
    case K::Percent:
      return left(B::Mod, kMulPrec);
    case K::At:
      return left(B::MatMul, kMulPrec);
    case K::Plus:
      return left(B::Add, kAddPrec);
    case K::Minus:
      return left(B::Sub, kAddPrec);
    case K::Lt:
      return left(B::Lt, kComparePrec);
    case K::Le:
      return left(B::Le, kComparePrec);
    case K::Gt:
      return left(B::Gt, kComparePrec);
    case K::Ge:
      return left(B::Ge, kComparePrec);
    case K::Eq:
      return left(B::Eq, kComparePrec);
    case K::Ne:
      return left(B::Ne, kComparePrec);
    case K::And:
      return left(B::And, kAndPrec);
    case K::Or:
      return left(B::Or, kOrPrec);
    default:
      return std::nullopt;
  }
}

// ------------------------------------------------------------------ parser (3, 4)

class Parser {
 public:
  Parser(std::string_view text, FileId file, const std::vector<Token> &tokens)
      : text_(text), file_(file), tokens_(tokens) {}

  ast::Module module() {
    ast::Module m;
    m.file = file_;
    while (!at(K::Eof)) m.decls.push_back(declaration());
    return m;
  }

 private:
  // ------------------------------------------------------------------ basics

  K kind(size_t ahead = 0) const { return tokens_[pos_ + ahead].kind; }
  bool at(K k) const { return kind() == k; }
  const Token &next() {
    const Token &t = tokens_[pos_];
    if (t.kind == K::Eof) throw Fallback{};  // never consumed (`decl* EOF` ends the file)
    ++pos_;
    return t;
  }
  const Token &expect(K k) {
    if (!at(k)) throw Fallback{};
    return next();
  }
  bool accept(K k) {
    if (!at(k)) return false;
    ++pos_;
    return true;
  }

  SourceSpan span(const Token &t) const { return {file_, t.begin, t.end}; }
  /// From the token at index `first` to the last token consumed.
  SourceSpan span_from(size_t first) const {
    return {file_, tokens_[first].begin, tokens_[pos_ - 1].end};
  }
  std::string text(const Token &t) const {
    return std::string(text_.substr(t.begin, t.end - t.begin));
  }
  ast::Ident ident(const Token &t) const { return {text(t), span(t)}; }
  ast::Ident expect_ident() { return ident(expect(K::Ident)); }

  /// `item (COMMA item)* COMMA? close`, the opening token already consumed;
  /// with `allow_empty`, the list may be empty. Returns true when a comma was seen.
  template <typename Item>
  bool list(K close, bool allow_empty, Item &&item) {
    bool comma = false;
    if (at(close) && allow_empty) {
      next();
      return false;
    }
    item();
    while (accept(K::Comma)) {
      comma = true;
      if (at(close)) break;
      item();
    }
    expect(close);
    return comma;
  }

  int64_t integer(const Token &t) const {
    int64_t value = 0;
    const char *begin = text_.data() + t.begin, *end = text_.data() + t.end;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc::result_out_of_range) throw Fallback{};  // literal-out-of-range
    return ptr == end ? value : 0;
  }

  // ----------------------------------------------------------- declarations

  ast::Decl declaration() {
    const size_t first = pos_;
    ast::Decl decl;
    switch (kind()) {
      case K::Import:
        decl.node = import_decl();
        break;
      case K::Mesh:
        decl.node = mesh_decl();
        break;
      case K::LBrack:
      case K::Def:
      case K::Shmap:
      case K::Sharded:
        decl.node = function();
        break;
      default:
        throw Fallback{};
    }
    decl.span = span_from(first);
    return decl;
  }

  // importDecl : IMPORT (IDENT (DOT IDENT)* | file=STRING) SEMI? ;
  ast::ImportDecl import_decl() {
    next();
    ast::ImportDecl import;
    if (at(K::String)) {
      const Token &file = next();
      import.file_span = span(file);
      import.file = string_value(file);
    } else {
      import.path.push_back(expect_ident());
      while (accept(K::Dot)) import.path.push_back(expect_ident());
    }
    accept(K::Semi);
    return import;
  }

  // meshDecl : MESH IDENT ASSIGN LPAREN (meshAxis (COMMA meshAxis)* COMMA?)? RPAREN SEMI? ;
  ast::MeshDecl mesh_decl() {
    next();
    ast::MeshDecl mesh;
    mesh.name = expect_ident();
    expect(K::Assign);
    expect(K::LParen);
    list(K::RParen, true, [&] {
      ast::Ident name = expect_ident();
      expect(K::Colon);
      const Token &size = expect(K::Int);
      mesh.axes.push_back({std::move(name), integer(size), span(size)});
    });
    accept(K::Semi);
    return mesh;
  }

  // attributes : LBRACK LBRACK IDENT (COMMA IDENT)* COMMA? RBRACK RBRACK ;
  void attributes(std::vector<ast::Ident> &out) {
    expect(K::LBrack);
    expect(K::LBrack);
    list(K::RBrack, false, [&] { out.push_back(expect_ident()); });
    expect(K::RBrack);
  }

  // funcDecl : attributes* kind=(DEF | SHMAP | SHARDED) IDENT typeParams?
  //            LPAREN (param (COMMA param)* COMMA?)? RPAREN (ARROW results)? (ON mesh=IDENT)? block
  ast::FuncDecl function() {
    ast::FuncDecl f;
    while (at(K::LBrack)) attributes(f.attributes);
    switch (kind()) {
      case K::Def:
        f.kind = ast::FuncKind::Def;
        break;
      case K::Shmap:
        f.kind = ast::FuncKind::Shmap;
        break;
      case K::Sharded:
        f.kind = ast::FuncKind::Sharded;
        break;
      default:
        throw Fallback{};
    }
    next();
    // Signatures of shmap and sharded functions have specs and a mesh; a
    // def's have neither (bad-type-parameter and the spec rules otherwise).
    const bool is_shmap = f.kind != ast::FuncKind::Def;
    f.name = expect_ident();
    if (at(K::LBrack)) {
      if (is_shmap) throw Fallback{};
      next();
      list(K::RBrack, false, [&] { f.type_params.push_back(expect_ident()); });
    }
    expect(K::LParen);
    list(K::RParen, true, [&] { f.params.push_back(param(f.kind)); });
    if (!accept(K::Arrow)) throw Fallback{};  // "expected `->`"
    if (accept(K::LParen)) {
      f.results_parenthesized = true;
      list(K::RParen, false, [&] { f.results.push_back(result(f.kind)); });
    } else {
      f.results.push_back(result(f.kind));
    }
    if (accept(K::On)) {
      if (!is_shmap) throw Fallback{};
      f.mesh = expect_ident();
    } else if (is_shmap) {
      throw Fallback{};  // "expected `on MESH`"
    }
    f.body = block();
    return f;
  }

  // param : IDENT COLON typeExpr variance? (AT specExpr)? ;
  ast::Param param(ast::FuncKind kind) {
    const size_t first = pos_;
    ast::Param p;
    p.name = expect_ident();
    expect(K::Colon);
    p.type = type_expr();
    if (at(K::LBrace)) throw Fallback{};  // a variance set on a parameter
    p.spec = optional_spec(kind);
    p.span = span_from(first);
    return p;
  }

  // result : (name=IDENT COLON)? typeExpr (AT specExpr)? ;
  ast::Result result(ast::FuncKind kind) {
    const size_t first = pos_;
    ast::Result r;
    if (at(K::Ident) && kind_is(1, K::Colon)) {
      r.name = ident(next());
      next();
    }
    r.type = type_expr();
    r.spec = optional_spec(kind);
    r.span = span_from(first);
    return r;
  }

  bool kind_is(size_t ahead, K k) const { return kind(ahead) == k; }

  /// `(AT specExpr)?`, which a shmap or sharded signature must have and a def's must not.
  std::optional<ast::SpecExpr> optional_spec(ast::FuncKind kind) {
    const bool is_shmap = kind != ast::FuncKind::Def;
    if (!accept(K::At)) {
      if (is_shmap) throw Fallback{};  // missing partition spec
      return std::nullopt;
    }
    if (!is_shmap) throw Fallback{};  // a spec in a def signature
    return spec_expr(kind);
  }

  // --------------------------------------------------------- types and specs

  // typeExpr : IDENT LBRACK (dim (COMMA dim)* COMMA?)? RBRACK ;
  ast::TypeExpr type_expr() {
    const size_t first = pos_;
    ast::TypeExpr t;
    t.dtype = expect_ident();
    expect(K::LBrack);
    list(K::RBrack, true, [&] {
      const Token &d = next();
      ast::DimExpr dim;
      dim.span = span(d);
      if (d.kind == K::Int)
        dim.value = integer(d);
      else if (d.kind == K::Ellipsis)
        dim.value = std::string(ast::DimExpr::kEllipsis);
      else if (d.kind == K::Ident)
        dim.value = text(d);
      else
        throw Fallback{};
      t.dims.push_back(std::move(dim));
    });
    t.span = span_from(first);
    return t;
  }

  // variance : LBRACE (IDENT (COMMA IDENT)* COMMA?)? RBRACE ;
  std::vector<ast::Ident> variance() {
    std::vector<ast::Ident> axes;
    expect(K::LBrace);
    list(K::RBrace, true, [&] { axes.push_back(expect_ident()); });
    return axes;
  }

  // specExpr : IDENT (LPAREN (specDim (COMMA specDim)* COMMA?)? RPAREN)? ;
  ast::SpecExpr spec_expr(ast::FuncKind kind) {
    const size_t first = pos_;
    ast::SpecExpr s;
    const Token &head = expect(K::Ident);
    const std::string_view name = text_.substr(head.begin, head.end - head.begin);
    if (!at(K::LParen)) {  // a bare name: only `auto`, and only in a sharded signature
      if (name != "auto" || kind != ast::FuncKind::Sharded) throw Fallback{};
      s.is_auto = true;
      s.span = span(head);
      return s;
    }
    if (name == "like") {  // `like(w)`; anything else falls back for its error
      next();
      s.like = expect_ident();
      expect(K::RParen);
      s.span = span_from(first);
      return s;
    }
    if (name != "P") throw Fallback{};
    next();
    list(K::RParen, true, [&] { s.dims.push_back(spec_dim()); });
    s.span = span_from(first);
    return s;
  }

  // specDim : NONE | IDENT | LPAREN IDENT (COMMA IDENT)* COMMA? RPAREN ;
  ast::SpecDim spec_dim() {
    const size_t first = pos_;
    ast::SpecDim d;
    if (accept(K::None)) {
    } else if (at(K::Ident)) {
      d.axes.push_back(ident(next()));
    } else {
      expect(K::LParen);
      list(K::RParen, false, [&] { d.axes.push_back(expect_ident()); });
    }
    d.span = span_from(first);
    return d;
  }

  // -------------------------------------------------------------- statements

  // block : LBRACE stmt* RBRACE ;
  ast::Block block() {
    ast::Block b;
    expect(K::LBrace);
    while (!accept(K::RBrace)) b.push_back(statement());
    return b;
  }

  template <typename Node>
  static ast::StmtPtr make_stmt(Node node, SourceSpan at) {
    auto stmt = std::make_unique<ast::Stmt>();
    stmt->node = std::move(node);
    stmt->span = at;
    return stmt;
  }

  ast::StmtPtr statement() {
    switch (kind()) {
      case K::Ident:
        return assignment_follows() ? assign() : call_stmt();
      case K::Return:
        return return_stmt();
      case K::LBrack:
      case K::For:
        return for_stmt();
      case K::If:
        return if_stmt();
      default:
        throw Fallback{};
    }
  }

  // assignStmt : target (COMMA target)* ASSIGN expr SEMI? ;
  // target : IDENT (COLON typeExpr variance?)? ;
  ast::StmtPtr assign() {
    const size_t first = pos_;
    ast::AssignStmt a;
    do {
      ast::AssignTarget target;
      target.name = expect_ident();
      if (accept(K::Colon)) {
        target.annotation = type_expr();
        if (at(K::LBrace)) {
          const size_t variance_first = pos_;
          target.annotation->variance = variance();
          target.annotation->span =
              SourceSpan::cover(target.annotation->span, span_from(variance_first));
        }
      }
      a.targets.push_back(std::move(target));
    } while (accept(K::Comma));
    expect(K::Assign);
    a.value = expr();
    accept(K::Semi);
    return make_stmt(std::move(a), span_from(first));
  }

  // callStmt : dottedName LPAREN (argument (COMMA argument)* COMMA?)? RPAREN SEMI? ;
  ast::StmtPtr call_stmt() {
    const size_t first = pos_;
    ast::ExprPtr call = name_or_call();
    if (!std::holds_alternative<ast::CallExpr>(call->node)) throw Fallback{};
    accept(K::Semi);
    return make_stmt(ast::CallStmt{std::move(call)}, span_from(first));
  }

  /// True when the tokens from pos_ on are the targets of an assignment and
  /// its `=`: `IDENT (COLON typeExpr variance?)? (COMMA ...)* ASSIGN`.
  bool assignment_follows() const {
    size_t k = pos_;
    auto skip_group = [&](K open, K close, std::initializer_list<K> inside) {
      if (tokens_[k].kind != open) return false;
      ++k;
      while (std::find(inside.begin(), inside.end(), tokens_[k].kind) != inside.end()) ++k;
      if (tokens_[k].kind != close) return false;
      ++k;
      return true;
    };
    for (;;) {
      if (tokens_[k].kind != K::Ident) return false;
      ++k;
      if (tokens_[k].kind == K::Colon) {
        ++k;
        if (tokens_[k].kind != K::Ident) return false;
        ++k;
        if (!skip_group(K::LBrack, K::RBrack, {K::Int, K::Ident, K::Ellipsis, K::Comma}))
          return false;
        if (tokens_[k].kind == K::LBrace && !skip_group(K::LBrace, K::RBrace, {K::Ident, K::Comma}))
          return false;
      }
      if (tokens_[k].kind == K::Assign) return true;
      if (tokens_[k].kind != K::Comma) return false;
      ++k;
    }
  }

  // returnStmt : RETURN (expr (COMMA expr)*)? SEMI? ;
  // The values are optional and a statement may follow on the same line:
  // `return` has values unless the next statement is an assignment (only one
  // reading of a correct program can work, as no expression is followed by
  // `=` or `:`).
  ast::StmtPtr return_stmt() {
    const size_t first = pos_;
    next();
    ast::ReturnStmt r;
    if (starts_expression(kind()) && !(at(K::Ident) && assignment_follows())) {
      r.values.push_back(expr());
      while (accept(K::Comma)) r.values.push_back(expr());
    }
    accept(K::Semi);
    return make_stmt(std::move(r), span_from(first));
  }

  // forStmt : attributes* FOR IDENT IN RANGE LPAREN expr (COMMA expr (COMMA expr)?)? RPAREN
  //           block SEMI? ;
  ast::StmtPtr for_stmt() {
    const size_t first = pos_;
    ast::ForStmt f;
    while (at(K::LBrack)) attributes(f.attributes);
    expect(K::For);
    f.var = expect_ident();
    expect(K::In);
    expect(K::Range);
    expect(K::LParen);
    ast::ExprPtr bound = expr();
    if (accept(K::Comma)) {
      f.start = std::move(bound);
      f.stop = expr();
      if (accept(K::Comma)) f.step = expr();
    } else {
      f.stop = std::move(bound);
    }
    expect(K::RParen);
    f.body = block();
    accept(K::Semi);
    return make_stmt(std::move(f), span_from(first));
  }

  // ifStmt : IF expr block (ELSE (block | ifStmt))? SEMI? ;
  ast::StmtPtr if_stmt() {
    const size_t first = pos_;
    expect(K::If);
    ast::IfStmt s;
    s.cond = expr();
    s.then_body = block();
    if (accept(K::Else)) {
      s.has_else = true;
      if (at(K::If))
        s.else_body.push_back(if_stmt());  // `else if`
      else
        s.else_body = block();
    }
    accept(K::Semi);
    return make_stmt(std::move(s), span_from(first));
  }

  // ------------------------------------------------------------- expressions

  template <typename Node>
  static ast::ExprPtr make_expr(Node node, SourceSpan at) {
    auto e = std::make_unique<ast::Expr>();
    e->node = std::move(node);
    e->span = at;
    return e;
  }

  /// `expr` parsed at precedence level `level` (see kIndexPrec ...): a
  /// primary or prefix alternative, then every suffix and binary operator of
  /// precedence >= level. Every node built here spans from the first token.
  ast::ExprPtr expr(int level = 0) {
    const size_t first = pos_;
    ast::ExprPtr e = primary();
    for (;;) {
      const K k = kind();
      if (k == K::LBrack) {
        // `[[` never starts a subscript (the grammar's predicate).
        if (kIndexPrec < level || kind(1) == K::LBrack) return e;
        e = index(std::move(e), first);
      } else if (k == K::Dot) {
        if (kMemberPrec < level) return e;
        e = member(std::move(e), first);
      } else if (k == K::LParen) {
        if (kApplyPrec < level) return e;
        e = apply(std::move(e), first);
      } else if (std::optional<BinaryOperator> op = binary_operator(k)) {
        if (op->precedence < level) return e;
        // `a < b < c`: comparison-chained (only a parenthesized comparison may be compared).
        if (is_comparison(op->op)) {
          const auto *lhs = std::get_if<ast::BinaryExpr>(&e->node);
          if (lhs != nullptr && !e->parenthesized && is_comparison(lhs->op)) throw Fallback{};
        }
        next();
        ast::ExprPtr rhs = expr(op->rhs_precedence);
        e = make_expr(ast::BinaryExpr{op->op, std::move(e), std::move(rhs)}, span_from(first));
      } else {
        return e;
      }
    }
  }

  ast::ExprPtr primary() {
    const size_t first = pos_;
    switch (kind()) {
      case K::Ident:
        return name_or_call();
      case K::Int: {
        const Token &t = next();
        return make_expr(ast::IntLit{integer(t)}, span(t));
      }
      case K::Float:
        return float_literal(next());
      case K::True:
      case K::False: {
        const Token &t = next();
        return make_expr(ast::BoolLit{t.kind == K::True}, span(t));
      }
      case K::String: {
        const Token &t = next();
        return make_expr(ast::StringLit{string_value(t)}, span(t));
      }
      case K::None:
        return make_expr(ast::NoneLit{}, span(next()));
      case K::LParen:
        return paren_or_tuple();
      case K::LBrack: {
        next();
        ast::ListExpr l;
        list(K::RBrack, true, [&] { l.elements.push_back(expr()); });
        return make_expr(std::move(l), span_from(first));
      }
      case K::Minus: {
        next();
        ast::ExprPtr operand = expr(kNegPrec);
        return make_expr(ast::UnaryExpr{ast::UnaryOpKind::Neg, std::move(operand)},
                         span_from(first));
      }
      case K::Not: {
        next();
        ast::ExprPtr operand = expr(kNotPrec);
        return make_expr(ast::UnaryExpr{ast::UnaryOpKind::Not, std::move(operand)},
                         span_from(first));
      }
      default:
        throw Fallback{};
    }
  }

  // dottedName   # Name, and the call that follows it (# Apply of a Name)
  ast::ExprPtr name_or_call() {
    const size_t first = pos_;
    std::string name = text(next());
    while (accept(K::Dot)) {
      name += '.';
      name += text(expect(K::Ident));
    }
    const SourceSpan name_span = span_from(first);
    if (!at(K::LParen)) return make_expr(ast::NameExpr{std::move(name)}, name_span);
    ast::CallExpr call;
    call.callee = {std::move(name), name_span};
    call.args = arguments();
    return make_expr(std::move(call), span_from(first));
  }

  // LPAREN (expr (COMMA expr)* COMMA?)? RPAREN   # ParenOrTuple
  ast::ExprPtr paren_or_tuple() {
    const size_t first = pos_;
    next();
    std::vector<ast::ExprPtr> elements;
    const bool comma = list(K::RParen, true, [&] { elements.push_back(expr()); });
    if (elements.size() == 1 && !comma) {
      elements[0]->parenthesized = true;
      return std::move(elements[0]);
    }
    return make_expr(ast::TupleExpr{std::move(elements)}, span_from(first));
  }

  // expr LBRACK subscript (COMMA subscript)* COMMA? RBRACK   # Index
  ast::ExprPtr index(ast::ExprPtr base, size_t first) {
    next();
    ast::IndexExpr index;
    index.base = std::move(base);
    list(K::RBrack, false, [&] { index.subscripts.push_back(subscript()); });
    return make_expr(std::move(index), span_from(first));
  }

  // subscript : newaxis=NONE
  //           | start=expr (colon1=COLON (stop=expr)? (colon2=COLON (step=expr)?)?)?
  //           | colon1=COLON (stop=expr)? (colon2=COLON (step=expr)?)? ;
  ast::Subscript subscript() {
    const size_t first = pos_;
    ast::Subscript s;
    if (at(K::None) && (kind_is(1, K::Comma) || kind_is(1, K::RBrack))) {
      next();
      s.is_new_axis = true;
    } else {
      if (!at(K::Colon)) s.index = expr();
      if (accept(K::Colon)) {
        s.is_slice = true;
        s.start = std::move(s.index);
        if (starts_expression(kind())) s.stop = expr();
        if (accept(K::Colon) && starts_expression(kind())) s.step = expr();
      }
    }
    s.span = span_from(first);
    return s;
  }

  // expr DOT IDENT (call=LPAREN (argument (COMMA argument)* COMMA?)? RPAREN)?   # Member
  ast::ExprPtr member(ast::ExprPtr base, size_t first) {
    next();
    ast::Ident name = expect_ident();
    if (!at(K::LParen))
      return make_expr(ast::MemberExpr{std::move(base), std::move(name)}, span_from(first));
    ast::CallExpr call;
    call.callee = std::move(name);
    call.receiver = std::move(base);
    call.args = arguments();
    return make_expr(std::move(call), span_from(first));
  }

  // expr call=LPAREN (argument (COMMA argument)* COMMA?)? RPAREN   # Apply
  // Only the call of a named function (a derivative) may be called again.
  ast::ExprPtr apply(ast::ExprPtr function, size_t first) {
    ast::CallExpr call;
    if (const auto *name = std::get_if<ast::NameExpr>(&function->node);
        name != nullptr && !function->parenthesized) {
      call.callee = {name->name, function->span};
      call.args = arguments();
      return make_expr(std::move(call), span_from(first));
    }
    const auto *inner = std::get_if<ast::CallExpr>(&function->node);
    if (inner == nullptr || inner->function != nullptr || inner->receiver != nullptr ||
        function->parenthesized)
      throw Fallback{};  // "only a function can be called"
    call.function = std::move(function);
    call.args = arguments();
    return make_expr(std::move(call), span_from(first));
  }

  // argument : (keyword=IDENT ASSIGN)? expr ; positional arguments come first.
  std::vector<ast::Argument> arguments() {
    std::vector<ast::Argument> args;
    bool seen_keyword = false;
    expect(K::LParen);
    list(K::RParen, true, [&] {
      const size_t first = pos_;
      ast::Argument arg;
      if (at(K::Ident) && kind_is(1, K::Assign)) {
        arg.keyword = text(next());
        next();
        seen_keyword = true;
      } else if (seen_keyword) {
        throw Fallback{};  // a positional argument after a keyword argument
      }
      arg.value = expr();
      arg.span = span_from(first);
      args.push_back(std::move(arg));
    });
    return args;
  }

  // ---------------------------------------------------------------- literals

  ast::ExprPtr float_literal(const Token &t) {
    std::string spelling = text(t);
    double value = 0;
    auto [ptr, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), value);
    if (ec == std::errc::result_out_of_range) {
      if (decimal_magnitude(spelling) > 0) throw Fallback{};  // literal-out-of-range
      value = 0;  // underflow: the nearest double is zero
    } else if (ec != std::errc() || !std::isfinite(value)) {
      value = 0;
    }
    return make_expr(ast::FloatLit{value, std::move(spelling)}, span(t));
  }

  /// The value of a STRING token; only `\"` and `\\` are escapes.
  std::string string_value(const Token &t) const {
    std::string_view raw = text_.substr(t.begin, t.end - t.begin);
    std::string value;
    for (size_t i = 1; i + 1 < raw.size(); ++i) {
      if (raw[i] != '\\') {
        value += raw[i];
        continue;
      }
      if (raw[i + 1] != '"' && raw[i + 1] != '\\') throw Fallback{};  // unknown escape
      value += raw[++i];
    }
    return value;
  }

  std::string_view text_;
  FileId file_;
  const std::vector<Token> &tokens_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<RawParse> parse_fast(const SourceFile &file, FileId id) {
  const std::string &text = file.text();
  if (text.size() >= UINT32_MAX) return std::nullopt;
  RawParse result;
  std::vector<Token> tokens;
  if (!lex(text, tokens, result.comments)) return std::nullopt;
  if (!nesting_within_limits(tokens)) return std::nullopt;
  try {
    result.module = Parser(text, id, tokens).module();
  } catch (const Fallback &) {
    return std::nullopt;
  }
  return result;
}

}  // namespace spmd::frontend_detail
