// analysis/checkpoint_loops.h — the loops of an entry function that
// --checkpoint-dir / --resume can save and restore (spmdrt/checkpoint.h).
//
// A checkpointable loop is a `for` at the top level of a shmap's or sharded
// function's body. Its fingerprint hashes the function's printed IR (every
// --set size is in its shapes and constants) with that loop's trip count left
// out, and the mesh: a checkpoint resumes only the same program on the same
// mesh and sizes, except that the loop may run for more (or fewer) steps.
// `spmdc run` and `spmdc build` compute it from the same checked module
// (the backend before its prepare-for-codegen script), so an executable can
// resume a checkpoint of `spmdc run` and the other way round.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "spmdrt/checkpoint.h"

namespace spmd::analysis {

/// The top-level loops of `f`, in program order.
std::vector<rt::CheckpointLoop> checkpoint_loops(const ir::Module &module, const ir::Function &f);

/// "(data: 2, model: 4)": the mesh as a checkpoint's header names it.
std::string checkpoint_mesh(const rt::Mesh &mesh);

}  // namespace spmd::analysis
