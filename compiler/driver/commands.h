// driver/commands.h — the spmdc subcommands.
//
// main.cpp declares the command line with CLI11 and calls one of these. Each
// returns the process exit status: 0 success, 1 user error (bad program, bad
// input, bad usage), 2 internal compiler error.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/compile.h"
#include "transforms/emitter.h"

namespace spmd::driver {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUserError = 1;
inline constexpr int kExitInternalError = 2;

/// Options shared by every subcommand that compiles a file.
struct CommonOptions {
  std::string input;
  bool no_auto_pbroadcast = false;
  std::vector<std::string> library_paths;
  int max_errors = 50;
  bool color = false;
  DiagnosticsFormat diagnostics_format = DiagnosticsFormat::Text;
  int64_t unroll = 0;               // --unroll N
  std::vector<std::string> meshes;  // --mesh [NAME=](axis: SIZE, ...), checked while parsing
  std::vector<std::string> sizes;   // --set NAME=SIZE, checked while parsing

  CompileOptions compile_options() const;
};

/// Compiles, prints diagnostics to stderr, and returns the exit status the
/// diagnostics call for (0 when there were none or only warnings).
int compile_and_report(Compilation &c, const CommonOptions &common, Phase stop_after,
                       const std::string &stop_after_step = {});

/// Prints `diags` to stderr in the chosen format (text or JSON Lines).
void print_diagnostics(const DiagnosticEngine &diags, const SourceManager &sources,
                       const CommonOptions &common);

/// Prints one problem that has no source location (a bad command line, an
/// unreadable input, a failed build) as `spmdc: error: message [code]` plus an
/// optional help line, or as one JSON diagnostic; returns kExitUserError.
int report_error(const CommonOptions &common, const std::string &code, const std::string &message,
                 const std::string &help = "");
/// Prints a transformation's error (find_shmap, derive, ...) at its location
/// in `c`'s sources; returns kExitUserError.
int report_transform_error(const TransformError &e, const Compilation &c,
                           const CommonOptions &common);
/// Prints a one-line status note (`spmdc: note: ...`) unless quiet; in JSON mode
/// it is a diagnostic of severity "note".
void report_note(const CommonOptions &common, const std::string &code, const std::string &message);

/// A subcommand: its CLI11 node and what runs when it is chosen.
struct Command {
  CLI::App *app;
  std::function<int()> run;
};

/// Writes `text` to `path` through rt::OutputFiles (docs/files.md: "-" and
/// devices in place, regular files replaced atomically), or to stdout when
/// `path` is empty; reports the error (report_error) and returns
/// kExitUserError when it cannot.
int write_output(const CommonOptions &common, const std::string &path, const std::string &text);

/// Adds the options shared by file-compiling commands (the input file, ...);
/// with `sizes`, also --mesh and --set (every command that checks the program).
void add_common_options(CLI::App &cmd, CommonOptions &common, bool sizes = true);

// Each cmd_*.cpp registers its subcommands here; main.cpp calls them in order.
// Options objects must outlive parsing, so registrars keep them in statics.
void register_check_commands(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_derive_commands(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_run_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_build_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_cost_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_shard_commands(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_show_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_lsp_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
void register_exercises_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out);
/// `spmdc profile`: measures the simulated mesh and writes a hardware profile file.
void register_profile_command(CLI::App &app, std::vector<Command> &out);

/// `spmdc check`; `strict` makes conflicting specs of sharded functions errors.
int run_check(const CommonOptions &common, bool strict);

struct PrintOptions {
  bool types = false;
  std::string emit = "source";  // ast | typed | ir | source | a step of the check script
  bool stats = false;           // print collective counts and bytes instead of the program
  std::string fn;               // --fn: the shmap whose --stats to print (default: every one)
};
int run_print(const CommonOptions &common, const PrintOptions &options);

struct FmtOptions {
  bool in_place = false;
  bool check = false;
};
int run_fmt(const CommonOptions &common, const FmtOptions &options);

}  // namespace spmd::driver
