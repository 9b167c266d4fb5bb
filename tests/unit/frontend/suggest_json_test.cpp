// tests/unit/frontend/suggest_json_test.cpp — "did you mean" and the JSON
// diagnostics contract (docs/diagnostics.md).
//
// Edit distances are checked against values worked out by hand; the JSON
// lines are parsed back and every documented field is checked, including
// that a range's byte offsets select exactly the reported text and that a
// fix-it, applied to the source, gives the suggested spelling.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "middle/spellings.h"
#include "pipeline/compile.h"
#include "support/suggest.h"

using namespace spmd;

TEST_CASE("suggest: edit distance in half-steps", "[diagnostics][suggest]") {
  CHECK(edit_distance("psum", "psum") == 0);
  CHECK(edit_distance("True", "true") == 1);    // case only
  CHECK(edit_distance("psun", "psum") == 2);    // one substitution
  CHECK(edit_distance("modle", "model") == 2);  // one swap of neighbours
  CHECK(edit_distance("input", "inputs") == 2);
  CHECK(edit_distance("Flase", "false") == 3);  // a case change and a swap
  CHECK(edit_distance("", "abc") == 6);
}

TEST_CASE("suggest: closest match within the budget", "[diagnostics][suggest]") {
  std::vector<std::string> axes = {"batch", "model"};
  CHECK(closest_match("btch", axes) == "batch");
  CHECK(closest_match("modle", axes) == "model");
  CHECK_FALSE(closest_match("data", axes));     // nothing close
  CHECK_FALSE(closest_match("x", {"y", "z"}));  // one-letter names are not typos of each other
  CHECK_FALSE(closest_match("batch", axes));    // the name itself is not a suggestion
  // Ties go to the earlier candidate.
  CHECK(closest_match("ab", {"aa", "bb"}) == "aa");
}

TEST_CASE("suggest: NumPy and JAX spellings", "[diagnostics][suggest]") {
  auto never = [](const std::string &) { return false; };
  auto psum_only = [](const std::string &n) { return n == "psum"; };
  CHECK(foreign_value("True")->replacement == "true");
  CHECK(foreign_value("np.pi")->replacement == "3.141592653589793");
  CHECK_FALSE(foreign_value("pi"));  // a bare `pi` may be the user's own name
  CHECK(foreign_function("jnp.concatenate", never)->replacement == "concat");
  CHECK(foreign_function("lax.psum", psum_only)->replacement == "psum");
  CHECK_FALSE(foreign_function("lax.psum", never));
  CHECK(foreign_keyword("axis", {"x", "axes", "keepdims"})->replacement == "axes");
  CHECK(foreign_keyword("dim", {"x", "axes", "axis", "tiled"})->replacement == "axis");
  CHECK_FALSE(foreign_keyword("axis", {"x", "shape"}));
  CHECK(foreign_dtype("np.float32")->replacement == "f32");
  CHECK(foreign_dtype("float16")->replacement.empty());  // no such dtype: help only
}

namespace {

std::vector<nlohmann::json> json_lines(const std::string &text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("diagnostics: the JSON contract", "[diagnostics][json]") {
  const std::string source =
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[8] @ P(i)) -> f32[] @ P() on M {\n"
      "  y = x * Ture\n"
      "  return sum(x)\n"
      "}\n";
  Compilation c;
  compile_source(c, "t.spmd", source, {});
  auto lines = json_lines(render_diagnostics_json(c.diags, c.sources));
  REQUIRE(lines.size() == 1);  // the unmapped-output error is not reached: lowering failed
  const nlohmann::json &d = lines[0];
  CHECK(d["severity"] == "error");
  CHECK(d["code"] == "unknown-name");
  CHECK(d["message"] == "unknown name `Ture`");
  CHECK(d["file"] == "t.spmd");
  CHECK(d["line"] == 3);
  CHECK(d["column"] == 11);
  const auto &range = d["range"];
  size_t begin = range["start"]["offset"], end = range["end"]["offset"];
  CHECK(source.substr(begin, end - begin) == "Ture");
  CHECK(range["end"]["line"] == 3);
  CHECK(range["end"]["column"] == 15);  // exclusive
  CHECK(d["notes"].is_array());
  CHECK(d["help"] == "did you mean `true`?");
  REQUIRE(d["fixits"].size() == 1);
  const auto &fix = d["fixits"][0];
  size_t fb = fix["range"]["start"]["offset"], fe = fix["range"]["end"]["offset"];
  std::string fixed =
      source.substr(0, fb) + fix["replacement"].get<std::string>() + source.substr(fe);
  CHECK(fixed.find("x * true") != std::string::npos);

  // Notes carry their own locations; spanless diagnostics have null locations.
  Compilation v;
  compile_source(v, "v.spmd",
                 "mesh M = (i: 4)\n"
                 "shmap f(x: f32[8] @ P(i)) -> f32[] @ P() on M {\n"
                 "  return sum(x)\n"
                 "}\n",
                 {});
  auto vl = json_lines(render_diagnostics_json(v.diags, v.sources));
  REQUIRE(vl.size() == 1);
  CHECK(vl[0]["code"] == "unmapped-output-varies");
  REQUIRE(vl[0]["notes"].size() == 2);
  CHECK(vl[0]["notes"][0]["line"] == 2);
  CHECK(vl[0]["notes"][0]["message"] == "the out_spec leaves out `i` here");
  CHECK(vl[0]["fixits"].empty());

  DiagnosticEngine spanless;
  spanless.error("io-error", {}, "cannot open `x`");
  auto sl = json_lines(render_diagnostics_json(spanless, SourceManager{}));
  REQUIRE(sl.size() == 1);
  CHECK(sl[0]["file"].is_null());
  CHECK(sl[0]["line"].is_null());
  CHECK(sl[0]["range"].is_null());
  CHECK(sl[0]["help"].is_null());
}
