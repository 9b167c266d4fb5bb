// sharding/explain.h — why a plan looks the way it does (`spmdc shard --explain`).
//
// explain() prints, for a chosen plan:
//   * the search (status, time, size of the ILP) when it ran;
//   * every parameter and result: its layout, written or chosen;
//   * every op (constants and the elementwise ops folded into their
//     producers included): its strategy, its cost (compute, communication
//     inside the op, the reshards of its operands), and the best rejected
//     alternative — the cheapest other strategy with every other choice kept
//     — and why it lost: by how much time, or that it needs more memory than
//     the limit;
//   * the plan's total estimate next to two baselines priced by the same
//     model: pure data parallelism (every `auto` parameter replicated, the
//     written specs kept) and pure replication (everything replicated).
#pragma once

#include <optional>
#include <string>

#include "sharding/auto_shard.h"
#include "sharding/problem.h"
#include "support/source.h"

namespace spmd::sharding {

struct Baselines {
  PlanCost pure_dp;
  PlanCost replicated;
};

/// The two baseline plans of explain(): every `auto` parameter replicated
/// and the rest propagated from the written specs (pure DP; nullopt when
/// propagation fails), and every `auto` value replicated with every op
/// unsplit.
struct BaselinePlans {
  std::optional<Plan> pure_dp;
  Plan replicated;
};
BaselinePlans baseline_plans(Problem &p);

/// The two baseline plans of explain(), priced by evaluate().
Baselines baselines(Problem &p);

/// How result k of `f` got its layout, for reports: `like w` for a result
/// declared `@ like(w)`, else `chosen` (auto) or `written`.
std::string result_origin(const ir::Function &f, size_t k);

std::string explain(Problem &p, const Plan &plan, const std::optional<AutoReport> &search,
                    const std::optional<double> &memory_limit, const SourceManager *sources);

}  // namespace spmd::sharding
