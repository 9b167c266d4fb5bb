// frontend/ast_builder_tree.cpp — converting the ANTLR parse tree into the AST.
//
// The tree may be partial after syntax errors (missing children are null, and
// tokens conjured by error recovery have no position), so every accessor is
// checked; a missing expression becomes the placeholder name `<error>` so that
// the module stays well formed (it is never lowered when errors exist). The
// grammar is permissive, so this is where signature rules are enforced with
// located messages: partition specs and `on MESH` on shmap and sharded only, `P(...)`
// or `auto` (sharded only),
// variance sets only on local variables, no chained comparisons, positional
// arguments before keyword ones, and literal ranges (`literal-out-of-range`).
// Recursion follows the parse tree, whose depth the nesting guard in
// ast_builder.cpp has bounded.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "antlr4-runtime.h"
#include "frontend/ast_builder_internal.h"
#include "frontend/scanner.h"

namespace spmd::frontend_detail {
namespace {

using P = SpmdParser;

class TreeBuilder {
 public:
  TreeBuilder(SyntaxErrorSink &errors, DiagnosticEngine &diags) : errors_(errors), diags_(diags) {}

  ast::Module module(P::Module_Context *ctx) {
    ast::Module m;
    m.file = errors_.id();
    if (ctx == nullptr) return m;
    for (P::DeclContext *d : ctx->decl()) {
      if (d == nullptr) continue;
      if (auto decl = declaration(d)) m.decls.push_back(std::move(*decl));
    }
    return m;
  }

 private:
  // ------------------------------------------------------------------ basics

  SourceSpan span(antlr4::ParserRuleContext *ctx) const { return errors_.span(ctx); }
  SourceSpan span(antlr4::tree::TerminalNode *node) const { return errors_.span(node); }
  SourceSpan span(const antlr4::Token *token) const { return errors_.span(token); }

  std::string text(const antlr4::Token *token) const { return errors_.text(token); }
  std::string text(antlr4::tree::TerminalNode *node) const {
    return node != nullptr ? errors_.text(node->getSymbol()) : std::string();
  }

  ast::Ident ident(antlr4::tree::TerminalNode *node) const {
    if (node == nullptr) return {"<error>", span(static_cast<const antlr4::Token *>(nullptr))};
    std::string name = text(node);
    return {name.empty() ? "<error>" : name, span(node)};
  }

  void error(SourceSpan at, std::string message, std::string fix = "") {
    if (Diagnostic *d = errors_.report(at, std::move(message)); d != nullptr)
      d->fix = std::move(fix);
  }

  /// Parses a decimal integer literal; reports literal-out-of-range.
  int64_t integer(antlr4::tree::TerminalNode *node) {
    if (node == nullptr) return 0;
    std::string digits = text(node);
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc::result_out_of_range) {
      diags_.error("literal-out-of-range", span(node),
                   "integer literal " + quote_source_text(digits) +
                       " does not fit in a 64-bit signed integer");
      return 0;
    }
    return ptr == digits.data() + digits.size() ? value : 0;
  }

  // ----------------------------------------------------------- declarations

  std::optional<ast::Decl> declaration(P::DeclContext *ctx) {
    ast::Decl decl;
    decl.span = span(ctx);
    if (auto *c = ctx->importDecl()) {
      // A malformed path (`import ../../etc/passwd`) was reported as a syntax
      // error; what the parser recovered of it (`etc.passwd`) is no import.
      if (c->exception != nullptr ||
          std::any_of(c->children.begin(), c->children.end(), [](antlr4::tree::ParseTree *t) {
            return dynamic_cast<antlr4::tree::ErrorNode *>(t) != nullptr;
          }))
        return std::nullopt;
      ast::ImportDecl import;
      for (antlr4::tree::TerminalNode *name : c->IDENT()) import.path.push_back(ident(name));
      if (c->file != nullptr) {
        import.file_span = span(c->file);
        auto literal = string_literal(c->STRING(), import.file_span);
        import.file = std::get<ast::StringLit>(literal->node).value;
      } else if (import.path.empty()) {
        return std::nullopt;
      }
      decl.node = std::move(import);
    } else if (auto *c = ctx->meshDecl()) {
      ast::MeshDecl mesh;
      mesh.name = ident(c->IDENT());
      for (P::MeshAxisContext *axis : c->meshAxis()) {
        if (axis == nullptr) continue;
        mesh.axes.push_back({ident(axis->IDENT()), integer(axis->INT()), span(axis->INT())});
      }
      decl.node = std::move(mesh);
    } else if (auto *c = ctx->funcDecl()) {
      decl.node = function(c);
    } else {
      return std::nullopt;
    }
    return decl;
  }

