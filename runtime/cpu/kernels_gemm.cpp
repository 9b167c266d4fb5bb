// runtime/cpu/kernels_gemm.cpp — the one matrix product every matmul and einsum calls.
//
// detail::gemm computes the row-major C[m, n] = op(A) @ op(B), op(X) = X or Xᵀ (a
// transposed operand stays where it is: A stored k × m, B stored n × k), and picks
// the computation by shape and dtype:
//
// 1. f32/f64 with n <= one vector's lanes (16 f32, 8 f64) — "narrow", e.g. dp_loss's
//    [1024, 1024] @ [1024, 16] and its gradient's inputsᵀ @ dy: spmdrt's own loop. B is
//    copied once into a zero-padded k × lanes panel (small), A is streamed once, unpacked,
//    and blocks of rows of C accumulate in vector registers. A general BLAS packs the big
//    operand first, which dominated these products (issue 17). GEMV (n == 1) takes this path.
// 2. f32/f64 with m <= 8 and B not transposed — "short" (row vectors times a matrix):
//    columns of C in blocks of two vectors, all rows at once, B streamed once.
// 3. everything else f32/f64: cblas_sgemm/dgemm, the transposes passed as flags.
// 4. i32: an i-k-j loop with wrapping arithmetic.
//
// Paths 1, 2 and 4 compute every output element as ((0 + a₀b₀) + a₁b₁) + … in increasing
// k, each product and sum rounded on its own (no FMA: -ffp-contract=off): the bits of the
// naive triple loop, on every machine and for every instruction set the loops are compiled
// for (target_clones: AVX-512, AVX2, baseline). Path 3's bits are OpenBLAS's, which may
// depend on the machine's kernels. `spmdc run` and executables call this same function.
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

#include <algorithm>
#include <cstring>
#include <vector>

#include "internal.h"

namespace spmd::rt::detail {

namespace {

typedef float F32x16 __attribute__((vector_size(64)));
typedef double F64x8 __attribute__((vector_size(64)));

template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = F32x16;
};
template <>
struct VecOf<double> {
  using type = F64x8;
};

/// One operand's element (row, col) of op(X), X row-major with `ld` columns as stored.
template <typename T>
struct Operand {
  const T *data;
  int64_t ld;
  bool transposed;
  T at(int64_t row, int64_t col) const {
    return transposed ? data[col * ld + row] : data[row * ld + col];
  }
};

constexpr int64_t kShortRows = 8;

/// Rows [i0, i0 + R) of a narrow product: C[i, 0:n] = sum_p op(A)[i, p] * panel[p].
template <typename T, int R>
[[gnu::always_inline]] inline void narrow_block(int64_t i0, int64_t n, int64_t k,
                                                const Operand<T> &a,
                                                const T *panel, T *c) {
  using V = typename VecOf<T>::type;
  V acc[R];
  for (int r = 0; r < R; ++r) acc[r] = V{};
  if (a.transposed) {  // row p of A holds op(A)[i0 .. i0 + R, p] contiguously
    const T *col = a.data + i0;
    for (int64_t p = 0; p < k; ++p, col += a.ld) {
      V b;
      std::memcpy(&b, panel + p * (sizeof(V) / sizeof(T)), sizeof(V));
      for (int r = 0; r < R; ++r) acc[r] = acc[r] + col[r] * b;
    }
  } else {
    const T *rows = a.data + i0 * a.ld;
    for (int64_t p = 0; p < k; ++p) {
      V b;
      std::memcpy(&b, panel + p * (sizeof(V) / sizeof(T)), sizeof(V));
      for (int r = 0; r < R; ++r) acc[r] = acc[r] + rows[r * a.ld + p] * b;
    }
  }
  for (int r = 0; r < R; ++r) {
    T lanes[sizeof(V) / sizeof(T)];
    std::memcpy(lanes, &acc[r], sizeof(V));
    std::copy(lanes, lanes + n, c + (i0 + r) * n);
  }
}

template <typename T>
[[gnu::always_inline]] inline void narrow_gemm(int64_t m, int64_t n, int64_t k, const Operand<T> &a,
                                               const Operand<T> &b, T *c) {
  using V = typename VecOf<T>::type;
  // op(B), zero-padded to full vectors (read with unaligned loads: a std::vector of a
  // vector_size type would not be allocated with the type's alignment).
  constexpr int64_t L = sizeof(V) / sizeof(T);
  std::vector<T> panel(static_cast<size_t>(k * L), T(0));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) panel[p * L + j] = b.at(p, j);
  }
  constexpr int R = 8;
  int64_t i = 0;
  if (a.transposed) {  // 16 rows of C are one 64-byte line of each row of A
    for (; i + 2 * R <= m; i += 2 * R) narrow_block<T, 2 * R>(i, n, k, a, panel.data(), c);
  }
  for (; i + R <= m; i += R) narrow_block<T, R>(i, n, k, a, panel.data(), c);
  for (; i < m; ++i) narrow_block<T, 1>(i, n, k, a, panel.data(), c);
}

