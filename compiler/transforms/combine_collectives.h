// transforms/combine_collectives.h — one collective for many independent ones.
//
// A derived gradient typically ends in one psum per parameter gradient, each a
// separate collective with its own latency; an FSDP/ZeRO-3 program gathers
// every parameter with its own all_gather and its gradient reduce-scatters
// each one with its own psum_scatter. combine_collectives merges collectives
// of the same op over the same axes (all_gather, all_gather_invariant and
// psum_scatter: also along the same dimension, tiled alike) into one combined
// collective, `g1, g2, g3 = psum((a, b, c), batch)`,
// `w1, w2 = all_gather((s1, s2), data)`, when none of them needs another's
// result, as XLA's all-reduce, all-gather and reduce-scatter combiners do; the
// runtimes run a combined collective on one packed buffer (CPU) or as one
// grouped NCCL launch (CUDA), and `cost` counts one latency for it. Each
// element is moved and reduced as by its own collective, so results do not
// change.
//
// Algorithm:
//   1. One pass in program order, one open bucket per kind (op, axes, and
//      dimension and tiling for gathers and scatters), each value tagged with
//      the open buckets it depends on. A collective of at most
//      `threshold_bytes` (its size as `spmdc cost` counts it: the operands'
//      bytes, an all_gather's gathered bytes) joins the open bucket of its kind
//      unless its operands depend on that bucket or the total would pass the
//      threshold (then the bucket closes and a new one opens); larger ones
//      stay alone.
//   2. Each bucket of two or more becomes one instruction at the place of its
//      last member, keeping the members' result ids; the instructions between
//      its first and last member that depend on a member's result move to just
//      after it (the members are independent, so none of them feeds a member).
//      Only that stretch of the block is rewritten (in place; the slots it
//      frees are removed once at the end), and per-value tables are shared by
//      all blocks, so the pass is linear in the program's size times the
//      number of distinct kinds.
// split_collectives undoes it (one collective per operand); derive() splits
// before differentiating, so the JVP and transpose rules of a combined
// collective are those of its components, and combines the result (a
// combined all_gather transposes to a combined psum_scatter and back).
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace spmd {

struct CombineOptions {
  /// Largest combined collective, in bytes per device (a larger collective is
  /// left alone); 0 combines nothing. XLA's default combiner limit is 30 MiB.
  int64_t threshold_bytes = int64_t{32} << 20;
};

/// Combines independent collectives of `f`, block by block: the function body
/// and every loop body on its own (a collective never moves into or out of a
/// loop; a loop is one instruction of its block that reads everything its body
/// reads). Returns how many instructions were merged away.
int combine_collectives(ir::Function &f, const CombineOptions &options = {});

/// Replaces every combined collective of `f` (loop bodies included) by one
/// collective per operand.
void split_collectives(ir::Function &f);

}  // namespace spmd
