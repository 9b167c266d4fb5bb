// test_samples.cpp — the teaching samples of samples/ (collectives101,
// shard_local, dp_mlp, zero1_sgd, fsdp_mlp, tp_mlp, matmul_2d,
// reduce_scatter_matmul, moe, dp_tp): each compiles, runs with replication
// checking, computes what it claims (checked against plain C++ where the
// claim is numeric), communicates what its header says (forward and
// gradient programs), has derivatives that match finite differences in f64,
// and has the flops spmdc cost reports derived by hand.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../transforms/transform_test_util.h"
#include "analysis/cost.h"
#include "sample_util.h"

namespace spmd::test {
namespace {

double total(const std::vector<rt::Tensor> &outs) {
  double s = 0;
  for (const auto &t : outs)
    for (int64_t i = 0; i < t.numel(); ++i) s += t.get(i);
  return s;
}

/// grad (scalar output) or vjp with all-ones cotangents, and the JVP, against
/// central differences of the sum of all outputs along a random direction in
/// every floating-point parameter; in f64.
void check_derivatives(const std::string &name) {
  INFO(name);
  auto c = compile_sample(name, /*f64=*/true);
  const ir::Function &f = shmap_of(*c);
  bool scalar = f.results.size() == 1 && f.type(f.returns[0]).rank() == 0;
  const uint64_t seed = 5;
  auto x = random_inputs(*c, seed);
  std::vector<rt::Tensor> v;
  for (size_t k = 0; k < x.size(); ++k)
    v.push_back(rt::random_tensor(x[k].dtype(), x[k].shape(), seed * 101 + k));
  const double h = 1e-5;
  std::vector<rt::Tensor> xp = x, xm = x;
  for (size_t k = 0; k < x.size(); ++k) {
    xp[k] = axpy(h, v[k], x[k]);
    xm[k] = axpy(-h, v[k], x[k]);
  }
  double fd = (total(run(*c, xp)) - total(run(*c, xm))) / (2 * h);

  std::vector<rt::Tensor> outs;
  if (scalar) {
    outs = run(*derive_ok(*c, DeriveKind::Grad, ""), x);
  } else {
    std::vector<rt::Tensor> in = x;
    for (auto &o : run(*c, x)) in.push_back(rt::Tensor::full(o.dtype(), o.shape(), 1.0));
    outs = run(*derive_ok(*c, DeriveKind::Vjp, ""), in);
  }
  REQUIRE(outs.size() == f.results.size() + x.size());
  double rev = 0;
  for (size_t k = 0; k < x.size(); ++k) rev += dot(outs[f.results.size() + k], v[k]);

  std::vector<rt::Tensor> jin = x;
  jin.insert(jin.end(), v.begin(), v.end());
  auto jout = run(*derive_ok(*c, DeriveKind::Jvp, ""), jin);
  double fwd = 0;
  for (size_t k = f.results.size(); k < jout.size(); ++k)
    for (int64_t e = 0; e < jout[k].numel(); ++e) fwd += jout[k].get(e);
  INFO("finite differences " << fd << ", reverse " << rev << ", forward " << fwd);
  double tol = 1e-6 * std::max(1.0, std::abs(fd));
  CHECK(std::abs(rev - fd) <= tol);
  CHECK(std::abs(fwd - fd) <= tol);
}

/// The gradient (scalar output) or vjp program of a sample, w.r.t. `wrt`.
std::unique_ptr<Compilation> backward_of(const Compilation &c, std::vector<std::string> wrt = {}) {
  const ir::Function &f = shmap_of(c);
  bool scalar = f.results.size() == 1 && f.type(f.returns[0]).rank() == 0;
  return derive_ok(c, scalar ? DeriveKind::Grad : DeriveKind::Vjp, "", std::move(wrt));
}

int communicating(const Compilation &c) {
  return collective_stats(*c.module, shmap_of(c)).communicating_count();
}

/// a (rows x inner) @ b (inner x cols), both row-major global arrays.
std::vector<double> matmul(const rt::Tensor &a, const rt::Tensor &b, int64_t rows, int64_t inner,
                           int64_t cols) {
  std::vector<double> c(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < inner; ++k)
      for (int64_t j = 0; j < cols; ++j)
        c[static_cast<size_t>(i * cols + j)] += a.get(i * inner + k) * b.get(k * cols + j);
  return c;
}

CostReport cost(const Compilation &c) {
  return estimate_cost(*c.module, shmap_of(c), *find_profile("h100"));
}

const char *kSamples[] = {"collectives101.spmd",
                          "shard_local.spmd",
                          "dp_mlp.spmd",
                          "zero1_sgd.spmd",
                          "fsdp_mlp.spmd",
                          "tp_mlp.spmd",
                          "matmul_2d.spmd",
                          "reduce_scatter_matmul.spmd",
                          "moe.spmd",
                          "dp_tp.spmd"};

TEST_CASE("samples: each checks, runs with replication checking, and has a header", "[samples]") {
  for (const char *name : kSamples) {
    INFO(name);
    std::string text = sample_text(name);
    CHECK(text.rfind("# ", 0) == 0);  // opens with the explanatory comment
    auto c = compile_sample(name);
    auto out = run(*c, random_inputs(*c, 1));
    CHECK(out.size() == shmap_of(*c).results.size());
  }
}

TEST_CASE("samples: derivatives match finite differences (f64)", "[samples][grad]") {
  for (const char *name : kSamples) check_derivatives(name);
}

TEST_CASE("collectives101: psum_scatter then all_gather equals psum", "[samples]") {
  auto c = compile_sample("collectives101.spmd");
  auto x = random_inputs(*c, 2);
  auto out = run(*c, x);
  REQUIRE(out.size() == 2);
  // x is f32[32, 8] split into 4 blocks of 8 rows; the all-reduce is their sum.
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t col = 0; col < 8; ++col) {
      double s = 0;
      for (int64_t d = 0; d < 4; ++d) s += x[0].get((d * 8 + r) * 8 + col);
      CHECK(out[1].get(r * 8 + col) == Approx(s).margin(1e-6));
      CHECK(out[0].get(r * 8 + col) == Approx(out[1].get(r * 8 + col)).margin(1e-6));
    }
  // Both ways move 2 (n-1)/n of the 8x8 f32 array per device.
  auto s = collective_stats(*c->module, shmap_of(*c));
  CHECK(s.by_op["psum"].moved_bytes ==
        Approx(s.by_op["psum_scatter"].moved_bytes + s.by_op["all_gather_invariant"].moved_bytes));
  CHECK(s.by_op["psum"].moved_bytes == Approx(2.0 * 3 / 4 * 8 * 8 * 4));
}

TEST_CASE("shard_local: the forward pass moves no data", "[samples]") {
  auto c = compile_sample("shard_local.spmd");
  auto s = collective_stats(*c->module, shmap_of(*c));
  CHECK(s.communicating_count() == 0);
  CHECK(s.total_moved_bytes() == 0);
  // Local: act f32[8, 32], w f32[32, 16]: one matmul 2*8*32*16 and no communication.
  CostReport r = cost(*c);
  CHECK(r.einsum_flops == 2 * 8 * 32 * 16);
  CHECK_FALSE(r.intensity().has_value());
  // The backward pass is not free: act's gradient is summed over y, w's over x,
  // b's over x: the three pbroadcasts become three psums, the two over x
  // combined into one collective.
  auto g = backward_of(*c);
  CHECK(count_values(*g, "psum") == 3);
  CHECK(count_op(*g, "psum") == 2);
  CHECK(communicating(*g) == 2);
}

TEST_CASE("dp_mlp: one psum per parameter in the gradient, none for the loss", "[samples]") {
  auto c = compile_sample("dp_mlp.spmd");
  CHECK(count_op(*c, "psum") == 1);  // pmean of the loss
  CHECK(communicating(*c) == 1);
  const int params = 4;  // w1, b1, w2, b2
  auto g = backward_of(*c, {"w1", "b1", "w2", "b2"});
  CHECK(count_values(*g, "psum") == 1 + params);
  // ... all in one combined collective, as XLA's all-reduce combiner makes it.
  CHECK(count_op(*g, "psum") == 1);
  CHECK(communicating(*g) == 1);
  // The gradient psums move each parameter once: 2 (n-1)/n * its bytes, plus
  // the loss scalar; parameters are 16*32 + 32 + 32*4 + 4 floats.
  auto s = collective_stats(*g->module, shmap_of(*g));
  CHECK(s.by_op["psum"].size_bytes == 4.0 * (16 * 32 + 32 + 32 * 4 + 4 + 1));
  // Forward matmuls per device (local batch 8): 2*8*16*32 + 2*8*32*4.
  CHECK(cost(*c).einsum_flops == 2 * 8 * 16 * 32 + 2 * 8 * 32 * 4);
  // The gradient w.r.t. the parameters adds dW1, dW2 and dh (not dx):
  // 2*8*16*32 + 2 * (2*8*32*4).
  CHECK(cost(*g).einsum_flops == 2 * (2 * 8 * 16 * 32) + 3 * (2 * 8 * 32 * 4));
}

TEST_CASE("zero1_sgd: reduce-scatter, update a shard, all-gather", "[samples]") {
  auto c = compile_sample("zero1_sgd.spmd");
  CHECK(count_op(*c, "psum_scatter") == 1);
  CHECK(count_op(*c, "all_gather_invariant") == 1);
  CHECK(count_op(*c, "psum") == 0);
  CHECK(communicating(*c) == 2);
  auto x = random_inputs(*c, 4);  // params [64,16], momentum [64,16], grads [256,16], lr
  auto out = run(*c, x);
  REQUIRE(out.size() == 2);
  const double lr = x[3].get(0);
  for (int64_t e = 0; e < 64 * 16; ++e) {
    double g = 0;
    for (int64_t d = 0; d < 4; ++d) g += x[2].get(d * 64 * 16 + e);
    double m = 0.9 * x[1].get(e) + g / 4;
    CHECK(out[1].get(e) == Approx(m).margin(1e-5));
    CHECK(out[0].get(e) == Approx(x[0].get(e) - lr * m).margin(1e-5));
  }
}

TEST_CASE("fsdp_mlp: all_gather forward, psum_scatter backward", "[samples]") {
  auto c = compile_sample("fsdp_mlp.spmd");
  CHECK(count_op(*c, "all_gather") == 4);
  CHECK(count_op(*c, "psum") == 1);
  auto g = backward_of(*c, {"w1", "b1", "w2", "b2"});
  CHECK(count_values(*g, "all_gather") == 4);  // the 4 parameters,
  CHECK(count_op(*g, "all_gather") == 1);      // in one combined collective
  CHECK(count_values(*g, "psum_scatter") == 4);
  CHECK(count_op(*g, "psum_scatter") == 1);
  CHECK(count_op(*g, "psum") == 1);  // only the loss's pmean: no full-gradient all-reduce
  // Each weight gradient is reduce-scattered: (n-1)/n of the full parameter.
  auto s = collective_stats(*g->module, shmap_of(*g));
  CHECK(s.by_op["psum_scatter"].moved_bytes == Approx(3.0 / 4 * 4 * (16 * 32 + 32 + 32 * 4 + 4)));
}

TEST_CASE("tp_mlp: one psum forward, one backward (Megatron f/g)", "[samples]") {
  auto c = compile_sample("tp_mlp.spmd");
  CHECK(count_op(*c, "psum") == 1);
  CHECK(communicating(*c) == 1);
  // The all-reduced activation is the f32[8, 16] output: 2 (n-1)/n * 512 bytes.
  CHECK(collective_stats(*c->module, shmap_of(*c)).total_moved_bytes() ==
        Approx(2.0 * 3 / 4 * 8 * 16 * 4));
  // Local mlp dimension 16: two matmuls of 2*8*16*16 flops each.
  CHECK(cost(*c).einsum_flops == 2 * (2 * 8 * 16 * 16));
  auto g = backward_of(*c);
  CHECK(count_values(*g, "psum") == 2);  // forward + x's gradient,
  CHECK(count_op(*g, "psum") == 1);      // combined
  // W.r.t. the parameters only, the backward pass communicates nothing: the
  // sharded weights' gradients stay sharded, and the output's cotangent is
  // invariant (out_spec P()), so b2's gradient needs no sum either.
  auto gw = backward_of(*c, {"w1", "b1", "w2", "b2"});
  CHECK(count_op(*gw, "psum") == 1);
  CHECK(communicating(*gw) == 1);
}

TEST_CASE("matmul_2d and reduce_scatter_matmul compute A @ B", "[samples]") {
  {
    auto c = compile_sample("matmul_2d.spmd");
    CHECK(count_op(*c, "psum") == 1);
    CHECK(communicating(*c) == 1);
    auto x = random_inputs(*c, 6);
    auto out = run(*c, x);
    auto ref = matmul(x[0], x[1], 16, 8, 12);
    for (int64_t e = 0; e < 16 * 12; ++e)
      CHECK(out[0].get(e) == Approx(ref[static_cast<size_t>(e)]).margin(1e-5));
    // Local A f32[4, 4] @ B f32[4, 12]; psum of f32[4, 12] over y (2 devices).
    CostReport r = cost(*c);
    CHECK(r.einsum_flops == 2 * 4 * 4 * 12);
    CHECK(r.comm_bytes() == Approx(2.0 * 1 / 2 * 4 * 12 * 4));
  }
  {
    auto c = compile_sample("reduce_scatter_matmul.spmd");
    CHECK(count_op(*c, "psum_scatter") == 1);
    CHECK(communicating(*c) == 1);
    auto x = random_inputs(*c, 7);
    auto out = run(*c, x);
    auto ref = matmul(x[0], x[1], 16, 32, 8);
    for (int64_t e = 0; e < 16 * 8; ++e)
      CHECK(out[0].get(e) == Approx(ref[static_cast<size_t>(e)]).margin(1e-5));
    // TP's second matmul: flops 2 B M_x E = 2*16*8*8; reduce-scatter of the
    // f32 16x8 partial: (n-1)/n * 512 bytes; intensity M_x n/(n-1) / 2 in f32.
    CostReport r = cost(*c);
    CHECK(r.flops() == 2 * 16 * 8 * 8);
    CHECK(r.comm_bytes() == Approx(3.0 / 4 * 16 * 8 * 4));
    CHECK(*r.intensity() == Approx(8.0 * 4 / 3 / 2));
  }
}

TEST_CASE("moe: all_to_all there and back; expert weights need no reduction", "[samples]") {
  auto c = compile_sample("moe.spmd");
  CHECK(count_op(*c, "all_to_all") == 2);
  CHECK(communicating(*c) == 2);
  // W.r.t. the weights: the cotangent goes back through the return
  // all_to_all (its transpose is the inverse all_to_all) to reach the expert
  // weights; the dispatch all_to_all's transpose only matters for x.
  auto g = backward_of(*c, {"w1", "w2", "wg"});
  CHECK(count_op(*g, "all_to_all") == 2 + 1);
  CHECK(count_op(*g, "psum") == 1);  // only the replicated router weights
  auto gx = backward_of(*c);
  CHECK(count_op(*gx, "all_to_all") == 2 + 2);
  // Expert matmuls: local tokens 8 x d 8 @ 8 x 16 and 8 x 16 @ 16 x 8; router 8x8 @ 8x4.
  CHECK(cost(*c).einsum_flops == 2 * 8 * 8 * 16 + 2 * 8 * 16 * 8 + 2 * 8 * 8 * 4);
}

TEST_CASE("dp_tp: TP psum over model, DP psums over data", "[samples]") {
  auto c = compile_sample("dp_tp.spmd");
  CHECK(count_op(*c, "psum") == 2);  // activations over model, loss over data
  auto g = backward_of(*c, {"w1", "b1", "w2", "b2"});
  CHECK(count_values(*g, "psum") == 2 + 4);  // + one psum over data per parameter
  CHECK(count_op(*g, "psum") == 2);          // combined: one over model, one over data
  CHECK(communicating(*g) == 2);
}

}  // namespace
}  // namespace spmd::test
