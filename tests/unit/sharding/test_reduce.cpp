// test_reduce.cpp — the exact reductions of sharding/reduce.h against brute
// force: on small random pairwise problems, with and without a memory
// model, every reduced choice expands to an original choice with the same
// objective and the same bytes in every memory sum, and the reduced optimum
// (among choices that fit the limit) equals the original optimum found by
// enumerating every original choice.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>

#include "brute_force.h"
#include "sharding/reduce.h"

namespace spmd {
namespace {

using sharding::MemoryModel;
using sharding::PairwiseProblem;

using test::each_choice;

/// The least objective among choices that fit `m` (all, without one);
/// HUGE_VAL when none does.
double optimum(const PairwiseProblem &p, const MemoryModel *m) {
  double best = HUGE_VAL;
  each_choice(p, [&](const std::vector<int> &c) {
    if (!m || m->fits(c)) best = std::min(best, sharding::objective(p, c));
  });
  return best;
}

/// A random problem shaped like the sharding search's: a random tree (a
/// parent for every node) with a few extra pairs, small integer costs (so
/// that ties and dominated candidates are common), a few forbidden
/// pairs, and with `memory` a model whose sums cover some of the nodes.
std::pair<PairwiseProblem, MemoryModel> random_problem(std::mt19937 &rng, bool memory) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PairwiseProblem p;
  const int n = uniform(1, 8);
  for (int v = 0; v < n; ++v) {
    std::vector<double> costs(static_cast<size_t>(uniform(1, 4)));
    for (double &c : costs) c = uniform(0, 6);
    p.unary.push_back(costs);
  }
  auto add_pair = [&](int u, int v) {
    PairwiseProblem::Pair pair{u, v, {}};
    for (size_t k = 0;
         k < p.unary[static_cast<size_t>(u)].size() * p.unary[static_cast<size_t>(v)].size(); ++k)
      pair.cost.push_back(uniform(0, 15) == 0 ? HUGE_VAL : uniform(0, 4));
    p.pairs.push_back(pair);
  };
  for (int v = 1; v < n; ++v) add_pair(uniform(std::max(0, v - 3), v - 1), v);
  for (int extra = uniform(0, 2); extra > 0 && n > 2; --extra) {
    int u = uniform(0, n - 3);
    add_pair(u, uniform(u + 2, n - 1));
  }
  MemoryModel m;
  if (!memory) return {p, m};
  auto random_sum = [&](int terms) {
    MemoryModel::Sum sum;
    sum.constant = uniform(0, 3);
    for (int k = 0; k < terms; ++k) {
      const int node = uniform(0, n - 1);
      std::vector<double> bytes;
      for (size_t a = 0; a < p.unary[static_cast<size_t>(node)].size(); ++a)
        bytes.push_back(uniform(1, 8));
      sum.terms.push_back(m.term(node, bytes));
    }
    return sum;
  };
  m.shared = random_sum(uniform(0, 3));
  for (int q = uniform(0, 3); q > 0; --q) m.points.push_back(random_sum(uniform(1, 3)));
  return {p, m};
}

}  // namespace

TEST_CASE("reduce: the reduced optimum equals the brute-force optimum and choices expand exactly",
          "[sharding][reduce]") {
  int removed = 0, joined = 0, series = 0, shrunk = 0, cases = 0;
  for (int seed = 0; seed < 600; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    const bool with_memory = seed % 2 == 1;
    auto [p, m] = random_problem(rng, with_memory);
    if (with_memory) {  // a limit between the least and the largest peak
      double least = HUGE_VAL, most = 0;
      each_choice(p, [&](const std::vector<int> &c) {
        least = std::min(least, m.peak(c));
        most = std::max(most, m.peak(c));
      });
      m.limit = least + std::uniform_real_distribution<double>(0, 1)(rng) * (most - least);
    }
    const MemoryModel *mm = with_memory ? &m : nullptr;
    INFO("seed " << seed << (with_memory ? " with memory" : ""));
    sharding::Reduced r = sharding::reduce(p, mm);
    REQUIRE(r.memory.has_value() == with_memory);
    const MemoryModel *rm = with_memory ? &*r.memory : nullptr;
    if (with_memory) {
      REQUIRE(r.memory->points.size() == m.points.size());
      CHECK(r.memory->limit == m.limit);
    }
    for (const PairwiseProblem::Pair &pair : r.problem.pairs) {
      REQUIRE(pair.u < pair.v);
      REQUIRE(pair.cost.size() == r.problem.unary[static_cast<size_t>(pair.u)].size() *
                                      r.problem.unary[static_cast<size_t>(pair.v)].size());
    }
    // Every reduced choice stands for an original one with the same
    // objective and the same bytes in every sum.
    each_choice(r.problem, [&](const std::vector<int> &y) {
      std::vector<int> x = r.expand(y);
      REQUIRE(x.size() == p.unary.size());
      for (size_t v = 0; v < x.size(); ++v) {
        REQUIRE(x[v] >= 0);
        REQUIRE(static_cast<size_t>(x[v]) < p.unary[v].size());
      }
      const double reduced = sharding::objective(r.problem, y);
      const double original = sharding::objective(p, x);
      if (std::isinf(original)) {
        CHECK(std::isinf(reduced));
      } else {
        CHECK(std::abs(reduced - original) <= 1e-9);
      }
      if (with_memory) {
        CHECK(rm->at(rm->shared, y) == m.at(m.shared, x));
        for (size_t q = 0; q < m.points.size(); ++q)
          CHECK(rm->at(rm->points[q], y) == m.at(m.points[q], x));
      }
    });
    // The optimum is unchanged.
    const double want = optimum(p, mm), got = optimum(r.problem, rm);
    if (std::isinf(want)) {
      CHECK(std::isinf(got));
    } else {
      CHECK(std::abs(got - want) <= 1e-9);
    }
    // Without a memory model a tree (no extra pairs) reduces to one node.
    if (!with_memory && p.pairs.size() + 1 == p.unary.size()) CHECK(r.problem.unary.size() == 1);
    removed += r.removed_candidates;
    joined += r.joined_leaves;
    series += r.series_removed;
    size_t before = 0, after = 0;
    for (const auto &c : p.unary) before += c.size();
    for (const auto &c : r.problem.unary) after += c.size();
    shrunk += after < before ? 1 : 0;
    ++cases;
  }
  // The cases exercised every reduction, many times.
  INFO(removed << " candidates dropped, " << joined << " leaves joined, " << series
               << " series nodes removed over " << cases << " cases");
  CHECK(removed > 100);
  CHECK(joined > 100);
  CHECK(series > 50);
  CHECK(shrunk * 2 > cases);
}

}  // namespace spmd
