// Unit tests of transforms/hoist_broadcasts (run by derivable_form, before the
// peepholes): an add or subtraction of broadcasts computes on the values
// before broadcasting (expected texts written by hand), the same bits, so
// that every spelling of it prints the same; and nothing else moves.
#include "transform_test_util.h"
#include "transforms/hoist_broadcasts.h"

namespace spmd::test {
namespace {

/// The only shmap of `text` after derivable_form, printed; its values equal
/// the original's bit for bit (random inputs).
std::string rewritten(const std::string &text) {
  auto c = compile_ok(text);
  ir::Module m;
  m.meshes = c->module->meshes;
  m.functions.push_back(derivable_form(*c->module, shmap_of(*c)));
  const std::string printed = ir::print_module(m);
  INFO(printed);
  auto again = compile_ok(printed);
  const auto in = random_inputs(*c, 5);
  const auto want = run(*c, in), got = run(*again, in);
  REQUIRE(want.size() == got.size());
  for (size_t k = 0; k < want.size(); ++k) CHECK(got[k].bitwise_equal(want[k]));
  return printed;
}

const std::string kHead =
    "mesh M = (x: 2)\n\n"
    "shmap f(a: f32[2, 6] @ P(), b: f32[2, 6] @ P(), s: f32[6] @ P())";

TEST_CASE("hoist_broadcasts: an add of broadcasts is the broadcast of the add", "[peephole]") {
  SECTION("a [1, 6] value added to its broadcast (issue 10, seed 2006910)") {
    // u + broadcast_to(u) broadcasts u twice: broadcast_to(u + u), six adds, not twelve.
    CHECK(rewritten(kHead + " -> f32[2, 6] @ P() on M {\n"
                            "  u = a[:1, :]\n  return u + broadcast_to(u, (2, 6))\n}\n") ==
          kHead +
              " -> f32[2, 6] @ P() on M {\n"
              "  u = a[:1, :]\n  t0 = u + u\n  t1 = broadcast_to(t0, (2, 6))\n"
              "  return t1\n}\n");
  }
  SECTION("a sum over one element and a reshape, both dropping the leading 1") {
    // sum(u, axes=0) and reshape(u, (6,)) are both u without its leading 1:
    // the add is u + u, reshaped.
    CHECK(rewritten(kHead + " -> f32[6] @ P() on M {\n"
                            "  u = a[:1, :]\n  return sum(u, axes=0) + reshape(u, (6,))\n}\n") ==
          kHead +
              " -> f32[6] @ P() on M {\n"
              "  u = a[:1, :]\n  t0 = u + u\n  t1 = reshape(t0, (6,))\n  return t1\n}\n");
  }
  SECTION("a difference of two broadcasts of values of different ranks") {
    // [6] and [1, 6] broadcast to [1, 6]: broadcast_to(s - u, (2, 6)).
    CHECK(rewritten(kHead + " -> f32[2, 6] @ P() on M {\n"
                            "  u = a[:1, :]\n"
                            "  return broadcast_to(s, (2, 6)) - broadcast_to(u, (2, 6))\n}\n") ==
          kHead +
              " -> f32[2, 6] @ P() on M {\n"
              "  u = a[:1, :]\n  t0 = s - u\n  t1 = broadcast_to(t0, (2, 6))\n"
              "  return t1\n}\n");
  }
  SECTION("three spellings of one sum print as one value") {
    // broadcast_to(u) + broadcast_to(s), u + broadcast_to(s) and
    // broadcast_to(u + s) are all broadcast_to(u + s).
    const std::string results = " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n";
    CHECK(rewritten(kHead + results +
                    "  u = a[:1, :]\n"
                    "  return broadcast_to(u, (2, 6)) + broadcast_to(s, (2, 6)), "
                    "u + broadcast_to(s, (2, 6)), broadcast_to(u + s, (2, 6))\n}\n") ==
          kHead + results +
              "  u = a[:1, :]\n  t0 = u + s\n  t1 = broadcast_to(t0, (2, 6))\n"
              "  return t1, t1, t1\n}\n");
  }
}

TEST_CASE("hoist_broadcasts: what transposes differently or broadcasts nothing stays",
          "[peephole]") {
  // A factor (transposed: sum(ct * 2) against sum(ct) * 2, a different
  // rounding); a negation; a reshape that adds a trailing 1 (not NumPy's
  // broadcast); an add of a full-size value, which reads the broadcast
  // value (NumPy broadcasting does the rest) and stays at full size.
  const std::string program = kHead +
                              " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[6, 6] @ P(), f32[2, 6] "
                              "@ P()) on M {\n"
                              "  n0 = broadcast_to(s, (2, 6))\n"
                              "  n1 = n0 * 2.0\n"
                              "  n2 = -n0\n"
                              "  n3 = reshape(s, (6, 1))\n"
                              "  n4 = n3 + s\n"
                              "  n5 = b + s\n"
                              "  return n1, n2, n4, n5\n}\n";
  CHECK(rewritten(program) == program);
  CHECK(
      rewritten(kHead + " -> f32[2, 6] @ P() on M {\n  return b + broadcast_to(s, (2, 6))\n}\n") ==
      kHead + " -> f32[2, 6] @ P() on M {\n  t0 = b + s\n  return t0\n}\n");
}

}  // namespace
}  // namespace spmd::test
