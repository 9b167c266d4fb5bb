// driver/cmd_lsp.cpp — `spmdc lsp`: the Language Server on stdin/stdout
// (lsp/server.h; setup for editors in docs/lsp.md).
#include <iostream>

#include "driver/commands.h"
#include "lsp/server.h"

namespace spmd::driver {

void register_lsp_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static std::vector<std::string> library_paths;
  CLI::App *cmd = app.add_subcommand(
      "lsp",
      "Run a Language Server (LSP over stdin/stdout) for editors: diagnostics as you type, "
      "hover types with variance, go-to-definition, formatting (docs/lsp.md)");
  cmd->add_option("--lib-path", library_paths,
                  "Directory searched for imported modules before the standard library "
                  "(repeatable)")
      ->type_name("DIR");
  out.push_back({cmd, [&common] {
                   lsp::ServerOptions options;
                   options.compile = common.compile_options();
                   options.compile.library_paths = library_paths;
                   options.log = &std::cerr;
                   std::ios::sync_with_stdio(false);
                   return lsp::run_server(std::cin, std::cout, options);
                 }});
}

}  // namespace spmd::driver
