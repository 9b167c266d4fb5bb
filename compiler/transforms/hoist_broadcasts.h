// transforms/hoist_broadcasts.h — adds and subtractions compute before broadcasting.
//
// One canonical place for a broadcast around an add or a subtraction: after
// it. (Only `+` and `-`: moving a broadcast across a factor or a negation
// changes how the transpose rounds; see hoisted() in the .cpp.)
// An operand of an add or subtraction that only broadcasts a value — a broadcast_to, or a reshape
// or a sum over dimensions of size 1 that only adds or removes leading 1s, and chains of these — is
// read as that value, and the op is computed on the values before broadcasting, its result
// broadcast (or reshaped) to the op's shape:
//   `x + broadcast_to(x, (4, 4))` for a [1, 4] x  ->  `broadcast_to(x + x, (4, 4))`
//   `reshape(a, (4,)) + reshape(b, (4,))` for [1, 4] a, b  ->  `reshape(a + b, (4,))`
// It is done when that computes fewer elements, or when every operand only
// broadcasts; when the values before broadcasting already give the op's
// shape, the op reads them and nothing is added (`b + broadcast_to(s, (2, 6))`
// for a [2, 6] b is `b + s`). So `broadcast_to(a) + broadcast_to(b)`,
// `a + broadcast_to(b)` and `broadcast_to(a + b)` print the same, which
// transposing twice needs: the transpose of a broadcast is a sum, of a sum
// over one element a reshape, and a program transposed twice puts its
// broadcasts where the transposes left them (issue 10, seed 2006910).
//
// The values are the same bits: an elementwise op computes each element from
// the same operand elements either way; only a sum over one element (0 + x)
// turns a -0 into +0, where the reshape keeps -0. derive runs this just
// before rewrite_peepholes (whose common subexpressions then merge the ops it
// makes), on the function it derives from and on what it derives.
#pragma once

#include "ir/ir.h"

namespace spmd {

void hoist_broadcasts(const ir::Module &module, ir::Function &function);

}  // namespace spmd
