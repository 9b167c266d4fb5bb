// ir/printer.h — the IR as .spmd source, and as a raw instruction dump.
//
// print_module writes a module back as .spmd source that the frontend accepts:
// meshes, then every def instance (callees before callers), then shmaps.
// Values get readable unique names (the source name where there is one,
// `t0`, `t1`, ... otherwise). With `types`, every binding is annotated with
// its local type and variance (`w: f32[]{i} = g(x)`) and def signatures carry
// variance; pbroadcasts inserted by the compiler are marked `# auto`. The
// untyped form round-trips: parsing and lowering it gives the same module.
//
// dump_ir is the compiler-internal view (`--emit=ir`): value ids, op names and
// every attribute, one instruction per line.
#pragma once

#include <string>

#include "ir/ir.h"

namespace spmd::ir {

struct PrintOptions {
  bool types = false;          // annotate bindings with types and variance
  bool mark_inserted = true;   // `# auto` after compiler-inserted pbroadcasts (with types)
  bool include_meshes = true;  // print the mesh declarations first
};

std::string print_module(const Module &module, const PrintOptions &options = {});
/// One function (and nothing else) — for diagnostics and tests.
std::string print_function(const Module &module, const Function &function,
                           const PrintOptions &options = {});

std::string dump_ir(const Module &module);

/// Shortest decimal text that parses back to exactly `value` as the dtype,
/// always with a `.` or exponent for floats ("2.0", "0.125", "1e-07").
std::string format_number(double value, DType dtype);

}  // namespace spmd::ir
