// test_derivatives.cpp — derivatives named in the language: `grad(loss,
// wrt=params)(...)`, `vjp(f)`, `jvp(f)`, `transpose(f)`, nested.
//
// A derivative a body names is the program the CLI derives: same printed
// text, same bits. Its values are checked independently: against central
// finite differences of the primal, the dot-product identity between jvp and
// vjp, and derivatives worked out by hand. Each program is also checked as a
// user sees it: printed, parsed again and checked with automatic pbroadcast
// insertion off, and run.
#include <algorithm>

#include "../transforms/transform_test_util.h"

namespace spmd::test {
namespace {

const char *kStep = R"(
mesh M = (batch: 4)
shmap loss(params: f32[6, 3] @ P(), inputs: f32[16, 6] @ P(batch),
           targets: f32[16, 3] @ P(batch)) -> f32[] @ P() on M {
  predictions = tanh(inputs @ params)
  return pmean(mean(sum((predictions - targets) ** 2.0, axes=1)), batch)
}
shmap sgd_step(params: f32[6, 3] @ P(), inputs: f32[16, 6] @ P(batch),
               targets: f32[16, 3] @ P(batch)) -> (f32[] @ P(), f32[6, 3] @ P(), f32[6, 3] @ P()) on M {
  l, g = grad(loss, wrt=params)(params, inputs, targets)
  return l, g, params - 0.5 * g
}
)";

std::vector<rt::Tensor> random_args(const std::vector<rt::Shape> &shapes, uint64_t seed) {
  std::vector<rt::Tensor> in;
  for (const auto &shape : shapes)
    in.push_back(rt::random_tensor(DType::F32, shape, seed * 31 + in.size()));
  return in;
}

/// The text of function `name` as print_module prints it (from its
/// signature line, or the attribute line before it, to its closing brace).
std::string function_text(const std::string &module_text, const std::string &name) {
  size_t at = module_text.find("shmap " + name + "(");
  if (at == std::string::npos) return "";
  size_t attr = module_text.rfind("[[no_auto_pbroadcast]]\n", at);
  if (attr != std::string::npos && attr + 23 == at) at = attr;
  return module_text.substr(at, module_text.find("\n}\n", at) + 3 - at);
}

TEST_CASE("derivatives: grad(loss) in a step is the program `spmdc grad` derives",
          "[derivatives]") {
  auto c = compile_ok(kStep);
  DeriveRequest r;
  r.kind = DeriveKind::Grad;
  r.function = "loss";
  r.wrt = {"params"};
  std::string cli = ir::print_module(derive(*c->module, r));
  std::string printed = ir::print_module(*c->module);
  INFO(cli);
  INFO(printed);
  std::string derived = function_text(printed, "loss_grad");
  REQUIRE(!derived.empty());
  CHECK(derived == function_text(cli, "loss_grad"));

  // Same bits as the CLI's program, run on its own; the update uses them.
  auto gradient = compile_ok(cli, /*auto_pb=*/false);
  auto in = random_args({{6, 3}, {16, 6}, {16, 3}}, 5);
  auto want = run(*gradient, in);
  auto got = run_named(*c, "sgd_step", in);
  require_same_bits(got[0], want[0]);
  require_same_bits(got[1], want[1]);
  for (int64_t e = 0; e < got[2].numel(); ++e)
    CHECK(got[2].get(e) ==
          static_cast<float>(in[0].get(e) - static_cast<float>(0.5f * want[1].get(e))));

  // The printed program checks strictly and computes the same bits.
  auto again = compile_ok(printed, /*auto_pb=*/false);
  auto rerun = run_named(*again, "sgd_step", in);
  for (size_t k = 0; k < got.size(); ++k) require_same_bits(rerun[k], got[k]);
  // Printing is a fixed point (checked as written: automatic insertion on).
  CHECK(ir::print_module(*compile_ok(printed)->module) == printed);
}

TEST_CASE("derivatives: the gradient of a sharded loss equals finite differences",
          "[derivatives]") {
  auto c = compile_ok(kStep);
  auto in = random_args({{6, 3}, {16, 6}, {16, 3}}, 11);
  auto got = run_named(*c, "sgd_step", in);
  rt::Tensor v = rt::random_tensor(DType::F32, {6, 3}, 99);
  const double h = 1e-2;
  auto loss_at = [&](double t) {
    auto x = in;
    x[0] = axpy(t, v, in[0]);
    return static_cast<double>(run_named(*c, "loss", x)[0].get(0));
  };
  double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
  CHECK(dot(got[1], v) == Approx(fd).epsilon(2e-3).margin(1e-4));
  CHECK(got[0].get(0) == run_named(*c, "loss", in)[0].get(0));
}

const char *kLoop = R"(
mesh M = (i: 4)
shmap rnn(w: f64[8] @ P(i), s0: f64[8] @ P(i)) -> f64[] @ P() on M {
  s = s0
  for k in range(500) {
    s = tanh(w * ppermute(s, i, shift=1) + 0.5 * s + s0)
  }
  return psum(sum(s * s), i)
}
shmap step(w: f64[8] @ P(i), s0: f64[8] @ P(i)) -> (f64[] @ P(), f64[8] @ P(i)) on M {
  l, g = grad(rnn, wrt=w)(w, s0)
  return l, g
}
)";

