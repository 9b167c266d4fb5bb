// test_grad.cpp — JVP, VJP and grad against central finite differences in f64,
// the communication of gradient programs, and zero cotangents.
#include <fstream>
#include <sstream>

#include "ir/loops.h"
#include "random_loops.h"
#include "transform_test_util.h"

namespace spmd::test {
namespace {

std::string sample_f64(const std::string &rel) {
  std::ifstream in(std::string(SPMDC_SOURCE_DIR) + "/samples/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  for (size_t p = 0; (p = text.find("f32", p)) != std::string::npos; p += 3)
    text.replace(p, 3, "f64");
  return text;
}

/// Sum of every element of every output: a scalar function of the inputs.
double total(const std::vector<rt::Tensor> &outs) {
  double s = 0;
  for (const auto &t : outs)
    for (int64_t i = 0; i < t.numel(); ++i) s += t.get(i);
  return s;
}

/// Checks grad (for scalar-output programs) or vjp with all-ones cotangents
/// against central differences along random directions, and the JVP against
/// the same differences.
void check_derivatives(const std::string &text, std::vector<std::string> wrt = {},
                       uint64_t seed = 3, bool remat = false) {
  INFO(text);
  auto c = compile_ok(text);
  const ir::Function &f = shmap_of(*c);
  bool scalar = f.results.size() == 1 && f.type(f.returns[0]).rank() == 0;
  auto x = random_inputs(*c, seed);
  std::vector<bool> sel(f.params.size(), wrt.empty());
  for (size_t k = 0; k < f.params.size(); ++k)
    for (const auto &n : wrt) sel[k] = sel[k] || f.values[f.params[k].value].name == n;
  // Direction.
  std::vector<rt::Tensor> v;
  for (size_t k = 0; k < f.params.size(); ++k)
    v.push_back(rt::random_tensor(x[k].dtype(), x[k].shape(), seed * 101 + k));
  const double h = 1e-5;
  std::vector<rt::Tensor> xp = x, xm = x;
  for (size_t k = 0; k < x.size(); ++k)
    if (sel[k]) {
      xp[k] = axpy(h, v[k], x[k]);
      xm[k] = axpy(-h, v[k], x[k]);
    }
  double fd = (total(run(*c, xp)) - total(run(*c, xm))) / (2 * h);

  // Reverse mode: <grad, v>.
  double rev = 0;
  std::vector<rt::Tensor> outs;
  if (scalar) {
    auto g = derive_ok(*c, DeriveKind::Grad, "", wrt, {}, remat);
    outs = run(*g, x);
  } else {
    auto g = derive_ok(*c, DeriveKind::Vjp, "", wrt, {}, remat);
    std::vector<rt::Tensor> in = x;
    auto fx = run(*c, x);
    for (auto &o : fx) in.push_back(rt::Tensor::full(o.dtype(), o.shape(), 1.0));
    outs = run(*g, in);
  }
  size_t j = f.results.size();
  for (size_t k = 0; k < f.params.size(); ++k)
    if (sel[k]) rev += dot(outs[j++], v[k]);
  // Forward mode: sum of the output tangents.
  auto jv = derive_ok(*c, DeriveKind::Jvp, "", wrt);
  std::vector<rt::Tensor> jin = x;
  for (size_t k = 0; k < f.params.size(); ++k)
    if (sel[k]) jin.push_back(v[k]);
  auto jout = run(*jv, jin);
  double fwd = 0;
  for (size_t k = f.results.size(); k < jout.size(); ++k)
    for (int64_t e = 0; e < jout[k].numel(); ++e) fwd += jout[k].get(e);
  INFO("finite differences " << fd << ", reverse " << rev << ", forward " << fwd);
  double tol = 1e-6 * std::max(1.0, std::abs(fd));
  CHECK(std::abs(rev - fd) <= tol);
  CHECK(std::abs(fwd - fd) <= tol);
}

std::string unary_program(const std::string &expr) {
  return "mesh M = (i: 4)\nshmap f(x: f64[8, 3] @ P(i), w: f64[8, 3] @ P(i)) -> f64[] @ P() on M "
         "{\n"
         "  y = " +
         expr + "\n  return psum(sum(y * w), i)\n}\n";
}

TEST_CASE("derivatives of each differentiable op match finite differences", "[grad]") {
  const char *exprs[] = {
      "-x",
      "exp(x)",
      "log(x * x + 1.0)",
      "sin(x)",
      "cos(x)",
      "tanh(x)",
      "sqrt(x * x + 1.0)",
      "rsqrt(x * x + 1.0)",
      "abs(x)",
      "sigmoid(x)",
      "pow(x * x + 1.0, w)",
      "maximum(x, w)",
      "minimum(x, w)",
      "x / (w * w + 1.0)",
      "x * w",
      "where(x > 0.0, x, 2.0 * x)",
      "x ** 3.0",
      "x - w",
      "erf(x)",
      "log1p(x * x)",
      "expm1(x)",
      "cbrt(x * x + 0.5)",
      "x % (w * w + 0.5) + w % 1.3",
      "(x // 0.7) * x",
      "clip(x, -0.3, max=w)",
  };
  for (const char *e : exprs) {
    INFO(e);
    check_derivatives(unary_program(e));
  }
}

TEST_CASE("derivatives of reductions, contractions and layout ops", "[grad]") {
  const std::string m = "mesh M = (i: 4)\n";
  check_derivatives(m +
                    "shmap f(x: f64[8, 3] @ P(i)) -> f64[] @ P() on M {\n"
                    "  a = max(x, axes=1) + min(x, axes=1) * 0.5\n"
                    "  return psum(sum(a * a) + mean(x), i)\n}\n");
  check_derivatives(m +
                    "shmap f(x: f64[8, 3] @ P(i), w: f64[3, 4] @ P()) -> f64[] @ P() on M {\n"
                    "  h = tanh(x @ w)\n"
                    "  g = einsum(\"bj,bj->b\", h, h)\n"
                    "  return pmean(sum(g), i)\n}\n");
  check_derivatives(m +
                    "shmap f(x: f64[8, 6] @ P(i)) -> f64[] @ P() on M {\n"
                    "  a = transpose(reshape(x, (3, 4)), (1, 0))\n"
                    "  b = concat((a[0:2, :], broadcast_to(a[3:4, :], (2, 3))), axis=0)\n"
                    "  return psum(sum(b * b * b), i)\n}\n");
}

TEST_CASE("derivatives of take and scatter_add: an embedding lookup", "[grad]") {
  const std::string m = "mesh M = (i: 4)\n";
  // Each device looks up its own ids (repeats included) in a replicated table:
  // the table's gradient sums the rows' cotangents over the ids and devices.
  check_derivatives(
      m +
      "shmap f(t: f64[8, 3] @ P(), x: f64[8, 5] @ P(i)) -> f64[] @ P() on M {\n"
      "  ids = (iota((10,), dtype=i32) * 3 + axis_index(i)) % 8\n"
      "  e = tanh(take(t, ids))\n"
      "  s = scatter_add(t * t, e, ids)\n"
      "  cols = reshape((iota((4,), dtype=i32) * 3) % 5, (2, 2))\n"
      "  return psum(sum(e * e) + sum(s * s) + sum(take(x, cols, axis=1) ** 3.0), i)\n}\n");
}

TEST_CASE("derivatives of the NumPy-style ops", "[grad]") {
  const std::string m = "mesh M = (i: 4)\n";
  check_derivatives(
      m +
      "shmap f(x: f64[8, 6] @ P(i)) -> f64[] @ P() on M {\n"
      "  a = var(x, axes=1) + var(x, keepdims=true, ddof=1)[:, 0]\n"
      "  b = flip(x)[::-1, ::-2] * x[:, None, 1:6:2][:, 0] * x.T[1:6:2, :].T\n"
      "  c = stack((x, x * x), axis=-1)\n"
      "  return psum(sum(a * a) + sum(b) + sum(c * expand_dims(squeeze(x[None]), 2)), i)\n}\n");
  check_derivatives(m +
                    "shmap f(a: f64[8, 1, 3, 4] @ P(i), b: f64[5, 4, 2] @ P(), v: f64[4] @ P()) "
                    "-> f64[] @ P() on M {\n"
                    "  return psum(sum(tanh(a @ b)) + sum(a @ v) + sum(v @ b), i)\n}\n");
}

TEST_CASE("stop_gradient: its operand is a constant to the derivative", "[grad]") {
  // f(x) = sum(x * stop_gradient(x)): the gradient is x, not 2x.
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f64[8] @ P(i)) -> f64[] @ P() on M {\n"
      "  return psum(sum(x * stop_gradient(x)), i)\n}\n");
  auto g = derive_ok(*c, DeriveKind::Grad, "");
  auto x = random_inputs(*c, 4);
  auto out = run(*g, x);
  REQUIRE(out.size() == 2);
  for (int64_t e = 0; e < 8; ++e) CHECK(out[1].get(e) == x[0].get(e));
}

TEST_CASE("argmax, argmin and // have no derivative: they pass none on", "[grad]") {
  // f(x) = sum(x * cast(argmax(x), f64)): d/dx = cast(argmax(x), f64) broadcast.
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f64[8, 3] @ P(i)) -> f64[] @ P() on M {\n"
      "  k = cast(argmax(x, axes=1) + argmin(x, axes=1), f64)\n"
      "  return psum(sum(x * k[:, None] + x // 2.0), i)\n}\n");
  auto g = derive_ok(*c, DeriveKind::Grad, "");
  auto x = random_inputs(*c, 5);
  auto out = run(*g, x);
  REQUIRE(out.size() == 2);
  for (int64_t r = 0; r < 8; ++r) {
    int64_t hi = 0, lo = 0;
    for (int64_t j = 1; j < 3; ++j) {
      if (x[0].get(r * 3 + j) > x[0].get(r * 3 + hi)) hi = j;
      if (x[0].get(r * 3 + j) < x[0].get(r * 3 + lo)) lo = j;
    }
    for (int64_t j = 0; j < 3; ++j) CHECK(out[1].get(r * 3 + j) == double(hi + lo));
  }
}

TEST_CASE("derivatives through collectives", "[grad]") {
  check_derivatives(
      "mesh M = (data: 2, model: 4)\n"
      "shmap f(x: f64[8, 8] @ P(data, model), w: f64[8] @ P()) -> f64[] @ P() on M {\n"
      "  g = all_gather(x, model, axis=1)\n"
      "  s = psum_scatter(g * g, data, scatter_dimension=1)\n"
      "  t = all_to_all(s, model, split_axis=0, concat_axis=1)\n"
      "  p = ppermute(t, model, shift=1)\n"
      "  q = all_gather_invariant(sum(p * p, axes=0), (data, model))\n"
      "  return psum(sum(q * pscatter(w, data)[0:1]), data) + psum(sum(x), (data, model))\n}\n");
}

TEST_CASE("derivatives of the samples", "[grad]") {
  check_derivatives(sample_f64("seed/example1.spmd"));
  check_derivatives(sample_f64("seed/example2.spmd"));
  check_derivatives(sample_f64("seed/example4.spmd"));
  check_derivatives(sample_f64("seed/example5.spmd"));
  check_derivatives(sample_f64("dp_loss.spmd"), {"params"});
  check_derivatives(sample_f64("dp_loss.spmd"));
}

TEST_CASE("grad of dp_loss: one psum per parameter, nothing for the loss cotangent", "[grad]") {
  std::ifstream in(std::string(SPMDC_SOURCE_DIR) + "/samples/dp_loss.spmd");
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = compile_ok(ss.str());
  auto g = derive_ok(*c, DeriveKind::Grad, "loss", {"params"});
  // The forward pass has the loss's psum; the backward pass adds exactly one:
  // the parameter gradient's.
  CHECK(count_op(*c, "psum") == 1);
  CHECK(count_values(*g, "psum") == 2);
  CHECK(count_op(*g, "psum") == 1);  // both in one combined collective
  auto stats = collective_stats(*g->module, shmap_of(*g));
  CHECK(stats.communicating_count() == 1);
  // The parameter gradient's psum moves the 16x4 gradient: 2(n-1)/n * 256 bytes.
  CHECK(stats.by_op["psum"].size_bytes == 4 + 16 * 4 * 4);
}

TEST_CASE("a parameter used twice gets one psum of a sum, not a sum of psums", "[grad]") {
  // `w` meets varying data in two calls, so the forward pass lifts it twice;
  // after CSE the backward pass sums both uses before a single psum.
  auto c = compile_ok(
      "mesh M = (b: 4)\n"
      "def layer(w: f32[d, d], x: f32[n, d]) -> f32[n, d] { return tanh(x @ w) }\n"
      "shmap f(w: f32[4, 4] @ P(), x: f32[8, 4] @ P(b)) -> f32[] @ P() on M {\n"
      "  return pmean(sum(layer(w, layer(w, x))), b)\n}\n");
  auto g = derive_ok(*c, DeriveKind::Grad, "", {"w"});
  CHECK(count_values(*g, "psum") == 2);  // the forward pmean's, and one for w's gradient
  CHECK(count_op(*g, "pbroadcast") == 1);
  check_derivatives(
      "mesh M = (b: 4)\n"
      "def layer(w: f64[d, d], x: f64[n, d]) -> f64[n, d] { return tanh(x @ w) }\n"
      "shmap f(w: f64[4, 4] @ P(), x: f64[8, 4] @ P(b)) -> f64[] @ P() on M {\n"
      "  return pmean(sum(layer(w, layer(w, x))), b)\n}\n",
      {"w"});
}

TEST_CASE("vjp through one of two outputs: the other cotangent is zero", "[grad]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f64[8] @ P(i)) -> (f64[8] @ P(i), f64[2] @ P()) on M {\n"
      "  return x * 3.0, psum(x, i)\n}\n");
  auto g = derive_ok(*c, DeriveKind::Vjp, "", {}, {"0"});
  const ir::Function &f = shmap_of(*g);
  REQUIRE(f.params.size() == 2);  // x and the first output's cotangent
  CHECK(count_op(*g, "pbroadcast") == 0);
  auto x = random_inputs(*c, 9);
  auto ybar = rt::random_tensor(rt::DType::F64, {8}, 77);
  auto out = run(*g, {x[0], ybar});
  REQUIRE(out.size() == 3);
  for (int64_t e = 0; e < 8; ++e) CHECK(out[2].get(e) == Approx(3.0 * ybar.get(e)));
}

