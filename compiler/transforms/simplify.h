// transforms/simplify.h — dead code, common subexpressions, trivial algebra.
//
// simplify rewrites a flat function (no calls; loops are simplified inside
// too, and code that does not depend on a loop is moved out of it) in three
// steps:
//   1. algebra: reshape/broadcast_to/transpose/cast that change nothing, double
//      negation, reshape of reshape, `x * 1`, `x + 0`, `x - 0` (when the result
//      type equals x's) are replaced by their operand; commutative ops get
//      their constant operand second;
//   2. common subexpressions: an instruction equal to an earlier one (op,
//      operands, attributes, result types) reuses its results — so repeated
//      pbroadcasts of one value become one, and a transposed program does one
//      psum of a sum instead of a sum of psums; an instruction moved out of a
//      loop (below) counts as earlier for the rest of the block the loop is in;
//   3. dead code: instructions whose results are never used are dropped.
// Every rewrite keeps types (dtype, shape and variance) exactly.
#pragma once

#include "ir/ir.h"

namespace spmd {

ir::Function simplify(const ir::Module &module, ir::Function function);

}  // namespace spmd
