// tests/unit/runtime/test_gemm_paths.cpp — every way kernels_gemm.cpp computes a product.
//
// einsum specs and shapes chosen to reach each path of detail::gemm — narrow (n <= one
// vector: 16 f32, 8 f64; GEMV n == 1), short (m <= 8), BLAS — with each operand plain or
// transposed in place. Every result is checked against a naive f64 loop; the narrow and
// short f32 paths promise the bits of the naive f32 loop over k in increasing order, which
// the test computes in double and rounds once per operation (exact for f32: the product of
// two floats is exact in double, and double rounding of a sum is innocuous for 24-bit
// operands), so no FMA contraction in this file can change the expectation.
#include <string>
#include <thread>

#include "rt_test_util.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

namespace {

/// op(X)[row, col] for X stored row-major as `rows x cols` (transposed: cols x rows).
double element(const Tensor &x, bool transposed, int64_t row, int64_t col) {
  const int64_t cols = x.shape()[1];
  return transposed ? x.get(col * cols + row) : x.get(row * cols + col);
}

struct Case {
  const char *spec;  // a's letters then b's: i, j output rows/cols, p contracted
  int64_t m, k, n;
};

/// Runs einsum(spec) on random operands and checks it against naive loops.
void check_case(DType dtype, const Case &c, bool exact_f32_order) {
  const std::string spec = c.spec;
  const bool trans_a = spec.rfind("pi", 0) == 0;   // a stored k x m
  const bool trans_b = spec.substr(3, 2) == "jp";  // b stored n x k
  const Shape shape_a = trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape shape_b = trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n};
  Tensor a = random_tensor(dtype, shape_a, 21);
  Tensor b = random_tensor(dtype, shape_b, 22);
  const Tensor ops[] = {a, b};
  INFO(spec << " m=" << c.m << " k=" << c.k << " n=" << c.n << " " << dtype_name(dtype));
  Tensor r = einsum(spec, ops);
  REQUIRE(r.shape() == Shape{c.m, c.n});
  std::vector<double> wide, ordered;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0;
      float in_order = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double x = element(a, trans_a, i, p), y = element(b, trans_b, p, j);
        sum += x * y;
        const auto product = static_cast<float>(x * y);
        in_order = static_cast<float>(static_cast<double>(in_order) + product);
      }
      wide.push_back(sum);
      ordered.push_back(in_order);
    }
  }
  check_close(r, {c.m, c.n}, wide, dtype == DType::F32 ? 1e-5 : 1e-13);
  if (exact_f32_order) check_equal(r, DType::F32, {c.m, c.n}, ordered);
}

}  // namespace

TEST_CASE("narrow products (n <= one vector) accumulate over k in order", "[runtime][linalg]") {
  const Case narrow[] = {
      {"ip,pj->ij", 37, 300, 16},  // dp_loss's shape, scaled down: 4 blocks of 8 rows + 5
      {"ip,pj->ij", 9, 64, 1},     // GEMV
      {"ip,pj->ij", 3, 5, 7},      // fewer rows than a block
      {"pi,pj->ij", 21, 50, 16},   // a transposed in place (dp_loss gradient's inputsᵀ @ dy)
      {"ip,jp->ij", 19, 33, 10},   // b transposed (copied into the panel)
      {"pi,jp->ij", 8, 17, 2},     // both
      {"ip,pj->ij", 4, 0, 3},      // empty contraction: zeros
  };
  for (const Case &c : narrow) check_case(DType::F32, c, true);
  const Case narrow64[] = {{"ip,pj->ij", 13, 40, 8}, {"pi,pj->ij", 10, 30, 3}};
  for (const Case &c : narrow64) check_case(DType::F64, c, false);
}

TEST_CASE("short products (m <= 8) accumulate over k in order", "[runtime][linalg]") {
  const Case short_cases[] = {
      {"ip,pj->ij", 1, 70, 100},  // row vector times a matrix: 3 blocks of 32 columns + 4
      {"ip,pj->ij", 8, 20, 32},   // exactly one block
      {"pi,pj->ij", 5, 9, 45},    // a transposed in place
  };
  for (const Case &c : short_cases) check_case(DType::F32, c, true);
  check_case(DType::F64, {"ip,pj->ij", 3, 25, 40}, false);
}

TEST_CASE("BLAS products take transposed operands in place", "[runtime][linalg]") {
  const Case blas[] = {
      {"ip,pj->ij", 20, 30, 40}, {"pi,pj->ij", 20, 30, 40},
      {"ip,jp->ij", 33, 16, 50},  // dp_loss gradient's dy @ paramsᵀ: k = 16
      {"pi,jp->ij", 17, 9, 24},  {"ip,jp->ij", 4, 10, 30},  // short m but b transposed: BLAS
  };
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Case &c : blas) check_case(dtype, c, false);
  }
  // i32 with both operands transposed: wrapping, exact.
  Tensor a = make(DType::I32, {2, 2}, {2147483647, 1, 2, 3});  // stored k x m
  Tensor b = make(DType::I32, {2, 2}, {2, 5, 1, 7});           // stored n x k
  const Tensor ops[] = {a, b};
  // r[i, j] = sum_p a[p, i] * b[j, p]
  check_equal(einsum("pi,jp->ij", ops), DType::I32, {2, 2},
              {static_cast<double>(static_cast<int32_t>(2u * 2147483647u + 2u * 5u)),
               static_cast<double>(static_cast<int32_t>(2147483647u + 2u * 7u)), 2 + 15, 1 + 21});
}

TEST_CASE("a thread's first BLAS product (after the buffer warm-up) is the later ones' bits",
          "[runtime][linalg]") {
  // kernels_gemm.cpp runs a throw-away sgemm before a thread's first BLAS product (issue
  // 32); it must leave the product itself alone: the first product of a fresh thread
  // agrees with the naive loop and has the bits of the same product taken again.
  const Case c{"ip,pj->ij", 40, 70, 50};
  Tensor a = random_tensor(DType::F32, {c.m, c.k}, 31);
  Tensor b = random_tensor(DType::F32, {c.k, c.n}, 32);
  const Tensor ops[] = {a, b};
  Tensor first;
  std::thread fresh([&] { first = einsum(c.spec, ops); });
  fresh.join();
  std::vector<double> wide;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < c.k; ++p) sum += a.get(i * c.k + p) * b.get(p * c.n + j);
      wide.push_back(sum);
    }
  }
  check_close(first, {c.m, c.n}, wide, 1e-5);
  const Tensor again = einsum(c.spec, ops);
  std::vector<double> again_values;
  for (int64_t i = 0; i < again.numel(); ++i) again_values.push_back(again.get(i));
  check_equal(first, DType::F32, {c.m, c.n}, again_values);
}