TEST_CASE("pmax is rejected by the derivative transforms with a located error", "[grad]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f32[8] @ P(i)) -> f32[] @ P() on M {\n"
      "  return sum(pmax(x, i))\n}\n");
  DeriveRequest r;
  r.kind = DeriveKind::Grad;
  try {
    derive(*c->module, r);
    FAIL("expected a TransformError");
  } catch (const TransformError &e) {
    CHECK(e.code == "not-differentiable");
    CHECK(c->sources.location(e.span).line == 3);
  }
}

// ---------------------------------------------------------------- loops

const char *kLoopTanh =
    "mesh M = (i: 2)\n"
    "shmap f(xs: f64[6, 8] @ P(None, i), a: f64[8] @ P(i), w: f64[8] @ P(i)) -> f64[] @ P() on M "
    "{\n"
    "  s = a\n"
    "  for t in range(6) {\n"
    "    s = tanh(s * w + xs[t])\n"
    "    s = s + 0.1 * ppermute(s, i, shift=1)\n"
    "  }\n"
    "  return psum(sum(s * s), i)\n"
    "}\n";

/// The bytes carried by the first loop of the only shmap's body (a gradient's
/// forward loop): its carried values and the stacks kept for the backward pass.
int64_t loop_carried_bytes(const Compilation &c) {
  const ir::Function &f = shmap_of(c);
  for (const ir::Instr &in : f.body) {
    if (in.op != OpCode::For) continue;
    int64_t bytes = 0;
    for (ir::ValueId v : in.operands)
      bytes += f.type(v).numel() * static_cast<int64_t>(rt::dtype_size(f.type(v).dtype));
    return bytes;
  }
  return 0;
}

