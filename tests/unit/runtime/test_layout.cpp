// tests/unit/runtime/test_layout.cpp — reshape, transpose, slices, pad_into, concat, iota.
//
// Expected values are written out by hand or produced by naive index loops.
#include "rt_test_util.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

TEST_CASE("reshape", "[runtime][layout]") {
  Tensor x = iota(DType::I32, {2, 3}, 1);
  check_equal(reshape(x, {3, 2}), DType::I32, {3, 2}, {0, 1, 2, 0, 1, 2});
  CHECK(reshape(x, {-1}).shape() == Shape{6});
  CHECK(reshape(x, {2, -1, 1}).shape() == Shape{2, 3, 1});
  CHECK_THROWS_WITH(reshape(x, {4, 2}), Catch::Contains("cannot reshape [2, 3]"));
  CHECK_THROWS_AS(reshape(x, {-1, -1}), RuntimeError);
  CHECK(reshape(Tensor::scalar(DType::F32, 1), {1, 1}).shape() == Shape{1, 1});
}

TEST_CASE("transpose against a naive loop", "[runtime][layout]") {
  Tensor x = iota(DType::I32, {2, 3, 4}, 0);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i));
  const int64_t perm[] = {2, 0, 1};
  Tensor t = transpose(x, perm);
  REQUIRE(t.shape() == Shape{4, 2, 3});
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 3; ++c)
        CHECK(t.get((a * 2 + b) * 3 + c) == x.get((b * 3 + c) * 4 + a));
  Tensor m = make(DType::BF16, {2, 2}, {1, 2, 3, 4});
  const int64_t swap[] = {1, 0};
  check_equal(transpose(m, swap), DType::BF16, {2, 2}, {1, 3, 2, 4});
  const int64_t bad[] = {0, 0};
  CHECK_THROWS_AS(transpose(m, bad), RuntimeError);
  const int64_t short_perm[] = {0};
  CHECK_THROWS_AS(transpose(m, short_perm), RuntimeError);
}

