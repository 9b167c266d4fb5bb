// tests/unit/frontend/format_test.cpp — comment attachment, canonical formatting, the AST dump.
//
// Formatting must be a fixed point (format(parse(format(x))) == format(x)),
// keep every comment, print the minimal parentheses that preserve the tree,
// and produce exactly the canonical layout for a reference program.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "frontend_test_util.h"

using namespace spmd;
using namespace spmd::test;

namespace {

std::string fmt(const std::string &text) {
  Parsed p = parse_text(text);
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  return format_module(p.module);
}

/// The AST dump without positions, to compare trees of different texts.
std::string shape(const std::string &text) {
  Parsed p = parse_text(text);
  std::string dump = dump_ast(p.module, p.sources);
  std::string out;
  for (size_t i = 0; i < dump.size(); ++i) {
    if (dump[i] == ' ' && i + 1 < dump.size() && dump[i + 1] == '<') {
      while (i < dump.size() && dump[i] != '>') ++i;
      continue;
    }
    out += dump[i];
  }
  // Parentheses written in the source are not part of the tree's meaning.
  for (size_t at; (at = out.find(" (parenthesized)")) != std::string::npos;) out.erase(at, 16);
  return out;
}

}  // namespace

TEST_CASE("comments: leading, trailing and end-of-file comments", "[frontend][comments]") {
  Parsed p = parse_text(
      "# header\n#  two spaces\nimport a  # after import\n\n"
      "def f() -> f32[] {  # after brace\n"
      "  # above x\n"
      "  x = 1  # after x\n"
      "  for k in range(2) {\n    y = k\n    # before closing brace\n  }  # after for\n"
      "  return x\n"
      "}\n# tail 1\n# tail 2\n");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  const ast::Decl &imp = p.module.decls[0];
  CHECK(imp.leading_comments == std::vector<std::string>{" header", "  two spaces"});
  CHECK(imp.trailing_comment == " after import");
  const ast::Decl &f = p.module.decls[1];
  CHECK(f.leading_comments == std::vector<std::string>{" after brace"});
  const ast::Stmt &x = p.stmt(1, 0);
  CHECK(x.leading_comments == std::vector<std::string>{" above x"});
  CHECK(x.trailing_comment == " after x");
  const ast::Stmt &loop = p.stmt(1, 1);
  CHECK(loop.trailing_comment == " after for");
  // A comment before a closing brace moves to the next statement.
  CHECK(p.stmt(1, 2).leading_comments == std::vector<std::string>{" before closing brace"});
  CHECK(p.module.trailing_comments == std::vector<std::string>{" tail 1", " tail 2"});
}

TEST_CASE("format: a signature longer than 100 columns wraps", "[format]") {
  std::string src =
      "mesh M = (data: 2, model: 4)\n"
      "shmap loss(a_long_parameter: f32[16, 64] @ P(data, model), another_one: f32[64, 16] @ "
      "P(model), "
      "third: f32[16] @ P(), fourth: f32[16, 16] @ P(data)) -> f32[] @ P() on M { return 0.0 }\n";
  std::string out = fmt(src);
  CHECK(out.find(
            "shmap loss(a_long_parameter: f32[16, 64] @ P(data, model), another_one: f32[64, 16] "
            "@ P(model),\n"
            "           third: f32[16] @ P(), fourth: f32[16, 16] @ P(data)) -> f32[] @ P() on M "
            "{\n") != std::string::npos);
  for (size_t start = 0, end; (end = out.find('\n', start)) != std::string::npos; start = end + 1)
    CHECK(end - start <= 100);
  CHECK(fmt(out) == out);  // idempotent
}

