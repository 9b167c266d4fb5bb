// tests/unit/frontend/diagnostics_test.cpp — source locations, diagnostic rendering, syntax errors.
//
// Checks SourceFile's line/column mapping, the exact rendered text of
// diagnostics (header, excerpt, caret line, notes, help, internal errors,
// spanless ones), and that malformed input — several errors, bad bytes, NUL,
// unterminated strings, deep nesting, truncated files — is reported with
// located `syntax-error` / `nesting-too-deep` diagnostics and never crashes.
#include <catch2/catch.hpp>
#include <string>

#include "frontend_test_util.h"

using namespace spmd;
using namespace spmd::test;

TEST_CASE("source: line and column of byte offsets", "[frontend][source]") {
  SourceFile f("a.spmd", "ab\ncd\r\n\nlast");
  CHECK(f.line_column(0) == std::make_pair(1u, 1u));
  CHECK(f.line_column(2) == std::make_pair(1u, 3u));
  CHECK(f.line_column(3) == std::make_pair(2u, 1u));
  CHECK(f.line_column(8) == std::make_pair(4u, 1u));
  CHECK(f.line_column(1000) == std::make_pair(4u, 5u));  // clamped to the end
  CHECK(f.line_text(2) == "cd");                         // no '\r'
  CHECK(f.line_text(3).empty());
  CHECK(f.line_text(4) == "last");
  CHECK(f.line_text(5).empty());
  CHECK(f.line_text(0).empty());

  SourceManager sm;
  FileId id = sm.add("x.spmd", "hello\nworld");
  SourceLocation loc = sm.location({id, 8, 9});
  CHECK(loc.path == "x.spmd");
  CHECK(loc.line == 2);
  CHECK(loc.column == 3);
  CHECK(sm.location({}).line == 0);
  SourceSpan c = SourceSpan::cover({id, 4, 6}, {id, 1, 2});
  CHECK(c.begin == 1);
  CHECK(c.end == 6);
  CHECK(SourceSpan::cover({}, {id, 1, 2}).begin == 1);

  std::string error;
  CHECK(sm.load("/nonexistent/dir/file.spmd", error) == kNoFile);
  CHECK_FALSE(error.empty());
}

TEST_CASE("diagnostics: exact rendering of a syntax error", "[frontend][diagnostics]") {
  Parsed p = parse_text("def f(x: f32[]) -> f32[] {\n  y = psum(x, i\n  return y\n}\n", "bad.spmd");
  CHECK(p.rendered() ==
        "bad.spmd:3:3: error: unexpected `return`; expected `)` to close the call to `psum` "
        "[syntax-error]\n"
        "  3 |   return y\n"
        "    |   ^~~~~~\n"
        "bad.spmd:2:11: note: the unclosed `(` is here\n"
        "  2 |   y = psum(x, i\n"
        "    |           ^\n");
}

TEST_CASE("diagnostics: rendering of notes, help, warnings, internal and spanless errors",
          "[frontend][diagnostics]") {
  SourceManager sm;
  FileId id = sm.add("m.spmd", "line one\n  return w\n");
  DiagnosticEngine d;
  Diagnostic &e = d.error("variance-mismatch", {id, 18, 19}, "`w` varies along `i`");
  e.notes.push_back({{id, 2, 5}, "because of this"});
  e.fix = "use psum";
  d.warning("unused", {id, 0, 4}, "unused line");
  d.error("no-input", {}, "no input files");
  d.internal({id, 11, 17}, "broken invariant");
  CHECK(d.num_errors() == 2);
  CHECK(d.has_internal_errors());
  CHECK(render_diagnostics(d, sm) ==
        "m.spmd:1:1: warning: unused line [unused]\n"
        "  1 | line one\n"
        "    | ^~~~\n"
        "m.spmd:2:3: internal compiler error: broken invariant\n"
        "  2 |   return w\n"
        "    |   ^~~~~~\n"
        "note: this is a bug in spmdc, not in your program; please report it together with the "
        "input that triggers it\n"
        "m.spmd:2:10: error: `w` varies along `i` [variance-mismatch]\n"
        "  2 |   return w\n"
        "    |          ^\n"
        "m.spmd:1:3: note: because of this\n"
        "  1 | line one\n"
        "    |   ^~~\n"
        "help: use psum\n"
        "spmdc: error: no input files [no-input]\n");
  // A span running past the end of its line is clamped to the line.
  DiagnosticEngine d2;
  d2.error("x", {id, 2, 15}, "long");
  CHECK(render_diagnostics(d2, sm).find("    |   ^~~~~~\n") != std::string::npos);
  // Color output wraps text in escape codes but keeps the content.
  CHECK(render_diagnostics(d2, sm, true).find("\033[") != std::string::npos);
}

TEST_CASE("diagnostics: the error limit", "[frontend][diagnostics]") {
  DiagnosticEngine d;
  d.set_limit(2);
  for (int i = 0; i < 5; ++i) d.error("e", {}, "error " + std::to_string(i));
  CHECK(d.all().size() == 2);
  CHECK(d.at_limit());
  CHECK(d.has_errors());
}

