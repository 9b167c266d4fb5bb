// driver/cmd_check.cpp — `spmdc check`, `spmdc print` and `spmdc fmt`.
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "analysis/stats.h"
#include "driver/commands.h"
#include "driver/kept_until_exit.h"
#include "driver/size_options.h"
#include "frontend/format.h"
#include "ir/printer.h"
#include "sharding/shard.h"
#include "spmdrt/output_file.h"
#include "support/timed.h"
#include "transforms/derived_signature.h"

namespace spmd::driver {

CompileOptions CommonOptions::compile_options() const {
  CompileOptions o;
  o.auto_pbroadcast = !no_auto_pbroadcast;
  o.library_paths = library_paths;
  o.max_errors = max_errors;
  o.unroll_max_trip_count = unroll;
  // SPMDC_PARSER=antlr parses with the ANTLR parser only (docs/cli.md).
  if (const char *parser = std::getenv("SPMDC_PARSER"); parser && std::string(parser) == "antlr")
    o.parser = ParserChoice::Antlr;
  std::string unused;  // every text was checked while parsing
  for (const std::string &text : meshes)
    if (auto m = parse_mesh_override(text, unused)) o.overrides.meshes.push_back(*m);
  for (const std::string &text : sizes)
    if (auto s = parse_size_setting(text, unused)) o.overrides.sizes[s->first] = s->second;
  return o;
}

int write_output(const CommonOptions &common, const std::string &path, const std::string &text) {
  if (path.empty()) {
    std::cout << text;
    return kExitOk;
  }
  try {
    rt::write_output_file(path, {text});
  } catch (const rt::OutputError &e) {
    return report_error(common, "io-error", e.what());
  }
  return kExitOk;
}

int compile_and_report(Compilation &c, const CommonOptions &common, Phase stop_after,
                       const std::string &stop_after_step) {
  CompileOptions options = common.compile_options();
  options.stop_after = stop_after;
  options.stop_after_step = stop_after_step;
  compile_file(c, common.input, options);
  print_diagnostics(c.diags, c.sources, common);
  if (c.diags.has_internal_errors()) return kExitInternalError;
  if (c.diags.has_errors()) return kExitUserError;
  return kExitOk;
}

int run_check(const CommonOptions &common, bool strict) {
  Compilation &c = keep_until_exit<Compilation>();
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  // Sharded functions: do the written specs agree with the ops' rules?
  DiagnosticEngine diags;
  bool ok = sharding::check_sharded_functions(*c.module, strict, diags);
  print_diagnostics(diags, c.sources, common);  // in the chosen format, like the others
  return ok ? kExitOk : kExitUserError;
}

int run_print(const CommonOptions &common, const PrintOptions &options) {
  Compilation &c = keep_until_exit<Compilation>();
  Phase stop = options.emit == "ast" ? Phase::Parse : Phase::Variance;
  const auto &steps = check_steps();
  const bool step = std::find(steps.begin(), steps.end(), options.emit) != steps.end();
  int status = compile_and_report(c, common, stop, step ? options.emit : std::string());
  if (status != kExitOk) return status;
  if (options.emit == "ast" || options.emit == "parse") {
    std::cout << dump_ast(c.program.modules.at(0).ast, c.sources);
    return kExitOk;
  }
  if (step) {  // the module as that step of the check script left it
    std::cout << ir::dump_ir(*c.module);
    return kExitOk;
  }
  if (options.emit == "ir") {
    std::cout << ir::dump_ir(c.printable());
    return kExitOk;
  }
  if (options.stats) {
    int only = -1;
    if (!options.fn.empty()) {
      try {
        only = find_shmap(*c.module, options.fn);
      } catch (const TransformError &e) {
        return report_transform_error(e, c, common);
      }
    }
    std::cout << format_stats(*c.module, only);
    return kExitOk;
  }
  ir::PrintOptions po;
  po.types = options.types || options.emit == "typed";
  std::cout << timed("print", [&] { return ir::print_module(c.printable(), po); });
  return kExitOk;
}

int run_fmt(const CommonOptions &common, const FmtOptions &options) {
  Compilation c;
  int status = compile_and_report(c, common, Phase::Parse);
  if (status != kExitOk) return status;
  std::string formatted = format_module(c.program.modules.at(0).ast);
  const std::string &original = c.sources.file(c.main_file).text();
  if (options.check) {
    if (formatted == original) return kExitOk;
    return report_error(common, "not-formatted", "`" + common.input + "` is not formatted",
                        "run `spmdc fmt -i " + common.input + "`");
  }
  if (!options.in_place) {
    std::cout << formatted;
    return kExitOk;
  }
  if (formatted == original) return kExitOk;
  if (common.input == "-") {
    return report_error(common, "io-error", "`fmt -i` cannot rewrite standard input; omit -i");
  }
  try {
    rt::write_output_file(common.input, {formatted});  // keeps the file's mode
  } catch (const rt::OutputError &e) {
    return report_error(common, "io-error", e.what());
  }
  return kExitOk;
}

}  // namespace spmd::driver