  ast::FuncDecl function(P::FuncDeclContext *ctx) {
    ast::FuncDecl f;
    size_t kind_token = ctx->kind != nullptr ? ctx->kind->getType() : static_cast<size_t>(P::DEF);
    f.kind = kind_token == P::SHMAP     ? ast::FuncKind::Shmap
             : kind_token == P::SHARDED ? ast::FuncKind::Sharded
                                        : ast::FuncKind::Def;
    // Signatures of shmap and sharded functions have specs and a mesh.
    bool is_shmap = f.kind != ast::FuncKind::Def;
    const char *kind_word = f.kind == ast::FuncKind::Shmap     ? "shmap"
                            : f.kind == ast::FuncKind::Sharded ? "sharded function"
                                                               : "function";
    antlr4::tree::TerminalNode *name_node = ctx->IDENT(0);
    if (name_node != nullptr && name_node->getSymbol() == ctx->mesh) name_node = nullptr;
    f.name = ident(name_node);
    for (P::AttributesContext *group : ctx->attributes()) {
      if (group == nullptr) continue;
      for (antlr4::tree::TerminalNode *name : group->IDENT()) f.attributes.push_back(ident(name));
    }
    if (P::TypeParamsContext *tp = ctx->typeParams()) {
      std::string written;
      for (antlr4::tree::TerminalNode *name : tp->IDENT()) {
        f.type_params.push_back(ident(name));
        written += (written.empty() ? "" : ", ") + f.type_params.back().name;
      }
      if (is_shmap)
        diags_
            .error("bad-type-parameter", span(tp),
                   std::string("type parameters are only allowed on a `def`; a ") + kind_word +
                       " has concrete types")
            .fix = "remove `[" + written + "]` and write the dtype in each type";
    }
    std::string what = std::string(kind_word) + " `" + f.name.name + "`";
    // Complain about a missing `->` or `on` only when the parser got to the body
    // (otherwise it has already reported the real problem).
    bool has_body = ctx->block() != nullptr && ctx->block()->LBRACE() != nullptr &&
                    span(ctx->block()->LBRACE()).end > span(ctx->block()->LBRACE()).begin;
    for (P::ParamContext *p : ctx->param()) {
      if (p == nullptr) continue;
      ast::Param param;
      param.name = ident(p->IDENT());
      param.type = type(p->typeExpr());
      param.span = span(p);
      if (p->variance() != nullptr)
        error(span(p->variance()), "a variance set `{...}` is only allowed on local variables",
              "the variance of a shmap parameter follows from its partition spec");
      if (p->specExpr() != nullptr) param.spec = spec(p->specExpr(), f.kind);
      check_spec(is_shmap, param.spec.has_value(), p->specExpr(),
                 param.type.span.valid() ? param.type.span : param.span,
                 "parameter `" + param.name.name + "` of " + what);
      f.params.push_back(std::move(param));
    }
    if (P::ResultsContext *rs = ctx->results(); rs != nullptr) {
      f.results_parenthesized = rs->LPAREN() != nullptr;
      std::vector<P::ResultContext *> result_ctxs = rs->result();
      for (size_t i = 0; i < result_ctxs.size(); ++i) {
        P::ResultContext *r = result_ctxs[i];
        if (r == nullptr) continue;
        ast::Result result;
        if (r->name != nullptr) result.name = ast::Ident{text(r->name), span(r->name)};
        result.type = type(r->typeExpr());
        result.span = span(r);
        if (r->specExpr() != nullptr) result.spec = spec(r->specExpr(), f.kind);
        check_spec(is_shmap, result.spec.has_value(), r->specExpr(), result.span,
                   result_ctxs.size() == 1
                       ? "the result of " + what
                       : "result `" +
                             (result.name ? result.name->name : unnamed_result_name(i)) +
                             "` of " + what);
        f.results.push_back(std::move(result));
      }
    } else if (ctx->ARROW() == nullptr && has_body) {
      error(span(ctx->block() != nullptr ? ctx->block()->getStart() : ctx->getStop()),
            "expected `->` and the result type before the body of " + what,
            is_shmap ? "write e.g. `-> f32[] @ P() on M {`" : "write e.g. `-> f32[] {`");
    }
    if (ctx->mesh != nullptr) {
      f.mesh = ast::Ident{text(ctx->mesh), span(ctx->mesh)};
      if (!is_shmap)
        error(span(ctx->ON()),
              "`on MESH` is only allowed on `shmap` and `sharded`; " + what + " is a `def`",
              "a `def` runs on every device of its caller; remove `on " + f.mesh->name + "`");
    } else if (is_shmap && has_body) {
      SourceSpan at = ctx->ON() != nullptr      ? span(ctx->ON())
                      : ctx->block() != nullptr ? span(ctx->block()->getStart())
                                                : span(ctx->getStop());
      error(at, "expected `on MESH` before the body of " + what,
            std::string(f.kind == ast::FuncKind::Shmap ? "a shmap runs"
                                                       : "a sharded function is split") +
                " on a mesh declared with `mesh`; write e.g. `on M {`");
    }
    f.body = block(ctx->block());
    return f;
  }

