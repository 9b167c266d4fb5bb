// tests/unit/runtime/test_reduce_linalg.cpp — reductions, matmul and einsum.
//
// Reductions are checked by hand and against a naive loop over several axis
// sets; matmul and einsum against naive f64 loops written here.
#include <bit>
#include <limits>
#include <map>
#include <thread>

#include "rt_test_util.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

TEST_CASE("reduce by hand", "[runtime][reduce]") {
  Tensor x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const int64_t axis0[] = {0}, axis1[] = {1}, both[] = {0, 1};
  check_equal(reduce(ReduceOp::Sum, x, axis0), DType::F32, {3}, {5, 7, 9});
  check_equal(reduce(ReduceOp::Sum, x, axis1), DType::F32, {2}, {6, 15});
  check_equal(reduce(ReduceOp::Sum, x, both), DType::F32, {}, {21});
  check_equal(reduce(ReduceOp::Max, x, axis0), DType::F32, {3}, {4, 5, 6});
  check_equal(reduce(ReduceOp::Min, x, axis1), DType::F32, {2}, {1, 4});
  check_equal(reduce(ReduceOp::Sum, x, {}), DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  check_equal(reduce(ReduceOp::Sum, make(DType::I32, {3}, {2147483647, 1, 1}), axis0), DType::I32,
              {}, {-2147483647});
  Tensor b = make(DType::Bool, {2, 2}, {1, 0, 1, 1});
  check_equal(reduce(ReduceOp::Max, b, axis1), DType::Bool, {2}, {1, 1});
  check_equal(reduce(ReduceOp::Min, b, axis1), DType::Bool, {2}, {0, 1});
  CHECK_THROWS_AS(reduce(ReduceOp::Sum, b, axis1), RuntimeError);
  // Empty reductions.
  Tensor empty = Tensor::zeros(DType::F32, {0, 3});
  check_equal(reduce(ReduceOp::Sum, empty, axis0), DType::F32, {3}, {0, 0, 0});
  CHECK_THROWS_WITH(reduce(ReduceOp::Max, empty, axis0), Catch::Contains("empty"));
  // Bad axes.
  const int64_t unsorted[] = {1, 0}, out_of_range[] = {2};
  CHECK_THROWS_AS(reduce(ReduceOp::Sum, x, unsorted), RuntimeError);
  CHECK_THROWS_AS(reduce(ReduceOp::Sum, x, out_of_range), RuntimeError);
  // NaN propagates through max.
  check_equal(reduce(ReduceOp::Max, make(DType::F64, {3}, {1, NAN, 2}), axis0), DType::F64, {},
              {NAN});
}

TEST_CASE("bf16 reduction accumulates in a wider type", "[runtime][reduce]") {
  // 1 + 256 * 2^-8 = 2 exactly; a bf16 accumulator would stay at 1.
  std::vector<double> values(257, std::ldexp(1.0, -8));
  values[0] = 1;
  const int64_t axis0[] = {0};
  check_equal(reduce(ReduceOp::Sum, make(DType::BF16, {257}, values), axis0), DType::BF16, {}, {2});
}

namespace {

/// kernels.h's definition of a floating-point sum, written out literally: all
/// kSumLanes lanes in f64, lane j = x_j + x_{j+L} + ..., then the whole fold.
double defined_sum(const std::vector<double> &xs) {
  std::vector<double> lane(kSumLanes, 0.0);
  for (size_t i = 0; i < xs.size(); ++i) lane[i % kSumLanes] += xs[i];
  for (int64_t s = kSumLanes / 2; s >= 1; s /= 2)
    for (int64_t t = 0; t < s; ++t) lane[t] = lane[t] + lane[t + s];
  return lane[0];
}

}  // namespace

TEST_CASE("reduce over several axes against the defined order", "[runtime][reduce]") {
  // 600 elements along dimension 1: lanes hold several elements, and a sum over
  // it alone is a column sum ([3, 600, 2*5] with the middle reduced).
  const Shape shape = {3, 600, 2, 5};
  const std::vector<std::vector<int64_t>> axis_sets = {{0},    {1},          {3},   {0, 2},
                                                       {1, 3}, {0, 1, 2, 3}, {1, 2}};
  for (DType dtype : {DType::F64, DType::F32}) {
    Tensor x = random_tensor(dtype, shape, 7);
    for (const auto &axes : axis_sets) {
      INFO("axes size " << axes.size() << " first " << axes[0]);
      Tensor sum = reduce(ReduceOp::Sum, x, axes);
      Tensor mx = reduce(ReduceOp::Max, x, axes);
      Shape out_shape;
      std::vector<bool> reduced(4, false);
      for (int64_t a : axes) reduced[a] = true;
      for (int d = 0; d < 4; ++d) {
        if (!reduced[d]) out_shape.push_back(shape[d]);
      }
      REQUIRE(sum.shape() == out_shape);
      // Each output's elements in increasing flat order.
      std::vector<std::vector<double>> seq(num_elements(out_shape));
      std::vector<double> ref_max(num_elements(out_shape), -1e300);
      int64_t flat = 0;
      for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j)
          for (int64_t k = 0; k < shape[2]; ++k)
            for (int64_t l = 0; l < shape[3]; ++l, ++flat) {
              const int64_t idx[4] = {i, j, k, l};
              int64_t o = 0;
              for (int d = 0; d < 4; ++d) {
                if (!reduced[d]) o = o * shape[d] + idx[d];
              }
              seq[o].push_back(x.get(flat));
              ref_max[o] = std::max(ref_max[o], x.get(flat));
            }
      std::vector<double> ref_sum;
      for (const auto &xs : seq) {
        const double v = defined_sum(xs);
        ref_sum.push_back(dtype == DType::F32 ? double(float(v)) : v);
      }
      check_equal(sum, dtype, out_shape, ref_sum);  // bitwise: the defined order
      check_equal(mx, dtype, out_shape, ref_max);
    }
  }
}

