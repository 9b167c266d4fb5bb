// test_local_search.cpp — sharding/pairwise.h's local_search(): it never
// returns a plan worse than every node's first candidate (the unsplit
// strategy, i.e. the replicated plan), and on a chain where every split
// communicates it finds the replicated optimum that a start from each node's
// cheapest candidate misses (the GPT sample's search, samples/gpt).
#include <catch2/catch.hpp>
#include <cmath>
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

/// n nodes of 1 to 3 candidates, each pair of nodes joined with probability
/// 1/2, costs uniform in [0, 4).
PairwiseProblem random_problem(std::mt19937 &rng, int n) {
  std::uniform_real_distribution<double> cost(0.0, 4.0);
  std::uniform_int_distribution<int> width(1, 3);
  PairwiseProblem p;
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
  return p;
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
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + trial % 5;
    PairwiseProblem p = random_problem(rng, n);
    sharding::Elimination e = sharding::local_search(p);
    INFO("trial " << trial);
    CHECK(e.objective == Approx(objective(p, e.choice)));
    CHECK(e.objective <= objective(p, std::vector<int>(static_cast<size_t>(n), 0)) + 1e-12);
    CHECK(e.objective >= brute_force_optimum(p) - 1e-12);
  }
}

// local_search_within: from a plan that fits, the result fits, is no worse
// than the start, and costs what it says; on a problem built so that only a
// block move helps (a parameter and its update must split together), it
// finds it.
TEST_CASE("local search within a memory limit: fits, no worse than its start, block moves",
          "[sharding]") {
  std::mt19937 rng(47);
  std::uniform_int_distribution<int> bytes(1, 40);
  int improved = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + trial % 5;
    PairwiseProblem p = random_problem(rng, n);
    sharding::MemoryModel m;
    auto sum = [&](int terms) {
      sharding::MemoryModel::Sum s;
      for (int k = 0; k < terms; ++k) {
        const int node = static_cast<int>(rng() % static_cast<unsigned>(n));
        std::vector<double> b;
        for (size_t a = 0; a < p.unary[static_cast<size_t>(node)].size(); ++a)
          b.push_back(bytes(rng));
        s.terms.push_back(m.term(node, b));
      }
      return s;
    };
    m.shared = sum(1 + trial % 3);
    for (int q = 0; q < 3; ++q) m.points.push_back(sum(2));
    // The limit: the peak of a random plan, which therefore fits; start there.
    std::vector<int> start(static_cast<size_t>(n));
    for (int v = 0; v < n; ++v)
      start[static_cast<size_t>(v)] =
          static_cast<int>(rng() % p.unary[static_cast<size_t>(v)].size());
    m.limit = m.peak(start) + (trial % 2 ? 0.0 : 15.0);
    double optimum = HUGE_VAL;
    test::each_choice(p, [&](const std::vector<int> &c) {
      if (m.fits(c)) optimum = std::min(optimum, objective(p, c));
    });
    sharding::Elimination e = sharding::local_search_within(p, m, start);
    INFO("trial " << trial);
    CHECK(m.fits(e.choice));
    CHECK(e.objective == Approx(objective(p, e.choice)));
    CHECK(e.objective <= objective(p, start) + 1e-12);
    CHECK(e.objective >= optimum - 1e-12);
    improved += e.objective < objective(p, start) - 1e-12 ? 1 : 0;
  }
  CHECK(improved > 100);
  // A parameter w (node 0) and its update (node 1): split (candidate 1)
  // stores less. Splitting either alone costs a reshard of 10 between them;
  // both split saves 1 each. Only the block move {w, update} helps.
  PairwiseProblem p;
  p.unary = {{2.0, 1.0}, {2.0, 1.0}};
  p.pairs.push_back({0, 1, {0.0, 10.0, 10.0, 0.0}});
  sharding::MemoryModel m;
  m.shared.terms.push_back(m.term(0, {8.0, 2.0}));
  m.points.push_back({{m.term(1, {8.0, 2.0})}, 0.0});
  m.limit = 16;
  sharding::Elimination e = sharding::local_search_within(p, m, {0, 0});
  CHECK(e.choice == std::vector<int>{1, 1});
  CHECK(e.objective == Approx(2.0));
}

}  // namespace
}  // namespace spmd
