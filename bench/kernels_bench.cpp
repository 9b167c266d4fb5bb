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
//     library, opened at run time so that OpenBLAS stays the BLAS of everything else) and
//     oneDNN's dnnl_sgemm (opened the same way, its OpenMP runtime on one thread);
//     "best" is the library with the lowest median in the even rounds. The contenders of a
//     product are timed in interleaved rounds (--rounds, the first one rotating), and rt/lib
//     is the median of the odd rounds' ratios with its quartiles (the rounds that choose
//     the best library do not measure against it: the lowest of several noisy medians is
//     low by chance too); on a shared or virtual machine a
//     slow spell then falls on every contender alike (timed one after the other, the
//     same product scattered 1.3x between runs here) — and (d) f32 sums (rows, columns, all)
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
#include <string>
#include <vector>

#include "mesh_timing.h"
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

/// oneDNN's row-major dnnl_sgemm, from its own library opened privately; null when absent.
/// Its OpenMP runtime is told to use one thread (as the other libraries do here).
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                          const float *, int64_t, float, float *, int64_t);
DnnlSgemm dnnl_sgemm() {
  for (const char *path : {"/usr/lib/x86_64-linux-gnu/libdnnl.so.2", "libdnnl.so.2"})
    if (void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)) {
      auto f = reinterpret_cast<DnnlSgemm>(dlsym(h, "dnnl_sgemm"));
      auto threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
      if (f && threads) {
        threads(1);
        return f;
      }
    }
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

/// One timed party of section (c): a name for the header and its call (empty: absent).
struct Contender {
  const char *name = "";
  std::function<void()> call;
};

/// Section (c)'s timings: per contender, one sample per round (ms per call) and the
/// median of its rounds.
struct Interleaved {
  std::vector<std::vector<double>> samples;
  std::vector<double> median_ms;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

/// Times the contenders in `rounds` rounds, each round running every present contender
/// once, the first one rotating from round to round, so that a slow spell of this
/// machine (other processes, a stolen virtual CPU) falls on all of them alike rather
/// than on whichever ran then. A sample is the mean of as many back-to-back calls as
/// fill about 2 ms (measured once after a warm-up call), so that a product of a few
/// microseconds is not timed by the clock's own cost.
Interleaved time_interleaved(const std::vector<Contender> &contenders, int rounds) {
  using Clock = std::chrono::steady_clock;
  const size_t n = contenders.size();
  std::vector<int> calls(n, 1);
  for (size_t c = 0; c < n; ++c) {
    if (!contenders[c].call) continue;
    contenders[c].call();  // warm: caches, plans, the libraries' buffers
    const auto start = Clock::now();
    contenders[c].call();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    calls[c] = std::clamp(static_cast<int>(2.0 / std::max(ms, 1e-4)), 1, 10000);
  }
  Interleaved t;
  t.samples.assign(n, {});
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const size_t c = (i + static_cast<size_t>(r)) % n;
      if (!contenders[c].call) continue;
      const auto start = Clock::now();
      for (int k = 0; k < calls[c]; ++k) contenders[c].call();
      t.samples[c].push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - start).count() / calls[c]);
    }
  }
  t.median_ms.assign(n, 0.0);
  for (size_t c = 0; c < n; ++c)
    if (!t.samples[c].empty()) t.median_ms[c] = median(t.samples[c]);
  return t;
}

struct Quartiles {
  double lower, median, upper;
};

/// The median of contender c's samples in rounds of one parity (0: even, 1: odd).
double parity_median(const Interleaved &t, size_t c, size_t parity) {
  std::vector<double> v;
  for (size_t r = parity; r < t.samples[c].size(); r += 2) v.push_back(t.samples[c][r]);
  return median(v);
}

/// The library rt is compared with, chosen by its median in the even rounds only: the
/// lowest of several noisy medians is low by chance too, so the rounds that choose it
/// are not the rounds that measure against it (ratio_quartiles takes the odd ones).
size_t best_library(const std::vector<Contender> &contenders, const Interleaved &t) {
  size_t best = 1;
  for (size_t c = 2; c < contenders.size(); ++c)
    if (contenders[c].call && parity_median(t, c, 0) < parity_median(t, best, 0)) best = c;
  return best;
}

