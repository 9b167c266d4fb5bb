// driver/cmd_shard.cpp — `spmdc shard` and `spmdc reshard`.
//
// shard: compiles the file, runs the sharding phase (sharding/shard.h) on a
// sharded function and writes the emitted shmap as .spmd source (-o FILE or
// stdout); --explain prints why the plan looks as it does (to stdout; the
// program then goes only to -o). reshard: plans the collectives between two
// layouts of one array (sharding/connect.h) and prints the steps and their
// cost, or with --program a shmap that performs them.
#include <spdlog/spdlog.h>

#include <cmath>
#include <iostream>

#include "analysis/profile_file.h"
#include "driver/commands.h"
#include "ir/printer.h"
#include "pipeline/prepare.h"
#include "sharding/emit_reshard.h"
#include "sharding/explain.h"
#include "sharding/shard.h"
#include "spmdrt/checked.h"
#include "support/text_scanner.h"

namespace spmd::driver {
namespace {

struct ShardCliOptions {
  std::string emit;  // a step of flatten-for-sharding: stop there, print its raw IR
  std::string function;
  std::string output;
  bool automatic = false;
  std::string memory;  // bytes, with an optional unit
  double time_limit_s = 10;
  double gap_percent = 1;
  bool explain = false;
  bool strict = false;
  bool types = false;
  std::string profile = "h100";
};

/// "16GiB", "512 MB", "1e9" -> bytes; nullopt when not a size.
std::optional<double> parse_bytes(const std::string &text) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception &) {
    return std::nullopt;
  }
  std::string unit;
  for (size_t i = pos; i < text.size(); ++i)
    if (!std::isspace(static_cast<unsigned char>(text[i]))) unit += text[i];
  double scale = 1;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KB" || unit == "kB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else
    return std::nullopt;
  if (!(value > 0) || !std::isfinite(value)) return std::nullopt;
  return value * scale;
}

std::optional<HardwareProfile> profile_or_report(const std::string &name) {
  std::string error;
  std::optional<HardwareProfile> p = resolve_profile(name, error);
  if (!p) std::cerr << "spmdc: error: " << error << "\n";
  return p;
}

int run_shard(const CommonOptions &common, const ShardCliOptions &o) {
  std::optional<HardwareProfile> profile = profile_or_report(o.profile);
  if (!profile) return kExitUserError;
  std::optional<double> memory;
  if (!o.memory.empty()) {
    memory = parse_bytes(o.memory);
    if (!memory) {
      std::cerr << "spmdc: error: --memory-per-device takes a positive size in bytes, e.g. "
                   "`16GiB` or `2e9`, not `"
                << o.memory << "`\n";
      return kExitUserError;
    }
    if (!o.automatic) {
      std::cerr << "spmdc: error: --memory-per-device limits the search; use it with --auto\n";
      return kExitUserError;
    }
  }
  if (!(o.time_limit_s > 0)) {
    std::cerr << "spmdc: error: --time-limit must be positive\n";
    return kExitUserError;
  }
  if (!(o.gap_percent >= 0 && o.gap_percent <= 100)) {
    std::cerr << "spmdc: error: --gap is a percentage from 0 to 100\n";
    return kExitUserError;
  }
  Compilation c;
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  if (!o.emit.empty()) {  // the sharded functions as that step of flatten-for-sharding left them
    ir::Module flat;
    flat.meshes = c.module->meshes;
    for (const ir::Function &f : c.module->functions)
      if (f.kind == ir::FunctionKind::Sharded && (o.function.empty() || f.name == o.function))
        flat.functions.push_back(flatten_for_sharding(*c.module, f, o.emit));
    std::cout << ir::dump_ir(flat);
    return kExitOk;
  }
  sharding::ShardOptions so;
  so.function = o.function;
  so.automatic = o.automatic;
  so.strict = o.strict;
  so.search.memory_per_device = memory;
  so.search.time_limit_s = o.time_limit_s;
  so.search.gap = o.gap_percent / 100;
  so.profile = *profile;
  so.source_path = common.input;
  so.sources = &c.sources;
  DiagnosticEngine diags;
  std::optional<sharding::ShardResult> r = sharding::shard(*c.module, so, diags);
  if (!diags.all().empty()) std::cerr << render_diagnostics(diags, c.sources, common.color);
  if (!r) return kExitUserError;
  if (r->search) {
    if (!r->search->optimal)
      std::cerr << "spmdc: note: sharding search " << r->search->status << "\n";
    spdlog::debug("sharding search: {} variables, {} rows; built in {:.3f} s, solved in {:.3f} s",
                  r->search->variables, r->search->rows, r->search->build_seconds,
                  r->search->solve_seconds);
  }
  ir::PrintOptions po;
  po.types = o.types;
  std::string program = ir::print_module(r->module, po);
  if (o.explain) {
    std::cout << sharding::explain(r->problem, r->plan, r->search, memory, &c.sources);
    if (o.output.empty()) return kExitOk;
  }
  return write_output(common, o.output, program);
}

