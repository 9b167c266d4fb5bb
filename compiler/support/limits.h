// support/limits.h — the documented limits of the compiler, in one place.
//
// Each limit is reported as a located error (never a crash, a hang or an
// out-of-memory) and documented in docs/limits.md; change both together.
// The size of arrays is limited in spmdrt/checked.h (2^60 bytes), the number
// of devices a simulated CPU mesh runs in spmdrt/collectives.h, and the
// parser's nesting limits in frontend/ast_builder.h.
#pragma once

#include <cstdint>

namespace spmd {

/// The largest source file (and standard input) spmdc reads: 16 MiB.
inline constexpr int64_t kMaxSourceBytes = int64_t{16} << 20;

/// Mesh declarations: axis sizes, axes per mesh and devices per mesh.
inline constexpr int64_t kMaxMeshAxisSize = 4096;
inline constexpr int64_t kMaxMeshAxes = 16;
inline constexpr int64_t kMaxMeshDevices = 65536;

/// Calls of `def` functions nest at most this deep (`call-too-deep`).
inline constexpr int kMaxCallDepth = 100;

/// A static `for` loop runs at most this many iterations (`loop-too-long`).
inline constexpr int64_t kMaxLoopIterations = 4096;

/// A shmap or def, with its loops unrolled and its calls inlined, has at
/// most this many instructions (`program-too-large`): the work the unrolled
/// passes, the derived programs and the emitted C++ can handle.
inline constexpr int64_t kMaxUnrolledInstructions = int64_t{1} << 18;

}  // namespace spmd