  void check_spec(bool is_shmap, bool has_spec, P::SpecExprContext *spec_ctx, SourceSpan at,
                  const std::string &what) {
    if (is_shmap && !has_spec) {
      error(SourceSpan{at.file, at.end, at.end},
            "missing partition spec for " + what + "; expected `@ P(...)`",
            "write e.g. `@ P()` for a replicated value or `@ P(i)` to split dimension 0 along "
            "mesh axis `i`");
    } else if (!is_shmap && has_spec) {
      error(span(spec_ctx), "a `def` signature cannot have partition specs (" + what + ")",
            "partition specs belong to `shmap` and `sharded` signatures; remove `@ P(...)`");
    }
  }

  // --------------------------------------------------------- types and specs

  ast::TypeExpr type(P::TypeExprContext *ctx) {
    ast::TypeExpr t;
    if (ctx == nullptr) {
      t.dtype = ident(nullptr);
      t.span = t.dtype.span;
      return t;
    }
    t.dtype = ident(ctx->IDENT());
    t.span = span(ctx);
    for (P::DimContext *d : ctx->dim()) {
      if (d == nullptr) continue;
      ast::DimExpr dim;
      dim.span = span(d);
      if (d->INT() != nullptr)
        dim.value = integer(d->INT());
      else if (d->ELLIPSIS() != nullptr)
        dim.value = std::string(ast::DimExpr::kEllipsis);
      else
        dim.value = ident(d->IDENT()).name;
      t.dims.push_back(std::move(dim));
    }
    return t;
  }

  std::vector<ast::Ident> variance(P::VarianceContext *ctx) {
    std::vector<ast::Ident> axes;
    for (antlr4::tree::TerminalNode *name : ctx->IDENT()) axes.push_back(ident(name));
    return axes;
  }

  ast::SpecExpr spec(P::SpecExprContext *ctx, ast::FuncKind kind) {
    ast::SpecExpr s;
    s.span = span(ctx);
    antlr4::tree::TerminalNode *head = ctx->IDENT();
    if (ctx->LPAREN() == nullptr) {  // a bare name: only `auto` is a spec
      if (head != nullptr && text(head) == "auto") {
        s.is_auto = true;
        if (kind != ast::FuncKind::Sharded)
          error(span(head),
                "`auto` is only allowed in the signature of a `sharded` function; a shmap "
                "needs every partition spec written",
                "write the spec, e.g. `@ P()`, or declare the function `sharded` to let the "
                "compiler choose");
      } else if (head != nullptr) {
        error(span(head), "a partition spec is written `P(...)` or `auto`, not " +
                              quote_source_text(text(head)));
      }
      return s;
    }
    if (head != nullptr && text(head) == "like") {  // `like(w)`: checked in lowering
      const std::vector<P::SpecDimContext *> dims = ctx->specDim();
      if (dims.size() == 1 && dims[0] != nullptr && dims[0]->LPAREN() == nullptr &&
          dims[0]->IDENT().size() == 1)
        s.like = ident(dims[0]->IDENT(0));
      else
        error(span(ctx), "`like` names one parameter: `like(w)`",
              "write the name of the parameter whose layout this result keeps");
      return s;
    }
    if (head != nullptr && text(head) != "P")
      error(span(head),
            "a partition spec is written `P(...)`, not " + quote_source_text(text(head) + "(...)"));
    for (P::SpecDimContext *d : ctx->specDim()) {
      if (d == nullptr) continue;
      ast::SpecDim dim;
      dim.span = span(d);
      for (antlr4::tree::TerminalNode *axis : d->IDENT()) dim.axes.push_back(ident(axis));
      s.dims.push_back(std::move(dim));
    }
    return s;
  }

