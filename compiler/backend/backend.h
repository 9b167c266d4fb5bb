// backend/backend.h — turning a checked module into C++ (CPU) or CUDA C++ source.
//
// emit_program prepares every shmap of the module the way the transforms do
// (inline_calls, then simplify: one flat function per shmap, defs inlined),
// plans elementwise fusion (analysis/fusion.h) and prints one translation unit:
// fused kernels, one C++ function per shmap — the per-device body, with a
// comment quoting the .spmd line of each statement — a table describing the
// shmaps (mesh, parameters, results, partition specs) and a `main` that hands
// them to the runtime's program_main (spmdrt/program.h), which gives the
// executable the command line of `spmdc run`.
//
//   CPU  (emit_cpu.cpp):  fused loops over host memory; the other ops call the
//                         host kernels of spmdrt (the interpreter's kernels, so
//                         results are bit-identical to `spmdc run`); collectives
//                         go to the simulated mesh (one thread per device).
//   CUDA (emit_cuda.cpp): fused __global__ kernels; reductions, layout ops and
//                         contractions call spmdrt_cuda (reduction kernels,
//                         cuBLAS); collectives go to NCCL, with explicit
//                         pack/unpack kernels around gathers and scatters along
//                         a non-leading dimension.
//
//   Both share function_emitter.h (the per-device function, loops, the switch
//   over OpCode); each target file overrides only what differs.
#pragma once

#include <string>

#include "ir/ir.h"
#include "support/source.h"

namespace spmd::backend {

enum class Target { Cpu, Cuda };

struct EmitOptions {
  Target target = Target::Cpu;
  std::string entry;        // the default --fn of the executable ("": none, --fn required)
  std::string source_path;  // shown in comments and messages
  std::string built_by;     // the compiler's version line, for the executable's --version
  bool check_nan = false;   // --check-nan: unfused, each floating result checked for NaN/Inf
};

/// The complete source file. `sources` (may be null) supplies the quoted lines.
std::string emit_program(const ir::Module &module, const SourceManager *sources,
                         const EmitOptions &options);

namespace detail {
struct Prepared {
  const ir::Module *module = nullptr;
  std::vector<ir::Function> functions;  // flat shmaps, in module order
};
Prepared prepare(const ir::Module &module);
std::string emit_cpu(const Prepared &p, const SourceManager *sources, const EmitOptions &options);
std::string emit_cuda(const Prepared &p, const SourceManager *sources, const EmitOptions &options);
}  // namespace detail

}  // namespace spmd::backend
