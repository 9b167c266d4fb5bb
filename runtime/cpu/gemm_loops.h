// runtime/cpu/gemm_loops.h — spmdrt's own loops for matrix products (not installed).
//
// The paths of detail::gemm that do not call BLAS — GEMV, vector times matrix, narrow and
// short; kernels_gemm.cpp says when each is taken — as templates over the vector width in
// bytes and the multiply-add: Separate here (s + x * y, rounded twice: the naive loop's
// bits) or Fused (one fma, kernels_gemm_avx2.cpp). kernels_gemm.cpp instantiates them for
// AVX-512 and baseline x86-64, kernels_gemm_avx2.cpp (compiled with -mavx2 -mfma) for
// AVX2 + FMA. Every output element is the running sum over k in increasing order from +0.
// The loops have internal linkage (an unnamed namespace): each file that includes this
// compiles its own copies, for its own instruction set.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

// Vector values pass only between helpers inlined into one function, never across a
// call, so GCC's note that their calling convention depends on -mavx is moot.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace spmd::rt::detail {

/// One operand's element (row, col) of op(X), X row-major with `ld` columns as stored.
template <typename T>
struct GemmOperand {
  const T *data;
  int64_t ld;
  bool transposed;
  T at(int64_t row, int64_t col) const {
    return transposed ? data[col * ld + row] : data[row * ld + col];
  }
};

/// How detail::gemm computes a product (kernels_gemm.cpp's choose_path).
enum class GemmPath { Gemv, VecMat, Narrow, Short, Blas };

/// One f32/f64 product: C[m, n] = op(A) @ op(B), C row-major.
template <typename T>
struct GemmProduct {
  GemmPath path;
  int64_t m, n, k;
  GemmOperand<T> a, b;
  T *c;
};

/// gemm's own loops compiled for AVX2 + FMA, every path (kernels_gemm_avx2.cpp).
void gemm_loops_avx2_fma(const GemmProduct<float> &g);
void gemm_loops_avx2_fma(const GemmProduct<double> &g);

