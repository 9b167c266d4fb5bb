// runtime/cpu/kernels_gemm.cpp — the one matrix product every matmul and einsum calls.
//
// detail::gemm computes the row-major C[m, n] = op(A) @ op(B), op(X) = X or Xᵀ (a
// transposed operand stays where it is: A stored k × m, B stored n × k). f32/f64 products
// take one of five paths, chosen by shape only (choose_path, the same on every machine):
//
// 1. GEMV (n == 1 with A not transposed, or m == 1 with B transposed, which is B x):
//    8 × 8 tiles of the matrix transposed in registers so that each vector lane is one
//    of its rows, the vector's element broadcast; two tiles of rows at a time.
// 2. Vector times matrix (m == 1 with B not transposed, or n == 1 with A transposed,
//    which is vᵀ A): C's row is swept once per four rows of B (C stays in L1, B streams
//    through once, contiguously).
//    On AVX2 + FMA without AVX-512, paths 1 and 2 call cblas_sgemv/dgemv instead, which
//    is faster there (OpenBLAS's bits).
// 3. Narrow (n <= 64 bytes of columns: 16 f32, 8 f64), e.g. dp_loss's
//    [1024, 1024] @ [1024, 16] and its gradient's inputsᵀ @ dy: op(B) is copied once into
//    a zero-padded k × (whole vectors) panel, A is streamed once, unpacked, and blocks of
//    rows of C accumulate in vector registers. A general BLAS packs the big operand first,
//    which dominated these products (issue 17).
// 4. Short (m <= 8, B not transposed): op(A) packed k × m, columns of C in blocks of
//    vectors held in registers over 64 rows of B at a time (a block reads B down its
//    columns; longer runs cost a TLB miss per row).
// 5. Everything else: cblas_sgemm/dgemm, the transposes passed as flags, one call per
//    tile of C's longer side (tile_rows: fixed by the shape, never by the thread count),
//    the tiles run by the pool (spmdrt/parallel.h). OpenBLAS runs single-threaded.
// Narrow and GEMV rows are split over the pool too (their rows are independent: the
// same bits however they are split); GEMV through OpenBLAS is tiled like path 5.
// i32: an i-k-j loop with wrapping arithmetic.
//
// Paths 1–4 (runtime/cpu/gemm_loops.h) are compiled three times and one is picked from
// the CPU's features once per process (gemm_isa): AVX-512 (64-byte vectors), AVX2 with
// FMA (32-byte, kernels_gemm_avx2.cpp) and baseline x86-64 (16-byte). Every output
// element of paths 1–4 is the running sum over k in increasing order from +0; with
// AVX-512 and baseline each product and sum is rounded on its own (no FMA:
// -ffp-contract=off), the naive loop's bits; with AVX2 + FMA each step is one fused
// multiply-add, s = fma(a_p, b_p, s), the bits of that loop. Without the fusion, the
// mul + add of AVX2 lost to OpenBLAS's FMA kernels (issue 32: 1.1–1.5x on dp_loss's
// b=2048 products on a Zen 1 core). AVX-512 keeps the narrow blocking tuned before
// (16 rows a block for a transposed A, 8 otherwise); its GEMV, vector-times-matrix and
// short products now run paths 1, 2 and 4 (same bits; not measured on AVX-512).
// BLAS products' bits are OpenBLAS's. The choice depends on the CPU only, so `spmdc run` and an
// executable on one machine take the same path and agree bit for bit.
//
// On AVX-512 the own loops lost to the libraries (bench/kernels_bench on a 2-core Xeon,
// docs/backend.md, "Matrix products per shape class"): BLIS beat them on narrow, short and
// GEMV products (1.1–2.4x), and OpenBLAS's GEMV beat paths 1 and 2. So on AVX-512, where
// BLIS is installed (Debian's libblis4-serial; SPMDRT_BLIS=0 turns it off), paths 1–4 call
// BLIS's sgemm/dgemm, tiled like path 5 (tiles fixed by the shape); without BLIS, GEMV and
// vector times matrix call OpenBLAS's GEMV as on AVX2. BLIS is opened privately
// (dlopen RTLD_LOCAL | RTLD_DEEPBIND) so that its BLAS symbols never replace OpenBLAS's.
// Those products' bits are then the library's, the same in `spmdc run` and an executable
// on one machine (gemm_runs_own_loop says which products keep the promise above).
//
// On AVX2 + FMA (measured on 2-core AMD EPYCs, Zen 1 and Zen 3, docs/backend.md, "On
// AVX2"), BLIS beat the short loops (1.3-1.9x), the narrow ones on large A (1.05-1.7x;
// on small A it tied on Zen 1 and won 1.4-1.7x on Zen 3) and general products of
// batched attention's size (128 x 128 x 64: 1.2-1.3x), while OpenBLAS's GEMV (tiled) beat
// or tied BLIS and beat paths 1 and 2, and BLIS lost 2x at k = 16, 1.5x on 256 x 2048 x
// 2048 and tied on 512^3. So there, with BLIS installed, short and narrow products of at
// least kLoopBelowWork multiply-adds call BLIS (below, its per-call cost loses to the own
// loops), general products of at most kSmallOnBlis multiply-adds with k >= 32 too, and
// GEMV stays on OpenBLAS. Where oneDNN is installed too (Debian's libdnnl2; SPMDRT_DNNL=0
// turns it off), f32 general products with A not transposed call its dnnl_sgemm when they
// have at most 256 columns and 2^25 multiply-adds, or are A @ Bᵀ with k <= 64 and at most
// 2^24 (general_on_dnnl; measured on Zen 3 only, so on AVX2 only), before the BLIS rule.
//
// Before a thread's first BLAS product, warm_blas_buffer runs one 64 x 384 x 384 sgemm on
// zeros (about 19 MFLOP, half a millisecond) whose result is thrown away (issue 32). On
// the 2-core AVX2 development machine (a virtual machine, OpenBLAS 0.3.21 with its Zen
// kernels) a [128, 256] x [256, 256] product ran at 10 GFLOP/s until one product of about
// this size or more had run anywhere in the process, then at 35 GFLOP/s for the rest of
// it; perf put 76% of the slow kernel's samples just after one `prefetcht1` of its
// inner loop. The likely cause: it prefetches pages of OpenBLAS's work buffer that small
// products never write, and a software prefetch of an unmapped page walks the page
// tables every time (dearly under virtualisation) without mapping it. The transformer
// block of bench/jax at s = 128, whose products are all small, ran 2x faster with the
// warm-up (docs/backend.md). OpenBLAS hands a buffer to each concurrent caller; device
// threads make their first products at about the same time, so each one's warm-up fills
// a buffer of its own. The
// warm-up writes only its own scratch output: no result changes.
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "gemm_loops.h"
#include "internal.h"
#include "spmdrt/parallel.h"