TEST_CASE("row sums of every length class against the defined order", "[runtime][reduce]") {
  // Rows up to 2 kSumLanes long never store their lanes, longer ones accumulate them in
  // memory (and from 2^18 elements split over the pool by lanes); every fold in registers:
  // lengths on both sides of each power of two the fold's levels switch at, and rows
  // of mixed magnitudes (so that a different order of additions changes the bits).
  const int64_t lengths[] =
      {
          1,   2,   3,   4,   5,   7,   8,   9,   15,   16,           17,
          31,  32,  33,  63,  64,  65,  100, 127, 128,  129,          200,
          255, 256, 257, 300, 511, 512, 513, 700, 1000, (1 << 18) + 3};  // the last: split over the
                                                                         // pool by lanes
  for (DType dtype : {DType::F32, DType::F64}) {
    for (int64_t n : lengths) {
      INFO("dtype " << dtype_name(dtype) << " n " << n);
      const int64_t rows = 3;
      Tensor x = random_tensor(dtype, {rows, n}, 11 + n);
      for (int64_t i = 0; i < rows * n; i += 7) x.set(i, x.get(i) * 1e7);  // magnitudes apart
      const int64_t axis[] = {1};
      const Tensor sum = reduce(ReduceOp::Sum, x, axis);
      std::vector<double> want;
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> row;
        for (int64_t j = 0; j < n; ++j) row.push_back(x.get(r * n + j));
        const double v = defined_sum(row);
        want.push_back(dtype == DType::F32 ? double(float(v)) : v);
      }
      check_equal(sum, dtype, {rows}, want);  // bitwise
    }
  }
  // A row of -0s sums to +0 (each lane starts at +0), whatever its length.
  for (int64_t n : {3, 200, 600}) {
    Tensor z = Tensor::zeros(DType::F32, {1, n});
    for (int64_t j = 0; j < n; ++j) z.set(j, -0.0);
    const int64_t axis[] = {1};
    const Tensor sum = reduce(ReduceOp::Sum, z, axis);
    CHECK(sum.get(0) == 0.0);
    CHECK_FALSE(std::signbit(sum.get(0)));
  }
}

