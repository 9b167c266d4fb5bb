// sharding/pairwise.h — the choice problem of the sharding search, and two exact solvers.
//
// Choosing one candidate per node to minimise a sum of per-candidate costs
// and of costs on pairs of nodes (the resharding between a producer's layout
// and a consumer's requirement) is a pairwise problem:
//
//   minimise  sum_v unary[v][x_v]  +  sum_(u,v) pair[u,v][x_u][x_v]
//
// to_ilp() states it as Alpa's integer linear program (one-hot variables per
// node, edge variables with marginal rows, over classes of candidates that
// behave alike on an edge) for CBC (ilp.h); eliminate() solves it exactly by
// dynamic programming over the nodes in order — variable elimination, whose
// tables hold one entry per combination of the candidates of the nodes still
// needed — which is fast when few nodes are live at once (a chain, a residual
// stack) and gives up when a table would exceed `max_states`. An infinite
// cost forbids a candidate or a pair.
//
// A memory limit is stated over the same nodes (MemoryModel): what is
// stored at every point (the parameters) plus the most that is live at any
// one point must fit; add_memory_rows() states it as ILP rows and
// lagrangian.h bounds and solves the limited problem by elimination.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sharding/ilp.h"

namespace spmd::sharding {

struct PairwiseProblem {
  std::vector<std::vector<double>> unary;  // per node, per candidate
  struct Pair {
    int u = 0, v = 0;          // nodes, u < v
    std::vector<double> cost;  // unary[u].size() x unary[v].size(), row-major
  };
  std::vector<Pair> pairs;
};

/// The bytes per device a choice stores: `shared` at every program point
/// (the parameters) plus, at each point, the values live there; a plan fits
/// when shared + the largest point is at most `limit`.
///
/// A term's bytes (per candidate of its node) lie in one array, `pool`,
/// which the terms of every sum share: a value live at many points (a
/// training step's model has ~10^6 terms over ~2,000 points) stores its
/// bytes once, and a sum is read from two small arrays, not from a heap
/// vector per term.
struct MemoryModel {
  struct Term {
    int node = 0;         // a node with more than one candidate
    uint32_t offset = 0;  // its bytes: pool[offset + a] for candidate a
    uint32_t size = 0;    // the node's candidates
  };
  struct Sum {
    std::vector<Term> terms;
    double constant = 0;  // the bytes of nodes with one candidate
  };
  std::vector<double> pool;  // the terms' bytes
  Sum shared;
  std::vector<Sum> points;
  double limit = 0;

  /// A term of node `node` with `bytes` (per candidate), stored in the pool.
  Term term(int node, const std::vector<double> &bytes);
  /// Term t's bytes of candidate a.
  double bytes(const Term &t, size_t a) const { return pool[t.offset + a]; }
  /// Sum `sum` (shared or a point) for a choice of every node.
  double at(const Sum &sum, const std::vector<int> &choice) const {
    double total = sum.constant;
    for (const Term &t : sum.terms)
      total += pool[t.offset + static_cast<size_t>(choice[static_cast<size_t>(t.node)])];
    return total;
  }
  /// shared + the largest point, for a choice of every node.
  double peak(const std::vector<int> &choice) const;
  /// peak(choice) <= limit, stopping at the first point over it.
  bool fits(const std::vector<int> &choice) const;
};

/// The pairwise objective of a choice of every node.
double objective(const PairwiseProblem &p, const std::vector<int> &choice);

/// The ILP of `p`; variable first_var[v] + a is node v's candidate a (nodes
/// with one candidate have none: first_var = -1), and `constant` collects
/// what they contribute.
IlpProblem to_ilp(const PairwiseProblem &p, double scale, std::vector<int> &first_var,
                  double &constant);

/// At most how many variables to_ilp() makes of `p` (one per candidate of
/// a node with a choice, one per pair of candidates of each pair) — a size
/// for deciding whether CBC can be afforded, without building the ILP.
size_t ilp_variables_bound(const PairwiseProblem &p);

/// Adds `m`'s rows to the ILP of to_ilp() (first_var as it returned): one
/// continuous variable for the shared bytes, and per point shared + the
/// point's bytes <= the limit, all in units of `scale` bytes.
void add_memory_rows(IlpProblem &ilp, const MemoryModel &m, const std::vector<int> &first_var,
                     double scale);

struct Elimination {
  std::vector<int> choice;  // per node
  double objective = 0;
  size_t largest_table = 0;
};

/// A good choice found quickly, not proven optimal: from a start, nodes
/// move, one at a time in index order, to the candidate that is cheapest
/// given their neighbours' choices (iterated conditional modes) until no
/// move helps or `max_rounds` sweeps have run. Two starts — each node at its
/// cheapest candidate, and each at its first (the unsplit strategy) — and
/// the better result is kept. `objective` is that choice's objective
/// (infinite when none is finite).
Elimination local_search(const PairwiseProblem &p, int max_rounds = 20);
/// From a choice that fits `memory`, moves that make it cheaper and keep it
/// fitting, until none helps or `max_rounds` sweeps have run. A move takes
/// one node to another candidate and each of its neighbours to the
/// candidate cheapest for it then (a block move: a parameter stored split
/// needs its update split too, or the cost between them hides the gain).
/// The best move for each node in index order; the result fits.
Elimination local_search_within(const PairwiseProblem &p, const MemoryModel &memory,
                                std::vector<int> start, int max_rounds = 20);

/// A proven lower bound of the objective: each node's cheapest candidate and
/// each pair's cheapest entry, taken independently.
double lower_bound(const PairwiseProblem &p);

/// The exact optimum by eliminating nodes in index order, or nullopt when
/// some table would hold more than `max_states` entries (or no choice is
/// finite).
std::optional<Elimination> eliminate(const PairwiseProblem &p, size_t max_states);

}  // namespace spmd::sharding
