// sharding/reduce.h — exact simplifications of the choice problem before it is solved.
//
// Alpa shrinks its ILP before handing it to a solver; reduce() does the same
// on the pairwise problem (pairwise.h) and its memory model, so that the
// elimination, the Lagrangian relaxation and CBC all see the smaller
// problem. Repeated until nothing changes:
//
//   1. Dominated and identical candidates go: candidate a of a node is
//      dropped when another candidate b costs no more on the node, no more
//      on every pair with every candidate of the other node, and stores no
//      more bytes in every memory sum (of two identical ones the first
//      stays). Any choice with a is then no worse with b.
//   2. A node with one candidate is a constant: its pairs become costs on
//      its neighbours, its bytes constants of the memory sums.
//   3. A leaf (a node with one neighbour, e.g. a weight read by one matmul)
//      joins its neighbour: each candidate c of the neighbour is paired
//      with the leaf's candidates that can be best for it — without memory
//      terms the cheapest, with them every one not beaten in both cost and
//      bytes (the Pareto set) — and the pairs are the neighbour's new
//      candidates (skipped when that would make it more than 4x wider).
//   4. A node without memory terms between two neighbours (series) is
//      minimised out: a pair on its neighbours costs, for each of their
//      candidates, the node's cheapest way between them.
//
// Every reduced choice y expands to a choice of the original nodes with
// the same objective and the same bytes in every memory sum, and every
// original choice is matched by a reduced one no more expensive and no
// larger (1 keeps a candidate at least as good, 3 and 4 keep the best
// ones). So the optimum, with or without a memory limit, is unchanged, and
// expanding a reduced optimum gives an original optimum. The surviving
// nodes keep their order (elimination's order); constants from removed
// nodes are added to the first node's costs.
#pragma once

#include <optional>
#include <vector>

#include "sharding/pairwise.h"

namespace spmd::sharding {

struct Reduced {
  PairwiseProblem problem;
  std::optional<MemoryModel> memory;  // on the reduced nodes, when one was given
  int removed_candidates = 0;         // dropped as dominated or identical (1)
  int joined_leaves = 0;              // leaves joined into their neighbour (3)
  int series_removed = 0;             // series nodes minimised out (4)

  /// The choice of every original node that reduced choice `choice` stands for.
  std::vector<int> expand(const std::vector<int> &choice) const;

  // How expand() works: every candidate has an id; the original node v's
  // candidate a has id original_id[v] + a, a joined candidate's children
  // are the ids it stands for, and a series node's choice is read from a
  // table over its neighbours' candidate ids (in reverse order of removal).
  struct Series {
    std::vector<int> u_ids, w_ids;  // the neighbours' candidates when it went
    std::vector<int> best;          // the node's candidate id per (u, w), row-major
  };
  std::vector<int> original_id;  // per original node: its first candidate's id (and the end)
  std::vector<std::vector<int>> children;  // per id
  std::vector<int> fixed_ids;              // nodes removed with one candidate
  std::vector<Series> series;
  std::vector<std::vector<int>> node_ids;  // per reduced node: its candidates' ids
};

/// The reduced problem of `p` (with `memory`'s sums, when given).
Reduced reduce(const PairwiseProblem &p, const MemoryModel *memory);

}  // namespace spmd::sharding
