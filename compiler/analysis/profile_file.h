// analysis/profile_file.h — hardware profiles as data: JSON files.
//
// A profile file describes one machine for the cost model (HardwareProfile,
// analysis/cost.h): peak compute, the link inside a node, and optionally
// nodes and the link between them, or a link per mesh axis name.
// docs/sharding.md ("Hardware profiles") documents the format; an example:
//
//   {
//     "name": "two-nodes",
//     "description": "4 GPUs per node, a slow network between nodes",
//     "flops_per_s": 989e12,
//     "matmul_rates": [{"smallest_dim": 8, "flops_per_s": 2e14}, {"smallest_dim": 512,
//     "flops_per_s": 989e12}], "intra_node": {"latency_s": 5e-6, "bw_bytes_per_s": 370e9},
//     "devices_per_node": 4,
//     "inter_node": {"latency_s": 15e-6, "bw_bytes_per_s": 40e9},
//     "axes": {"gpu": {"latency_s": 5e-6, "bw_bytes_per_s": 370e9}}
//   }
//
// Every key but "name", "flops_per_s" and "intra_node" is optional; unknown
// keys are errors (a misspelt key would otherwise be silently ignored).
#pragma once

#include <optional>
#include <string>

#include "analysis/cost.h"

namespace spmd {

/// The profile in JSON text, or nullopt with `error` saying what is wrong
/// (`where` names the source in messages).
std::optional<HardwareProfile> parse_profile(const std::string &json, const std::string &where,
                                             std::string &error);

/// A built-in profile's name (case-insensitive), or the path of a profile file
/// (a name that is no built-in profile and names a file, or ends in `.json`).
std::optional<HardwareProfile> resolve_profile(const std::string &name_or_path, std::string &error);

/// The profile as a file parse_profile reads back (one key per line).
std::string profile_json(const HardwareProfile &profile);

}  // namespace spmd
