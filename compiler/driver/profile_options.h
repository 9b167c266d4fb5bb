// driver/profile_options.h — the options of `spmdc profile` and of
// `spmdc-profile` (its MPI twin, tools/spmdc_profile.cpp): one definition, so
// both accept and check the same flags.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "analysis/profile_measure.h"

namespace spmd::driver {

struct ProfileOptions {
  MeasureOptions measure;
  std::string output;  // -o FILE; empty: stdout
  std::string name = "measured-cpu";
  bool quiet = false;
};

/// Adds the shared options to `cmd`; `devices_help` says what --devices means there.
inline void add_profile_options(CLI::App *cmd, ProfileOptions &o, const std::string &devices_help) {
  cmd->add_option("--devices", o.measure.devices, devices_help);
  cmd->add_option("--devices-per-node", o.measure.devices_per_node,
                  "Devices per node: measure the link inside a node (groups of this many "
                  "consecutive devices) and the link between nodes separately, and write both "
                  "(default: one node)");
  cmd->add_option("-o,--output", o.output, "Write the profile to FILE (default: stdout)")
      ->type_name("FILE");
  cmd->add_option("--name", o.name, "The profile's name (default " + o.name + ")");
  cmd->add_option("--max-bytes", o.measure.max_bytes,
                  "Largest collective buffer in bytes (default 16 MiB; sizes grow 8x from 8 B)");
  cmd->add_option("--repeats", o.measure.repeats,
                  "Rounds per measurement; their median counts (default 5)");
  cmd->add_flag_callback(
      "--no-matmul-rates", [&o] { o.measure.matmul_rates = false; },
      "Do not time thin matrix products (smallest dimension 8, 32, 128, in each gemm layout: "
      "matmul_rates and matmul_layout_rates); every product is then priced at the square "
      "product's rate (docs/sharding.md, \"Hardware profiles\")");
  // The default since thin products are always timed; kept for older scripts.
  cmd->add_flag("--matmul-rates", o.measure.matmul_rates)->group("");
  cmd->add_flag_callback(
      "--no-memory-rates", [&o] { o.measure.memory_rates = false; },
      "Do not time adds of 192 KiB and 3 MiB nor tanh in cache (memory_rates and "
      "transcendental_rate, which the cache-aware cost model needs: fused elementwise loops "
      "priced at the bandwidth of their bytes and the rate of their exp/tanh/...); "
      "every op is then priced op by op at the 48 MiB add's bandwidth "
      "(docs/sharding.md, \"Hardware profiles\")");
  cmd->add_flag("-q,--quiet", o.quiet, "Do not print the table of measurements");
}

/// What is wrong with `o` ("" when nothing).
inline std::string check_profile_options(const ProfileOptions &o) {
  const MeasureOptions &m = o.measure;
  if (m.devices < 2 || m.devices > 64) return "--devices takes 2 to 64 devices";
  if (!(m.max_bytes >= 8) || m.max_bytes > double(int64_t{1} << 30) || m.repeats < 1)
    return "--max-bytes takes 8 B to 1 GiB and --repeats at least 1";
  if (m.devices_per_node < 0 ||
      (m.devices_per_node > 0 && (m.devices_per_node < 2 || m.devices_per_node >= m.devices ||
                                  m.devices % m.devices_per_node != 0)))
    return "--devices-per-node takes a divisor of the " + std::to_string(m.devices) +
           " devices, at least 2 and fewer than all of them (nodes of at least 2 devices, and "
           "at least 2 nodes)";
  return "";
}

}  // namespace spmd::driver
