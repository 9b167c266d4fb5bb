// tests/unit/frontend/frontend_test_util.h — helpers shared by the frontend unit tests.
//
// parse_text() parses a string as a file named "test.spmd" and keeps the
// SourceManager and diagnostics alongside the module; sexpr() prints an
// expression as a fully parenthesized S-expression so tests can check tree
// structure (precedence, associativity) in one string.
#pragma once

#include <string>
#include <variant>

#include "frontend/ast.h"
#include "frontend/format.h"
#include "frontend/parser.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace spmd::test {

struct Parsed {
  SourceManager sources;
  DiagnosticEngine diags;
  FileId file = kNoFile;
  ast::Module module;

  std::string rendered() const { return render_diagnostics(diags, sources); }
  /// "line:col" of a span.
  std::string at(SourceSpan span) const {
    SourceLocation loc = sources.location(span);
    return std::to_string(loc.line) + ":" + std::to_string(loc.column);
  }
  const ast::FuncDecl &func(size_t i) const {
    return std::get<ast::FuncDecl>(module.decls.at(i).node);
  }
  const ast::Stmt &stmt(size_t decl, size_t i) const { return *func(decl).body.at(i); }
  /// The value of assignment `i` in the body of declaration `decl`.
  const ast::Expr &value(size_t decl, size_t i) const {
    return *std::get<ast::AssignStmt>(stmt(decl, i).node).value;
  }
};

inline Parsed parse_text(const std::string &text, const std::string &path = "test.spmd") {
  Parsed p;
  p.file = p.sources.add(path, text);
  p.module = parse(p.sources, p.file, p.diags);
  return p;
}

/// Parses `def f() -> f32[] { x = EXPR }` and returns the S-expression of EXPR
/// (or the rendered diagnostics when there are errors).
inline std::string sexpr(const ast::Expr &e);

inline std::string sexpr_of(const std::string &expr_text) {
  Parsed p = parse_text("def f() -> f32[] { x = " + expr_text + " }");
  if (p.diags.has_errors()) return "ERROR: " + p.rendered();
  return sexpr(p.value(0, 0));
}

inline std::string sexpr(const ast::Expr &e) {
  using namespace ast;
  static const char *bin[] = {"+", "-",  "*", "/",  "//", "%",  "**",  "@",
                              "<", "<=", ">", ">=", "==", "!=", "and", "or"};
  return std::visit(
      [&](const auto &n) -> std::string {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, NameExpr>) return n.name;
        if constexpr (std::is_same_v<T, IntLit>) return std::to_string(n.value);
        if constexpr (std::is_same_v<T, FloatLit>) return n.spelling;
        if constexpr (std::is_same_v<T, BoolLit>) return n.value ? "true" : "false";
        if constexpr (std::is_same_v<T, StringLit>) return "\"" + n.value + "\"";
        if constexpr (std::is_same_v<T, UnaryExpr>)
          return std::string("(") + (n.op == UnaryOpKind::Neg ? "neg " : "not ") +
                 sexpr(*n.operand) + ")";
        if constexpr (std::is_same_v<T, BinaryExpr>)
          return std::string("(") + bin[static_cast<int>(n.op)] + " " + sexpr(*n.lhs) + " " +
                 sexpr(*n.rhs) + ")";
        if constexpr (std::is_same_v<T, CallExpr>) {
          std::string s = "(call " + n.callee.name;
          if (n.receiver) s = "(method " + sexpr(*n.receiver) + " " + n.callee.name;
          for (const Argument &a : n.args)
            s += " " + (a.keyword.empty() ? "" : a.keyword + "=") + sexpr(*a.value);
          return s + ")";
        }
        if constexpr (std::is_same_v<T, IndexExpr>) {
          std::string s = "(index " + sexpr(*n.base);
          for (const Subscript &sub : n.subscripts) {
            if (sub.is_new_axis) {
              s += " None";
              continue;
            }
            if (!sub.is_slice) {
              s += " " + sexpr(*sub.index);
              continue;
            }
            s += " (slice";
            for (const ExprPtr *part : {&sub.start, &sub.stop, &sub.step})
              s += " " + (*part ? sexpr(**part) : std::string("_"));
            s += ")";
          }
          return s + ")";
        }
        if constexpr (std::is_same_v<T, MemberExpr>)
          return "(member " + sexpr(*n.base) + " " + n.member.name + ")";
        if constexpr (std::is_same_v<T, TupleExpr>) {
          std::string s = "(tuple";
          for (const ExprPtr &x : n.elements) s += " " + sexpr(*x);
          return s + ")";
        }
        if constexpr (std::is_same_v<T, ListExpr>) {
          std::string s = "(list";
          for (const ExprPtr &x : n.elements) s += " " + sexpr(*x);
          return s + ")";
        }
        return "?";
      },
      e.node);
}

}  // namespace spmd::test
