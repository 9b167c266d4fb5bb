// tests/unit/runtime/test_elementwise.cpp — unary, binary, select, cast and broadcasting.
//
// Every op is checked against values computed independently with <cmath> or by
// hand, on every dtype it accepts; broadcasting against a naive index loop.
#include "rt_test_util.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

namespace {

double reference_unary(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Exp:
      return std::exp(x);
    case UnaryOp::Log:
      return std::log(x);
    case UnaryOp::Sin:
      return std::sin(x);
    case UnaryOp::Cos:
      return std::cos(x);
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Sqrt:
      return std::sqrt(x);
    case UnaryOp::Rsqrt:
      return 1 / std::sqrt(x);
    case UnaryOp::Abs:
      return std::abs(x);
    case UnaryOp::Sign:
      return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case UnaryOp::Logistic:
      return 1 / (1 + std::exp(-x));
    case UnaryOp::Not:
      return x == 0;
    case UnaryOp::Erf:
      return std::erf(x);
    case UnaryOp::Log1p:
      return std::log1p(x);
  }
  return 0;
}

}  // namespace

TEST_CASE("unary float ops", "[runtime][elementwise]") {
  const std::vector<double> inputs = {0.25, 1.0, 2.0, 3.5};
  const std::vector<double> signed_inputs = {-1.5, 0.0, 0.5, 2.0};
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Exp, UnaryOp::Log, UnaryOp::Sin, UnaryOp::Cos,
                     UnaryOp::Tanh, UnaryOp::Sqrt, UnaryOp::Rsqrt, UnaryOp::Abs, UnaryOp::Sign,
                     UnaryOp::Logistic, UnaryOp::Erf, UnaryOp::Log1p}) {
    const bool positive_only =
        op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt || op == UnaryOp::Log1p;
    const auto &in = positive_only ? inputs : signed_inputs;
    INFO("op " << int(op));
    std::vector<double> expected;
    for (double v : in) expected.push_back(reference_unary(op, v));
    check_close(unary(op, make(DType::F64, {2, 2}, in)), {2, 2}, expected, 1e-15);
    check_close(unary(op, make(DType::F32, {4}, in)), {4}, expected, 1e-6);
    check_close(unary(op, make(DType::BF16, {4}, in)), {4}, expected, 1e-2);
    CHECK(unary(op, make(DType::BF16, {4}, in)).dtype() == DType::BF16);
  }
  CHECK(std::isnan(unary(UnaryOp::Log, Tensor::scalar(DType::F32, -1)).get(0)));
}

TEST_CASE("unary integer and bool ops", "[runtime][elementwise]") {
  Tensor i = make(DType::I32, {4}, {-3, 0, 5, -2147483648.0});
  check_equal(unary(UnaryOp::Neg, i), DType::I32, {4}, {3, 0, -5, -2147483648.0});
  check_equal(unary(UnaryOp::Abs, i), DType::I32, {4}, {3, 0, 5, -2147483648.0});
  check_equal(unary(UnaryOp::Sign, i), DType::I32, {4}, {-1, 0, 1, -1});
  CHECK_THROWS_AS(unary(UnaryOp::Exp, i), RuntimeError);
  check_equal(unary(UnaryOp::Not, make(DType::Bool, {2}, {1, 0})), DType::Bool, {2}, {0, 1});
  CHECK_THROWS_AS(unary(UnaryOp::Not, i), RuntimeError);
  CHECK_THROWS_AS(unary(UnaryOp::Neg, make(DType::Bool, {1}, {1})), RuntimeError);
}