  // -------------------------------------------------------------- statements

  ast::Block block(P::BlockContext *ctx) {
    ast::Block b;
    if (ctx == nullptr) return b;
    for (P::StmtContext *s : ctx->stmt()) {
      if (s == nullptr) continue;
      if (ast::StmtPtr stmt = statement(s)) b.push_back(std::move(stmt));
    }
    return b;
  }

  ast::StmtPtr statement(P::StmtContext *ctx) {
    if (auto *c = ctx->assignStmt()) return assign(c);
    if (auto *c = ctx->returnStmt()) return make_stmt(return_stmt(c), span(ctx));
    if (auto *c = ctx->forStmt()) return make_stmt(for_stmt(c), span(ctx));
    if (auto *c = ctx->ifStmt()) return if_stmt(c);
    if (auto *c = ctx->callStmt()) return call_stmt(c);
    return nullptr;
  }

  template <typename Node>
  static ast::StmtPtr make_stmt(Node node, SourceSpan at) {
    auto stmt = std::make_unique<ast::Stmt>();
    stmt->node = std::move(node);
    stmt->span = at;
    return stmt;
  }

  ast::StmtPtr assign(P::AssignStmtContext *ctx) {
    ast::AssignStmt a;
    for (P::TargetContext *t : ctx->target()) {
      if (t == nullptr) continue;
      ast::AssignTarget target;
      target.name = ident(t->IDENT());
      if (t->typeExpr() != nullptr) {
        target.annotation = type(t->typeExpr());
        if (t->variance() != nullptr) {
          target.annotation->variance = variance(t->variance());
          target.annotation->span = SourceSpan::cover(target.annotation->span, span(t->variance()));
        }
      }
      a.targets.push_back(std::move(target));
    }
    a.value = expr(ctx->expr());
    return make_stmt(std::move(a), span(ctx));
  }

  ast::StmtPtr call_stmt(P::CallStmtContext *ctx) {
    ast::Ident name{"<error>", span(ctx)};
    if (P::DottedNameContext *d = ctx->dottedName(); d != nullptr) {
      std::string joined;
      for (antlr4::tree::TerminalNode *part : d->IDENT()) {
        if (!joined.empty()) joined += '.';
        joined += text(part);
      }
      if (!joined.empty()) name = {joined, span(d)};
    }
    ast::CallExpr call;
    call.callee = name;
    call.args = arguments(ctx->argument(), "`" + name.name + "`");
    SourceSpan at = span(ctx);
    if (ctx->RPAREN() != nullptr && ctx->dottedName() != nullptr)
      at = SourceSpan::cover(span(ctx->dottedName()), span(ctx->RPAREN()));
    return make_stmt(ast::CallStmt{make_expr(std::move(call), at)}, span(ctx));
  }

  ast::ReturnStmt return_stmt(P::ReturnStmtContext *ctx) {
    ast::ReturnStmt r;
    for (P::ExprContext *e : ctx->expr()) r.values.push_back(expr(e));
    return r;
  }

  ast::ForStmt for_stmt(P::ForStmtContext *ctx) {
    ast::ForStmt f;
    for (P::AttributesContext *group : ctx->attributes()) {
      if (group == nullptr) continue;
      for (antlr4::tree::TerminalNode *name : group->IDENT()) f.attributes.push_back(ident(name));
    }
    f.var = ident(ctx->IDENT());
    std::vector<P::ExprContext *> bounds = ctx->expr();
    if (bounds.size() >= 2) {
      f.start = expr(bounds[0]);
      f.stop = expr(bounds[1]);
      if (bounds.size() >= 3) f.step = expr(bounds[2]);
    } else {
      f.stop = expr(bounds.empty() ? nullptr : bounds[0]);
    }
    f.body = block(ctx->block());
    return f;
  }

