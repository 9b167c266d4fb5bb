// driver/cmd_run.cpp — `spmdc run`: execute a shmap on a simulated CPU mesh.
//
// Compiles the file, picks the shmap (--fn, or the only one), reads every
// input from a .npy file (--in NAME=PATH) or makes it with --random SEED,
// validates everything (names, files, global shapes and dtypes, output
// directories) before running, runs it with the interpreter (interp/), prints
// each output's global type and values and writes the requested .npy files.
// Output files are written all or none (spmdrt/output_file.h), so a failed
// run leaves none behind.
// Exit status: 0 ok, 1 user error, 2 internal error (e.g. a failed
// --check-replication, which means the type system was wrong).
#include <iostream>
#include <optional>

#include "analysis/checkpoint_loops.h"
#include "analysis/memory_estimate.h"
#include "driver/commands.h"
#include "interp/interpreter.h"
#include "spmdrt/cli_io.h"
#include "spmdrt/kernels.h"
#include "spmdrt/parallel.h"

namespace spmd::driver {
namespace {

struct RunOptions {
  std::string fn;
  std::vector<std::string> inputs;   // NAME=PATH
  std::vector<std::string> outputs;  // NAME=PATH
  std::string out_dir;
  std::optional<std::string> random_seed;  // parsed by rt::parse_seed
  std::string max_memory;                  // parsed by rt::parse_byte_size
  bool check_replication = false;
  bool check_nan = false;
  int64_t print_limit = 1000;
  bool quiet = false;
  int iters = 0, warmup = 0;
  bool cast = false;
  bool report_memory = false;
  int threads = 0;  // --threads; 0: SPMDRT_THREADS or the hardware threads
  bool flush_denormals = false;
  rt::CheckpointOptions checkpoint;
};

/// A user error: printed as `spmdc: error: ...`, exit 1.
using UsageError = rt::CliError;
using rt::join_names;

int choose_function(const ir::Module &module, const std::string &fn, const std::string &file) {
  std::vector<std::string> names;  // shmap and sharded functions
  int only = -1;
  bool any_sharded = false;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (ir::is_top_level(module.functions[i]) && module.functions[i].entry) {
      names.push_back(module.functions[i].name);
      any_sharded |= module.functions[i].kind == ir::FunctionKind::Sharded;
      only = static_cast<int>(i);
    }
  const std::string plural = any_sharded ? "functions" : "shmaps";
  if (fn.empty()) {
    if (names.size() == 1) return only;
    if (names.empty()) throw UsageError{"`" + file + "` defines no shmap to run"};
    throw UsageError{"`" + file + "` defines " + std::to_string(names.size()) + " " + plural +
                     " (" + join_names(names) + "); choose one with --fn NAME"};
  }
  int index = module.find_function(fn);
  if (index >= 0 && ir::is_top_level(module.functions[index])) return index;
  throw UsageError{"`" + file + "` has no " + (any_sharded ? "function" : "shmap") + " named `" +
                   fn + "` (its " + plural + ": " + join_names(names) + ")"};
}

/// Reads, checks and (for bf16 parameters, or with --cast) casts every input;
/// `notes` receives a line per input --cast converted.
std::vector<rt::Tensor> gather_inputs(const ir::Module &module, const ir::Function &f,
                                      const RunOptions &options, std::vector<std::string> &notes) {
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (size_t k = 0; k < f.params.size(); ++k) {
    names.push_back(ir::param_name(f, k));
    dtypes.push_back(f.type(f.params[k].value).dtype);
    shapes.push_back(f.params[k].global_shape);
  }
  std::optional<uint64_t> seed;
  if (options.random_seed) seed = rt::parse_seed(*options.random_seed);
  std::vector<std::string> size_names;  // of one-dimensional parameters (token files)
  for (const ir::Param &p : f.params)
    size_names.push_back(p.size_names.size() == 1 ? p.size_names[0] : std::string());
  return rt::gather_inputs(
      f.name, names, dtypes, shapes, options.inputs, seed,
      [&](size_t k, DType dtype, const Shape &shape, const std::string &found_in) {
        return interp::check_input(module, f, k, dtype, shape, found_in);
      },
      rt::InputCasts{options.cast, &notes}, size_names);
}

/// Final path of every output to write, by result index.
std::vector<std::vector<rt::OutputPath>> output_paths(const ir::Function &f,
                                                      const RunOptions &options) {
  std::vector<std::string> names;
  for (size_t k = 0; k < f.results.size(); ++k) names.push_back(ir::result_name(f, k));
  return rt::output_paths(f.name, names, options.outputs, options.out_dir);
}

int run_run(const CommonOptions &common, const RunOptions &options) {
  Compilation c;
  int status = compile_and_report(c, common, Phase::Variance);
  if (status != kExitOk) return status;
  const ir::Module &module = *c.module;
  if (options.threads > 0) rt::set_threads(options.threads);
  if (options.flush_denormals) rt::set_flush_denormals(true);
  try {
    const int index = choose_function(module, options.fn, common.input);
    const ir::Function &f = module.functions[static_cast<size_t>(index)];
    auto paths = output_paths(f, options);
    // Before anything is read or allocated: is there room to run it?
    const rt::MemoryEstimate estimate = estimate_memory(module, f, &c.sources);
    rt::check_resources(
        f.name, module.mesh_of(f).num_devices(), estimate, host_io_bytes(f),
        options.max_memory.empty() ? -1 : rt::parse_byte_size(options.max_memory, "--max-memory"));
    std::vector<std::string> notes;
    std::vector<rt::Tensor> inputs = gather_inputs(module, f, options, notes);
    for (const std::string &note : notes) report_note(common, "input-cast", note);

    // --checkpoint-dir / --resume: checked (and a checkpoint read) before running.
    std::unique_ptr<rt::Checkpointer> checkpoint;
    if (options.checkpoint.active()) {
      if (options.iters > 0 || options.warmup > 0)
        throw UsageError{"--checkpoint-dir and --resume do not go with --iters and --warmup"};
      const auto loops = analysis::checkpoint_loops(module, f);
      const size_t loop = rt::choose_checkpoint_loop(loops, options.checkpoint.loop, f.name);
      std::vector<int64_t> devices;  // a sharded function runs on one device
      const int64_t count =
          f.kind == ir::FunctionKind::Sharded ? 1 : module.mesh_of(f).num_devices();
      for (int64_t d = 0; d < count; ++d) devices.push_back(d);
      checkpoint = std::make_unique<rt::Checkpointer>(options.checkpoint, f.name,
                                                      analysis::checkpoint_mesh(module.mesh_of(f)),
                                                      loops[loop], loop, devices, 0, 1);
    } else if (!options.checkpoint.loop.empty() || options.checkpoint.every > 0) {
      throw UsageError{std::string(options.checkpoint.loop.empty() ? "--checkpoint-every"
                                                                   : "--checkpoint-loop") +
                       " needs --checkpoint-dir DIR or --resume DIR"};
    }

    interp::InterpOptions io;
    io.checkpoint = checkpoint.get();
    io.check_replication = options.check_replication;
    io.check_nan = options.check_nan;
    io.timing.iters = options.iters;
    io.timing.warmup = options.warmup;
    // A sharded function runs unsharded, on one device.
    const rt::Mesh one_device({{"device", 1}});
    const rt::Mesh &run_mesh = f.kind == ir::FunctionKind::Sharded ? one_device : module.mesh_of(f);
    if (options.report_memory) io.timing.meters = rt::make_meters(run_mesh);
    std::vector<double> seconds;
    io.seconds = &seconds;
    std::vector<rt::Tensor> results;
    try {
      results = interp::run_shmap(module, index, inputs, io);
    } catch (const interp::ReplicationError &e) {
      DiagnosticEngine diags;
      diags.internal(e.span(), e.what());
      print_diagnostics(diags, c.sources, common);
      return kExitInternalError;
    } catch (const interp::InputError &e) {
      throw UsageError{e.what()};
    } catch (const interp::RunError &e) {
      // Where and on which device: `f.spmd:4:7: error: while running `f` on device 2 (i: 2): ...`.
      DiagnosticEngine diags;
      const rt::Mesh &mesh = module.mesh_of(f);
      const bool global_view = f.kind == ir::FunctionKind::Sharded;
      diags.error("run-error", e.span(),
                  "while running `" + f.name + "`" +
                      (global_view || mesh.num_devices() == 1
                           ? std::string()
                           : " on device " + std::to_string(e.device()) + " " +
                                 rt::format_position(mesh, e.device())) +
                      ": " + e.what());
      print_diagnostics(diags, c.sources, common);
      return kExitUserError;
    } catch (const rt::RuntimeError &e) {
      throw UsageError{"while running `" + f.name + "`: " + e.what()};
    } catch (const std::bad_alloc &) {
      throw UsageError{"out of memory while running `" + f.name +
                       "` (it needed more than the estimate checked before running)"};
    }

    if (checkpoint) checkpoint->finish();
    if (!options.quiet) {
      for (size_t k = 0; k < results.size(); ++k)
        std::cout << ir::result_name(f, k) << ": "
                  << shape_type_str(results[k].dtype(), results[k].shape()) << " (global) =\n"
                  << rt::format_tensor(results[k], options.print_limit) << "\n";
    }
    if (!seconds.empty()) {
      std::cout.flush();
      std::cerr << rt::timing_report("spmdc run", f.name, "the interpreter",
                                     module.mesh_of(f).num_devices(), seconds, options.warmup);
    }
    if (options.report_memory) {
      std::vector<std::pair<int64_t, int64_t>> peaks;
      for (int64_t d = 0; d < run_mesh.num_devices(); ++d)
        peaks.emplace_back(d, io.timing.meter(d)->peak());
      std::cout.flush();
      std::cerr << rt::memory_report("spmdc run", f.name, run_mesh, peaks, estimate.device_bytes);
    }
    rt::write_outputs(results, paths, options.inputs);
  } catch (const UsageError &e) {
    return report_error(common, "run-error", e.message);
  }
  return kExitOk;
}

}  // namespace

void register_run_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static RunOptions options;
  CLI::App *run = app.add_subcommand(
      "run",
      "Run a shmap on a simulated CPU mesh (one simulated device per mesh position), or a "
      "sharded function unsharded on one device (the reference for `spmdc shard`)");
  add_common_options(*run, common);
  run->add_option("--fn", options.fn,
                  "The shmap to run (default: the file's only shmap that no body calls)");
  run->add_option("--in", options.inputs,
                  "Input NAME=PATH.npy, NAME a parameter (repeatable); NAME=PATH:u16 or "
                  "NAME=PATH:u32 reads a raw token file (little-endian ids) into an i32[n] "
                  "parameter")
      ->type_name("NAME=PATH");
  run->add_option("--out", options.outputs, "Write output NAME to PATH.npy (repeatable)")
      ->type_name("NAME=PATH");
  run->add_flag("--cast", options.cast,
                "Convert an input file of another dtype to its parameter's (f64 -> f32 rounds; "
                "integers and bools to floats; bool -> i32), with a note per input");
  run->add_option("--out-dir", options.out_dir,
                  "Write every output as DIR/NAME.npy (DIR is created when missing)")
      ->type_name("DIR");
  run->add_option("--random", options.random_seed,
                  "Make every input not given with --in from this seed, 0 to 2^64 - 1 "
                  "(uniform in [-1, 1))");
  run->add_option("--max-memory", options.max_memory,
                  "The memory the run may use, e.g. 64G (default: the memory available); "
                  "checked against an estimate before running");
  run->add_flag("--report-memory", options.report_memory,
                "After the run, print each device's peak bytes of tensors (its input blocks "
                "included) on stderr, with the estimate checked before running");
  run->add_flag("--check-replication", options.check_replication,
                "Check that every value the type system calls invariant is bit-identical "
                "on the devices it is invariant across (a failure is a compiler bug)");
  run->add_flag("--check-nan", options.check_nan,
                "Stop at the first op whose floating result holds a NaN or an infinity, "
                "naming the op, its source location and the device (ops run unfused)");
  run->add_option("--print-limit", options.print_limit,
                  "Print arrays with more elements than this abbreviated (default 1000)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  run->add_option("--iters", options.iters,
                  "Time N more runs of the body (after --warmup runs) across the whole mesh; "
                  "prints median/min/max on stderr, as built executables do")
      ->check(CLI::Range(0, 1000000));
  run->add_option("--warmup", options.warmup, "Untimed runs before the --iters timed ones")
      ->check(CLI::Range(0, 1000000));
  run->add_option("--threads", options.threads,
                  "Threads the ops of all devices share, one pool (default: SPMDRT_THREADS, "
                  "else the hardware threads); results do not depend on it")
      ->check(CLI::Range(1, 4096));
  run->add_flag("--flush-denormals", options.flush_denormals,
                "Subnormal floats become 0, as XLA does on the CPU (faster where they occur; "
                "executables take the same flag and compute the same bits)");
  run->add_option("--checkpoint-dir", options.checkpoint.dir,
                  "Save the state of the training loop (the values its top-level `for` carries) "
                  "in DIR every --checkpoint-every iterations (DIR is created when missing)")
      ->type_name("DIR");
  run->add_option("--checkpoint-every", options.checkpoint.every,
                  "Save a checkpoint after every K iterations of the loop")
      ->type_name("K")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 62));
  run->add_option("--resume", options.checkpoint.resume,
                  "Continue from the newest checkpoint in DIR (same program, mesh and sizes; "
                  "the loop may run longer): the outputs are an uninterrupted run's")
      ->type_name("DIR");
  run->add_option("--checkpoint-loop", options.checkpoint.loop,
                  "The top-level loop to checkpoint, by its variable (needed when the "
                  "function has several)")
      ->type_name("VAR");
  run->add_flag("-q,--quiet", options.quiet, "Do not print the outputs");
  out.push_back({run, [&common] { return run_run(common, options); }});
}

}  // namespace spmd::driver