namespace spmd::rt::detail {

namespace {

/// The instruction set paths 1–4 run with, from the CPU's features (cached).
enum class GemmIsa { Avx512, Avx2Fma, Baseline };

GemmIsa gemm_isa() {
  static const GemmIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return GemmIsa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return GemmIsa::Avx2Fma;
    return GemmIsa::Baseline;
  }();
  return isa;
}

constexpr int64_t kShortRows = 8;

/// The path for a shape: the same on every machine.
template <typename T>
GemmPath choose_path(bool trans_a, bool trans_b, int64_t m, int64_t n) {
  if (n == 1) return trans_a ? GemmPath::VecMat : GemmPath::Gemv;
  if (m == 1) return trans_b ? GemmPath::Gemv : GemmPath::VecMat;
  if (n * static_cast<int64_t>(sizeof(T)) <= 64) return GemmPath::Narrow;
  if (m <= kShortRows && !trans_b) return GemmPath::Short;
  return GemmPath::Blas;
}

// Each path compiled for AVX-512 (FN_avx512) and baseline x86-64 (FN_baseline), the
// multiply-add separate. flatten inlines the path into the wrapper, compiled for the
// wrapper's target; one wrapper per path keeps each function small.
#define SPMDRT_GEMM_PATH(FN)                                                           \
  template <typename T>                                                                \
  [[gnu::target("avx512f"), gnu::flatten]] void FN##_avx512(const GemmProduct<T> &g) { \
    FN<T, 64, Separate>(g);                                                            \
  }                                                                                    \
  template <typename T>                                                                \
  [[gnu::flatten]] void FN##_baseline(const GemmProduct<T> &g) {                       \
    FN<T, 16, Separate>(g);                                                            \
  }