std::string with_remat_attribute(std::string text) {
  const size_t p = text.find("  for ");
  text.insert(p + 2, "[[remat]] ");
  return text;
}

TEST_CASE("derivatives through a loop match finite differences, stacked or recomputed",
          "[grad][loops]") {
  check_derivatives(kLoopTanh);
  check_derivatives(kLoopTanh, {}, 4, /*remat=*/true);
  check_derivatives(with_remat_attribute(kLoopTanh), {"w"});
  // The derived program keeps its loop, and recomputing saves less than stacking:
  // s and 1 - tanh^2 per iteration, against s alone.
  auto c = compile_ok(kLoopTanh);
  auto stacked = derive_ok(*c, DeriveKind::Grad, "");
  auto remat = derive_ok(*c, DeriveKind::Grad, "", {}, {}, true);
  auto attr = derive_ok(*compile_ok(with_remat_attribute(kLoopTanh)), DeriveKind::Grad, "");
  // One ppermute per iteration forward, its transpose backward; recomputing
  // tanh needs no ppermute.
  CHECK(count_op(*stacked, "ppermute") == 6 * 2);
  CHECK(count_op(*remat, "ppermute") == 6 * 2);
  const auto tanhs = [](const Compilation &g) {
    int n = 0;
    ir::for_each_instr(shmap_of(g).body, [&](const ir::Instr &in) { n += in.op == OpCode::Tanh; });
    return n;
  };
  CHECK(tanhs(*stacked) == 1);
  CHECK(tanhs(*remat) == 2);  // forward, and again in the backward loop
  const int64_t row = 4 * 8;  // f64[4] per device
  CHECK(loop_carried_bytes(*stacked) == row + 2 * 6 * row);
  CHECK(loop_carried_bytes(*remat) == row + 6 * row);
  CHECK(loop_carried_bytes(*attr) == loop_carried_bytes(*remat));
}