  ast::StmtPtr if_stmt(P::IfStmtContext *ctx) {
    ast::IfStmt s;
    s.cond = expr(ctx->expr());
    std::vector<P::BlockContext *> blocks = ctx->block();
    if (!blocks.empty()) s.then_body = block(blocks[0]);
    if (ctx->ELSE() != nullptr) {
      s.has_else = true;
      if (blocks.size() >= 2) {
        s.else_body = block(blocks[1]);
      } else if (P::IfStmtContext *chained = ctx->ifStmt(); chained != nullptr) {
        s.else_body.push_back(if_stmt(chained));  // `else if`
      }
    }
    return make_stmt(std::move(s), span(ctx));
  }

  // ------------------------------------------------------------- expressions

  template <typename Node>
  static ast::ExprPtr make_expr(Node node, SourceSpan at) {
    auto e = std::make_unique<ast::Expr>();
    e->node = std::move(node);
    e->span = at;
    return e;
  }

  ast::ExprPtr placeholder(SourceSpan at) { return make_expr(ast::NameExpr{"<error>"}, at); }

  ast::ExprPtr expr(P::ExprContext *ctx) {
    if (ctx == nullptr) return placeholder(span(static_cast<const antlr4::Token *>(nullptr)));
    SourceSpan at = span(ctx);
    if (auto *c = dynamic_cast<P::NameContext *>(ctx)) return name(c, at);
    if (auto *c = dynamic_cast<P::IntContext *>(ctx))
      return make_expr(ast::IntLit{integer(c->INT())}, at);
    if (auto *c = dynamic_cast<P::FloatContext *>(ctx)) return float_literal(c->FLOAT(), at);
    if (auto *c = dynamic_cast<P::BoolContext *>(ctx))
      return make_expr(ast::BoolLit{c->TRUE() != nullptr}, at);
    if (auto *c = dynamic_cast<P::StringContext *>(ctx)) return string_literal(c->STRING(), at);
    if (dynamic_cast<P::NoneLiteralContext *>(ctx) != nullptr) return make_expr(ast::NoneLit{}, at);
    if (auto *c = dynamic_cast<P::ParenOrTupleContext *>(ctx)) {
      std::vector<P::ExprContext *> elements = c->expr();
      if (elements.size() == 1 && c->COMMA().empty()) {
        ast::ExprPtr inner = expr(elements[0]);
        inner->parenthesized = true;
        return inner;
      }
      ast::TupleExpr tuple;
      for (P::ExprContext *e : elements) tuple.elements.push_back(expr(e));
      return make_expr(std::move(tuple), at);
    }
    if (auto *c = dynamic_cast<P::ListContext *>(ctx)) {
      ast::ListExpr list;
      for (P::ExprContext *e : c->expr()) list.elements.push_back(expr(e));
      return make_expr(std::move(list), at);
    }
    if (auto *c = dynamic_cast<P::ApplyContext *>(ctx)) return apply(c, at);
    if (auto *c = dynamic_cast<P::IndexContext *>(ctx)) {
      ast::IndexExpr index;
      index.base = expr(c->expr());
      for (P::SubscriptContext *s : c->subscript()) {
        if (s != nullptr) index.subscripts.push_back(subscript(s));
      }
      return make_expr(std::move(index), at);
    }
    if (auto *c = dynamic_cast<P::MemberContext *>(ctx)) return member(c);
    if (auto *c = dynamic_cast<P::UnaryContext *>(ctx)) {
      bool is_not = c->op != nullptr && c->op->getType() == P::NOT;
      return make_expr(
          ast::UnaryExpr{is_not ? ast::UnaryOpKind::Not : ast::UnaryOpKind::Neg, expr(c->expr())},
          at);
    }
    if (auto *c = dynamic_cast<P::BinaryContext *>(ctx)) return binary(c, at);
    return placeholder(at);
  }

  static bool is_comparison(size_t type) {
    return type == P::LT || type == P::LE || type == P::GT || type == P::GE || type == P::EQ ||
           type == P::NE;
  }

