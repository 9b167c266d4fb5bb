// transforms/unroll_loops.h — replaces chosen `for` loops by their iterations.
//
// Loops stay loops through every phase; unrolling is an optimisation the
// pipeline applies right after checking to the loops marked `[[unroll]]` and,
// on request (`--unroll N`, UnrollPolicy::max_trip_count), to loops of at most
// N iterations. Each iteration copies the body with fresh values, the loop
// index becomes an i32 constant, and each iteration's carried values feed the
// next. A loop that is not unrolled is copied as a loop (its body may hold
// loops that are); inside an unrolled loop that copy gets fresh values too.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace spmd {

struct UnrollPolicy {
  /// Loops with at most this many iterations are unrolled (0: only [[unroll]] ones).
  int64_t max_trip_count = 0;
};

/// True when `policy` unrolls some loop of the module.
bool unrolls_any(const ir::Module &module, const UnrollPolicy &policy);

void unroll_loops(ir::Module &module, const UnrollPolicy &policy);
void unroll_loops(ir::Function &function, const UnrollPolicy &policy);

}  // namespace spmd
