// bench/kernels_bench.cpp — host kernel throughput against hand-written baselines.
//
// (a) An elementwise chain y = max(exp(a * x + b), x) on 8M f32 elements through
//     rt::binary / rt::unary versus one single-threaded loop per op doing the same
//     arithmetic (same number of passes and temporaries), and (b) a 1024^3 f32
//     matmul through rt::matmul versus cblas_sgemm called directly, and (c) every
//     class of product kernels_gemm.cpp tells apart — narrow (dp_loss's per-device
//     products at b=8192 and b=2048 and their gradient's x^T @ dy), GEMV and vector
//     times matrix, short, batched, large — through rt::einsum versus the best of
//     cblas_sgemm and, where the output is one row or column, cblas_sgemv (transposes as
//     flags), all on one thread as each of 8 device threads on a small machine (the
//     header line names the vector ISA the CPU offers) — and, where installed
//     (scripts/install-deps.sh installs both), the same products through libxsmm's
//     libxsmm_sgemm (a JIT for small products, BLAS above) and BLIS's sgemm (its own
//     library, opened at run time so that OpenBLAS stays the BLAS of everything else);
//     "best" is the fastest library — and (d) f32 sums (rows, columns, all)
//     through rt::reduce versus a sequential f32 loop. Prints milliseconds, elements/s or GFLOP/s
//     and the runtime/baseline ratio (lower is better). (e) Per-op overhead (alone with
//     --overhead): chains of 400 tiny ops — an einsum "bij,jk->bik" of f32[8,8,8] by f32[8,8],
//     and a row sum then subtract (sum(t, axes=(1,)), reshape, t - s on f32[8,8]) — on one
//     thread (microseconds per op) and as a step of 8 simulated devices on the machine's cores
//     (run_on_mesh, as an executable runs a shmap of them: median step ms and wall us per op
//     per device).
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "spmdrt/collectives.h"
#include "spmdrt/kernels.h"
#include "spmdrt/parallel.h"

#ifdef SPMD_BENCH_LIBXSMM
#include <libxsmm.h>
#endif

using namespace spmd::rt;

namespace {

/// A column-major BLAS sgemm (Fortran's sgemm_, libxsmm_sgemm).
using FortranSgemm = void (*)(const char *, const char *, const int *, const int *, const int *,
                              const float *, const float *, const int *, const float *, const int *,
                              const float *, float *, const int *);

/// BLIS's sgemm_, from its own library opened privately (RTLD_LOCAL: its BLAS
/// symbols do not replace OpenBLAS's for anything else); null when absent.
FortranSgemm blis_sgemm() {
  for (const char *path : {"/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4",
                           "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4",
                           "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4", "libblis.so.4"})
    if (void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND))
      if (void *f = dlsym(h, "sgemm_")) return reinterpret_cast<FortranSgemm>(f);
  return nullptr;
}

/// Row-major C[m, n] = op(A) op(B) through a column-major sgemm: C^T = op(B)^T op(A)^T.
void row_major_sgemm(FortranSgemm f, bool ta, bool tb, int m, int n, int k, const float *a, int lda,
                     const float *b, int ldb, float *c) {
  const float one = 1.0f, zero = 0.0f;
  const char tra = ta ? 'T' : 'N', trb = tb ? 'T' : 'N';
  f(&trb, &tra, &n, &m, &k, &one, b, &ldb, a, &lda, &zero, c, &n);
}

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

/// (e) Fixed per-op cost: chains of kChain tiny ops, where the arithmetic is nothing.
constexpr int kChain = 400;

Tensor einsum_chain(const Tensor &x, const Tensor &w) {
  Tensor t = x;
  for (int i = 0; i < kChain; ++i) {
    const Tensor ops[] = {t, w};
    t = einsum("bij,jk->bik", ops);
  }
  return t;
}

Tensor sum_sub_chain(const Tensor &x) {
  Tensor t = x;
  const int64_t axes[] = {1};
  for (int i = 0; i < kChain / 2; ++i) {  // kChain ops: a sum, then a subtract
    const Tensor s = reduce(ReduceOp::Sum, t, axes);
    t = binary(BinaryOp::Sub, t, reshape(s, {t.shape()[0], 1}));
  }
  return t;
}

