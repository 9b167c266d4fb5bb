// runtime/cpu/kernels_gemm_avx2.cpp — gemm's own loops for AVX2 + FMA.
//
// Compiled with -mavx2 -mfma (runtime/CMakeLists.txt) and called only on CPUs that have
// both (kernels_gemm.cpp's gemm_isa): the loops of gemm_loops.h with 32-byte vectors and
// every multiply-add fused, s = fma(a, b, s), rounded once. On AVX2 the separate multiply
// and add lose to OpenBLAS's FMA kernels (issue 32); the bits are those of the fma loop
// over k in increasing order on every such CPU.
#include <immintrin.h>

#include "gemm_loops.h"

namespace spmd::rt::detail {

namespace {

/// fma(s, b, acc): s broadcast, acc and b vectors or scalars.
struct Fused {
  [[gnu::always_inline]] static float mul_add(float acc, float s, float b) {
    return __builtin_fmaf(s, b, acc);
  }
  [[gnu::always_inline]] static double mul_add(double acc, double s, double b) {
    return __builtin_fma(s, b, acc);
  }
  [[gnu::always_inline]] static F32x8 mul_add(F32x8 acc, float s, F32x8 b) {
    return __builtin_ia32_vfmaddps256(F32x8(_mm256_set1_ps(s)), b, acc);
  }
  [[gnu::always_inline]] static F64x4 mul_add(F64x4 acc, double s, F64x4 b) {
    return __builtin_ia32_vfmaddpd256(F64x4(_mm256_set1_pd(s)), b, acc);
  }
};

template <typename T>
void loops(const GemmProduct<T> &g) {
  switch (g.path) {
    case GemmPath::Gemv:
    case GemmPath::VecMat:
      break;  // cblas_?gemv on AVX2 (kernels_gemm.cpp)
    case GemmPath::Narrow:
      return narrow<T, 32, Fused>(g);
    case GemmPath::Short:
      return short_gemm<T, 32, Fused>(g);
    case GemmPath::Blas:
      break;
  }
}

}  // namespace

void gemm_loops_avx2_fma(const GemmProduct<float> &g) { loops(g); }
void gemm_loops_avx2_fma(const GemmProduct<double> &g) { loops(g); }

}  // namespace spmd::rt::detail
