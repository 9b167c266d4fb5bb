// driver/size_options.h — `--mesh [NAME=](axis: SIZE, ...)` and `--set NAME=SIZE`.
//
// Both give sizes on the command line instead of in the source, so that one
// program runs on 2, 4 or 8 devices, or on another batch, without editing:
// --mesh resizes axes of a mesh, --set sizes the named dimensions of shmap
// signatures (middle/lower.h, SizeOverrides). The options are checked while
// CLI11 parses (a malformed one is a command-line error); whether the names
// exist in the program is checked when it is lowered (`bad-override`).
#pragma once

#include <optional>
#include <string>

#include "middle/lower.h"

namespace spmd::driver {

/// `(batch: 4, model: 2)` or `M=(batch: 4)`; nullopt with `error` set when malformed.
std::optional<MeshOverride> parse_mesh_override(const std::string &text, std::string &error);

/// `n=128`; nullopt with `error` set when malformed.
std::optional<std::pair<std::string, int64_t>> parse_size_setting(const std::string &text,
                                                                  std::string &error);

}  // namespace spmd::driver
