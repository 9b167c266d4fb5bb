// driver/cmd_run.cpp — `spmdc run`: execute a shmap on a simulated CPU mesh.
//
// Compiles the file, picks the shmap (--fn, or the only one), reads every
// input from a .npy file (--in NAME=PATH) or makes it with --random SEED,
// validates everything (names, files, global shapes and dtypes, output
// directories) before running, runs it with the interpreter (interp/), prints
// each output's global type and values and writes the requested .npy files.
// Output files are written to temporaries first and renamed into place only
// when all of them were written, so a failed run leaves none behind.
// Exit status: 0 ok, 1 user error, 2 internal error (e.g. a failed
// --check-replication, which means the type system was wrong).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "driver/commands.h"
#include "interp/interpreter.h"
#include "spmdrt/kernels.h"
#include "spmdrt/npy.h"

namespace spmd::driver {
namespace {

struct RunOptions {
  std::string fn;
  std::vector<std::string> inputs;   // NAME=PATH
  std::vector<std::string> outputs;  // NAME=PATH
  std::string out_dir;
  std::optional<uint64_t> random_seed;
  bool check_replication = false;
  int64_t print_limit = 1000;
  bool quiet = false;
};

/// A user error: printed as `spmdc: error: ...`, exit 1.
struct UsageError {
  std::string message;
};

std::string join_names(const std::vector<std::string> &names) {
  std::string s;
  for (const auto &n : names) s += (s.empty() ? "`" : ", `") + n + "`";
  return s.empty() ? "none" : s;
}

std::pair<std::string, std::string> split_assignment(const std::string &text, const char *flag) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError{std::string("malformed ") + flag + " `" + text + "`: expected NAME=PATH"};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

bool is_directory(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent_dir(const std::string &path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

int choose_function(const ir::Module &module, const std::string &fn, const std::string &file) {
  std::vector<std::string> shmaps;
  int only = -1;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (module.functions[i].kind == ir::FunctionKind::Shmap) {
      shmaps.push_back(module.functions[i].name);
      only = static_cast<int>(i);
    }
  if (fn.empty()) {
    if (shmaps.size() == 1) return only;
    if (shmaps.empty()) throw UsageError{"`" + file + "` defines no shmap to run"};
    throw UsageError{"`" + file + "` defines " + std::to_string(shmaps.size()) + " shmaps (" +
                     join_names(shmaps) + "); choose one with --fn NAME"};
  }
  int index = module.find_function(fn);
  if (index >= 0 && module.functions[index].kind == ir::FunctionKind::Shmap) return index;
  throw UsageError{"`" + file + "` has no shmap named `" + fn +
                   "` (its shmaps: " + join_names(shmaps) + ")"};
}

/// Reads, checks and (for bf16 parameters) casts every input.
std::vector<rt::Tensor> gather_inputs(const ir::Module &module, const ir::Function &f,
                                      const RunOptions &options) {
  std::map<std::string, size_t> by_name;
  std::vector<std::string> names;
  for (size_t k = 0; k < f.params.size(); ++k) {
    names.push_back(interp::param_name(f, k));
    by_name[names.back()] = k;
  }
  std::vector<std::optional<std::string>> paths(f.params.size());
  for (const std::string &text : options.inputs) {
    auto [name, path] = split_assignment(text, "--in");
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw UsageError{"`" + f.name + "` has no parameter named `" + name +
                       "` (its parameters: " + join_names(names) + ")"};
    if (paths[it->second]) throw UsageError{"input `" + name + "` is given twice"};
    paths[it->second] = path;
  }
  std::vector<std::string> missing;
  for (size_t k = 0; k < paths.size(); ++k)
    if (!paths[k] && !options.random_seed) missing.push_back(names[k]);
  if (!missing.empty())
    throw UsageError{std::string("missing input") + (missing.size() == 1 ? " " : "s ") +
                     join_names(missing) + " of `" + f.name +
                     "`; pass --in NAME=FILE.npy for each, or --random SEED"};

  std::vector<rt::Tensor> inputs(f.params.size());
  for (size_t k = 0; k < f.params.size(); ++k) {
    const Type &local = f.type(f.params[k].value);
    const Shape &global = f.params[k].global_shape;
    if (!paths[k]) {
      inputs[k] = rt::random_tensor(local.dtype, global, *options.random_seed * 1000003ULL + k);
      continue;
    }
    rt::Tensor t;
    try {
      t = rt::read_npy(*paths[k]);
    } catch (const rt::RuntimeError &e) {
      throw UsageError{"cannot read input `" + names[k] + "`: " + e.what()};
    }
    const bool widened_bf16 = local.dtype == DType::BF16 && t.dtype() == DType::F32;
    std::string problem = interp::check_input(module, f, k, widened_bf16 ? DType::BF16 : t.dtype(),
                                              t.shape(), "`" + *paths[k] + "`");
    if (!problem.empty()) {
      if (widened_bf16)  // report what the file really holds
        problem = interp::check_input(module, f, k, t.dtype(), t.shape(), "`" + *paths[k] + "`");
      throw UsageError{problem};
    }
    inputs[k] = widened_bf16 ? rt::cast(t, DType::BF16) : t;
  }
  return inputs;
}

/// Final path of every output to write, by result index.
std::vector<std::vector<std::string>> output_paths(const ir::Function &f,
                                                   const RunOptions &options) {
  std::vector<std::string> names;
  std::map<std::string, size_t> by_name;
  for (size_t k = 0; k < f.results.size(); ++k) {
    names.push_back(ir::result_name(f, k));
    by_name[names.back()] = k;
  }
  std::vector<std::vector<std::string>> paths(f.results.size());
  for (const std::string &text : options.outputs) {
    auto [name, path] = split_assignment(text, "--out");
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw UsageError{"`" + f.name + "` has no output named `" + name +
                       "` (its outputs: " + join_names(names) + ")"};
    if (!is_directory(parent_dir(path)))
      throw UsageError{"cannot write output `" + name + "` to `" + path + "`: directory `" +
                       parent_dir(path) + "` does not exist"};
    paths[it->second].push_back(path);
  }
  if (!options.out_dir.empty()) {
    if (!is_directory(options.out_dir))
      throw UsageError{"output directory `" + options.out_dir + "` does not exist"};
    for (size_t k = 0; k < names.size(); ++k)
      paths[k].push_back(options.out_dir + "/" + names[k] + ".npy");
  }
  return paths;
}

/// Writes every file to a temporary beside it, then renames them all into place.
void write_outputs(const std::vector<rt::Tensor> &results,
                   const std::vector<std::vector<std::string>> &paths) {
  std::vector<std::pair<std::string, std::string>> written;  // temp, final
  const std::string suffix = ".spmdc-run-" + std::to_string(::getpid()) + ".tmp";
  try {
    for (size_t k = 0; k < results.size(); ++k)
      for (const std::string &path : paths[k]) {
        written.emplace_back(path + suffix, path);
        rt::write_npy(path + suffix, results[k]);
      }
  } catch (const rt::RuntimeError &e) {
    for (const auto &w : written) std::remove(w.first.c_str());
    throw UsageError{std::string("cannot write outputs: ") + e.what()};
  }
  for (const auto &[temp, final_path] : written)
    if (std::rename(temp.c_str(), final_path.c_str()) != 0) {
      for (const auto &w : written) std::remove(w.first.c_str());
      throw UsageError{"cannot write output file `" + final_path + "`"};
    }
}

int run_run(const CommonOptions &common, const RunOptions &options) {
  Compilation c;
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  const ir::Module &module = *c.module;
  try {
    const int index = choose_function(module, options.fn, common.input);
    const ir::Function &f = module.functions[static_cast<size_t>(index)];
    auto paths = output_paths(f, options);
    std::vector<rt::Tensor> inputs = gather_inputs(module, f, options);

    interp::InterpOptions io;
    io.check_replication = options.check_replication;
    std::vector<rt::Tensor> results;
    try {
      results = interp::run_shmap(module, index, inputs, io);
    } catch (const interp::ReplicationError &e) {
      DiagnosticEngine diags;
      diags.internal(e.span(), e.what());
      std::cerr << render_diagnostics(diags, c.sources, common.color);
      return kExitInternalError;
    } catch (const interp::InputError &e) {
      throw UsageError{e.what()};
    } catch (const rt::RuntimeError &e) {
      throw UsageError{"while running `" + f.name + "`: " + e.what()};
    }

    if (!options.quiet) {
      for (size_t k = 0; k < results.size(); ++k)
        std::cout << ir::result_name(f, k) << ": "
                  << shape_type_str(results[k].dtype(), results[k].shape()) << " (global) =\n"
                  << rt::format_tensor(results[k], options.print_limit) << "\n";
    }
    write_outputs(results, paths);
  } catch (const UsageError &e) {
    std::cout.flush();
    std::cerr << "spmdc: error: " << e.message << "\n";
    return kExitUserError;
  }
  return kExitOk;
}

}  // namespace

void register_run_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static RunOptions options;
  CLI::App *run = app.add_subcommand(
      "run", "Run a shmap on a simulated CPU mesh (one simulated device per mesh position)");
  add_common_options(*run, common);
  run->add_option("--fn", options.fn, "The shmap to run (optional when the file has one)");
  run->add_option("--in", options.inputs, "Input NAME=PATH.npy, NAME a parameter (repeatable)");
  run->add_option("--out", options.outputs, "Write output NAME to PATH.npy (repeatable)");
  run->add_option("--out-dir", options.out_dir, "Write every output as DIR/NAME.npy");
  run->add_option("--random", options.random_seed,
                  "Make every input not given with --in from this seed (uniform in [-1, 1))");
  run->add_flag("--check-replication", options.check_replication,
                "Check that every value the type system calls invariant is bit-identical "
                "on the devices it is invariant across (a failure is a compiler bug)");
  run->add_option("--print-limit", options.print_limit,
                  "Print arrays with more elements than this abbreviated (default 1000)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  run->add_flag("-q,--quiet", options.quiet, "Do not print the outputs");
  out.push_back({run, [&common] { return run_run(common, options); }});
}

}  // namespace spmd::driver