TEST_CASE("reverse (flip) against a naive loop", "[runtime][layout]") {
  Tensor x = make(DType::I32, {2, 3}, {0, 1, 2, 3, 4, 5});
  check_equal(reverse(x, std::vector<int64_t>{1}), DType::I32, {2, 3}, {2, 1, 0, 5, 4, 3});
  check_equal(reverse(x, std::vector<int64_t>{0}), DType::I32, {2, 3}, {3, 4, 5, 0, 1, 2});
  check_equal(reverse(x, std::vector<int64_t>{0, 1}), DType::I32, {2, 3}, {5, 4, 3, 2, 1, 0});
  check_equal(reverse(x, std::vector<int64_t>{}), DType::I32, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor b = make(DType::BF16, {3}, {1.5, 2, -3});
  check_equal(reverse(b, std::vector<int64_t>{0}), DType::BF16, {3}, {-3, 2, 1.5});
  CHECK(reverse(make(DType::F32, {0, 2}, {}), std::vector<int64_t>{0}).numel() == 0);
}

TEST_CASE("broadcast_to", "[runtime][layout]") {
  check_equal(broadcast_to(make(DType::F64, {2, 1}, {1, 2}), {3, 2, 2}), DType::F64, {3, 2, 2},
              {1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2});
  check_equal(broadcast_to(Tensor::scalar(DType::Bool, 1), {2}), DType::Bool, {2}, {1, 1});
  CHECK_THROWS_AS(broadcast_to(make(DType::F64, {2}, {1, 2}), {3}), RuntimeError);
  CHECK_THROWS_AS(broadcast_to(make(DType::F64, {2}, {1, 2}), {}), RuntimeError);
}

TEST_CASE("slice and pad_into round trip", "[runtime][layout]") {
  Tensor x = make(DType::F32, {3, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  const int64_t start[] = {1, 0}, limit[] = {3, 5}, stride[] = {1, 2};
  Tensor s = slice(x, start, limit, stride);
  check_equal(s, DType::F32, {2, 3}, {5, 7, 9, 10, 12, 14});
  Tensor padded = pad_into(s, {3, 5}, start, stride);
  check_equal(padded, DType::F32, {3, 5}, {0, 0, 0, 0, 0, 5, 0, 7, 0, 9, 10, 0, 12, 0, 14});
  CHECK(slice(padded, start, limit, stride).bitwise_equal(s));  // slice ∘ pad_into = id
  const int64_t bad_limit[] = {4, 5};
  CHECK_THROWS_WITH(slice(x, start, bad_limit, stride), Catch::Contains("invalid bounds"));
  const int64_t zero_stride[] = {1, 0};
  CHECK_THROWS_AS(slice(x, start, limit, zero_stride), RuntimeError);
  CHECK_THROWS_WITH(pad_into(s, {2, 5}, start, stride), Catch::Contains("does not fit"));
  const int64_t empty_start[] = {2, 2}, empty_limit[] = {2, 5}, ones[] = {1, 1};
  CHECK(slice(x, empty_start, empty_limit, ones).shape() == Shape{0, 3});
}

TEST_CASE("dynamic slices clamp like XLA", "[runtime][layout]") {
  Tensor x = make(DType::I32, {5}, {0, 1, 2, 3, 4});
  const int64_t size2[] = {2};
  const int64_t s1[] = {1}, s9[] = {9}, sneg[] = {-3};
  check_equal(dynamic_slice(x, s1, size2), DType::I32, {2}, {1, 2});
  check_equal(dynamic_slice(x, s9, size2), DType::I32, {2}, {3, 4});
  check_equal(dynamic_slice(x, sneg, size2), DType::I32, {2}, {0, 1});
  Tensor u = make(DType::I32, {2}, {-1, -2});
  check_equal(dynamic_update_slice(x, u, s1), DType::I32, {5}, {0, -1, -2, 3, 4});
  check_equal(dynamic_update_slice(x, u, s9), DType::I32, {5}, {0, 1, 2, -1, -2});
  CHECK(x.get(1) == 1);  // the operand is untouched
  Tensor m = make(DType::F64, {2, 3}, {0, 1, 2, 3, 4, 5});
  const int64_t start[] = {1, 1};
  check_equal(dynamic_update_slice(m, make(DType::F64, {1, 2}, {8, 9}), start), DType::F64, {2, 3},
              {0, 1, 2, 3, 8, 9});
  const int64_t too_big[] = {6};
  CHECK_THROWS_AS(dynamic_slice(x, s1, too_big), RuntimeError);
  CHECK_THROWS_AS(dynamic_update_slice(x, make(DType::F32, {2}, {1, 2}), s1), RuntimeError);
}

TEST_CASE("concat", "[runtime][layout]") {
  Tensor a = make(DType::F32, {2, 1}, {1, 2});
  Tensor b = make(DType::F32, {2, 2}, {3, 4, 5, 6});
  const Tensor parts[] = {a, b};
  check_equal(concat(parts, 1), DType::F32, {2, 3}, {1, 3, 4, 2, 5, 6});
  check_equal(concat(parts, -1), DType::F32, {2, 3}, {1, 3, 4, 2, 5, 6});
  const Tensor rows[] = {b, b};
  check_equal(concat(rows, 0), DType::F32, {4, 2}, {3, 4, 5, 6, 3, 4, 5, 6});
  CHECK_THROWS_AS(concat(parts, 0), RuntimeError);
  CHECK_THROWS_AS(concat(std::span<const Tensor>(), 0), RuntimeError);
  const Tensor mixed[] = {a, make(DType::F64, {2, 1}, {1, 2})};
  CHECK_THROWS_AS(concat(mixed, 1), RuntimeError);
}

TEST_CASE("iota", "[runtime][layout]") {
  check_equal(iota(DType::I32, {2, 3}, 0), DType::I32, {2, 3}, {0, 0, 0, 1, 1, 1});
  check_equal(iota(DType::F32, {2, 3}, 1), DType::F32, {2, 3}, {0, 1, 2, 0, 1, 2});
  CHECK_THROWS_AS(iota(DType::I32, {2}, 1), RuntimeError);
}

TEST_CASE("take and scatter_add against naive loops", "[runtime][layout][gather]") {
  // x: [2, 5, 3] with x[a, r, c] = 100a + 10r + c; ids [2, 2] along axis 1.
  Tensor x = Tensor::zeros(DType::F32, {2, 5, 3});
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < 3; ++c) x.set((a * 5 + r) * 3 + c, 100.0 * a + 10.0 * r + c);
  Tensor ids = make(DType::I32, {2, 2}, {4, 0, 4, 2});
  Tensor t = take(x, ids, 1, IndexMode::Check);
  REQUIRE(t.shape() == Shape{2, 2, 2, 3});
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t c = 0; c < 3; ++c)
        CHECK(t.get((a * 4 + j) * 3 + c) == 100.0 * a + 10.0 * ids.get(j) + c);
  // Rows of a table (axis 0), any dtype: bytes are copied.
  check_equal(take(make(DType::I32, {3, 2}, {1, 2, 3, 4, 5, 6}),
                   make(DType::I32, {4}, {2, 2, 0, 1}), 0, IndexMode::Check),
              DType::I32, {4, 2}, {5, 6, 5, 6, 1, 2, 3, 4});
  // Out of range: an error naming the id, or zeros in fill mode.
  Tensor bad = make(DType::I32, {3}, {1, 5, -1});
  CHECK_THROWS_WITH(take(x, bad, 1, IndexMode::Check),
                    Catch::Contains("index 5 is out of range for axis 1 of size 5"));
  Tensor filled = take(x, bad, 1, IndexMode::Fill);
  for (int64_t c = 0; c < 3; ++c) {
    CHECK(filled.get(c) == 10.0 + c);     // [0, 0, c]: row 1
    CHECK(filled.get(3 + c) == 0.0);      // [0, 1, c]: id 5
    CHECK(filled.get(6 + c) == 0.0);      // [0, 2, c]: id -1
    CHECK(filled.get(9 + 3 + c) == 0.0);  // [1, 1, c]
  }
  // scatter_add: repeated ids accumulate; updates shaped as take's result.
  Tensor u = Tensor::zeros(DType::F32, {2, 2, 2, 3});
  for (int64_t e = 0; e < u.numel(); ++e) u.set(e, 1.0 + e);
  Tensor s = scatter_add(x, u, ids, 1, IndexMode::Check);
  Tensor expect = x.clone();
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t at = (a * 5 + static_cast<int64_t>(ids.get(j))) * 3 + c;
        expect.set(at, expect.get(at) + u.get((a * 4 + j) * 3 + c));
      }
  for (int64_t e = 0; e < x.numel(); ++e) CHECK(s.get(e) == expect.get(e));
  CHECK_THROWS_WITH(scatter_add(x, Tensor::zeros(DType::F32, {2, 3, 3}), bad, 1, IndexMode::Check),
                    Catch::Contains("out of range"));
  Tensor dropped =
      scatter_add(x, Tensor::full(DType::F32, {2, 3, 3}, 1.0), bad, 1, IndexMode::Fill);
  for (int64_t e = 0; e < x.numel(); ++e)
    CHECK(dropped.get(e) == x.get(e) + ((e / 3) % 5 == 1 ? 1.0 : 0.0));
  // bf16 accumulates in f32 and rounds after each add, in the order of the ids.
  Tensor b = scatter_add(Tensor::zeros(DType::BF16, {1}), make(DType::BF16, {3}, {256, 1, 1}),
                         make(DType::I32, {3}, {0, 0, 0}), 0, IndexMode::Check);
  CHECK(b.get(0) == 256.0);  // 256 + 1 rounds back to 256 in bf16, twice
}