TEST_CASE("format: canonical layout of a reference program", "[frontend][format]") {
  std::string source =
      "# The example.\nimport std.nn\nimport std.la # linear algebra\nmesh M=(i:8)\n"
      "mesh M2 = (data: 2, model: 4)\n"
      "def g(x:f32[n,3])->f32[]{return sum(2.0*x)}\n"
      "[[no_auto_pbroadcast, other]] shmap f1(x: f32[32, 3] @ P(i), y: f32[8, 4] @ P((data, "
      "model), None), z: f32[] @ P( ))\n  -> (f32[] @ P(), f32[32, 3] @ P(i)) on M {\n"
      "  w: f32[]{i} = g(x); a, b = h(x)\n"
      "  v = x[0:4, :, ::2, 3] @ y\n"
      "  for k in range(4) { acc = acc + k }\n  for k in range(1, 4) { }\n"
      "  if c > 0.0 { r = a } else { r = b }\n  if c { } else if d { } else { r = 1 }\n"
      "  return psum(w, i), x\n}\n";
  CHECK(fmt(source) ==
        "# The example.\n"
        "import std.nn\n"
        "import std.la  # linear algebra\n"
        "\n"
        "mesh M = (i: 8)\n"
        "mesh M2 = (data: 2, model: 4)\n"
        "\n"
        "def g(x: f32[n, 3]) -> f32[] {\n"
        "  return sum(2.0 * x)\n"
        "}\n"
        "\n"
        "[[no_auto_pbroadcast, other]]\n"
        "shmap f1(x: f32[32, 3] @ P(i), y: f32[8, 4] @ P((data, model), None), z: f32[] @ P())\n"
        "    -> (f32[] @ P(), f32[32, 3] @ P(i)) on M {\n"
        "  w: f32[]{i} = g(x)\n"
        "  a, b = h(x)\n"
        "  v = x[0:4, :, ::2, 3] @ y\n"
        "  for k in range(4) {\n"
        "    acc = acc + k\n"
        "  }\n"
        "  for k in range(1, 4) {}\n"
        "  if c > 0.0 {\n"
        "    r = a\n"
        "  } else {\n"
        "    r = b\n"
        "  }\n"
        "  if c {} else if d {} else {\n"
        "    r = 1\n"
        "  }\n"
        "  return psum(w, i), x\n"
        "}\n");
}

TEST_CASE("format: minimal parentheses", "[frontend][format]") {
  auto expr = [](const std::string &e) {
    Parsed p = parse_text("def f() -> f32[] { x = " + e + " }");
    INFO(p.rendered());
    REQUIRE_FALSE(p.diags.has_errors());
    return format_expr(p.value(0, 0));
  };
  CHECK(expr("((a + b)) * c") == "(a + b) * c");
  CHECK(expr("a + (b * c)") == "a + b * c");
  CHECK(expr("a - (b - c)") == "a - (b - c)");
  CHECK(expr("(a - b) - c") == "a - b - c");
  CHECK(expr("-(x ** 2)") == "-x ** 2");
  CHECK(expr("(-x) ** 2") == "(-x) ** 2");
  CHECK(expr("a ** (b ** c)") == "a ** b ** c");
  CHECK(expr("(a ** b) ** c") == "(a ** b) ** c");
  CHECK(expr("2 ** -x") == "2 ** -x");
  CHECK(expr("-(-x)") == "- -x");
  CHECK(expr("-(not x)") == "-(not x)");
  CHECK(expr("(a < b) < c") == "(a < b) < c");
  CHECK(expr("not (a and b)") == "not (a and b)");
  CHECK(expr("(not a) and b") == "not a and b");
  CHECK(expr("(a + b)[0]") == "(a + b)[0]");
  CHECK(expr("(x)[0]") == "x[0]");
  CHECK(expr("f(x=(1, 2), y=[(3,)])") == "f(x=(1, 2), y=[(3,)])");
  CHECK(expr("x[1:, :2, ::3, 1:2:3, :]") == "x[1:, :2, ::3, 1:2:3, :]");
  CHECK(expr("\"a\\\"b\\\\c\"") == "\"a\\\"b\\\\c\"");
  CHECK(expr("1.50e+3 + .5 + 2.") == "1.50e+3 + .5 + 2.");
  // A number before `.member`: `2.astype` would read back as the float `2.`.
  CHECK(expr("2 .astype(f32)") == "(2).astype(f32)");
  CHECK(expr("2.5 .T + (a + b).T + a.T") == "(2.5).T + (a + b).T + a.T");
}

