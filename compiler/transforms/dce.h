// transforms/dce.h — dead code elimination that understands loop regions.
//
// Drops instructions whose results are never used (by a later instruction, a
// loop's next values, or a return), and the carried values of a loop that
// nothing after the loop reads and that the rest of the loop does not need.
// infer_variance leaves such code behind when it re-types a constant, the
// transforms when a derivative does not need part of a loop.
#pragma once

#include "ir/ir.h"

namespace spmd {

void eliminate_dead_code(ir::Function &function);

}  // namespace spmd
