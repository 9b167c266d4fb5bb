// spmdrt/kernels.h — per-op host kernels, one implementation per op.
//
// These are the CPU meaning of every non-collective op of the language. The
// interpreter (`spmdc run`) and the emitted CPU executables both call them, so
// a given program computes identical bits on both. All kernels are
// deterministic: reductions run in a fixed order.
//
// Binary and ternary kernels broadcast NumPy-style. Operand dtypes must already
// agree (the compiler inserts casts); comparisons return Bool.
#pragma once

#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "spmdrt/tensor.h"

namespace spmd::rt {

/// The elementwise functions of one operand: spmdrt/unary_math.def.
enum class UnaryOp : uint8_t {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) Name,
#include "spmdrt/unary_math.def"
};
/// The operand dtypes a unary op accepts: Float (f32, f64, bf16), Signed (those
/// and i32) or Bool.
enum class UnaryDomain : uint8_t { Float, Signed, Bool };
constexpr UnaryDomain unary_domain(UnaryOp op) {
  switch (op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  case UnaryOp::Name:                                                    \
    return UnaryDomain::Domain;
#include "spmdrt/unary_math.def"
  }
  return UnaryDomain::Float;
}
/// The elementwise functions of two operands: spmdrt/binary_math.def.
enum class BinaryOp : uint8_t {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) Name,
#include "spmdrt/binary_math.def"
};
/// Binary: the result has the operands' dtype; Compare: the result is bool;
/// Logical: bool operands and result.
enum class BinaryKind : uint8_t { Binary, Compare, Logical };
constexpr BinaryKind binary_kind(BinaryOp op) {
  switch (op) {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case BinaryOp::Name:                                                                  \
    return BinaryKind::Kind;
#include "spmdrt/binary_math.def"
  }
  return BinaryKind::Binary;
}
/// Whether a binary op also takes bool operands.
constexpr bool binary_takes_bool(BinaryOp op) {
  switch (op) {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case BinaryOp::Name:                                                                  \
    return SPMDRT_BOOL_OK_##BoolOk;
#define SPMDRT_BOOL_OK_Yes true
#define SPMDRT_BOOL_OK_No false
#include "spmdrt/binary_math.def"
#undef SPMDRT_BOOL_OK_Yes
#undef SPMDRT_BOOL_OK_No
  }
  return false;
}
enum class ReduceOp : uint8_t { Sum, Max, Min };

/// NumPy broadcasting of two shapes; throws RuntimeError when incompatible.
Shape broadcast_shapes(const Shape &a, const Shape &b);

Tensor unary(UnaryOp op, const Tensor &x);
Tensor binary(BinaryOp op, const Tensor &a, const Tensor &b);
/// where(cond, a, b): cond is Bool; all three broadcast together.
Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b);
Tensor cast(const Tensor &x, DType to);

/// Elementwise kernels on raw storage, for evaluating fused chains a tile at a
/// time (the interpreter's fused groups): the same per-element code as the
/// tensor kernels above. An operand is `n` contiguous elements of its dtype, or
/// (scalar) one element standing for all of them; `out` receives `n` elements
/// (bool for comparisons, else the operand dtype; `to` for cast).
struct SpanArg {
  const void *data = nullptr;
  bool scalar = false;
};
void unary_span(UnaryOp op, DType dtype, SpanArg x, void *out, int64_t n);
void binary_span(BinaryOp op, DType dtype, SpanArg a, SpanArg b, void *out, int64_t n);
void select_span(SpanArg cond, DType dtype, SpanArg a, SpanArg b, void *out, int64_t n);
void cast_span(DType from, DType to, SpanArg x, void *out, int64_t n);

/// Floating-point sums (f32, f64, bf16) are defined this way on every backend,
/// so that they are accurate and bit-identical everywhere: the elements
/// x_0, ..., x_{n-1} of one output (increasing flat index over the reduced
/// dimensions) are summed in kSumLanes lanes, lane j holding
/// (((0 + x_j) + x_{j+L}) + x_{j+2L}) + ... in f64 (L = kSumLanes); the lanes
/// are folded by `for s = L/2, L/4, ..., 1: lane[t] = lane[t] + lane[t + s]
/// (t < s)`, and lane 0 is rounded to the dtype (bf16: to f32, then to bf16).
inline constexpr int64_t kSumLanes = 256;

/// Reduces over `axes` (sorted, distinct); the reduced dimensions are removed.
/// Sum over an empty set of elements is 0; Max/Min of an empty set throw.
Tensor reduce(ReduceOp op, const Tensor &x, std::span<const int64_t> axes);
/// argmax (op Max) / argmin (op Min) over `axes` (sorted, distinct), removed: the
/// i32 index, counted row-major over the reduced dimensions, of the first
/// extreme element; a NaN counts as the extreme (NumPy). Empty sets throw.
Tensor arg_reduce(ReduceOp op, const Tensor &x, std::span<const int64_t> axes);

