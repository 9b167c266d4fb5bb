// tests/unit/frontend/parser_test.cpp — the parser builds the right AST for each construct.
//
// Declarations, signatures, specs, statements and expressions are checked
// node by node (not just "no errors"), including spans, operator precedence
// and associativity, literal values and the permissive-grammar checks the
// builder performs (specs and `on` only on shmap, `P(...)`).
#include <catch2/catch.hpp>

#include "frontend_test_util.h"

using namespace spmd;
using namespace spmd::test;

namespace {

const char *kExample = R"(# comment to end of line
import std.nn                       # dotted module path

mesh M = (i: 8)
mesh M2 = (data: 2, model: 4)

def g(x: f32[n, 3]) -> f32[] {      # dims: integer literals or symbol names
  return sum(2.0 * x)
}

[[no_auto_pbroadcast]]
shmap f1(x: f32[32, 3] @ P(i), y: f32[8, 4] @ P((data, model), None), z: f32[] @ P())
    -> (f32[] @ P(), f32[32, 3] @ P(i)) on M {
  w: f32[]{i} = g(x)
  a, b = h(x)
  v = x[0:4, :, ::2, 3] @ y
  for k in range(4) { acc = acc + k }
  for k in range(1, 4) { }
  if c > 0.0 { r = a } else { r = b }
  return psum(w, i), x
}
)";

}  // namespace

TEST_CASE("parser: the language example parses to the expected declarations",
          "[frontend][parser]") {
  Parsed p = parse_text(kExample);
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  REQUIRE(p.module.decls.size() == 5);
  CHECK(p.module.file == p.file);

  const auto &imp = std::get<ast::ImportDecl>(p.module.decls[0].node);
  REQUIRE(imp.path.size() == 2);
  CHECK(imp.path[0].name == "std");
  CHECK(imp.path[1].name == "nn");
  CHECK(p.at(p.module.decls[0].span) == "2:1");
  CHECK(p.at(imp.path[1].span) == "2:12");

  const auto &m = std::get<ast::MeshDecl>(p.module.decls[1].node);
  CHECK(m.name.name == "M");
  REQUIRE(m.axes.size() == 1);
  CHECK(m.axes[0].name.name == "i");
  CHECK(m.axes[0].size == 8);
  CHECK(p.at(m.axes[0].size_span) == "4:14");

  const auto &m2 = std::get<ast::MeshDecl>(p.module.decls[2].node);
  REQUIRE(m2.axes.size() == 2);
  CHECK(m2.axes[1].name.name == "model");
  CHECK(m2.axes[1].size == 4);

  const ast::FuncDecl &g = p.func(3);
  CHECK(g.kind == ast::FuncKind::Def);
  CHECK(g.name.name == "g");
  REQUIRE(g.params.size() == 1);
  CHECK(g.params[0].name.name == "x");
  CHECK(g.params[0].type.dtype.name == "f32");
  REQUIRE(g.params[0].type.dims.size() == 2);
  CHECK(std::get<std::string>(g.params[0].type.dims[0].value) == "n");
  CHECK(std::get<int64_t>(g.params[0].type.dims[1].value) == 3);
  CHECK_FALSE(g.params[0].spec.has_value());
  REQUIRE(g.results.size() == 1);
  CHECK_FALSE(g.results_parenthesized);
  CHECK(g.results[0].type.dims.empty());
  CHECK_FALSE(g.mesh.has_value());
  REQUIRE(g.body.size() == 1);
  const auto &ret = std::get<ast::ReturnStmt>(g.body[0]->node);
  REQUIRE(ret.values.size() == 1);
  CHECK(sexpr(*ret.values[0]) == "(call sum (* 2.0 x))");

  const ast::FuncDecl &f = p.func(4);
  CHECK(f.kind == ast::FuncKind::Shmap);
  CHECK(f.name.name == "f1");
  REQUIRE(f.attributes.size() == 1);
  CHECK(f.attributes[0].name == "no_auto_pbroadcast");
  REQUIRE(f.params.size() == 3);
  REQUIRE(f.params[1].spec.has_value());
  const ast::SpecExpr &ys = *f.params[1].spec;
  REQUIRE(ys.dims.size() == 2);
  REQUIRE(ys.dims[0].axes.size() == 2);
  CHECK(ys.dims[0].axes[0].name == "data");
  CHECK(ys.dims[0].axes[1].name == "model");
  CHECK(ys.dims[1].axes.empty());         // None
  CHECK(f.params[2].spec->dims.empty());  // P()
  CHECK(f.results_parenthesized);
  REQUIRE(f.results.size() == 2);
  REQUIRE(f.results[1].spec.has_value());
  REQUIRE(f.results[1].spec->dims.size() == 1);
  CHECK(f.results[1].spec->dims[0].axes[0].name == "i");
  REQUIRE(f.mesh.has_value());
  CHECK(f.mesh->name == "M");
  CHECK(p.at(f.mesh->span) == "13:44");
  CHECK(f.body.size() == 7);
  // The declaration's span starts at its attributes.
  CHECK(p.at(p.module.decls[4].span) == "11:1");
}

