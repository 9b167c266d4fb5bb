// spmdrt/random.h — counter-based random numbers: Threefry-2x32 and the draws built on it.
//
// The language's random numbers follow JAX's keys with
// `jax_threefry_partitionable=True` (docs/language.md, "Random numbers"): a key
// is two 32-bit words; element i of a draw of shape S is a function of the key
// and i (its flat row-major index in S) only:
//
//   (b1, b2) = threefry2x32(key, (hi32(i), lo32(i)))
//   bits     = b1 ^ b2                                   random_bits
//   uniform  = bitcast((bits >> 9) | 0x3f800000) - 1     in [0, 1), then lo + u (hi - lo)
//   split    : new key i = (b1, b2)
//   fold_in  : threefry2x32(key, (0, data))
//
// so a block of a draw (a device's share of a sharded array) is computed from
// its offsets alone. Every function here is SPMDRT_HD inline: the runtime's
// kernels (rt::random_*), the CPU executables and the CUDA kernels all call
// them, and only integer operations and correctly rounded IEEE +, -, *, /,
// sqrt are used (the logarithm of `normal` is computed here, not by libm; on
// CUDA the products are written __fmul_rn/__fadd_rn so nvcc contracts nothing),
// so every target gives the same bits.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SPMDRT_RANDOM_HD __host__ __device__
#else
#define SPMDRT_RANDOM_HD
#endif

