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
/// Creates directory `dir` and its missing parents (like `mkdir -p`). Throws CliError.
void make_directories(const std::string &dir);

/// Splits `NAME=PATH` (both non-empty); `flag` (e.g. "--in") names the option in the error.
std::pair<std::string, std::string> split_assignment(const std::string &text, const char *flag);

/// Checks one input read from a file (`found_in`, e.g. "`x.npy`") holding
/// `dtype`/`shape` against parameter k; returns the error message, or "" when it fits.
using InputCheck = std::function<std::string(size_t k, DType dtype, const Shape &shape,
                                             const std::string &found_in)>;

/// The file of each input of function `fn` (parameters `names`), from --in
/// NAME=PATH (`inputs`); nullopt where --random SEED makes it. Checks names,
/// duplicates and that every input without a file has a seed.
std::vector<std::optional<std::string>> input_paths(const std::string &fn,
                                                    const std::vector<std::string> &names,
                                                    const std::vector<std::string> &inputs,
                                                    const std::optional<uint64_t> &random_seed);
/// The seed --random SEED gives input k.
uint64_t input_seed(uint64_t random_seed, size_t k);
/// Whether --cast converts a file of dtype `from` for a parameter of dtype `to`:
/// between floating-point dtypes (f64 -> f32 rounds to nearest), from i32 or
/// bool to a floating-point dtype, from bool to i32 — never to bool, never
/// from a float to an integer (those lose more than rounding).
bool castable(DType from, DType to);

/// How inputs whose file dtype differs from the parameter's are handled.
struct InputCasts {
  bool allow = false;                         // --cast given
  std::vector<std::string> *notes = nullptr;  // receives one line per input --cast converted
};

/// Checks the file `path` (holding `file_dtype`/`file_shape`) for parameter k of
/// dtype `param_dtype` (named `name`) with `check`; returns true when it must be
/// cast after reading: an f32 file of a bf16 parameter (always), or any
/// castable() file with casts.allow (noted in casts.notes). Throws CliError,
/// whose message says to pass --cast where that would help.
bool check_input_file(size_t k, const std::string &name, DType param_dtype, DType file_dtype,
                      const Shape &file_shape, const std::string &path, const InputCheck &check,
                      const InputCasts &casts);
/// "cannot read input `NAME`: ..." for a file that cannot be read.
CliError input_read_error(const std::string &name, const RuntimeError &error);

/// Reads (--in NAME=PATH, `inputs`), or makes from `random_seed`, every input of
/// function `fn` whose parameters are `names`/`dtypes`/`global_shapes`; checks
/// each file with `check` and casts it where check_input_file says so.
std::vector<Tensor> gather_inputs(const std::string &fn, const std::vector<std::string> &names,
                                  const std::vector<DType> &dtypes,
                                  const std::vector<Shape> &global_shapes,
                                  const std::vector<std::string> &inputs,
                                  const std::optional<uint64_t> &random_seed,
                                  const InputCheck &check, const InputCasts &casts);

/// The final paths of every output of function `fn` (results named `names`),
/// by result index, from --out NAME=PATH (`outputs`) and --out-dir (`out_dir`,
/// "" for none); checks that the directory of every --out exists, and creates
/// `out_dir` (with its parents) when it does not.
std::vector<std::vector<std::string>> output_paths(const std::string &fn,
                                                   const std::vector<std::string> &names,
                                                   const std::vector<std::string> &outputs,
                                                   const std::string &out_dir);

/// The output .npy files of one run, all or none: every file is first written
/// as a temporary beside its final path (`PATH.TAG-ID.tmp`), then all are
/// renamed into place. Blockwise, so that several processes can fill one file:
/// one process creates the temporaries (header and size), each process writes
/// the blocks it keeps, and one process renames them once all have finished.
/// Errors are CliErrors naming the output.
class OutputFiles {
 public:
  OutputFiles(std::vector<std::vector<std::string>> paths, const std::string &tag,
              const std::string &id);
  /// Creates the temporaries of output k (dtype, global shape) for every k.
  void create(const std::vector<DType> &dtypes, const std::vector<Shape> &shapes);
  /// Writes `block` of output k (global shape `global`) at `start` into its temporaries.
  void write_block(size_t k, const Shape &global, const Shape &start, const Tensor &block);
  /// Renames every temporary into place; on failure removes those left.
  void commit();
  /// Removes every temporary.
  void discard();

 private:
  std::vector<std::vector<std::string>> paths_;
  std::string suffix_;
};

/// Writes results[k] to every paths[k] with OutputFiles in this one process.
void write_outputs(const std::vector<Tensor> &results,
                   const std::vector<std::vector<std::string>> &paths, const std::string &tag);

}  // namespace spmd::rt
