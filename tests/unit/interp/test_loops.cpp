// test_loops.cpp — `for` loops stay loops through checking, printing and the
// interpreter: ranges with steps, zero and one iterations, long loops,
// carries that permute, rows selected by the loop index; the printed program
// re-checks strictly and runs to the same bits; unrolling (an optimisation)
// changes no bit either.
#include "../transforms/transform_test_util.h"
#include "ir/loops.h"
#include "ir/verifier.h"

namespace spmd::test {
namespace {

std::unique_ptr<Compilation> compile_with(const std::string &text, int64_t unroll) {
  auto c = std::make_unique<Compilation>();
  CompileOptions o;
  o.unroll_max_trip_count = unroll;
  compile_source(*c, "test.spmd", text, o);
  INFO(render_diagnostics(c->diags, c->sources));
  REQUIRE(c->ok());
  return c;
}

bool same_bits(const std::vector<rt::Tensor> &a, const std::vector<rt::Tensor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].bitwise_equal(b[k])) return false;
  return true;
}

const char *kPrograms[] = {
    // Steps, nested loops, a negative step, a collective in a loop.
    "mesh M = (i: 2)\n"
    "shmap f(xs: f32[6, 8] @ P(None, i), a: f32[8] @ P(i)) -> f32[8] @ P(i) on M {\n"
    "  s = a\n"
    "  for t in range(6) {\n"
    "    s = s * 0.5 + xs[t]\n"
    "    for u in range(5, 0, -2) { s = s + 0.01 * cast(u, f32) * ppermute(s, i, shift=1) }\n"
    "  }\n"
    "  return s\n"
    "}\n",
    // Carries that rotate and swap, zero and one iteration.
    "mesh M = (i: 2)\n"
    "shmap g(a: f32[4] @ P(i), b: f32[4] @ P(i), c: f32[2] @ P()) -> (f32[4] @ P(i), "
    "f32[4] @ P(i), f32[4] @ P(i)) on M {\n"
    "  for k in range(0, 7, 3) {\n"
    "    t = a\n    a = b * 2.0\n    b = c\n    c = t + 1.0\n"
    "  }\n"
    "  for k in range(4, 4) { a = a * 3.0 }\n"
    "  for k in range(1) { b = b + a }\n"
    "  return a, b, c\n"
    "}\n",
    // A carried value that becomes varying inside the loop (the fixpoint).
    "mesh M = (i: 4)\n"
    "shmap h(x: f32[8] @ P(i)) -> f32[] @ P() on M {\n"
    "  acc = 0.0\n"
    "  for k in range(3) { acc = acc * 0.5 + sum(x) * cast(axis_index(i) + k, f32) }\n"
    "  return psum(acc, i)\n"
    "}\n",
};

TEST_CASE("loops stay loops after checking and verify", "[loops]") {
  for (const char *text : kPrograms) {
    auto c = compile_ok(text);
    INFO(text);
    CHECK(!c->structured);  // nothing was unrolled
    CHECK(ir::has_loop(shmap_of(*c).body));
    CHECK(ir::verify_module(*c->module).empty());
  }
}

TEST_CASE("a loop computes what its iterations compute", "[loops]") {
  auto c = compile_ok(kPrograms[1]);
  auto in = random_inputs(*c, 3);
  auto out = run(*c, in);
  // By hand, on one float at a time: three iterations (k = 0, 3, 6) of the
  // rotation, nothing for range(4, 4), b += a once. Element e lives on device
  // e / 2, which holds all of the replicated c.
  for (int64_t e = 0; e < 4; ++e) {
    float a = static_cast<float>(in[0].get(e)), b = static_cast<float>(in[1].get(e)),
          cc = static_cast<float>(in[2].get(e % 2));
    for (int k = 0; k < 3; ++k) {
      float t = a;
      a = b * 2.0f;
      b = cc;
      cc = t + 1.0f;
    }
    b = b + a;
    CHECK(out[0].get(e) == a);
    CHECK(out[1].get(e) == b);
    CHECK(out[2].get(e) == cc);
  }
}

TEST_CASE("the loop index selects rows: xs[k]", "[loops]") {
  auto c = compile_ok(
      "mesh M = (i: 2)\n"
      "shmap f(xs: f32[5, 4] @ P(None, i)) -> f32[4] @ P(i) on M {\n"
      "  acc = zeros((2,))\n"
      "  for k in range(4, -1, -2) { acc = acc * 2.0 + xs[k] }\n"
      "  return acc\n"
      "}\n");
  auto in = random_inputs(*c, 5);
  auto out = run(*c, in);
  for (int64_t col = 0; col < 4; ++col) {
    float acc = 0;
    for (int k : {4, 2, 0}) acc = acc * 2.0f + static_cast<float>(in[0].get(k * 4 + col));
    CHECK(out[0].get(col) == acc);
  }
}

TEST_CASE("loop bounds 0, 1 and 100,000", "[loops]") {
  for (int64_t n : {0, 1, 100000}) {
    auto c = compile_ok(
        "mesh M = (i: 2)\n"
        "shmap f(x: f32[2] @ P(i)) -> f32[2] @ P(i) on M {\n"
        "  c = zeros((1,))\n"
        "  for k in range(" +
        std::to_string(n) +
        ") { c = c + 1.0 }\n"
        "  return c + x * 0.0\n"
        "}\n");
    auto out = run(*c, {rt::Tensor::zeros(rt::DType::F32, {2})});
    CHECK(out[0].get(0) == static_cast<double>(n));
    CHECK(out[0].get(1) == static_cast<double>(n));
  }
}

TEST_CASE("printed loops re-check strictly and run to the same bits", "[loops][roundtrip]") {
  for (const char *text : kPrograms) {
    INFO(text);
    auto c = compile_ok(text);
    const std::string printed = ir::print_module(c->printable());
    INFO(printed);
    CHECK(ir::print_module(compile_ok(printed)->printable()) == printed);
    auto strict = compile_ok(printed, /*auto_pb=*/false);
    auto in = random_inputs(*c, 11);
    CHECK(same_bits(run(*c, in), run(*strict, in)));
  }
}

TEST_CASE("unrolling is an optimisation: the same bits", "[loops]") {
  for (const char *text : kPrograms) {
    INFO(text);
    auto rolled = compile_with(text, 0);
    auto unrolled = compile_with(text, 100);
    REQUIRE(unrolled->structured);  // printed as written
    CHECK(!ir::has_loop(shmap_of(*unrolled).body));
    auto in = random_inputs(*rolled, 13);
    CHECK(same_bits(run(*rolled, in), run(*unrolled, in)));
  }
}

}  // namespace
}  // namespace spmd::test
