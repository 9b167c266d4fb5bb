// runtime/cpu/kernels_elementwise.cpp — unary, binary, select and cast kernels.
//
// Every kernel is a template over the storage type S (float, double, BF16, int32_t,
// bool) with the op as a compile-time functor, so the inner loops inline the
// arithmetic. Three loop shapes: same-shape contiguous operands, one scalar
// operand, and general NumPy broadcasting via for_each_broadcast_row (strided
// rows). bf16 computes each element in f32 and rounds once when storing.
// The per-element arithmetic is spmdrt/scalar_ops.h, the same functions the
// CPU backend's fused loops call: integer arithmetic wraps (two's complement)
// instead of invoking UB, integer division truncates toward zero and division
// by zero throws, and f32 exp/log/tanh/logistic are the vectorisable versions
// of spmdrt/vector_math.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "internal.h"
#include "spmdrt/kernels.h"
#include "spmdrt/scalar_ops.h"

namespace spmd::rt {

using detail::BF16;
using detail::Compute;
using detail::fail;

namespace {

template <typename S>
constexpr bool kIsFloat =
    std::is_same_v<S, float> || std::is_same_v<S, double> || std::is_same_v<S, BF16>;

// ---- unary ----------------------------------------------------------------------

/// One element of a unary op: the per-element meaning shared with the fused
/// loops of the CPU backend (spmdrt/scalar_ops.h), so both compute the same bits.
template <UnaryOp kOp, typename C>
inline C apply_unary(C x) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  if constexpr (kOp == UnaryOp::Name) {                                  \
    return sc::scalar_fn(x);                                             \
  } else
#include "spmdrt/unary_math.def"
  { static_assert(kOp != kOp, "a UnaryOp without a row in spmdrt/unary_math.def"); }
}

template <UnaryOp kOp, typename S>
constexpr bool unary_supported() {
  constexpr UnaryDomain domain = unary_domain(kOp);
  if constexpr (std::is_same_v<S, bool>) {
    return domain == UnaryDomain::Bool;
  } else if constexpr (std::is_same_v<S, int32_t>) {
    return domain == UnaryDomain::Signed;
  } else {
    return domain != UnaryDomain::Bool;
  }
}

const char *unary_name(UnaryOp op) {
  static const char *names[] = {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) kernel,
#include "spmdrt/unary_math.def"
  };
  return names[static_cast<int>(op)];
}

// ---- multiversioned f32/f64 loops -------------------------------------------------
// The contiguous loops of f32 and f64 arithmetic are compiled for AVX-512, AVX2
// and baseline x86-64, and the widest the CPU has is chosen when the program is
// loaded (GCC function multiversioning): the runtime is built for baseline
// x86-64, where these loops run at a quarter of the width. The versions compute
// the same bits: every op is the same IEEE operation at every width (no FMA:
// -ffp-contract=off; vector_math.h is IEEE ops and selects), so `spmdc run`
// stays bit-identical to the executables' fused loops. Only loops that cannot
// throw are cloned: with GCC 12 and -fPIC an exception leaving a target_clones
// function calls std::terminate, so every check (dtype, op, integer division by
// zero) stays in the baseline callers below.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SPMDRT_MULTIVERSION [[gnu::target_clones("avx512f", "avx2", "default"), gnu::flatten]]
#else
#define SPMDRT_MULTIVERSION
#endif

template <typename S>
constexpr bool kIsWideFloat = std::is_same_v<S, float> || std::is_same_v<S, double>;

/// out[i] = op(in[i]) for i < n.
template <UnaryOp kOp, typename S>
SPMDRT_MULTIVERSION void unary_loop(const S *in, S *out, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) out[i] = apply_unary<kOp>(in[i]);
}

/// out[0, n) = op(x): x contiguous, or one element repeated.
template <UnaryOp kOp>
void run_unary_span(DType dtype, SpanArg x, void *out, int64_t n) {
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    if constexpr (!unary_supported<kOp, S>()) {
      fail(std::string("unary op ") + unary_name(kOp) + " does not accept " + dtype_name(dtype) +
           " operands");
    } else {
      using Cx = Compute<S>;
      const S *in = static_cast<const S *>(x.data);
      S *o = static_cast<S *>(out);
      if (x.scalar) {
        if (n > 0) std::fill(o, o + n, Cx::store(apply_unary<kOp>(Cx::load(in[0]))));
      } else if constexpr (kIsWideFloat<S>) {
        unary_loop<kOp>(in, o, n);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = Cx::store(apply_unary<kOp>(Cx::load(in[i])));
      }
    }
  });
}

