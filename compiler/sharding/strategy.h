// sharding/strategy.h — the ways one op can run on a mesh, with their costs.
//
// A Strategy picks mesh axes for the factors of an op's sharding rule
// (ops/sharding_rules.h) and, for ops linear in an operand, the partial sums
// that operand may carry through. From that follow the shardings the op
// needs of its operands, the shardings of its results (partial over the axes
// of its split Sum factors and the carried ones), the pmax/pmin a split
// Max/Min factor needs at once, and its cost per device: compute time (the
// flops of the local op, analysis/cost.h's conventions, at the profile's
// peak) plus that immediate communication.
#pragma once

#include <optional>
#include <vector>

#include "analysis/cost.h"
#include "ops/sharding_rules.h"
#include "sharding/budget.h"
#include "sharding/sharding.h"

namespace spmd::sharding {

/// A collective a strategy runs right after the op (pmax/pmin of a split max/min).
struct FinishStep {
  OpCode op = OpCode::Pmax;
  std::vector<int> axes;
};

struct Strategy {
  std::vector<std::vector<int>> factor_axes;  // per factor of the rule
  AxisSet carried;                            // partial sums carried through linear operands
  std::vector<Sharding> operands;             // what the op needs
  std::vector<Sharding> results;              // what it produces (after finish steps)
  std::vector<FinishStep> finish;
  double flops = 0;      // per device
  double compute_s = 0;  // flops / peak
  double finish_s = 0;   // the finish steps' communication
  double cost() const { return compute_s + finish_s; }
};

/// The op one strategy is for: its rule and global types.
struct OpSignature {
  OpCode op = OpCode::Constant;
  ShardingRule rule;
  std::vector<Type> operands;  // global types (variance empty)
  std::vector<Type> results;
  Attrs attrs;
  /// Per operand and per result (empty: none): true for a value an elementwise
  /// op's fused loop (analysis/fusion.h, decided on the global shapes) keeps in
  /// registers — made and read inside one group — so the op neither reads nor
  /// writes it in memory and its bytes do not count in the op's time.
  std::vector<bool> fused_operands, fused_results;
};

struct StrategyOptions {
  /// Also list strategies where linear operands carry partial sums through.
  bool carry_partials = true;
  /// List the axes splitting one factor (or dimension) in every order, not
  /// only in mesh order.
  bool all_axis_orders = true;
  /// At most this many strategies per op (and candidate layouts per `auto`
  /// parameter or result): the enumeration stops there (sharding/budget.h).
  size_t max_candidates = kMaxStrategiesPerOp;
  /// For `shard --auto`: the enumeration throws OutOfTime past it.
  Deadline deadline;
};

/// The strategy with these factor axes and carried partial axes, or nullopt
/// when it is not valid (a factor's size not divisible by its axes, an axis
/// used twice, a carried axis that a factor uses, linearity violated).
std::optional<Strategy> make_strategy(const OpSignature &sig, const rt::Mesh &mesh,
                                      const HardwareProfile &profile,
                                      std::vector<std::vector<int>> factor_axes, AxisSet carried,
                                      const std::vector<bool> &carriers);

/// Every valid strategy of the op (the unsplit one first).
std::vector<Strategy> enumerate_strategies(const OpSignature &sig, const rt::Mesh &mesh,
                                           const HardwareProfile &profile,
                                           const StrategyOptions &options = {});

/// `i->data, j->model (sum)`-style description of a strategy's factor axes,
/// factors named by `names` (e.g. einsum labels; "d0", "d1", ... otherwise).
std::string strategy_str(const Strategy &s, const OpSignature &sig, const rt::Mesh &mesh);

}  // namespace spmd::sharding