TEST_CASE("column sums over blocks of lanes and tiles against the defined order",
          "[runtime][reduce]") {
  // 1027 rows: four blocks of kSumLanes rows and 3 rows of a fifth (lanes past them are +0);
  // 1100 columns: a tile of whole rows and a remainder; [2, 300, 5]: short whole rows.
  for (const Shape &shape : {Shape{1027, 1100}, Shape{2, 300, 5}}) {
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    const int64_t blocks = shape.size() == 3 ? shape[0] : 1;
    for (DType dtype : {DType::F32, DType::F64}) {
      Tensor x = random_tensor(dtype, shape, 11);
      const int64_t axis[] = {static_cast<int64_t>(shape.size()) - 2};
      Tensor sum = reduce(ReduceOp::Sum, x, axis);
      std::vector<double> ref;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t t = 0; t < cols; ++t) {
          std::vector<double> column;
          for (int64_t r = 0; r < rows; ++r) column.push_back(x.get((b * rows + r) * cols + t));
          const double v = defined_sum(column);
          ref.push_back(dtype == DType::F32 ? double(float(v)) : v);
        }
      }
      const Shape out_shape = blocks > 1 ? Shape{blocks, cols} : Shape{cols};
      check_equal(sum, dtype, out_shape, ref);  // bitwise: the defined order
    }
  }
}

TEST_CASE("max and min of rows: signed zeros, NaN payloads and infinities in order",
          "[runtime][reduce]") {
  // The sequential definition: acc = -inf (max) / +inf (min), then acc = acc if acc beats x
  // or is NaN, else x. So among equal zeros the last one wins and the first NaN wins.
  // Rows of 40 elements: whole 64-byte vectors and a tail.
  const int64_t last[] = {1};
  auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0xffc00002u);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> rows(6, std::vector<float>(40, -1.0f));
  std::fill(rows[0].begin(), rows[0].begin() + 32, 0.0f);
  rows[0][31] = -0.0f;  // the last zero is -0: max -0
  rows[1].assign(40, -0.0f);
  rows[1][39] = 0.0f;  // last zero +0 (in the tail)
  rows[2][5] = nan_a;
  rows[2][33] = nan_b;  // first NaN wins
  rows[3].assign(40, -inf);
  rows[4][17] = 3.5f;
  rows[4][38] = -7.25f;
  rows[5][36] = nan_b;  // a NaN in the tail only
  Tensor x = Tensor::empty(DType::F32, {6, 40});
  for (int r = 0; r < 6; ++r) std::copy(rows[r].begin(), rows[r].end(), x.data<float>() + r * 40);
  const Tensor mx = reduce(ReduceOp::Max, x, last), mn = reduce(ReduceOp::Min, x, last);
  const uint32_t want_max[] = {bits(-0.0f), bits(0.0f), bits(nan_a),
                               bits(-inf),  bits(3.5f), bits(nan_b)};
  const uint32_t want_min[] = {bits(-1.0f), bits(0.0f),   bits(nan_a),
                               bits(-inf),  bits(-7.25f), bits(nan_b)};
  for (int r = 0; r < 6; ++r) {
    INFO("row " << r);
    CHECK(bits(mx.data<float>()[r]) == want_max[r]);
    CHECK(bits(mn.data<float>()[r]) == want_min[r]);
  }
  // Sums of rows of zeros: each lane starts at +0, so -0 + -0 sums to +0.
  Tensor z = Tensor::empty(DType::F32, {2, 300});
  std::fill(z.data<float>(), z.data<float>() + 600, -0.0f);
  const Tensor zs = reduce(ReduceOp::Sum, z, last);
  CHECK(bits(zs.data<float>()[0]) == bits(0.0f));
  CHECK(bits(zs.data<float>()[1]) == bits(0.0f));
}