SPMDRT_GEMM_PATH(gemv)
SPMDRT_GEMM_PATH(vecmat)
SPMDRT_GEMM_PATH(narrow)
SPMDRT_GEMM_PATH(short_gemm)
#undef SPMDRT_GEMM_PATH

template <typename T>
void loops_avx512(const GemmProduct<T> &g) {
  switch (g.path) {
    case GemmPath::Gemv:
      return gemv_avx512(g);
    case GemmPath::VecMat:
      return vecmat_avx512(g);
    case GemmPath::Narrow:
      return narrow_avx512(g);
    case GemmPath::Short:
      return short_gemm_avx512(g);
    case GemmPath::Blas:
      break;
  }
}

template <typename T>
void loops_baseline(const GemmProduct<T> &g) {
  switch (g.path) {
    case GemmPath::Gemv:
      return gemv_baseline(g);
    case GemmPath::VecMat:
      return vecmat_baseline(g);
    case GemmPath::Narrow:
      return narrow_baseline(g);
    case GemmPath::Short:
      return short_gemm_baseline(g);
    case GemmPath::Blas:
      break;
  }
}

/// A column-major (Fortran) BLAS gemm: sgemm_ or dgemm_.
template <typename T>
using FortranGemm = void (*)(const char *, const char *, const int *, const int *, const int *,
                             const T *, const T *, const int *, const T *, const int *, const T *,
                             T *, const int *);

/// BLIS's sgemm_ and dgemm_, from its own library opened privately; null where it is not
/// installed, where SPMDRT_BLIS=0, or where the CPU has neither AVX-512 nor AVX2 + FMA.
struct Blis {
  FortranGemm<float> sgemm = nullptr;
  FortranGemm<double> dgemm = nullptr;
};

/// The first of `paths` that opens privately (RTLD_LOCAL | RTLD_DEEPBIND: its symbols
/// never replace OpenBLAS's for anything else) and has every symbol `found` asks for
/// (`found(handle)` is true); null where none does or the environment variable `off`
/// is "0".
template <typename Found>
void *open_library(const char *off, std::initializer_list<const char *> paths, Found &&found) {
  if (const char *env = std::getenv(off); env && std::strcmp(env, "0") == 0) return nullptr;
  for (const char *path : paths) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) continue;
    if (found(h)) return h;
    dlclose(h);
  }
  return nullptr;
}

const Blis &blis() {
  static const Blis found = [] {
    Blis b;
    if (gemm_isa() == GemmIsa::Baseline) return b;
    open_library("SPMDRT_BLIS",
                 {"/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4",
                  "/usr/lib/x86_64-linux-gnu/libblis.so.4", "libblis.so.4"},
                 [&](void *h) {
                   b.sgemm = reinterpret_cast<FortranGemm<float>>(dlsym(h, "sgemm_"));
                   b.dgemm = reinterpret_cast<FortranGemm<double>>(dlsym(h, "dgemm_"));
                   if (b.sgemm && b.dgemm) return true;
                   b = Blis{};
                   return false;
                 });
    return b;
  }();
  return found;
}

/// oneDNN's row-major sgemm (`dnnl_sgemm`: C = alpha op(A) op(B) + beta C, f32 only).
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                          const float *, int64_t, float, float *, int64_t);