/// The quartiles of the ratios samples[a] / samples[b] of the odd rounds.
Quartiles ratio_quartiles(const Interleaved &t, size_t a, size_t b) {
  std::vector<double> ratios;
  for (size_t r = 1; r < t.samples[a].size(); r += 2)
    ratios.push_back(t.samples[a][r] / t.samples[b][r]);
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double f) { return ratios[static_cast<size_t>(f * (ratios.size() - 1) + 0.5)]; };
  return {at(0.25), median(ratios), at(0.75)};
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

/// Median milliseconds of one step of `devices` simulated devices each running `chain`.
double mesh_step_ms(int64_t devices, int steps, const std::function<Tensor()> &chain) {
  return spmd::bench::median_call_us(Mesh({{"d", devices}}), steps,
                                     [&](DeviceContext &) { return [&] { chain(); }; }) /
         1e3;
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

constexpr const char *kUsage =
    "usage: kernels_bench [--overhead | --products | --only TEXT] [--rounds N]\n"
    "  (no option)  every section: elementwise chain, 1024^3 matmul, products per shape\n"
    "               class against the libraries, f32 sums, per-op overhead\n"
    "  --products   only the products per shape class\n"
    "  --only TEXT  only the products whose shape's description contains TEXT\n"
    "  --overhead   only the per-op overhead\n"
    "  --rounds N   interleaved rounds per product (default 21; at least 4)\n";

}  // namespace

