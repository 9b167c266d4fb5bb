// analysis/memory_estimate.h — how much memory running a shmap needs, before running it.
//
// `spmdc run` and every executable `spmdc build` emits check this estimate
// against the memory available (or --max-memory) before allocating anything,
// so a program too large for the machine is a user error that names the
// largest value, not a std::bad_alloc (rt::check_resources, spmdrt/cli_io.h).
#pragma once

#include "ir/ir.h"
#include "spmdrt/cli_io.h"
#include "support/source.h"

namespace spmd {

/// The peak bytes of live values on one device while shmap `function` (of
/// `module`, or a flattened copy of one) runs — its parameters (the input
/// blocks) throughout, each other value from the instruction that makes it
/// to its last use (as the interpreter frees them; a value an op shares
/// without copying, e.g. a pbroadcast's, once), a call counted at its callee's peak, an
/// einsum with the scratch the runtime's allocates (rt::einsum_scratch_bytes) —
/// and the largest single value, named with its location when `sources` is
/// given. Sizes add with saturation (spmdrt/checked.h).
rt::MemoryEstimate estimate_memory(const ir::Module &module, const ir::Function &function,
                                   const SourceManager *sources);

/// Bytes of the global arrays of a shmap's parameters and results: what the
/// host holds besides the devices.
int64_t host_io_bytes(const ir::Function &function);

}  // namespace spmd
