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
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spmdrt/npy.h"
#include "spmdrt/output_file.h"
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

/// Parses a --random seed: a decimal integer from 0 to 2^64 - 1 (nothing
/// else: no sign, no spaces, no saturation).
uint64_t parse_seed(const std::string &text);

/// Parses a --max-memory size: bytes, or a number with a K, M, G or T suffix
/// (powers of 1024, an optional trailing `B` or `iB`), e.g. `64G`, `512MiB`.
int64_t parse_byte_size(const std::string &text, const std::string &flag);

/// What running a function needs, as the compiler estimates it.
struct MemoryEstimate {
  int64_t device_bytes = 0;  // peak bytes of live values on one device
  std::string largest;       // the largest value: "`t: f32[8, 4]` at f.spmd:3:7"
  int64_t largest_bytes = 0;
};

/// Memory the process may still use: MemAvailable from /proc/meminfo, less
/// where a cgroup limit or RLIMIT_AS is lower; -1 when unknown.
int64_t available_memory();

/// Throws CliError when running function `fn` on `devices` simulated devices
/// (each holding `estimate`, plus the host's `host_bytes` of global inputs and
/// outputs) needs more memory than `max_memory` (--max-memory; -1 for the
/// available memory), or when there are more devices than a simulated mesh
/// runs (kMaxSimulatedDevices, spmdrt/collectives.h).
void check_resources(const std::string &fn, int64_t devices, const MemoryEstimate &estimate,
                     int64_t host_bytes, int64_t max_memory);

/// "1.5 GiB", "12 KiB", "100 bytes".
std::string format_bytes(int64_t bytes);

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
/// For a raw token file (`spec` is PATH:u16 or PATH:u32, `header` from
/// read_input_header): the parameter must be i32[n] with n the file's token
/// count; throws CliError saying which size to set otherwise. Nothing for .npy.
/// `size_name`: the --set name of the parameter's dimension, when known.
void check_token_input(const std::string &name, DType param_dtype, const Shape &param_shape,
                       const std::string &spec, const NpyHeader &header,
                       const std::string &size_name = "");
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
                                  const InputCheck &check, const InputCasts &casts,
                                  const std::vector<std::string> &size_names = {});

/// Where one output goes: --out NAME=PATH (explicit) or --out-dir (derived).
struct OutputPath {
  std::string path;
  OutputNaming naming = OutputNaming::Explicit;
};

/// The final paths of every output of function `fn` (results named `names`),
/// by result index, from --out NAME=PATH (`outputs`) and --out-dir (`out_dir`,
/// "" for none); checks every path now (rt::check_output_path) and creates
/// `out_dir` (with its parents) when it does not exist.
std::vector<std::vector<OutputPath>> output_paths(const std::string &fn,
                                                  const std::vector<std::string> &names,
                                                  const std::vector<std::string> &outputs,
                                                  const std::string &out_dir);

/// The .npy output files of one run, all or none, written blockwise so that
/// several processes can fill one file. Built on rt::OutputFiles
/// (spmdrt/output_file.h, docs/files.md): temporaries beside the targets,
/// flushed to disk and renamed together; devices, FIFOs and standard output
/// written in place; links followed; modes kept; temporaries removed on
/// failure and on SIGINT/SIGTERM/SIGHUP/SIGQUIT; a --out-dir path never
/// replaces an input. One process (the only one, or rank 0) creates the
/// temporaries (header and full size) and commits; every process writes the
/// blocks it keeps into them (the creator hands temporaries() to the others,
/// which adopt() them). Errors are CliErrors naming the output.
class NpyOutputs {
 public:
  /// `paths` from output_paths; `inputs` the --in NAME=PATH values.
  NpyOutputs(std::vector<std::vector<OutputPath>> paths, std::vector<std::string> inputs);
  ~NpyOutputs();
  NpyOutputs(const NpyOutputs &) = delete;
  NpyOutputs &operator=(const NpyOutputs &) = delete;

  /// Creates the temporaries of output k (dtype, global shape) for every k.
  void create(const std::vector<DType> &dtypes, const std::vector<Shape> &shapes);
  /// The temporaries create() made, as one string for adopt() in another process.
  std::string temporaries() const;
  /// Writes into the temporaries another process created (its temporaries()).
  void adopt(const std::string &temporaries);
  /// Writes `block` of output k (global shape `global`) at `start` into its temporaries.
  void write_block(size_t k, const Shape &global, const Shape &start, const Tensor &block);
  /// Puts every output in place (the creator only); on failure none is replaced.
  void commit();
  /// Removes every temporary (the creator only).
  void discard();

 private:
  std::vector<std::vector<OutputPath>> paths_;
  std::vector<std::string> inputs_;
  std::unique_ptr<OutputFiles> files_;           // the creator's
  std::vector<std::vector<std::string>> temps_;  // by output, as paths_
};

/// Writes results[k] to every paths[k] with NpyOutputs in this one process;
/// `inputs` are the --in NAME=PATH values.
void write_outputs(const std::vector<Tensor> &results,
                   const std::vector<std::vector<OutputPath>> &paths,
                   const std::vector<std::string> &inputs);

}  // namespace spmd::rt
