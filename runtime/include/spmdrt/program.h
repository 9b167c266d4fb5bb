// spmdrt/program.h — the `main` of every executable `spmdc build` emits.
//
// An emitted program is a table of shmap functions (ProgramFunction: name,
// mesh, parameters and results with their global shapes and partition specs)
// plus one per-device body per function. program_main gives every executable
// the command line of `spmdc run`:
//
//   ./prog [--fn NAME] [--in NAME=PATH]... [--out NAME=PATH]... [--out-dir DIR]
//          [--random SEED] [--iters N] [--warmup N] [--print-limit N] [-q]
//          [--executor threads|mpi] [--deterministic] [--report-memory]
//
// It validates everything before running (names, files, global shapes and
// dtypes, output directories — with the same messages as `spmdc run`), then
// each process reads only the blocks of the inputs its mesh positions hold
// (or makes them from --random SEED: the same global arrays as `spmdc run`),
// runs the body through an Executor, prints the outputs exactly as `spmdc run`
// does (the process that prints receives only the printed elements) and
// writes the .npy files blockwise, all or none (rt::NpyOutputs on rt::OutputFiles).
//
// Executors: `threads` runs every mesh position of the mesh in this one
// process (one thread each); `mpi` (spmdrt/mpi.h) runs one mesh position per
// process of an MPI job, rank r at mesh position r (row-major). The default
// is `mpi` when the process was started by an MPI launcher, else `threads`.
// Errors every process can see (usage, inputs, outputs, world size) are agreed
// on: each process reports, rank 0 prints the first, all exit with the same
// status. An error while the body runs (other processes may be blocked in a
// collective) is printed by the failing process, which then ends the job.
//
// With --iters N the body runs N more times after --warmup runs and the
// median, min and max per-iteration times are printed on stderr; an iteration
// is timed across the whole mesh, from the first device's start to the last
// device's finish. With --report-memory each device's peak tensor bytes
// (rt::MemoryMeter) are printed on stderr after the run.
//
// Exit status: 0 ok, 1 user error (bad usage, inputs, or a runtime error such
// as integer division by zero), 2 internal error, 3 setup error (e.g. not
// enough GPUs); 77 is never used here (tests use it for "skipped").
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spmdrt/checkpoint.h"
#include "spmdrt/cli_io.h"
#include "spmdrt/collectives.h"
#include "spmdrt/mesh.h"
#include "spmdrt/tensor.h"

namespace spmd::rt {

struct ProgramValue {
  std::string name;
  DType dtype = DType::F32;
  Shape global_shape;
  PartitionSpec spec;
  /// Per dimension, the --set name the signature wrote ("" for a number);
  /// may be empty (for messages about input files).
  std::vector<std::string> size_names = {};
};

struct ProgramFunction {
  std::string name;
  std::string source;  // the .spmd file it was compiled from, for messages
  Mesh mesh;
  std::vector<ProgramValue> params;
  std::vector<ProgramValue> results;
  MemoryEstimate memory;  // per device, checked before running (--max-memory)
  /// The top-level loops --checkpoint-dir can save (CPU target; empty on CUDA).
  std::vector<CheckpointLoop> loops = {};
};

struct RunRequest {
  int warmup = 0;
  int iters = 0;               // timed iterations after the first (result-producing) run
  bool deterministic = false;  // --deterministic: reductions in rank order (bit-identical)
  /// --report-memory: one meter per device of the mesh (by device index),
  /// counting the tensors that device's thread allocates and the input blocks
  /// it is given; empty when memory is not measured.
  std::vector<std::shared_ptr<MemoryMeter>> meters;
  /// Device `device`'s meter, or null when memory is not measured.
  std::shared_ptr<MemoryMeter> meter(int64_t device) const;
};

/// A device's part of --report-memory, for as long as it lives: the tensors
/// its thread allocates are counted on the device's meter (a MeterScope), and
/// so are `inputs`, its input blocks made before it started (held throughout).
/// Does nothing when the request measures no memory.
class MeteredDevice {
 public:
  MeteredDevice(const RunRequest &request, int64_t device, const std::vector<Tensor> &inputs);
  ~MeteredDevice();
  MeteredDevice(const MeteredDevice &) = delete;
  MeteredDevice &operator=(const MeteredDevice &) = delete;

 private:
  MeterScope scope_;
  std::shared_ptr<MemoryMeter> meter_;
  int64_t held_ = 0;
};

/// Meters for every device of `mesh` (RunRequest::meters).
std::vector<std::shared_ptr<MemoryMeter>> make_meters(const Mesh &mesh);

/// The --report-memory report printed on stderr: per device, the peak bytes
/// of the tensors it held (its input blocks included), then the largest and
/// the compiler's estimate checked before running. `peaks` pairs a device
/// index with its peak.
std::string memory_report(const std::string &who, const std::string &fn, const Mesh &mesh,
                          const std::vector<std::pair<int64_t, int64_t>> &peaks,
                          int64_t estimate_bytes);

/// Times steps of the whole mesh for --iters: a step lasts from the moment the
/// first device starts it to the moment the last device finishes it (its
/// stream drained, on a GPU). Measuring on one device instead reads low when
/// devices outnumber cores: a device that starts late finishes early on its
/// own clock. Each device records into its own slot; after a barrier that
/// follows every finish(), any one device reads step_seconds().
class StepClock {
 public:
  explicit StepClock(size_t devices) : start_(devices), finish_(devices) {}
  void start(size_t device) { start_.at(device) = std::chrono::steady_clock::now(); }
  void finish(size_t device) { finish_.at(device) = std::chrono::steady_clock::now(); }
  /// max(finish) - min(start) over all devices, in seconds.
  double step_seconds() const;

