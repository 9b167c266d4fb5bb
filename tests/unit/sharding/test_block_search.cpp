// sharding/block_search.h: a move that changes a parameter with everything
// tied to it (issue 28). On a small problem whose best plan under a memory
// limit needs the weight, its update, the gradient's scaling and the
// gradient's matmul split together (FSDP), the block move finds the optimum
// that brute force finds, while local_search_within's moves (one node and
// its neighbours) stay at the start. On random problems it never returns a
// plan worse than its start or over the limit. find_blocks() on a training
// step finds the matmul reading the weight, the update and the gradient's
// matmul. On the bench's training step (6 layers, under a limit) the block
// moves' plan is cheaper by evaluate() than the plan without them (65.3 us
// against 75.3 us), re-checks, and runs equal to the unsharded step.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "brute_force.h"
#include "sharding/block_search.h"
#include "sharding_test_util.h"

namespace spmd {
namespace {

using sharding::MemoryModel;
using sharding::PairwiseProblem;

double optimum_within(const PairwiseProblem &p, const MemoryModel &m) {
  double best = std::numeric_limits<double>::infinity();
  test::each_choice(p, [&](const std::vector<int> &c) {
    if (m.fits(c)) best = std::min(best, objective(p, c));
  });
  return best;
}

/// Nodes W (the weight), U (its update), S (the gradient's scaling, which
/// completes its partial sum) and G (the gradient's matmul) in a chain, and
/// X (an activation) alone; candidate 0 replicated, 1 split. Split costs
/// less on U, S and G (a quarter of the update; a reduce-scatter instead of
/// an all-reduce), two neighbours in different layouts cost 10 (a
/// reshard), and X split costs 3 (a collective it then needs). Bytes: W
/// stored 4 or 1 (shared), S and X live at one point, 4 or 1 each; the limit
/// 9. Unlimited, X stays replicated; under the limit the replicated chain
/// (4 + 4) leaves X no room.
struct Fsdp {
  PairwiseProblem p;
  MemoryModel m;
  std::vector<int> start = {0, 0, 0, 0, 1};  // the replicated chain, X split: fits
  std::vector<std::vector<int>> blocks = {{0, 1, 2, 3}};
};

Fsdp fsdp() {
  Fsdp f;
  f.p.unary = {{0, 0}, {4, 1}, {4, 1}, {4, 2}, {0, 3}};
  for (int v = 0; v < 3; ++v) f.p.pairs.push_back({v, v + 1, {0, 10, 10, 0}});
  f.m.shared.terms.push_back(f.m.term(0, {4, 1}));
  MemoryModel::Sum point;
  point.terms.push_back(f.m.term(2, {4, 1}));
  point.terms.push_back(f.m.term(4, {4, 1}));
  f.m.points.push_back(point);
  f.m.limit = 9;
  return f;
}

TEST_CASE("block search: the coordinated FSDP move that single-node moves miss", "[sharding]") {
  Fsdp f = fsdp();
  REQUIRE(f.m.fits(f.start));
  // By hand: the start costs 12 + 3 = 15; everything split with X
  // replicated costs 0 + 1 + 1 + 2 + 0 = 4 and stores 1 + (1 + 4) = 6.
  CHECK(objective(f.p, f.start) == Approx(15));
  const double best = optimum_within(f.p, f.m);
  CHECK(best == Approx(4));
  // Every plan with the chain mixed pays a reshard of 10: no move of one
  // node and its neighbours improves the start.
  sharding::Elimination local = sharding::local_search_within(f.p, f.m, f.start);
  CHECK(local.objective == Approx(15));
  CHECK(local.choice == f.start);
  sharding::BlockSearchResult r = sharding::block_search(f.p, f.m, f.blocks, f.start);
  CHECK(r.plan.objective == Approx(best));
  CHECK(r.plan.choice == std::vector<int>{1, 1, 1, 1, 0});
  CHECK(f.m.fits(r.plan.choice));
  CHECK(r.block_moves >= 1);
  // Without the block, the search is local_search_within's.
  sharding::BlockSearchResult none = sharding::block_search(f.p, f.m, {}, f.start);
  CHECK(none.plan.objective == Approx(15));
}

TEST_CASE("block search: a block move that would break the limit is not made", "[sharding]") {
  Fsdp f = fsdp();
  // Here the weight is stored whole either way and split S stores more (5):
  // every plan with S split peaks at 4 + 5 + at least 1 = 10, over the limit
  // of 9, so the block move is not made and the start is the optimum.
  f.m.shared.terms[0] = f.m.term(0, {4, 4});
  f.m.points[0].terms[0] = f.m.term(2, {4, 5});
  REQUIRE(f.m.fits(f.start));
  CHECK(optimum_within(f.p, f.m) == Approx(15));
  sharding::BlockSearchResult r = sharding::block_search(f.p, f.m, f.blocks, f.start);
  CHECK(r.plan.choice == f.start);
  CHECK(r.block_moves == 0);
}

TEST_CASE("block search: never worse than its start, always within the limit", "[sharding]") {
  std::mt19937 rng(28);
  std::uniform_real_distribution<double> cost(0.0, 4.0), bytes(0.0, 3.0);
  std::uniform_int_distribution<int> width(1, 3);
  int improved = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 6;
    PairwiseProblem p;
    for (int v = 0; v < n; ++v) {
      std::vector<double> u(static_cast<size_t>(width(rng)));
      for (double &c : u) c = cost(rng);
      p.unary.push_back(u);
    }
    for (int v = 0; v + 1 < n; ++v) {
      PairwiseProblem::Pair pair{v, v + 1, {}};
      pair.cost.resize(p.unary[static_cast<size_t>(v)].size() *
                       p.unary[static_cast<size_t>(v + 1)].size());
      for (double &c : pair.cost) c = cost(rng);
      p.pairs.push_back(pair);
    }
    MemoryModel m;
    m.points.resize(2);
    for (int v = 0; v < n; ++v) {
      std::vector<double> b;
      for (size_t a = 0; a < p.unary[static_cast<size_t>(v)].size(); ++a) b.push_back(bytes(rng));
      (v == 0 ? m.shared : m.points[static_cast<size_t>(v % 2)]).terms.push_back(m.term(v, b));
    }
    // The limit: what the first candidate of every node stores, so that
    // start fits.
    std::vector<int> start(static_cast<size_t>(n), 0);
    m.limit = m.peak(start) * 1.1;
    const double best = optimum_within(p, m);
    sharding::BlockSearchResult r =
        sharding::block_search(p, m, {{0, 1, 2}, {3, 4, 5}, {2, 3}}, start);
    INFO("trial " << trial);
    CHECK(m.fits(r.plan.choice));
    CHECK(r.plan.objective == Approx(objective(p, r.plan.choice)));
    CHECK(r.plan.objective <= objective(p, start) + 1e-9);
    CHECK(r.plan.objective >= best - 1e-9);
    improved += r.plan.objective < objective(p, start) - 1e-9 ? 1 : 0;
  }
  CHECK(improved > 0);  // the test can tell a search that never moves
}

TEST_CASE("block search: a training step's weight, update and gradient form a block",
          "[sharding]") {
  auto c = test::compile_text(R"(mesh M = (d: 4)

def loss(w: f32[1024, 4096], x: f32[64, 1024], y: f32[64, 4096]) -> f32[] {
  return mean((x @ w - y) * (x @ w - y))
}

sharded step(x: f32[64, 1024] @ P(d), y: f32[64, 4096] @ P(d), w: f32[1024, 4096] @ auto)
    -> (l: f32[] @ P(), w: f32[1024, 4096] @ like(w)) on M {
  l, g = grad(loss, wrt=w)(w, x, y)
  return l, w - 0.01 * g
}
)");
  const ir::Function *f = nullptr;
  for (const ir::Function &fn : c->module->functions)
    if (fn.kind == ir::FunctionKind::Sharded) f = &fn;
  REQUIRE(f != nullptr);
  sharding::Problem p = sharding::make_problem(*c->module, *f, builtin_profiles().front());
  std::vector<sharding::ParamBlock> blocks = sharding::find_blocks(p);
  REQUIRE(blocks.size() == 1);  // x and y are written: only w has a choice
  const sharding::ParamBlock &b = blocks[0];
  CHECK(b.param == 2);  // w
  // First the matmul that reads w (x @ w, not elementwise), then the ops on
  // its result; the update w - 0.01 * g (elementwise, reads w, makes the
  // `like(w)` result); last the matmul that makes g (x^T @ dy), where the
  // walk back from the update stops.
  REQUIRE(b.instrs.size() >= 4);
  const auto family = [&](int i) { return p.ops[static_cast<size_t>(i)].rule.family; };
  const auto reads_w = [&](int i) {
    const auto &ops = p.flat.body[static_cast<size_t>(i)].operands;
    return std::find(ops.begin(), ops.end(), p.flat.params[2].value) != ops.end();
  };
  CHECK(family(b.instrs.front()) != RuleFamily::Elementwise);
  CHECK(reads_w(b.instrs.front()));
  int update = -1;
  for (int i : b.instrs)
    if (p.flat.body[static_cast<size_t>(i)].results[0] == p.flat.returns[1]) update = i;
  REQUIRE(update >= 0);
  CHECK(family(update) == RuleFamily::Elementwise);
  CHECK(reads_w(update));
  CHECK(family(b.instrs.back()) != RuleFamily::Elementwise);
  CHECK(!reads_w(b.instrs.back()));
  // g reaches the update through elementwise ops only (the scaling by 0.01).
  bool feeds_update = false;
  std::vector<ir::ValueId> back = p.flat.body[static_cast<size_t>(update)].operands;
  for (size_t q = 0; q < back.size() && q < 64; ++q) {
    const int prod = p.producer[static_cast<size_t>(back[q])];
    if (prod == b.instrs.back()) feeds_update = true;
    if (prod >= 0 && family(prod) == RuleFamily::Elementwise)
      for (ir::ValueId y : p.flat.body[static_cast<size_t>(prod)].operands) back.push_back(y);
  }
  CHECK(feeds_update);
}

}  // namespace
}  // namespace spmd

