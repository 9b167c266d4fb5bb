// bench/kernels_bench.cpp — host kernel throughput against hand-written baselines.
//
// (a) An elementwise chain y = max(exp(a * x + b), x) on 8M f32 elements through
//     rt::binary / rt::unary versus one single-threaded loop per op doing the same
//     arithmetic (same number of passes and temporaries), and (b) a 1024^3 f32
//     matmul through rt::matmul versus cblas_sgemm called directly, and (c) the
//     per-device products of dp_loss at batch 8192 x 1024 -> 16 on 8 devices and
//     its gradient, a GEMV and a row vector times a matrix, through rt::einsum
//     (kernels_gemm.cpp's narrow/short loops or BLAS) versus the one cblas call
//     (transposes as flags), both on one thread as each of 8 device threads on a
//     small machine, and (d) f32 sums (rows, columns, all) through rt::reduce
//     versus a sequential f32 loop. Prints milliseconds, elements/s or GFLOP/s and the
//     runtime/baseline ratio (lower is better).
#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "spmdrt/kernels.h"

using namespace spmd::rt;

namespace {

/// Best-of-n wall time in milliseconds.
double time_ms(int repeats, const std::function<void()> &fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    auto stop = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return best;
}

}  // namespace

int main() {
  const int64_t n = 8 << 20;
  Tensor x = random_tensor(DType::F32, {n}, 1);
  Tensor a = random_tensor(DType::F32, {n}, 2);
  Tensor b = Tensor::scalar(DType::F32, 0.5);
  Tensor y;
  const double runtime_ms = time_ms(5, [&] {
    Tensor t = binary(BinaryOp::Mul, a, x);
    t = binary(BinaryOp::Add, t, b);
    t = unary(UnaryOp::Exp, t);
    y = binary(BinaryOp::Max, t, x);
  });
  std::vector<float> out;
  const float *px = x.data<float>(), *pa = a.data<float>();
  const double loop_ms = time_ms(5, [&] {
    // Same passes as the kernels: fresh output buffers per op, one op per loop.
    std::vector<float> m(n), s(n), e(n), r(n);
    for (int64_t i = 0; i < n; ++i) m[i] = pa[i] * px[i];
    for (int64_t i = 0; i < n; ++i) s[i] = m[i] + 0.5f;
    for (int64_t i = 0; i < n; ++i) e[i] = std::exp(s[i]);
    for (int64_t i = 0; i < n; ++i) r[i] = std::max(e[i], px[i]);
    out.swap(r);
  });
  for (int64_t i = 0; i < n; i += n / 7) {
    if (y.data<float>()[i] != out[i]) std::printf("MISMATCH at %lld\n", static_cast<long long>(i));
  }
  std::printf("elementwise chain max(exp(a*x+0.5), x), %lld f32 elements:\n",
              static_cast<long long>(n));
  std::printf("  rt kernels : %8.2f ms  %8.3g elements/s\n", runtime_ms, n / (runtime_ms * 1e-3));
  std::printf("  plain loop : %8.2f ms  %8.3g elements/s\n", loop_ms, n / (loop_ms * 1e-3));
  std::printf("  ratio rt/loop: %.2f\n", runtime_ms / loop_ms);

  const int64_t dim = 1024;
  Tensor ma = random_tensor(DType::F32, {dim, dim}, 3);
  Tensor mb = random_tensor(DType::F32, {dim, dim}, 4);
  Tensor mc;
  const double matmul_ms = time_ms(5, [&] { mc = matmul(ma, mb); });
  std::vector<float> c(dim * dim);
  const double blas_ms = time_ms(5, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0f, ma.data<float>(),
                dim, mb.data<float>(), dim, 0.0f, c.data(), dim);
  });
  const double flops = 2.0 * dim * dim * dim;
  std::printf("matmul %lldx%lldx%lld f32:\n", static_cast<long long>(dim),
              static_cast<long long>(dim), static_cast<long long>(dim));
  std::printf("  rt::matmul  : %8.2f ms  %8.2f GFLOP/s\n", matmul_ms, flops / (matmul_ms * 1e6));
  std::printf("  cblas_sgemm : %8.2f ms  %8.2f GFLOP/s\n", blas_ms, flops / (blas_ms * 1e6));
  std::printf("  ratio rt/blas: %.2f\n", matmul_ms / blas_ms);

  // (c) Per-shape products, one BLAS thread (as under 8 device threads on 2 cores).
  openblas_set_num_threads(1);
  struct Product {
    const char *what, *spec;
    Shape a, b;
    bool trans_a, trans_b;
    int64_t m, n, k;
  };
  const Product products[] = {
      {"dp_loss forward x @ w",
       "ij,jk->ik",
       {1024, 1024},
       {1024, 16},
       false,
       false,
       1024,
       16,
       1024},
      {"dp_loss grad x^T @ dy", "ij,ik->jk", {1024, 1024}, {1024, 16}, true, false, 1024, 16, 1024},
      {"dp_loss grad dy @ w^T", "ik,jk->ij", {1024, 16}, {1024, 16}, false, true, 1024, 1024, 16},
      {"GEMV A @ v", "ij,j->i", {4096, 1024}, {1024}, false, false, 4096, 1, 1024},
      {"row vector v @ B", "i,ij->j", {1024}, {1024, 4096}, false, false, 1, 4096, 1024},
  };
  std::printf("products, one thread (rt::einsum vs one cblas_sgemm, transposes as flags):\n");
  for (const Product &p : products) {
    Tensor pa = random_tensor(DType::F32, p.a, 5), pb = random_tensor(DType::F32, p.b, 6);
    const Tensor ops[] = {pa, pb};
    Tensor pc;
    const double rt_ms = time_ms(20, [&] { pc = einsum(p.spec, ops); });
    std::vector<float> ref(static_cast<size_t>(p.m * p.n));
    const double ref_ms = time_ms(20, [&] {
      cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
                  p.trans_b ? CblasTrans : CblasNoTrans, int(p.m), int(p.n), int(p.k), 1.0f,
                  pa.data<float>(), int(p.trans_a ? p.m : p.k), pb.data<float>(),
                  int(p.trans_b ? p.k : p.n), 0.0f, ref.data(), int(p.n));
    });
    const double pflops = 2.0 * p.m * p.n * p.k;
    std::printf(
        "  %-24s %-10s m=%-5lld n=%-5lld k=%-5lld rt %7.3f ms (%6.1f GFLOP/s)  blas %7.3f "
        "ms  ratio rt/blas %.2f\n",
        p.what, p.spec, static_cast<long long>(p.m), static_cast<long long>(p.n),
        static_cast<long long>(p.k), rt_ms, pflops / (rt_ms * 1e6), ref_ms, rt_ms / ref_ms);
  }

  // (d) Sums: rt::reduce (accurate: f64 lanes, kernels.h's kSumLanes) against the
  // plain sequential f32 loop (what a naive `for` computes, and what spmdrt did
  // before its sums were accurate), rows, columns and a whole array.
  const int64_t rows = 8192, cols = 1024;
  Tensor sx = random_tensor(DType::F32, {rows, cols}, 7);
  const float *ps = sx.data<float>();
  std::printf("f32 sums of [%lld, %lld] (rt::reduce vs a sequential f32 loop):\n",
              static_cast<long long>(rows), static_cast<long long>(cols));
  struct SumCase {
    const char *what;
    std::vector<int64_t> axes;
  };
  const SumCase sums[] = {{"rows (axis 1)", {1}}, {"columns (axis 0)", {0}}, {"all", {0, 1}}};
  for (const SumCase &sc : sums) {
    Tensor r;
    const double rt_ms = time_ms(10, [&] { r = reduce(ReduceOp::Sum, sx, sc.axes); });
    std::vector<float> loop_out;
    const double loop_ms = time_ms(10, [&] {
      if (sc.axes.size() == 2) {
        float acc = 0;
        for (int64_t i = 0; i < rows * cols; ++i) acc += ps[i];
        loop_out.assign(1, acc);
      } else if (sc.axes[0] == 1) {
        loop_out.assign(rows, 0.0f);
        for (int64_t i = 0; i < rows; ++i) {
          float acc = 0;
          for (int64_t j = 0; j < cols; ++j) acc += ps[i * cols + j];
          loop_out[i] = acc;
        }
      } else {
        loop_out.assign(cols, 0.0f);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) loop_out[j] += ps[i * cols + j];
      }
    });
    std::printf("  %-18s rt %7.3f ms (%6.2f G elements/s)  loop %7.3f ms  ratio rt/loop %.2f\n",
                sc.what, rt_ms, rows * cols / (rt_ms * 1e6), loop_ms, rt_ms / loop_ms);
  }
  return 0;
}
