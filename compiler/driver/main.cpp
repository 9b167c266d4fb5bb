// driver/main.cpp — the spmdc command line.
//
// Builds the CLI11 command tree from the registrars of driver/commands.h, sets
// up logging (spdlog; -v debug, -vv trace) and runs the chosen subcommand. Any
// exception that escapes a command is a compiler bug: it is reported as an
// internal error with exit status 2, never as a crash.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <iostream>

#include "driver/cli_docs.h"
#include "driver/commands.h"
#include "driver/version.h"

namespace {

using namespace spmd::driver;

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
  std::vector<Command> commands;
  register_check_commands(app, common, commands);
  register_derive_commands(app, common, commands);
  register_run_command(app, common, commands);
  register_build_command(app, common, commands);
  register_cost_command(app, common, commands);
  register_show_command(app, common, commands);
  register_doc_commands(app, commands);

  // An unknown command word would otherwise read as "a subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const Command &c : commands) {
      known = known || c.app->get_name() == argv[1];
      if (is_visible(*c.app)) names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) {
      std::cerr << "spmdc: error: unknown command `" << argv[1] << "` (commands: " << names
                << "; see spmdc --help)\n";
      return kExitUserError;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    app.exit(e);
    return kExitUserError;
  }
  common.color = color && isatty(2);

  auto logger = spdlog::stderr_logger_st("spmdc");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("spmdc: %l: %v");
  spdlog::set_level(verbosity >= 2   ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::warn);

  for (const Command &c : commands)
    if (c.app->parsed()) return c.run();
  return kExitUserError;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "spmdc: internal compiler error: " << e.what()
              << "\nThis is a bug in spmdc; please report it with the input file.\n";
    return kExitInternalError;
  } catch (...) {
    std::cerr << "spmdc: internal compiler error: unknown exception\n";
    return kExitInternalError;
  }
}