// ------------------------------------------------------------------ reshard

struct ReshardCliOptions {
  std::string mesh, type, from, to;
  std::string profile = "h100";
  bool program = false;
};

std::optional<rt::Mesh> parse_mesh(const std::string &text, std::string &error) {
  TextScanner in(text);
  std::vector<rt::MeshAxis> axes;
  error = "--mesh must look like `(x: 2, y: 4)`";
  if (!in.eat('(')) return std::nullopt;
  do {
    std::string name = in.word();
    if (name.empty() || !in.eat(':')) return std::nullopt;
    auto size = in.integer();
    if (!size || *size < 1 || *size > 4096) {
      error = "mesh axis sizes must be between 1 and 4096";
      return std::nullopt;
    }
    for (const auto &a : axes)
      if (a.name == name) {
        error = "axis `" + name + "` appears twice in --mesh";
        return std::nullopt;
      }
    axes.push_back({name, *size});
  } while (in.eat(','));
  if (!in.eat(')') || !in.at_end() || axes.size() > 16) return std::nullopt;
  int64_t devices = 1;
  for (const auto &a : axes) devices *= a.size;
  if (devices > 65536) {
    error = "the mesh has more than 65536 devices";
    return std::nullopt;
  }
  return rt::Mesh(axes);
}

bool parse_type(const std::string &text, DType &dtype, Shape &shape, std::string &error) {
  TextScanner in(text);
  error = "--type must look like `f32[64, 64]`";
  auto d = parse_dtype(in.word());
  if (!d || !in.eat('[')) return false;
  dtype = *d;
  if (!in.eat(']')) {
    do {
      auto n = in.integer();
      if (!n || *n > (int64_t{1} << 40)) return false;
      shape.push_back(*n);
    } while (in.eat(','));
    if (!in.eat(']')) return false;
  }
  return in.at_end();
}

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, v == std::floor(v) && std::abs(v) < 1e15 ? "%.0f" : "%.4g", v);
  return b;
}

int run_reshard(const ReshardCliOptions &o) {
  std::optional<HardwareProfile> profile = profile_or_report(o.profile);
  if (!profile) return kExitUserError;
  std::string error;
  std::optional<rt::Mesh> mesh = parse_mesh(o.mesh, error);
  DType dtype = DType::F32;
  Shape shape;
  auto fail = [](const std::string &message) {
    std::cerr << "spmdc: error: " << message << "\n";
    return kExitUserError;
  };
  if (!mesh) return fail(error);
  if (!parse_type(o.type, dtype, shape, error)) return fail(error);
  if (!rt::shape_fits(shape, static_cast<int64_t>(rt::dtype_size(dtype))))
    return fail("--type: " + shape_type_str(dtype, shape) +
                " is too large: an array may hold at most 2^60 bytes [shape-too-large]");
  auto from = sharding::parse_sharding(o.from, *mesh, shape.size(), error);
  if (!from) return fail("--from: " + error);
  auto to = sharding::parse_sharding(o.to, *mesh, shape.size(), error);
  if (!to) return fail("--to: " + error);
  for (auto *s : {&*from, &*to})
    if (!sharding::fits(*mesh, shape, *s))
      return fail(sharding::to_string(*s, *mesh) + " does not fit " + shape_type_str(dtype, shape) +
                  ": a split dimension is not divisible by its devices");
  if (!to->partial.empty() && !from->partial.contains_all(to->partial))
    return fail("--to can be partial only over axes --from is partial over");
  if (o.program && !to->partial.empty())
    return fail(
        "--program: a shmap's results are complete arrays, so --to cannot be partial "
        "(plan it without --program)");
  if (dtype == DType::Bool && !from->partial.empty())
    return fail("--from: a bool array cannot hold partial sums (psum does not take bool)");
  sharding::Connector connector(*mesh, *profile);
  sharding::ReshardPlan plan = connector.connect(shape, dtype, *from, *to);
  if (!plan.possible) return fail("no sequence of collectives reaches --to from --from");
  if (o.program) {
    std::cout << ir::print_module(sharding::reshard_program(*mesh, shape, dtype, *from, *to, plan));
    return kExitOk;
  }
  std::cout << "reshard " << shape_type_str(dtype, shape) << " on " << o.mesh << ": "
            << sharding::to_string(*from, *mesh) << " -> " << sharding::to_string(*to, *mesh)
            << "\n";
  if (plan.steps.empty()) std::cout << "  nothing to do: the layouts are the same\n";
  sharding::Sharding at = *from;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const sharding::ReshardStep &s = plan.steps[k];
    Shape before = sharding::local_shape(*mesh, shape, at);
    Shape after = sharding::local_shape(*mesh, shape, s.after);
    std::cout << "  " << k + 1 << ". " << sharding::step_str(s, *mesh) << "   "
              << shape_type_str(dtype, before) << " -> " << shape_type_str(dtype, after) << "   "
              << sharding::to_string(s.after, *mesh) << "   ";
    if (op_communicates(s.op))
      std::cout << fmt(s.moved_bytes) << " bytes moved per device\n";
    else
      std::cout << "local slice, no communication\n";
    at = s.after;
  }
  std::cout << "total: " << plan.collectives() << " collective"
            << (plan.collectives() == 1 ? "" : "s") << ", " << fmt(plan.moved_bytes)
            << " bytes moved per device, " << fmt(plan.seconds * 1e6) << " us on " << profile->name
            << " (alpha " << fmt(profile->latency_s * 1e6) << " us + bytes / "
            << fmt(profile->bw_bytes_per_s / 1e9) << " GB/s per collective)\n";
  if (plan.search != sharding::ReshardSearch::Exhaustive)
    std::cout << "note: on a mesh of more than " << sharding::kExhaustiveReshardAxes
              << " axes the plan is "
              << (plan.search == sharding::ReshardSearch::Directed
                      ? "the cheapest over the layouts on the way to --to (each dimension's "
                        "axes a prefix of its --from or --to axes)"
                      : "the direct one (sum, gather what differs, slice): the search passed "
                        "its budget of " +
                            std::to_string(sharding::kMaxReshardLayouts) + " layouts")
              << ", not proven the cheapest of all (docs/limits.md)\n";
  return kExitOk;
}

}  // namespace