namespace {

/// `Bytes`-byte vectors of T.
template <typename T, int Bytes>
struct Vec {
  typedef T type __attribute__((vector_size(Bytes)));
  static constexpr int64_t lanes = Bytes / static_cast<int64_t>(sizeof(T));
};

typedef float F32x4 __attribute__((vector_size(16)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef double F64x4 __attribute__((vector_size(32)));

template <typename V>
[[gnu::always_inline]] inline V load(const void *p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

/// Stores a copy, so that accumulator arrays never have their address taken (which
/// would keep them in memory instead of registers).
template <typename V>
[[gnu::always_inline]] inline void store(void *p, const V v) {
  std::memcpy(p, &v, sizeof(V));
}

/// acc + s * b with the product and the sum rounded on their own (the naive loop); s a
/// scalar (broadcast), acc and b scalars or vectors.
struct Separate {
  template <typename A, typename S>
  [[gnu::always_inline]] static A mul_add(A acc, S s, A b) {
    return acc + s * b;
  }
};

// ---- 1. GEMV ----------------------------------------------------------------------

/// Column p .. p + 7 of rows [0, 8) of A (row r at rows + r * ld), one vector per
/// column, lane r = row r: each row is loaded as two 4-lane halves paired with the row
/// four below, so the transpose needs in-lane shuffles only.
[[gnu::always_inline]] inline void transpose_8x8(const float *rows, int64_t ld, F32x8 col[8]) {
  for (int half = 0; half < 2; ++half) {
    F32x8 h[4];
    for (int r = 0; r < 4; ++r) {
      const F32x4 lo = load<F32x4>(rows + r * ld + 4 * half);
      const F32x4 hi = load<F32x4>(rows + (r + 4) * ld + 4 * half);
      h[r] = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
    }
    const F32x8 t0 = __builtin_shufflevector(h[0], h[1], 0, 8, 1, 9, 4, 12, 5, 13);
    const F32x8 t1 = __builtin_shufflevector(h[0], h[1], 2, 10, 3, 11, 6, 14, 7, 15);
    const F32x8 t2 = __builtin_shufflevector(h[2], h[3], 0, 8, 1, 9, 4, 12, 5, 13);
    const F32x8 t3 = __builtin_shufflevector(h[2], h[3], 2, 10, 3, 11, 6, 14, 7, 15);
    col[4 * half + 0] = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
    col[4 * half + 1] = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
    col[4 * half + 2] = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
    col[4 * half + 3] = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
  }
}

/// c[i0 .. i0 + 8 RB) = A[i0 .., :] @ v, f32 in 8-lane vectors (lane = row).
template <class Ops, int RB>
[[gnu::always_inline]] inline void gemv_rows_f32x8(int64_t i0, int64_t k, const float *a,
                                                   int64_t ld, const float *v, float *c) {
  F32x8 acc[RB];
  for (int b = 0; b < RB; ++b) acc[b] = F32x8{};
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    for (int b = 0; b < RB; ++b) {
      F32x8 col[8];
      transpose_8x8(a + (i0 + 8 * b) * ld + p, ld, col);
      for (int q = 0; q < 8; ++q) acc[b] = Ops::mul_add(acc[b], v[p + q], col[q]);
    }
  }
  for (; p < k; ++p) {
    for (int b = 0; b < RB; ++b) {
      F32x8 col;
      for (int r = 0; r < 8; ++r) col[r] = a[(i0 + 8 * b + r) * ld + p];
      acc[b] = Ops::mul_add(acc[b], v[p], col);
    }
  }
  for (int b = 0; b < RB; ++b) store(c + i0 + 8 * b, acc[b]);
}

/// c[i0 .. i0 + L) = A[i0 .., :] @ v, lane r = row i0 + r, columns gathered.
template <typename T, int Bytes, class Ops>
[[gnu::always_inline]] inline void gemv_rows_gather(int64_t i0, int64_t k, const T *a, int64_t ld,
                                                    const T *v, T *c) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t L = Vec<T, Bytes>::lanes;
  V acc{};
  for (int64_t p = 0; p < k; ++p) {
    V col;
    for (int64_t r = 0; r < L; ++r) col[r] = a[(i0 + r) * ld + p];
    acc = Ops::mul_add(acc, v[p], col);
  }
  store(c + i0, acc);
}

template <typename T, int Bytes, class Ops>
inline void gemv(const GemmProduct<T> &g) {
  // c = A v, or (m == 1, B transposed) c = B x with x = op(A)'s row (contiguous).
  const bool on_a = g.n == 1;
  const T *a = on_a ? g.a.data : g.b.data, *v = on_a ? g.b.data : g.a.data;
  const int64_t ld = on_a ? g.a.ld : g.b.ld, rows = on_a ? g.m : g.n;
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float> && Bytes >= 32) {  // AVX-512 uses 8 lanes too
    for (; i + 16 <= rows; i += 16) gemv_rows_f32x8<Ops, 2>(i, g.k, a, ld, v, g.c);
    for (; i + 8 <= rows; i += 8) gemv_rows_f32x8<Ops, 1>(i, g.k, a, ld, v, g.c);
  } else {
    constexpr int B = std::is_same_v<T, double> && Bytes == 64 ? 32 : Bytes;
    constexpr int64_t L = Vec<T, B>::lanes;
    for (; i + L <= rows; i += L) gemv_rows_gather<T, B, Ops>(i, g.k, a, ld, v, g.c);
  }
  for (; i < rows; ++i) {
    T sum = 0;
    for (int64_t p = 0; p < g.k; ++p) sum = Ops::mul_add(sum, a[i * ld + p], v[p]);
    g.c[i] = sum;
  }
}

// ---- 2. Vector times matrix -------------------------------------------------------

/// c[0, n) = x[0, k) @ B (k × n, row-major with `ld` columns): per chunk of C's columns
/// (in L1), one sweep per four rows of B, each element accumulated in increasing p.
template <typename T, int Bytes, class Ops>
[[gnu::always_inline]] inline void vecmat_row(int64_t n, int64_t k, const T *x, const T *b,
                                              int64_t ld, T *c) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t L = Vec<T, Bytes>::lanes;
  constexpr int64_t kChunk = 8192 / sizeof(T);
  const int64_t whole = n / L * L;  // vector columns; the rest one at a time below
  for (int64_t j0 = 0; j0 < whole; j0 += kChunk) {
    const int64_t j1 = std::min(whole, j0 + kChunk);
    int64_t p = 0;
    for (; p + 4 <= k; p += 4) {
      const T s0 = x[p], s1 = x[p + 1], s2 = x[p + 2], s3 = x[p + 3];
      const T *row = b + p * ld;
      for (int64_t j = j0; j < j1; j += L) {
        V acc = p == 0 ? V{} : load<V>(c + j);
        acc = Ops::mul_add(acc, s0, load<V>(row + j));
        acc = Ops::mul_add(acc, s1, load<V>(row + ld + j));
        acc = Ops::mul_add(acc, s2, load<V>(row + 2 * ld + j));
        acc = Ops::mul_add(acc, s3, load<V>(row + 3 * ld + j));
        store(c + j, acc);
      }
    }
    for (; p < k; ++p) {
      const T s = x[p];
      for (int64_t j = j0; j < j1; j += L) {
        V acc = p == 0 ? V{} : load<V>(c + j);
        acc = Ops::mul_add(acc, s, load<V>(b + p * ld + j));
        store(c + j, acc);
      }
    }
  }
  for (int64_t j = whole; j < n; ++j) {
    T sum = 0;
    for (int64_t p = 0; p < k; ++p) sum = Ops::mul_add(sum, x[p], b[p * ld + j]);
    c[j] = sum;
  }
}