/// oneDNN (Debian's libdnnl2), opened privately like BLIS, with the OpenMP runtime it is
/// built on; null where it is not installed, where SPMDRT_DNNL=0, or where the CPU is not
/// AVX2 + FMA without AVX-512 (the only CPU it was measured on).
struct Dnnl {
  DnnlSgemm sgemm = nullptr;
  void (*omp_set_num_threads)(int) = nullptr;
};

const Dnnl &dnnl() {
  static const Dnnl found = [] {
    Dnnl d;
    if (gemm_isa() != GemmIsa::Avx2Fma) return d;
    open_library(
        "SPMDRT_DNNL", {"/usr/lib/x86_64-linux-gnu/libdnnl.so.2", "libdnnl.so.2"}, [&](void *h) {
          d.sgemm = reinterpret_cast<DnnlSgemm>(dlsym(h, "dnnl_sgemm"));
          // dlsym on the handle also searches what it depends on: its OpenMP.
          d.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
          if (d.sgemm && d.omp_set_num_threads) return true;
          d = Dnnl{};
          return false;
        });
    return d;
  }();
  return found;
}

/// Once per thread: one product big enough to touch the whole of OpenBLAS's work buffer
/// (see the file comment).
void warm_blas_buffer() {
  thread_local bool warmed = false;
  if (warmed) return;
  warmed = true;
  constexpr int kRows = 64, kSize = 384;
  std::vector<float> a(size_t{kRows} * kSize, 0.0f), b(size_t{kSize} * kSize, 0.0f);
  std::vector<float> c(size_t{kRows} * kSize);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kRows, kSize, kSize, 1.0f, a.data(), kSize,
              b.data(), kSize, 0.0f, c.data(), kSize);
}

/// OpenBLAS runs on one thread: the pool (spmdrt/parallel.h) splits products instead.
/// OpenBLAS's pthreads build starts a server thread per further core when it loads, and
/// each polls for work with sched_yield for 2^28 cycles (a tenth of a second or more)
/// before it sleeps; with no work ever queued (one thread) that is only lost CPU time,
/// taken from the device threads while a run starts: on the 2-core AMD EPYC it was up to
/// 36 ms of CPU per process, 1-2 ms per step of a 20-step timing of the s = 128
/// transformer block (issue 32). So its servers are stopped (blas_thread_shutdown_, which
/// OpenBLAS also calls before a fork; absent elsewhere: nothing to stop). One thread
/// computes as before: the same bits.
void use_single_threaded_blas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    using Shutdown = int (*)();
    if (auto stop = reinterpret_cast<Shutdown>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_")))
      stop();
    return true;
  }();
  (void)once;
}

/// Rows (or columns) of C per tile of a product split over `extent` rows (columns) of
/// `work` multiply-adds each: fixed by the shape alone, never by the thread count, so
/// that BLAS, whose bits may depend on the shape it is called with (OpenBLAS has small-
/// matrix kernels), computes the same bits however many threads run the tiles. At most
/// kMaxTiles tiles of a multiple of 16 rows each, none of fewer than kMinTileRows rows
/// or kMinTileWork multiply-adds (a product below twice that is one call). Each tile is
/// one BLAS call, which packs the other operand again: measured on the transformer block
/// of bench/jax at s = 512 on 4 devices (2 cores, so not split), tiles of at least 64
/// rows cost 1.07x the CPU time of whole products, 256 rows 1.03x.
/// Calls to the other libraries (BLIS, oneDNN, OpenBLAS's GEMV) take bigger tiles, of at
/// least kMinLibraryTileWork multiply-adds (a product below twice that is one call):
/// measured on a 2-core AMD EPYC (Zen 3) with one thread, interleaved medians of 21
/// rounds, a 4 x 4096 x 1024 product in 8 BLIS calls of 512 columns took 1.43 ms against
/// 1.24 in one call and 1.26 in 4 calls of 1024 (8 x 4096 x 1024: 2.06 against 2.00 and
/// 2.02; BLIS's small-matrix paths pick their kernels by the shape of each call), and
/// bench/kernels_bench's 1024 x 1024 x 16 through oneDNN in two tiles 1.07x one call.
constexpr int64_t kMaxTiles = 8, kMinTileRows = 256, kMinTileWork = int64_t{1} << 21;
constexpr int64_t kMinLibraryTileWork = int64_t{1} << 24;

