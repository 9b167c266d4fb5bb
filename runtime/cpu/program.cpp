// runtime/cpu/program.cpp — program_main and the CPU threads executor (spmdrt/program.h).
//
// This is the command-line half of every emitted executable, for every
// executor: argument parsing, validation of inputs and outputs (messages
// worded like `spmdc run`'s), reading or making each local device's input
// blocks, running through an Executor, printing and blockwise output writing
// (program_io.cpp, through spmdrt/output_file.h). Each step whose failure every process can see
// ends with Processes::agree, so an error is printed once and all processes exit with the same
// status. The threads executor runs the emitted per-device body on one thread per mesh position;
// timed iterations are separated by mesh barriers and measured across all devices (StepClock).
#include "spmdrt/program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "program_io.h"
#include "spmdrt/checked.h"
#include "spmdrt/cli_io.h"
#include "spmdrt/kernels.h"
#include "spmdrt/parallel.h"

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
  int64_t max_memory = -1;  // --max-memory; -1: the memory available
  bool quiet = false;
  std::string executor;  // "", "threads" or "mpi"
  bool deterministic = false;
  bool version = false;
  bool cast = false;
  bool report_memory = false;
  int threads = 0;  // --threads; 0: SPMDRT_THREADS or the hardware threads
  bool flush_denormals = false;
  CheckpointOptions checkpoint;
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
                 const std::string &default_fn, const std::string &target) {
  std::cout
      << "Usage: " << argv0
      << " [--fn NAME] [--in NAME=PATH]... [--cast] [--out NAME=PATH]... [--out-dir DIR]\n"
         "       [--random SEED] [--max-memory SIZE] [--iters N] [--warmup N]\n"
         "       [--print-limit N] [-q] [--executor threads|mpi] [--deterministic]\n"
         "       [--report-memory] [--threads N] [--flush-denormals] [--version]\n\n"
         "A program built by `spmdc build` (target "
      << target
      << "). Same inputs and outputs as `spmdc run`.\n"
         "  --in NAME=PATH    read parameter NAME (global array) from a .npy file;\n"
         "                    PATH:u16 or PATH:u32 reads a raw token file (little-endian\n"
         "                    ids, as nanoGPT writes them) into an i32[n] parameter\n"
         "  --cast            convert an input file of another dtype (f64 for an f32\n"
         "                    parameter, ...) to the parameter's, with a note\n"
         "  --random SEED     make every input not given with --in from this seed\n"
         "  --max-memory SIZE the memory one process may use, e.g. 64G (default: what is\n"
         "                    available); checked against an estimate before running\n"
         "  --out NAME=PATH   write output NAME to a .npy file\n"
         "  --out-dir DIR     write every output as DIR/NAME.npy (created when missing)\n"
         "  --iters N         time N more runs (after --warmup runs); prints median/min/max\n"
         "  --report-memory   print each device's peak bytes of tensors (its input blocks\n"
         "                    included) on stderr after the run, with the compiler's estimate\n"
         "  --print-limit N   abbreviate printed arrays above N elements (default 1000)\n"
         "  -q, --quiet       print no outputs\n"
         "  --checkpoint-dir DIR  save the training loop's state (the values its top-level\n"
         "                    `for` carries) in DIR every --checkpoint-every K iterations\n"
         "  --checkpoint-every K  save after every K iterations of the loop\n"
         "  --resume DIR      continue from the newest checkpoint in DIR (same program, mesh,\n"
         "                    sizes and process count; the loop may run longer)\n"
         "  --checkpoint-loop VAR  the top-level loop to save, by its variable (when several)\n"
         "  --executor E      threads: every mesh position in this process, one thread each;\n"
         "                    mpi: one mesh position per MPI process (start with\n"
         "                    `mpirun -np <mesh size>` or srun). Default: mpi when started by\n"
         "                    an MPI launcher, else threads\n"
         "  --deterministic   mpi: reduce in rank order, bit-identical to `spmdc run` (threads\n"
         "                    always are); without it MPI's own reductions may differ in the\n"
         "                    last bits\n"
         "  --threads N       threads the ops of all devices share (one pool; default:\n"
         "                    SPMDRT_THREADS, else the hardware threads); results do not\n"
         "                    depend on it\n"
         "  --flush-denormals subnormal floats become 0 (faster where they occur; as XLA on\n"
         "                    the CPU); the same results as `spmdc run --flush-denormals`\n"
         "  --version         print the program, its target and the spmdc that built it\n\n"
         "Functions"
      << (functions.size() > 1 && default_fn.empty() ? " (choose one with --fn)" : "") << ":\n";
  for (const ProgramFunction &f : functions) {
    std::cout << "  " << f.name << "(";
    for (size_t k = 0; k < f.params.size(); ++k)
      std::cout << (k ? ", " : "") << f.params[k].name << ": "
                << format_type(f.params[k].dtype, f.params[k].global_shape) << " @ "
                << format_spec(f.params[k].spec, f.mesh);
    std::cout << ") on mesh " << format_mesh(f.mesh)
              << (f.name == default_fn && functions.size() > 1 ? " (default)" : "") << "\n";
  }
}

