// support/result_names.h — the name of an unnamed result, shared by the AST
// and the IR.
#pragma once

#include <cstddef>
#include <string>

namespace spmd {

/// What an unnamed result of a function with several results is called
/// (`spmdc run --out out1=...`, diagnostics): `out0`, `out1`, ... (0-based,
/// like `--of 0`).
inline std::string unnamed_result_name(size_t k) { return "out" + std::to_string(k); }

}  // namespace spmd
