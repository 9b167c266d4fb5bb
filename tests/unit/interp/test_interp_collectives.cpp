// tests/unit/interp/test_interp_collectives.cpp — every collective on 1-D and 2-D meshes.
//
// First the cases of the design note and JAX's shard_map documentation on a
// 4-device mesh with values written out by hand (x = arange(16) over P(i)),
// then each collective over one axis and over both axes of (2, 4) and (4, 2)
// meshes, and on a 1-device mesh, against plain-loop references.
#include "interp_test_util.h"

using namespace spmd::interp::testing;

namespace {

Tensor arange(int64_t n) {
  return make_fn(DType::F32, {n}, [](int64_t i) { return double(i); });
}

std::vector<double> values(const Tensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

std::vector<double> line(const std::string &ret_type, const std::string &body) {
  std::string src = "mesh M = (i: 4)\nshmap f(x: f32[16] @ P(i)) -> " + ret_type +
                    " on M {\n  return " + body + "\n}\n";
  INFO(src);
  return values(run(src, "f", {arange(16)}).at(0));
}

}  // namespace

TEST_CASE("hand-computed collectives on a 4-device mesh, x = arange(16) @ P(i)",
          "[interp][collectives]") {
  using V = std::vector<double>;
  CHECK(line("f32[4] @ P()", "psum(x, i)") == V{24, 28, 32, 36});
  CHECK(line("f32[4] @ P()", "pmean(x, i)") == V{6, 7, 8, 9});
  CHECK(line("f32[4] @ P()", "pmax(x, i)") == V{12, 13, 14, 15});
  CHECK(line("f32[4] @ P()", "pmin(x, i)") == V{0, 1, 2, 3});
  CHECK(line("f32[4] @ P(i)", "psum_scatter(x, i)") == V{24, 28, 32, 36});
  CHECK(line("f32[4] @ P(i)", "reshape(psum_scatter(x, i, tiled=false), (1,))") ==
        V{24, 28, 32, 36});
  CHECK(line("f32[16] @ P()", "all_gather_invariant(x, i)") ==
        V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  V gathered;
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 16; ++k) gathered.push_back(k);
  CHECK(line("f32[64] @ P(i)", "all_gather(x, i)") == gathered);
  CHECK(line("f32[16, 4] @ P(i)", "all_gather(x, i, tiled=false)") == gathered);
  CHECK(line("f32[16] @ P(i)", "all_to_all(x, i, split_axis=0, concat_axis=0)") ==
        V{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  CHECK(line("f32[16] @ P(i)", "ppermute(x, i, shift=1)") ==
        V{12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(line("f32[16] @ P(i)", "ppermute(x, i, perm=[(0, 1), (1, 2), (2, 3), (3, 0)])") ==
        V{12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(line("f32[16] @ P(i)", "ppermute(x, i, perm=[(0, 2)])") ==
        V{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0});
  CHECK(line("f32[16] @ P(i)", "x * cast(axis_index(i), f32)") ==
        V{0, 0, 0, 0, 4, 5, 6, 7, 16, 18, 20, 22, 36, 39, 42, 45});
  CHECK(line("f32[4] @ P(i)", "broadcast_to(cast(axis_index(i), f32), (1,))") == V{0, 1, 2, 3});
  CHECK(line("f32[4] @ P(i)", "x[0:1] * 0.0 + axis_size(i)") == V{4, 4, 4, 4});
  // Design note, example 1: psum of a varying per-device scalar.
  CHECK(line("f32[] @ P()", "psum(sum(2.0 * x), i)") == V{240});
}

TEST_CASE("pbroadcast and pscatter move no data", "[interp][collectives]") {
  const std::string src =
      "mesh M = (i: 4)\n"
      "shmap f(y: f32[8] @ P()) -> (f32[32] @ P(i), f32[8] @ P(i), f32[4] @ P(i), f32[8] @ P()) "
      "on M {\n"
      "  return pbroadcast(y, i), pscatter(y, i), pscatter(reshape(y, (4, 2)), i, "
      "tiled=false)[0:1], all_gather_invariant(pscatter(y, i), i)\n}\n";
  Tensor y = arange(8);
  auto out = run(src, "f", {y});
  check_equal(out[0], DType::F32, {32}, [](int64_t i) { return double(i % 8); });
  check_equal(out[1], DType::F32, {8}, [](int64_t i) { return double(i); });
  check_equal(out[2], DType::F32, {4}, [](int64_t i) { return double(2 * i); });
  check_equal(out[3], DType::F32, {8}, [](int64_t i) { return double(i); });
}

TEST_CASE("collectives over one axis and both axes of 2-D meshes", "[interp][collectives]") {
  for (auto [A, B] : {std::pair<int64_t, int64_t>{2, 4}, {4, 2}, {1, 1}, {1, 4}}) {
    const std::string mesh =
        "mesh M = (a: " + std::to_string(A) + ", b: " + std::to_string(B) + ")\n";
    // x: f32[A*2, B*4] @ P(a, b): each device holds a 2 x 4 block.
    const int64_t R = A * 2, C = B * 4;
    Tensor x = ramp(DType::F32, {R, C}, 23, -11);
    auto X = [&](int64_t r, int64_t c) { return x.get(r * C + c); };
    const std::string src =
        mesh + "shmap f(x: f32[" + std::to_string(R) + ", " + std::to_string(C) +
        "] @ P(a, b)) -> (f32[" + std::to_string(R) +
        ", 4] @ P(a), f32[2, 4] @ P(), "
        "f32[" +
        std::to_string(R) + ", " + std::to_string(C) +
        "] @ P(a), "
        "f32[" +
        std::to_string(R) + ", " + std::to_string(C) +
        "] @ P(), "
        "f32[" +
        std::to_string(R) + ", " + std::to_string(C) +
        "] @ P(a, b), "
        "f32[" +
        std::to_string(R) + ", " + std::to_string(C) +
        "] @ P(a, b), "
        "i32[" +
        std::to_string(A) + ", " + std::to_string(B) +
        "] @ P(a, b), "
        "f32[2, 4] @ P()) on M {\n"
        "  s_b = psum(x, b)\n"
        "  s_ab = psum(x, (a, b))\n"
        "  g_b = all_gather_invariant(x, b, axis=1)\n"
        "  g_ab = all_gather_invariant(all_gather_invariant(x, b, axis=1), a, axis=0)\n"
        "  p_a = ppermute(x, a, shift=1)\n"
        "  t = all_to_all(x, b, split_axis=1, concat_axis=1)\n"
        "  k = reshape(axis_index((a, b)) * 100 + axis_index(b), (1, 1))\n"
        "  m = pmax(x, (b, a)) - pmin(x, (a, b))\n"
        "  return s_b, s_ab, g_b, g_ab, p_a, t, k, m\n}\n";
    INFO(src);
    auto out = run(src, "f", {x});
    REQUIRE(out.size() == 8);
    // psum over b: row block of a, summed over the B column blocks.
    check_equal(out[0], DType::F32, {R, 4}, [&](int64_t i) {
      float s = 0;
      for (int64_t b = 0; b < B; ++b) s += static_cast<float>(X(i / 4, b * 4 + i % 4));
      return double(s);
    });
    check_close(out[1], {2, 4}, [&](int64_t i) {
      double s = 0;
      for (int64_t a = 0; a < A; ++a)
        for (int64_t b = 0; b < B; ++b) s += X(a * 2 + i / 4, b * 4 + i % 4);
      return s;
    });
    check_equal(out[2], DType::F32, {R, C}, [&](int64_t i) { return x.get(i); });
    check_equal(out[3], DType::F32, {R, C}, [&](int64_t i) { return x.get(i); });
    // ppermute along a by +1: device (a, b) holds the block of (a - 1, b).
    check_equal(out[4], DType::F32, {R, C}, [&](int64_t i) {
      int64_t r = i / C, c = i % C, a = r / 2;
      return X(((a + A - 1) % A) * 2 + r % 2, c);
    });
    // all_to_all along b, split and concat dimension 1: device b receives block b
    // (width 4 / B) of every sender s and concatenates them in sender order.
    check_equal(out[5], DType::F32, {R, C}, [&](int64_t i) {
      int64_t r = i / C, c = i % C, b = c / 4, lc = c % 4, w = 4 / B;
      int64_t sender = lc / w;
      return X(r, sender * 4 + b * w + lc % w);
    });
    check_equal(out[6], DType::I32, {A, B}, [&](int64_t i) { return double(i * 100 + i % B); });
    check_equal(out[7], DType::F32, {2, 4}, [&](int64_t i) {
      double mx = -1e9, mn = 1e9;
      for (int64_t a = 0; a < A; ++a)
        for (int64_t b = 0; b < B; ++b) {
          mx = std::max(mx, X(a * 2 + i / 4, b * 4 + i % 4));
          mn = std::min(mn, X(a * 2 + i / 4, b * 4 + i % 4));
        }
      return mx - mn;
    });
  }
}

TEST_CASE("psum_scatter and all_gather along dimension 1 on a (2, 4) mesh",
          "[interp][collectives]") {
  const std::string src =
      "mesh M = (a: 2, b: 4)\n"
      "shmap f(x: f32[4, 32] @ P(a, b)) -> (f32[4, 8] @ P(a, b), f32[4, 128] @ P(a, b)) on M {\n"
      "  return psum_scatter(x, b, scatter_dimension=1), all_gather(x, b, axis=1)\n}\n";
  Tensor x = ramp(DType::F32, {4, 32}, 29, -14);
  auto X = [&](int64_t r, int64_t c) { return x.get(r * 32 + c); };
  auto out = run(src, "f", {x});
  // Device (a, b) holds x[2a:2a+2, 8b:8b+8]; the scatter sums over b and keeps block b (width 2).
  check_equal(out[0], DType::F32, {4, 8}, [&](int64_t i) {
    int64_t r = i / 8, c = i % 8, b = c / 2;
    float s = 0;
    for (int64_t src_b = 0; src_b < 4; ++src_b)
      s += static_cast<float>(X(r, src_b * 8 + b * 2 + c % 2));
    return double(s);
  });
  // all_gather along b: each device holds its whole row block; four copies side by side.
  check_equal(out[1], DType::F32, {4, 128}, [&](int64_t i) { return X(i / 128, i % 32); });
}
