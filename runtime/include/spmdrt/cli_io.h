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

/// Reads (--in NAME=PATH, `inputs`), or makes from `random_seed`, every input of
/// function `fn` whose parameters are `names`/`dtypes`/`global_shapes`; checks
/// each file with `check` and casts f32 files of bf16 parameters to bf16.
std::vector<Tensor> gather_inputs(const std::string &fn, const std::vector<std::string> &names,
                                  const std::vector<DType> &dtypes,
                                  const std::vector<Shape> &global_shapes,
                                  const std::vector<std::string> &inputs,
                                  const std::optional<uint64_t> &random_seed,
                                  const InputCheck &check);

/// Where one output goes: --out NAME=PATH (explicit) or --out-dir (derived).
struct OutputPath {
  std::string path;
  OutputNaming naming = OutputNaming::Explicit;
};

/// The final paths of every output of function `fn` (results named `names`),
/// by result index, from --out NAME=PATH (`outputs`) and --out-dir (`out_dir`,
/// "" for none); checks every path now (rt::check_output_path).
std::vector<std::vector<OutputPath>> output_paths(const std::string &fn,
                                                  const std::vector<std::string> &names,
                                                  const std::vector<std::string> &outputs,
                                                  const std::string &out_dir);

/// Writes results[k] to every paths[k] as .npy files, all or none, with
/// rt::OutputFiles; a --out-dir path never replaces one of the --in files
/// (`inputs`, the NAME=PATH option values).
void write_outputs(const std::vector<Tensor> &results,
                   const std::vector<std::vector<OutputPath>> &paths,
                   const std::vector<std::string> &inputs);

}  // namespace spmd::rt