/// Parses into `o` (what was parsed before an error stays); `help` for -h/--help.
void parse(int argc, char **argv, Options &o, bool &help) {
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
      help = true;
      return;
    } else if (arg == "--version") {
      o.version = true;
      return;
    } else if (arg == "--fn") {
      o.fn = next();
    } else if (arg == "--in") {
      o.inputs.push_back(next());
    } else if (arg == "--out") {
      o.outputs.push_back(next());
    } else if (arg == "--out-dir") {
      o.out_dir = next();
    } else if (arg == "--random") {
      o.random_seed = parse_seed(next());
    } else if (arg == "--max-memory") {
      o.max_memory = parse_byte_size(next(), arg);
    } else if (arg == "--iters") {
      o.iters = static_cast<int>(parse_int(next(), arg, 0, 1000000));
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(parse_int(next(), arg, 0, 1000000));
    } else if (arg == "--print-limit") {
      o.print_limit = parse_int(next(), arg, 0, int64_t{1} << 40);
    } else if (arg == "-q" || arg == "--quiet") {
      o.quiet = true;
    } else if (arg == "--executor") {
      o.executor = next();
      if (o.executor != "threads" && o.executor != "mpi")
        throw UsageError{"--executor expects `threads` or `mpi`, got `" + o.executor + "`"};
    } else if (arg == "--deterministic") {
      o.deterministic = true;
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(parse_int(next(), arg, 1, 4096));
    } else if (arg == "--flush-denormals") {
      o.flush_denormals = true;
    } else if (arg == "--cast") {
      o.cast = true;
    } else if (arg == "--report-memory") {
      o.report_memory = true;
    } else if (arg == "--checkpoint-dir") {
      o.checkpoint.dir = next();
    } else if (arg == "--checkpoint-every") {
      o.checkpoint.every = parse_int(next(), arg, 1, int64_t{1} << 62);
    } else if (arg == "--resume") {
      o.checkpoint.resume = next();
    } else if (arg == "--checkpoint-loop") {
      o.checkpoint.loop = next();
    } else {
      throw UsageError{"unknown argument `" + arg + "` (see --help)"};
    }
  }
}

