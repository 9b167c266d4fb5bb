// driver/cmd_cost.cpp — `spmdc cost`: flops, communication and a roofline
// estimate per device.
//
// Compiles the file, picks the shmap (--fn), reports analysis/cost.h's
// estimate for it and, with --grad, for its gradient program as `spmdc grad`
// builds it (the vjp when the output is not a scalar), as a table or --json.
// The hardware is a built-in profile (--profile h100|h200) whose numbers
// --flops-per-s, --bw-bytes-per-s and --latency-s override. --plot FILE also
// draws the programs on the roofline of that profile (analysis/roofline.h).
#include <iostream>

#include "analysis/cost.h"
#include "analysis/profile_file.h"
#include "analysis/roofline.h"
#include "driver/commands.h"
#include "pipeline/derive.h"

namespace spmd::driver {
namespace {

struct CostOptions {
  std::string function;
  bool grad = false;
  std::vector<std::string> wrt;
  std::string profile = "h100";
  std::optional<double> flops_per_s, bw_bytes_per_s, latency_s;
  bool json = false;
  std::string plot;  // --plot FILE: the roofline as SVG ("-": stdout, instead of the table)
};

int run_cost(const CommonOptions &common, const CostOptions &o) {
  std::string error;
  std::optional<HardwareProfile> profile = resolve_profile(o.profile, error);
  if (!profile) return report_error(common, "bad-command-line", error);
  if (o.flops_per_s || o.bw_bytes_per_s || o.latency_s) {
    profile->name += " (modified)";
    if (o.flops_per_s) profile->flops_per_s = *o.flops_per_s;
    if (o.bw_bytes_per_s) profile->bw_bytes_per_s = *o.bw_bytes_per_s;
    if (o.latency_s) profile->latency_s = *o.latency_s;
    // The link within a node is now the one given, for every kind of collective.
    if (o.bw_bytes_per_s || o.latency_s) profile->intra_by_collective.clear();
  }
  if (profile->flops_per_s <= 0 || profile->bw_bytes_per_s <= 0 || profile->latency_s < 0) {
    return report_error(common, "bad-command-line",
                        "--flops-per-s and --bw-bytes-per-s must be positive and --latency-s not "
                        "negative");
  }

  Compilation c;
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  try {
    int index = find_shmap(*c.module, o.function);
    const ir::Function &f = c.module->functions[static_cast<size_t>(index)];
    std::vector<std::pair<std::string, CostReport>> reports;
    reports.emplace_back("forward: " + f.name, estimate_cost(*c.module, f, *profile));
    if (o.grad) {
      bool scalar = !f.returns.empty() && f.type(f.returns[0]).rank() == 0;
      DeriveRequest request;
      request.kind = scalar ? DeriveKind::Grad : DeriveKind::Vjp;
      request.function = f.name;
      request.wrt = o.wrt;
      request.source_path = common.input;
      ir::Module derived = derive(*c.module, request);
      const ir::Function &g = derived.functions[static_cast<size_t>(find_shmap(derived, ""))];
      reports.emplace_back(
          std::string(scalar ? "gradient: " : "vjp (output not scalar): ") + g.name,
          estimate_cost(derived, g, *profile));
    }
    if (!o.plot.empty()) {
      int written =
          write_output(common, o.plot == "-" ? "" : o.plot, roofline_svg(reports, *profile));
      if (written != kExitOk || o.plot == "-") return written;
    }
    if (o.json) {
      std::cout << "{\"file\": \"" << common.input << "\", \"programs\": [";
      for (size_t k = 0; k < reports.size(); ++k)
        std::cout << (k ? ", " : "") << cost_json(reports[k].second);
      std::cout << "]}\n";
    } else {
      for (size_t k = 0; k < reports.size(); ++k)
        std::cout << (k ? "\n" : "") << format_cost(reports[k].second, reports[k].first);
    }
    return kExitOk;
  } catch (const TransformError &e) {
    return report_transform_error(e, c, common);
  }
}

}  // namespace

void register_cost_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static CostOptions o;
  CLI::App *cmd = app.add_subcommand(
      "cost",
      "Estimate flops, communication, arithmetic intensity and time per device of a shmap "
      "(and its gradient with --grad) under an alpha-beta model");
  add_common_options(*cmd, common);
  cmd->add_option("--fn", o.function,
                  "The shmap to analyse (default: the file's only shmap that no body calls)");
  cmd->add_flag("--grad", o.grad,
                "Also analyse its gradient program as `spmdc grad` emits it (the vjp when the "
                "output is not a scalar)");
  cmd->add_option("--wrt", o.wrt,
                  "With --grad: parameters to differentiate (comma-separated; default: all "
                  "floating-point parameters)")
      ->delimiter(',');
  cmd->add_option("--profile", o.profile,
                  "Hardware profile: h100, h200, h100-ib, or a profile file (.json; "
                  "docs/sharding.md, \"Hardware profiles\"); default h100");
  cmd->add_option("--flops-per-s", o.flops_per_s, "Peak flop/s per device (overrides the profile)");
  cmd->add_option("--bw-bytes-per-s", o.bw_bytes_per_s,
                  "Collective bus bandwidth per device in bytes/s (overrides the profile's link "
                  "within a node, for every kind of collective)");
  cmd->add_option("--latency-s", o.latency_s,
                  "Latency alpha per collective in seconds (overrides the profile's link within a "
                  "node, for every kind of collective)");
  cmd->add_flag("--json", o.json, "Print JSON instead of a table");
  cmd->add_option("--plot", o.plot,
                  "Also draw the roofline of the profile with each analysed program as a point, "
                  "as SVG, to FILE (- : to stdout, instead of the table)")
      ->type_name("FILE");
  out.push_back({cmd, [&common] { return run_cost(common, o); }});
}

}  // namespace spmd::driver