template <typename T, int Bytes, class Ops>
inline void vecmat(const GemmProduct<T> &g) {
  if (g.n == 1) {  // c = op(A) @ v with A stored k × m: cᵀ = vᵀ A
    vecmat_row<T, Bytes, Ops>(g.m, g.k, g.b.data, g.a.data, g.a.ld, g.c);
    return;
  }
  std::vector<T> x(static_cast<size_t>(g.k));  // row 0 of op(A)
  for (int64_t p = 0; p < g.k; ++p) x[p] = g.a.at(0, p);
  vecmat_row<T, Bytes, Ops>(g.n, g.k, x.data(), g.b.data, g.b.ld, g.c);
}

// ---- 3. Narrow --------------------------------------------------------------------

/// Rows [i0, i0 + R) of a narrow product, NV vectors per row of C:
/// C[i, 0:n] = sum_p op(A)[i, p] * panel[p], the panel k × (NV lanes), zero-padded.
template <typename T, int Bytes, class Ops, int NV, int R>
[[gnu::always_inline]] inline void narrow_block(int64_t i0, int64_t n, int64_t k,
                                                const GemmOperand<T> &a, const T *panel, T *c) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t L = Vec<T, Bytes>::lanes;
  V acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < NV; ++q) acc[r][q] = V{};
  }
  if (a.transposed) {  // row p of A holds op(A)[i0 .. i0 + R, p] contiguously
    const T *col = a.data + i0;
    for (int64_t p = 0; p < k; ++p, col += a.ld) {
      V b[NV];
      for (int q = 0; q < NV; ++q) b[q] = load<V>(panel + (p * NV + q) * L);
      for (int r = 0; r < R; ++r) {
        for (int q = 0; q < NV; ++q) acc[r][q] = Ops::mul_add(acc[r][q], col[r], b[q]);
      }
    }
  } else {
    const T *rows = a.data + i0 * a.ld;
    for (int64_t p = 0; p < k; ++p) {
      V b[NV];
      for (int q = 0; q < NV; ++q) b[q] = load<V>(panel + (p * NV + q) * L);
      for (int r = 0; r < R; ++r) {
        for (int q = 0; q < NV; ++q) acc[r][q] = Ops::mul_add(acc[r][q], rows[r * a.ld + p], b[q]);
      }
    }
  }
  // Unrolled, so that every acc[r][q] has a constant index and stays in a register.
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    T *out = c + (i0 + r) * n;
    if (n == NV * L) {
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) store(out + q * L, acc[r][q]);
    } else {
      T lanes[NV * L];
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q) store(lanes + q * L, acc[r][q]);
      std::copy(lanes, lanes + n, out);
    }
  }
}