// ---- binary ---------------------------------------------------------------------

template <BinaryOp kOp>
constexpr bool kIsComparison = binary_kind(kOp) == BinaryKind::Compare;

/// One element of a binary op, as in spmdrt/scalar_ops.h.
template <BinaryOp kOp, typename C>
inline auto apply_binary(C a, C b) {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  if constexpr (kOp == BinaryOp::Name) {                                     \
    return sc::scalar_fn(a, b);                                              \
  } else
#include "spmdrt/binary_math.def"
  { static_assert(kOp != kOp, "a BinaryOp without a row in spmdrt/binary_math.def"); }
}

template <BinaryOp kOp, typename S>
constexpr bool binary_supported() {
  if constexpr (std::is_same_v<S, bool>) {
    return binary_takes_bool(kOp);
  } else {
    return binary_kind(kOp) != BinaryKind::Logical;
  }
}

const char *binary_name(BinaryOp op) {
  static const char *names[] = {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) kernel,
#include "spmdrt/binary_math.def"
  };
  return names[static_cast<int>(op)];
}

/// The storage of a binary op's result: bool for comparisons, else the operands'.
template <BinaryOp kOp, typename S>
using BinaryResult = std::conditional_t<kIsComparison<kOp>, bool, S>;
template <BinaryOp kOp, typename S, typename V>
BinaryResult<kOp, S> store_binary(V v) {
  if constexpr (kIsComparison<kOp>)
    return v;
  else
    return Compute<S>::store(v);
}

/// out[i] = op(a[i], b[i]), one of them possibly a repeated scalar (`scalar`:
/// 0 none, 1 a, 2 b).
template <BinaryOp kOp, typename S>
SPMDRT_MULTIVERSION void binary_loop(const S *a, const S *b, S *out, int64_t n,
                                     int scalar) noexcept {
  if (scalar == 1) {
    const S sa = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = apply_binary<kOp>(sa, b[i]);
  } else if (scalar == 2) {
    const S sb = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = apply_binary<kOp>(a[i], sb);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = apply_binary<kOp>(a[i], b[i]);
  }
}

