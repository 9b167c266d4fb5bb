// tests/unit/runtime/test_checked.cpp — the overflow-checked size helpers (spmdrt/checked.h)
// and the runtime's use of them: tensors, slicing and .npy headers with huge shapes.
#include <catch2/catch.hpp>

#include "rt_test_util.h"
#include "spmdrt/checked.h"
#include "spmdrt/kernels.h"

using namespace spmd::rt;

TEST_CASE("checked arithmetic detects int64 overflow", "[runtime][checked]") {
  CHECK(checked_mul(int64_t{1} << 31, int64_t{1} << 31) == int64_t{1} << 62);
  CHECK_FALSE(checked_mul(int64_t{1} << 32, int64_t{1} << 31));
  CHECK_FALSE(checked_mul(3037000500, 3037000500));  // just past INT64_MAX
  CHECK(checked_mul(3037000499, 3037000499) == int64_t{9223372030926249001});
  CHECK_FALSE(checked_add(INT64_MAX, 1));
  CHECK(checked_add(INT64_MAX - 1, 1) == INT64_MAX);
  CHECK_FALSE(checked_sub(INT64_MIN + 1, 2));
  CHECK(saturating_mul(int64_t{1} << 40, int64_t{1} << 40) == INT64_MAX);
  CHECK(saturating_add(INT64_MAX, 5) == INT64_MAX);
}

TEST_CASE("range_length counts a range without overflow", "[runtime][checked]") {
  CHECK(range_length(0, 10, 3) == 4);  // 0 3 6 9
  CHECK(range_length(0, 9, 3) == 3);
  CHECK(range_length(5, 5, 1) == 0);
  CHECK(range_length(7, 2, 1) == 0);
  CHECK(range_length(0, INT64_MAX, INT64_MAX) == 1);
  CHECK(range_length(-INT64_MAX, INT64_MAX, 1) == INT64_MAX);  // 2^64 - 2, saturated
  CHECK(range_length(INT64_MIN, INT64_MAX, INT64_MAX) == 3);   // MIN, -1, MAX - 1
}

TEST_CASE("array sizes are bounded by 2^60 bytes, strides included", "[runtime][checked]") {
  const std::vector<int64_t> ok = {int64_t{1} << 30, int64_t{1} << 28};  // 2^58 elements
  CHECK(checked_num_elements(ok) == int64_t{1} << 58);
  CHECK(checked_array_bytes(ok, 4) == int64_t{1} << 60);
  CHECK_FALSE(checked_array_bytes(ok, 8));
  const std::vector<int64_t> wraps = {int64_t{1} << 32, int64_t{1} << 32, 16};  // 2^68: wraps to 0
  CHECK_FALSE(checked_num_elements(wraps));
  const std::vector<int64_t> negative = {4, -1};
  CHECK_FALSE(checked_num_elements(negative));
  // A zero dimension makes the array empty, but the other dimensions still
  // bound the strides: [0, 2^40, 2^40] has a stride of 2^80.
  const std::vector<int64_t> empty_ok = {0, 1024, 1024};
  CHECK(checked_num_elements(empty_ok) == 0);
  const std::vector<int64_t> empty_huge = {0, int64_t{1} << 40, int64_t{1} << 40};
  CHECK_FALSE(checked_num_elements(empty_huge));
  CHECK(shape_fits({}));
}

TEST_CASE("the runtime refuses shapes that overflow", "[runtime][checked]") {
  CHECK_THROWS_WITH(Tensor::empty(DType::F32, {int64_t{1} << 32, int64_t{1} << 32, 16}),
                    Catch::Contains("too large"));
  CHECK_THROWS_WITH(num_elements({3037000500, 3037000500}), Catch::Contains("too large"));
  CHECK_THROWS_WITH(Tensor::zeros(DType::F64, {int64_t{1} << 58}), Catch::Contains("too large"));
  Tensor x = Tensor::zeros(DType::F32, {4});
  CHECK_THROWS_WITH(x.reshaped({int64_t{1} << 32, int64_t{1} << 32, int64_t{1} << 32, 0}),
                    Catch::Contains("too large"));
}

TEST_CASE("slice with a step near 2^63 takes one element", "[runtime][checked]") {
  Tensor x = Tensor::zeros(DType::F32, {4});
  for (int i = 0; i < 4; ++i) x.set(i, 10 + i);
  const int64_t start[] = {1}, limit[] = {4}, stride[] = {INT64_MAX};
  Tensor y = slice(x, start, limit, stride);
  REQUIRE(y.shape() == Shape{1});
  CHECK(y.get(0) == 11);
}