TEST_CASE("binary arithmetic on every numeric dtype", "[runtime][elementwise]") {
  const std::vector<double> a = {6, -4, 2.5, 9};
  const std::vector<double> b = {3, 2, -0.5, 2};
  check_equal(binary(BinaryOp::Add, make(DType::F32, {4}, a), make(DType::F32, {4}, b)), DType::F32,
              {4}, {9, -2, 2, 11});
  check_equal(binary(BinaryOp::Sub, make(DType::F64, {4}, a), make(DType::F64, {4}, b)), DType::F64,
              {4}, {3, -6, 3, 7});
  check_equal(binary(BinaryOp::Mul, make(DType::BF16, {4}, a), make(DType::BF16, {4}, b)),
              DType::BF16, {4}, {18, -8, -1.25, 18});
  check_equal(binary(BinaryOp::Div, make(DType::F64, {4}, a), make(DType::F64, {4}, b)), DType::F64,
              {4}, {2, -2, -5, 4.5});
  check_equal(binary(BinaryOp::Pow, make(DType::F64, {4}, a), make(DType::F64, {4}, b)), DType::F64,
              {4}, {216, 16, std::pow(2.5, -0.5), 81});
  check_equal(binary(BinaryOp::Max, make(DType::F32, {4}, a), make(DType::F32, {4}, b)), DType::F32,
              {4}, {6, 2, 2.5, 9});
  check_equal(binary(BinaryOp::Min, make(DType::F32, {4}, a), make(DType::F32, {4}, b)), DType::F32,
              {4}, {3, -4, -0.5, 2});
  // bf16 rounds the exact f32 result once: 1 + 2^-8 ties to even -> 1.
  check_equal(binary(BinaryOp::Add, make(DType::BF16, {1}, {1}),
                     make(DType::BF16, {1}, {std::ldexp(1.0, -8)})),
              DType::BF16, {1}, {1});
  // NaN propagates through max/min.
  Tensor nan = make(DType::F32, {2}, {std::nan(""), 1});
  Tensor ones = make(DType::F32, {2}, {1, std::nan("")});
  check_equal(binary(BinaryOp::Max, nan, ones), DType::F32, {2}, {NAN, NAN});
  check_equal(binary(BinaryOp::Min, nan, ones), DType::F32, {2}, {NAN, NAN});
}

TEST_CASE("binary integer semantics", "[runtime][elementwise]") {
  Tensor a = make(DType::I32, {5}, {7, -7, 7, 2147483647, 3});
  Tensor b = make(DType::I32, {5}, {2, 2, -2, 1, 0});
  check_equal(binary(BinaryOp::Add, a, b), DType::I32, {5}, {9, -5, 5, -2147483648.0, 3});
  check_equal(binary(BinaryOp::Pow, a, b), DType::I32, {5}, {49, 49, 0, 2147483647, 1});
  check_equal(binary(BinaryOp::Max, a, b), DType::I32, {5}, {7, 2, 7, 2147483647, 3});
  CHECK_THROWS_WITH(binary(BinaryOp::Div, a, b), Catch::Contains("division by zero"));
  Tensor c = make(DType::I32, {3}, {7, -7, -2147483648.0});
  Tensor d = make(DType::I32, {3}, {2, 2, -1});
  check_equal(binary(BinaryOp::Div, c, d), DType::I32, {3}, {3, -3, -2147483648.0});
}

TEST_CASE("floor division and remainder follow NumPy", "[runtime][elementwise]") {
  // Integers: the quotient rounds toward -inf; the remainder has the divisor's sign.
  Tensor a = make(DType::I32, {6}, {7, -7, 7, -7, -2147483648.0, 6});
  Tensor b = make(DType::I32, {6}, {2, 2, -2, -2, -1, 3});
  check_equal(binary(BinaryOp::FloorDiv, a, b), DType::I32, {6}, {3, -4, -4, 3, -2147483648.0, 2});
  check_equal(binary(BinaryOp::Rem, a, b), DType::I32, {6}, {1, 1, -1, -1, 0, 0});
  Tensor zero = make(DType::I32, {1}, {0});
  CHECK_THROWS_WITH(binary(BinaryOp::FloorDiv, a, zero), Catch::Contains("division by zero"));
  CHECK_THROWS_WITH(binary(BinaryOp::Rem, a, zero), Catch::Contains("division by zero"));
  // Floats, worked out by hand: 7.5 // -2 = -4 and 7.5 % -2 = -0.5; exact
  // multiples give a zero with the divisor's sign; by zero: inf and NaN.
  for (DType d : {DType::F32, DType::F64, DType::BF16}) {
    INFO(dtype_name(d));
    Tensor x = make(d, {5}, {7.5, -7.5, 6, -6, 1});
    Tensor y = make(d, {5}, {-2, 2, -3, 3, 0});
    check_equal(binary(BinaryOp::FloorDiv, x, y), d, {5}, {-4, -4, -2, -2, INFINITY});
    Tensor r = binary(BinaryOp::Rem, x, y);
    CHECK(r.get(0) == -0.5);
    CHECK(r.get(1) == 0.5);
    CHECK((r.get(2) == 0 && std::signbit(r.get(2))));
    CHECK((r.get(3) == 0 && !std::signbit(r.get(3))));
    CHECK(std::isnan(r.get(4)));
  }
}

