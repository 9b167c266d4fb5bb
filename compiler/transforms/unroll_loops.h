// transforms/unroll_loops.h — replaces every static `for` loop by its iterations.
//
// Loops are typed as loops (middle/infer_variance.cpp gives each carried value
// one variance: the join over iterations), then unrolled here so that the
// transforms, the interpreter and the backends see straight-line code. Each
// iteration copies the body with fresh values, the loop counter becomes an
// i32 constant, and each iteration's carried values feed the next.
#pragma once

#include "ir/ir.h"

namespace spmd {

/// True when any function of the module has a loop.
bool has_loops(const ir::Module &module);

void unroll_loops(ir::Module &module);

}  // namespace spmd
