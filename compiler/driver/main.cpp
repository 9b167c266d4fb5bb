// driver/main.cpp — the spmdc command line.
//
// Builds the CLI11 command tree from the registrars of driver/commands.h, sets
// up logging (spdlog; -v debug, -vv trace) and runs the chosen subcommand. Any
// exception that escapes a command is a compiler bug: it is reported as an
// internal error with exit status 2, never as a crash.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <iostream>
#include <limits>

#include "driver/cli_docs.h"
#include "driver/commands.h"
#include "driver/large_blocks.h"
#include "driver/version.h"
#include "spmdrt/parallel.h"
#include "spmdrt/tensor.h"
#include "support/suggest.h"

namespace {

using namespace spmd::driver;
using spmd::closest_match;
using spmd::DiagnosticsFormat;

/// `--diagnostics-format json` / `--diagnostics-format=json` anywhere in argv.
DiagnosticsFormat diagnostics_format_from_argv(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--diagnostics-format=json" ||
        (a == "--diagnostics-format" && i + 1 < argc && std::string_view(argv[i + 1]) == "json"))
      return DiagnosticsFormat::Json;
  }
  return DiagnosticsFormat::Text;
}

/// For the commands that only read and write programs (not `run`, `lsp` or
/// `show`, which hold arrays or run for long): every phase of them builds
/// whole new bodies (vectors of 100k+ instructions, tens of MB) and frees the
/// old ones. glibc serves blocks that large with mmap and unmaps them when
/// freed, so each pass's new body faults in fresh zeroed pages again. Serving
/// them from the heap, which is never trimmed, lets the next pass reuse the
/// pages: a 100k-op `vjp` takes a third fewer page faults and ~10% less CPU
/// time (bench/compiler_bench), and growing the program no longer grows the
/// faults faster than the program. Blocks of 1 MiB and more come from a heap
/// of their own (driver/large_blocks.h), where a freed body is found again
/// among millions of freed small blocks.
void keep_freed_memory_for(const std::string &command) {
#if defined(__GLIBC__)
  static const char *const kCompileOnly[] = {"check", "print", "fmt",   "transpose", "jvp",
                                             "vjp",   "grad",  "build", "cost",      "shard"};
  for (const char *name : kCompileOnly)
    if (command == name) {
      mallopt(M_MMAP_MAX, 0);
      mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
      use_large_block_heap();
      return;
    }
  // The commands that run programs allocate the same arrays every step, as
  // executables do (spmdrt/tensor.h): `spmdc profile` then measures what they pay.
  if (command == "run" || command == "profile") {
    spmd::rt::keep_freed_memory();
    spmd::rt::single_threaded_blas();  // as executables do
  }
#else
  (void)command;
#endif
}

/// Every repeatable option (--set, --mesh, --in, --lib-path, ...) takes one value per flag:
/// CLI11's default lets a vector option swallow the words after it, so
/// `spmdc build --set n=8 file.spmd` read the file name as a second size.
void one_value_per_flag(CLI::App &app) {
  for (CLI::Option *option : app.get_options())
    if (!option->get_positional() && option->get_items_expected_max() > 1)
      option->allow_extra_args(false);
  for (CLI::App *sub : app.get_subcommands({})) one_value_per_flag(*sub);
}

int real_main(int argc, char **argv) {
  CLI::App app{
      "spmdc — a compiler for SPMD programs over a named device mesh.\n"
      "Every value's type carries its dtype, local shape and device variance."};
  app.set_version_flag("--version", version_text(),
                       "Print the version, the commit and the build configuration, then exit");
  app.require_subcommand(1);
  int verbosity = 0;
  app.add_flag("-v,--verbose", verbosity, "More logging on stderr (-v debug, -vv trace)");
  bool color = false;
  app.add_flag("--color", color, "Color diagnostics when stderr is a terminal");
  CommonOptions common;
  // Known before parsing, so that CLI11's own errors come out in the chosen format.
  common.diagnostics_format = diagnostics_format_from_argv(argc, argv);
  std::string format_name = "text";
  app.add_option("--diagnostics-format", format_name,
                 "How diagnostics are printed on stderr: text (default) or json (JSON Lines, one "
                 "object per diagnostic; see docs/diagnostics.md)")
      ->check(CLI::IsMember({"text", "json"}));
  // Global options are accepted after the command word too (`spmdc check f.spmd -v`).
  app.fallthrough();

  std::vector<Command> commands;
  register_check_commands(app, common, commands);
  register_derive_commands(app, common, commands);
  register_run_command(app, common, commands);
  register_build_command(app, common, commands);
  register_cost_command(app, common, commands);
  register_show_command(app, common, commands);
  register_shard_commands(app, common, commands);
  register_lsp_command(app, common, commands);
  register_exercises_command(app, common, commands);
  register_profile_command(app, commands);
  register_doc_commands(app, commands);
  one_value_per_flag(app);

  // An unknown command word would otherwise read as "a subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const Command &c : commands) {
      known = known || c.app->get_name() == argv[1];
      if (is_visible(*c.app)) names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) {
      std::vector<std::string> command_names;
      for (const Command &c : commands)
        if (is_visible(*c.app)) command_names.push_back(c.app->get_name());
      auto best = closest_match(argv[1], command_names);
      return report_error(common, "bad-command-line",
                          "unknown command `" + std::string(argv[1]) + "` (commands: " + names +
                              "; see spmdc --help)",
                          best ? "did you mean `" + *best + "`?" : "");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    // CLI11's message, in spmdc's own format (`spmdc: error: ...`).
    return report_error(common, "bad-command-line", e.what(),
                        "see `spmdc " + std::string(argc > 1 && argv[1][0] != '-' ? argv[1] : "") +
                            (argc > 1 && argv[1][0] != '-' ? " " : "") + "--help`");
  }
  common.color = color && isatty(2);
  common.diagnostics_format =
      format_name == "json" ? DiagnosticsFormat::Json : DiagnosticsFormat::Text;

  auto logger = spdlog::stderr_logger_st("spmdc");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("spmdc: %l: %v");
  spdlog::set_level(verbosity >= 2   ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::warn);

  for (const Command &c : commands)
    if (c.app->parsed()) {
      keep_freed_memory_for(c.app->get_name());
      return c.run();
    }
  return kExitUserError;
}

}  // namespace

int main(int argc, char **argv) {
  auto internal_error = [&](const std::string &what) {
    if (diagnostics_format_from_argv(argc, argv) == DiagnosticsFormat::Json) {
      spmd::DiagnosticEngine diags;
      diags.internal({}, what);
      std::cerr << spmd::render_diagnostics_json(diags, spmd::SourceManager{});
    } else {
      std::cerr << "spmdc: internal compiler error: " << what
                << "\nThis is a bug in spmdc; please report it with the input file.\n";
    }
    return kExitInternalError;
  };
#if defined(__GLIBC__)
  // The compiler builds and frees whole phase structures (parse trees, IR
  // bodies) of millions of small blocks. glibc's "fast bins" defer
  // coalescing of freed small blocks, and the next large request then walks
  // them all (malloc_consolidate); without them a 100k-op `check` takes 13%
  // and a `vjp` 12% less CPU time (bench/compiler_bench).
  mallopt(M_MXFAST, 0);
#endif
  try {
    return real_main(argc, argv);
  } catch (const std::exception &e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}