  ast::ExprPtr binary(P::BinaryContext *ctx, SourceSpan at) {
    size_t type = ctx->op != nullptr ? ctx->op->getType() : 0;
    ast::BinaryOpKind op = ast::BinaryOpKind::Add;
    switch (type) {
      case P::PLUS:
        op = ast::BinaryOpKind::Add;
        break;
      case P::MINUS:
        op = ast::BinaryOpKind::Sub;
        break;
      case P::STAR:
        op = ast::BinaryOpKind::Mul;
        break;
      case P::SLASH:
        op = ast::BinaryOpKind::Div;
        break;
      case P::FLOORDIV:
        op = ast::BinaryOpKind::FloorDiv;
        break;
      case P::PERCENT:
        op = ast::BinaryOpKind::Mod;
        break;
      case P::POW:
        op = ast::BinaryOpKind::Pow;
        break;
      case P::AT:
        op = ast::BinaryOpKind::MatMul;
        break;
      case P::LT:
        op = ast::BinaryOpKind::Lt;
        break;
      case P::LE:
        op = ast::BinaryOpKind::Le;
        break;
      case P::GT:
        op = ast::BinaryOpKind::Gt;
        break;
      case P::GE:
        op = ast::BinaryOpKind::Ge;
        break;
      case P::EQ:
        op = ast::BinaryOpKind::Eq;
        break;
      case P::NE:
        op = ast::BinaryOpKind::Ne;
        break;
      case P::AND:
        op = ast::BinaryOpKind::And;
        break;
      case P::OR:
        op = ast::BinaryOpKind::Or;
        break;
      default:
        break;
    }
    P::ExprContext *lhs_ctx = ctx->expr(0);
    if (is_comparison(type)) {
      auto *inner = dynamic_cast<P::BinaryContext *>(lhs_ctx);
      if (inner != nullptr && inner->op != nullptr && is_comparison(inner->op->getType())) {
        error(span(ctx->op),
              "comparison operators cannot be chained: " + quote_source_text(text(inner->op)) +
                  " and " + quote_source_text(text(ctx->op)) + " need parentheses",
              "write `a < b and b < c`, or add parentheses to compare a comparison's result");
      }
    }
    ast::ExprPtr lhs = expr(lhs_ctx);
    ast::ExprPtr rhs = expr(ctx->expr(1));
    return make_expr(ast::BinaryExpr{op, std::move(lhs), std::move(rhs)}, at);
  }

  ast::ExprPtr name(P::NameContext *ctx, SourceSpan at) {
    return make_expr(ast::NameExpr{ctx->IDENT() ? text(ctx->IDENT()) : "<error>"}, at);
  }

  /// `a.b.c`: the members of a bare name make one dotted name (`x.T`,
  /// `std.nn.relu`; lowering tells an attribute from a module member), a
  /// member of anything else is a MemberExpr (`(a @ b).T`). The chain is
  /// walked without recursion: a dotted name is one nesting level, however
  /// long (nesting.h).
  ast::ExprPtr member(P::MemberContext *outer) {
    std::vector<P::MemberContext *> chain{outer};
    P::ExprContext *base = outer->expr();
    while (auto *m = dynamic_cast<P::MemberContext *>(base)) {
      chain.push_back(m);
      base = m->expr();
    }
    ast::ExprPtr result = expr(base);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      P::MemberContext *m = *it;
      const SourceSpan at = span(m);
      ast::Ident member{m->IDENT() ? text(m->IDENT()) : "<error>",
                        m->IDENT() ? span(m->IDENT()) : at};
      auto *name = std::get_if<ast::NameExpr>(&result->node);
      if (name != nullptr && !result->parenthesized && m->IDENT() != nullptr) {
        name->name += '.';
        name->name += member.name;
        result->span = at;
      } else {
        result = make_expr(ast::MemberExpr{std::move(result), std::move(member)}, at);
      }
    }
    return result;
  }