namespace spmd {
namespace {

/// The bench's training step (bench/shard_bench.cpp --train): `layers`
/// residual MLP blocks of width `width`, the MSE loss's gradient and the
/// SGD update, each weight `like` its parameter, on (data: 2, model: 4).
std::string training_step(int layers, int width) {
  std::string types, weights, names, grads, updates, results, body;
  const std::string t1 = "f32[" + std::to_string(width) + ", " + std::to_string(4 * width) + "]";
  const std::string t2 = "f32[" + std::to_string(4 * width) + ", " + std::to_string(width) + "]";
  for (int b = 0; b < layers; ++b) {
    const std::string w1 = "w1_" + std::to_string(b), w2 = "w2_" + std::to_string(b);
    types += ", " + w1 + ": " + t1 + ", " + w2 + ": " + t2;
    weights += ", " + w1 + ": " + t1 + " @ auto, " + w2 + ": " + t2 + " @ auto";
    names += (b ? ", " : "") + w1 + ", " + w2;
    grads += ", g" + w1 + ", g" + w2;
    updates += ", " + w1 + " - 0.01 * g" + w1 + ", " + w2 + " - 0.01 * g" + w2;
    results +=
        ", " + w1 + ": " + t1 + " @ like(" + w1 + "), " + w2 + ": " + t2 + " @ like(" + w2 + ")";
    body += "  h = tanh(x @ " + w1 + ")\n  x = x + h @ " + w2 + "\n";
  }
  const std::string act = "f32[16, " + std::to_string(width) + "]";
  return "mesh M = (data: 2, model: 4)\n\ndef loss(x: " + act + ", y: " + act + types +
         ") -> f32[] {\n" + body + "  d = x - y\n  return mean(d * d)\n}\n\n" +
         "sharded step(x: " + act + " @ P(data), y: " + act + " @ P(data)" + weights +
         ") -> (l: f32[] @ P()" + results + ") on M {\n  l" + grads + " = grad(loss, wrt=(" +
         names + "))(x, y, " + names + ")\n  return l" + updates + "\n}\n";
}

}  // namespace

TEST_CASE("block search: a training step's plan after block moves runs equal to the reference",
          "[sharding]") {
  const int layers = 6, width = 64;
  const std::string text = training_step(layers, width);
  auto c = test::compile_text(text);
  // 60% of the weights' bytes replicated: they cannot all be replicated.
  const double weights = 2.0 * layers * width * 4 * width * 4;
  auto shard = [&](bool block_moves, bool polish = true) {
    sharding::ShardOptions o;
    o.function = "step";
    o.automatic = true;
    o.search.memory_per_device = 0.6 * weights;
    o.search.gap = 0;  // no plan is accepted before the block moves
    o.search.time_limit_s = 2;
    o.search.block_moves = block_moves;
    // The rows alone (no second search when the estimate is over): the
    // block moves' effect on one search.
    o.search.fit_estimate = false;
    o.search.polish = polish;
    o.profile = builtin_profiles().front();
    o.sources = &c->sources;
    DiagnosticEngine diags;
    std::optional<sharding::ShardResult> r = sharding::shard(*c->module, o, diags);
    INFO(render_diagnostics(diags, c->sources));
    REQUIRE(r.has_value());
    REQUIRE(r->search.has_value());
    return std::move(*r);
  };
  // The block moves against none, neither polished: auto_shard.cpp's polish
  // by evaluate() took the plan without block moves from 75.4 to 65.3 us
  // here, as good as theirs (2026-12-06; CBC stops at the time limit, so
  // the figures can move), and is never worse.
  sharding::ShardResult without = shard(false, false);
  sharding::ShardResult r = shard(true, false);
  sharding::ShardResult polished = shard(false);
  INFO(polished.search->status);
  CHECK(polished.cost.total_s() <= without.cost.total_s() * (1 + 1e-9));
  INFO(r.search->status);
  CHECK(without.search->block_moves == 0);
  CHECK(r.search->block_moves > 0);
  CHECK(r.cost.row_bytes <= 0.6 * weights);
  // By evaluate(), independent of the search's objective.
  CHECK(r.cost.total_s() < without.cost.total_s());
  // The emitted program re-checks with automatic pbroadcasts off and runs
  // equal to the unsharded global view.
  auto s = test::compile_text(ir::print_module(r.module), /*auto_pb=*/false);
  const int global = test::function_index(*c, "step");
  auto inputs = test::random_inputs(c->module->functions[static_cast<size_t>(global)], /*seed=*/28);
  // Weights of scale 1/sqrt(fan-in), as a model is initialised: with
  // weights of order 1 the activations saturate tanh, and its derivative
  // 1 - h*h turns the reassociation of sums (the plan splits them) into
  // errors of 1e-3.
  for (size_t k = 2; k < inputs.size(); ++k) {
    const double scale = 1 / std::sqrt(static_cast<double>(k % 2 == 0 ? width : 4 * width));
    for (int64_t i = 0; i < inputs[k].numel(); ++i) inputs[k].set(i, scale * inputs[k].get(i));
  }
  auto expected = test::run_fn(*c, global, inputs);
  auto actual = test::run_fn(*s, test::function_index(*s, "step"), inputs);
  REQUIRE(actual.size() == expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    CHECK(test::max_abs_diff(actual[k], expected[k]) <= 1e-4 * (1 + test::max_abs(expected[k])));
  }
}

}  // namespace spmd
