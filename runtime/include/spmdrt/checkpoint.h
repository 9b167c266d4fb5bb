// spmdrt/checkpoint.h — checkpoints of a training loop, and resuming from one.
//
// A training program is a `for step in range(N) { ... }` at the top level of
// its entry function; the loop's carried values (weights, optimizer moments,
// the losses array, keys) are the training state. With --checkpoint-dir DIR
// --checkpoint-every K, `spmdc run` (compiler/interp) and executables (the
// code compiler/backend emits around the loop) save every device's carried
// values after every K-th iteration; --resume DIR starts the loop at the
// saved iteration with the saved values. Everything before the loop is
// recomputed from the inputs (the program is pure), everything after it from
// the final state, so a resumed run's outputs are the uninterrupted run's,
// bit for bit (docs/running.md, "Checkpoints").
//
// Files: each process writes DIR/ckpt-<iterations done>.p<rank>-of-<processes>
// (the blocks of the mesh positions it runs) with write_output_file, so a
// file is complete or absent however the process dies; a process removes its
// older files only once every process's file of a newer checkpoint exists,
// and resuming takes the newest checkpoint whose files all exist. A header
// (function, mesh, loop variable and a fingerprint of the program and its
// sizes, apart from the loop's trip count) is checked before anything runs.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "spmdrt/tensor.h"

namespace spmd::rt {

struct CheckpointOptions {
  std::string dir;     // --checkpoint-dir: where to save ("" = no saving)
  int64_t every = 0;   // --checkpoint-every K
  std::string resume;  // --resume DIR ("" = start from the beginning)
  std::string loop;    // --checkpoint-loop VAR: the top-level loop, by its variable
  bool active() const { return !dir.empty() || !resume.empty(); }
};

/// A top-level loop of an entry function that can be checkpointed, as the
/// compiler describes it (analysis/checkpoint_loops.h).
struct CheckpointLoop {
  std::string variable;     // the loop variable, as written
  std::string fingerprint;  // of the program, mesh and sizes, but not the trip count
  int64_t start = 0, step = 1, trips = 0;
  int carried = 0;  // number of carried values
};

/// The loop --checkpoint-loop VAR names among `loops` (VAR empty: the only
/// one). Throws CliError naming the loops when there is none or it is ambiguous.
size_t choose_checkpoint_loop(const std::vector<CheckpointLoop> &loops, const std::string &var,
                              const std::string &fn);

/// One run's checkpoints of one loop, shared by the devices of this process.
class Checkpointer {
 public:
  /// `made_by` ("spmdc run", "an executable"), `fn` and `mesh` (for the
  /// header); `devices`: the mesh positions this process runs; `process` of
  /// `processes` (1 for `spmdc run` and the threads executor). Checks the
  /// options and, when resuming, reads and checks this process's file now:
  /// throws CliError with a message for the user.
  Checkpointer(CheckpointOptions options, std::string fn, std::string mesh, CheckpointLoop loop,
               size_t loop_index, std::vector<int64_t> devices, int process, int processes);

  /// Whether top-level loop `loop_index` of the function is the one saved.
  bool watches(size_t loop_index) const { return loop_index == loop_index_; }
  /// When the loop starts on `device`: the iterations already done (0 unless
  /// resuming), the carried values replaced by the saved ones.
  int64_t begin(int64_t device, const std::vector<Tensor *> &carried);
  /// After `done` iterations on `device`: saves when `done` is a multiple of
  /// --checkpoint-every (the file is written when every device of this
  /// process has given its values). Throws RuntimeError when it cannot write.
  void after(int64_t device, int64_t done, const std::vector<const Tensor *> &carried);
  /// After the run, once every process has finished its loop: removes this
  /// process's checkpoints older than the newest one complete on every process.
  void finish();
  /// The iteration resumed from (0 when not resuming).
  int64_t resumed_at() const { return resumed_at_; }

 private:
  std::string header(int64_t done) const;
  std::string file_name(int64_t done, int process) const;
  void load(const std::string &dir);
  void write(int64_t done, const std::map<int64_t, std::vector<Tensor>> &values);
  void remove_older_than_complete();

  CheckpointOptions options_;
  std::string fn_, mesh_;
  CheckpointLoop loop_;
  size_t loop_index_;
  std::vector<int64_t> devices_;
  int process_, processes_;
  int64_t resumed_at_ = 0;
  std::map<int64_t, std::vector<Tensor>> resumed_;  // by device
  std::mutex mutex_;
  std::map<int64_t, std::map<int64_t, std::vector<Tensor>>> pending_;  // done -> device -> values
  std::vector<int64_t> written_;                                       // this process's files
};

/// The checkpointer of this process's run, for generated code (null when none).
void set_checkpointer(Checkpointer *checkpointer);
Checkpointer *active_checkpointer();

/// What generated code puts around top-level loop `loop_index`: begin() and
/// after() of the active checkpointer when it watches that loop, else nothing.
class CheckpointSite {
 public:
  CheckpointSite(int64_t device, size_t loop_index);
  int64_t begin(const std::vector<Tensor *> &carried) {
    return c_ ? c_->begin(device_, carried) : 0;
  }
  void after(int64_t done, const std::vector<const Tensor *> &carried) {
    if (c_) c_->after(device_, done, carried);
  }

 private:
  Checkpointer *c_;
  int64_t device_;
};

}  // namespace spmd::rt
