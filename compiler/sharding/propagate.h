// sharding/propagate.h — completing written specs by propagation (no search).
//
// propagate() makes a plan from the specs the user wrote, the way the ONNX
// formalism infers missing specs and GSPMD propagates them:
//   1. values with a written spec are known: parameters, `constrain`
//      results, and returned values whose result spec is written;
//   2. sweeps forward and backward over the ops: the known operands and
//      results of an op fix the mesh axes of the factors their dimensions
//      map to (ops/sharding_rules.h); an unknown operand or result all of
//      whose split-able dimensions have a fixed factor becomes known. Where
//      two known values disagree on a factor, the first (operands before
//      results) wins and the other will be resharded;
//   3. when the sweeps stop with unknown values, the first op (in program
//      order) that has a known value leaves its open factors unsplit, and
//      the sweeps resume; `auto` values that no written spec reaches are an
//      error (`unresolved-auto`) listing them;
//   4. each op, in program order, takes its cheapest strategy given the
//      layouts its operands arrive in and the layouts its results should
//      have (reshards, compute, pmax/pmin; analysis/cost.h's model).
// Conflicts — an op whose strategy needs an operand, result or returned
// value moved between devices (all_gather, all_to_all) because two written
// requirements disagree — are reported as `sharding-conflict` diagnostics
// at the op, naming the rule and where each requirement comes from:
// warnings by default (a reshard is inserted), errors with `strict`.
#pragma once

#include <optional>

#include "sharding/problem.h"
#include "support/diagnostics.h"

namespace spmd::sharding {

struct PropagateOptions {
  /// How conflicts are reported: not at all, as warnings, or as errors (--strict).
  enum class Conflicts { Silent, Warn, Error } conflicts = Conflicts::Silent;
  /// Report `auto` values no written spec reaches (false: leave them unsplit).
  bool require_resolved = true;
  /// Start from every `auto` parameter replicated (explain.h's pure-DP baseline).
  bool replicate_auto = false;
};

/// The plan propagation gives, or nullopt after reporting errors.
std::optional<Plan> propagate(Problem &p, const PropagateOptions &options, DiagnosticEngine &diags);

/// True when the plan from `have` to `need` moves data between devices
/// other than completing partial sums (all_gather or all_to_all).
bool reshard_moves_data(Problem &p, ir::ValueId v, const Sharding &have, const Sharding &need);

}  // namespace spmd::sharding