/// Rows per block: R × NV accumulators, NV panel vectors and a broadcast fit the
/// registers (32 vectors with AVX-512, 16 below). With AVX-512 (NV = 1) a transposed A
/// gives 16 rows, one 64-byte line of each row of A per block.
template <int Bytes, int NV, bool Transposed>
constexpr int narrow_rows() {
  if constexpr (Bytes == 64) return Transposed ? 16 : 8;
  if constexpr (NV == 1) return Transposed ? 12 : 6;
  if constexpr (NV == 2) return Transposed ? 6 : 4;
  return 3;
}

template <typename T, int Bytes, class Ops, int NV>
[[gnu::always_inline]] inline void narrow_all_rows(int64_t m, int64_t n, int64_t k,
                                                   const GemmOperand<T> &a, const T *panel, T *c) {
  constexpr int R = narrow_rows<Bytes, NV, false>(), RT = narrow_rows<Bytes, NV, true>();
  int64_t i = 0;
  if (a.transposed) {
    for (; i + RT <= m; i += RT) narrow_block<T, Bytes, Ops, NV, RT>(i, n, k, a, panel, c);
  }
  for (; i + R <= m; i += R) narrow_block<T, Bytes, Ops, NV, R>(i, n, k, a, panel, c);
  for (; i < m; ++i) narrow_block<T, Bytes, Ops, NV, 1>(i, n, k, a, panel, c);
}

template <typename T, int Bytes, class Ops>
inline void narrow(const GemmProduct<T> &g) {
  constexpr int64_t L = Vec<T, Bytes>::lanes;
  const int64_t nv = (g.n + L - 1) / L;  // n <= 64 bytes: at most 64 / Bytes vectors
  // op(B), zero-padded to whole vectors (read with unaligned loads).
  std::vector<T> panel(static_cast<size_t>(g.k * nv * L), T(0));
  for (int64_t p = 0; p < g.k; ++p) {
    for (int64_t j = 0; j < g.n; ++j) panel[p * nv * L + j] = g.b.at(p, j);
  }
  if (nv == 1) {
    narrow_all_rows<T, Bytes, Ops, 1>(g.m, g.n, g.k, g.a, panel.data(), g.c);
  } else if constexpr (Bytes == 32) {
    narrow_all_rows<T, Bytes, Ops, 2>(g.m, g.n, g.k, g.a, panel.data(), g.c);
  } else if constexpr (Bytes == 16) {
    if (nv == 2) {
      narrow_all_rows<T, Bytes, Ops, 2>(g.m, g.n, g.k, g.a, panel.data(), g.c);
    } else {
      narrow_all_rows<T, Bytes, Ops, 4>(g.m, g.n, g.k, g.a, panel.data(), g.c);
    }
  }
}

// ---- 4. Short ---------------------------------------------------------------------

/// Rows of B per pass of a short block: the block's accumulators go back to C between
/// passes (same order), so B is read down its columns for this many rows only.
constexpr int64_t kShortPass = 64;