namespace spmd::rt::rnd {

/// A key: the two 32-bit words of Threefry's key (JAX's `key_data`).
struct Key {
  uint32_t k0 = 0, k1 = 0;
};
/// Two 32-bit words: a counter or Threefry's output.
struct Pair {
  uint32_t x0 = 0, x1 = 0;
};

SPMDRT_RANDOM_HD inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/// Threefry-2x32 with 20 rounds (Salmon et al., SC'11; Random123's
/// threefry2x32_R(20, ...), the function JAX's threefry2x32_p computes).
SPMDRT_RANDOM_HD inline Pair threefry2x32(Key key, Pair counter) {
  const uint32_t ks[3] = {key.k0, key.k1, 0x1BD11BDAu ^ key.k0 ^ key.k1};
  const int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t x0 = counter.x0 + ks[0], x1 = counter.x1 + ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = rotl32(x1, rotations[r % 8]);
    x1 ^= x0;
    if (r % 4 == 3) {  // key injection s after every 4 rounds
      const uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

/// The pair of element `index` of a draw: Threefry of its 64-bit flat index.
SPMDRT_RANDOM_HD inline Pair element_pair(Key key, uint64_t index) {
  return threefry2x32(key, {static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(index)});
}

/// key(seed): JAX's PRNGKey of a 32-bit seed, (0, seed).
SPMDRT_RANDOM_HD inline Key key_from_seed(int32_t seed) {
  return {0u, static_cast<uint32_t>(seed)};
}

/// fold_in(key, data): Threefry of the counter (0, data).
SPMDRT_RANDOM_HD inline Key fold_in(Key key, int32_t data) {
  Pair p = threefry2x32(key, {0u, static_cast<uint32_t>(data)});
  return {p.x0, p.x1};
}

/// Element `index` of split(key, shape).
SPMDRT_RANDOM_HD inline Key split_element(Key key, uint64_t index) {
  Pair p = element_pair(key, index);
  return {p.x0, p.x1};
}

/// Element `index` of random_bits(key, shape) (JAX's 32-bit random bits).
SPMDRT_RANDOM_HD inline uint32_t bits_element(Key key, uint64_t index) {
  Pair p = element_pair(key, index);
  return p.x0 ^ p.x1;
}

SPMDRT_RANDOM_HD inline float f32_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
SPMDRT_RANDOM_HD inline double f64_from_bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

SPMDRT_RANDOM_HD inline float mul_f32(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SPMDRT_RANDOM_HD inline float add_f32(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SPMDRT_RANDOM_HD inline double mul_f64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
SPMDRT_RANDOM_HD inline double add_f64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

/// An f32 uniform in [lo, hi) from 32 random bits, as JAX's `uniform`: the
/// top 23 bits as the mantissa of a float in [1, 2), minus 1, scaled,
/// shifted, and at least lo.
SPMDRT_RANDOM_HD inline float uniform_f32(uint32_t bits, float lo, float hi) {
  const float unit = f32_from_bits((bits >> 9) | 0x3f800000u) - 1.0f;
  const float v = add_f32(mul_f32(unit, hi - lo), lo);
  return v > lo ? v : lo;
}

/// An f64 uniform in [lo, hi) from 64 random bits (b1 << 32 | b2, JAX's 64-bit bits).
SPMDRT_RANDOM_HD inline double uniform_f64(Pair p, double lo, double hi) {
  const uint64_t bits = (static_cast<uint64_t>(p.x0) << 32) | p.x1;
  const double unit = f64_from_bits((bits >> 12) | 0x3ff0000000000000ull) - 1.0;
  const double v = add_f64(mul_f64(unit, hi - lo), lo);
  return v > lo ? v : lo;
}

/// log(x) for 0 < x <= 1 (a finite normal double) with + - * / only: x = m 2^e
/// with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1)/(m + 1),
/// |s| < 0.172, summed to s^23 (relative error under 1e-17).
SPMDRT_RANDOM_HD inline double log_unit(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int e = static_cast<int>((bits >> 52) & 0x7ff) - 1022;  // x = m 2^e, m in [0.5, 1)
  double m = f64_from_bits((bits & 0x000fffffffffffffull) | 0x3fe0000000000000ull);
  if (m < 0.70710678118654752) {  // move m into [sqrt(1/2), sqrt(2))
    m = mul_f64(m, 2.0);
    e -= 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = mul_f64(s, s);
  double sum = 1.0 / 23.0;
  for (int k = 21; k >= 1; k -= 2) sum = add_f64(mul_f64(sum, s2), 1.0 / k);
  const double log_m = mul_f64(mul_f64(2.0, s), sum);
  return add_f64(mul_f64(static_cast<double>(e), 0.69314718055994530942), log_m);
}

/// erfinv(x) for -1 < x < 1: Giles' single-precision approximation ("Approximating
/// the erfinv function", GPU Computing Gems, 2011; the one XLA uses), evaluated
/// in double and rounded once to f32.
SPMDRT_RANDOM_HD inline float erfinv_f32(float xf) {
  const double x = xf;
  // (1 - x)(1 + x) is exact in double for an f32 x.
  double w = -log_unit(mul_f64(1.0 - x, 1.0 + x));
  double p;
  if (w < 5.0) {
    w = w - 2.5;
    p = 2.81022636e-08;
    p = add_f64(3.43273939e-07, mul_f64(p, w));
    p = add_f64(-3.5233877e-06, mul_f64(p, w));
    p = add_f64(-4.39150654e-06, mul_f64(p, w));
    p = add_f64(0.00021858087, mul_f64(p, w));
    p = add_f64(-0.00125372503, mul_f64(p, w));
    p = add_f64(-0.00417768164, mul_f64(p, w));
    p = add_f64(0.246640727, mul_f64(p, w));
    p = add_f64(1.50140941, mul_f64(p, w));
  } else {
#if defined(__CUDA_ARCH__)
    w = __dsqrt_rn(w) - 3.0;
#else
    w = __builtin_sqrt(w) - 3.0;
#endif
    p = -0.000200214257;
    p = add_f64(0.000100950558, mul_f64(p, w));
    p = add_f64(0.00134934322, mul_f64(p, w));
    p = add_f64(-0.00367342844, mul_f64(p, w));
    p = add_f64(0.00573950773, mul_f64(p, w));
    p = add_f64(-0.0076224613, mul_f64(p, w));
    p = add_f64(0.00943887047, mul_f64(p, w));
    p = add_f64(1.00167406, mul_f64(p, w));
    p = add_f64(2.83297682, mul_f64(p, w));
  }
  return static_cast<float>(mul_f64(p, x));
}

/// A standard normal f32 from 32 random bits, as JAX's `normal`:
/// sqrt(2) erfinv(u) with u uniform in (-1, 1) (lo = nextafter(-1, 0)).
SPMDRT_RANDOM_HD inline float normal_f32(uint32_t bits) {
  const float u = uniform_f32(bits, -0.99999994f, 1.0f);
  return mul_f32(1.41421356f, erfinv_f32(u));
}

/// An i32 in [lo, hi) (lo when hi <= lo) from two words of random bits, as
/// JAX's `randint`: (high mod span * (2^32 mod span) + low mod span) mod span.
SPMDRT_RANDOM_HD inline int32_t randint_i32(uint32_t high, uint32_t low, int32_t lo, int32_t hi) {
  uint32_t span = hi <= lo ? 1u : static_cast<uint32_t>(hi) - static_cast<uint32_t>(lo);
  uint32_t multiplier = 65536u % span;
  multiplier = (multiplier * multiplier) % span;
  uint32_t offset = (high % span) * multiplier + (low % span);
  offset %= span;
  return static_cast<int32_t>(static_cast<uint32_t>(lo) + offset);
}

}  // namespace spmd::rt::rnd
