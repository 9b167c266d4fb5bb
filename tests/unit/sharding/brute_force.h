// brute_force.h — enumeration of every choice of a small PairwiseProblem, the
// independent reference the search tests (reduce, relaxation, elimination)
// compare against.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "sharding/pairwise.h"

namespace spmd::test {

/// Calls `visit` with every choice of candidates of `p` (one index per node).
inline void each_choice(const sharding::PairwiseProblem &p,
                        const std::function<void(const std::vector<int> &)> &visit) {
  std::vector<int> choice(p.unary.size(), 0);
  std::function<void(size_t)> go = [&](size_t v) {
    if (v == choice.size()) return visit(choice);
    for (size_t a = 0; a < p.unary[v].size(); ++a) {
      choice[v] = static_cast<int>(a);
      go(v + 1);
    }
  };
  go(0);
}

}  // namespace spmd::test