TEST_CASE("parser: statements", "[frontend][parser]") {
  Parsed p = parse_text(kExample);
  REQUIRE_FALSE(p.diags.has_errors());
  const ast::FuncDecl &f = p.func(4);

  const auto &w = std::get<ast::AssignStmt>(f.body[0]->node);
  REQUIRE(w.targets.size() == 1);
  CHECK(w.targets[0].name.name == "w");
  REQUIRE(w.targets[0].annotation.has_value());
  REQUIRE(w.targets[0].annotation->variance.has_value());
  REQUIRE(w.targets[0].annotation->variance->size() == 1);
  CHECK((*w.targets[0].annotation->variance)[0].name == "i");
  CHECK(p.at(f.body[0]->span) == "14:3");
  CHECK(p.at(w.value->span) == "14:17");

  const auto &ab = std::get<ast::AssignStmt>(f.body[1]->node);
  REQUIRE(ab.targets.size() == 2);
  CHECK(ab.targets[1].name.name == "b");
  CHECK_FALSE(ab.targets[0].annotation.has_value());

  CHECK(sexpr(*std::get<ast::AssignStmt>(f.body[2]->node).value) ==
        "(@ (index x (slice 0 4 _) (slice _ _ _) (slice _ _ 2) 3) y)");

  const auto &loop = std::get<ast::ForStmt>(f.body[3]->node);
  CHECK(loop.var.name == "k");
  CHECK(loop.start == nullptr);
  CHECK(sexpr(*loop.stop) == "4");
  REQUIRE(loop.body.size() == 1);
  CHECK(sexpr(*std::get<ast::AssignStmt>(loop.body[0]->node).value) == "(+ acc k)");

  const auto &loop2 = std::get<ast::ForStmt>(f.body[4]->node);
  REQUIRE(loop2.start != nullptr);
  CHECK(sexpr(*loop2.start) == "1");
  CHECK(loop2.body.empty());

  const auto &branch = std::get<ast::IfStmt>(f.body[5]->node);
  CHECK(sexpr(*branch.cond) == "(> c 0.0)");
  CHECK(branch.has_else);
  CHECK(branch.then_body.size() == 1);
  CHECK(branch.else_body.size() == 1);

  const auto &ret = std::get<ast::ReturnStmt>(f.body[6]->node);
  REQUIRE(ret.values.size() == 2);
  CHECK(sexpr(*ret.values[0]) == "(call psum w i)");
  CHECK(p.at(ret.values[1]->span) == "20:22");
}

TEST_CASE("parser: newlines are whitespace and `;` optionally ends a statement",
          "[frontend][parser]") {
  Parsed p = parse_text("def f(x: f32[]) -> f32[] { a = x; b = a c = b\n\n return\n c; }");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  REQUIRE(p.func(0).body.size() == 4);
  CHECK(std::get<ast::ReturnStmt>(p.stmt(0, 3).node).values.size() == 1);

  Parsed q = parse_text("def f(\n  x: f32[\n 3]\n) -> f32[]\n{\n return x\n}");
  CHECK_FALSE(q.diags.has_errors());
}

TEST_CASE("parser: if without else, else if, empty blocks", "[frontend][parser]") {
  Parsed p =
      parse_text("def f() -> f32[] { if a { } if b { x = 1 } else if c { x = 2 } else { x = 3 } }");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  const auto &first = std::get<ast::IfStmt>(p.stmt(0, 0).node);
  CHECK_FALSE(first.has_else);
  CHECK(first.then_body.empty());
  const auto &second = std::get<ast::IfStmt>(p.stmt(0, 1).node);
  REQUIRE(second.else_body.size() == 1);
  const auto &nested = std::get<ast::IfStmt>(second.else_body[0]->node);
  CHECK(sexpr(*nested.cond) == "c");
  CHECK(nested.has_else);
}

