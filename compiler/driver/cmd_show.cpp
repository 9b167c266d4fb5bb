// driver/cmd_show.cpp — `spmdc show`: pictures of how a shmap's arrays are laid
// out on the mesh and of what it communicates (analysis/picture.h).
#include <iostream>

#include "analysis/picture.h"
#include "driver/commands.h"
#include "transforms/derived_signature.h"

namespace spmd::driver {
namespace {

struct ShowOptions {
  std::string function;
  std::string format = "txt";
  std::string output;
};

int run_show(const CommonOptions &common, const ShowOptions &o) {
  Compilation c;
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  std::vector<ShownShmap> shown;
  try {
    if (!o.function.empty()) {
      int index = find_shmap(*c.module, o.function);
      shown.push_back(
          describe_shmap(*c.module, c.module->functions[static_cast<size_t>(index)], c.sources));
    } else {
      for (const ir::Function &f : c.module->functions)
        if (f.kind == ir::FunctionKind::Shmap)
          shown.push_back(describe_shmap(*c.module, f, c.sources));
    }
  } catch (const TransformError &e) {
    return report_transform_error(e, c, common);
  }
  if (shown.empty())
    return report_error(common, "unknown-function", common.input + " has no shmap to show");
  return write_output(common, o.output,
                      o.format == "svg" ? picture_svg(shown) : picture_text(shown));
}

}  // namespace

void register_show_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static ShowOptions o;
  CLI::App *cmd = app.add_subcommand(
      "show",
      "Draw which block of each parameter and result every device holds, and every collective "
      "with its axes and bytes (text, or SVG with --format svg)");
  add_common_options(*cmd, common);
  cmd->add_option("--fn", o.function, "The shmap to show (default: every shmap of the file)");
  cmd->add_option("--format", o.format, "txt (default) or svg")
      ->check(CLI::IsMember({"txt", "svg"}));
  cmd->add_option("-o,--output", o.output, "Write the picture here (default: stdout)")
      ->type_name("FILE");
  out.push_back({cmd, [&common] { return run_show(common, o); }});
}

}  // namespace spmd::driver