size_t choose_function(const std::vector<ProgramFunction> &functions, const std::string &fn) {
  std::vector<std::string> names;
  for (const auto &f : functions) names.push_back(f.name);
  if (fn.empty()) {
    if (functions.size() == 1) return 0;
    throw UsageError{"this program has " + std::to_string(functions.size()) + " functions (" +
                     join_names(names) + "); choose one with --fn NAME"};
  }
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

std::string format_mesh(const Mesh &mesh) {
  std::string s = "(";
  for (size_t a = 0; a < mesh.axes().size(); ++a)
    s += (a ? ", " : "") + mesh.axes()[a].name + ": " + std::to_string(mesh.axes()[a].size);
  return s + ")";
}

std::string format_position(const Mesh &mesh, int64_t device) {
  const std::vector<int64_t> c = mesh.coords(device);
  std::string s = "(";
  for (size_t a = 0; a < c.size(); ++a)
    s += (a ? ", " : "") + mesh.axes()[a].name + ": " + std::to_string(c[a]);
  return s + ")";
}

bool launched_by_mpi() {
  // Open MPI's mpirun, MPICH/Hydra and srun --mpi=pmi2 (PMI_RANK), srun --mpi=pmix (PMIX_RANK).
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (const char *v = std::getenv(name); v && *v) return true;
  return false;
}

Agreement Processes::agree(const std::string &error) { return {!error.empty(), error}; }
std::vector<std::string> Processes::gather(const std::string &bytes) { return {bytes}; }
void Processes::broadcast(std::string &) {}
double Processes::max(double value) { return value; }
void Processes::abort(int status) { std::exit(status); }

namespace {

/// The executor the command line asks for (default: mpi under an MPI launcher).
std::unique_ptr<Executor> start_executor(const std::string &choice, const Executors &executors) {
  const bool want_mpi = choice == "mpi" || (choice.empty() && launched_by_mpi());
  if (!want_mpi) return executors.threads();
  if (!executors.mpi)
    throw UsageError{
        std::string(choice.empty() ? "started by an MPI launcher, but t" : "--executor mpi: t") +
        "his executable was built without MPI (spmdc was configured without "
        "OpenMPI); use --executor threads to run the whole mesh in one process"};
  return executors.mpi();
}

/// Runs `step` on every process and agrees on the outcome: false (after rank 0
/// printed the first error) when any process failed.
template <typename Step>
bool agreed(Processes &procs, const std::string &prog, Step &&step) {
  std::string error;
  try {
    step();
  } catch (const UsageError &e) {
    error = e.message;
  } catch (const RuntimeError &e) {
    error = e.what();
  }
  const Agreement a = procs.agree(error);
  if (a.failed && procs.rank() == 0) {
    std::cout.flush();
    std::cerr << prog << ": error: " << a.message << "\n";
  }
  return !a.failed;
}

/// `--iters 3 --random 1` (quoted where a word has spaces), at most ~200 characters.
std::string quoted_arguments(const std::string &joined) {
  std::string out;
  size_t start = 0;
  while (start < joined.size()) {
    size_t end = std::min(joined.find('\0', start), joined.size());
    std::string word = joined.substr(start, end - start);
    if (!out.empty()) out += ' ';
    out += word.find(' ') == std::string::npos && !word.empty() ? word : "'" + word + "'";
    start = end + 1;
    if (out.size() > 200) return out.substr(0, 200) + "...";
  }
  return out.empty() ? "no arguments" : "`" + out + "`";
}

/// Every process of an MPI job must run the same command line: a process
/// with other --iters would wait in a collective the others never reach, one
/// with another --random seed would mix different inputs. Empty when they
/// agree; otherwise (on every process) the error, naming the first rank that
/// differs from rank 0.
std::string same_arguments(Processes &procs, int argc, char **argv) {
  if (procs.size() == 1) return "";
  std::string mine;
  for (int k = 1; k < argc; ++k) {
    mine += argv[k];
    mine += '\0';
  }
  const std::vector<std::string> all = procs.gather(mine);
  std::string error;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) {
      error = "the processes of this MPI job were started with different arguments: rank 0 with " +
              quoted_arguments(all[0]) + ", rank " + std::to_string(r) + " with " +
              quoted_arguments(all[r]) + "; start every process with the same command line";
      break;
    }
  procs.broadcast(error);
  return error;
}

/// Before anything is read or allocated: is there room for this process's
/// part of the run? Throws CliError (check_resources) when not.
void check_memory(const ProgramFunction &f, const std::vector<int64_t> &devices,
                  const std::string &target, int64_t max_memory) {
  // The host holds this process's blocks of every input and output.
  int64_t host_bytes = 0;
  for (int64_t device : devices)
    for (const auto *values : {&f.params, &f.results})
      for (const ProgramValue &v : *values)
        host_bytes = saturating_add(
            host_bytes, checked_array_bytes(block_of(f.mesh, v.global_shape, v.spec, device).extent,
                                            static_cast<int64_t>(dtype_size(v.dtype)))
                            .value_or(INT64_MAX));
  // (On GPUs the devices' values live in device memory: only the host's is checked.)
  const bool simulated = target == "cpu";
  check_resources(f.name, simulated ? static_cast<int64_t>(devices.size()) : 0,
                  simulated ? f.memory : MemoryEstimate{}, host_bytes, max_memory);
}

/// --checkpoint-dir / --resume: the run's checkpointer (null without them);
/// when resuming, this process's file is read and checked now. Throws CliError.
std::unique_ptr<Checkpointer> make_checkpointer(const ProgramFunction &f, const Options &options,
                                                const std::vector<int64_t> &devices,
                                                Processes &procs, const std::string &target) {
  const CheckpointOptions &c = options.checkpoint;
  if (!c.active()) {
    if (!c.loop.empty() || c.every > 0)
      throw UsageError{std::string(c.loop.empty() ? "--checkpoint-every" : "--checkpoint-loop") +
                       " needs --checkpoint-dir DIR or --resume DIR"};
    return nullptr;
  }
  if (target != "cpu")
    throw UsageError{
        "--checkpoint-dir and --resume are for the CPU target; this program's "
        "target is " +
        target};
  if (options.iters > 0 || options.warmup > 0)
    throw UsageError{"--checkpoint-dir and --resume do not go with --iters and --warmup"};
  const size_t loop = choose_checkpoint_loop(f.loops, c.loop, f.name);
  return std::make_unique<Checkpointer>(c, f.name, format_mesh(f.mesh), f.loops[loop], loop,
                                        devices, procs.rank(), procs.size());
}

int run_program(const std::string &prog, const Options &options, Executor &exec,
                const std::vector<ProgramFunction> &functions, const std::string &default_fn,
                const std::string &target) {
  Processes &procs = exec.processes();
  const bool root = procs.rank() == 0;
  RunRequest request;
  request.warmup = options.warmup;
  request.iters = options.iters;
  request.deterministic = options.deterministic;

  // 1. What every process can check alike: function, launch, output paths, input files.
  size_t index = 0;
  std::vector<std::vector<OutputPath>> paths;
  std::vector<std::optional<std::string>> files;
  std::vector<NpyHeader> headers;
  std::vector<std::string> notes;
  std::unique_ptr<Checkpointer> checkpoint;
  if (!agreed(procs, prog, [&] {
        index = choose_function(functions, options.fn.empty() ? default_fn : options.fn);
        const ProgramFunction &f = functions[index];
        if (std::string e = exec.check_launch(f, request); !e.empty()) throw UsageError{e};
        if (options.report_memory && target != "cpu")
          throw UsageError{
              "--report-memory counts the CPU runtime's tensors; this program's "
              "target is " +
              target};
        paths = output_paths(f.name, value_names(f.results), options.outputs, options.out_dir);
        files = input_paths(f.name, value_names(f.params), options.inputs, options.random_seed);
        headers = check_input_files(
            f, files,
            [&f](size_t k, DType dtype, const Shape &shape, const std::string &found_in) {
              return check_input(f, k, dtype, shape, found_in);
            },
            InputCasts{options.cast, &notes});
        check_memory(f, exec.local_devices(f.mesh), target, options.max_memory);
        checkpoint = make_checkpointer(f, options, exec.local_devices(f.mesh), procs, target);
      }))
    return 1;
  set_checkpointer(checkpoint.get());
  if (root)
    for (const std::string &note : notes) std::cerr << prog << ": note: " << note << "\n";
  const ProgramFunction &f = functions[index];
  const std::vector<int64_t> devices = exec.local_devices(f.mesh);
  if (options.report_memory) request.meters = make_meters(f.mesh);

  // 2. This process's blocks of every input.
  std::vector<std::vector<Tensor>> locals;
  if (!agreed(procs, prog,
              [&] { locals = read_local_inputs(f, devices, files, headers, options.random_seed); }))
    return 1;

  // 3. Run. Other processes may be blocked in a collective: a failing process
  //    prints its error and ends the job.
  std::vector<double> seconds;
  std::vector<std::vector<Tensor>> out;
  std::string run_error;
  try {
    out = exec.run(index, locals, request, seconds);
  } catch (const RuntimeError &e) {
    run_error = e.what();
  } catch (const std::bad_alloc &) {
    run_error = "out of memory";
  }
  // Once every process is past its loop (the first agreement), older
  // checkpoints can go.
  if (run_error.empty() && checkpoint &&
      !(agreed(procs, prog, [] {}) && agreed(procs, prog, [&] { checkpoint->finish(); })))
    return 1;
  if (!run_error.empty()) {
    std::cout.flush();
    if (procs.size() == 1) {
      std::cerr << prog << ": error: while running `" << f.name << "`: " << run_error << "\n";
      return 1;
    }
    std::cerr << prog << ": error: rank " << procs.rank() << " of " << procs.size()
              << " (mesh position " << format_position(f.mesh, devices.at(0))
              << "): while running `" << f.name << "`: " << run_error << "\n";
    std::cerr.flush();
    procs.abort(1);
  }

  // 4. Print (rank 0 receives only the printed elements), time, write.
  if (!options.quiet) {
    for (size_t k = 0; k < f.results.size(); ++k) {
      const ProgramValue &r = f.results[k];
      const std::string text = format_distributed(procs, f, k, devices, out, options.print_limit);
      if (root)
        std::cout << r.name << ": " << format_type(r.dtype, r.global_shape) << " (global) =\n"
                  << text << "\n";
    }
  }
  if (!seconds.empty() && root) {
    std::cout.flush();
    std::cerr << timing_report(prog, f.name, target + " (" + exec.name() + ")",
                               f.mesh.num_devices(), seconds, options.warmup);
  }
  if (options.report_memory) {
    // Rank 0 prints every device's peak: "device peak" lines from each process.
    std::string mine;
    for (int64_t d : devices)
      mine += std::to_string(d) + " " + std::to_string(request.meter(d)->peak()) + "\n";
    const std::vector<std::string> all = procs.gather(mine);
    if (root) {
      std::vector<std::pair<int64_t, int64_t>> peaks;
      for (const std::string &lines : all) {
        std::istringstream in(lines);
        int64_t d = 0, peak = 0;
        while (in >> d >> peak) peaks.emplace_back(d, peak);
      }
      std::sort(peaks.begin(), peaks.end());
      std::cout.flush();
      std::cerr << memory_report(prog, f.name, f.mesh, peaks, f.memory.device_bytes);
    }
  }
  if (!write_distributed_outputs(procs, f, devices, out, paths, options.inputs,
                                 [&](auto &&step) { return agreed(procs, prog, step); }))
    return 1;
  return 0;
}

}  // namespace