namespace spmd::driver {

namespace {
/// A CLI11 validator from a parser `parse(text, error)` that sets `error` when it fails;
/// CLI11 reports the error as a usage error.
template <typename Parse>
CLI::Validator checked_by(Parse parse, const char *what) {
  return CLI::Validator(
      [parse](std::string &text) {
        std::string error;
        return parse(text, error) ? std::string() : error;
      },
      "", what);
}
}  // namespace

void add_common_options(CLI::App &cmd, CommonOptions &common, bool sizes) {
  cmd.add_option("file", common.input, "The .spmd source file (- reads standard input)")
      ->required()
      ->type_name("FILE");
  cmd.add_flag("--no-auto-pbroadcast", common.no_auto_pbroadcast,
               "Do not insert pbroadcast automatically; report each place that needs one");
  cmd.add_option("--lib-path", common.library_paths,
                 "Directory searched for imported modules before the standard library "
                 "(repeatable)")
      ->type_name("DIR");
  cmd.add_option("--max-errors", common.max_errors, "Stop after this many errors")
      ->check(CLI::Range(1, 10000));
  cmd.add_option("--unroll", common.unroll,
                 "Also unroll the loops of at most N iterations (loops stay loops otherwise; "
                 "those marked [[unroll]] are always unrolled)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  if (!sizes) return;
  cmd.add_option("--mesh", common.meshes,
                 "Resize axes of a mesh: \"(batch: 4)\" (the program's only mesh) or "
                 "\"M=(batch: 4, model: 2)\"; specs must still divide the shapes (repeatable)")
      ->type_name("[MESH=](AXIS: SIZE, ...)")
      ->check(checked_by(parse_mesh_override, "mesh override"));
  cmd.add_option("--set", common.sizes,
                 "Size every dimension named NAME in shmap signatures (f32[n, 8] with --set "
                 "n=128; repeatable)")
      ->type_name("NAME=SIZE")
      ->check(checked_by(parse_size_setting, "size setting"));
}

void register_check_commands(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  CLI::App *check = app.add_subcommand(
      "check", "Parse and type-check a file; print diagnostics; exit 0 if it is valid");
  add_common_options(*check, common);
  static bool strict = false;
  check->add_flag("--strict", strict,
                  "Sharded functions: written specs that conflict (so `spmdc shard` would move "
                  "data to reconcile them) are errors, not warnings");
  out.push_back({check, [&common] { return run_check(common, strict); }});

  static PrintOptions print_options;
  CLI::App *print = app.add_subcommand(
      "print", "Print the checked program as .spmd source (after pbroadcast insertion)");
  add_common_options(*print, common);
  print->add_flag("--types", print_options.types,
                  "Annotate every value with its local type and device variance");
  print
      ->add_option("--emit", print_options.emit,
                   "Stop after a phase and print it: ast (syntax tree), typed (= --types), "
                   "ir (raw instructions), source (default); or after a step of the check "
                   "script (lower, infer_variance, derived_functions, explicit_pbroadcast, "
                   "unroll_loops) and print its raw instructions")
      ->check(CLI::IsMember([] {
        std::vector<std::string> choices{"ast", "typed", "ir", "source"};
        for (const std::string &s : check_steps()) choices.push_back(s);
        return choices;
      }()));
  CLI::Option *stats =
      print->add_flag("--stats", print_options.stats,
                      "Print, per shmap, how many collectives of each kind it runs and how many "
                      "bytes they move per device");
  print->add_option("--fn", print_options.fn, "With --stats: only this shmap (default: every one)")
      ->needs(stats);
  out.push_back({print, [&common] { return run_print(common, print_options); }});

  static FmtOptions fmt_options;
  CLI::App *fmt = app.add_subcommand("fmt", "Print the file in canonical formatting");
  add_common_options(*fmt, common, /*sizes=*/false);
  fmt->add_flag("-i,--in-place", fmt_options.in_place, "Rewrite the file instead of printing");
  fmt->add_flag("--check", fmt_options.check,
                "Exit 1 if the file is not canonically formatted (prints nothing else)");
  out.push_back({fmt, [&common] { return run_fmt(common, fmt_options); }});
}

}  // namespace spmd::driver
