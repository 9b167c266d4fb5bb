// test_local_search.cpp — sharding/pairwise.h's local_search(): it never
// returns a plan worse than every node's first candidate (the unsplit
// strategy, i.e. the replicated plan), and on a chain where every split
// communicates it finds the replicated optimum that a start from each node's
// cheapest candidate misses (the GPT sample's search, samples/gpt).
#include <catch2/catch.hpp>
#include <limits>
#include <random>

#include "brute_force.h"
#include "sharding/pairwise.h"

namespace spmd {
namespace {

using sharding::PairwiseProblem;

double brute_force_optimum(const PairwiseProblem &p) {
  double best = std::numeric_limits<double>::infinity();
  test::each_choice(p, [&](const std::vector<int> &c) { best = std::min(best, objective(p, c)); });
  return best;
}

TEST_CASE("local search: communication everywhere keeps the replicated plan", "[sharding]") {
  // Candidate 0 unsplit (compute 1), candidate 1 split (compute 0.5); two
  // neighbours cost nothing when both are unsplit and 10 otherwise (a
  // collective, or a reshard between them). From "everything split" no
  // single node gains by moving: that start ends at 6 * 0.5 + 5 * 10 = 53.
  PairwiseProblem p;
  const int n = 6;
  p.unary.assign(n, {1.0, 0.5});
  for (int v = 0; v + 1 < n; ++v) p.pairs.push_back({v, v + 1, {0.0, 10.0, 10.0, 10.0}});
  sharding::Elimination e = sharding::local_search(p);
  CHECK(e.objective == Approx(6.0));
  CHECK(e.objective == Approx(brute_force_optimum(p)));
  CHECK(e.choice == std::vector<int>(n, 0));
}

TEST_CASE("local search: never worse than the first candidates, never below the optimum",
          "[sharding]") {
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> cost(0.0, 4.0);
  std::uniform_int_distribution<int> width(1, 3);
  for (int trial = 0; trial < 200; ++trial) {
    PairwiseProblem p;
    const int n = 2 + trial % 5;
    for (int v = 0; v < n; ++v) {
      std::vector<double> u(static_cast<size_t>(width(rng)));
      for (double &c : u) c = cost(rng);
      p.unary.push_back(u);
    }
    for (int u = 0; u < n; ++u)
      for (int v = u + 1; v < n; ++v) {
        if (rng() % 2) continue;
        PairwiseProblem::Pair pair{u, v, {}};
        pair.cost.resize(p.unary[static_cast<size_t>(u)].size() *
                         p.unary[static_cast<size_t>(v)].size());
        for (double &c : pair.cost) c = cost(rng);
        p.pairs.push_back(pair);
      }
    sharding::Elimination e = sharding::local_search(p);
    INFO("trial " << trial);
    CHECK(e.objective == Approx(objective(p, e.choice)));
    CHECK(e.objective <= objective(p, std::vector<int>(static_cast<size_t>(n), 0)) + 1e-12);
    CHECK(e.objective >= brute_force_optimum(p) - 1e-12);
  }
}

}  // namespace
}  // namespace spmd