TEST_CASE("parser: operator precedence and associativity", "[frontend][parser][precedence]") {
  CHECK(sexpr_of("-x**2") == "(neg (** x 2))");
  CHECK(sexpr_of("a+b*c") == "(+ a (* b c))");
  CHECK(sexpr_of("a@b+c") == "(+ (@ a b) c)");
  CHECK(sexpr_of("a*b@c/d") == "(/ (@ (* a b) c) d)");
  CHECK(sexpr_of("a-b-c") == "(- (- a b) c)");
  CHECK(sexpr_of("a**b**c") == "(** a (** b c))");
  CHECK(sexpr_of("2**-x") == "(** 2 (neg x))");
  CHECK(sexpr_of("(-x)**2") == "(** (neg x) 2)");
  CHECK(sexpr_of("-a*b") == "(* (neg a) b)");
  CHECK(sexpr_of("a + b < c * d") == "(< (+ a b) (* c d))");
  CHECK(sexpr_of("not a == b") == "(not (== a b))");
  CHECK(sexpr_of("not a and b or c") == "(or (and (not a) b) c)");
  CHECK(sexpr_of("a or b and c") == "(or a (and b c))");
  CHECK(sexpr_of("-x[0]") == "(neg (index x 0))");
  CHECK(sexpr_of("f(x)[1:]") == "(index (call f x) (slice 1 _ _))");
  CHECK(sexpr_of("(a < b) < c") == "(< (< a b) c)");
  CHECK(sexpr_of("a <= b") == "(<= a b)");
  CHECK(sexpr_of("a != b") == "(!= a b)");
  CHECK(sexpr_of("a >= b") == "(>= a b)");
}

TEST_CASE("parser: chained comparisons are a syntax error", "[frontend][parser][precedence]") {
  Parsed p = parse_text("def f() -> f32[] { x = a < b < c }");
  REQUIRE(p.diags.num_errors() == 1);
  const Diagnostic &d = p.diags.all()[0];
  CHECK(d.code == "syntax-error");
  CHECK(d.message.find("cannot be chained") != std::string::npos);
  CHECK(p.at(d.span) == "1:30");
  Parsed q = parse_text("def f() -> f32[] { x = a == b != c }");
  CHECK(q.diags.num_errors() == 1);
}

TEST_CASE("parser: atoms and literals", "[frontend][parser]") {
  CHECK(sexpr_of("nn.relu(x)") == "(call nn.relu x)");
  CHECK(sexpr_of("std.nn.layer") == "std.nn.layer");
  CHECK(sexpr_of("(a, b)") == "(tuple a b)");
  CHECK(sexpr_of("(a,)") == "(tuple a)");
  CHECK(sexpr_of("()") == "(tuple)");
  CHECK(sexpr_of("[(0, 1), (1, 2)]") == "(list (tuple 0 1) (tuple 1 2))");
  CHECK(sexpr_of("[]") == "(list)");
  CHECK(sexpr_of("true") == "true");
  CHECK(sexpr_of("false") == "false");
  CHECK(sexpr_of("einsum(\"ij,jk->ik\", a, b)") == "(call einsum \"ij,jk->ik\" a b)");
  CHECK(sexpr_of("f(a, axis=0, name=\"x\")") == "(call f a axis=0 name=\"x\")");
  CHECK(sexpr_of("f()") == "(call f)");
  CHECK(sexpr_of("f(a,)") == "(call f a)");
  CHECK(sexpr_of("x[:, 1:2:3, :4]") == "(index x (slice _ _ _) (slice 1 2 3) (slice _ 4 _))");

  Parsed p = parse_text(
      "def f() -> f32[] { a = 1.0 b = 2. c = .5 d = 1e-3 e = 2.5E+4 g = 42 h = \"q\\\"\\\\\" }");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  auto float_of = [&](size_t i) { return std::get<ast::FloatLit>(p.value(0, i).node); };
  CHECK(float_of(0).value == 1.0);
  CHECK(float_of(1).value == 2.0);
  CHECK(float_of(1).spelling == "2.");
  CHECK(float_of(2).value == 0.5);
  CHECK(float_of(3).value == Approx(1e-3));
  CHECK(float_of(4).value == 25000.0);
  CHECK(float_of(4).spelling == "2.5E+4");
  CHECK(std::get<ast::IntLit>(p.value(0, 5).node).value == 42);
  CHECK(std::get<ast::StringLit>(p.value(0, 6).node).value == "q\"\\");
}