TEST_CASE("f32 sums of 10^6 elements stay within one rounding", "[runtime][reduce]") {
  // 0.1f summed 2^20 times: a sequential f32 sum is off by about 1% here.
  const int64_t n = int64_t{1} << 20;
  Tensor x = Tensor::empty(DType::F32, {n});
  std::fill(x.data<float>(), x.data<float>() + n, 0.1f);
  const double exact = double(0.1f) * double(n);
  const int64_t axis0[] = {0};
  const double got = reduce(ReduceOp::Sum, x, axis0).get(0);
  CHECK(got == double(float(exact)));
}

namespace {

/// Naive f64 matmul for 2-D row-major inputs.
std::vector<double> naive_matmul(const Tensor &a, const Tensor &b, int64_t m, int64_t k, int64_t n,
                                 int64_t a_off = 0, int64_t b_off = 0) {
  std::vector<double> out(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        out[i * n + j] += a.get(a_off + i * k + p) * b.get(b_off + p * n + j);
  return out;
}

}  // namespace

TEST_CASE("argmax and argmin: first extreme, NaN wins, row-major over several axes",
          "[runtime][reduce]") {
  Tensor x = make(DType::F32, {2, 3}, {1, 5, 5, -2, -2, 0});
  check_equal(arg_reduce(ReduceOp::Max, x, std::vector<int64_t>{1}), DType::I32, {2}, {1, 2});
  check_equal(arg_reduce(ReduceOp::Min, x, std::vector<int64_t>{1}), DType::I32, {2}, {0, 0});
  check_equal(arg_reduce(ReduceOp::Max, x, std::vector<int64_t>{0}), DType::I32, {3}, {0, 0, 0});
  check_equal(arg_reduce(ReduceOp::Min, x, std::vector<int64_t>{0, 1}), DType::I32, {}, {3});
  Tensor n = make(DType::F64, {4}, {1, NAN, 7, NAN});
  check_equal(arg_reduce(ReduceOp::Max, n, std::vector<int64_t>{0}), DType::I32, {}, {1});
  check_equal(arg_reduce(ReduceOp::Min, n, std::vector<int64_t>{0}), DType::I32, {}, {1});
  Tensor i = make(DType::I32, {3}, {-4, 9, 9});
  check_equal(arg_reduce(ReduceOp::Max, i, std::vector<int64_t>{0}), DType::I32, {}, {1});
  CHECK_THROWS_AS(arg_reduce(ReduceOp::Max, make(DType::F32, {0}, {}), std::vector<int64_t>{0}),
                  RuntimeError);
}

TEST_CASE("matmul 2-D in every dtype", "[runtime][linalg]") {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32}) {
    Tensor a = random_tensor(dtype, {5, 7}, 1);
    Tensor b = random_tensor(dtype, {7, 3}, 2);
    Tensor c = matmul(a, b);
    REQUIRE(c.dtype() == dtype);
    const double tol = dtype == DType::BF16 ? 1e-2 : dtype == DType::F32 ? 1e-6 : 1e-14;
    check_close(c, {5, 3}, naive_matmul(a, b, 5, 7, 3), tol);
  }
  // bf16: exact f32 result rounded once. 1*1 + 2^-8*1 -> 1 (tie to even), not per-step.
  Tensor a = make(DType::BF16, {1, 3}, {1, std::ldexp(1.0, -8), std::ldexp(1.0, -8)});
  Tensor b = make(DType::BF16, {3, 1}, {1, 1, 1});
  check_equal(matmul(a, b), DType::BF16, {1, 1}, {1 + std::ldexp(1.0, -7)});
  CHECK_THROWS_WITH(matmul(Tensor::zeros(DType::F32, {2, 3}), Tensor::zeros(DType::F32, {4, 2})),
                    Catch::Contains("contracting"));
  CHECK_THROWS_AS(matmul(Tensor::zeros(DType::F32, {2, 3}), Tensor::zeros(DType::F64, {3, 2})),
                  RuntimeError);
  CHECK_THROWS_AS(matmul(Tensor::scalar(DType::F32, 1), Tensor::zeros(DType::F32, {1})),
                  RuntimeError);
  check_equal(matmul(Tensor::zeros(DType::F32, {2, 0}), Tensor::zeros(DType::F32, {0, 3})),
              DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST_CASE("matmul batched with broadcast batch dims", "[runtime][linalg]") {
  Tensor a = random_tensor(DType::F64, {2, 1, 4, 3}, 3);
  Tensor b = random_tensor(DType::F64, {3, 3, 5}, 4);
  Tensor c = matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 3, 4, 5});
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      auto block = naive_matmul(a, b, 4, 3, 5, i * 12, j * 15);
      expected.insert(expected.end(), block.begin(), block.end());
    }
  check_close(c, {2, 3, 4, 5}, expected, 1e-14);
  // Batched left operand against a 2-D right operand (folded into one gemm).
  Tensor a3 = random_tensor(DType::F32, {3, 4, 6}, 5);
  Tensor b2 = random_tensor(DType::F32, {6, 2}, 6);
  std::vector<double> expected2;
  for (int64_t i = 0; i < 3; ++i) {
    auto block = naive_matmul(a3, b2, 4, 6, 2, i * 24, 0);
    expected2.insert(expected2.end(), block.begin(), block.end());
  }
  check_close(matmul(a3, b2), {3, 4, 2}, expected2, 1e-6);
  CHECK_THROWS_AS(
      matmul(Tensor::zeros(DType::F32, {2, 2, 2}), Tensor::zeros(DType::F32, {3, 2, 2})),
      RuntimeError);
}