TEST_CASE("syntax errors: several errors, sorted by position, no duplicates",
          "[frontend][diagnostics]") {
  Parsed p = parse_text(
      "def f() -> f32[] {\n  x = (1 +\n}\n"
      "def g() -> f32[] {\n  y = 3 $ 4\n  return ]\n}\n"
      "mesh = 3\n");
  INFO(p.rendered());
  REQUIRE(p.diags.num_errors() >= 3);
  p.diags.sort_by_position();
  uint32_t last = 0;
  for (const Diagnostic &d : p.diags.all()) {
    CHECK(d.code == "syntax-error");
    CHECK(d.span.begin > last);  // strictly increasing: sorted and no duplicates
    last = d.span.begin;
  }
  CHECK(p.rendered().find("unexpected character `$`") != std::string::npos);
  CHECK(p.rendered().find("test.spmd:8:6: error: unexpected `=`; expected a name") !=
        std::string::npos);
}

TEST_CASE("syntax errors: plain-words messages", "[frontend][diagnostics]") {
  auto first_message = [](const std::string &text) {
    Parsed p = parse_text(text);
    p.diags.sort_by_position();
    return p.diags.all().empty() ? std::string("<none>") : p.diags.all()[0].message;
  };
  CHECK(first_message("def f() -> f32[] { x = }") == "unexpected `}`; expected an expression");
  CHECK(first_message("def f() -> f32[] { x = f(a b) }") == "unexpected `b`; expected `)` or `,`");
  CHECK(first_message("def f() -> f32[] { x = 1 ") ==
        "unexpected end of file; expected `}` to close this `{`");
  CHECK(first_message("def f(x: f32[]") ==
        "unexpected end of file; expected `)` to close the parameter list of `f`");
  CHECK(first_message("def f() -> f32[] { for = 1 }") == "unexpected `=`; expected a name");
  CHECK(first_message("def f() -> f32[] { range = 1 }") ==
        "unexpected keyword `range`; expected `}` or a statement");
  CHECK(first_message("x = 1") ==
        "unexpected `x`; expected a declaration (`import`, `mesh`, `def`, `shmap` or `sharded`)");
  CHECK(first_message("def f() -> f32[] { x = \"abc }") ==
        "unterminated string literal; a string must end with `\"` on the same line");
  CHECK(first_message("def f() -> f32[] { x = \"a\\nb\" }") ==
        "unknown escape sequence `\\n` in a string literal");
}

TEST_CASE("syntax errors: non-ASCII, NUL and invalid UTF-8 input", "[frontend][diagnostics]") {
  Parsed p = parse_text(std::string("def f() -> f32[] { x = 1 \0 + \xff\xfe y }", 35));
  INFO(p.rendered());
  p.diags.sort_by_position();
  REQUIRE(p.diags.num_errors() >= 2);
  CHECK(p.diags.all()[0].message == "unexpected character `\\x00`");
  CHECK(p.at(p.diags.all()[0].span) == "1:26");
  CHECK(p.diags.all()[1].message == "unexpected character `\\xFF`");
  CHECK(p.diags.all()[1].span.end - p.diags.all()[1].span.begin == 1);

  Parsed utf8 = parse_text("def f() -> f32[] { λ = 1 }");
  REQUIRE(utf8.diags.num_errors() >= 1);
  CHECK(utf8.diags.all()[0].message == "unexpected character `λ`");
  // Non-ASCII text in comments and strings is fine.
  CHECK_FALSE(parse_text("# ∑ λ\ndef f() -> f32[] { x = \"∑\" }  # ünïcödé").diags.has_errors());
}

TEST_CASE("diagnostics: excerpts never echo raw bytes to the terminal", "[frontend][diagnostics]") {
  // ESC (a terminal escape), C1 controls (U+0085, U+009B: CSI) and bytes
  // that are not UTF-8 become '?'; valid UTF-8 text stays.
  Parsed p = parse_text("mesh M = (i: 2)\n\x01\x1b[31m \xc2\x9b \xff\xfe \xc2\x85 λ\n");
  const std::string out = p.rendered();
  INFO(out);
  REQUIRE(p.diags.has_errors());
  CHECK(out.find("\x1b") == std::string::npos);
  CHECK(out.find("\xc2\x9b") == std::string::npos);
  CHECK(out.find("\xc2\x85") == std::string::npos);
  CHECK(out.find("\xff") == std::string::npos);
  CHECK(out.find("  2 | ??[31m ?? ?? ?? λ\n") != std::string::npos);
}

TEST_CASE("syntax errors: at most 20 per file", "[frontend][diagnostics]") {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "$ def ) ";
  Parsed p = parse_text(text);
  CHECK(p.diags.num_errors() == 20);
}

