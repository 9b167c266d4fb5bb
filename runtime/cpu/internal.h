// runtime/cpu/internal.h — helpers shared by the CPU kernel files (not installed).
//
// Row-major strides, dtype dispatch to a templated functor, error formatting and
// a strided N-d copy used by the layout kernels and the simulated collectives.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "spmdrt/kernels.h"
#include "spmdrt/mesh.h"
#include "spmdrt/tensor.h"

namespace spmd::rt::detail {

/// For an MPI process, one of `local_processes` on its node: unless --threads or
/// SPMDRT_THREADS chose the pool's size, the node's hardware threads / local_processes
/// (at least 1), so that the processes together fill the cores (parallel.cpp).
void share_cores_among(int64_t local_processes);

/// Row-major C[m, n] = op(A) @ op(B) for f32, f64 and i32 (wrapping), op(X) = X or its
/// transpose (stored transposed: A as k x m, B as n x k). The computation is chosen by
/// shape (kernels_gemm.cpp): GEMV, vector times matrix, narrow (n <= 64 bytes) and short
/// (m <= 8) products and i32 accumulate each element over k in increasing order; the rest
/// go to BLAS.
void gemm(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const std::byte *a, const std::byte *b, std::byte *c);

/// Whether gemm's own f32/f64 loops use fused multiply-adds on this CPU (AVX2 + FMA
/// without AVX-512): each step is then s = fma(a, b, s) instead of s + a * b.
bool gemm_fuses_multiply_add();

/// Whether gemm computes this product with its own loop (the running sum over k in
/// order, fused or not as above) rather than a library: OpenBLAS, BLIS, oneDNN or OpenBLAS's GEMV
/// (kernels_gemm.cpp: the choice depends on the shape and the CPU).
bool gemm_runs_own_loop(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);

/// A bf16 element; a distinct type so dtype dispatch can template on it.
struct BF16 {
  uint16_t bits;
};

/// bf16 <-> f32 conversions, inline so kernel inner loops can use them.
inline float bf16_load(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}
inline uint16_t bf16_store(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (value != value) return static_cast<uint16_t>((bits >> 16) | 0x40);     // quiet NaN
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // nearest even
}

/// Storage type S of a dtype and the type C kernels compute in (f32 for bf16).
template <typename S>
struct Compute {
  using type = S;
  static S load(S v) { return v; }
  static S store(S v) { return v; }
};
template <>
struct Compute<BF16> {
  using type = float;
  static float load(BF16 v) { return bf16_load(v.bits); }
  static BF16 store(float v) { return BF16{bf16_store(v)}; }
};

/// Compiles a function three times (AVX-512, AVX2, baseline x86-64) and picks the
/// version for the CPU at load time. Only for loops whose per-element arithmetic
/// does not depend on the vector width, so every version computes the same bits.
#define SPMDRT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

/// Row-major element strides of `shape`.
std::vector<int64_t> row_major_strides(const Shape &shape);

/// Throws RuntimeError(message).
[[noreturn]] void fail(const std::string &message);

/// Normalises a possibly negative axis against `rank`; throws when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const char *what);

/// Calls fn(T{}) with T the C++ element type of `dtype` (BF16 for bf16, bool for Bool).
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn &&fn) {
  switch (dtype) {
    case DType::F32:
      return fn(float{});
    case DType::F64:
      return fn(double{});
    case DType::BF16:
      return fn(BF16{});
    case DType::I32:
      return fn(int32_t{});
    case DType::Bool:
      return fn(bool{});
    case DType::Key:
      break;
  }
  fail(dtype == DType::Key ? "a random key has no numeric elements" : "unknown dtype");
}

/// Copies an N-d box of `extent` elements (per dimension) of size `elem_size` bytes
/// from `src` (element strides `src_strides`) to `dst` (element strides
/// `dst_strides`). Strides may be 0 (broadcast read). Inner dimension is looped
/// with a memcpy when both inner strides are 1.
void strided_copy(std::byte *dst, std::span<const int64_t> dst_strides, const std::byte *src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> extent,
                  size_t elem_size);

