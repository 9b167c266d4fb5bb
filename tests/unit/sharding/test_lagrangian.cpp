// test_lagrangian.cpp — the memory-limited search (sharding/lagrangian.h)
// against exhaustive search: on random small pairwise problems with random
// memory models, and on small programs through auto_shard. The relaxation's
// bound must never exceed the true limited optimum, its plan must fit and
// cost what it says, and "nothing fits" must be true when it is claimed.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

#include "analysis/cost.h"
#include "brute_force.h"
#include "sharding/auto_shard.h"
#include "sharding/lagrangian.h"
#include "sharding_test_util.h"

namespace spmd {
namespace {

using sharding::MemoryModel;
using sharding::PairwiseProblem;

using test::each_choice;

/// The limited optimum by enumeration (HUGE_VAL: nothing fits), and the
/// least and largest peaks of all choices.
struct Exhaustive {
  double best = HUGE_VAL, least_peak = HUGE_VAL, most_peak = 0;
};
Exhaustive exhaustive(const PairwiseProblem &p, const MemoryModel &m) {
  Exhaustive e;
  each_choice(p, [&](const std::vector<int> &c) {
    double peak = m.peak(c);
    e.least_peak = std::min(e.least_peak, peak);
    e.most_peak = std::max(e.most_peak, peak);
    if (peak <= m.limit) e.best = std::min(e.best, sharding::objective(p, c));
  });
  return e;
}

/// A random problem: a chain with a few extra pairs, some forbidden pairs;
/// parameters in `shared`, a few points of values live together.
std::pair<PairwiseProblem, MemoryModel> random_problem(std::mt19937 &rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  PairwiseProblem p;
  const int n = uniform(2, 7);
  for (int v = 0; v < n; ++v) {
    std::vector<double> costs(static_cast<size_t>(uniform(1, 4)));
    for (double &c : costs) c = real(0, 10);
    p.unary.push_back(costs);
  }
  auto add_pair = [&](int u, int v) {
    PairwiseProblem::Pair pair{u, v, {}};
    for (size_t k = 0;
         k < p.unary[static_cast<size_t>(u)].size() * p.unary[static_cast<size_t>(v)].size(); ++k)
      pair.cost.push_back(uniform(0, 9) == 0 ? HUGE_VAL : real(0, 5));
    p.pairs.push_back(pair);
  };
  for (int v = 1; v < n; ++v) add_pair(v - 1, v);
  for (int extra = uniform(0, 2); extra > 0 && n > 2; --extra) {
    int u = uniform(0, n - 3);
    add_pair(u, uniform(u + 2, n - 1));
  }
  MemoryModel m;
  auto random_sum = [&](int terms) {
    MemoryModel::Sum sum;
    sum.constant = real(0, 2);
    for (int k = 0; k < terms; ++k) {
      const int node = uniform(0, n - 1);
      std::vector<double> bytes;
      for (size_t a = 0; a < p.unary[static_cast<size_t>(node)].size(); ++a)
        bytes.push_back(static_cast<double>(uniform(1, 64)));
      sum.terms.push_back(m.term(node, bytes));
    }
    return sum;
  };
  m.shared = random_sum(uniform(0, n));
  for (int q = uniform(0, 3); q > 0; --q) m.points.push_back(random_sum(uniform(1, 3)));
  return {p, m};
}

}  // namespace

TEST_CASE("lagrangian: bound, plan and infeasibility against exhaustive search",
          "[sharding][lagrangian]") {
  // SPMDC_LAGRANGIAN_CASES=N runs more random problems (the seed is the case number).
  const char *env = std::getenv("SPMDC_LAGRANGIAN_CASES");
  const int cases = env ? std::atoi(env) : 400;
  int proven_optimal = 0, feasible = 0;
  for (int seed = 0; seed < cases; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto [p, m] = random_problem(rng);
    // A limit anywhere from below the least peak to above the largest.
    Exhaustive first = exhaustive(p, m);
    m.limit = first.least_peak + std::uniform_real_distribution<double>(-0.2, 1.1)(rng) *
                                     (first.most_peak - first.least_peak);
    Exhaustive e = exhaustive(p, m);
    for (double gap : {0.0, 0.05}) {
      INFO("seed " << seed << ", gap " << gap << ", limit " << m.limit);
      sharding::RelaxOptions o;
      o.gap = gap;
      sharding::Relaxation r = sharding::relax_memory(p, m, o);
      if (r.infeasible) {
        CHECK(e.best == HUGE_VAL);  // claimed: nothing fits
        continue;
      }
      if (e.best == HUGE_VAL) {
        CHECK_FALSE(r.best.has_value());
        continue;
      }
      ++feasible;
      CHECK(r.bound <= e.best + 1e-9 * (1 + std::abs(e.best)));
      if (!r.best) continue;  // no plan found is allowed; a wrong one is not
      CHECK(m.peak(r.best->choice) <= m.limit);
      CHECK(std::abs(sharding::objective(p, r.best->choice) - r.best->objective) <= 1e-9);
      CHECK(r.best->objective >= e.best - 1e-9 * (1 + std::abs(e.best)));
      CHECK(r.gap() >= 0);
      if (r.gap() <= 1e-12) {
        ++proven_optimal;
        CHECK(std::abs(r.best->objective - e.best) <= 1e-9 * (1 + std::abs(e.best)));
      }
    }
  }
  // The relaxation is not exact, but it closes most small problems.
  INFO(proven_optimal << " of " << feasible << " feasible runs proven optimal");
  CHECK(proven_optimal * 2 >= feasible);
}

TEST_CASE("lagrangian: a relaxation replaying an earlier one's minimisations answers as a new one",
          "[sharding][lagrangian]") {
  // auto_shard's later searches relax the same problem under a lower limit
  // with the first's minimisations recorded (RelaxMemo): each answer, bound
  // and count must be what a relaxation without the record gives, with the
  // elimination exact (max_states large) and too wide (1).
  int replayed = 0;
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto [p, m] = random_problem(rng);
    Exhaustive e = exhaustive(p, m);
    const double high = e.least_peak + std::uniform_real_distribution<double>(0.3, 1.1)(rng) *
                                           (e.most_peak - e.least_peak);
    const double low = e.least_peak + std::uniform_real_distribution<double>(-0.1, 0.3)(rng) *
                                          (e.most_peak - e.least_peak);
    for (size_t states : {size_t{1} << 16, size_t{1}}) {
      INFO("seed " << seed << ", max_states " << states);
      sharding::RelaxOptions o;
      o.max_states = states;
      sharding::RelaxMemo memo;
      for (double limit : {high, low, high}) {
        m.limit = limit;
        const size_t recorded = memo.runs.size();
        sharding::Relaxation with = sharding::relax_memory(p, m, o, &memo);
        sharding::Relaxation fresh = sharding::relax_memory(p, m, o);
        replayed += recorded > 0 && memo.runs.size() == recorded ? 1 : 0;
        CHECK(with.best.has_value() == fresh.best.has_value());
        if (with.best && fresh.best) {
          CHECK(with.best->choice == fresh.best->choice);
          CHECK(with.best->objective == fresh.best->objective);
        }
        CHECK(with.bests == fresh.bests);
        CHECK(with.bound == fresh.bound);
        CHECK(with.infeasible == fresh.infeasible);
        CHECK(with.too_wide == fresh.too_wide);
        CHECK(with.heuristic == fresh.heuristic);
        CHECK(with.eliminations == fresh.eliminations);
        CHECK(with.local_searches == fresh.local_searches);
        CHECK(with.exact_runs == fresh.exact_runs);
      }
    }
  }
  // The third relaxation (the first's limit again) runs nothing new.
  CHECK(replayed >= 300);
}

