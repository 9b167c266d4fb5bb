// pipeline/prepare.h — the scripts that flatten a checked function for the
// phases that want one straight body (see step.h for how steps run):
//
//   prepare-for-codegen (`spmdc build`, backend/backend.h), per shmap:
//     inline_calls         every call inlined;
//     simplify             dead code, CSE, trivial algebra — exactly as the
//                          derive script does, so the executable computes
//                          what `spmdc run` computes on the same op sequence;
//     combine_collectives  independent all-reduces (all-gathers,
//                          reduce-scatters) over the same axes combined into
//                          one collective (the same bits, one launch).
//
//   flatten-for-sharding (`spmdc shard`, sharding/problem.h), per sharded
//   function:
//     inline_calls         every call inlined;
//     unroll_loops         every loop unrolled except those at the top level
//                          with two or more iterations and no [[unroll]]:
//                          they stay loops, and the search gives their body
//                          one strategy for every iteration, each carried
//                          value one layout (sharding/problem.h);
//     simplify             as above.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace spmd {

/// The steps of each script, in order (for `--emit`).
const std::vector<std::string> &prepare_for_codegen_steps();
const std::vector<std::string> &flatten_for_sharding_steps();

/// Every shmap of `module`, in order, prepared for code generation; stops
/// after step `stop_after` when it is given (`spmdc build --emit STEP`).
std::vector<ir::Function> prepare_for_codegen(const ir::Module &module,
                                              const std::string &stop_after = {});

/// `function` (a sharded function of `module`) as one flat body; stops after
/// step `stop_after` when it is given (`spmdc shard --emit STEP`).
ir::Function flatten_for_sharding(const ir::Module &module, const ir::Function &function,
                                  const std::string &stop_after = {});

}  // namespace spmd
