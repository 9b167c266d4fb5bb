// sharding/lagrangian.h — the memory-limited choice problem by Lagrangian relaxation.
//
// Minimising a pairwise objective T(x) (pairwise.h) subject to a memory
// limit (a MemoryModel: shared(x) + max_p point_p(x) <= L) is hard in
// general, but its relaxation is as easy as the unlimited problem: for any
// weights pi_p >= 0 summing to 1 over the points and any lambda >= 0,
//
//   g(lambda, pi) = min_x  T(x) + lambda * (shared(x) + sum_p pi_p point_p(x) - L)
//
// is a lower bound on the limited optimum — for a plan x that fits, the
// weighted average of the points is at most their maximum, so the penalty
// is <= 0 and T(x) >= the bracket >= g — and its minimisation is the
// unlimited problem with lambda * bytes added to each candidate's cost,
// solved exactly by eliminate(). relax_memory() picks pi as the point where
// a plan peaks, maximises g over lambda by the hull (Dinkelbach) search —
// each new lambda is where the lines of the cheapest plan that does not fit
// and the smallest one that does cross, until no plan lies below both —
// and keeps every plan it meets that fits, plus the plans that take the
// first nodes from one side of the threshold and the rest from the other.
// The best of those is an upper bound; its distance to the largest g is the
// proven gap. When even the smallest plan (lambda -> infinity) exceeds the
// limit under some pi, nothing fits: the weighted average is a lower bound
// on every plan's peak.
//
// When the elimination gives up (too many choices live at once: a training
// step's graph is no chain), the same hull search goes on with
// local_search() as its minimiser. Its plans are not minima, so they prove
// no bound and no infeasibility, but the search still walks lambda to the
// limit and keeps the cheapest plan that fits: a plan in hand where CBC
// cannot finish in time.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "sharding/pairwise.h"

namespace spmd::sharding {

struct RelaxOptions {
  double gap = 0.01;  // stop once (best - bound) <= gap * best
  /// No new elimination starts after this many seconds of CPU time, except
  /// the first two (the unlimited optimum and the smallest plan), which
  /// always run.
  double time_limit_s = 10;
  size_t max_states = 1 << 16;  // eliminate()'s table limit
  /// When the relaxation leaves a gap over `gap`: the labels the exact
  /// elimination under one point (limited_elimination.h) may make, in all.
  size_t max_labels = 2000000;
};

struct Relaxation {
  std::optional<Elimination> best;  // the cheapest choice found that fits (objective: T)
  double bound = 0;                 // proven: no choice that fits costs less
  bool infeasible = false;          // proven: no choice fits
  bool too_wide = false;            // eliminate() gave up (a table over max_states)
  /// eliminate() gave up, and the hull search went on with local_search()
  /// (pairwise.h) for each minimisation: `best` fits but `bound` is only
  /// lower_bound() of the time-only problem.
  bool heuristic = false;
  int eliminations = 0;
  int local_searches = 0;        // minimisations by local_search()
  int exact_runs = 0;            // eliminations with labels (limited_elimination.h)
  size_t labels = 0;             // made by them
  bool labels_exceeded = false;  // one gave up at max_labels
  /// (best - bound) / best: how far above the optimum `best` may be.
  double gap() const;

  /// Every choice that was `best` in turn, the last one `best` (auto_shard.h
  /// prices them by evaluate(), which past the copy-node budget can order
  /// them otherwise than T).
  std::vector<std::vector<int>> bests;
};

/// The minimisations a relaxation ran, for later relaxations of the same
/// problem and memory sums under another limit (auto_shard.h's searches
/// after the first lower the limit only): each minimisation depends on the
/// points weighed, lambda and the time's weight, not on the limit, and the
/// hull search of a lower limit retraces the first steps of the last one.
/// A minimisation found here is taken as it is (with the count of the
/// eliminations and local searches it ran), not run again.
struct RelaxMemo {
  struct Run {
    bool eliminated = false;  // an elimination ran (and gave up when `too_wide`)
    bool too_wide = false;
    bool local = false;  // a local search ran
    Elimination e;
  };
  /// (points, lambda, time weight, whether eliminate() had given up before)
  using Key = std::tuple<std::vector<int>, double, double, bool>;
  std::map<Key, Run> runs;
};

/// The relaxation of `p` under `memory`; an unlimited optimum that fits is
/// returned as optimal at once. With `memo`, minimisations recorded there
/// (by earlier calls on the same p and memory sums) are not run again, and
/// new ones are recorded.
Relaxation relax_memory(const PairwiseProblem &p, const MemoryModel &memory,
                        const RelaxOptions &options, RelaxMemo *memo = nullptr);

}  // namespace spmd::sharding
