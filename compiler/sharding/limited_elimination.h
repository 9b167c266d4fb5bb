// sharding/limited_elimination.h — the exact optimum under one memory sum, by
// elimination with Pareto labels.
//
// The Lagrangian relaxation (lagrangian.h) proves a bound no better than the
// LP relaxation's, and on a stack of alike blocks under a memory limit —
// a multiple-choice knapsack: each block replicated or split, each choice
// with its time and its bytes — that bound can sit a whole block's time
// below the optimum, which branch and bound (CBC) does not close: the
// blocks are interchangeable. Dynamic programming over the bytes does not
// care: eliminate_limited() runs the elimination of pairwise.h with, in
// every table entry, the Pareto set of (time, bytes) of the partial choices
// instead of their least time, and returns
//
//   min T(x)  subject to  sum_v weight[v][x_v] + constant <= limit
//
// exactly. With weight = the parameters' bytes + the bytes of one program
// point (as the relaxation weighs them) this is a relaxation of the memory
// limit — a plan that fits at every point fits at that one — so its value
// is a lower bound on the limited optimum, and when its choice fits at
// every point it is the limited optimum. Labels whose bytes, plus the least
// bytes the nodes still to come can add, exceed the limit are dropped, and
// so are those whose time, plus the least time still to come, exceeds
// `upper` (a plan already known). The work is bounded by a count of labels,
// not by the clock: past `max_labels` it gives up (nullopt).
#pragma once

#include <optional>
#include <vector>

#include "sharding/pairwise.h"

namespace spmd::sharding {

struct LimitedOptions {
  double limit = 0;
  double upper = 1e300;                 // only choices with T <= upper are sought
  double lambda = 0;                    // seconds per byte, for the bound on completions (any >= 0)
  size_t max_labels = 1000000;          // labels made, in all, before giving up
  size_t max_states = size_t{1} << 16;  // entries of one table
};

struct LimitedResult {
  /// False: no choice with T <= upper meets the limit (the optimum under
  /// the limit is above `upper`, or nothing meets it).
  bool found = false;
  std::vector<int> choice;  // the optimum, when found
  double objective = 0;     // its T
  double bytes = 0;         // its weighed bytes
  size_t labels = 0;        // the work done
};

/// The least T of a choice whose weighed bytes meet the limit (see above),
/// or nullopt when that took more than options.max_labels labels.
std::optional<LimitedResult> eliminate_limited(const PairwiseProblem &p,
                                               const std::vector<std::vector<double>> &weight,
                                               double constant, const LimitedOptions &options);

}  // namespace spmd::sharding