/// out[0, n) = op(a, b): each operand contiguous or one element repeated.
template <BinaryOp kOp>
void run_binary_span(DType dtype, SpanArg a, SpanArg b, void *out, int64_t n) {
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    if constexpr (!binary_supported<kOp, S>()) {
      fail(std::string("binary op ") + binary_name(kOp) + " does not accept " + dtype_name(dtype) +
           " operands");
    } else {
      using Cx = Compute<S>;
      using R = BinaryResult<kOp, S>;
      auto store = [](auto v) { return store_binary<kOp, S>(v); };
      const S *pa = static_cast<const S *>(a.data);
      const S *pb = static_cast<const S *>(b.data);
      R *o = static_cast<R *>(out);
      if constexpr (kIsWideFloat<S> && std::is_same_v<R, S>) {  // arithmetic, not comparisons
        if (!a.scalar || !b.scalar)
          return binary_loop<kOp>(pa, pb, o, n, a.scalar ? 1 : b.scalar ? 2 : 0);
      }
      if (!a.scalar && !b.scalar) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = store(apply_binary<kOp>(Cx::load(pa[i]), Cx::load(pb[i])));
      } else if (a.scalar && !b.scalar) {
        const auto sa = Cx::load(pa[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = store(apply_binary<kOp>(sa, Cx::load(pb[i])));
      } else if (b.scalar && !a.scalar) {
        const auto sb = Cx::load(pb[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = store(apply_binary<kOp>(Cx::load(pa[i]), sb));
      } else if (n > 0) {
        std::fill(o, o + n, store(apply_binary<kOp>(Cx::load(pa[0]), Cx::load(pb[0]))));
      }
    }
  });
}

template <BinaryOp kOp>
Tensor run_binary(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype()) {
    fail(std::string("binary op ") + binary_name(kOp) + ": operand dtypes differ (" +
         dtype_name(a.dtype()) + " vs " + dtype_name(b.dtype()) + ")");
  }
  Shape shape = broadcast_shapes(a.shape(), b.shape());
  const DType out_dtype = kIsComparison<kOp> ? DType::Bool : a.dtype();
  Tensor out = Tensor::empty(out_dtype, shape);
  const int64_t n = out.numel();
  if ((a.numel() == n || a.numel() == 1) && (b.numel() == n || b.numel() == 1)) {
    // Same shape up to leading 1s (contiguous), or a scalar operand.
    run_binary_span<kOp>(a.dtype(), {a.raw(), a.numel() != n}, {b.raw(), b.numel() != n}, out.raw(),
                         n);
    return out;
  }
  detail::dispatch_dtype(a.dtype(), [&](auto tag) {
    using S = decltype(tag);
    if constexpr (!binary_supported<kOp, S>()) {
      fail(std::string("binary op ") + binary_name(kOp) + " does not accept " +
           dtype_name(a.dtype()) + " operands");
    } else {
      using Cx = Compute<S>;
      using R = BinaryResult<kOp, S>;
      auto store = [](auto v) { return store_binary<kOp, S>(v); };
      const S *pa = a.data<S>();
      const S *pb = b.data<S>();
      R *o = out.data<R>();
      std::array<std::vector<int64_t>, 3> strides = {detail::row_major_strides(shape),
                                                     detail::broadcast_strides(a.shape(), shape),
                                                     detail::broadcast_strides(b.shape(), shape)};
      detail::for_each_broadcast_row<3>(
          shape, strides, [&](const auto &off, int64_t count, const auto &inner) {
            R *po = o + off[0];
            const S *xa = pa + off[1];
            const S *xb = pb + off[2];
            const int64_t ia = inner[1], ib = inner[2];
            if (ia == 1 && ib == 0) {
              const auto sb = Cx::load(xb[0]);
              for (int64_t i = 0; i < count; ++i)
                po[i] = store(apply_binary<kOp>(Cx::load(xa[i]), sb));
            } else if (ia == 0 && ib == 1) {
              const auto sa = Cx::load(xa[0]);
              for (int64_t i = 0; i < count; ++i)
                po[i] = store(apply_binary<kOp>(sa, Cx::load(xb[i])));
            } else {
              for (int64_t i = 0; i < count; ++i) {
                po[i] = store(apply_binary<kOp>(Cx::load(xa[i * ia]), Cx::load(xb[i * ib])));
              }
            }
          });
    }
  });
  return out;
}

// ---- cast -----------------------------------------------------------------------

/// Converts one computed value (float for bf16 sources) to the destination storage.
template <typename D, typename C>
inline D convert(C v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != C(0);  // NaN is true, as in NumPy
  } else if constexpr (std::is_same_v<D, int32_t> && !std::is_integral_v<C>) {
    // Truncate toward zero, saturating; NaN becomes 0.
    if (v != v) return 0;
    if (v <= C(-2147483648.0)) return std::numeric_limits<int32_t>::min();
    if (v >= C(2147483647.0)) return std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(v);
  } else if constexpr (std::is_same_v<D, BF16>) {
    // Via f32: f64 and i32 sources round twice (to f32, then to bf16).
    return BF16{detail::bf16_store(static_cast<float>(v))};
  } else {
    return static_cast<D>(v);
  }
}

}  // namespace

Shape broadcast_shapes(const Shape &a, const Shape &b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      fail("cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace detail {
std::vector<int64_t> broadcast_strides(const Shape &in, const Shape &out) {
  std::vector<int64_t> in_strides = row_major_strides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    strides[lead + i] = in[i] == 1 && out[lead + i] != 1 ? 0 : in_strides[i];
  }
  return strides;
}
}  // namespace detail

