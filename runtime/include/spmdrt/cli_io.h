// spmdrt/cli_io.h — command-line .npy I/O shared by `spmdc run` and built executables.
//
// `spmdc run` (compiler/driver/cmd_run.cpp) and the main() of every executable
// `spmdc build` emits (runtime/cpu/program.cpp) take the same --in NAME=PATH,
// --random SEED, --out NAME=PATH and --out-dir DIR options and must report
// every problem with the same words. This is that logic, written once: it
// works on plain data (parameter and result names, dtypes, global shapes, the
// option strings), never on compiler IR, and reports user errors by throwing
// CliError, whose message the caller prints after its own `PROGRAM: error: `.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spmdrt/tensor.h"

namespace spmd::rt {

/// A user error in the command line, its inputs or its outputs (exit 1).
struct CliError {
  std::string message;
};

/// "`a`, `b`" ("none" for an empty list).
std::string join_names(const std::vector<std::string> &names);

/// True when `path` names an existing directory.
bool is_directory(const std::string &path);
/// The directory part of `path` ("." when it has none).
std::string parent_dir(const std::string &path);

/// Splits `NAME=PATH` (both non-empty); `flag` (e.g. "--in") names the option in the error.
std::pair<std::string, std::string> split_assignment(const std::string &text, const char *flag);

/// Checks one input read from a file (`found_in`, e.g. "`x.npy`") holding
/// `dtype`/`shape` against parameter k; returns the error message, or "" when it fits.
using InputCheck = std::function<std::string(size_t k, DType dtype, const Shape &shape,
                                             const std::string &found_in)>;

/// Reads (--in NAME=PATH, `inputs`), or makes from `random_seed`, every input of
/// function `fn` whose parameters are `names`/`dtypes`/`global_shapes`; checks
/// each file with `check` and casts f32 files of bf16 parameters to bf16.
std::vector<Tensor> gather_inputs(const std::string &fn, const std::vector<std::string> &names,
                                  const std::vector<DType> &dtypes,
                                  const std::vector<Shape> &global_shapes,
                                  const std::vector<std::string> &inputs,
                                  const std::optional<uint64_t> &random_seed,
                                  const InputCheck &check);

/// The final paths of every output of function `fn` (results named `names`),
/// by result index, from --out NAME=PATH (`outputs`) and --out-dir (`out_dir`,
/// "" for none); checks that every directory exists.
std::vector<std::vector<std::string>> output_paths(const std::string &fn,
                                                   const std::vector<std::string> &names,
                                                   const std::vector<std::string> &outputs,
                                                   const std::string &out_dir);

/// Writes results[k] to every paths[k], each first to a temporary beside it
/// (`PATH.TAG-PID.tmp`), then renames them all into place: all or none.
void write_outputs(const std::vector<Tensor> &results,
                   const std::vector<std::vector<std::string>> &paths, const std::string &tag);

}  // namespace spmd::rt