  /// Every call (the grammar's `Apply`): `f(x)` and `std.nn.relu(x)` call a
  /// name, `(a @ b).sum(0)` a method of a value, and `grad(loss, wrt=w)(w, x)`
  /// the function a call names. Only a call of a named function (a
  /// derivative) can be called again.
  ast::ExprPtr apply(P::ApplyContext *ctx, SourceSpan at) {
    ast::CallExpr call;
    call.function = expr(ctx->expr());
    if (auto *name = std::get_if<ast::NameExpr>(&call.function->node);
        name != nullptr && !call.function->parenthesized) {
      call.callee = {std::move(name->name), call.function->span};
      call.function = nullptr;
      call.args = arguments(ctx->argument(), "`" + call.callee.name + "`");
      return make_expr(std::move(call), at);
    }
    if (auto *member = std::get_if<ast::MemberExpr>(&call.function->node);
        member != nullptr && !call.function->parenthesized) {
      call.callee = std::move(member->member);
      call.receiver = std::move(member->base);
      call.function = nullptr;
      call.args = arguments(ctx->argument(), "`" + call.callee.name + "`");
      return make_expr(std::move(call), at);
    }
    const auto *inner = std::get_if<ast::CallExpr>(&call.function->node);
    if (inner == nullptr || inner->function != nullptr || inner->receiver != nullptr ||
        call.function->parenthesized)
      error(span(ctx->call),
            "only a function can be called, and this is a value: a call's result can be called "
            "only when it names a function, like `grad(loss)(x)`");
    call.args = arguments(ctx->argument(), "the derived function");
    return make_expr(std::move(call), at);
  }

  std::vector<ast::Argument> arguments(const std::vector<P::ArgumentContext *> &ctxs,
                                       const std::string &callee) {
    std::vector<ast::Argument> args;
    bool seen_keyword = false;
    for (P::ArgumentContext *a : ctxs) {
      if (a == nullptr) continue;
      ast::Argument arg;
      arg.span = span(a);
      if (a->keyword != nullptr) {
        arg.keyword = text(a->keyword);
        seen_keyword = true;
      } else if (seen_keyword) {
        error(arg.span, "positional argument after a keyword argument in the call to " + callee,
              "put positional arguments first");
      }
      arg.value = expr(a->expr());
      args.push_back(std::move(arg));
    }
    return args;
  }

  ast::Subscript subscript(P::SubscriptContext *ctx) {
    ast::Subscript s;
    s.span = span(ctx);
    if (ctx->newaxis != nullptr) {
      s.is_new_axis = true;
      return s;
    }
    if (ctx->colon1 == nullptr) {
      s.index = expr(ctx->start);
      return s;
    }
    s.is_slice = true;
    if (ctx->start != nullptr) s.start = expr(ctx->start);
    if (ctx->stop != nullptr) s.stop = expr(ctx->stop);
    if (ctx->step != nullptr) s.step = expr(ctx->step);
    return s;
  }

  ast::ExprPtr float_literal(antlr4::tree::TerminalNode *node, SourceSpan at) {
    std::string spelling = text(node);
    double value = 0;
    auto [ptr, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), value);
    if (ec == std::errc::result_out_of_range) {
      if (decimal_magnitude(spelling) > 0) {  // overflow, not underflow
        diags_.error("literal-out-of-range", at,
                     "floating-point literal " + quote_source_text(spelling) +
                         " is too large for a 64-bit float");
      }
      value = 0;  // underflow: the nearest double is zero
    } else if (ec != std::errc() || !std::isfinite(value)) {
      value = 0;
    }
    return make_expr(ast::FloatLit{value, spelling}, at);
  }

  ast::ExprPtr string_literal(antlr4::tree::TerminalNode *node, SourceSpan at) {
    std::string raw = text(node);
    std::string value;
    for (size_t i = 1; i + 1 < raw.size(); ++i) {
      if (raw[i] != '\\') {
        value += raw[i];
        continue;
      }
      char next = raw[i + 1];
      if (next == '"' || next == '\\') {
        value += next;
      } else {
        error({at.file, at.begin + uint32_t(i), at.begin + uint32_t(i) + 2},
              "unknown escape sequence " + quote_source_text(raw.substr(i, 2)) +
                  " in a string literal",
              "only `\\\"` and `\\\\` are escapes");
        value += next;
      }
      ++i;
    }
    return make_expr(ast::StringLit{value}, at);
  }

  SyntaxErrorSink &errors_;
  DiagnosticEngine &diags_;
};

}  // namespace

ast::Module build_module(SpmdParser::Module_Context *tree, SyntaxErrorSink &errors,
                         DiagnosticEngine &diags) {
  return TreeBuilder(errors, diags).module(tree);
}

}  // namespace spmd::frontend_detail