TEST_CASE(
    "a loop's backward pass saves what a collective computed instead of communicating "
    "again, unless recomputing",
    "[grad][loops]") {
  const std::string text =
      "mesh M = (i: 2)\n"
      "shmap f(xs: f64[6, 8] @ P(None, i), a: f64[8] @ P(i)) -> f64[] @ P() on M {\n"
      "  s = a\n"
      "  for t in range(6) { s = s * ppermute(xs[t], i, shift=1) }\n"
      "  return psum(sum(s), i)\n"
      "}\n";
  check_derivatives(text, {"a"});
  check_derivatives(text, {"a"}, 3, true);
  auto c = compile_ok(text);
  CHECK(count_op(*derive_ok(*c, DeriveKind::Grad, "", {"a"}), "ppermute") == 6);
  CHECK(count_op(*derive_ok(*c, DeriveKind::Grad, "", {"a"}, {}, true), "ppermute") == 12);
}

TEST_CASE("derivatives through loops: permuting carries, steps, nesting, collectives",
          "[grad][loops]") {
  SECTION("carries that rotate every iteration, a step of 3") {
    const std::string text =
        "mesh M = (i: 4)\n"
        "shmap f(a: f64[8] @ P(i), b: f64[8] @ P(i), w: f64[2] @ P()) -> f64[] @ P() on M {\n"
        "  c = a * 0.5\n"
        "  for k in range(0, 7, 3) {\n"
        "    t = a\n"
        "    a = sin(b) * w\n"
        "    b = c * t\n"
        "    c = t + cast(k, f64)\n"
        "  }\n"
        "  return psum(sum(a * b + c), i)\n"
        "}\n";
    check_derivatives(text);
    check_derivatives(text, {"b"}, 5, true);
  }
  SECTION("nested loops, a negative step, an integer carry, collectives inside") {
    const std::string text =
        "mesh M = (i: 2)\n"
        "shmap f(x: f64[4, 4] @ P(i), w: f64[4, 4] @ P(), b: f64[4] @ P()) -> f64[] @ P() on M {\n"
        "  h = x\n"
        "  n = 0\n"
        "  s = b\n"
        "  for t in range(3) {\n"
        "    g = all_gather(h, i)\n"
        "    h = psum_scatter(tanh(g @ w) * h[0:1, :], i)\n"
        "    s = s + sum(psum(h, i), axes=0)\n"
        "    for u in range(4, 0, -2) {\n"
        "      h = h * 0.9 + 0.1 * ppermute(h, i, shift=1) * cast(n + u, f64)\n"
        "      n = n + 1\n"
        "    }\n"
        "  }\n"
        "  return psum(sum(h * h), i) + sum(s * s)\n"
        "}\n";
    check_derivatives(text);
    check_derivatives(text, {}, 6, true);
    check_derivatives(with_remat_attribute(text), {"x", "w"});
  }
  SECTION("rows selected by the index of a stepped loop") {
    check_derivatives(
        "mesh M = (i: 2)\n"
        "shmap f(xs: f64[7, 4] @ P(None, i), a: f64[4] @ P(i)) -> f64[] @ P() on M {\n"
        "  s = a\n"
        "  for k in range(1, 7, 2) { s = s * xs[k] + xs[k - 1] }\n"
        "  return psum(sum(s), i)\n"
        "}\n");
  }
}

