// driver/cli_docs.h — the man page and the shell completions, generated from
// the CLI11 command tree itself so that they cannot drift from `--help`.
//
// The build runs `spmdc completion bash|zsh` and the hidden `spmdc man-page`
// to produce share/man/man1/spmdc.1 and the completion scripts that
// `cmake --install` installs (CMakeLists.txt, docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "driver/commands.h"

namespace spmd::driver {

/// spmdc(1) in man(7) roff: every visible command with its options, then exit
/// status, files, environment.
std::string man_page(const CLI::App &app);

/// A bash completion script (`complete -F _spmdc spmdc`).
std::string bash_completion(const CLI::App &app);

/// A zsh completion function (`#compdef spmdc`).
std::string zsh_completion(const CLI::App &app);

/// Registers `spmdc completion bash|zsh` and the hidden `spmdc man-page`.
void register_doc_commands(CLI::App &app, std::vector<Command> &out);

/// Whether a subcommand is listed to users (hidden ones have no group).
bool is_visible(const CLI::App &command);

}  // namespace spmd::driver