/// C[0:m, j0 : j0 + 2 vectors] for m <= kShortRows, B not transposed.
template <typename T>
[[gnu::always_inline]] inline void short_gemm(int64_t m, int64_t n, int64_t k, const Operand<T> &a,
                                              const T *b, T *c) {
  using V = typename VecOf<T>::type;
  constexpr int64_t L = sizeof(V) / sizeof(T);
  int64_t j0 = 0;
  for (; j0 + 2 * L <= n; j0 += 2 * L) {
    V acc[kShortRows][2];
    for (int64_t i = 0; i < m; ++i) acc[i][0] = acc[i][1] = V{};
    for (int64_t p = 0; p < k; ++p) {
      V b0, b1;
      std::memcpy(&b0, b + p * n + j0, sizeof(V));
      std::memcpy(&b1, b + p * n + j0 + L, sizeof(V));
      for (int64_t i = 0; i < m; ++i) {
        const T s = a.at(i, p);
        acc[i][0] = acc[i][0] + s * b0;
        acc[i][1] = acc[i][1] + s * b1;
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(c + i * n + j0, &acc[i][0], sizeof(V));
      std::memcpy(c + i * n + j0 + L, &acc[i][1], sizeof(V));
    }
  }
  for (int64_t i = 0; i < m; ++i) {  // the last < 2 vectors of columns, same order
    for (int64_t j = j0; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) sum = sum + a.at(i, p) * b[p * n + j];
      c[i * n + j] = sum;
    }
  }
}

SPMDRT_CLONES void narrow_f32(int64_t m, int64_t n, int64_t k, const Operand<float> &a,
                              const Operand<float> &b, float *c) {
  narrow_gemm(m, n, k, a, b, c);
}
SPMDRT_CLONES void narrow_f64(int64_t m, int64_t n, int64_t k, const Operand<double> &a,
                              const Operand<double> &b, double *c) {
  narrow_gemm(m, n, k, a, b, c);
}
SPMDRT_CLONES void short_f32(int64_t m, int64_t n, int64_t k, const Operand<float> &a,
                             const float *b, float *c) {
  short_gemm(m, n, k, a, b, c);
}
SPMDRT_CLONES void short_f64(int64_t m, int64_t n, int64_t k, const Operand<double> &a,
                             const double *b, double *c) {
  short_gemm(m, n, k, a, b, c);
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

template <typename T>
void gemm_float(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T *a, const T *b,
                T *c) {
  constexpr int64_t lanes = 64 / sizeof(T);
  const Operand<T> op_a{a, trans_a ? m : k, trans_a};
  const Operand<T> op_b{b, trans_b ? k : n, trans_b};
  if (n <= lanes) {
    if constexpr (sizeof(T) == 4) {
      narrow_f32(m, n, k, op_a, op_b, c);
    } else {
      narrow_f64(m, n, k, op_a, op_b, c);
    }
  } else if (m <= kShortRows && !trans_b) {
    if constexpr (sizeof(T) == 4) {
      short_f32(m, n, k, op_a, b, c);
    } else {
      short_f64(m, n, k, op_a, b, c);
    }
  } else {
    warm_blas_buffer();
    const auto ta = trans_a ? CblasTrans : CblasNoTrans;
    const auto tb = trans_b ? CblasTrans : CblasNoTrans;
    if constexpr (sizeof(T) == 4) {
      cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(op_a.ld), b,
                  int(op_b.ld), 0.0f, c, int(n));
    } else {
      cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(op_a.ld), b,
                  int(op_b.ld), 0.0, c, int(n));
    }
  }
}

}  // namespace

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
  const Operand<int32_t> op_a{reinterpret_cast<const int32_t *>(a), trans_a ? m : k, trans_a};
  const Operand<int32_t> op_b{reinterpret_cast<const int32_t *>(b), trans_b ? k : n, trans_b};
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
