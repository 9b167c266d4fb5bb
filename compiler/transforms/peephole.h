// transforms/peephole.h — local rewrites that undo what transposing leaves behind.
//
// Transposing a transpose gives the original function back mathematically,
// but some transpose rules, applied twice, come back as a different spelling
// of the same op: `a - b` as `u = -b; a + u`, a concat as zero pads added up,
// `where(c, a, b)` as two selects against zero added up. derive() runs this
// pass on the function it derives from and on what it derives, so that
// transposing twice gives the same program, op for op (the round-trip
// property test checks it), and so derived programs read like hand-written
// ones. Each rewrite computes the same values (bit for bit, but for the sign
// of a zero that an added zero pad or select turned into +0):
//   * `x + -y` and `-y + x` become `x - y` (of `-a + -b`, the negation
//     nothing else reads goes; when neither is read elsewhere, the sum
//     becomes `-(a + b)`, and `n + n` of `n = -a` read only there
//     `-(a + a)`); `x - -y` becomes `x + y`; `x - (a - b)` becomes
//     `x + (b - a)` and `-(a - b)` becomes `b - a` when nothing else reads
//     `a - b`; `-a - b` becomes `-(a + b)` when nothing else reads `-a`
//     (transposing twice gives `-a - b` and `-b - a`, one sum, so);
//   * an operand of an elementwise op (binary, comparison, logical, where)
//     that is a broadcast_to, or a reshape (or a sum over dimensions of
//     size 1) that only adds or removes leading 1s, is
//     replaced by its source when NumPy broadcasting gives the same shape;
//     likewise broadcast_to of such a reshape or of a broadcast_to;
//   * a sum of zero pads (stride 1) that tile the result along one
//     dimension becomes the concat of the padded values;
//   * `where(c, 0, a) + where(c, b, 0)` becomes `where(c, b, a)`;
//   * a tree of adds of one value x and of such pieces (zero pads tiling a
//     dimension, or the two selects) becomes x + the concat (the select):
//     each element is x plus one piece plus zeros; likewise with x
//     subtracted (`(where(c, 0, a) - x) + where(c, b, 0)` becomes
//     `where(c, b, a) - x`);
//   * `x[s] + y[s]` and `x[s] - y[s]` (the same slice of arrays of one
//     shape, read only there) become `(x + y)[s]`, `(x - y)[s]`: the slices
//     of the sum are the sums of the slices;
//   * `dynamic_update_slice(u, dynamic_slice(u, i) + y, i)` where
//     `u = dynamic_update_slice(x, 0, i)` becomes
//     `dynamic_update_slice(x, y, i)` (a block zeroed, then added to), and
//     `dynamic_update_slice(x, dynamic_slice(x, i), i)` becomes x;
//   * `dynamic_update_slice(a, dynamic_slice(a, i) + y, i)` plus
//     `dynamic_update_slice(x, 0, i)` becomes `a + dynamic_update_slice(x, y, i)`
//     (in every element one of the two adds a zero);
//   * a slice's limit becomes one step past the last element it selects,
//     capped by the dimension (`x[0:5:2]` of 6 is `x[::2]`, as written).
// derive runs hoist_broadcasts just before this pass: it moves broadcasts out
// of adds and subtractions (`x + broadcast_to(x)` is `broadcast_to(x + x)`).
// An instruction that a rewrite made equal to an earlier one (op, operands,
// attributes, result type) reads that one instead. A rewrite is kept only
// when the rewritten instruction has exactly the original's result type
// (dtype, shape, variance). Dead code is removed.
#pragma once

#include "ir/ir.h"

namespace spmd {

void rewrite_peepholes(const ir::Module &module, ir::Function &function);

}  // namespace spmd
