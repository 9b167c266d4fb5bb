// transforms/combine_collectives.h — one collective for many independent all-reduces.
//
// A derived gradient typically ends in one psum per parameter gradient, each a
// separate collective with its own latency. combine_collectives merges psums
// (and pmaxs, pmins) of the same op over the same axes into one combined
// collective, `g1, g2, g3 = psum((a, b, c), batch)`, when none of them needs
// another's result, as XLA's all-reduce combiner does; the runtimes reduce a
// combined collective as one packed buffer (CPU) or one grouped NCCL launch
// (CUDA), and `cost` counts one latency for it. Each element is reduced in the
// same order either way, so results do not change.
//
// Algorithm:
//   1. One pass in program order, one open bucket per (op, axes), each value
//      tagged with the open buckets it depends on. An all-reduce of at most
//      `threshold_bytes` joins the open bucket of its (op, axes) unless its
//      operands depend on that bucket or the total would pass the threshold
//      (then the bucket closes and a new one opens); larger ones stay alone.
//   2. Each bucket of two or more becomes one instruction at the place of its
//      last member, keeping the members' result ids; the instructions between
//      its first and last member that depend on a member's result move to just
//      after it (the members are independent, so none of them feeds a member).
//      Only that stretch of the block is rewritten (in place; the slots it
//      frees are removed once at the end), and per-value tables are shared by
//      all blocks, so the pass is linear in the program's size times the
//      number of distinct (op, axes) pairs.
// split_collectives undoes it (one all-reduce per operand); derive() splits
// before differentiating, so the JVP and transpose rules of a combined
// collective are those of its components, and combines the result.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace spmd {

struct CombineOptions {
  /// Largest combined collective, in bytes per device (a larger all-reduce is
  /// left alone); 0 combines nothing. XLA's default combiner limit is 30 MiB.
  int64_t threshold_bytes = int64_t{32} << 20;
};

/// Combines independent all-reduces of `f`, block by block: the function body
/// and every loop body on its own (a collective never moves into or out of a
/// loop; a loop is one instruction of its block that reads everything its body
/// reads). Returns how many instructions were merged away.
int combine_collectives(ir::Function &f, const CombineOptions &options = {});

/// Replaces every combined all-reduce of `f` (loop bodies included) by one
/// all-reduce per operand.
void split_collectives(ir::Function &f);

}  // namespace spmd
