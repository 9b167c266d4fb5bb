// support/limits.h — the documented limits of the compiler, in one place.
//
// Each limit is reported as a located error (never a crash, a hang or an
// out-of-memory) and documented in docs/limits.md; change both together.
// The size of arrays is limited in spmdrt/checked.h (2^60 bytes), the number
// of devices a simulated CPU mesh runs in spmdrt/collectives.h, and the
// parser's nesting limits in frontend/nesting.h.
#pragma once

#include <cstdint>
#include <string>

namespace spmd {

/// The largest source file (and standard input) spmdc reads: 16 MiB.
inline constexpr int64_t kMaxSourceBytes = int64_t{16} << 20;

/// Mesh declarations: axis sizes, axes per mesh and devices per mesh.
inline constexpr int64_t kMaxMeshAxisSize = 4096;
inline constexpr int64_t kMaxMeshAxes = 16;
inline constexpr int64_t kMaxMeshDevices = 65536;

/// Calls of `def` functions nest at most this deep (`call-too-deep`).
inline constexpr int kMaxCallDepth = 100;

/// A shmap or def, with the loops that are unrolled unrolled (`[[unroll]]`,
/// `--unroll N`, and for now every loop of a derived program) and its calls
/// inlined, has at most this many instructions (`program-too-large`): the work
/// the unrolled passes, the derived programs and the emitted C++ can handle.
/// A loop marked [[unroll]] also has at most ir::kMaxUnrolledIterations.
inline constexpr int64_t kMaxUnrolledInstructions = int64_t{1} << 18;

/// A derivative a program calls (`grad(f)`, `grad(grad(f))`, ...) is taken
/// only when the function derived, with its calls inlined, times this factor
/// (a bound on one derivative's growth) stays within kMaxUnrolledInstructions.
inline constexpr int64_t kMaxDerivativeGrowth = 8;

/// "would make SIZE instructions; at most LIMIT are allowed", for the
/// `program-too-large` messages (`size` saturates at INT64_MAX).
inline std::string too_many_instructions(int64_t size, int64_t limit = kMaxUnrolledInstructions) {
  return "would make " +
         (size == INT64_MAX ? std::string("more than 2^63") : std::to_string(size)) +
         " instructions; at most " + std::to_string(limit) + " are allowed";
}

/// A `sharded` function, with its calls inlined and the loops inside its
/// top-level loops unrolled for the sharding phase (a top-level loop counts
/// its body once), has at most this many instructions
/// (`program-too-large`): propagation, the search and the emitted shmap work
/// on that flat body.
inline constexpr int64_t kMaxShardedInstructions = int64_t{1} << 14;

}  // namespace spmd
