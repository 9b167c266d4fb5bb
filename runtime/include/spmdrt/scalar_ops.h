// spmdrt/scalar_ops.h — the per-element meaning of every elementwise op, SPMDRT_HD inline.
//
// The fused loops that `spmdc build --target cpu` emits compute one element of
// a whole chain of elementwise ops at a time, so they cannot call the
// tensor-at-a-time kernels of kernels.h. They call these functions instead,
// which reproduce the kernels' arithmetic expression for expression (the same
// std:: calls, the same integer wrapping, the same NaN rules, the same bf16
// rounding after every op), so a fused loop computes exactly the bits the
// interpreter computes. tests/unit/backend/test_scalar_ops.cpp checks this
// against rt::unary / rt::binary / rt::select / rt::cast for every op and
// dtype. Compile with -ffp-contract=off (the default in ISO C++ mode) so no
// multiply-add is contracted into an FMA.
//
// Values are in their *compute* type: float for f32 and bf16, double, int32_t,
// bool. bf16 values are kept as floats holding an exactly representable bf16
// (bf16_round after every op producing bf16).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "spmdrt/hot_code.h"
#include "spmdrt/tensor.h"
#include "spmdrt/vector_math.h"

// Usable from CUDA kernels too: every function is __host__ __device__ under nvcc.
#if defined(__CUDACC__)
#define SPMDRT_HD __host__ __device__
#else
#define SPMDRT_HD
#endif

namespace spmd::rt::sc {
SPMDRT_HOT_BEGIN  // -O3 where the fused loops inline these (hot_code.h)

// ---- bf16 -----------------------------------------------------------------------

SPMDRT_HD inline float bf16_load(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}
SPMDRT_HD inline uint16_t bf16_store(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (value != value) return static_cast<uint16_t>((bits >> 16) | 0x40);     // quiet NaN
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // nearest even
}
/// Rounds a float to the nearest bf16 (ties to even) and back: one bf16 store.
SPMDRT_HD inline float bf16_round(float value) { return bf16_load(bf16_store(value)); }

// ---- unary ----------------------------------------------------------------------

template <typename C>
SPMDRT_HD inline C neg(C x) {
  if constexpr (std::is_same_v<C, int32_t>)
    return static_cast<int32_t>(0u - static_cast<uint32_t>(x));
  else
    return -x;
}
template <typename C>
SPMDRT_HD inline C abs(C x) {
  if constexpr (std::is_same_v<C, int32_t>)
    return x < 0 ? static_cast<int32_t>(0u - static_cast<uint32_t>(x)) : x;
  else
    return std::abs(x);
}
template <typename C>
SPMDRT_HD inline C sign(C x) {
  return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);  // keeps 0, -0 and NaN
}
// exp, log, tanh and logistic of f32 (and so of bf16, computed in f32) use the
// vectorisable versions of spmdrt/vector_math.h on the host; f64, sin and cos
// use the C++ library. On a GPU every function is CUDA's own (GPU results are
// compared with a tolerance, not bit for bit).
#if defined(__CUDA_ARCH__)
inline constexpr bool kHostF32Math = false;
#else
inline constexpr bool kHostF32Math = true;
#endif
template <typename C>
SPMDRT_HD inline C exp(C x) {
  if constexpr (kHostF32Math && std::is_same_v<C, float>)
    return vm::exp_f32(x);
  else
    return std::exp(x);
}
template <typename C>
SPMDRT_HD inline C log(C x) {
  if constexpr (kHostF32Math && std::is_same_v<C, float>)
    return vm::log_f32(x);
  else
    return std::log(x);
}
template <typename C>
SPMDRT_HD inline C sin(C x) {
  return std::sin(x);
}
template <typename C>
SPMDRT_HD inline C cos(C x) {
  return std::cos(x);
}
template <typename C>
SPMDRT_HD inline C tanh(C x) {
  if constexpr (kHostF32Math && std::is_same_v<C, float>)
    return vm::tanh_f32(x);
  else
    return std::tanh(x);
}
template <typename C>
SPMDRT_HD inline C sqrt(C x) {
  return std::sqrt(x);
}
template <typename C>
SPMDRT_HD inline C rsqrt(C x) {
  return C(1) / std::sqrt(x);
}
template <typename C>
SPMDRT_HD inline C logistic(C x) {
  if constexpr (kHostF32Math && std::is_same_v<C, float>)
    return vm::logistic_f32(x);
  else
    return C(1) / (C(1) + std::exp(-x));
}
template <typename C>
SPMDRT_HD inline C erf(C x) {
  return std::erf(x);
}
template <typename C>
SPMDRT_HD inline C log1p(C x) {
  return std::log1p(x);
}
template <typename C>
SPMDRT_HD inline C expm1(C x) {
  return std::expm1(x);
}
template <typename C>
SPMDRT_HD inline C cbrt(C x) {
  return std::cbrt(x);
}
SPMDRT_HD inline bool logical_not(bool x) { return !x; }

// ---- binary ---------------------------------------------------------------------

SPMDRT_HD inline int32_t int_pow(int32_t base, int32_t exponent) {
  if (exponent < 0) return base == 1 ? 1 : (base == -1 ? (exponent % 2 ? -1 : 1) : 0);
  uint32_t result = 1, b = static_cast<uint32_t>(base);
  for (auto e = static_cast<uint32_t>(exponent); e; e >>= 1, b *= b) {
    if (e & 1) result *= b;
  }
  return static_cast<int32_t>(result);
}

