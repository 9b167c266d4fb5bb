// sharding/lower_plan.h — a sharding plan as an explicit shmap program.
//
// lower_plan writes the shmap that runs a sharded function the way `plan`
// says:
//   1. the signature: every parameter and result with its chosen spec and
//      global type;
//   2. each op of the flat global function on the local blocks, its operands
//      first resharded to what its strategy needs (sharding/connect.h; one
//      reshard per value and target, reused), attributes made local (shapes
//      of reshape, broadcast_to, slices, constants), a split iota offset by
//      its block, a split max/min completed by pmax/pmin; `constrain` becomes
//      the reshard it asks for;
//   3. the returned values resharded to the result specs.
// Every collective carries a comment naming the global op it serves. Then
// infer_variance types the body and places the pbroadcasts, which stay in
// the program as written ones: the function is printed with
// [[no_auto_pbroadcast]] and checks with automatic insertion off. A problem
// here is a compiler bug (std::logic_error).
#pragma once

#include <string>

#include "sharding/problem.h"
#include "support/source.h"

namespace spmd::sharding {

struct LowerPlanOptions {
  std::string name;                        // the shmap's name (default: the sharded function's)
  std::string comment;                     // printed above the function
  const SourceManager *sources = nullptr;  // to quote the global ops in comments
};

/// A module holding the mesh and the one emitted shmap.
ir::Module lower_plan(Problem &p, const Plan &plan, const LowerPlanOptions &options = {});

}  // namespace spmd::sharding
