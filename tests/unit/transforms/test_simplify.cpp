// Unit tests of transforms/simplify: common subexpressions across loop-invariant
// code motion (expected texts written by hand; values checked bit for bit).
#include "transform_test_util.h"
#include "transforms/simplify.h"

namespace spmd::test {
namespace {

/// The only shmap of `text`, simplified, printed; its values equal the original's.
std::string simplified(const std::string &text) {
  auto c = compile_ok(text);
  ir::Module m;
  m.meshes = c->module->meshes;
  m.functions.push_back(simplify(*c->module, shmap_of(*c)));
  const std::string printed = ir::print_module(m);
  INFO(printed);
  auto again = compile_ok(printed);
  const auto in = random_inputs(*c, 3);
  const auto want = run(*c, in), got = run(*again, in);
  REQUIRE(want.size() == got.size());
  for (size_t k = 0; k < want.size(); ++k) CHECK(got[k].bitwise_equal(want[k]));
  return printed;
}

TEST_CASE("simplify: code moved out of a loop is reused after it", "[simplify]") {
  // `b * 2.0` and the index `axis_index(x)` do not depend on the loop: they
  // run once, before it, and the same expressions after the loop read them
  // (before, the copies after the loop were computed again: the loop's
  // common subexpressions were forgotten at its end).
  const std::string program =
      "mesh M = (x: 2)\n\n"
      "shmap f(a: f32[8] @ P(x), b: f32[4] @ P()) -> (f32[8] @ P(x), f32[4] @ P(x)) on M {\n"
      "  for k in range(3) {\n"
      "    a = a * (b * 2.0)\n"
      "    a = a + dynamic_slice(concat((a, a), axis=0), axis_index(x), size=4, axis=0)\n"
      "  }\n"
      "  return a * (b * 2.0), dynamic_slice(a, axis_index(x), size=2, axis=0)\n"
      "}\n";
  CHECK(simplified(program) ==
        "mesh M = (x: 2)\n\n"
        "shmap f(a: f32[8] @ P(x), b: f32[4] @ P()) -> (f32[8] @ P(x), f32[4] @ P(x)) on M {\n"
        "  t0 = b * 2.0\n"
        "  t1 = pbroadcast(t0, x)\n"
        "  t2 = axis_index(x)\n"
        "  a_1 = a\n"
        "  for k in range(0, 3) {\n"
        "    a_2 = a_1 * t1\n"
        "    t3 = concat((a_2, a_2), axis=0)\n"
        "    t4 = dynamic_slice(t3, t2, size=4, axis=0)\n"
        "    a_3 = a_2 + t4\n"
        "    a_1 = a_3\n"
        "  }\n"
        "  t5 = a_1 * t1\n"
        "  t6 = dynamic_slice(a_1, t2, size=2, axis=0)\n"
        "  return t5, t6\n"
        "}\n");
}

}  // namespace
}  // namespace spmd::test