 private:
  std::vector<std::chrono::steady_clock::time_point> start_, finish_;
};

/// One device's part of a (possibly timed) run: calls step(it) for it = 0 ..
/// request.warmup + request.iters; iteration 0 produces the results, the last
/// request.iters are timed across the mesh (barriers around each, `clock`
/// shared by the devices) and device 0 appends their seconds to `times`.
/// Used by the CPU executor and by `spmdc run --iters`.
void run_steps(DeviceContext &ctx, const RunRequest &request, StepClock &clock,
               std::vector<double> &times, const std::function<void(int iteration)> &step);

/// The --iters report printed on stderr: "<who>: <fn> on <target>, <devices>
/// devices: N iterations (after W warmup): median .. ms, min .. ms, max .. ms".
std::string timing_report(const std::string &who, const std::string &fn, const std::string &target,
                          int64_t devices, std::vector<double> seconds, int warmup);

/// The outcome of Processes::agree.
struct Agreement {
  bool failed = false;
  std::string message;  // on rank 0: the error to print
};

/// The processes of one run, and the few collective steps program_main needs
/// between them (agreeing on errors, gathering what is printed). The base class
/// is the single process of the threads executor, where every step is local.
class Processes {
 public:
  virtual ~Processes() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  /// Collective: every process passes "" or its error. All learn whether any
  /// failed; rank 0 gets the first failing rank's message (prefixed with that
  /// rank when the processes disagree).
  virtual Agreement agree(const std::string &error);
  /// Collective: rank 0 receives every process's bytes, by rank; the others {}.
  virtual std::vector<std::string> gather(const std::string &bytes);
  /// Collective: every process gets rank 0's `bytes`.
  virtual void broadcast(std::string &bytes);
  /// Collective: the largest of every process's `value`.
  virtual double max(double value);
  /// Ends every process of the job now with `status` (after this one printed
  /// its error; the others may be blocked in a collective).
  [[noreturn]] virtual void abort(int status);
};

/// Runs the per-device bodies of a program on this process's mesh positions.
class Executor {
 public:
  virtual ~Executor() = default;
  /// "threads" or "mpi", for messages.
  virtual const char *name() const = 0;
  virtual Processes &processes() = 0;
  /// Why this launch cannot run `f` with `request` ("" when it can), e.g. an MPI
  /// world whose size is not the mesh size.
  virtual std::string check_launch(const ProgramFunction &f, const RunRequest &request) {
    return "";
  }
  /// The mesh positions this process runs, ascending.
  virtual std::vector<int64_t> local_devices(const Mesh &mesh) const = 0;
  /// Runs function `fn`: `locals[i][k]` is parameter k's block on local device
  /// i; returns `[i][k]` result blocks. Fills `seconds` with one wall time per
  /// timed iteration (request.iters of them), measured across the whole mesh.
  virtual std::vector<std::vector<Tensor>> run(size_t fn,
                                               const std::vector<std::vector<Tensor>> &locals,
                                               const RunRequest &request,
                                               std::vector<double> &seconds) = 0;
};

/// Makes an executor (an MPI executor initialises MPI here). Throws RuntimeError.
using ExecutorFactory = std::function<std::unique_ptr<Executor>()>;

/// The executors an executable was built with; `mpi` is empty without MPI.
struct Executors {
  ExecutorFactory threads;
  ExecutorFactory mpi;
};

/// True when an MPI launcher (mpirun/mpiexec, srun with PMI/PMIx) started this
/// process: one of its rank variables is set.
bool launched_by_mpi();

/// Parses the command line, runs and reports; returns the exit status.
/// `default_fn` is the function run without --fn ("": --fn is required when
/// there are several); `built_by` (the compiler's version and the source
/// file) is what --version prints after the program's name and target.
int program_main(int argc, char **argv, const std::vector<ProgramFunction> &functions,
                 const std::string &default_fn, const std::string &target,
                 const std::string &built_by, const Executors &executors);

/// A per-device body on the CPU: parameters in, results out.
using CpuBody = std::function<std::vector<Tensor>(DeviceContext &, const std::vector<Tensor> &)>;

/// The CPU threads executor: one thread per mesh position (rt::run_on_mesh).
ExecutorFactory cpu_executor(const std::vector<ProgramFunction> &functions,
                             const std::vector<CpuBody> &bodies);

/// `P(i, None)` for messages, axes named from `mesh`.
std::string format_spec(const PartitionSpec &spec, const Mesh &mesh);
/// `f32[8, 4]`.
std::string format_type(DType dtype, const Shape &shape);
/// `(i: 2, j: 4)`: the axes of `mesh` and their sizes, for messages.
std::string format_mesh(const Mesh &mesh);
/// `(i: 1, j: 0)`: the coordinates of `device` on `mesh`, for messages.
std::string format_position(const Mesh &mesh, int64_t device);

/// The progress line of an executable's top-level loops: on device 0, when
/// stdout is a terminal (never in a pipe or a file, so tests and logs see
/// clean output), `step 37/100  elapsed 1.2s  eta 2.1s` is redrawn in place
/// at most ten times a second and erased when the loop ends. A print
/// (spmdrt/debug_print.h) erases it before writing its line; the next step
/// draws it again below. One branch per iteration when it is off.
class Progress {
 public:
  Progress(int64_t device, int64_t total, const char *where);
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;
  ~Progress() { finish(); }
  /// One iteration done.
  void step() {
    if (active_) draw(++done_);
  }
  /// Erases the line (the loop ended).
  void finish();

 private:
  void draw(int64_t done);
  bool active_ = false;
  int64_t total_ = 0, done_ = 0;
  const char *where_ = "";
  std::chrono::steady_clock::time_point start_, last_;
};

/// Erases a progress line on the terminal, if one is shown (before a print).
void clear_progress_line();

}  // namespace spmd::rt