TEST_CASE("parser: parenthesized expressions are marked", "[frontend][parser]") {
  Parsed p = parse_text("def f() -> f32[] { x = (a + b) * c }");
  REQUIRE_FALSE(p.diags.has_errors());
  const auto &mul = std::get<ast::BinaryExpr>(p.value(0, 0).node);
  CHECK(mul.lhs->parenthesized);
  CHECK_FALSE(mul.rhs->parenthesized);
  CHECK_FALSE(p.value(0, 0).parenthesized);
}

TEST_CASE("parser: literals out of range are diagnosed without crashing", "[frontend][parser]") {
  Parsed p = parse_text(
      "def f() -> f32[] { a = 99999999999999999999 b = 1e999 c = 1e-999 d = 9223372036854775807 }");
  REQUIRE(p.diags.num_errors() == 2);
  CHECK(p.diags.all()[0].code == "literal-out-of-range");
  CHECK(p.at(p.diags.all()[0].span) == "1:24");
  CHECK(p.diags.all()[1].code == "literal-out-of-range");
  CHECK(p.at(p.diags.all()[1].span) == "1:49");
  CHECK(std::get<ast::FloatLit>(p.value(0, 2).node).value == 0.0);  // underflow is fine
  CHECK(std::get<ast::IntLit>(p.value(0, 3).node).value == INT64_MAX);

  Parsed q = parse_text(
      "mesh M = (i: 123456789012345678901234567890)\n"
      "def f(x: f32[99999999999999999999]) -> f32[] { return x }");
  CHECK(q.diags.num_errors() == 2);
}

TEST_CASE("parser: signature checks for def and shmap", "[frontend][parser][signature]") {
  SECTION("one unparenthesized shmap result") {
    Parsed p =
        parse_text("mesh M = (i: 2)\nshmap f(x: f32[4] @ P(i)) -> f32[4] @ P(i) on M { return x }");
    REQUIRE_FALSE(p.diags.has_errors());
    CHECK_FALSE(p.func(1).results_parenthesized);
    REQUIRE(p.func(1).results.size() == 1);
    CHECK(p.func(1).results[0].spec.has_value());
  }
  SECTION("one parenthesized def result") {
    Parsed p = parse_text("def f(x: f32[4]) -> (f32[4]) { return x }");
    REQUIRE_FALSE(p.diags.has_errors());
    CHECK(p.func(0).results_parenthesized);
  }
  SECTION("missing spec on a shmap parameter") {
    Parsed p = parse_text("shmap f(x: f32[4]) -> f32[] @ P() on M { return x }");
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.diags.all()[0].code == "syntax-error");
    CHECK(p.diags.all()[0].message.find("parameter `x`") != std::string::npos);
    CHECK(p.at(p.diags.all()[0].span) == "1:18");
  }
  SECTION("missing spec on a shmap result and missing `on`") {
    Parsed p = parse_text("shmap f(x: f32[4] @ P()) -> f32[] { return x }");
    REQUIRE(p.diags.num_errors() == 2);
    CHECK(p.diags.all()[1].message.find("on MESH") != std::string::npos);
    CHECK(p.at(p.diags.all()[1].span) == "1:35");
  }
  SECTION("spec and `on` on a def") {
    Parsed p = parse_text("def f(x: f32[4] @ P()) -> f32[] on M { return x }");
    REQUIRE(p.diags.num_errors() == 2);
    CHECK(p.at(p.diags.all()[0].span) == "1:19");
    CHECK(p.at(p.diags.all()[1].span) == "1:33");
  }
  SECTION("the spec constructor must be P") {
    Parsed p = parse_text("shmap f(x: f32[4] @ Q(i)) -> f32[] @ P() on M { return x }");
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.diags.all()[0].message.find("`Q(...)`") != std::string::npos);
  }
  SECTION("variance sets are for local variables only") {
    Parsed p = parse_text("def f(x: f32[4]{i}) -> f32[] { return x }");
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.at(p.diags.all()[0].span) == "1:16");
  }
  SECTION("empty variance set") {
    Parsed p = parse_text("def f() -> f32[] { y: f32[]{} = 1.0 }");
    REQUIRE_FALSE(p.diags.has_errors());
    const auto &a = std::get<ast::AssignStmt>(p.stmt(0, 0).node);
    REQUIRE(a.targets[0].annotation->variance.has_value());
    CHECK(a.targets[0].annotation->variance->empty());
  }
  SECTION("keyword arguments come last") {
    Parsed p = parse_text("def f() -> f32[] { y = g(a=1, b) }");
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.at(p.diags.all()[0].span) == "1:31");
  }
}