TEST_CASE("matmul rank-1 promotion", "[runtime][linalg]") {
  Tensor v = make(DType::F64, {3}, {1, 2, 3});
  Tensor m = make(DType::F64, {3, 2}, {1, 2, 3, 4, 5, 6});
  check_equal(matmul(v, m), DType::F64, {2}, {22, 28});
  Tensor mt = make(DType::F64, {2, 3}, {1, 3, 5, 2, 4, 6});
  check_equal(matmul(mt, v), DType::F64, {2}, {22, 28});
  check_equal(matmul(v, v), DType::F64, {}, {14});
  Tensor batch = make(DType::F64, {2, 3, 1}, {1, 2, 3, 4, 5, 6});
  check_equal(matmul(make(DType::F64, {3}, {1, 1, 1}), batch), DType::F64, {2, 1}, {6, 15});
  check_equal(matmul(make(DType::I32, {2}, {3, 4}), make(DType::I32, {2}, {5, 6})), DType::I32, {},
              {39});
}

TEST_CASE("einsum against naive loops", "[runtime][linalg]") {
  Tensor a = random_tensor(DType::F64, {2, 3, 4}, 10);
  Tensor b = random_tensor(DType::F64, {2, 4, 5}, 11);
  Tensor c = random_tensor(DType::F64, {4, 3}, 12);
  auto at = [](const Tensor &t, std::initializer_list<int64_t> idx) {
    int64_t flat = 0, d = 0;
    for (int64_t i : idx) flat = flat * t.shape()[d++] + i;
    return t.get(flat);
  };
  {  // batched matmul
    const Tensor ops[] = {a, b};
    Tensor r = einsum("bij,bjk->bik", ops);
    std::vector<double> ref;
    for (int64_t x = 0; x < 2; ++x)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 5; ++k) {
          double s = 0;
          for (int64_t j = 0; j < 4; ++j) s += at(a, {x, i, j}) * at(b, {x, j, k});
          ref.push_back(s);
        }
    check_close(r, {2, 3, 5}, ref, 1e-14);
  }
  {  // contraction over two indices with a transposed output
    const Tensor ops[] = {a, c};
    Tensor r = einsum("bij,ji->b", ops);
    std::vector<double> ref;
    for (int64_t x = 0; x < 2; ++x) {
      double s = 0;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) s += at(a, {x, i, j}) * at(c, {j, i});
      ref.push_back(s);
    }
    check_close(r, {2}, ref, 1e-14);
  }
  {  // outer product with permuted output, index private to one operand summed
    const Tensor ops[] = {c, a};
    Tensor r = einsum("ji,bik->ib", ops);  // j summed from c alone; k summed from a alone
    std::vector<double> ref;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t x = 0; x < 2; ++x) {
        double cs = 0, as = 0;
        for (int64_t j = 0; j < 4; ++j) cs += at(c, {j, i});
        for (int64_t k = 0; k < 4; ++k) as += at(a, {x, i, k});
        ref.push_back(cs * as);
      }
    check_close(r, {3, 2}, ref, 1e-13);
  }
  {  // one operand: transpose and sum
    const Tensor ops[] = {a};
    Tensor r = einsum("bij->jb", ops);
    std::vector<double> ref;
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t x = 0; x < 2; ++x) {
        double s = 0;
        for (int64_t i = 0; i < 3; ++i) s += at(a, {x, i, j});
        ref.push_back(s);
      }
    check_close(r, {4, 2}, ref, 1e-14);
  }
  {  // implicit output (sorted once-used indices): "ij,jk" -> "ik"
    Tensor m1 = make(DType::F32, {2, 2}, {1, 2, 3, 4});
    Tensor m2 = make(DType::F32, {2, 2}, {5, 6, 7, 8});
    const Tensor ops[] = {m1, m2};
    check_equal(einsum("ij,jk", ops), DType::F32, {2, 2}, {19, 22, 43, 50});
    check_equal(einsum("ij,jk->ki", ops), DType::F32, {2, 2}, {19, 43, 22, 50});
    const Tensor ints[] = {make(DType::I32, {2}, {1, 2}), make(DType::I32, {3}, {1, 10, 100})};
    check_equal(einsum("i,j->ij", ints), DType::I32, {2, 3}, {1, 10, 100, 2, 20, 200});
  }
  const Tensor ops[] = {a, b};
  CHECK_THROWS_WITH(einsum("ii,jk->ik", ops), Catch::Contains("repeated index"));
  CHECK_THROWS_WITH(einsum("bij,bkj->bik", ops), Catch::Contains("has sizes"));
  CHECK_THROWS_AS(einsum("bij->bik", ops), RuntimeError);
  CHECK_THROWS_AS(einsum("ij,jk->ik", ops), RuntimeError);
}

