// Unit tests of transforms/peephole: each rewrite, on a program written the
// way a transpose leaves it, gives the program written by hand (expected texts
// written by hand), computes the same values, and is not applied where it
// would change the meaning.
#include "transform_test_util.h"
#include "transforms/peephole.h"

namespace spmd::test {
namespace {

/// The only shmap of `text` after derivable_form (inlined, simplified,
/// peepholes rewritten), printed; its values equal the original's.
std::string rewritten(const std::string &text) {
  auto c = compile_ok(text);
  ir::Module m;
  m.meshes = c->module->meshes;
  m.functions.push_back(derivable_form(*c->module, shmap_of(*c)));
  const std::string printed = ir::print_module(m);
  INFO(printed);
  auto again = compile_ok(printed);
  const auto in = random_inputs(*c, 3);
  const auto want = run(*c, in), got = run(*again, in);
  REQUIRE(want.size() == got.size());
  for (size_t k = 0; k < want.size(); ++k) CHECK(got[k].bitwise_equal(want[k]));
  return printed;
}

const std::string kMesh = "mesh M = (x: 2)\n\n";

TEST_CASE("peephole: what transposing twice leaves becomes the op written", "[peephole]") {
  const std::string sig =
      "shmap f(a: f32[2, 6] @ P(), b: f32[2, 6] @ P(), s: f32[6] @ P(), c: bool[2, 6] @ P())";
  SECTION("x + -y and x - (a - b)") {
    // (a + n and n + a, both a - b, are one value; the a - b that x - (a - b)
    // leaves is rewritten in place, after it was compared, and stays.)
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
                    "  n = -b\n  return a + n, n + a, a - (b - a)\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
              "  t0 = a - b\n  t1 = a - b\n  t2 = a + t1\n"
              "  return t0, t0, t2\n}\n");
  }
  SECTION("negations") {
    // -(a - b) = b - a; a - -b = a + b; -a + -b = -(a + b); of -(2a) + n
    // with n = -(2b) read again, n stays and -(2a) goes: n - 2a.
    CHECK(
        rewritten(kMesh + sig +
                  " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P(), "
                  "f32[2, 6] @ P()) on M {\n"
                  "  n = -(b * 2.0)\n  return -(a - b), a - -b, -a + -b, -(a * 2.0) + n, n\n}\n") ==
        kMesh + sig +
            " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P(), "
            "f32[2, 6] @ P()) on M {\n"
            "  t0 = b * 2.0\n  n = -t0\n  t1 = b - a\n  t2 = a + b\n  t3 = a + b\n"
            "  t4 = -t3\n  t5 = a * 2.0\n  t6 = n - t5\n  return t1, t2, t4, t6, n\n}\n");
  }
  SECTION("a negation minus a value") {
    // -a - b = -(a + b) (as transposing twice gives it); -(2b) - 2b = -(2b + 2b).
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
                    "  n = -a\n  m = -(b * 2.0)\n  return n - b, m - b * 2.0\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
              "  t0 = a + b\n  t1 = b * 2.0\n  t2 = t1 + t1\n  t3 = -t0\n  t4 = -t2\n"
              "  return t3, t4\n}\n");
  }
  SECTION("a negation added to itself") {
    CHECK(rewritten(kMesh + sig +
                    " -> f32[2, 6] @ P() on M {\n  k = -(a * 3.0)\n  return k + k\n}\n") ==
          kMesh + sig +
              " -> f32[2, 6] @ P() on M {\n  t0 = a * 3.0\n  t1 = t0 + t0\n  t2 = -t1\n  return "
              "t2\n}\n");
  }
  SECTION("zero pads that tile a dimension, added up") {
    CHECK(rewritten(kMesh + sig +
                    " -> f32[2, 6] @ P() on M {\n"
                    "  pa = pad(a[:1, :], (2, 6), start=(0, 0), stride=(1, 1))\n"
                    "  pb = pad(b[1:, :], (2, 6), start=(1, 0), stride=(1, 1))\n"
                    "  return pb + pa\n}\n") ==
          kMesh + sig +
              " -> f32[2, 6] @ P() on M {\n"
              "  t0 = a[:1, :]\n  t1 = b[1:, :]\n  t2 = concat((t0, t1), axis=0)\n"
              "  return t2\n}\n");
  }
  SECTION("pieces that cover every element once, added to another value") {
    // (u + pad(b[:, 1:])) + pad(a[:, :1]) = u + concat(a[:, :1], b[:, 1:]);
    // (y + where(c, 0, a)) + where(c, b, 0) = y + where(c, b, a).
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
                    "  u = a * 2.0\n  y = b * 3.0\n"
                    "  pb = pad(b[:, 1:], (2, 6), start=(0, 1), stride=(1, 1))\n"
                    "  pa = pad(a[:, :1], (2, 6), start=(0, 0), stride=(1, 1))\n"
                    "  return (u + pb) + pa, (y + where(c, 0.0, a)) + where(c, b, 0.0)\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n  u = a * 2.0\n  y = b * 3.0\n"
              "  t0 = b[:, 1:]\n  t1 = a[:, :1]\n  t2 = concat((t1, t0), axis=1)\n  t3 = u + t2\n"
              "  t4 = where(c, b, a)\n  t5 = y + t4\n  return t3, t5\n}\n");
  }
  SECTION("pieces that cover every element once, and a value subtracted") {
    // (where(c, 0, a) - y) + where(c, b, 0) = where(c, b, a) - y: in each
    // element one of b - y, a - y, plus a zero.
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
                    "  u = a * 2.0\n  y = b * 3.0\n"
                    "  pb = pad(b[:, 1:], (2, 6), start=(0, 1), stride=(1, 1))\n"
                    "  pa = pad(a[:, :1], (2, 6), start=(0, 0), stride=(1, 1))\n"
                    "  return (pb - u) + pa, (where(c, 0.0, a) - y) + where(c, b, 0.0)\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n  u = a * 2.0\n  y = b * 3.0\n"
              "  t0 = b[:, 1:]\n  t1 = a[:, :1]\n  t2 = concat((t1, t0), axis=1)\n  t3 = t2 - u\n"
              "  t4 = where(c, b, a)\n  t5 = t4 - y\n  return t3, t5\n}\n");
  }
  SECTION("slices of two arrays, added up: the slice of the sum") {
    // a[:, 2:] + (-b)[:, 2:] = (a - b)[:, 2:]; a[1:, ::2] - b[1:, ::2] = (a - b)[1:, ::2].
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 4] @ P(), f32[1, 3] @ P()) on M {\n"
                    "  n = -b\n  return a[:, 2:] + n[:, 2:], a[1:, ::2] - b[1:, ::2]\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 4] @ P(), f32[1, 3] @ P()) on M {\n  t0 = a - b\n  t1 = t0[:, 2:]\n"
              "  t2 = a - b\n  t3 = t2[1:, ::2]\n  return t1, t3\n}\n");
  }
  SECTION("an op a rewrite made equal to an earlier one reads it") {
    // broadcast_to(reshape(s, (1, 6)), (2, 6)) is broadcast_to(s, (2, 6)).
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n"
                    "  r = reshape(s, (1, 6))\n"
                    "  return broadcast_to(s, (2, 6)), broadcast_to(r, (2, 6))\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 6] @ P(), f32[2, 6] @ P()) on M {\n  t0 = broadcast_to(s, (2, 6))\n"
              "  return t0, t0\n}\n");
  }
  SECTION("two selects against zero, added up") {
    CHECK(rewritten(kMesh + sig +
                    " -> f32[2, 6] @ P() on M {\n"
                    "  return where(c, 0.0, b) + where(c, a, 0.0)\n}\n") ==
          kMesh + sig + " -> f32[2, 6] @ P() on M {\n  t0 = where(c, a, b)\n  return t0\n}\n");
  }
  SECTION("broadcasts NumPy broadcasting does anyway, and slice limits") {
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 3] @ P()) on M {\n"
                    "  r = reshape(s, (1, 6))\n"
                    "  return b * broadcast_to(s, (1, 6)), broadcast_to(r, (2, 6)), b[:, 0:5:2]\n"
                    "}\n") == kMesh + sig +
                                  " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 3] @ P()) on M {\n"
                                  "  t0 = b * s\n  t1 = broadcast_to(s, (2, 6))\n  t2 = b[:, ::2]\n"
                                  "  return t0, t1, t2\n}\n");
  }
  SECTION("a block zeroed, then added to") {
    CHECK(rewritten(kMesh + sig +
                    " -> f32[2, 6] @ P() on M {\n"
                    "  i = 1\n"
                    "  u = dynamic_update_slice(a, zeros((1, 6), f32), i, axis=0)\n"
                    "  y = b[:1, :]\n"
                    "  return dynamic_update_slice(u, dynamic_slice(u, i, size=1, axis=0) + y, i, "
                    "axis=0)\n}\n") ==
          kMesh + sig +
              " -> f32[2, 6] @ P() on M {\n  i = 1\n  y = b[:1, :]\n"
              "  t0 = dynamic_update_slice(a, y, i, axis=0)\n  return t0\n}\n");
  }
  SECTION("a block added in place, and the rest added as a zeroed block") {
    // (a + dus(0, y, i)) + dus(b, 0, i): in the block a + y, elsewhere a + b.
    CHECK(rewritten(kMesh + sig +
                    " -> f32[2, 6] @ P() on M {\n"
                    "  i = 1\n"
                    "  y = b[:1, :]\n"
                    "  u = dynamic_update_slice(a, dynamic_slice(a, i, size=1, axis=0) + y, i, "
                    "axis=0)\n"
                    "  return u + dynamic_update_slice(b, zeros((1, 6), f32), i, axis=0)\n}\n") ==
          kMesh + sig +
              " -> f32[2, 6] @ P() on M {\n  i = 1\n  y = b[:1, :]\n"
              "  t0 = dynamic_update_slice(b, y, i, axis=0)\n  t1 = a + t0\n  return t1\n}\n");
  }
  SECTION("a sum over a leading dimension of size 1 that an elementwise op broadcasts") {
    // (a sum over dimensions of size 1 read otherwise stays: see below)
    CHECK(rewritten(kMesh + sig +
                    " -> (f32[2, 6] @ P(), f32[6] @ P()) on M {\n"
                    "  return b * sum(a[:1, :], axes=0), sum(b[1:, :], axes=0)\n}\n") ==
          kMesh + sig +
              " -> (f32[2, 6] @ P(), f32[6] @ P()) on M {\n  t0 = a[:1, :]\n  t1 = b * t0\n"
              "  t2 = b[1:, :]\n  t3 = sum(t2, axes=(0,))\n  return t1, t3\n}\n");
  }
}