template <typename C>
SPMDRT_HD inline C add(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>)
    return static_cast<int32_t>(uint32_t(a) + uint32_t(b));
  else
    return a + b;
}
template <typename C>
SPMDRT_HD inline C sub(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>)
    return static_cast<int32_t>(uint32_t(a) - uint32_t(b));
  else
    return a - b;
}
template <typename C>
SPMDRT_HD inline C mul(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>)
    return static_cast<int32_t>(uint32_t(a) * uint32_t(b));
  else
    return a * b;
}
template <typename C>
SPMDRT_HD inline C div(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>) {
#if defined(__CUDA_ARCH__)
    if (b == 0) return 0;  // GPU: no exceptions in kernels; documented in docs/backend.md
#else
    if (b == 0) throw RuntimeError("integer division by zero");
#endif
    if (b == -1) return static_cast<int32_t>(0u - uint32_t(a));  // INT_MIN / -1 wraps
    return a / b;
  } else {
    return a / b;
  }
}
/// NumPy's floor division `a // b`: the quotient rounded toward -inf. Integers:
/// division by zero is an error (0 on a GPU), INT_MIN // -1 wraps. Floats:
/// NumPy's divmod algorithm (fmod, then the correction), so the result and
/// its sign match NumPy exactly; division by zero gives a / b (inf or NaN).
template <typename C>
SPMDRT_HD inline C floor_divide(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>) {
    C q = div(a, b);  // truncated; checks b == 0 and wraps INT_MIN / -1
    if (b != -1 && a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
    return q;
  } else {
    if (b == C(0)) return a / b;
    C mod = std::fmod(a, b);
    C quotient = (a - mod) / b;
    if (mod != C(0) && ((b < C(0)) != (mod < C(0)))) quotient -= C(1);
    if (quotient == C(0)) return std::copysign(C(0), a / b);
    C floored = std::floor(quotient);
    if (quotient - floored > C(0.5)) floored += C(1);
    return floored;
  }
}
/// NumPy's remainder `a % b` = a - (a // b) * b, with the sign of b (zero is
/// +0 or -0 like b). Integers: by zero is an error (0 on a GPU). Floats: by
/// zero gives NaN.
template <typename C>
SPMDRT_HD inline C remainder(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>) {
    if (b == 0) {
#if defined(__CUDA_ARCH__)
      return 0;
#else
      throw RuntimeError("integer division by zero");
#endif
    }
    if (b == -1) return 0;  // INT_MIN % -1 would overflow
    C r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    C mod = std::fmod(a, b);
    if (b == C(0)) return mod;
    if (mod != C(0)) {
      if ((b < C(0)) != (mod < C(0))) mod += b;
    } else {
      mod = std::copysign(C(0), b);
    }
    return mod;
  }
}
template <typename C>
SPMDRT_HD inline C pow(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>)
    return int_pow(a, b);
  else  // x ** 2 is the (correctly rounded) square; a literal 2 folds this choice away
    return b == C(2) ? a * a : static_cast<C>(std::pow(a, b));
}
template <typename C>
SPMDRT_HD inline C max(C a, C b) {
  return (a > b || a != a) ? a : b;
}  // NaN wins
template <typename C>
SPMDRT_HD inline C min(C a, C b) {
  return (a < b || a != a) ? a : b;
}
template <typename C>
SPMDRT_HD inline bool lt(C a, C b) {
  return a < b;
}
template <typename C>
SPMDRT_HD inline bool le(C a, C b) {
  return a <= b;
}
template <typename C>
SPMDRT_HD inline bool gt(C a, C b) {
  return a > b;
}
template <typename C>
SPMDRT_HD inline bool ge(C a, C b) {
  return a >= b;
}
template <typename C>
SPMDRT_HD inline bool eq(C a, C b) {
  return a == b;
}
template <typename C>
SPMDRT_HD inline bool ne(C a, C b) {
  return a != b;
}
SPMDRT_HD inline bool logical_and(bool a, bool b) { return a && b; }
SPMDRT_HD inline bool logical_or(bool a, bool b) { return a || b; }
template <typename C>
SPMDRT_HD inline C select(bool c, C a, C b) {
  return c ? a : b;
}

// ---- cast -----------------------------------------------------------------------

/// Converts a computed value to the compute type of the destination dtype:
/// D is float (f32), double, int32_t or bool; use to_bf16 for bf16.
template <typename D, typename C>
SPMDRT_HD inline D convert(C v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != C(0);  // NaN is true, as in NumPy
  } else if constexpr (std::is_same_v<D, int32_t> && !std::is_integral_v<C>) {
    if (v != v) return 0;  // truncate toward zero, saturating; NaN becomes 0
    if (v <= C(-2147483648.0)) return std::numeric_limits<int32_t>::min();
    if (v >= C(2147483647.0)) return std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(v);
  } else {
    return static_cast<D>(v);
  }
}
/// Cast to bf16 (via f32: f64 and i32 sources round twice), as a float.
template <typename C>
SPMDRT_HD inline float to_bf16(C v) {
  return bf16_round(static_cast<float>(v));
}

SPMDRT_HOT_END
}  // namespace spmd::rt::sc