TEST_CASE("einsum plans once per spec and shapes: every shape and dtype of one spec is right",
          "[runtime][linalg]") {
  // einsum caches its plan per thread, keyed by spec text and operand shapes. One spec
  // with operands of several shapes and dtypes, interleaved, more keys than the cache
  // holds (so some are planned again), each against integer loops: small integer
  // values make every product and sum exact in every dtype, bf16 included.
  auto ints = [](DType dtype, const Shape &shape, int64_t seed) {
    std::vector<double> values(static_cast<size_t>(num_elements(shape)));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<double>((static_cast<int64_t>(i) * 7 + seed * 3) % 7 - 3);
    return make(dtype, shape, values);
  };
  auto expected = [](const Tensor &x, const Tensor &w) {  // "bij,jk->bik"
    const int64_t nb = x.shape()[0], ni = x.shape()[1], nj = x.shape()[2], nk = w.shape()[1];
    std::vector<double> out;
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t i = 0; i < ni; ++i)
        for (int64_t k = 0; k < nk; ++k) {
          double s = 0;
          for (int64_t j = 0; j < nj; ++j) s += x.get((b * ni + i) * nj + j) * w.get(j * nk + k);
          out.push_back(s);
        }
    return out;
  };
  std::vector<Tensor> first;  // the first round's results, to compare with the second's bits
  for (int round = 0; round < 2; ++round) {
    int64_t seed = 0;
    size_t case_index = 0;
    for (int64_t nb = 1; nb <= 12; ++nb)  // 36 shapes: over the 32 cached
      for (int64_t nj : {int64_t{1}, int64_t{3}, int64_t{8}})
        for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::BF16}) {
          CAPTURE(round, nb, nj, dtype_name(dtype));
          const Tensor x = ints(dtype, {nb, 2 + nb % 3, nj}, ++seed);
          const Tensor w = ints(dtype, {nj, 1 + nb % 5}, ++seed);
          const Tensor ops[] = {x, w};
          const Tensor r = einsum("bij,jk->bik", ops);
          check_equal(r, dtype, {nb, 2 + nb % 3, 1 + nb % 5}, expected(x, w));
          if (round == 0) {
            first.push_back(r);
          } else {
            CHECK(r.bitwise_equal(first[case_index]));
          }
          ++case_index;
        }
  }
  // A cached plan does not vouch for other shapes: a mismatch is still reported.
  const Tensor bad[] = {ints(DType::F32, {2, 3, 4}, 1), ints(DType::F32, {5, 2}, 2)};
  CHECK_THROWS_WITH(einsum("bij,jk->bik", bad), Catch::Contains("has sizes"));
  const Tensor mixed[] = {ints(DType::F32, {2, 3, 4}, 1), ints(DType::F64, {4, 2}, 2)};
  CHECK_THROWS_WITH(einsum("bij,jk->bik", mixed), Catch::Contains("dtypes differ"));
  // Another thread (an empty cache) computes the same bits.
  const Tensor ops[] = {ints(DType::F32, {3, 4, 8}, 5), ints(DType::F32, {8, 6}, 6)};
  const Tensor here = einsum("bij,jk->bik", ops);
  Tensor there;
  std::thread([&] { there = einsum("bij,jk->bik", ops); }).join();
  CHECK(here.bitwise_equal(there));
}

