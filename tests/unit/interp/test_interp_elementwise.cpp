// tests/unit/interp/test_interp_elementwise.cpp — elementwise ops and constants on sharded meshes.
//
// Every unary, binary, comparison and logical op, where, cast and the creation
// ops run as a one-line shmap on 1-device, 1-D (4, 8) and 2-D ((2, 4), (4, 2))
// meshes with several in_specs; the global result must equal the op applied
// to the global input with plain loops.
#include "interp_test_util.h"

using namespace spmd::interp::testing;

namespace {

struct Layout {
  const char *mesh;
  const char *spec;      // for f32[8, 8]
  const char *row_spec;  // for f32[8], sharded like dimension 1
};

const std::vector<Layout> kLayouts = {
    {"mesh M = (i: 1)", "P(i)", "P()"},
    {"mesh M = (i: 4)", "P(i)", "P()"},
    {"mesh M = (i: 8)", "P(None, i)", "P(i)"},
    {"mesh M = (a: 2, b: 4)", "P(a, b)", "P(b)"},
    {"mesh M = (a: 4, b: 2)", "P((a, b))", "P()"},
    {"mesh M = (a: 2, b: 4)", "P(b)", "P()"},
    {"mesh M = (a: 4, b: 2)", "P()", "P()"},
    {"mesh M = (a: 4, b: 2)", "P(b, a)", "P(a)"},
};

std::string program(const Layout &l, const std::string &signature, const std::string &body) {
  std::string s = std::string(l.mesh) + "\nshmap f(" + signature + " on M {\n  " + body + "\n}\n";
  size_t p;
  while ((p = s.find("$S")) != std::string::npos) s.replace(p, 2, l.spec);
  while ((p = s.find("$R")) != std::string::npos) s.replace(p, 2, l.row_spec);
  return s;
}

float f(double v) { return static_cast<float>(v); }

}  // namespace

TEST_CASE("unary ops on sharded meshes", "[interp][elementwise]") {
  struct Case {
    const char *op;
    std::function<double(double)> ref;
    bool positive;  // domain needs x > 0
    double tol;
  };
  const std::vector<Case> cases = {
      {"neg", [](double x) { return -f(x); }, false, 0},
      {"exp", [](double x) { return std::exp(f(x)); }, false, 1e-6},
      {"log", [](double x) { return std::log(f(x)); }, true, 1e-6},
      {"sin", [](double x) { return std::sin(f(x)); }, false, 1e-6},
      {"cos", [](double x) { return std::cos(f(x)); }, false, 1e-6},
      {"tanh", [](double x) { return std::tanh(f(x)); }, false, 1e-6},
      {"sqrt", [](double x) { return std::sqrt(f(x)); }, true, 1e-6},
      {"rsqrt", [](double x) { return 1 / std::sqrt(f(x)); }, true, 1e-6},
      {"abs", [](double x) { return std::abs(f(x)); }, false, 0},
      {"sign", [](double x) { return x > 0   ? 1.0
                                     : x < 0 ? -1.0
                                             : 0.0; }, false, 0},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-f(x))); }, false, 1e-6},
      {"erf", [](double x) { return std::erf(f(x)); }, false, 1e-6},
      {"log1p", [](double x) { return std::log1p(f(x)); }, true, 1e-6},
      {"stop_gradient", [](double x) { return f(x); }, false, 0},
  };
  for (const Layout &l : kLayouts)
    for (const Case &c : cases) {
      std::string src =
          program(l, "x: f32[8, 8] @ $S) -> f32[8, 8] @ $S", std::string("return ") + c.op + "(x)");
      INFO(src);
      Tensor x = c.positive ? ramp(DType::F32, {8, 8}, 17, 1) : ramp(DType::F32, {8, 8});
      auto out = run(src, "f", {x});
      REQUIRE(out.size() == 1);
      if (c.tol == 0)
        check_equal(out[0], DType::F32, {8, 8}, [&](int64_t i) { return c.ref(x.get(i)); });
      else
        check_close(
            out[0], {8, 8}, [&](int64_t i) { return c.ref(x.get(i)); }, c.tol);
    }
}

TEST_CASE("binary ops, with a broadcast row and literals", "[interp][elementwise]") {
  struct Case {
    const char *expr;  // in terms of a and $B (b, then the broadcast row r)
    std::function<double(double, double)> ref;
    double tol;
  };
  const std::vector<Case> cases = {
      {"a + $B", [](double a, double b) { return f(a) + f(b); }, 0},
      {"a - $B", [](double a, double b) { return f(a) - f(b); }, 0},
      {"a * $B", [](double a, double b) { return f(a) * f(b); }, 0},
      {"a / $B", [](double a, double b) { return f(f(a) / f(b)); }, 0},
      {"maximum(a, $B)", [](double a, double b) { return std::max(a, b); }, 0},
      {"minimum(a, $B)", [](double a, double b) { return std::min(a, b); }, 0},
      {"pow(abs(a), $B)", [](double a, double b) { return std::pow(std::abs(f(a)), f(b)); }, 1e-5},
      {"abs(a) ** $B", [](double a, double b) { return std::pow(std::abs(f(a)), f(b)); }, 1e-5},
      {"2.0 * a - $B / 4.0", [](double a, double b) { return f(2 * f(a)) - f(f(b) / 4); }, 0},
      // NumPy's // and %: the quotient rounded toward -inf, the remainder with b's sign.
      {"a // $B", [](double a, double b) { return std::floor(double(f(a)) / double(f(b))); }, 0},
      {"a % $B",
       [](double a, double b) {
         double r = std::fmod(double(f(a)), double(f(b)));
         return r != 0 && (r < 0) != (f(b) < 0) ? r + f(b) : r;
       },
       1e-6},
  };
  for (const Layout &l : kLayouts)
    for (const Case &c : cases) {
      std::string e = c.expr, er = c.expr;
      e.replace(e.find("$B"), 2, "b");
      er.replace(er.find("$B"), 2, "r");
      std::string src = program(l,
                                "a: f32[8, 8] @ $S, b: f32[8, 8] @ $S, r: f32[8] @ $R) -> "
                                "(f32[8, 8] @ $S, f32[8, 8] @ $S)",
                                "return " + e + ", " + er);
      INFO(src);
      Tensor a = ramp(DType::F32, {8, 8});
      Tensor b = ramp(DType::F32, {8, 8}, 13, 0.5);  // never zero
      Tensor r = ramp(DType::F32, {8}, 5, 1);
      auto out = run(src, "f", {a, b, r});
      REQUIRE(out.size() == 2);
      auto e1 = [&](int64_t i) { return c.ref(a.get(i), b.get(i)); };
      auto e2 = [&](int64_t i) { return c.ref(a.get(i), r.get(i % 8)); };
      if (c.tol == 0) {
        check_equal(out[0], DType::F32, {8, 8}, e1);
        check_equal(out[1], DType::F32, {8, 8}, e2);
      } else {
        check_close(out[0], {8, 8}, e1, c.tol);
        check_close(out[1], {8, 8}, e2, c.tol);
      }
    }
}