void unary_span(UnaryOp op, DType dtype, SpanArg x, void *out, int64_t n) {
  switch (op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  case UnaryOp::Name:                                                    \
    return run_unary_span<UnaryOp::Name>(dtype, x, out, n);
#include "spmdrt/unary_math.def"
  }
  fail("unknown unary op");
}

Tensor unary(UnaryOp op, const Tensor &x) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  unary_span(op, x.dtype(), {x.raw(), false}, out.raw(), x.numel());
  return out;
}

/// Calls fn(std::integral_constant<BinaryOp, op>{}): the op as a compile-time constant.
template <typename Fn>
decltype(auto) with_binary_op(BinaryOp op, Fn &&fn) {
  switch (op) {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case BinaryOp::Name:                                                       \
    return fn(std::integral_constant<BinaryOp, BinaryOp::Name>{});
#include "spmdrt/binary_math.def"
  }
  fail("unknown binary op");
}

Tensor binary(BinaryOp op, const Tensor &a, const Tensor &b) {
  return with_binary_op(op, [&](auto k) { return run_binary<decltype(k)::value>(a, b); });
}

void binary_span(BinaryOp op, DType dtype, SpanArg a, SpanArg b, void *out, int64_t n) {
  with_binary_op(op, [&](auto k) { run_binary_span<decltype(k)::value>(dtype, a, b, out, n); });
}

Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b) {
  if (cond.dtype() != DType::Bool) {
    fail(std::string("select: condition must be bool, got ") + dtype_name(cond.dtype()));
  }
  if (a.dtype() != b.dtype()) {
    fail(std::string("select: branch dtypes differ (") + dtype_name(a.dtype()) + " vs " +
         dtype_name(b.dtype()) + ")");
  }
  Shape shape = broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape()));
  Tensor out = Tensor::empty(a.dtype(), shape);
  detail::dispatch_dtype(a.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const auto *pc = cond.data<uint8_t>();
    const S *pa = a.data<S>();
    const S *pb = b.data<S>();
    S *o = out.data<S>();
    std::array<std::vector<int64_t>, 4> strides = {
        detail::row_major_strides(shape), detail::broadcast_strides(cond.shape(), shape),
        detail::broadcast_strides(a.shape(), shape), detail::broadcast_strides(b.shape(), shape)};
    detail::for_each_broadcast_row<4>(
        shape, strides, [&](const auto &off, int64_t count, const auto &inner) {
          S *po = o + off[0];
          const uint8_t *xc = pc + off[1];
          const S *xa = pa + off[2];
          const S *xb = pb + off[3];
          for (int64_t i = 0; i < count; ++i) {
            po[i] = xc[i * inner[1]] ? xa[i * inner[2]] : xb[i * inner[3]];
          }
        });
  });
  return out;
}

void select_span(SpanArg cond, DType dtype, SpanArg a, SpanArg b, void *out, int64_t n) {
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    const auto *pc = static_cast<const uint8_t *>(cond.data);
    const S *pa = static_cast<const S *>(a.data);
    const S *pb = static_cast<const S *>(b.data);
    S *o = static_cast<S *>(out);
    const int64_t ic = cond.scalar ? 0 : 1, ia = a.scalar ? 0 : 1, ib = b.scalar ? 0 : 1;
    for (int64_t i = 0; i < n; ++i) o[i] = pc[i * ic] ? pa[i * ia] : pb[i * ib];
  });
}

void cast_span(DType from, DType to, SpanArg x, void *out, int64_t n) {
  detail::dispatch_dtype(from, [&](auto from_tag) {
    using S = decltype(from_tag);
    detail::dispatch_dtype(to, [&](auto to_tag) {
      using D = decltype(to_tag);
      const S *in = static_cast<const S *>(x.data);
      D *o = static_cast<D *>(out);
      if (x.scalar) {
        if (n > 0) std::fill(o, o + n, convert<D>(Compute<S>::load(in[0])));
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = convert<D>(Compute<S>::load(in[i]));
      }
    });
  });
}

Tensor cast(const Tensor &x, DType to) {
  if (x.dtype() == to) return x.clone();
  Tensor out = Tensor::empty(to, x.shape());
  cast_span(x.dtype(), to, {x.raw(), false}, out.raw(), x.numel());
  return out;
}

}  // namespace spmd::rt