int64_t tile_rows(int64_t extent, int64_t work, int64_t min_work = kMinTileWork) {
  auto round16 = [](int64_t v) { return (v + 15) / 16 * 16; };
  if (extent * work < 2 * min_work || extent < 2 * kMinTileRows) return extent;
  const int64_t rows = std::max({kMinTileRows, round16((extent + kMaxTiles - 1) / kMaxTiles),
                                 round16((min_work + work - 1) / std::max<int64_t>(1, work))});
  return std::min(rows, extent);
}

/// Rows [lo, hi) of a product whose rows are independent (narrow and GEMV loops: every
/// element is its own sum over k, so the split does not change a bit).
template <typename T>
GemmProduct<T> product_rows(const GemmProduct<T> &g, int64_t lo, int64_t hi) {
  GemmProduct<T> part = g;
  if (g.path == GemmPath::Gemv && g.n != 1) {  // m == 1: c = B x, rows of B
    part.b.data = g.b.data + lo * g.b.ld;
    part.n = hi - lo;
  } else {
    part.a.data = g.a.transposed ? g.a.data + lo : g.a.data + lo * g.a.ld;
    part.m = hi - lo;
  }
  part.c = g.c + lo * (g.path == GemmPath::Gemv ? 1 : g.n);
  return part;
}

template <typename T>
void gemm_loops(const GemmProduct<T> &g) {
  switch (gemm_isa()) {
    case GemmIsa::Avx512:
      return loops_avx512(g);
    case GemmIsa::Avx2Fma:
      return gemm_loops_avx2_fma(g);
    case GemmIsa::Baseline:
      return loops_baseline(g);
  }
}

/// One output column or row on AVX2: OpenBLAS's GEMV, which there beats paths 1 and 2
/// (issue 32: 1.1–2.4x of cblas_sgemv's time). c = A v (n == 1) or B x (m == 1, B
/// transposed); vecmat shapes are c = Aᵀ v (n == 1, A stored k × m) or Bᵀ x. The
/// output is split in tiles of tile_rows (one BLAS call each): rows of the matrix
/// for c = M v, its columns for c = Mᵀ v.
template <typename T>
void blas_gemv(const GemmProduct<T> &g, const T *a, const T *b) {
  const bool on_a = g.n == 1;
  const bool trans = g.path == GemmPath::VecMat;
  const T *mat = on_a ? a : b, *vec = on_a ? b : a;
  const int64_t ld = on_a ? g.a.ld : g.b.ld, rows = trans ? g.k : (on_a ? g.m : g.n);
  const int64_t outputs = trans ? ld : rows, inner = trans ? rows : ld;
  const auto t = trans ? CblasTrans : CblasNoTrans;
  parallel_for(
      outputs, tile_rows(outputs, inner, kMinLibraryTileWork), [&](int64_t lo, int64_t hi) {
        const T *part = trans ? mat + lo : mat + lo * ld;
        const int r = int(trans ? rows : hi - lo), cols = int(trans ? hi - lo : ld);
        if constexpr (sizeof(T) == 4) {
          cblas_sgemv(CblasRowMajor, t, r, cols, 1.0f, part, int(ld), vec, 1, 0.0f, g.c + lo, 1);
        } else {
          cblas_dgemv(CblasRowMajor, t, r, cols, 1.0, part, int(ld), vec, 1, 0.0, g.c + lo, 1);
        }
      });
}