TEST_CASE("comparisons, logical ops, where and casts", "[interp][elementwise]") {
  for (const Layout &l : kLayouts) {
    std::string src = program(
        l,
        "a: f32[8, 8] @ $S, b: f32[8, 8] @ $S) -> (bool[8, 8] @ $S, bool[8, 8] @ $S, "
        "bool[8, 8] @ $S, bool[8, 8] @ $S, bool[8, 8] @ $S, bool[8, 8] @ $S, bool[8, 8] @ $S, "
        "f32[8, 8] @ $S, i32[8, 8] @ $S, f32[8, 8] @ $S, f32[8, 8] @ $S)",
        "lt = a < b\n  le = a <= b\n  gt = a > b\n  ge = a >= b\n  eq = a == b\n  ne = a != b\n"
        "  l = (lt and ne) or not (a > 0.0)\n"
        "  w = where(gt, a, b * 10.0)\n"
        "  k = cast(a * 4.0, i32) + 3\n"
        "  h = cast(cast(a, bf16), f32)\n"
        "  u = cast(ge, f32) + cast(cast(b * 4.0, i32), f32)\n"
        "  return lt, le, gt, ge, eq, ne, l, w, k, h, u");
    INFO(src);
    Tensor a = ramp(DType::F32, {8, 8});
    Tensor b = ramp(DType::F32, {8, 8}, 5, -2);
    auto out = run(src, "f", {a, b});
    REQUIRE(out.size() == 11);
    auto A = [&](int64_t i) { return a.get(i); };
    auto B = [&](int64_t i) { return b.get(i); };
    const Shape s{8, 8};
    check_equal(out[0], DType::Bool, s, [&](int64_t i) { return A(i) < B(i); });
    check_equal(out[1], DType::Bool, s, [&](int64_t i) { return A(i) <= B(i); });
    check_equal(out[2], DType::Bool, s, [&](int64_t i) { return A(i) > B(i); });
    check_equal(out[3], DType::Bool, s, [&](int64_t i) { return A(i) >= B(i); });
    check_equal(out[4], DType::Bool, s, [&](int64_t i) { return A(i) == B(i); });
    check_equal(out[5], DType::Bool, s, [&](int64_t i) { return A(i) != B(i); });
    check_equal(out[6], DType::Bool, s,
                [&](int64_t i) { return (A(i) < B(i) && A(i) != B(i)) || !(A(i) > 0); });
    check_equal(out[7], DType::F32, s, [&](int64_t i) { return A(i) > B(i) ? A(i) : B(i) * 10; });
    check_equal(out[8], DType::I32, s, [&](int64_t i) { return std::trunc(A(i) * 4) + 3; });
    check_equal(out[9], DType::F32, s, [&](int64_t i) { return A(i); });  // quarters fit bf16
    check_equal(out[10], DType::F32, s,
                [&](int64_t i) { return (A(i) >= B(i) ? 1.0 : 0.0) + std::trunc(B(i) * 4); });
  }
}

TEST_CASE("constants, full, zeros, ones and iota", "[interp][elementwise]") {
  for (const Layout &l : kLayouts) {
    std::string src = program(
        l,
        "x: f32[8, 8] @ $S) -> (f32[8, 8] @ $S, i32[3, 4] @ P(), f32[2, 3] @ P(), f32[8, 8] @ P())",
        "c = x + 2.5 + 1.5\n"
        "  g = full((8, 8), 2.5) - zeros((8, 8)) * ones((8, 8)) + full((8, 8), -1)\n"
        "  n = iota((3, 4), dim=1) + iota((3, 4), dim=0) * 10\n"
        "  z = ones((2, 3)) * 3.0\n"
        "  return c, n, z, g");
    INFO(src);
    Tensor x = ramp(DType::F32, {8, 8});
    auto out = run(src, "f", {x});
    check_equal(out[0], DType::F32, {8, 8}, [&](int64_t i) { return x.get(i) + 2.5 + 1.5; });
    check_equal(out[1], DType::I32, {3, 4}, [](int64_t i) { return i % 4 + (i / 4) * 10; });
    check_equal(out[2], DType::F32, {2, 3}, [](int64_t) { return 3.0; });
    check_equal(out[3], DType::F32, {8, 8}, [](int64_t) { return 1.5; });
  }
}
