// runtime/cpu/program_io.h — the distributed I/O steps of program_main (not installed).
//
// Every process of a run handles only the mesh positions it runs (`devices`):
// it reads (or makes from --random) only their blocks of each input, sends the
// process that prints only the printed elements of each output, and writes
// only the output blocks it keeps into files one process created.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "spmdrt/cli_io.h"
#include "spmdrt/npy.h"
#include "spmdrt/program.h"

namespace spmd::rt {

/// The names of `values`, in order.
std::vector<std::string> value_names(const std::vector<ProgramValue> &values);

/// Reads the header of every input file of `f` (`files[k]`, nullopt for a
/// --random input) and checks it with `check` and `casts` (check_input_file).
/// Throws CliError.
std::vector<NpyHeader> check_input_files(const ProgramFunction &f,
                                         const std::vector<std::optional<std::string>> &files,
                                         const InputCheck &check, const InputCasts &casts);

/// Parameter k's block on each of `devices`, as `[i][k]`: read from `files[k]`
/// (only the block's bytes) or made from `random_seed`. Devices holding the
/// same block share one tensor. Throws CliError.
std::vector<std::vector<Tensor>> read_local_inputs(
    const ProgramFunction &f, const std::vector<int64_t> &devices,
    const std::vector<std::optional<std::string>> &files, const std::vector<NpyHeader> &headers,
    const std::optional<uint64_t> &random_seed);

/// Collective: format_tensor(result k, print_limit) of the global array whose
/// blocks `out[i][k]` the processes hold for their `devices`; the text on rank
/// 0 ("" elsewhere). Rank 0 receives only the printed elements.
std::string format_distributed(Processes &procs, const ProgramFunction &f, size_t k,
                               const std::vector<int64_t> &devices,
                               const std::vector<std::vector<Tensor>> &out, int64_t print_limit);

/// Runs a step on every process and returns whether it succeeded everywhere
/// (the first error having been reported).
using AgreedStep = std::function<bool(const std::function<void()> &step)>;

/// Collective: writes every output to its `paths` (OutputFiles: rank 0 creates
/// the temporaries, every process writes the blocks it keeps, rank 0 renames
/// them), all or none. False when a step failed (already reported).
bool write_distributed_outputs(Processes &procs, const ProgramFunction &f,
                               const std::vector<int64_t> &devices,
                               const std::vector<std::vector<Tensor>> &out,
                               const std::vector<std::vector<std::string>> &paths,
                               const AgreedStep &agreed_step);

}  // namespace spmd::rt
