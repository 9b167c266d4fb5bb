// driver/cmd_derive.cpp — `spmdc transpose`, `jvp`, `vjp` and `grad`.
//
// Each compiles the file, derives the new function (pipeline/derive.h) and
// writes it as .spmd source to -o FILE (spmdrt/output_file.h) or to stdout.
#include <iostream>

#include "driver/commands.h"
#include "driver/kept_until_exit.h"
#include "ir/printer.h"
#include "pipeline/derive.h"
#include "spmdrt/output_file.h"
#include "support/timed.h"

namespace spmd::driver {

namespace {

struct DeriveOptions {
  std::string function;
  std::vector<std::string> wrt;
  std::vector<std::string> of;
  std::string output;
  bool types = false;
  bool remat = false;
  std::string emit;  // a step of the derive script: stop there, print its raw IR
  int64_t combine_threshold = CombineOptions{}.threshold_bytes;
};

int run_derive(const CommonOptions &common, const DeriveOptions &o, DeriveKind kind) {
  Compilation &c = keep_until_exit<Compilation>();
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  c.program = {};  // the syntax trees: not needed to derive (free them first)
  DeriveRequest request;
  request.kind = kind;
  request.function = o.function;
  request.wrt = o.wrt;
  request.of = o.of;
  request.source_path = common.input;
  request.combine.threshold_bytes = o.combine_threshold;
  request.remat = o.remat;
  request.stop_after = o.emit;
  try {
    const ir::Module &derived = keep_until_exit<ir::Module>(derive(*c.module, request));
    if (!o.emit.empty()) return write_output(common, o.output, ir::dump_ir(derived));
    ir::PrintOptions po;
    po.types = o.types;
    const std::string text = timed("print", [&] { return ir::print_module(derived, po); });
    return timed("write", [&] { return write_output(common, o.output, text); });
  } catch (const TransformError &e) {
    return report_transform_error(e, c, common);
  }
}

void add_derive(CLI::App &app, CommonOptions &common, std::vector<Command> &out, const char *name,
                const char *help, DeriveKind kind, bool has_of) {
  static std::vector<std::unique_ptr<DeriveOptions>> storage;
  storage.push_back(std::make_unique<DeriveOptions>());
  DeriveOptions &o = *storage.back();
  CLI::App *cmd = app.add_subcommand(name, help);
  add_common_options(*cmd, common);
  cmd->add_option("--fn", o.function,
                  "The shmap to transform (default: the file's only shmap that no body calls)");
  cmd->add_option("--wrt", o.wrt,
                  "Parameters to transform in (comma-separated or repeated; default: all "
                  "floating-point parameters)")
      ->delimiter(',');
  if (has_of)
    cmd->add_option("--of", o.of,
                    kind == DeriveKind::Grad
                        ? "Scalar output(s) to differentiate, by name or index (default: 0)"
                        : "Outputs that receive cotangents, by name or index (default: all)")
        ->delimiter(',');
  cmd->add_option("-o,--output", o.output, "Write the .spmd source here (default: stdout)")
      ->type_name("FILE");
  cmd->add_flag("--types", o.types, "Annotate the output with types and variance");
  cmd->add_option("--combine-threshold", o.combine_threshold,
                  "Combine independent psums (all_gathers, psum_scatters) over the same axes into "
                  "one `psum((a, b), axes)` of at most this many bytes per device; 0 combines "
                  "none (default 33554432)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--emit", o.emit,
                  "Stop after this step of the derive script and print the function's raw "
                  "instructions: inline_calls, split_collectives, simplify, hoist_broadcasts, "
                  "peephole, jvp, transpose, simplify_result, hoist_broadcasts_result, "
                  "peephole_result, combine_collectives, explicit_pbroadcast (steps the "
                  "derivative does not take are skipped)")
      ->check(CLI::IsMember(derive_steps()))
      ->type_name("STEP");
  if (kind != DeriveKind::Jvp)
    cmd->add_flag("--remat", o.remat,
                  "Backward loops recompute each iteration's intermediate values from the "
                  "carried values instead of saving them all, as if every loop were marked "
                  "[[remat]]: less memory, one more forward pass of each loop body");
  out.push_back({cmd, [&common, &o, kind] { return run_derive(common, o, kind); }});
}

}  // namespace

void register_derive_commands(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  add_derive(app, common, out, "transpose",
             "Emit the transpose of a linear shmap as .spmd source (psum becomes pbroadcast, "
             "all_gather becomes psum_scatter, ...)",
             DeriveKind::Transpose, false);
  add_derive(app, common, out, "jvp",
             "Emit the forward-mode derivative f_jvp(x, dx) -> (y, dy) as .spmd source",
             DeriveKind::Jvp, false);
  add_derive(app, common, out, "vjp",
             "Emit the reverse-mode derivative f_vjp(x, ybar) -> (y, xbar) as .spmd source",
             DeriveKind::Vjp, true);
  add_derive(app, common, out, "grad",
             "Emit f_grad(x) -> (y, gradients) for a scalar output as .spmd source",
             DeriveKind::Grad, true);
}

}  // namespace spmd::driver
