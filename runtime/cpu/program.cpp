// runtime/cpu/program.cpp — program_main and the CPU executor (spmdrt/program.h).
//
// This is the command-line half of every emitted executable: argument parsing,
// input loading and validation (messages worded like `spmdc run`'s), sharding
// by in_specs, running through an Executor, unsharding by out_specs, printing
// and atomic output writing. The CPU executor runs the emitted per-device body
// on one thread per mesh position; timed iterations are separated by mesh
// barriers and measured across all devices (StepClock).
#include "spmdrt/program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "spmdrt/cli_io.h"
#include "spmdrt/kernels.h"

namespace spmd::rt {
namespace {

using UsageError = CliError;

struct Options {
  std::string fn;
  std::vector<std::string> inputs, outputs;
  std::string out_dir;
  std::optional<uint64_t> random_seed;
  int iters = 0, warmup = 0;
  int64_t print_limit = 1000;
  bool quiet = false;
};

int64_t parse_int(const std::string &text, const std::string &flag, int64_t lo, int64_t hi) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception &) {
  }
  throw UsageError{flag + " expects an integer in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "], got `" + text + "`"};
}

void print_usage(const char *argv0, const std::vector<ProgramFunction> &functions,
                 const std::string &target) {
  std::cout << "Usage: " << argv0
            << " [--fn NAME] [--in NAME=PATH]... [--out NAME=PATH]... [--out-dir DIR]\n"
               "       [--random SEED] [--iters N] [--warmup N] [--print-limit N] [-q]\n\n"
               "A program built by `spmdc build` (target "
            << target
            << "). Same inputs and outputs as `spmdc run`.\n"
               "  --in NAME=PATH    read parameter NAME (global array) from a .npy file\n"
               "  --random SEED     make every input not given with --in from this seed\n"
               "  --out NAME=PATH   write output NAME to a .npy file\n"
               "  --out-dir DIR     write every output as DIR/NAME.npy\n"
               "  --iters N         time N more runs (after --warmup runs); prints median/min/max\n"
               "  --print-limit N   abbreviate printed arrays above N elements (default 1000)\n"
               "  -q, --quiet       print no outputs\n\nFunctions:\n";
  for (const ProgramFunction &f : functions) {
    std::cout << "  " << f.name << "(";
    for (size_t k = 0; k < f.params.size(); ++k)
      std::cout << (k ? ", " : "") << f.params[k].name << ": "
                << format_type(f.params[k].dtype, f.params[k].global_shape) << " @ "
                << format_spec(f.params[k].spec, f.mesh);
    std::cout << ")\n";
  }
}

Options parse(int argc, char **argv, const std::vector<ProgramFunction> &functions,
              const std::string &target, bool &help) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      auto eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError{arg + " expects a value"};
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      print_usage(argv[0], functions, target);
      help = true;
      return o;
    } else if (arg == "--fn") {
      o.fn = next();
    } else if (arg == "--in") {
      o.inputs.push_back(next());
    } else if (arg == "--out") {
      o.outputs.push_back(next());
    } else if (arg == "--out-dir") {
      o.out_dir = next();
    } else if (arg == "--random") {
      o.random_seed = static_cast<uint64_t>(parse_int(next(), arg, 0, INT64_MAX));
    } else if (arg == "--iters") {
      o.iters = static_cast<int>(parse_int(next(), arg, 0, 1000000));
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(parse_int(next(), arg, 0, 1000000));
    } else if (arg == "--print-limit") {
      o.print_limit = parse_int(next(), arg, 0, int64_t{1} << 40);
    } else if (arg == "-q" || arg == "--quiet") {
      o.quiet = true;
    } else {
      throw UsageError{"unknown argument `" + arg + "` (see --help)"};
    }
  }
  return o;
}

size_t choose_function(const std::vector<ProgramFunction> &functions, const std::string &fn) {
  std::vector<std::string> names;
  for (const auto &f : functions) names.push_back(f.name);
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == fn) return i;
  throw UsageError{"this program has no function named `" + fn +
                   "` (its functions: " + join_names(names) + ")"};
}

std::string check_input(const ProgramFunction &f, size_t k, DType dtype, const Shape &shape,
                        const std::string &found_in) {
  const ProgramValue &p = f.params[k];
  if (dtype == p.dtype && shape == p.global_shape) return {};
  const Shape local = local_shape(f.mesh, p.global_shape, p.spec);
  std::string detail = "the global shape";
  if (local != p.global_shape)
    detail += ", split into " + format_type(p.dtype, local) + " per device";
  if (p.dtype == DType::BF16) detail += "; bf16 is stored as f32 in .npy files";
  return "input `" + p.name + "` of `" + f.name + "` must be " +
         format_type(p.dtype, p.global_shape) + " @ " + format_spec(p.spec, f.mesh) + " (" +
         detail + "), but " + found_in + " holds " + format_type(dtype, shape);
}

std::string program_name(const char *argv0) {
  std::string s = argv0 ? argv0 : "program";
  auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

}  // namespace