TEST_CASE(
    "lagrangian: with the elimination too wide, the local search's plans fit and prove "
    "nothing",
    "[sharding][lagrangian]") {
  // max_states 1: every elimination gives up, so each minimisation of the
  // hull search is local_search()'s. Its plans must still fit and cost what
  // they say; it proves no infeasibility, and its bound is the simple one.
  int feasible = 0, found = 0;
  for (int seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto [p, m] = random_problem(rng);
    Exhaustive first = exhaustive(p, m);
    m.limit = first.least_peak + std::uniform_real_distribution<double>(-0.2, 1.1)(rng) *
                                     (first.most_peak - first.least_peak);
    Exhaustive e = exhaustive(p, m);
    INFO("seed " << seed << ", limit " << m.limit);
    sharding::RelaxOptions o;
    o.max_states = 1;
    sharding::Relaxation r = sharding::relax_memory(p, m, o);
    if (!r.too_wide) continue;  // a problem with no choice left to eliminate
    CHECK(r.heuristic);
    CHECK_FALSE(r.infeasible);
    CHECK(r.local_searches > 0);
    if (e.best == HUGE_VAL) {
      CHECK_FALSE(r.best.has_value());
      continue;
    }
    ++feasible;
    CHECK(r.bound <= e.best + 1e-9 * (1 + std::abs(e.best)));
    if (!r.best) continue;
    ++found;
    CHECK(m.peak(r.best->choice) <= m.limit);
    CHECK(std::abs(sharding::objective(p, r.best->choice) - r.best->objective) <= 1e-9);
    CHECK(r.best->objective >= e.best - 1e-9 * (1 + std::abs(e.best)));
  }
  INFO(found << " of " << feasible << " feasible problems given a plan");
  CHECK(feasible > 50);
  CHECK(found * 10 >= feasible * 9);
}

