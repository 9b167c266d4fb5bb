// interp/fused_group.h — running a fused group of elementwise ops a tile at a time.
//
// Internal to the interpreter. The interpreter groups elementwise chains with
// the backend's own fusion plan (analysis/fusion.h), so `spmdc run` fuses
// exactly what `spmdc build` fuses. A group is evaluated over its iteration
// space in tiles of a thousand elements: each member runs its runtime
// kernel (rt::unary_span, binary_span, select_span, cast_span — the per-element
// code of the tensor kernels) on the tile, reading earlier members' tiles from
// small cache-resident buffers, and only the group's outputs are written to
// full tensors. Each element goes through the same operations in the same
// order as unfused, so the results are the same bits.
#pragma once

#include <vector>

#include "analysis/fusion.h"
#include "ir/ir.h"
#include "spmdrt/tensor.h"

namespace spmd::interp::detail {

/// Evaluates `group` of the block `body` of `f` (its body or a loop body).
/// `env` holds every value the group reads from outside (indexed by ValueId);
/// returns the tensors of group.outputs, in order.
std::vector<rt::Tensor> eval_fused_group(const ir::Function &f, const std::vector<ir::Instr> &body,
                                         const fusion::FusedGroup &group,
                                         const std::vector<rt::Tensor> &env);

}  // namespace spmd::interp::detail