/// Median milliseconds of one step of `devices` simulated devices each running `chain`
/// (a barrier before and after each step, as the steps of an executable are timed).
double mesh_step_ms(int64_t devices, int steps, const std::function<Tensor()> &chain) {
  std::vector<double> ms;
  run_on_mesh(Mesh({{"d", devices}}), [&](DeviceContext &ctx) {
    chain();  // warm-up
    for (int s = 0; s < steps; ++s) {
      ctx.barrier();
      const auto start = std::chrono::steady_clock::now();
      chain();
      ctx.barrier();
      const auto stop = std::chrono::steady_clock::now();
      if (ctx.device() == 0)
        ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
  });
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void per_op_overhead() {
  set_threads(1);  // as under device threads: ops do not split
  const Tensor x = random_tensor(DType::F32, {8, 8, 8}, 8),
               w = random_tensor(DType::F32, {8, 8}, 9);
  const Tensor r = random_tensor(DType::F32, {8, 8}, 10);
  const int64_t devices = 8;
  std::printf("per-op overhead: chains of %d tiny ops, f32 (x [8,8,8], w [8,8]; t [8,8]):\n",
              kChain);
  std::printf("  %-34s %12s %14s %16s\n", "chain", "1 thread us/op", "8 devices step ms",
              "us/op/device");
  struct Chain {
    const char *what;
    std::function<Tensor()> run;
  };
  const Chain chains[] = {{"einsum bij,jk->bik", [&] { return einsum_chain(x, w); }},
                          {"sum(t, axes=(1,)); t - reshape(s)", [&] { return sum_sub_chain(r); }}};
  for (const Chain &c : chains) {
    const double one_ms = time_ms(30, [&] { c.run(); });
    const double step_ms = mesh_step_ms(devices, 21, c.run);
    std::printf("  %-34s %12.3f %14.3f %16.2f\n", c.what, one_ms * 1e3 / kChain, step_ms,
                step_ms * 1e3 / kChain);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--overhead")) {
    per_op_overhead();
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--overhead]\n", argv[0]);
    return 2;
  }
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

  // (c) Per-shape products, one BLAS thread (as under 8 device threads on 2 cores):
  // every class of kernels_gemm.cpp against the libraries' calls for the same product.
  openblas_set_num_threads(1);
  set_threads(1);  // and the runtime's pool: one thread, as the libraries get
  struct Product {
    const char *cls, *what, *spec;
    Shape a, b;
    bool trans_a, trans_b;
    int64_t batch, m, n, k;  // per batch element
  };
  const Product products[] = {
      {"narrow",
       "dp_loss b=8192 x @ w",
       "ij,jk->ik",
       {1024, 1024},
       {1024, 16},
       false,
       false,
       1,
       1024,
       16,
       1024},
      {"narrow",
       "dp_loss b=8192 x^T @ dy",
       "ij,ik->jk",
       {1024, 1024},
       {1024, 16},
       true,
       false,
       1,
       1024,
       16,
       1024},
      {"narrow",
       "dp_loss b=2048 x @ w",
       "ij,jk->ik",
       {256, 512},
       {512, 16},
       false,
       false,
       1,
       256,
       16,
       512},
      {"narrow",
       "dp_loss b=2048 x^T @ dy",
       "ij,ik->jk",
       {256, 512},
       {256, 16},
       true,
       false,
       1,
       512,
       16,
       256},
      {"narrow", "n=8", "ij,jk->ik", {1024, 1024}, {1024, 8}, false, false, 1, 1024, 8, 1024},
      {"narrow",
       "n=5, b transposed",
       "ij,kj->ik",
       {1000, 700},
       {5, 700},
       false,
       true,
       1,
       1000,
       5,
       700},
      {"gemv", "A @ v", "ij,j->i", {4096, 1024}, {1024}, false, false, 1, 4096, 1, 1024},
      {"gemv", "A @ v, in cache", "ij,j->i", {512, 512}, {512}, false, false, 1, 512, 1, 512},
      {"gemv", "v @ A (A^T v)", "ij,i->j", {1024, 4096}, {1024}, true, false, 1, 4096, 1, 1024},
      {"gemv", "v @ B, in cache", "i,ij->j", {512}, {512, 512}, false, false, 1, 1, 512, 512},
      {"short", "m=4", "ij,jk->ik", {4, 1024}, {1024, 4096}, false, false, 1, 4, 4096, 1024},
      {"short", "m=8", "ij,jk->ik", {8, 1024}, {1024, 4096}, false, false, 1, 8, 4096, 1024},
      {"short", "m=8, in cache", "ij,jk->ik", {8, 256}, {256, 512}, false, false, 1, 8, 512, 256},
      {"batched",
       "8 x [128,64]@[64,128]",
       "bij,bjk->bik",
       {8, 128, 64},
       {8, 64, 128},
       false,
       false,
       8,
       128,
       128,
       64},
      {"batched",
       "8 x [256,256]@[256,16]",
       "bij,bjk->bik",
       {8, 256, 256},
       {8, 256, 16},
       false,
       false,
       8,
       256,
       16,
       256},
      {"large",
       "dp_loss grad dy @ w^T",
       "ik,jk->ij",
       {1024, 16},
       {1024, 16},
       false,
       true,
       1,
       1024,
       1024,
       16},
      {"large", "512^3", "ij,jk->ik", {512, 512}, {512, 512}, false, false, 1, 512, 512, 512},
  };
  __builtin_cpu_init();
  const char *isa = __builtin_cpu_supports("avx512f")                                 ? "AVX-512"
                    : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "AVX2 + FMA"
                                                                                      : "baseline";
  FortranSgemm xsmm = nullptr;
#ifdef SPMD_BENCH_LIBXSMM
  xsmm = reinterpret_cast<FortranSgemm>(&libxsmm_sgemm);
#endif
  const FortranSgemm blis = blis_sgemm();
  std::printf(
      "products, one thread, CPU with %s: rt::einsum vs the best library on the same operands,\n"
      "transposes as flags: OpenBLAS's cblas_sgemm and (one output row or column) cblas_sgemv,\n"
      "libxsmm_sgemm (%s), BLIS's sgemm (%s); ms:\n",
      isa, xsmm ? "linked" : "not installed: -", blis ? "found" : "not installed: -");
  std::printf("  %-7s %-26s %5s %5s %5s %8s %8s %8s %8s %8s %7s %6s %-6s\n", "class", "shape", "m",
              "n", "k", "rt", "sgemm", "sgemv", "libxsmm", "blis", "GFLOP/s", "rt/lib", "best");
  for (const Product &p : products) {
    Tensor pa = random_tensor(DType::F32, p.a, 5), pb = random_tensor(DType::F32, p.b, 6);
    const Tensor ops[] = {pa, pb};
    Tensor pc;
    const double rt_ms = time_ms(20, [&] { pc = einsum(p.spec, ops); });
    const int lda = int(p.trans_a ? p.m : p.k), ldb = int(p.trans_b ? p.k : p.n);
    std::vector<float> ref(static_cast<size_t>(p.batch * p.m * p.n));
    const double gemm_ms = time_ms(20, [&] {
      for (int64_t e = 0; e < p.batch; ++e) {
        cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
                    p.trans_b ? CblasTrans : CblasNoTrans, int(p.m), int(p.n), int(p.k), 1.0f,
                    pa.data<float>() + e * p.m * p.k, lda, pb.data<float>() + e * p.k * p.n, ldb,
                    0.0f, ref.data() + e * p.m * p.n, int(p.n));
      }
    });
    double gemv_ms = 0;
    if (p.batch == 1 && (p.n == 1 || p.m == 1)) {
      // n == 1: c = op(A) v; m == 1: cᵀ = op(B)ᵀ x. The matrix's stored layout decides the flag.
      const bool on_a = p.n == 1;
      const bool trans = on_a ? p.trans_a : !p.trans_b;
      const float *mat = on_a ? pa.data<float>() : pb.data<float>();
      const float *vec = on_a ? pb.data<float>() : pa.data<float>();
      const int rows = int(on_a ? (p.trans_a ? p.k : p.m) : (p.trans_b ? p.n : p.k));
      const int cols = int(on_a ? (p.trans_a ? p.m : p.k) : (p.trans_b ? p.k : p.n));
      gemv_ms = time_ms(20, [&] {
        cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, rows, cols, 1.0f, mat, cols,
                    vec, 1, 0.0f, ref.data(), 1);
      });
    }
    // The same product through a column-major sgemm, checked against cblas_sgemm's
    // (a wrongly transposed call would time another product); -1: the library is absent.
    const std::vector<float> want = ref;
    std::vector<float> got(ref.size());
    auto fortran_ms = [&](FortranSgemm f, const char *name) {
      if (!f) return -1.0;
      const double ms = time_ms(20, [&] {
        for (int64_t e = 0; e < p.batch; ++e)
          row_major_sgemm(f, p.trans_a, p.trans_b, int(p.m), int(p.n), int(p.k),
                          pa.data<float>() + e * p.m * p.k, lda, pb.data<float>() + e * p.k * p.n,
                          ldb, got.data() + e * p.m * p.n);
      });
      for (size_t i = 0; i < got.size(); ++i)
        if (std::abs(got[i] - want[i]) > 1e-3f * (1.0f + std::abs(want[i]))) {
          std::fprintf(stderr, "kernels_bench: %s's %s differs from cblas_sgemm's at %zu\n", name,
                       p.what, i);
          std::exit(1);
        }
      return ms;
    };
    const double xsmm_ms = fortran_ms(xsmm, "libxsmm"), blis_ms = fortran_ms(blis, "BLIS");
    double lib_ms = gemm_ms;
    const char *best = "sgemm";
    for (const auto &[ms, name] :
         {std::pair{gemv_ms, "sgemv"}, std::pair{xsmm_ms, "libxsmm"}, std::pair{blis_ms, "blis"}})
      if (ms > 0 && ms < lib_ms) lib_ms = ms, best = name;
    const double pflops = 2.0 * p.batch * p.m * p.n * p.k;
    auto column = [](double ms) {
      char out[16] = "-";
      if (ms > 0) std::snprintf(out, sizeof out, "%.3f", ms);
      return std::string(out);
    };
    std::printf("  %-7s %-26s %5lld %5lld %5lld %8.3f %8.3f %8s %8s %8s %7.1f %6.2f %-6s\n", p.cls,
                p.what, static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k), rt_ms, gemm_ms, column(gemv_ms).c_str(),
                column(xsmm_ms).c_str(), column(blis_ms).c_str(), pflops / (rt_ms * 1e6),
                rt_ms / lib_ms, best);
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
  per_op_overhead();
  return 0;
}
