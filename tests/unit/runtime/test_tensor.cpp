// tests/unit/runtime/test_tensor.cpp — Tensor storage, bf16 conversion, random and printing.
//
// Checks construction helpers, get/set conversions, bf16 round-to-nearest-even,
// SplitMix64 reproducibility and ranges, and NumPy-style formatting.
#include <bit>

#include "rt_test_util.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

TEST_CASE("tensor basics", "[runtime][tensor]") {
  Tensor t = Tensor::zeros(DType::F32, {2, 3});
  CHECK(t.defined());
  CHECK(t.numel() == 6);
  CHECK(t.nbytes() == 24);
  CHECK(reinterpret_cast<uintptr_t>(t.raw()) % 64 == 0);
  CHECK(t.get(5) == 0.0);
  Tensor shared = t;
  shared.set(1, 2.5);
  CHECK(t.get(1) == 2.5);  // copies share the buffer
  Tensor deep = t.clone();
  deep.set(1, 1.0);
  CHECK(t.get(1) == 2.5);
  CHECK(t.reshaped({3, 2}).shape() == Shape{3, 2});
  CHECK_THROWS_AS(t.reshaped({4, 2}), RuntimeError);
  CHECK(Tensor::full(DType::I32, {3}, 7).get(2) == 7);
  CHECK(Tensor::scalar(DType::F64, 1.5).rank() == 0);
  CHECK(Tensor::scalar(DType::F64, 1.5).numel() == 1);
  CHECK(Tensor::empty(DType::F32, {0, 4}).defined());
  CHECK_THROWS_AS(Tensor::empty(DType::F32, {-1}), RuntimeError);
  CHECK(t.bitwise_equal(t.clone()));
  CHECK_FALSE(t.bitwise_equal(deep));
  CHECK_FALSE(t.bitwise_equal(t.reshaped({6})));
  CHECK(std::string(dtype_name(DType::BF16)) == "bf16");
  CHECK(dtype_size(DType::Bool) == 1);
  CHECK(shape_str({8, 4}) == "[8, 4]");
  CHECK(shape_str({}) == "[]");
}

TEST_CASE("set converts to the dtype", "[runtime][tensor]") {
  Tensor i = Tensor::empty(DType::I32, {4});
  i.set(0, 2.9);
  i.set(1, -2.9);
  i.set(2, 1e20);
  i.set(3, std::nan(""));
  CHECK(values_of(i) == std::vector<double>{2, -2, 2147483647, 0});
  Tensor b = Tensor::empty(DType::Bool, {2});
  b.set(0, 0.5);
  b.set(1, 0.0);
  CHECK(values_of(b) == std::vector<double>{1, 0});
}

TEST_CASE("bf16 conversion rounds to nearest even", "[runtime][tensor]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even -> 1.
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> 1+2^-6.
  CHECK(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  // Slightly above halfway rounds up.
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  CHECK(bf16_to_f32(f32_to_bf16(-std::numeric_limits<float>::infinity())) ==
        -std::numeric_limits<float>::infinity());
  // Largest finite f32 rounds up to infinity in bf16.
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::max()))));
}

TEST_CASE("random_tensor is deterministic and in range", "[runtime][tensor]") {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::Bool}) {
    Tensor a = random_tensor(dtype, {1000}, 42);
    Tensor b = random_tensor(dtype, {1000}, 42);
    Tensor c = random_tensor(dtype, {1000}, 43);
    CHECK(a.bitwise_equal(b));
    CHECK_FALSE(a.bitwise_equal(c));
    double lo = 1e9, hi = -1e9;
    for (double v : values_of(a)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (is_float(dtype)) {
      CHECK(lo >= -1.0);
      CHECK(hi < 1.0);
      CHECK(lo < -0.9);
      CHECK(hi > 0.9);
    } else if (dtype == DType::I32) {
      CHECK(lo == -8);
      CHECK(hi == 8);
    } else {
      CHECK(lo == 0);
      CHECK(hi == 1);
    }
  }
  // The first SplitMix64 output for seed 0 is 0xe220a8397b1dcdaf (reference value).
  Tensor first = random_tensor(DType::F64, {1}, 0);
  CHECK(first.get(0) == 2.0 * std::ldexp(double(0xe220a8397b1dcdafULL >> 11), -53) - 1.0);
}

TEST_CASE("format_tensor prints like NumPy", "[runtime][tensor]") {
  CHECK(format_tensor(make(DType::F32, {2, 2}, {1, 2.5, -3, 4})) == "[[ 1.   2.5]\n [-3.   4. ]]");
  CHECK(format_tensor(make(DType::I32, {3}, {1, -20, 3})) == "[  1 -20   3]");
  CHECK(format_tensor(make(DType::Bool, {2}, {1, 0})) == "[ True False]");
  CHECK(format_tensor(Tensor::scalar(DType::F64, 0.125)) == "0.125");
  CHECK(format_tensor(make(DType::F32, {1, 2, 2}, {1, 2, 3, 4})) == "[[[1. 2.]\n  [3. 4.]]]");
  CHECK(format_tensor(make(DType::F32, {2, 1, 1}, {1, 2})) == "[[[1.]]\n\n [[2.]]]");
  Tensor big = iota(DType::I32, {100}, 0);
  CHECK(format_tensor(big, 10) == "[ 0  1  2 ... 97 98 99]");
  CHECK(format_tensor(Tensor::scalar(DType::F32, 1.0f / 3)) == "0.333333");
}
