// driver/version.h — what `spmdc --version` says: the release, the commit and
// how this spmdc was configured.
#pragma once

#include <string>

namespace spmd::driver {

/// `spmdc 0.1.0 (commit 1a2b3c4d5e6f, RelWithDebInfo)`: the first line of
/// `spmdc --version`, also the version the man page names.
std::string version_line();

/// The whole `--version` text: the version line, then one line per part of
/// the build configuration (C++ compiler, BLAS, CUDA on/off); no final newline.
std::string version_text();

}  // namespace spmd::driver
