// bench/interp_bench.cpp — how fast `spmdc run` executes programs on the simulated mesh.
//
// Prints time per run and elements per second for: the data-parallel loss
// (samples/dp_loss.spmd's body) with an 8192 x 1024 batch on mesh (batch: 8);
// an elementwise-heavy program, compared with plain single-threaded C++ loops
// doing the same arithmetic (one loop per op with temporaries, as the
// interpreter runs it, and one fused loop); and a 1024^3 matmul, compared with
// the cblas_sgemm call alone. Targets: interpreter within 2x of the loop and
// of BLAS. Not a test: figures depend on the machine. Build with `ninja bench`.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "pipeline/compile.h"

using namespace spmd;
using Clock = std::chrono::steady_clock;

namespace {

/// Median wall time of `reps` calls, in seconds (after one warm-up call).
double time_it(int reps, const std::function<void()> &fn) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Program {
  std::unique_ptr<Compilation> c;
  int index = -1;
};

Program compile(const std::string &source, const std::string &fn) {
  Program p;
  p.c = std::make_unique<Compilation>();
  compile_source(*p.c, "bench.spmd", source, CompileOptions{});
  if (!p.c->ok()) {
    std::fprintf(stderr, "%s\n", render_diagnostics(p.c->diags, p.c->sources).c_str());
    std::exit(1);
  }
  p.index = p.c->module->find_function(fn);
  return p;
}

double run(const Program &p, const std::vector<rt::Tensor> &in, int reps) {
  return time_it(reps, [&] { interp::run_shmap(*p.c->module, p.index, in, {}); });
}

void dp_loss() {
  const int64_t B = 8192, D = 1024, K = 16;
  const std::string src =
      "mesh M = (batch: 8)\n"
      "def predict(params: f32[d, k], inputs: f32[b, d]) -> f32[b, k] {\n"
      "  return tanh(inputs @ params)\n}\n"
      "shmap loss(params: f32[" +
      std::to_string(D) + ", " + std::to_string(K) +
      "] @ P(), "
      "inputs: f32[" +
      std::to_string(B) + ", " + std::to_string(D) +
      "] @ P(batch), "
      "targets: f32[" +
      std::to_string(B) + ", " + std::to_string(K) +
      "] @ P(batch)) "
      "-> f32[] @ P() on M {\n"
      "  predictions = predict(params, inputs)\n"
      "  local_loss = mean(sum((predictions - targets) ** 2.0, axes=1))\n"
      "  return pmean(local_loss, batch)\n}\n";
  Program p = compile(src, "loss");
  std::vector<rt::Tensor> in = {rt::random_tensor(DType::F32, {D, K}, 1),
                                rt::random_tensor(DType::F32, {B, D}, 2),
                                rt::random_tensor(DType::F32, {B, K}, 3)};
  double t = run(p, in, 5);
  std::printf(
      "dp_loss (batch 8192 x 1024, k=16, mesh batch: 8): %.2f ms/run, %.3g input "
      "elements/s\n",
      t * 1e3, double(B * D) / t);
}

void elementwise() {
  const int64_t R = 8192, C = 1024, N = R * C;
  const char *body = "  y = maximum(x * 2.0 + x * x - 0.5, 0.0) * y0 + y0\n  return y\n}\n";
  auto source = [&](const char *mesh, const char *spec) {
    return std::string(mesh) + "\nshmap f(x: f32[8192, 1024] @ " + spec +
           ", y0: f32[8192, 1024] @ " + spec + ") -> f32[8192, 1024] @ " + spec + " on M {\n" +
           body;
  };
  std::vector<rt::Tensor> in = {rt::random_tensor(DType::F32, {R, C}, 4),
                                rt::random_tensor(DType::F32, {R, C}, 5)};
  const int ops = 7;  // mul, mul, add, sub, max, mul, add
  Program one = compile(source("mesh M = (i: 1)", "P(i)"), "f");
  Program eight = compile(source("mesh M = (i: 8)", "P(i)"), "f");
  double t1 = run(one, in, 5), t8 = run(eight, in, 5);

  const float *x = in[0].data<float>(), *y0 = in[1].data<float>();
  // The same arithmetic, one loop per op with a fresh temporary each (as the interpreter does).
  double unfused = time_it(5, [&] {
    std::vector<float> a(N), b(N), c(N), d(N), e(N), f(N), g(N);
    for (int64_t i = 0; i < N; ++i) a[i] = x[i] * 2.0f;
    for (int64_t i = 0; i < N; ++i) b[i] = x[i] * x[i];
    for (int64_t i = 0; i < N; ++i) c[i] = a[i] + b[i];
    for (int64_t i = 0; i < N; ++i) d[i] = c[i] - 0.5f;
    for (int64_t i = 0; i < N; ++i) e[i] = std::max(d[i], 0.0f);
    for (int64_t i = 0; i < N; ++i) f[i] = e[i] * y0[i];
    for (int64_t i = 0; i < N; ++i) g[i] = f[i] + y0[i];
    volatile float sink = g[N / 2];
    (void)sink;
  });
  double fused = time_it(5, [&] {
    std::vector<float> g(N);
    for (int64_t i = 0; i < N; ++i)
      g[i] = std::max(x[i] * 2.0f + x[i] * x[i] - 0.5f, 0.0f) * y0[i] + y0[i];
    volatile float sink = g[N / 2];
    (void)sink;
  });
  std::printf("elementwise (%d ops on 8192 x 1024 f32):\n", ops);
  std::printf("  interpreter, 1 device : %8.2f ms/run, %.3g elements/s (x %d ops)\n", t1 * 1e3,
              double(N) / t1, ops);
  std::printf("  interpreter, 8 devices: %8.2f ms/run, %.3g elements/s\n", t8 * 1e3,
              double(N) / t8);
  std::printf(
      "  plain loops, one per op: %7.2f ms -> interpreter (1 device) / loops = %.2fx "
      "(target <= 2x)\n",
      unfused * 1e3, t1 / unfused);
  std::printf("  plain fused loop       : %7.2f ms -> interpreter (1 device) / fused = %.2fx\n",
              fused * 1e3, t1 / fused);
}

void matmul() {
  const int64_t n = 1024;
  Program p = compile(
      "mesh M = (i: 1)\nshmap f(a: f32[1024, 1024] @ P(), b: f32[1024, 1024] @ P()) -> "
      "f32[1024, 1024] @ P() on M {\n  return a @ b\n}\n",
      "f");
  std::vector<rt::Tensor> in = {rt::random_tensor(DType::F32, {n, n}, 6),
                                rt::random_tensor(DType::F32, {n, n}, 7)};
  double t = run(p, in, 5);
  std::vector<float> c(n * n);
  double blas = time_it(5, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, in[0].data<float>(), n,
                in[1].data<float>(), n, 0.0f, c.data(), n);
  });
  const double flops = 2.0 * n * n * n;
  std::printf(
      "matmul 1024^3 f32: interpreter %.2f ms (%.1f GFLOP/s), cblas_sgemm %.2f ms "
      "(%.1f GFLOP/s) -> ratio %.2fx (target <= 2x)\n",
      t * 1e3, flops / t / 1e9, blas * 1e3, flops / blas / 1e9, t / blas);
}

}  // namespace

int main() {
  dp_loss();
  elementwise();
  matmul();
  return 0;
}
