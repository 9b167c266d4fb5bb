// spmdrt/program.h — the `main` of every executable `spmdc build` emits.
//
// An emitted program is a table of shmap functions (ProgramFunction: name,
// mesh, parameters and results with their global shapes and partition specs)
// plus one per-device body per function. program_main gives every executable
// the command line of `spmdc run`:
//
//   ./prog [--fn NAME] [--in NAME=PATH]... [--out NAME=PATH]... [--out-dir DIR]
//          [--random SEED] [--iters N] [--warmup N] [--print-limit N] [-q]
//
// It validates everything before running (names, files, global shapes and
// dtypes, output directories — with the same messages as `spmdc run`), makes
// --random inputs with the same seeds, splits the global inputs by the
// in_specs (rt::shard), hands the per-device blocks to an Executor (the CPU
// mesh below, or the CUDA mesh of spmdrt/cuda_program.h), assembles the
// outputs by the out_specs (rt::unshard), prints them exactly as `spmdc run`
// does and writes the .npy files atomically (all or none). With --iters N the
// body runs N more times after --warmup runs and the median, min and max
// per-iteration times are printed on stderr; an iteration is timed across the
// whole mesh, from the first device's start to the last device's finish.
//
// Exit status: 0 ok, 1 user error (bad usage, inputs, or a runtime error such
// as integer division by zero), 3 setup error (e.g. not enough GPUs),
// 77 is never used here (tests use it for "skipped").
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "spmdrt/collectives.h"
#include "spmdrt/mesh.h"
#include "spmdrt/tensor.h"

namespace spmd::rt {

struct ProgramValue {
  std::string name;
  DType dtype = DType::F32;
  Shape global_shape;
  PartitionSpec spec;
};

struct ProgramFunction {
  std::string name;
  std::string source;  // the .spmd file it was compiled from, for messages
  Mesh mesh;
  std::vector<ProgramValue> params;
  std::vector<ProgramValue> results;
};

struct RunRequest {
  int warmup = 0;
  int iters = 0;  // timed iterations after the first (result-producing) run
};

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

/// Runs function `fn` on every device: `locals[d][k]` is parameter k's block on
/// device d; returns `[d][k]` result blocks. Fills `seconds` with one wall time
/// per timed iteration (request.iters of them), measured with a StepClock.
using Executor = std::function<std::vector<std::vector<Tensor>>(
    size_t fn, const std::vector<std::vector<Tensor>> &locals, const RunRequest &request,
    std::vector<double> &seconds)>;

/// Parses the command line, runs and reports; returns the exit status.
int program_main(int argc, char **argv, const std::vector<ProgramFunction> &functions,
                 const std::string &default_fn, const std::string &target, const Executor &exec);

/// A per-device body on the simulated CPU mesh: parameters in, results out.
using CpuBody = std::function<std::vector<Tensor>(DeviceContext &, const std::vector<Tensor> &)>;

/// The CPU executor: one thread per mesh position (rt::run_on_mesh).
Executor cpu_executor(const std::vector<ProgramFunction> &functions,
                      const std::vector<CpuBody> &bodies);

/// `P(i, None)` for messages, axes named from `mesh`.
std::string format_spec(const PartitionSpec &spec, const Mesh &mesh);
/// `f32[8, 4]`.
std::string format_type(DType dtype, const Shape &shape);

}  // namespace spmd::rt