TEST_CASE("format: round trip and idempotence over a corpus", "[frontend][format]") {
  const std::vector<std::string> corpus = {
      "",
      "# only a comment\n",
      "import a.b.c\nimport d",
      "mesh M = (x: 1, y: 2, z: 3,)",
      "def f(a: f32[], b: bf16[2, n],) -> (f32[], i32[3],) { return a, b }",
      "def g[T, U,](a: T[..., n], b: U[...], c: T[n, ...]) -> T[...] { return a }",
      "def f() -> f32[] { x = -a - -b + not c * d ** -e ** f }",
      "def f() -> f32[] { x = (a or b) and (c or not d) }",
      "def f() -> f32[] { x = a[b[0]][1:2][::-1] }",
      "def f() -> f32[] { x = f(g(h(1), k=2), l=[1, 2, [3]], m=(), n=(1,)) }",
      "def f() -> f32[] { if a { if b { c = 1 } else if d { c = 2 } } else { c = 3 } }",
      "def f() -> f32[] { for i in range(n) { for j in range(i, n) { s = s + i * j } } }",
      "def f() -> f32[] {\n  # a\n  x = 1  # b\n  # c\n}\n# d\n",
      "def f() -> f32[] { if a { # x\n } else { # y\n } }",
      "def f() -> f32[] { if a { b = 1 } else { if c { b = 2 } # t\n } # u\n }",
      "def f() -> f32[] { if a { b = 1 } else # e\n if c { b = 2 } }",
      "[[a]] [[b, c]] shmap s(x: f32[4] @ P((i, j),), y: f32[] @ P(None, k)) -> f32[] @ P() on "
      "M2 { return x }",
      "def f() -> f32[] { x = \"é\" } # ünï\n",
      "def f() -> f32[] { x = a < b == (c < d) }",
      "def f(x: f32[\n2]) # sig\n -> f32[] { x = 1; y = 2; return }",
  };
  for (const std::string &text : corpus) {
    INFO("source: " << text);
    Parsed p = parse_text(text);
    INFO(p.rendered());
    bool chained = text.find("a < b ==") != std::string::npos;
    if (chained) {
      CHECK(p.diags.has_errors());
      continue;
    }
    REQUIRE_FALSE(p.diags.has_errors());
    std::string once = format_module(p.module);
    Parsed again = parse_text(once);
    INFO("formatted: " << once);
    REQUIRE_FALSE(again.diags.has_errors());
    CHECK(format_module(again.module) == once);
    CHECK(shape(once) == shape(text));
  }
}

TEST_CASE("format: every comment survives formatting", "[frontend][format][comments]") {
  std::string text =
      "# 1\nimport a # 2\n# 3\nmesh M = (i: 2) # 4\n[[x]] # 5\ndef f( # 6\n x: f32[]) -> f32[] { # "
      "7\n"
      "  # 8\n  y = x # 9\n  if y { # 10\n  } # 11\n  return y # 12\n  # 13\n} # 14\n# 15\n";
  std::string out = fmt(text);
  for (int i = 1; i <= 15; ++i) {
    INFO("comment " << i << " in\n" << out);
    CHECK(out.find("# " + std::to_string(i) + "\n") != std::string::npos);
  }
  CHECK(fmt(out) == out);
}

TEST_CASE("dump_ast: one node per line with positions", "[frontend][format]") {
  Parsed p = parse_text("mesh M = (i: 2)\ndef f(x: f32[2]) -> f32[] {\n  return -x[0]\n}\n");
  REQUIRE_FALSE(p.diags.has_errors());
  CHECK(dump_ast(p.module, p.sources) ==
        "Module\n"
        "  MeshDecl M <1:1>\n"
        "    Axis i = 2 <1:11>\n"
        "  FuncDecl def f <2:1>\n"
        "    Param x: f32[2] <2:7>\n"
        "    Result f32[] <2:21>\n"
        "    Return <3:3>\n"
        "      Unary - <3:10>\n"
        "        Index <3:11>\n"
        "          Name x <3:11>\n"
        "          Int 0 <3:13>\n");
}

TEST_CASE("loop attributes and steps format canonically", "[frontend][loops]") {
  // `[[` after an expression opens the next statement's attributes, not a subscript.
  const std::string text =
      "def f(x: f32[4]) -> f32[4] { y = x [[unroll, remat]] for k in range(8, -1, -2) "
      "{ y = y * x[k] }; return y }\n";
  const std::string once = fmt(text);
  CHECK(once ==
        "def f(x: f32[4]) -> f32[4] {\n"
        "  y = x\n"
        "  [[unroll, remat]]\n"
        "  for k in range(8, -1, -2) {\n"
        "    y = y * x[k]\n"
        "  }\n"
        "  return y\n"
        "}\n");
  CHECK(fmt(once) == once);
  CHECK(shape(text) == shape(once));
  CHECK(shape(text).find("Attribute remat") != std::string::npos);
}

TEST_CASE("format: type parameters and `...` print canonically", "[frontend][format]") {
  Parsed p = parse_text("def  g[T ,U](a:T[...,n],b:U[ ... ])->T[...]{return a}");
  INFO(p.rendered());
  REQUIRE_FALSE(p.diags.has_errors());
  CHECK(format_module(p.module) ==
        "def g[T, U](a: T[..., n], b: U[...]) -> T[...] {\n  return a\n}\n");
}