/// out[i] = ((in_0[i] op in_1[i]) op in_2[i]) ... op in_{n-1}[i] for i < count, the
/// collectives' reduction order (inputs by group rank); elements of `dtype`; bf16
/// accumulates in f32 and rounds once; i32 sums wrap. Every fabric that promises
/// results bit-identical to the simulated one reduces with this.
void reduce_in_rank_order(ReduceOp op, DType dtype, std::span<const std::byte *const> inputs,
                          int64_t count, std::byte *out);

/// reduce_in_rank_order over `rows` rows of `run` elements that lie `stride` elements
/// apart in every input, into consecutive rows of `out` (reduce_scatter over a later
/// dimension): the same order per element, a tile of rows at a time.
void reduce_rows_in_rank_order(ReduceOp op, DType dtype, std::span<const std::byte *const> inputs,
                               int64_t rows, int64_t run, int64_t stride, std::byte *out);

/// Visits the contiguous runs of `block` inside a row-major array of shape
/// `global`, in row-major order, calling run(global_offset, block_offset, count)
/// (in elements). A run covers the block's extent along the last dimension it
/// does not cover whole, times every later dimension.
template <typename Run>
void for_each_block_run(const Shape &global, const Block &block, Run &&run) {
  const auto rank = static_cast<int64_t>(global.size());
  for (int64_t d = 0; d < rank; ++d)
    if (block.extent[d] == 0) return;
  int64_t k = rank - 1;  // last dimension the block does not cover whole
  while (k >= 0 && block.extent[k] == global[k]) --k;
  const std::vector<int64_t> strides = row_major_strides(global);
  if (k < 0) {
    run(int64_t{0}, int64_t{0}, num_elements(global));
    return;
  }
  const int64_t count = block.extent[k] * strides[k];
  std::vector<int64_t> index(static_cast<size_t>(k), 0);  // within the block, dims 0..k-1
  int64_t base = 0;
  for (int64_t d = 0; d <= k; ++d) base += block.start[d] * strides[d];
  for (int64_t local = 0;; local += count) {
    int64_t offset = base;
    for (int64_t d = 0; d < k; ++d) offset += index[d] * strides[d];
    run(offset, local, count);
    int64_t d = k - 1;
    for (; d >= 0; --d) {
      if (++index[d] < block.extent[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Element strides of `in` seen through NumPy broadcasting to `out` (0 on broadcast
/// dimensions); `in` must be broadcast-compatible with `out`.
std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out);

/// Visits a broadcast N-operand iteration over `out_shape` row by row: calls
/// row(offsets, count, inner_strides) where offsets[k] is operand k's element offset
/// at the row start and inner_strides[k] its stride along the row. Adjacent
/// dimensions that are contiguous for every operand are merged first, so rows are
/// as long as possible. The output itself is operand 0 when the caller includes it.
template <size_t N, typename Row>
void for_each_broadcast_row(const Shape &out_shape,
                            const std::array<std::vector<int64_t>, N> &operand_strides, Row &&row) {
  std::vector<int64_t> extent;
  std::array<std::vector<int64_t>, N> strides;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 0) return;
    if (out_shape[d] == 1) continue;
    bool merge = !extent.empty();
    for (size_t k = 0; k < N && merge; ++k) {
      merge = strides[k].back() == operand_strides[k][d] * out_shape[d];
    }
    if (merge) {
      extent.back() *= out_shape[d];
      for (size_t k = 0; k < N; ++k) strides[k].back() = operand_strides[k][d];
    } else {
      extent.push_back(out_shape[d]);
      for (size_t k = 0; k < N; ++k) strides[k].push_back(operand_strides[k][d]);
    }
  }
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> inner{};
  if (extent.empty()) {
    inner.fill(0);
    row(offsets, int64_t{1}, inner);
    return;
  }
  const size_t rank = extent.size();
  for (size_t k = 0; k < N; ++k) inner[k] = strides[k][rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  while (true) {
    row(offsets, extent[rank - 1], inner);
    int64_t d = static_cast<int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (++index[d] < extent[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * extent[d];
      index[d] = 0;
    }
    if (d < 0) break;
  }
}

}  // namespace spmd::rt::detail