/// Runs `call(tile, ldc)` on each tile of C's longer side (tile_rows: fixed by the shape,
/// never by the thread count), the tiles spread over the pool: `tile` is `g` with its
/// rows (or columns) of C and of the operand they come from; ldc is C's whole row.
template <typename T, typename Call>
void for_each_tile(const GemmProduct<T> &g, int64_t min_work, Call &&call) {
  const bool by_rows = g.m >= g.n;
  const int64_t extent = by_rows ? g.m : g.n, other = by_rows ? g.n : g.m;
  parallel_for(extent, tile_rows(extent, other * g.k, min_work), [&](int64_t lo, int64_t hi) {
    GemmProduct<T> t = g;
    t.c = g.c + (by_rows ? lo * g.n : lo);
    if (by_rows) {
      t.a.data += g.a.transposed ? lo : lo * g.a.ld;
      t.m = hi - lo;
    } else {
      t.b.data += g.b.transposed ? lo * g.b.ld : lo;
      t.n = hi - lo;
    }
    call(t, int(g.n));
  });
}

/// C = op(A) op(B) through BLAS, in tiles of tile_rows along C's longer side.
template <typename T>
void blas_gemm(const GemmProduct<T> &g) {
  warm_blas_buffer();
  const auto ta = g.a.transposed ? CblasTrans : CblasNoTrans;
  const auto tb = g.b.transposed ? CblasTrans : CblasNoTrans;
  for_each_tile(g, kMinTileWork, [&](const GemmProduct<T> &t, int ldc) {
    warm_blas_buffer();  // each worker thread has a buffer of its own
    if constexpr (sizeof(T) == 4) {
      cblas_sgemm(CblasRowMajor, ta, tb, int(t.m), int(t.n), int(t.k), 1.0f, t.a.data, int(t.a.ld),
                  t.b.data, int(t.b.ld), 0.0f, t.c, ldc);
    } else {
      cblas_dgemm(CblasRowMajor, ta, tb, int(t.m), int(t.n), int(t.k), 1.0, t.a.data, int(t.a.ld),
                  t.b.data, int(t.b.ld), 0.0, t.c, ldc);
    }
  });
}

/// C = op(A) op(B) through BLIS (row-major C is column-major Cᵀ = op(B)ᵀ op(A)ᵀ), in
/// tiles of tile_rows along C's longer side like blas_gemm, of at least kMinLibraryTileWork
/// multiply-adds.
template <typename T>
void blis_gemm(const GemmProduct<T> &g) {
  FortranGemm<T> f;
  if constexpr (sizeof(T) == 4) {
    f = blis().sgemm;
  } else {
    f = blis().dgemm;
  }
  const char tra = g.a.transposed ? 'T' : 'N', trb = g.b.transposed ? 'T' : 'N';
  for_each_tile(g, kMinLibraryTileWork, [&](const GemmProduct<T> &t, int ldc) {
    const int m = int(t.m), n = int(t.n), k = int(t.k), lda = int(t.a.ld), ldb = int(t.b.ld);
    const T one = 1, zero = 0;
    f(&trb, &tra, &n, &m, &k, &one, t.b.data, &ldb, t.a.data, &lda, &zero, t.c, &ldc);
  });
}

/// C = op(A) op(B) through oneDNN, tiled like blis_gemm. oneDNN runs on one thread, as
/// OpenBLAS and BLIS do (the pool splits products instead): its OpenMP team size is a
/// per-thread setting, so every thread that runs a tile sets it first.
void dnnl_gemm(const GemmProduct<float> &g) {
  thread_local bool one_thread = false;
  const char tra = g.a.transposed ? 'T' : 'N', trb = g.b.transposed ? 'T' : 'N';
  for_each_tile(g, kMinLibraryTileWork, [&](const GemmProduct<float> &t, int ldc) {
    if (!one_thread) {
      dnnl().omp_set_num_threads(1);
      one_thread = true;
    }
    if (const int status = dnnl().sgemm(tra, trb, t.m, t.n, t.k, 1.0f, t.a.data, t.a.ld, t.b.data,
                                        t.b.ld, 0.0f, t.c, ldc);
        status != 0)
      throw std::runtime_error("oneDNN's dnnl_sgemm failed (status " + std::to_string(status) +
                               "); SPMDRT_DNNL=0 turns it off");
  });
}