void register_shard_commands(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static ShardCliOptions o;
  CLI::App *cmd = app.add_subcommand(
      "shard",
      "Turn a sharded (global-view) function into an explicit shmap program: specs propagated "
      "from the written ones, or chosen by an ILP search with --auto");
  add_common_options(*cmd, common);
  cmd->add_option("--fn", o.function, "The sharded function (default: the only one)");
  cmd->add_option("-o,--output", o.output, "Write the shmap program here (default: stdout)");
  cmd->add_flag("--auto", o.automatic,
                "Choose every `auto` spec and every op's strategy by minimising the estimated "
                "time per device (compute + communication), solved as an ILP with CBC");
  cmd->add_option("--memory-per-device", o.memory,
                  "With --auto: a per-device memory limit for the parameters and the values "
                  "live at once (resharded copies not counted), in bytes (units B, KB, MB, GB, "
                  "KiB, MiB, GiB)");
  cmd->add_option("--time-limit", o.time_limit_s,
                  "With --auto: stop the search after this many seconds of CPU time and use the "
                  "best plan found (default 10)");
  cmd->add_option("--gap", o.gap_percent,
                  "With --memory-per-device: accept a plan proven within this many percent of "
                  "the optimum without starting CBC (default 1; 0 asks for a proof of optimality)");
  cmd->add_flag("--explain", o.explain,
                "Print each op's strategy, its cost, the best rejected alternative and why, the "
                "total next to pure data parallelism and pure replication, and the plan's peak "
                "memory per device by kind: parameters, optimizer state, gradients, saved "
                "activations, inputs, temporaries (the program goes only to -o)");
  cmd->add_flag("--strict", o.strict,
                "Treat written specs that conflict (needing data moved between devices) as "
                "errors instead of inserting reshards");
  cmd->add_flag("--types", o.types, "Annotate the program with types and variance");
  cmd->add_option("--emit", o.emit,
                  "Stop after this step of the flatten-for-sharding script and print the "
                  "sharded functions' raw instructions: inline_calls, unroll_loops, simplify")
      ->check(CLI::IsMember(flatten_for_sharding_steps()))
      ->type_name("STEP");
  cmd->add_option("--profile", o.profile,
                  "Hardware profile for costs: h100, h200, h100-ib, or a profile file (.json; "
                  "docs/sharding.md, \"Hardware profiles\"); default h100");
  out.push_back({cmd, [&common] { return run_shard(common, o); }});

  static ReshardCliOptions r;
  CLI::App *rs = app.add_subcommand(
      "reshard",
      "Plan the cheapest collectives that turn one layout of an array into another, and their "
      "bytes per device");
  rs->add_option("--mesh", r.mesh, "The mesh, e.g. \"(x: 2, y: 4)\"")->required();
  rs->add_option("--type", r.type, "The global array type, e.g. \"f32[64, 64]\"")->required();
  rs->add_option("--from", r.from,
                 "The layout it has, e.g. \"P(x, y)\" or \"P(x, partial=y)\" (partial sums)")
      ->required();
  rs->add_option("--to", r.to, "The layout wanted, e.g. \"P(y, x)\"")->required();
  rs->add_option(
      "--profile", r.profile,
      "Hardware profile for time: h100, h200, h100-ib, or a profile file (.json); default h100");
  rs->add_flag("--program", r.program,
               "Print a shmap program that performs the reshard instead (a partial source is "
               "passed as its parts along a leading dimension)");
  out.push_back({rs, [] { return run_reshard(r); }});
}

}  // namespace spmd::driver
