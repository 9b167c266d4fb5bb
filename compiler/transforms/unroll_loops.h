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
  /// For sharding (pipeline/prepare.h): every loop is unrolled except the
  /// loops left at the top level of the function with at least two
  /// iterations and no [[unroll]], which stay loops (the search gives their
  /// body one strategy for every iteration). Overrides max_trip_count.
  bool keep_top_level = false;
};

/// True when `policy` unrolls some loop of the module.
bool unrolls_any(const ir::Module &module, const UnrollPolicy &policy);

/// The instructions `function` has once `policy`'s loops are unrolled
/// (ir::unrolled_size; calls count 1): check it against
/// kMaxUnrolledInstructions before unrolling.
int64_t unrolled_size(const ir::Function &function, const UnrollPolicy &policy);

/// True when `loop`, at the top level of a function, stays a loop under
/// UnrollPolicy::keep_top_level (two or more iterations, no [[unroll]]).
bool kept_at_top_level(const ir::Instr &loop);

void unroll_loops(ir::Module &module, const UnrollPolicy &policy);
void unroll_loops(ir::Function &function, const UnrollPolicy &policy);

}  // namespace spmd
