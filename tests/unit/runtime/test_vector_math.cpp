// tests/unit/runtime/test_vector_math.cpp — accuracy and bit-identity of spmdrt/vector_math.h.
//
// Every 257th f32 bit pattern (both signs, all exponents, ~33 M values per
// function) is checked against the double-precision <cmath> result: the error
// in units in the last place of the f32 result must stay within the bound
// docs/runtime.md promises. The special values are checked exactly, and the
// tensor kernels (vectorised loops) must return the scalar functions' bits.
#include <cmath>
#include <functional>
#include <limits>

#include "rt_test_util.h"
#include "spmdrt/kernels.h"
#include "spmdrt/vector_math.h"

using namespace spmd::rt;

namespace {

/// |y - ref| in units of the last place of the f32 nearest ref (subnormal ulp below 2^-126).
double ulp_error(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0 : 1e9;
  if (std::isinf(ref) || std::abs(ref) > std::numeric_limits<float>::max())
    return y == static_cast<float>(ref) ? 0 : 1e9;
  int e = 0;
  std::frexp(ref, &e);
  const double ulp = std::ldexp(1.0, std::max(e, -125) - 24);
  return std::abs(static_cast<double>(y) - ref) / ulp;
}

double max_ulp_error(const std::function<float(float)> &f,
                     const std::function<double(double)> &ref) {
  double worst = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 257) {
    const float x = vm::bits_float(static_cast<uint32_t>(bits));
    if (std::isnan(x)) continue;
    worst = std::max(worst, ulp_error(f(x), ref(static_cast<double>(x))));
  }
  return worst;
}

}  // namespace

TEST_CASE("vector_math: exp, log, tanh, logistic within their ulp bounds",
          "[runtime][vector_math]") {
  CHECK(max_ulp_error(vm::exp_f32, [](double x) { return std::exp(x); }) <= 1.0);
  CHECK(max_ulp_error(vm::log_f32, [](double x) { return std::log(x); }) <= 1.0);
  CHECK(max_ulp_error(vm::tanh_f32, [](double x) { return std::tanh(x); }) <= 1.5);
  CHECK(max_ulp_error(vm::logistic_f32, [](double x) { return 1 / (1 + std::exp(-x)); }) <= 2.5);
}

TEST_CASE("vector_math: special values", "[runtime][vector_math]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(vm::exp_f32(0.0f) == 1.0f);
  CHECK(vm::exp_f32(inf) == inf);
  CHECK(vm::exp_f32(-inf) == 0.0f);
  CHECK(vm::exp_f32(89.0f) == inf);
  CHECK(vm::exp_f32(-104.0f) == 0.0f);
  CHECK(vm::exp_f32(-100.0f) > 0.0f);  // subnormal, not flushed
  CHECK(std::isnan(vm::exp_f32(nan)));
  CHECK(vm::log_f32(1.0f) == 0.0f);
  CHECK(vm::log_f32(0.0f) == -inf);
  CHECK(vm::log_f32(-0.0f) == -inf);
  CHECK(std::isnan(vm::log_f32(-1.0f)));
  CHECK(vm::log_f32(inf) == inf);
  CHECK(std::isnan(vm::log_f32(nan)));
  CHECK(vm::log_f32(1e-45f) < -103.0f);  // the smallest subnormal
  CHECK(vm::tanh_f32(inf) == 1.0f);
  CHECK(vm::tanh_f32(-inf) == -1.0f);
  CHECK(vm::tanh_f32(0.0f) == 0.0f);
  CHECK(std::signbit(vm::tanh_f32(-0.0f)));
  CHECK(std::isnan(vm::tanh_f32(nan)));
  CHECK(vm::logistic_f32(inf) == 1.0f);
  CHECK(vm::logistic_f32(-inf) == 0.0f);
  CHECK(vm::logistic_f32(0.0f) == 0.5f);
}

TEST_CASE("vector_math: tensor kernels compute the scalar functions' bits",
          "[runtime][vector_math]") {
  // 10007 values (not a multiple of any vector width) spanning the interesting ranges.
  Tensor x = Tensor::empty(DType::F32, {10007});
  float *p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>((i - 5003) * 0.0213);
  p[7] = std::numeric_limits<float>::quiet_NaN();
  p[8] = -0.0f;
  const std::pair<UnaryOp, float (*)(float)> cases[] = {{UnaryOp::Exp, vm::exp_f32},
                                                        {UnaryOp::Log, vm::log_f32},
                                                        {UnaryOp::Tanh, vm::tanh_f32},
                                                        {UnaryOp::Logistic, vm::logistic_f32}};
  for (const auto &[op, fn] : cases) {
    Tensor y = unary(op, x);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool same = vm::float_bits(y.data<float>()[i]) == vm::float_bits(fn(p[i]));
      if (!same)
        INFO("op " << int(op) << " x = " << p[i] << ": " << y.data<float>()[i] << " vs "
                   << fn(p[i]));
      if (!same) CHECK(same);
      mismatches += !same;
    }
    CHECK(mismatches == 0);
  }
}