/// Matrix product with NumPy matmul semantics for rank >= 1 operands:
/// [.., m, k] x [.., k, n] -> [.., m, n] with broadcast batch dimensions;
/// rank-1 operands are promoted and the promoted dimension removed.
/// f32/f64 go to BLAS (cblas_sgemm / cblas_dgemm); other dtypes use a loop.
Tensor matmul(const Tensor &a, const Tensor &b);
/// Einstein summation over one or two operands, e.g. "bij,bjk->bik", "ii->i" is
/// not supported (no repeated index within one operand). Contractions go to BLAS
/// through transpose + reshape + gemm.
Tensor einsum(std::string_view spec, std::span<const Tensor> operands);
/// The bytes einsum(spec, operands of `shapes` and `dtype`) allocates beyond its
/// result at its peak: operands reduced over their private indices or copied into
/// the order the gemm reads, the product before it is transposed into the
/// output's order, and for bf16 the f32 copies it computes in. The memory
/// model of `spmdc shard` counts it (docs/sharding.md, "Memory").
int64_t einsum_scratch_bytes(std::string_view spec, std::span<const Shape> shapes, DType dtype);

/// The matrix products einsum(spec, two operands of `shapes`) runs: `batch`
/// gemms of m x k times k x n, each operand read transposed in place
/// (`trans_a`, `trans_b`: a gemm flag) or copied into gemm order first, and
/// the elements einsum copies around the gemms (operands summed over private
/// indices or permuted, the product permuted into the output's order). The
/// cost model prices a product by this shape and layout (docs/sharding.md,
/// "Hardware profiles"). batch 0 for a one-operand einsum.
struct GemmShape {
  int64_t batch = 0, m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false;
  int64_t copied_elements = 0;
};
GemmShape einsum_gemm_shape(std::string_view spec, std::span<const Shape> shapes);

Tensor reshape(const Tensor &x, const Shape &shape);
/// Permutes dimensions: result dim i is input dim perm[i].
Tensor transpose(const Tensor &x, std::span<const int64_t> perm);
/// Reverses the order of the elements along each of `dims` (NumPy's flip).
Tensor reverse(const Tensor &x, std::span<const int64_t> dims);
/// NumPy broadcast_to.
Tensor broadcast_to(const Tensor &x, const Shape &shape);
/// Static strided slice: start, limit (exclusive), stride > 0 per dimension.
Tensor slice(const Tensor &x, std::span<const int64_t> start, std::span<const int64_t> limit,
             std::span<const int64_t> stride);
/// Inverse of slice: places x into zeros of `shape` at start with stride.
Tensor pad_into(const Tensor &x, const Shape &shape, std::span<const int64_t> start,
                std::span<const int64_t> stride);
/// Slice of `sizes` at runtime offsets `start` (clamped like XLA's dynamic_slice).
Tensor dynamic_slice(const Tensor &x, std::span<const int64_t> start,
                     std::span<const int64_t> sizes);
/// Copy of `x` with `update` written at `start`.
Tensor dynamic_update_slice(const Tensor &x, const Tensor &update, std::span<const int64_t> start);
/// The same, writing into `x`'s own buffer when no other tensor shares it (a
/// loop's stacked values grow in place instead of being copied every step).
Tensor dynamic_update_slice(Tensor &&x, const Tensor &update, std::span<const int64_t> start);
Tensor concat(std::span<const Tensor> parts, int64_t axis);
/// The entries of x at `ids` (i32, any shape) along `axis`: the result is
/// x.shape[:axis] + ids.shape + x.shape[axis+1:] (NumPy's take).
Tensor take(const Tensor &x, const Tensor &ids, int64_t axis, IndexMode mode);
/// x with `updates` (shaped as take(x, ids, axis)) added at `ids` along `axis`;
/// repeated ids accumulate, in the order of the ids (take's transpose).
Tensor scatter_add(const Tensor &x, const Tensor &updates, const Tensor &ids, int64_t axis,
                   IndexMode mode);
/// Values 0, 1, 2, ... along dimension `dim` of `shape`, broadcast over the others.
Tensor iota(DType dtype, const Shape &shape, int64_t dim);

// ---- random numbers (spmdrt/random.h says what each element is) ----

/// What a draw computes per element.
enum class RandomOp : uint8_t { Split, Bits, Uniform, Normal, Int };
/// The block of extent `shape` of the draw of shape `global` (empty: `shape`)
/// from `operands` = (key: a scalar key, [lo, hi: scalars for Uniform and Int,]
/// offsets: one i32 scalar per dimension when `global` is given): element i is
/// a function of the key and i's flat index in `global` alone. `dtype` is the
/// result's (key for Split; i32 for Bits and Int; f32 or f64 for Uniform, f32
/// for Normal).
Tensor random_draw(RandomOp op, std::span<const Tensor> operands, DType dtype, const Shape &shape,
                   const Shape &global);
/// How many of a draw's operands come before its offsets (the key, lo and hi).
inline size_t random_params(RandomOp op) {
  return op == RandomOp::Uniform || op == RandomOp::Int ? 3 : 1;
}
/// key(seed) of every element of an i32 tensor.
Tensor random_key(const Tensor &seed);
/// fold_in(key, data) of a scalar key and a scalar i32.
Tensor random_fold_in(const Tensor &key, const Tensor &data);
/// The words of every key: i32[..., 2] (the bits of JAX's uint32 key_data).
Tensor key_data(const Tensor &keys);

}  // namespace spmd::rt