int main(int argc, char **argv) {
  bool overhead_only = false, products_only = false;
  int rounds = 21;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--overhead") {
      overhead_only = true;
    } else if (arg == "--products") {
      products_only = true;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
      products_only = true;
    } else if (arg == "--rounds" && i + 1 < argc && std::atoi(argv[i + 1]) >= 4) {
      rounds = std::atoi(argv[++i]);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  if (overhead_only) {
    per_op_overhead();
    return 0;
  }
  if (!products_only) {
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
      if (y.data<float>()[i] != out[i])
        std::printf("MISMATCH at %lld\n", static_cast<long long>(i));
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
  }

  // (c) Per-shape products, one BLAS thread (as under 8 device threads on 2 cores):
  // every class of kernels_gemm.cpp against the libraries' calls for the same product.
  openblas_set_num_threads(1);
  set_threads(1);       // and the runtime's pool: one thread, as the libraries get
  keep_freed_memory();  // as executables and `spmdc run` keep the heap
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
  const DnnlSgemm dnnl = dnnl_sgemm();
  std::printf(
      "products, one thread, CPU with %s: rt::einsum vs the best library on the same operands,\n"
      "transposes as flags: OpenBLAS's cblas_sgemm and (one output row or column) cblas_sgemv,\n"
      "libxsmm_sgemm (%s), BLIS's sgemm (%s), oneDNN's dnnl_sgemm (%s); medians of %d\n"
      "interleaved rounds, ms; best: the library with the lowest median in the even rounds;\n"
      "rt/lib: the median of the odd rounds' ratios to it (their quartiles after it; < 1: rt\n"
      "faster):\n",
      isa, xsmm ? "linked" : "not installed: -", blis ? "found" : "not installed: -",
      dnnl ? "found" : "not installed: -", rounds);
  std::printf("  %-7s %-26s %5s %5s %5s %8s %8s %8s %8s %8s %8s %7s %6s %-11s %-7s\n", "class",
              "shape", "m", "n", "k", "rt", "sgemm", "sgemv", "libxsmm", "blis", "onednn",
              "GFLOP/s", "rt/lib", "quartiles", "best");
  for (const Product &p : products) {
    if (!only.empty() && std::string(p.what).find(only) == std::string::npos) continue;
    Tensor pa = random_tensor(DType::F32, p.a, 5), pb = random_tensor(DType::F32, p.b, 6);
    const Tensor ops[] = {pa, pb};
    const int lda = int(p.trans_a ? p.m : p.k), ldb = int(p.trans_b ? p.k : p.n);
    // Each contender writes an output of its own, as rt::einsum does (for a product that
    // mostly writes its output, such as k = 16, one buffer shared by the libraries was
    // in cache for each of them and rt's was not).
    std::vector<std::vector<float>> outs(6, std::vector<float>(size_t(p.batch * p.m * p.n)));
    // The contenders, in the columns' order; an absent one has no call.
    std::vector<Contender> contenders(6);
    contenders[0] = {"rt", [&] { (void)einsum(p.spec, ops); }};
    contenders[1] = {"sgemm", [&] {
                       for (int64_t e = 0; e < p.batch; ++e)
                         cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
                                     p.trans_b ? CblasTrans : CblasNoTrans, int(p.m), int(p.n),
                                     int(p.k), 1.0f, pa.data<float>() + e * p.m * p.k, lda,
                                     pb.data<float>() + e * p.k * p.n, ldb, 0.0f,
                                     outs[1].data() + e * p.m * p.n, int(p.n));
                     }};
    if (p.batch == 1 && (p.n == 1 || p.m == 1)) {
      // n == 1: c = op(A) v; m == 1: cᵀ = op(B)ᵀ x. The matrix's stored layout decides the flag.
      const bool on_a = p.n == 1;
      const bool trans = on_a ? p.trans_a : !p.trans_b;
      const float *mat = on_a ? pa.data<float>() : pb.data<float>();
      const float *vec = on_a ? pb.data<float>() : pa.data<float>();
      const int rows = int(on_a ? (p.trans_a ? p.k : p.m) : (p.trans_b ? p.n : p.k));
      const int cols = int(on_a ? (p.trans_a ? p.m : p.k) : (p.trans_b ? p.k : p.n));
      contenders[2] = {"sgemv", [&, trans, mat, vec, rows, cols] {
                         cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, rows, cols,
                                     1.0f, mat, cols, vec, 1, 0.0f, outs[2].data(), 1);
                       }};
    }
    auto fortran = [&](FortranSgemm f, size_t c) {
      return [&, f, c] {
        for (int64_t e = 0; e < p.batch; ++e)
          row_major_sgemm(f, p.trans_a, p.trans_b, int(p.m), int(p.n), int(p.k),
                          pa.data<float>() + e * p.m * p.k, lda, pb.data<float>() + e * p.k * p.n,
                          ldb, outs[c].data() + e * p.m * p.n);
      };
    };
    if (xsmm) contenders[3] = {"libxsmm", fortran(xsmm, 3)};
    if (blis) contenders[4] = {"blis", fortran(blis, 4)};
    if (dnnl)
      contenders[5] = {"onednn", [&] {
                         for (int64_t e = 0; e < p.batch; ++e)
                           dnnl(p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, 1.0f,
                                pa.data<float>() + e * p.m * p.k, lda,
                                pb.data<float>() + e * p.k * p.n, ldb, 0.0f,
                                outs[5].data() + e * p.m * p.n, p.n);
                       }};
    // Every contender computes the same product (a wrongly transposed call would time
    // another one): each checked against rt::einsum's result before timing.
    const Tensor want = einsum(p.spec, ops);
    for (size_t c = 1; c < contenders.size(); ++c) {
      if (!contenders[c].call) continue;
      std::vector<float> &out = outs[c];
      const size_t checked = c == 2 ? size_t(std::max(p.m, p.n)) : out.size();
      std::fill(out.begin(), out.end(), std::nanf(""));
      contenders[c].call();
      for (size_t i = 0; i < checked; ++i) {
        const float w = want.data<float>()[i];
        if (!(std::abs(out[i] - w) <= 1e-3f * (1.0f + std::abs(w)))) {
          std::fprintf(stderr, "kernels_bench: %s's %s differs from rt::einsum's at %zu\n",
                       contenders[c].name, p.what, i);
          return 1;
        }
      }
    }
    const Interleaved t = time_interleaved(contenders, rounds);
    const size_t best = best_library(contenders, t);
    const Quartiles q = ratio_quartiles(t, 0, best);
    const double pflops = 2.0 * p.batch * p.m * p.n * p.k;
    auto column = [&](size_t c) {
      char text[16] = "-";
      if (contenders[c].call) std::snprintf(text, sizeof text, "%.4f", t.median_ms[c]);
      return std::string(text);
    };
    char quartiles[32];
    std::snprintf(quartiles, sizeof quartiles, "%.2f-%.2f", q.lower, q.upper);
    std::printf("  %-7s %-26s %5lld %5lld %5lld %8s %8s %8s %8s %8s %8s %7.1f %6.2f %-11s %-7s\n",
                p.cls, p.what, static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k), column(0).c_str(), column(1).c_str(),
                column(2).c_str(), column(3).c_str(), column(4).c_str(), column(5).c_str(),
                pflops / (t.median_ms[0] * 1e6), q.median, quartiles, contenders[best].name);
  }
  if (products_only) return 0;

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