std::string format_type(DType dtype, const Shape &shape) {
  std::string s = dtype_name(dtype);
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string format_spec(const PartitionSpec &spec, const Mesh &mesh) {
  size_t n = spec.size();
  while (n > 0 && spec[n - 1].empty()) --n;
  std::string s = "P(";
  for (size_t d = 0; d < n; ++d) {
    if (d) s += ", ";
    if (spec[d].empty()) {
      s += "None";
    } else if (spec[d].size() == 1) {
      s += mesh.axes().at(spec[d][0]).name;
    } else {
      s += "(";
      for (size_t j = 0; j < spec[d].size(); ++j)
        s += (j ? ", " : "") + mesh.axes().at(spec[d][j]).name;
      s += ")";
    }
  }
  return s + ")";
}

int program_main(int argc, char **argv, const std::vector<ProgramFunction> &functions,
                 const std::string &default_fn, const std::string &target, const Executor &exec) {
  const std::string prog = program_name(argc > 0 ? argv[0] : nullptr);
  try {
    bool help = false;
    Options options = parse(argc, argv, functions, target, help);
    if (help) return 0;
    const size_t index = choose_function(functions, options.fn.empty() ? default_fn : options.fn);
    const ProgramFunction &f = functions[index];
    std::vector<std::string> param_names, result_names;
    std::vector<DType> dtypes;
    std::vector<Shape> shapes;
    for (const ProgramValue &p : f.params) {
      param_names.push_back(p.name);
      dtypes.push_back(p.dtype);
      shapes.push_back(p.global_shape);
    }
    for (const ProgramValue &r : f.results) result_names.push_back(r.name);
    auto paths = output_paths(f.name, result_names, options.outputs, options.out_dir);
    std::vector<Tensor> inputs =
        gather_inputs(f.name, param_names, dtypes, shapes, options.inputs, options.random_seed,
                      [&f](size_t k, DType dtype, const Shape &shape, const std::string &found_in) {
                        return check_input(f, k, dtype, shape, found_in);
                      });

    const auto devices = static_cast<size_t>(f.mesh.num_devices());
    std::vector<std::vector<Tensor>> locals(devices);
    for (size_t d = 0; d < devices; ++d)
      for (size_t k = 0; k < inputs.size(); ++k)
        locals[d].push_back(shard(f.mesh, inputs[k], f.params[k].spec, static_cast<int64_t>(d)));

    RunRequest request;
    request.warmup = options.warmup;
    request.iters = options.iters;
    std::vector<double> seconds;
    std::vector<std::vector<Tensor>> out;
    try {
      out = exec(index, locals, request, seconds);
    } catch (const RuntimeError &e) {
      throw UsageError{"while running `" + f.name + "`: " + e.what()};
    }
    std::vector<Tensor> results;
    for (size_t k = 0; k < f.results.size(); ++k) {
      std::vector<Tensor> blocks(devices);
      for (size_t d = 0; d < devices; ++d) blocks[d] = out.at(d).at(k);
      results.push_back(unshard(f.mesh, blocks, f.results[k].spec));
    }
    if (!options.quiet) {
      for (size_t k = 0; k < results.size(); ++k)
        std::cout << f.results[k].name << ": "
                  << format_type(results[k].dtype(), results[k].shape()) << " (global) =\n"
                  << format_tensor(results[k], options.print_limit) << "\n";
    }
    if (!seconds.empty()) {
      std::cout.flush();
      std::cerr << timing_report(prog, f.name, target, static_cast<int64_t>(devices), seconds,
                                 options.warmup);
    }
    write_outputs(results, paths, "spmdrt");
  } catch (const UsageError &e) {
    std::cout.flush();
    std::cerr << prog << ": error: " << e.message << "\n";
    return 1;
  } catch (const RuntimeError &e) {
    std::cout.flush();
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cout.flush();
    std::cerr << prog << ": internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

double StepClock::step_seconds() const {
  if (start_.empty()) return 0.0;
  const auto first = *std::min_element(start_.begin(), start_.end());
  const auto last = *std::max_element(finish_.begin(), finish_.end());
  return std::chrono::duration<double>(last - first).count();
}

void run_steps(DeviceContext &ctx, const RunRequest &request, StepClock &clock,
               std::vector<double> &times, const std::function<void(int iteration)> &step) {
  const auto d = static_cast<size_t>(ctx.device());
  const int total = 1 + request.warmup + request.iters;
  for (int it = 0; it < total; ++it) {
    const bool timed = it > request.warmup;
    if (timed) {
      ctx.barrier();
      clock.start(d);
    }
    step(it);
    if (timed) {
      clock.finish(d);
      ctx.barrier();
      if (d == 0) times.push_back(clock.step_seconds());
    }
  }
}

std::string timing_report(const std::string &who, const std::string &fn, const std::string &target,
                          int64_t devices, std::vector<double> s, int warmup) {
  if (s.empty()) return {};
  std::sort(s.begin(), s.end());
  const double median =
      s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: %s on %s, %lld device%s: %zu iterations (after %d warmup): "
                "median %.6f ms, min %.6f ms, max %.6f ms\n",
                who.c_str(), fn.c_str(), target.c_str(), static_cast<long long>(devices),
                devices == 1 ? "" : "s", s.size(), warmup, median * 1e3, s.front() * 1e3,
                s.back() * 1e3);
  return line;
}

Executor cpu_executor(const std::vector<ProgramFunction> &functions,
                      const std::vector<CpuBody> &bodies) {
  return [&functions, &bodies](size_t fn, const std::vector<std::vector<Tensor>> &locals,
                               const RunRequest &request, std::vector<double> &seconds) {
    const ProgramFunction &f = functions.at(fn);
    const CpuBody &body = bodies.at(fn);
    std::vector<std::vector<Tensor>> out(locals.size());
    std::vector<double> times;
    StepClock clock(locals.size());
    run_on_mesh(f.mesh, [&](DeviceContext &ctx) {
      const auto d = static_cast<size_t>(ctx.device());
      run_steps(ctx, request, clock, times, [&](int it) {
        std::vector<Tensor> r = body(ctx, locals[d]);
        if (it == 0) out[d] = std::move(r);
      });
    });
    seconds = std::move(times);
    return out;
  };
}

}  // namespace spmd::rt
