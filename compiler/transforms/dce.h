// transforms/dce.h — dead code elimination that understands loop regions.
//
// Drops instructions whose results are never used (by a later instruction, a
// loop's next values, or a return). infer_variance leaves such code behind
// when it re-types a constant, and the printer should not show it.
#pragma once

#include "ir/ir.h"

namespace spmd {

void eliminate_dead_code(ir::Function &function);

}  // namespace spmd
