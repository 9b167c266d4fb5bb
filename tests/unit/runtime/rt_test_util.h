// tests/unit/runtime/rt_test_util.h — small helpers shared by the runtime unit tests.
//
// Building tensors from literal values and comparing them element by element
// against independently computed expectations.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "spmdrt/kernels.h"
#include "spmdrt/tensor.h"

namespace spmd::rt::testing {

inline Tensor make(DType dtype, Shape shape, const std::vector<double> &values) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

inline std::vector<double> values_of(const Tensor &t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = t.get(i);
  return out;
}

/// Exact comparison of dtype, shape and values (NaN equals NaN).
inline void check_equal(const Tensor &actual, DType dtype, const Shape &shape,
                        const std::vector<double> &expected) {
  REQUIRE(actual.dtype() == dtype);
  REQUIRE(actual.shape() == shape);
  REQUIRE(static_cast<int64_t>(expected.size()) == actual.numel());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(actual.get(i)));
    } else {
      CHECK(actual.get(i) == expected[i]);
    }
  }
}

inline void check_close(const Tensor &actual, const Shape &shape,
                        const std::vector<double> &expected, double tolerance) {
  REQUIRE(actual.shape() == shape);
  REQUIRE(static_cast<int64_t>(expected.size()) == actual.numel());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(actual.get(i) - expected[i]) <= tolerance * (1 + std::abs(expected[i])));
  }
}

}  // namespace spmd::rt::testing
