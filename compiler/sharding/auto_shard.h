// sharding/auto_shard.h — the automatic search: Alpa's intra-operator ILP.
//
// auto_shard chooses a strategy for every op and a layout for every `auto`
// parameter and result by minimising the estimated time per device —
// compute + communication inside ops + resharding between them, the cost
// model of analysis/cost.h under a hardware profile — optionally under a
// per-device memory limit, as an integer linear program solved by CBC
// (ilp.h):
//
//   variables  x[n][s] in {0,1}: node n (a parameter, an op, an `auto`
//              result) takes candidate s; sum_s x[n][s] = 1.
//              e[u][a][b] >= 0 for each use u of a value whose producer and
//              consumer both have a choice: the producer's layout class a
//              meets the consumer's required class b;
//              sum_b e[u][a][b] = sum of x[producer][s] with layout a,
//              sum_a e[u][a][b] = sum of x[consumer][t] requiring b
//              (with one-hot x these fix e = 1 on the one pair in use).
//   objective  sum x[n][s] * cost(n, s)  +  sum e[u][a][b] * reshard(a -> b)
//              (a parameter's cost is 1e-18 s per byte of its block: only a
//              tie-break towards storing less among plans of equal time)
//   memory     sum of parameter blocks + the blocks of the values live at
//              each program point <= the limit (Alpa's liveness constraint).
//
// Graph simplifications keep it small (Alpa's): an elementwise op with one
// operand that is not a constant follows its operand's producer (its
// strategy is the cheapest one for each of the producer's candidates, folded
// into the producer's costs), strategies of one node with the same layouts
// are merged (the cheapest kept), constants take any layout for free, and a
// use whose producer or consumer has one candidate is a linear term, not an
// edge variable; then the exact reductions of reduce.h (dominated
// candidates, leaves joined, series nodes minimised out) shrink what every
// solver sees. Without a memory limit the exact elimination of pairwise.h
// answers while its tables stay small. Under a memory limit, the Lagrangian
// relaxation of lagrangian.h gives a plan that fits and a proven lower
// bound (closed further by limited_elimination.h's Pareto labels); when
// their gap is within `gap` that plan is the answer, else block moves
// (block_search.h: a parameter with everything tied to it) improve it and
// CBC starts from it — if the time left can cover CBC's root LP, which does
// not check the clock (twice over when the block moves improved the plan)
// — and the better plan and bound stand. Past the time
// limit the best plan found is used and the report states its gap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sharding/problem.h"
#include "support/diagnostics.h"

namespace spmd::sharding {

struct AutoOptions {
  std::optional<double> memory_per_device;  // bytes
  double time_limit_s = 10;  // for the whole search, in CPU time (support/cpu_time.h)
  /// When the search started (process CPU seconds), if before auto_shard was
  /// called: the preparation (make_problem) counts against the time limit.
  std::optional<double> start_cpu_s;
  /// Under a memory limit: accept a plan proven within this fraction of the
  /// optimum without starting CBC.
  double gap = 0.01;
  bool simplify = true;  // fold elementwise ops into producers, merge strategies
  /// Solve by elimination (pairwise.h) when no table exceeds this many
  /// entries (and, with a memory limit, when its plan fits); 0 always uses CBC.
  size_t elimination_states = size_t{1} << 16;
  /// At most this many copy nodes (auto_shard.cpp): a reshard that several
  /// consumers can need, priced once (as lower_plan emits it). Beyond, each
  /// consumer pays for it, and the search's objective only bounds evaluate().
  size_t max_copy_nodes = 64;
  /// Under a memory limit, improve the relaxation's plan by block moves
  /// (block_search.h: a parameter with everything tied to it) before CBC.
  bool block_moves = true;
  /// Under a memory limit, bound the estimate (evaluate()'s peak_bytes): while
  /// the search's plan is estimated over the limit, search again with the
  /// memory rows' limit lowered (auto_shard.cpp, fit_estimate). False: the
  /// rows alone bound the plan (PlanCost::row_bytes; the solvers' tests).
  bool fit_estimate = true;
  /// Moves priced by evaluate() from the search's plan (polish.h), where its
  /// plan is not proven optimal for evaluate()'s own sum.
  bool polish = true;
  /// Tests: receives every complete plan the search produced on its way
  /// that the answer was chosen from (auto_shard.cpp, best_by_evaluate).
  std::vector<Plan> *seen_plans = nullptr;
};

struct AutoReport {
  int ops = 0;           // instructions of the flat function
  int choice_nodes = 0;  // nodes with a variable (after simplification)
  int followers = 0;     // ops folded into their producers
  int copy_nodes = 0;    // "value v's copy in layout s exists" nodes (auto_shard.cpp)
  /// More than AutoOptions::max_copy_nodes were needed: this many reshards
  /// two consumers could share were priced once per consumer instead, and
  /// objective_s is an upper bound of evaluate() (0: one objective).
  int shared_per_group = 0;
  int reduced_nodes = 0;  // nodes with a choice after reduce.h's reductions
  int reduced_pairs = 0;  // pairs of nodes left with a cost between them
  int variables = 0, rows = 0;
  double build_seconds = 0;   // preparing the problem (CPU time)
  double reduce_seconds = 0;  // reduce.h (CPU time; part of solve_seconds)
  double solve_seconds = 0;   // reductions, eliminations, relaxation, CBC (CPU time)
  int eliminations = 0;       // dynamic programs the relaxation ran
  int exact_runs = 0;         // and eliminations with labels (limited_elimination.h)
  int block_moves = 0;        // block moves made (block_search.h)
  std::string solver;         // "dynamic program", "Lagrangian relaxation ...", "CBC", ...
  bool optimal = false;       // proven optimal
  double objective_s = 0;     // the plan's estimate (see plans_compared)
  double bound_s = 0;         // the proven lower bound (relaxation or CBC)
  double gap = 0;             // (objective - bound) / objective
  /// Under a memory limit: the searches run (fit_estimate) and the memory
  /// rows' limit of the last (the limit, or lower where a plan's estimate was
  /// over it). The status, bound and gap are the last search's.
  int memory_rounds = 0;
  double rows_limit = 0;
  std::string status;  // one line for humans

  /// Complete plans the search produced that best_by_evaluate (auto_shard.cpp)
  /// priced by evaluate(), and moves its polish (polish.h) made; 0 when the
  /// search's plan was proven optimal for evaluate()'s sum (objective_s is
  /// then the ILP's objective, which is evaluate()'s total plus the
  /// parameters' tie-break); otherwise objective_s is evaluate()'s total of
  /// the answer, while bound_s and gap stay the search's own — past the
  /// copy-node budget, of its per-consumer objective (an upper bound of
  /// evaluate(), so bound_s is no proven bound of evaluate()'s optimum).
  int plans_compared = 0;
  int polish_moves = 0;
};

/// The cheapest plan, or nullopt after reporting (memory limit infeasible,
/// no solution within the time limit).
std::optional<Plan> auto_shard(Problem &p, const AutoOptions &options, AutoReport &report,
                               DiagnosticEngine &diags);

}  // namespace spmd::sharding
