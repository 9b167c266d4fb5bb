// sharding/shard.h — the sharding phase: a sharded function to an explicit shmap.
//
// shard() is `spmdc shard`: it picks the sharded function, prepares it
// (problem.h), chooses a plan — by propagation of the written specs
// (propagate.h), or with `automatic` by the ILP search (auto_shard.h) —
// prices it with the cost model of analysis/cost.h and lowers it to a shmap
// (lower_plan.h). The result module holds the mesh and that shmap, ready for
// ir::print_module; it checks with automatic pbroadcast insertion off and
// runs, differentiates, costs and builds like a hand-written program.
#pragma once

#include <optional>
#include <string>

#include "sharding/auto_shard.h"
#include "sharding/lower_plan.h"
#include "sharding/propagate.h"

namespace spmd::sharding {

struct ShardOptions {
  std::string function;  // the sharded function; empty = the only one
  bool automatic = false;
  bool strict = false;  // conflicts between written specs are errors
  AutoOptions search;   // --auto: memory limit, time limit
  HardwareProfile profile;
  std::string source_path;                 // for the emitted program's comment
  const SourceManager *sources = nullptr;  // to quote global ops in comments
};

struct ShardResult {
  ir::Module module;  // the mesh and the emitted shmap
  Problem problem;
  Plan plan;
  PlanCost cost;
  std::optional<AutoReport> search;  // set with ShardOptions::automatic
};

/// Index of the sharded function `name` (or the only one); reports and
/// returns -1 when there is none.
int find_sharded(const ir::Module &module, const std::string &name, DiagnosticEngine &diags);

/// The sharding phase; nullopt after reporting errors to `diags`.
std::optional<ShardResult> shard(const ir::Module &module, const ShardOptions &options,
                                 DiagnosticEngine &diags);

/// `spmdc check`: the sharded functions' written specs checked against the
/// rules (conflicts as warnings, or errors when `strict`). True when clean.
bool check_sharded_functions(const ir::Module &module, bool strict, DiagnosticEngine &diags);

}  // namespace spmd::sharding