TEST_CASE("random loop programs: derivatives match finite differences", "[grad][loops][random]") {
  // SPMDC_LOOP_SEED / SPMDC_LOOP_COUNT choose the programs (a sweep: a larger count).
  const uint64_t first = env_or("SPMDC_LOOP_SEED", 1), count = env_or("SPMDC_LOOP_COUNT", 40);
  for (uint64_t seed = first; seed < first + count; ++seed) {
    INFO("SPMDC_LOOP_SEED=" << seed);
    check_derivatives(LoopProgramGenerator(seed, false).program(), {}, seed, seed % 2 == 1);
  }
}

TEST_CASE("derivatives through loops of 0, 1 and 2,000 iterations", "[grad][loops]") {
  for (int n : {0, 1, 2000}) {
    INFO(n << " iterations");
    const std::string text =
        "mesh M = (i: 2)\n"
        "shmap f(a: f64[4] @ P(i), w: f64[4] @ P(i)) -> f64[] @ P() on M {\n"
        "  s = a\n"
        "  for k in range(" +
        std::to_string(n) +
        ") { s = sin(s * w) + a * 0.999 }\n"
        "  return psum(sum(s * s), i)\n"
        "}\n";
    check_derivatives(text);
    check_derivatives(text, {}, 3, true);
  }
}

}  // namespace
}  // namespace spmd::test