TEST_CASE("comparisons return bool", "[runtime][elementwise]") {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32}) {
    Tensor a = make(dtype, {3}, {1, 2, 3});
    Tensor b = make(dtype, {3}, {2, 2, 2});
    check_equal(binary(BinaryOp::Lt, a, b), DType::Bool, {3}, {1, 0, 0});
    check_equal(binary(BinaryOp::Le, a, b), DType::Bool, {3}, {1, 1, 0});
    check_equal(binary(BinaryOp::Gt, a, b), DType::Bool, {3}, {0, 0, 1});
    check_equal(binary(BinaryOp::Ge, a, b), DType::Bool, {3}, {0, 1, 1});
    check_equal(binary(BinaryOp::Eq, a, b), DType::Bool, {3}, {0, 1, 0});
    check_equal(binary(BinaryOp::Ne, a, b), DType::Bool, {3}, {1, 0, 1});
  }
  Tensor nan = Tensor::scalar(DType::F32, std::nan(""));
  check_equal(binary(BinaryOp::Eq, nan, nan), DType::Bool, {}, {0});
  check_equal(binary(BinaryOp::Ne, nan, nan), DType::Bool, {}, {1});
}

TEST_CASE("logical ops on bool", "[runtime][elementwise]") {
  Tensor a = make(DType::Bool, {4}, {0, 0, 1, 1});
  Tensor b = make(DType::Bool, {4}, {0, 1, 0, 1});
  check_equal(binary(BinaryOp::And, a, b), DType::Bool, {4}, {0, 0, 0, 1});
  check_equal(binary(BinaryOp::Or, a, b), DType::Bool, {4}, {0, 1, 1, 1});
  check_equal(binary(BinaryOp::Eq, a, b), DType::Bool, {4}, {1, 0, 0, 1});
  CHECK_THROWS_AS(binary(BinaryOp::Add, a, b), RuntimeError);
  CHECK_THROWS_AS(binary(BinaryOp::And, make(DType::F32, {1}, {1}), make(DType::F32, {1}, {1})),
                  RuntimeError);
}

TEST_CASE("broadcast_shapes follows NumPy", "[runtime][elementwise]") {
  CHECK(broadcast_shapes({2, 1, 4}, {3, 1}) == Shape{2, 3, 4});
  CHECK(broadcast_shapes({}, {5}) == Shape{5});
  CHECK(broadcast_shapes({0, 1}, {1, 3}) == Shape{0, 3});
  CHECK(broadcast_shapes({1}, {0}) == Shape{0});
  CHECK_THROWS_WITH(broadcast_shapes({2, 3}, {4}),
                    Catch::Contains("cannot broadcast shapes [2, 3] and [4]"));
}

TEST_CASE("binary broadcasting against a naive loop", "[runtime][elementwise]") {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {{{2, 3, 4}, {4}}, {{2, 3, 4}, {3, 1}},      {{3, 1}, {1, 5}},
                                   {{1}, {2, 3}},    {{2, 1, 4}, {1, 3, 1}},   {{}, {3, 2}},
                                   {{2, 3}, {}},     {{4, 1, 1, 2}, {3, 1, 2}}};
  for (const Case &c : cases) {
    Tensor a = random_tensor(DType::F64, c.a, 1);
    Tensor b = random_tensor(DType::F64, c.b, 2);
    Shape out = broadcast_shapes(c.a, c.b);
    Tensor sum = binary(BinaryOp::Sub, a, b);
    Tensor lt = binary(BinaryOp::Lt, a, b);
    REQUIRE(sum.shape() == out);
    REQUIRE(lt.shape() == out);
    // Naive reference: unravel each output index, map to operand indices.
    const auto n = num_elements(out);
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t rem = flat, ia = 0, ib = 0, sa = 1, sb = 1;
      for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
        int64_t idx = rem % out[d];
        rem /= out[d];
        int64_t da = d - (int64_t(out.size()) - int64_t(c.a.size()));
        int64_t db = d - (int64_t(out.size()) - int64_t(c.b.size()));
        if (da >= 0) {
          ia += (c.a[da] == 1 ? 0 : idx) * sa;
          sa *= c.a[da];
        }
        if (db >= 0) {
          ib += (c.b[db] == 1 ? 0 : idx) * sb;
          sb *= c.b[db];
        }
      }
      CHECK(sum.get(flat) == a.get(ia) - b.get(ib));
      CHECK(lt.get(flat) == (a.get(ia) < b.get(ib) ? 1.0 : 0.0));
    }
  }
  CHECK_THROWS_AS(
      binary(BinaryOp::Add, Tensor::zeros(DType::F32, {2}), Tensor::zeros(DType::F32, {3})),
      RuntimeError);
  CHECK_THROWS_WITH(
      binary(BinaryOp::Add, Tensor::zeros(DType::F32, {2}), Tensor::zeros(DType::F64, {2})),
      Catch::Contains("dtypes differ"));
  // Zero-size broadcasting.
  CHECK(binary(BinaryOp::Add, Tensor::zeros(DType::F32, {0, 1}), Tensor::zeros(DType::F32, {3}))
            .shape() == Shape{0, 3});
}

