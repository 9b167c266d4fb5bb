// tests/unit/runtime/test_gemm_paths.cpp — every way kernels_gemm.cpp computes a product.
//
// einsum specs and shapes chosen to reach each path of detail::gemm — GEMV (n == 1, or
// m == 1 with b transposed), vector times matrix (m == 1, or n == 1 with a transposed),
// narrow (n <= 64 bytes: one or two vectors of columns on AVX2, with and without the
// row-block remainders), short (m <= 8, each row count's column blocks, k past one pass
// of 64 rows), BLAS — with each operand plain or transposed in place. Every result is
// checked against a naive f64 loop, and every path but BLAS (and GEMV and vector times
// matrix where they call OpenBLAS: AVX2 + FMA) against the exact bits it promises: the running sum
// over k in increasing order from +0, each step s + x * y rounded twice, or one fused multiply-add
// fma(x, y, s) where the CPU runs the AVX2 + FMA loops (detail::gemm_fuses_multiply_add). The
// unfused f32 chain is computed in double and rounded once per operation (exact: the product of two
// floats is exact in double, and double rounding of a sum is innocuous for 24-bit operands); the
// fused one with std::fma on floats (correctly rounded). f64 chains are checked the same way; this
// file is compiled for baseline x86-64, which has no FMA to contract `s + x * y` into.
#include <cmath>
#include <string>
#include <thread>

#include "internal.h"
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

/// Whether gemm runs its own loop (not BLAS) for the shape: the bits it promises
/// (docs/runtime.md, "matmul"). One output row or column is OpenBLAS's GEMV on AVX2 + FMA,
/// where BLIS, when installed, takes short and narrow products of 2^17 or more
/// multiply-adds; on AVX-512 with BLIS
/// installed, every product is a library's.
bool own_loop(DType dtype, const Case &c, bool trans_a, bool trans_b) {
  const auto column_bytes = c.n * static_cast<int64_t>(dtype_size(dtype));
  const bool shape_rule = c.n == 1 || c.m == 1 || column_bytes <= 64 || (c.m <= 8 && !trans_b);
  // The runtime's own answer must agree with the shape rule where the loops run.
  const bool own = detail::gemm_runs_own_loop(dtype, trans_a, trans_b, c.m, c.n, c.k);
  if (own) CHECK(shape_rule);
  return own;
}

/// Runs einsum(spec) on random operands and checks it against naive loops; for the
/// shapes gemm's own loops take, also the bits of the running sum over k.
void check_case(DType dtype, const Case &c) {
  const std::string spec = c.spec;
  const bool trans_a = spec.rfind("pi", 0) == 0;   // a stored k x m
  const bool trans_b = spec.substr(3, 2) == "jp";  // b stored n x k
  const Shape shape_a = trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape shape_b = trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n};
  Tensor a = random_tensor(dtype, shape_a, 21);
  Tensor b = random_tensor(dtype, shape_b, 22);
  const Tensor ops[] = {a, b};
  const bool fused = detail::gemm_fuses_multiply_add();
  INFO(spec << " m=" << c.m << " k=" << c.k << " n=" << c.n << " " << dtype_name(dtype)
            << (fused ? " fused" : " unfused"));
  Tensor r = einsum(spec, ops);
  REQUIRE(r.shape() == Shape{c.m, c.n});
  std::vector<double> wide, ordered;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, chain64 = 0;
      float chain32 = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double x = element(a, trans_a, i, p), y = element(b, trans_b, p, j);
        sum += x * y;
        if (fused) {
          chain32 = std::fma(static_cast<float>(x), static_cast<float>(y), chain32);
          chain64 = std::fma(x, y, chain64);
        } else {
          const auto product = static_cast<float>(x * y);
          chain32 = static_cast<float>(static_cast<double>(chain32) + product);
          const double product64 = x * y;
          chain64 = chain64 + product64;
        }
      }
      wide.push_back(sum);
      ordered.push_back(dtype == DType::F32 ? static_cast<double>(chain32) : chain64);
    }
  }
  check_close(r, {c.m, c.n}, wide, dtype == DType::F32 ? 1e-5 : 1e-13);
  if (own_loop(dtype, c, trans_a, trans_b)) check_equal(r, dtype, {c.m, c.n}, ordered);
}

void check_cases(std::initializer_list<Case> cases) {
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Case &c : cases) check_case(dtype, c);
  }
}

}  // namespace

TEST_CASE("GEMV and vector-times-matrix products accumulate over k in order",
          "[runtime][linalg][gemm]") {
  check_cases({
      {"ip,pj->ij", 29, 19, 1},   // GEMV: 16 + 8 rows in 8 x 8 tiles, 5 rows alone; k % 8 = 3
      {"ip,pj->ij", 9, 64, 1},    // GEMV: one tile of rows and one row
      {"ip,jp->ij", 1, 21, 27},   // m == 1, b transposed: b's rows times a's row (GEMV)
      {"pi,pj->ij", 37, 9, 1},    // n == 1, a transposed: vᵀ a (vector times matrix)
      {"ip,pj->ij", 1, 70, 100},  // row vector times a matrix: 4 rows of b a sweep + 2
      {"pi,pj->ij", 1, 6, 2100},  // a transposed; two chunks of c's columns, 4 left over
      {"ip,pj->ij", 1, 3, 5},     // fewer columns than a vector
      {"ip,pj->ij", 1, 1, 1},     // a dot product of length 1
  });
}

TEST_CASE("narrow products (n <= 64 bytes) accumulate over k in order", "[runtime][linalg][gemm]") {
  check_cases({
      {"ip,pj->ij", 37, 300, 16},  // dp_loss's shape, scaled down (f64: BLAS)
      {"ip,pj->ij", 3, 5, 7},      // fewer rows than a block
      {"pi,pj->ij", 21, 50, 16},   // a transposed in place (dp_loss gradient's inputsᵀ @ dy)
      {"pi,pj->ij", 29, 40, 8},    // a transposed, one AVX2 vector of f32 columns
      {"ip,pj->ij", 23, 31, 6},    // one vector of f32 columns, row blocks of 6 + 5
      {"ip,jp->ij", 19, 33, 10},   // b transposed (copied into the panel)
      {"pi,jp->ij", 8, 17, 2},     // both
      {"ip,pj->ij", 4, 0, 3},      // empty contraction: zeros
  });
}

TEST_CASE("short products (m <= 8) accumulate over k in order", "[runtime][linalg][gemm]") {
  check_cases({
      {"ip,pj->ij", 2, 70, 100},  // blocks of 4 vectors (AVX2), passes of 64 rows of b
      {"ip,pj->ij", 3, 130, 45},  // blocks of 2 vectors, 3 passes, columns left over
      {"ip,pj->ij", 8, 20, 32},   // blocks of one vector (AVX2), two of 64-byte vectors
      {"ip,pj->ij", 8, 150, 45},  // 8 rows, 3 passes, 5 columns one at a time
      {"pi,pj->ij", 5, 9, 45},    // a transposed in place
      {"pi,pj->ij", 7, 66, 20},   // a transposed, a pass of 2 rows of b
  });
}

TEST_CASE("BLAS products take transposed operands in place", "[runtime][linalg][gemm]") {
  check_cases({
      {"ip,pj->ij", 20, 30, 40},
      {"pi,pj->ij", 20, 30, 40},
      {"ip,jp->ij", 33, 16, 50},  // dp_loss gradient's dy @ paramsᵀ: k = 16
      {"pi,jp->ij", 17, 9, 24},
      {"ip,jp->ij", 4, 10, 30},  // short m but b transposed: BLAS
  });
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