/// C[0:M, j0 : j0 + NV vectors] over p in [p0, p1), op(A) packed k × M.
template <typename T, int Bytes, class Ops, int M, int NV>
[[gnu::always_inline]] inline void short_block(int64_t j0, int64_t n, int64_t p0, int64_t p1,
                                               const T *apack, const T *b, T *c) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t L = Vec<T, Bytes>::lanes;
  V acc[M][NV];
  for (int i = 0; i < M; ++i) {
    for (int q = 0; q < NV; ++q) acc[i][q] = p0 == 0 ? V{} : load<V>(c + i * n + j0 + q * L);
  }
  const T *brow = b + p0 * n + j0;
  const T *arow = apack + p0 * M;
  for (int64_t p = p0; p < p1; ++p, brow += n, arow += M) {
    V bv[NV];
    for (int q = 0; q < NV; ++q) bv[q] = load<V>(brow + q * L);
    for (int i = 0; i < M; ++i) {
      const T s = arow[i];
      for (int q = 0; q < NV; ++q) acc[i][q] = Ops::mul_add(acc[i][q], s, bv[q]);
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int q = 0; q < NV; ++q) store(c + i * n + j0 + q * L, acc[i][q]);
  }
}

/// Vectors per column block for M rows (M × NV accumulators fit the registers).
template <int Bytes, int M>
constexpr int short_vectors() {
  if constexpr (Bytes == 64) return 2;
  return M <= 2 ? 4 : M <= 4 ? 2 : 1;
}

template <typename T, int Bytes, class Ops, int M>
[[gnu::always_inline]] inline void short_rows(int64_t n, int64_t k, const GemmOperand<T> &a,
                                              const T *b, T *c) {
  constexpr int64_t L = Vec<T, Bytes>::lanes;
  constexpr int NV = short_vectors<Bytes, M>();
  std::vector<T> apack(static_cast<size_t>(k * M));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t i = 0; i < M; ++i) apack[p * M + i] = a.at(i, p);
  }
  const int64_t whole = n / L * L;
  for (int64_t p0 = 0; p0 < k; p0 += kShortPass) {
    const int64_t p1 = std::min(k, p0 + kShortPass);
    int64_t j0 = 0;
    for (; j0 + NV * L <= whole; j0 += NV * L) {
      short_block<T, Bytes, Ops, M, NV>(j0, n, p0, p1, apack.data(), b, c);
    }
    for (; j0 < whole; j0 += L) short_block<T, Bytes, Ops, M, 1>(j0, n, p0, p1, apack.data(), b, c);
  }
  for (int64_t i = 0; i < M; ++i) {  // the last < one vector of columns, same order
    for (int64_t j = whole; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) sum = Ops::mul_add(sum, apack[p * M + i], b[p * n + j]);
      c[i * n + j] = sum;
    }
  }
}

template <typename T, int Bytes, class Ops>
inline void short_gemm(const GemmProduct<T> &g) {
  const T *b = g.b.data;
  switch (g.m) {
    case 1:
      return short_rows<T, Bytes, Ops, 1>(g.n, g.k, g.a, b, g.c);
    case 2:
      return short_rows<T, Bytes, Ops, 2>(g.n, g.k, g.a, b, g.c);
    case 3:
      return short_rows<T, Bytes, Ops, 3>(g.n, g.k, g.a, b, g.c);
    case 4:
      return short_rows<T, Bytes, Ops, 4>(g.n, g.k, g.a, b, g.c);
    case 5:
      return short_rows<T, Bytes, Ops, 5>(g.n, g.k, g.a, b, g.c);
    case 6:
      return short_rows<T, Bytes, Ops, 6>(g.n, g.k, g.a, b, g.c);
    case 7:
      return short_rows<T, Bytes, Ops, 7>(g.n, g.k, g.a, b, g.c);
    default:
      return short_rows<T, Bytes, Ops, 8>(g.n, g.k, g.a, b, g.c);
  }
}

}  // namespace

}  // namespace spmd::rt::detail