TEST_CASE("peephole: rewrites that would change the meaning are not made", "[peephole]") {
  const std::string sig =
      "shmap f(a: f32[2, 6] @ P(), b: f32[2, 6] @ P(), c: bool[2, 6] @ P(), d: bool[2, 6] @ P())";
  // Overlapping pads; selects on different conditions; `b - a` read twice;
  // a block zeroed at one index and added to at another. (As printed.)
  const std::string program = kMesh + sig +
                              " -> (f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ P(), f32[2, 6] @ "
                              "P(), f32[2, 6] @ P()) on M {\n"
                              "  n0 = pad(a, (2, 6), start=(0, 0), stride=(1, 1))\n"
                              "  n1 = n0 + n0\n"
                              "  n2 = where(c, 0.0, b)\n"
                              "  n3 = where(d, a, 0.0)\n"
                              "  n4 = n2 + n3\n"
                              "  n5 = b - a\n"
                              "  n6 = a - n5\n"
                              "  n7 = zeros((1, 6))\n"
                              "  i = 0\n"
                              "  n8 = dynamic_update_slice(a, n7, i, axis=0)\n"
                              "  j = 1\n"
                              "  n9 = dynamic_slice(n8, j, size=1, axis=0)\n"
                              "  y = b[:1, :]\n"
                              "  n10 = n9 + y\n"
                              "  n11 = dynamic_update_slice(n8, n10, j, axis=0)\n"
                              "  return n1, n4, n6, n5, n11\n}\n";
  CHECK(rewritten(program) == program);
  // A block added in at one index, the rest of another index zeroed.
  const std::string blocks = kMesh + sig +
                             " -> f32[2, 6] @ P() on M {\n"
                             "  j = 1\n"
                             "  n0 = dynamic_slice(a, j, size=1, axis=0)\n"
                             "  y = b[:1, :]\n"
                             "  n1 = n0 + y\n"
                             "  n2 = dynamic_update_slice(a, n1, j, axis=0)\n"
                             "  n3 = zeros((1, 6))\n"
                             "  i = 0\n"
                             "  n4 = dynamic_update_slice(b, n3, i, axis=0)\n"
                             "  n5 = n2 + n4\n"
                             "  return n5\n}\n";
  CHECK(rewritten(blocks) == blocks);
  // Two pieces at the same place (they do not cover each element once).
  const std::string overlapping = kMesh + sig +
                                  " -> f32[2, 6] @ P() on M {\n"
                                  "  n0 = a * 2.0\n"
                                  "  n1 = b[:, :1]\n"
                                  "  n2 = pad(n1, (2, 6), start=(0, 0), stride=(1, 1))\n"
                                  "  n3 = n0 + n2\n"
                                  "  n4 = a[:, :1]\n"
                                  "  n5 = pad(n4, (2, 6), start=(0, 0), stride=(1, 1))\n"
                                  "  n6 = n3 + n5\n"
                                  "  return n6\n}\n";
  CHECK(rewritten(overlapping) == overlapping);
  // Slices of different places, or a slice read again, added up.
  const std::string slices = kMesh + sig +
                             " -> (f32[2, 3] @ P(), f32[2, 3] @ P()) on M {\n"
                             "  n0 = a[:, :3]\n"
                             "  n1 = b[:, 3:]\n"
                             "  n2 = n0 + n1\n"
                             "  n3 = b[:, :3]\n"
                             "  n4 = n0 - n3\n"
                             "  return n2, n4\n}\n";
  CHECK(rewritten(slices) == slices);
}

}  // namespace
}  // namespace spmd::test
