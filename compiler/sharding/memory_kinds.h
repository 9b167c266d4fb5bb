// sharding/memory_kinds.h — what each value of a training step is, for the memory breakdown.
//
// `spmdc shard --explain` splits a plan's peak bytes per device by kind
// (evaluate() in problem.h sums them). classify_values() decides each
// value's kind from the flat program alone, by dataflow — no names, no
// annotations — so it holds for any optimizer written in the language:
//
//   1. Backward values: results of the instructions transposition made for
//      a vjp or grad (ir::Origin::Backward), and the values a backward loop
//      carries. Gradient-derived values: results of the other instructions
//      that read a backward or gradient-derived value (the update).
//   2. A *state* is a function input or a value a loop carries (its body
//      parameter; the loop's result shares its kind). A state is *updated*
//      when its next value (for an input: some result) is gradient-derived
//      and computed from the state without passing through the backward
//      pass. An updated state that reaches the backward pass (read there, or
//      through forward instructions) is a **parameter**; one that does not is
//      **optimizer state** (momenta, second moments, accumulators). Any other
//      state is an **input** (the batch, a step counter, a loss history).
//   3. Of the other values: a backward value read after the backward pass
//      (by the update, returned, or carried to the next step) is a
//      **gradient**; a forward value the backward pass reads is a **saved
//      activation** (a residual); everything else is a **temporary**.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "sharding/problem.h"

namespace spmd::sharding {

enum class MemoryKind : uint8_t {
  Parameters,
  OptimizerState,
  Gradients,
  Activations,
  Inputs,
  Temporaries,
};
inline constexpr size_t kNumMemoryKinds = 6;

/// "parameters", "optimizer state", ...: as --explain prints them.
std::string_view memory_kind_name(MemoryKind kind);

/// The kind of every value of `p.flat` (by ValueId), by the rules above.
std::vector<MemoryKind> classify_values(const Problem &p);

}  // namespace spmd::sharding