TEST_CASE("parser: keywords are reserved, P is not a keyword, None is an expression",
          "[frontend][parser]") {
  CHECK(parse_text("def f() -> f32[] { range = 1 }").diags.has_errors());
  CHECK(parse_text("def f() -> f32[] { None = 1 }").diags.has_errors());
  CHECK(parse_text("def f() -> f32[] { sharded = 1 }").diags.has_errors());
  CHECK_FALSE(parse_text("def f() -> f32[] { P = 1 }").diags.has_errors());
  // `None` parses anywhere an expression can (a spec argument of constrain);
  // lowering rejects it outside a partition spec.
  Parsed none = parse_text("def f() -> f32[] { x = None }");
  REQUIRE_FALSE(none.diags.has_errors());
  CHECK(std::holds_alternative<ast::NoneLit>(none.value(0, 0).node));
}

TEST_CASE("parser: sharded functions, auto specs", "[frontend][parser][sharding]") {
  Parsed p = parse_text(
      "mesh M = (i: 2)\n"
      "sharded f(x: f32[4] @ P(i), w: f32[4] @ auto) -> f32[4] @ auto on M {\n"
      "  return constrain(x * w, P(None))\n"
      "}\n");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  const auto &f = std::get<ast::FuncDecl>(p.module.decls.at(1).node);
  CHECK(f.kind == ast::FuncKind::Sharded);
  REQUIRE(f.params.size() == 2);
  CHECK_FALSE(f.params[0].spec->is_auto);
  CHECK(f.params[1].spec->is_auto);
  CHECK(f.results.at(0).spec->is_auto);
  // `auto` needs a sharded function; a sharded function needs specs and a mesh.
  CHECK(parse_text("mesh M = (i: 2)\nshmap f(x: f32[4] @ auto) -> f32[4] @ P() on M { return x }")
            .diags.has_errors());
  CHECK(parse_text("mesh M = (i: 2)\nsharded f(x: f32[4]) -> f32[4] @ P() on M { return x }")
            .diags.has_errors());
  CHECK(parse_text("sharded f(x: f32[4] @ P()) -> f32[4] @ P() { return x }").diags.has_errors());
}

TEST_CASE("parser: empty and comment-only files", "[frontend][parser]") {
  Parsed empty = parse_text("");
  CHECK_FALSE(empty.diags.has_errors());
  CHECK(empty.module.decls.empty());
  Parsed comments = parse_text("# just a comment\n\n#another\n");
  CHECK_FALSE(comments.diags.has_errors());
  REQUIRE(comments.module.trailing_comments.size() == 2);
  CHECK(comments.module.trailing_comments[0] == " just a comment");
  CHECK(comments.module.trailing_comments[1] == "another");
}

TEST_CASE("parser: spans are byte offsets, also after non-ASCII text",
          "[frontend][parser][spans]") {
  // "é" is two bytes in UTF-8; the column of `x` counts bytes.
  Parsed p = parse_text("# café\ndef f() -> f32[] { y = \"é\" + x }");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  const auto &add = std::get<ast::BinaryExpr>(p.value(0, 0).node);
  CHECK(p.at(add.rhs->span) == "2:31");
  CHECK(add.rhs->span.begin == 8 + 30);
  CHECK(add.rhs->span.end == add.rhs->span.begin + 1);
  CHECK(std::get<ast::StringLit>(add.lhs->node).value == "é");
  CHECK(p.module.decls[0].leading_comments.at(0) == " café");
  // A span covers the whole construct.
  CHECK(p.value(0, 0).span.end - p.value(0, 0).span.begin == std::string("\"é\" + x").size());
}