/// Whether a general f32 product (path 5) calls oneDNN: on AVX2 + FMA, measured on a
/// 2-core AMD EPYC (Zen 3; docs/backend.md, "oneDNN"), one thread, against OpenBLAS and
/// BLIS: products with A not transposed and at most 256 output columns up to 2^25
/// multiply-adds (oneDNN 0.92-0.96 of the faster library in 10 of 11 shapes, 1.03 in
/// one; with 1024 columns it lost up to 1.5x), and A @ Bᵀ with k <= 64 up to 2^24 (0.55-0.82:
/// attention's q kᵀ, dp_loss gradient's dy wᵀ at k = 16). A transposed was not measured.
bool general_on_dnnl(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  if (!dnnl().sgemm || trans_a) return false;
  const int64_t work = m * n * k;
  if (n <= 256 && work <= (int64_t{1} << 25)) return true;
  return trans_b && k <= 64 && work <= (int64_t{1} << 24);
}

/// The most multiply-adds of a general product small_on_blis gives BLIS.
constexpr int64_t kSmallOnBlis = int64_t{1} << 21;

/// Where paths 1–4 hand a product to a library instead (see the file comment).
enum class Library { None, Blis, BlasGemv };

/// On AVX2 + FMA, narrow and short products of fewer multiply-adds than this keep the
/// own loops: a library call costs about a microsecond before it computes anything
/// (one thread, medians, Zen 3: 8 x 8 x 8 own loop 0.19-0.27 us against BLIS's 1.2-2.3;
/// 64 x 16 x 64 1.8-3.2 against 2.2-2.8; tied at 128 x 16 x 128; BLIS 1.5x faster at
/// 256 x 16 x 256). Tiny einsums (the per-op overhead of bench/kernels_bench --overhead)
/// are this case.
constexpr int64_t kLoopBelowWork = int64_t{1} << 17;

template <typename T>
Library library_for(GemmPath path, int64_t m, int64_t n, int64_t k) {
  if (path == GemmPath::Blas) return Library::None;
  const bool gemv = path == GemmPath::Gemv || path == GemmPath::VecMat;
  switch (gemm_isa()) {
    case GemmIsa::Avx512:
      if (blis().sgemm) return Library::Blis;
      return gemv ? Library::BlasGemv : Library::None;
    case GemmIsa::Avx2Fma:
      // Measured on 2-core AMD EPYCs (docs/backend.md): OpenBLAS's GEMV beats paths 1
      // and 2 and ties BLIS's; BLIS beats the short loop and ties or beats the narrow one.
      if (gemv) return Library::BlasGemv;
      return blis().sgemm && m * n * k >= kLoopBelowWork ? Library::Blis : Library::None;
    case GemmIsa::Baseline:
      return Library::None;
  }
  return Library::None;
}

/// Whether a general product (path 5) calls BLIS instead of OpenBLAS: on AVX2 + FMA,
/// small products with k >= 32 (measured on a 2-core AMD EPYC, docs/backend.md: BLIS
/// 1.2-1.3x faster on batched 128 x 128 x 64; 2x slower at k = 16, tied on 512^3),
/// except A @ Bᵀ (B transposed, A not: attention's q kᵀ), where BLIS lost to OpenBLAS
/// (128 x 128 x 32: 28-46 against 19-24 us, 128 x 128 x 64: 42.5 against 30.8 us;
/// with A transposed too or neither, BLIS won or tied).
bool small_on_blis(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  return gemm_isa() == GemmIsa::Avx2Fma && blis().sgemm && k >= 32 && m * n * k <= kSmallOnBlis &&
         (trans_a || !trans_b);
}