TEST_CASE("syntax errors: deep nesting is rejected before parsing", "[frontend][diagnostics]") {
  SECTION("100k open parentheses") {
    Parsed p = parse_text("def f() -> f32[] { x = " + std::string(100000, '(') + "a" +
                          std::string(100000, ')') + " }");
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.diags.all()[0].code == "nesting-too-deep");
    // The first bracket beyond the limit: 200 levels are allowed (one is `{`).
    CHECK(p.at(p.diags.all()[0].span) == "1:" + std::to_string(24 + 199));
  }
  SECTION("199 levels are fine") {
    Parsed p = parse_text("def f() -> f32[] { x = " + std::string(199, '(') + "a" +
                          std::string(199, ')') + " }");
    CHECK_FALSE(p.diags.has_errors());
  }
  SECTION("deep blocks") {
    std::string text = "def f() -> f32[] {";
    for (int i = 0; i < 300; ++i) text += " if a {";
    Parsed p = parse_text(text);
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.diags.all()[0].code == "nesting-too-deep");
  }
  SECTION("long operator chains") {
    std::string sum = "a";
    for (int i = 0; i < 100000; ++i) sum += " + a";
    Parsed p = parse_text("def f() -> f32[] { x = " + sum + " }");
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.diags.all()[0].code == "nesting-too-deep");
    Parsed neg = parse_text("def f() -> f32[] { x = " + std::string(100000, '-') + "a }");
    CHECK(neg.diags.all().at(0).code == "nesting-too-deep");
    std::string pow = "a";
    for (int i = 0; i < 100000; ++i) pow += "**a";
    CHECK(parse_text("def f() -> f32[] { x = " + pow + " }").diags.all().at(0).code ==
          "nesting-too-deep");
  }
  SECTION("every binary operator and postfix chain counts") {
    // Each of these nests the AST one level per repetition (they overflowed
    // the stack of `spmdc check` at 10,000 repetitions before they counted).
    for (std::string piece : {" // a", " % a", ".T", ".reshape(4, 4)", "(a)", "[0]"}) {
      std::string chain = "(a)";
      for (int i = 0; i < 20000; ++i) chain += piece;
      Parsed p = parse_text("def f() -> f32[] { x = " + chain + " }");
      INFO(piece);
      REQUIRE(p.diags.num_errors() == 1);
      CHECK(p.diags.all()[0].code == "nesting-too-deep");
    }
    // A dotted name is one level however long, and calls on names do not chain.
    std::string names = "a";
    for (int i = 0; i < 2000; ++i) names += " + std.nn.relu(b.c.d)";
    Parsed flat = parse_text("def f() -> f32[] { x = " + names + "\n}");
    CHECK(flat.diags.num_errors() == 1);  // 2000 `+`, not the dots, break the limit
    std::string few = "a";
    for (int i = 0; i < 200; ++i) few += " + std.nn.relu(b.c.d)";
    CHECK_FALSE(parse_text("def f() -> f32[] { x = " + few + "\n}").diags.has_errors());
  }
  SECTION("else-if chains nest one level per link") {
    auto chain = [](int links) {
      std::string text = "def f() -> f32[] {\n if c == 0 { x = 1 }";
      for (int i = 1; i <= links; ++i) text += " else if c == " + std::to_string(i) + " { x = 1 }";
      return text + " else { x = 2 }\n return x\n}";
    };
    Parsed p = parse_text(chain(10000));
    REQUIRE(p.diags.num_errors() == 1);
    CHECK(p.diags.all()[0].code == "nesting-too-deep");
    CHECK(p.diags.all()[0].message.find("else if") != std::string::npos);
    // 197 links, the body's `{` and a branch's `{`: 199 levels.
    CHECK_FALSE(parse_text(chain(197)).diags.has_errors());
    CHECK(parse_text(chain(199)).diags.has_errors());
    // Separate `if` statements do not add up.
    std::string separate = "def f() -> f32[] {\n";
    for (int i = 0; i < 1000; ++i) separate += " if c == 0 { x = 1 } else { x = 2 }\n";
    CHECK_FALSE(parse_text(separate + " return x\n}").diags.has_errors());
  }
  SECTION("moderate chains and flat lists are fine") {
    std::string sum = "a";
    for (int i = 0; i < 100; ++i) sum += " + a * b ** -c";
    Parsed p = parse_text("def f() -> f32[] { x = " + sum + "\n y = " + sum + " }");
    CHECK_FALSE(p.diags.has_errors());
    std::string list = "[0";
    for (int i = 0; i < 50000; ++i) list += ", 1";
    CHECK_FALSE(parse_text("def f() -> f32[] { x = " + list + "] }").diags.has_errors());
  }
}

TEST_CASE("syntax errors: truncated files never crash", "[frontend][diagnostics]") {
  std::string text =
      "import std.nn\nmesh M = (i: 8)\n[[attr]]\nshmap f(x: f32[8, 2] @ P(i), y: f32[] @ P())\n"
      "  -> (f32[] @ P(), f32[8] @ P(i)) on M {\n  w: f32[]{i} = nn.relu(x[0:4, ::2] @ y)\n"
      "  for k in range(1, 4) { w = w + k }\n  if w > 0.0 { w = -w ** 2 } else { w = \"s\" }\n"
      "  return psum(w, i), x[0]\n}\n";
  for (size_t n = 0; n <= text.size(); ++n) {
    Parsed p = parse_text(text.substr(0, n));
    (void)format_module(p.module);
    (void)dump_ast(p.module, p.sources);
  }
  CHECK_FALSE(parse_text(text).diags.has_errors());
}