// auto_shard under a memory limit with the relaxation's answer accepted at
// any gap: the plan fits (evaluate's peak, the model the ILP states too),
// costs at least the exhaustive optimum among plans that fit, and the
// bound is at most that optimum.
TEST_CASE("lagrangian: auto_shard's plan and bound against exhaustive plans under a limit",
          "[sharding][lagrangian]") {
  const std::string text = R"(mesh M = (a: 2, b: 2)
sharded f(x: f32[64, 32] @ P(a), w: f32[32, 128] @ auto, v: f32[128, 32] @ auto)
    -> f32[64, 32] @ P(a) on M {
  return tanh(x @ w) @ v
}
)";
  // The result's layout is written: enumerating its 13 layouts too made
  // this the suite's slowest test (113 s on 2 cores) for no new case.
  auto c = test::compile_text(text);
  sharding::Problem p = sharding::make_problem(
      *c->module, c->module->functions[static_cast<size_t>(test::function_index(*c, "f"))],
      builtin_profiles().front());
  // Every plan: both weights' layouts x each op's strategy x the result's.
  struct Seen {
    double time, peak;
  };
  std::vector<Seen> plans;
  sharding::Plan trial;
  test::for_each_plan(p, trial, [&] {
    sharding::PlanCost cost = sharding::evaluate(p, trial);
    // row_bytes: the memory the search's rows bound (no resharded copies).
    if (std::isfinite(cost.total_s())) plans.push_back({cost.total_s(), cost.row_bytes});
  });
  REQUIRE(!plans.empty());
  double least = HUGE_VAL, most = 0;
  for (const Seen &s : plans) {
    least = std::min(least, s.peak);
    most = std::max(most, s.peak);
  }
  for (double share : {0.1, 0.3, 0.6, 0.9}) {
    const double limit = least + share * (most - least);
    double best = HUGE_VAL;
    for (const Seen &s : plans)
      if (s.peak <= limit) best = std::min(best, s.time);
    INFO("limit " << limit << ", exhaustive optimum " << best);
    REQUIRE(std::isfinite(best));
    sharding::AutoOptions o;
    o.simplify = false;  // every op its own node, as enumerated
    o.memory_per_device = limit;
    o.gap = 1;               // accept the relaxation's plan whatever its gap
    o.fit_estimate = false;  // the rows alone: the relaxation against the enumeration
    sharding::AutoReport report;
    DiagnosticEngine diags;
    auto plan = sharding::auto_shard(p, o, report, diags);
    REQUIRE(plan.has_value());
    sharding::PlanCost cost = sharding::evaluate(p, *plan);
    CHECK(cost.row_bytes <= limit);
    // Each value is used once here, so the search's estimate is evaluate's
    // plus the tie-break of 1e-18 s per stored byte (under 1e-13 s here).
    const double tie_break = 1e-12;
    CHECK(std::abs(report.objective_s - cost.total_s()) <= tie_break);
    CHECK(cost.total_s() >= best);
    CHECK(report.bound_s <= best + tie_break);
    CHECK(report.gap >= 0);
    CHECK(report.solver.find("CBC") == std::string::npos);
  }
}

}  // namespace spmd
