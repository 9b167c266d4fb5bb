// analysis/fusion.h — groups chains of elementwise ops into fused loops/kernels.
//
// Both backends run on a flat function (after inline_calls and simplify),
// one block at a time (the body, each loop body).
// plan_fusion walks its instructions in order and puts elementwise ops (unary,
// binary, comparisons, logical ops, where, cast) whose results have the same
// shape into one FusedGroup: the group becomes one loop nest on the CPU and
// one CUDA kernel on the GPU, computing every member per element, keeping
// intermediates in registers and writing only the values used outside the
// group. Scalar `constant`s read by a group are folded into it as literals.
//
// A group stays open across instructions that do not read its values (so
// `x * 2 + y` fuses even when the constant or a reshape of y sits between the
// ops); it is closed — emitted — just before the first instruction that
// reads one of its results, or when an elementwise op of another shape
// arrives. Emitted at its last member's place, a group only reads values
// defined earlier, and collectives keep their order, so the plan preserves the
// program's meaning.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace spmd::fusion {

/// True for the ops a fused loop can compute per element.
bool is_fusable(OpCode op);

struct FusedGroup {
  std::vector<size_t> members;       // instruction indices, in program order
  std::vector<ir::ValueId> inputs;   // values read from outside (constants excluded)
  std::vector<ir::ValueId> outputs;  // member results used after the group or returned
  Shape shape;                       // the iteration space: every member's result shape
};

struct Step {
  bool is_group = false;
  size_t index = 0;  // instruction index, or group index
};

struct FusionPlan {
  const std::vector<ir::Instr> *body = nullptr;  // the block planned (indices refer to it)
  std::vector<FusedGroup> groups;
  std::vector<Step> steps;            // what to emit, in order
  std::vector<bool> folded_constant;  // per instruction: a constant only groups read
  std::vector<int> group_of_instr;    // per instruction: its group or -1
  /// The scalar constants defined in the block, by value (what groups inline).
  std::unordered_map<ir::ValueId, const ir::Instr *> constant_def;
};

/// The step at which each instruction of the planned block runs (a group's
/// members all run at the group's step).
std::vector<int> step_positions(const FusionPlan &plan);

/// The plan of a function's body.
FusionPlan plan_fusion(const ir::Function &function);
/// The plan of one block of `function` (its body or a loop body) whose
/// results (returns or next values) are `live_out`. A loop inside the block
/// is one non-fusable step that reads everything its body reads. Without
/// `fuse` every elementwise op is a group of its own (`spmdc build --check-nan`).
FusionPlan plan_fusion(const ir::Function &function, const std::vector<ir::Instr> &body,
                       const std::vector<ir::ValueId> &live_out, bool fuse = true);

}  // namespace spmd::fusion
