// tests/unit/interp/interp_test_util.h — compiling small programs and running them.
//
// compile_ok runs the whole pipeline on source text written in a test and
// fails the test with the rendered diagnostics if it does not check. run
// executes one shmap with check_replication on. The expected values in the
// tests are always computed independently, on the global (unsharded) arrays
// with plain loops.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "pipeline/compile.h"
#include "spmdrt/tensor.h"

namespace spmd::interp::testing {

using rt::DType;
using rt::Shape;
using rt::Tensor;

inline std::unique_ptr<Compilation> compile_ok(const std::string &source) {
  auto c = std::make_unique<Compilation>();
  compile_source(*c, "test.spmd", source, CompileOptions{});
  if (!c->ok() || !c->module) {
    INFO(source);
    FAIL("does not compile:\n" << render_diagnostics(c->diags, c->sources));
  }
  return c;
}

/// Compiles `source` and runs shmap `fn` with replication checking.
inline std::vector<Tensor> run(const std::string &source, const std::string &fn,
                               const std::vector<Tensor> &inputs, bool check = true) {
  auto c = compile_ok(source);
  int index = c->module->find_function(fn);
  REQUIRE(index >= 0);
  InterpOptions options;
  options.check_replication = check;
  return run_shmap(*c->module, index, inputs, options);
}

/// A tensor whose element i is f(i).
inline Tensor make_fn(DType dtype, Shape shape, const std::function<double(int64_t)> &f) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, f(i));
  return t;
}

inline Tensor make(DType dtype, Shape shape, const std::vector<double> &values) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

/// Exact comparison against an expected global array (NaN equals NaN).
inline void check_equal(const Tensor &actual, DType dtype, const Shape &shape,
                        const std::function<double(int64_t)> &expected) {
  REQUIRE(actual.dtype() == dtype);
  REQUIRE(actual.shape() == shape);
  for (int64_t i = 0; i < actual.numel(); ++i) {
    INFO("element " << i);
    double e = expected(i);
    if (std::isnan(e))
      CHECK(std::isnan(actual.get(i)));
    else
      CHECK(actual.get(i) == e);
  }
}

inline void check_close(const Tensor &actual, const Shape &shape,
                        const std::function<double(int64_t)> &expected, double tol = 1e-5) {
  REQUIRE(actual.shape() == shape);
  for (int64_t i = 0; i < actual.numel(); ++i) {
    INFO("element " << i);
    double e = expected(i);
    if (std::isnan(e))
      CHECK(std::isnan(actual.get(i)));
    else
      CHECK(std::abs(actual.get(i) - e) <= tol * (1 + std::abs(e)));
  }
}

/// A deterministic, exactly representable test array: small integers / 4.
inline Tensor ramp(DType dtype, Shape shape, int64_t mod = 17, double offset = -8) {
  return make_fn(dtype, std::move(shape), [&](int64_t i) {
    return ((i * 7) % mod + offset) / (rt::is_float(dtype) ? 4 : 1);
  });
}

}  // namespace spmd::interp::testing