int program_main(int argc, char **argv, const std::vector<ProgramFunction> &functions,
                 const std::string &default_fn, const std::string &target,
                 const std::string &built_by, const Executors &executors) {
  keep_freed_memory();
  single_threaded_blas();
  const std::string prog = program_name(argc > 0 ? argv[0] : nullptr);
  Options options;
  bool help = false;
  std::string parse_error;
  try {
    parse(argc, argv, options, help);
  } catch (const UsageError &e) {
    parse_error = e.message;
  }
  if (options.version && parse_error.empty()) {  // before any executor: no MPI, no GPU needed
    std::cout << prog << " (target " << target << "), built by " << built_by << "\n";
    return 0;
  }
  if (options.threads > 0) set_threads(options.threads);
  if (options.flush_denormals) set_flush_denormals(true);
  std::unique_ptr<Executor> exec;
  try {
    exec = start_executor(options.executor, executors);
  } catch (const UsageError &e) {
    std::cerr << prog << ": error: " << e.message << "\n";
    return 1;
  } catch (const RuntimeError &e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  }
  Processes &procs = exec->processes();
  // Before anything else every process runs (--help, the checks, the
  // iterations): the same command line everywhere, or a clear error on all.
  if (!agreed(procs, prog, [&] {
        if (std::string e = same_arguments(procs, argc, argv); !e.empty()) throw UsageError{e};
      }))
    return 1;
  if (help) {
    if (procs.rank() == 0) print_usage(argv[0], functions, default_fn, target);
    return 0;
  }
  if (!agreed(procs, prog, [&] {
        if (!parse_error.empty()) throw UsageError{parse_error};
      }))
    return 1;
  try {
    return run_program(prog, options, *exec, functions, default_fn, target);
  } catch (const std::exception &e) {
    std::cout.flush();
    std::cerr << prog << ": internal error: " << e.what() << "\n";
    if (procs.size() > 1) procs.abort(2);
    return 2;
  }
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

std::shared_ptr<MemoryMeter> RunRequest::meter(int64_t device) const {
  return meters.empty() ? nullptr : meters.at(static_cast<size_t>(device));
}

std::vector<std::shared_ptr<MemoryMeter>> make_meters(const Mesh &mesh) {
  std::vector<std::shared_ptr<MemoryMeter>> meters;
  for (int64_t d = 0; d < mesh.num_devices(); ++d)
    meters.push_back(std::make_shared<MemoryMeter>());
  return meters;
}

std::string memory_report(const std::string &who, const std::string &fn, const Mesh &mesh,
                          const std::vector<std::pair<int64_t, int64_t>> &peaks,
                          int64_t estimate_bytes) {
  std::ostringstream out;
  out << who << ": peak memory of `" << fn << "` per device (its tensors, inputs included):\n";
  int64_t top = 0;
  for (const auto &[device, peak] : peaks) {
    out << "  device " << device << " " << format_position(mesh, device) << ": " << peak
        << " bytes\n";
    top = std::max(top, peak);
  }
  out << "  largest " << top << " bytes (" << format_bytes(top) << "); estimated before running "
      << estimate_bytes << " bytes (" << format_bytes(estimate_bytes) << ")\n";
  return out.str();
}

MeteredDevice::MeteredDevice(const RunRequest &request, int64_t device,
                             const std::vector<Tensor> &inputs)
    : scope_(request.meter(device)), meter_(request.meter(device)) {
  if (!meter_) return;
  for (const Tensor &t : inputs) held_ += static_cast<int64_t>(t.nbytes());
  meter_->add(held_);
}

MeteredDevice::~MeteredDevice() {
  if (meter_) meter_->remove(held_);
}

namespace {

/// One process; every mesh position on its own thread.
class CpuThreadsExecutor final : public Executor {
 public:
  CpuThreadsExecutor(const std::vector<ProgramFunction> &functions,
                     const std::vector<CpuBody> &bodies)
      : functions_(functions), bodies_(bodies) {}
  const char *name() const override { return "threads"; }
  Processes &processes() override { return processes_; }
  std::vector<int64_t> local_devices(const Mesh &mesh) const override {
    std::vector<int64_t> all(static_cast<size_t>(mesh.num_devices()));
    for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
    return all;
  }

  std::vector<std::vector<Tensor>> run(size_t fn, const std::vector<std::vector<Tensor>> &locals,
                                       const RunRequest &request,
                                       std::vector<double> &seconds) override {
    const ProgramFunction &f = functions_.at(fn);
    const CpuBody &body = bodies_.at(fn);
    std::vector<std::vector<Tensor>> out(locals.size());
    std::vector<double> times;
    StepClock clock(locals.size());
    run_on_mesh(f.mesh, [&](DeviceContext &ctx) {
      const auto d = static_cast<size_t>(ctx.device());
      MeteredDevice metered(request, ctx.device(), locals[d]);
      run_steps(ctx, request, clock, times, [&](int it) {
        std::vector<Tensor> r = body(ctx, locals[d]);
        if (it == 0) out[d] = std::move(r);
      });
    });
    seconds = std::move(times);
    return out;
  }

 private:
  const std::vector<ProgramFunction> &functions_;
  const std::vector<CpuBody> &bodies_;
  Processes processes_;
};

}  // namespace

ExecutorFactory cpu_executor(const std::vector<ProgramFunction> &functions,
                             const std::vector<CpuBody> &bodies) {
  return [&functions, &bodies] { return std::make_unique<CpuThreadsExecutor>(functions, bodies); };
}

}  // namespace spmd::rt
