// test_limited_elimination.cpp — the elimination with Pareto labels of
// sharding/limited_elimination.h against brute force: on small random
// pairwise problems with random byte weights, limits, upper bounds and
// multipliers, it finds the least T among the choices whose weighed bytes
// meet the limit and whose T is at most `upper` — or says there is none
// exactly when there is none.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>

#include "brute_force.h"
#include "sharding/limited_elimination.h"

namespace spmd {
namespace {

using sharding::PairwiseProblem;

using test::each_choice;

double weighed(const std::vector<std::vector<double>> &w, double constant,
               const std::vector<int> &c) {
  double total = constant;
  for (size_t v = 0; v < c.size(); ++v) total += w[v][static_cast<size_t>(c[v])];
  return total;
}

}  // namespace

TEST_CASE("limited elimination: the least time under a byte limit, against brute force",
          "[sharding][lagrangian]") {
  int found = 0, none = 0;
  for (int seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto real = [&](double lo, double hi) {
      return std::uniform_real_distribution<double>(lo, hi)(rng);
    };
    // A chain with a few extra pairs, some forbidden pairs, integer costs
    // (ties) half of the time.
    PairwiseProblem p;
    const bool ties = seed % 2 == 0;
    auto cost = [&](double hi) { return ties ? static_cast<double>(uniform(0, 4)) : real(0, hi); };
    const int n = uniform(1, 7);
    std::vector<std::vector<double>> w;
    for (int v = 0; v < n; ++v) {
      std::vector<double> costs(static_cast<size_t>(uniform(1, 4))), bytes(costs.size());
      for (double &c : costs) c = cost(10);
      for (double &b : bytes) b = uniform(0, 16);
      p.unary.push_back(costs);
      w.push_back(bytes);
    }
    auto add_pair = [&](int u, int v) {
      PairwiseProblem::Pair pair{u, v, {}};
      for (size_t k = 0;
           k < p.unary[static_cast<size_t>(u)].size() * p.unary[static_cast<size_t>(v)].size(); ++k)
        pair.cost.push_back(uniform(0, 12) == 0 ? HUGE_VAL : cost(5));
      p.pairs.push_back(pair);
    };
    for (int v = 1; v < n; ++v) add_pair(v - 1, v);
    for (int extra = uniform(0, 2); extra > 0 && n > 2; --extra) {
      int u = uniform(0, n - 3);
      add_pair(u, uniform(u + 2, n - 1));
    }
    const double constant = uniform(0, 4);
    double least = HUGE_VAL, most = 0, fastest = HUGE_VAL;
    each_choice(p, [&](const std::vector<int> &c) {
      least = std::min(least, weighed(w, constant, c));
      most = std::max(most, weighed(w, constant, c));
      fastest = std::min(fastest, sharding::objective(p, c));
    });
    sharding::LimitedOptions o;
    o.limit = least + real(-0.1, 1.0) * (most - least);
    o.lambda = uniform(0, 2) == 0 ? 0 : real(0, 2);
    // No upper bound, or one near the unlimited optimum (often below the limited one).
    if (uniform(0, 1) == 1 && std::isfinite(fastest)) o.upper = fastest * real(1, 1.5) + real(0, 2);
    double want = HUGE_VAL;
    each_choice(p, [&](const std::vector<int> &c) {
      double t = sharding::objective(p, c);
      if (weighed(w, constant, c) <= o.limit && t <= o.upper) want = std::min(want, t);
    });
    INFO("seed " << seed << ", limit " << o.limit << ", upper " << o.upper << ", lambda "
                 << o.lambda);
    std::optional<sharding::LimitedResult> r = sharding::eliminate_limited(p, w, constant, o);
    REQUIRE(r.has_value());
    CHECK(r->found == std::isfinite(want));
    if (!r->found) {
      ++none;
      continue;
    }
    ++found;
    CHECK(std::abs(r->objective - want) <= 1e-9 * (1 + std::abs(want)));
    REQUIRE(r->choice.size() == p.unary.size());
    CHECK(std::abs(sharding::objective(p, r->choice) - want) <= 1e-9 * (1 + std::abs(want)));
    CHECK(weighed(w, constant, r->choice) <= o.limit);
    CHECK(std::abs(weighed(w, constant, r->choice) - r->bytes) <= 1e-9);
  }
  // Both outcomes were exercised.
  INFO(found << " found, " << none << " with nothing under the limit and the upper bound");
  CHECK(found > 100);
  CHECK(none > 20);
}

}  // namespace spmd