template <typename T>
void gemm_float(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T *a, const T *b,
                T *c) {
  use_single_threaded_blas();
  const GemmOperand<T> op_a{a, trans_a ? m : k, trans_a}, op_b{b, trans_b ? k : n, trans_b};
  const GemmProduct<T> g{choose_path<T>(trans_a, trans_b, m, n), m, n, k, op_a, op_b, c};
  switch (library_for<T>(g.path, m, n, k)) {
    case Library::Blis:
      return blis_gemm(g);
    case Library::BlasGemv:
      return blas_gemv(g, a, b);
    case Library::None:
      break;
  }
  if (g.path == GemmPath::Narrow || g.path == GemmPath::Gemv) {
    // Rows are independent: any split gives the same bits.
    const int64_t rows = g.path == GemmPath::Gemv && n != 1 ? n : m;
    const int64_t per_row = k * (g.path == GemmPath::Gemv ? 1 : n);
    const int64_t any = elementwise_grain(rows, per_row);
    const int64_t grain = any >= rows ? rows : std::max<int64_t>(48, any / 48 * 48);
    return parallel_for(rows, grain,
                        [&](int64_t lo, int64_t hi) { gemm_loops(product_rows(g, lo, hi)); });
  }
  if (g.path != GemmPath::Blas) return gemm_loops(g);
  if constexpr (sizeof(T) == 4) {
    if (general_on_dnnl(trans_a, trans_b, m, n, k)) return dnnl_gemm(g);
  }
  if (small_on_blis(trans_a, trans_b, m, n, k)) return blis_gemm(g);
  blas_gemm(g);
}

}  // namespace

bool gemm_fuses_multiply_add() { return gemm_isa() == GemmIsa::Avx2Fma; }

bool gemm_runs_own_loop(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  if (dtype == DType::F32) {
    const GemmPath path = choose_path<float>(trans_a, trans_b, m, n);
    return path != GemmPath::Blas && library_for<float>(path, m, n, k) == Library::None;
  }
  if (dtype == DType::F64) {
    const GemmPath path = choose_path<double>(trans_a, trans_b, m, n);
    return path != GemmPath::Blas && library_for<double>(path, m, n, k) == Library::None;
  }
  return true;
}

}  // namespace spmd::rt::detail

namespace spmd::rt {

void single_threaded_blas() { detail::use_single_threaded_blas(); }

}  // namespace spmd::rt

namespace spmd::rt::detail {

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const std::byte *a, const std::byte *b, std::byte *c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::memset(c, 0, static_cast<size_t>(m * n) * dtype_size(dtype));
    return;
  }
  if (dtype == DType::F32) {
    gemm_float(trans_a, trans_b, m, n, k, reinterpret_cast<const float *>(a),
               reinterpret_cast<const float *>(b), reinterpret_cast<float *>(c));
    return;
  }
  if (dtype == DType::F64) {
    gemm_float(trans_a, trans_b, m, n, k, reinterpret_cast<const double *>(a),
               reinterpret_cast<const double *>(b), reinterpret_cast<double *>(c));
    return;
  }
  // i32, wrapping: c[i, j] accumulates over p in increasing order (i-p-j loop).
  const GemmOperand<int32_t> op_a{reinterpret_cast<const int32_t *>(a), trans_a ? m : k, trans_a};
  const GemmOperand<int32_t> op_b{reinterpret_cast<const int32_t *>(b), trans_b ? k : n, trans_b};
  auto *pc = reinterpret_cast<uint32_t *>(c);
  std::fill(pc, pc + m * n, 0u);
  for (int64_t i = 0; i < m; ++i) {
    uint32_t *crow = pc + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const auto av = static_cast<uint32_t>(op_a.at(i, p));
      for (int64_t j = 0; j < n; ++j) crow[j] += av * static_cast<uint32_t>(op_b.at(p, j));
    }
  }
}

}  // namespace spmd::rt::detail