TEST_CASE("derivatives: grad of a shmap with a loop keeps the loop", "[derivatives][loops]") {
  auto c = compile_ok(kLoop);
  DeriveRequest r;
  r.kind = DeriveKind::Grad;
  r.function = "rnn";
  r.wrt = {"w"};
  std::string cli = ir::print_module(derive(*c->module, r));
  std::string printed = ir::print_module(*c->module);
  INFO(printed);
  std::string derived = function_text(printed, "rnn_grad");
  REQUIRE(!derived.empty());
  CHECK(derived == function_text(cli, "rnn_grad"));
  // A forward loop and a backward loop, not 500 unrolled iterations.
  size_t loops = 0;
  for (size_t at = derived.find("for "); at != std::string::npos; at = derived.find("for ", at + 1))
    ++loops;
  CHECK(loops == 2);
  CHECK(std::count(derived.begin(), derived.end(), '\n') < 80);

  auto in = std::vector<rt::Tensor>{rt::random_tensor(DType::F64, {8}, 4),
                                    rt::random_tensor(DType::F64, {8}, 5)};
  auto got = run_named(*c, "step", in);
  auto want = run(*compile_ok(cli, /*auto_pb=*/false), in);
  require_same_bits(got[0], want[0]);
  require_same_bits(got[1], want[1]);
  // Against central finite differences of the loss along a random direction.
  rt::Tensor v = rt::random_tensor(DType::F64, {8}, 6);
  const double h = 1e-5;
  auto loss_at = [&](double t) {
    return run_named(*c, "rnn", {axpy(t, v, in[0]), in[1]})[0].get(0);
  };
  const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
  CHECK(std::abs(fd) > 1e-3);  // the loss does depend on w
  CHECK(dot(got[1], v) == Approx(fd).epsilon(1e-6));
}

const char *kDefs = R"(
mesh M = (i: 2)
def f(x: f32[n], w: f32[n]) -> f32[n] {
  return tanh(x * w) * w
}
def cube(x: f32[n]) -> f32[] {
  return sum(x * x * x)
}
def scale(x: f32[n, k]) -> f32[n, k] {
  return 3.0 * x
}
shmap primal(x: f32[8] @ P(i), w: f32[8] @ P(i)) -> f32[8] @ P(i) on M {
  return f(x, w)
}
shmap derivs(x: f32[8] @ P(i), w: f32[8] @ P(i), v: f32[8] @ P(i), u: f32[8] @ P(i))
    -> (f32[8] @ P(i), f32[8] @ P(i), f32[8] @ P(i), f32[8] @ P(i), f32[8] @ P(i),
        f32[4, 2] @ P(i)) on M {
  y, dy = jvp(f, wrt=w)(x, w, v)
  y2, x_bar, w_bar = vjp(f)(x, w, u)
  c, g = grad(cube)(x)
  c2, g2, dc, hv = jvp(grad(cube), wrt=x)(x, v)
  t = transpose(scale)(reshape(u, (2, 2)))
  return dy, w_bar, x_bar, g, hv, t
}
)";

TEST_CASE("derivatives: jvp, vjp, grad, transpose and nesting of defs", "[derivatives]") {
  auto c = compile_ok(kDefs);
  auto again = compile_ok(ir::print_module(*c->module), /*auto_pb=*/false);
  for (const Compilation *p : {c.get(), again.get()}) {
    auto in = random_args({{8}, {8}, {8}, {8}}, 3);
    auto out = run_named(*p, "derivs", in);
    const rt::Tensor &x = in[0], &w = in[1], &v = in[2], &u = in[3];
    // jvp against central differences of the primal along v (in w).
    const double h = 1e-2;
    auto plus = run_named(*p, "primal", {x, axpy(h, v, w)})[0];
    auto minus = run_named(*p, "primal", {x, axpy(-h, v, w)})[0];
    for (int64_t e = 0; e < 8; ++e)
      CHECK(out[0].get(e) ==
            Approx((plus.get(e) - minus.get(e)) / (2 * h)).epsilon(1e-2).margin(1e-3));
    // The dot-product identity: <jvp(v), u> = <v, vjp(u)_w>.
    CHECK(dot(out[0], u) == Approx(dot(v, out[1])).epsilon(1e-5));
    for (int64_t e = 0; e < 8; ++e) {
      double xe = x.get(e), we = w.get(e), th = std::tanh(xe * we);
      // By hand: d/dx [tanh(x w) w] = (1 - tanh²) w², times the cotangent u.
      CHECK(out[2].get(e) == Approx((1 - th * th) * we * we * u.get(e)).epsilon(1e-4).margin(1e-6));
      CHECK(out[3].get(e) == Approx(3 * xe * xe).epsilon(1e-5));        // grad(cube)
      CHECK(out[4].get(e) == Approx(6 * xe * v.get(e)).epsilon(1e-5));  // its jvp: H v
      CHECK(out[5].get(e) == Approx(3 * u.get(e)).epsilon(1e-6));       // transpose(3x)
    }
  }
}

TEST_CASE("derivatives: a shmap's transpose twice is the shmap", "[derivatives]") {
  auto c = compile_ok(R"(
mesh M = (i: 4)
shmap g(x: f32[8, 4] @ P(i)) -> f32[4] @ P() on M {
  return psum(sum(x, axes=0), i)
}
shmap twice(x: f32[8, 4] @ P(i), c: f32[4] @ P()) -> (f32[4] @ P(), f32[8, 4] @ P(i)) on M {
  return transpose(transpose(g))(x), transpose(g)(c)
}
)");
  auto in = random_args({{8, 4}, {4}}, 7);
  auto out = run_named(*c, "twice", in);
  require_same_bits(out[0], run_named(*c, "g", {in[0]})[0]);
  // The transpose broadcasts the cotangent back to every row.
  for (int64_t e = 0; e < out[1].numel(); ++e) CHECK(out[1].get(e) == in[1].get(e % 4));
}

}  // namespace
}  // namespace spmd::test