TEST_CASE("select broadcasts all three operands", "[runtime][elementwise]") {
  Tensor cond = make(DType::Bool, {2, 1}, {1, 0});
  Tensor a = make(DType::I32, {3}, {1, 2, 3});
  Tensor b = Tensor::scalar(DType::I32, -1);
  check_equal(select(cond, a, b), DType::I32, {2, 3}, {1, 2, 3, -1, -1, -1});
  Tensor c2 = make(DType::Bool, {3}, {1, 0, 1});
  check_equal(select(c2, make(DType::F32, {3}, {1, 2, 3}), make(DType::F32, {3}, {4, 5, 6})),
              DType::F32, {3}, {1, 5, 3});
  CHECK_THROWS_AS(select(a, a, a), RuntimeError);
  CHECK_THROWS_AS(select(cond, a, Tensor::scalar(DType::F32, 0)), RuntimeError);
}

TEST_CASE("cast between every dtype pair", "[runtime][elementwise]") {
  Tensor f = make(DType::F64, {5}, {-2.75, -0.5, 0, 1.5, 3e9});
  check_equal(cast(f, DType::I32), DType::I32, {5}, {-2, 0, 0, 1, 2147483647});
  check_equal(cast(f, DType::Bool), DType::Bool, {5}, {1, 1, 0, 1, 1});
  check_equal(cast(f, DType::F32), DType::F32, {5}, {-2.75, -0.5, 0, 1.5, 3e9});
  check_equal(cast(make(DType::I32, {3}, {-3, 0, 16777217}), DType::F32), DType::F32, {3},
              {-3, 0, 16777216});
  check_equal(cast(make(DType::Bool, {2}, {1, 0}), DType::F64), DType::F64, {2}, {1, 0});
  check_equal(cast(make(DType::Bool, {2}, {1, 0}), DType::I32), DType::I32, {2}, {1, 0});
  // bf16 rounding: 1 + 2^-8 ties to even (1), 1 + 3*2^-8 ties to even (1 + 2^-6),
  // 257 -> 256 (tie to even), 259 -> 260.
  Tensor r =
      make(DType::F32, {4}, {1 + std::ldexp(1.0, -8), 1 + 3 * std::ldexp(1.0, -8), 257, 259});
  check_equal(cast(r, DType::BF16), DType::BF16, {4}, {1, 1 + std::ldexp(1.0, -6), 256, 260});
  check_equal(cast(cast(r, DType::BF16), DType::F32), DType::F32, {4},
              {1, 1 + std::ldexp(1.0, -6), 256, 260});
  check_equal(cast(make(DType::BF16, {2}, {-1.5, 0}), DType::I32), DType::I32, {2}, {-1, 0});
  check_equal(cast(Tensor::scalar(DType::F32, std::nan("")), DType::I32), DType::I32, {}, {0});
  Tensor same = make(DType::F32, {1}, {2});
  Tensor copy = cast(same, DType::F32);
  copy.set(0, 5);
  CHECK(same.get(0) == 2);  // a same-dtype cast is a copy
}