TEST_CASE("einsum_scratch_bytes is what einsum allocates beyond its result",
          "[runtime][linalg][memory]") {
  struct Case {
    const char *spec;
    std::vector<Shape> shapes;
    DType dtype;
    int64_t by_hand;  // -1: not worked out, only measured
  };
  const Case cases[] = {
      {"ij,jk->ik", {{8, 16}, {16, 4}}, DType::F32, 0},    // gemm order: nothing copied
      {"ij,ik->jk", {{64, 32}, {64, 16}}, DType::F32, 0},  // a transposed in place (flag)
      {"ik,jk->ij", {{8, 16}, {4, 16}}, DType::F32, 0},    // b transposed in place
      // moe's expert layer: a [4, 1, 2, 8] copied into e,s,k,d order (256 bytes),
      // the product [1, 8, 16] (512) before its transpose into s,e,k,h.
      {"sekd,edh->sekh", {{4, 1, 2, 8}, {1, 8, 16}}, DType::F32, 256 + 512},
      {"bij,bjk->bki", {{2, 3, 4}, {2, 4, 5}}, DType::F32, 2 * 3 * 5 * 4},  // product transposed
      {"ijx,jk->ik", {{3, 4, 5}, {4, 6}}, DType::F32, 3 * 4 * 4},  // x summed out of a first
      {"ij->ji", {{3, 5}}, DType::F32, 0},
      {"ijk->ki", {{3, 5, 2}}, DType::F32, 3 * 2 * 4},  // summed over j, then transposed
      {"ijk->ik", {{3, 5, 2}}, DType::F32, 0},
      {"ij,jk->ik", {{8, 16}, {16, 4}}, DType::F64, 0},
      {"ij,jk->ik", {{8, 16}, {16, 4}}, DType::BF16, (8 * 16 + 16 * 4 + 8 * 4) * 4},
      {"sekd,edh->sekh", {{4, 1, 2, 8}, {1, 8, 16}}, DType::BF16, -1},
  };
  for (const Case &c : cases) {
    INFO(c.spec << " " << dtype_name(c.dtype));
    std::vector<Tensor> operands;
    for (const Shape &s : c.shapes) operands.push_back(Tensor::full(c.dtype, s, 1.0));
    auto meter = std::make_shared<MemoryMeter>();
    int64_t result_bytes = 0;
    {
      MeterScope scope(meter);
      Tensor out = einsum(c.spec, operands);
      result_bytes = static_cast<int64_t>(out.nbytes());
    }
    const int64_t scratch = einsum_scratch_bytes(c.spec, c.shapes, c.dtype);
    CHECK(meter->peak() - result_bytes == scratch);
    if (c.by_hand >= 0) CHECK(scratch == c.by_hand);
  }
}
