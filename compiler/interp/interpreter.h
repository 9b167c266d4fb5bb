// interp/interpreter.h — runs a checked shmap on a simulated CPU mesh.
//
// run_shmap splits each global input by its in_spec (block distribution, a
// dimension split over several axes is split major to minor), runs the body on
// one thread per mesh position (rt::run_on_mesh), executing every op with the
// runtime's CPU kernels and simulated collectives (interp/eval_op.cpp), and
// assembles the global outputs by their out_specs. Calls of def instances are
// evaluated recursively; every value is freed after its last use.
//
// With InterpOptions::check_replication, the interpreter proves at run time
// what the type system promises: after every instruction, each result that is
// invariant along a mesh axis must hold identical bits on all devices that
// differ only along that axis. A violation is a compiler bug and is reported
// as a ReplicationError carrying the offending op's source span.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "spmdrt/checkpoint.h"
#include "spmdrt/program.h"
#include "spmdrt/tensor.h"
#include "support/source.h"

namespace spmd::interp {

struct InterpOptions {
  /// Check after every instruction that invariant values agree bit for bit
  /// (runs every op on its own: fused groups are not formed).
  bool check_replication = false;
  /// --check-nan: after every instruction (unfused, as above), a floating
  /// result holding a NaN or an infinity stops the run with a RunError at
  /// that instruction (an invariant value is checked on device 0 only).
  bool check_nan = false;
  /// Run the body again `timing.warmup` + `timing.iters` times after the
  /// result-producing run; the last `iters` are timed across the whole mesh
  /// (rt::run_steps) and their seconds appended to `seconds` (when not null).
  /// With `timing.meters` (--report-memory), each device's tensors are
  /// counted on its meter (the meters index the mesh the body runs on: one
  /// device for a sharded function).
  rt::RunRequest timing;
  std::vector<double> *seconds = nullptr;
  /// --checkpoint-dir / --resume: the checkpointer of the run (its loop is
  /// the entry function's top-level loop it watches); null for none. Not with
  /// timing runs.
  rt::Checkpointer *checkpoint = nullptr;
};

/// A problem with the inputs given to run_shmap (a user error). The message
/// names the argument, the expected global type and in_spec, and what was found.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A run-time error of one op (integer division by zero, an index out of
/// range, ...) on one device: `span` is the op, `device` the device's index in
/// the mesh. A rt::RuntimeError, so callers that do not locate it still see it.
class RunError : public rt::RuntimeError {
 public:
  RunError(SourceSpan span, int64_t device, const std::string &message)
      : rt::RuntimeError(message), span_(span), device_(device) {}
  SourceSpan span() const { return span_; }
  int64_t device() const { return device_; }

 private:
  SourceSpan span_;
  int64_t device_;
};

/// A value the type system calls invariant along a mesh axis differed between
/// devices along it: a compiler bug. `span` is the op that computed it.
class ReplicationError : public std::runtime_error {
 public:
  ReplicationError(SourceSpan span, std::string message)
      : std::runtime_error(message), span_(span) {}
  SourceSpan span() const { return span_; }

 private:
  SourceSpan span_;
};

/// Runs shmap `function_index` of a checked module (a sharded function runs
/// unsharded, on one device: the reference for `spmdc shard`'s programs). `inputs` are the global
/// arrays of its parameters, in order, with exactly the declared dtype and
/// global shape; the results are the global arrays of its results. Throws
/// InputError, ReplicationError or rt::RuntimeError (e.g. integer division by
/// zero inside the body).
std::vector<rt::Tensor> run_shmap(const ir::Module &module, int function_index,
                                  const std::vector<rt::Tensor> &inputs,
                                  const InterpOptions &options = {});

/// Checks one input against parameter k of `function`; returns an empty string
/// when it fits, else a complete sentence naming the argument, the expected
/// global type and in_spec, and what `found_in` (e.g. "`x.npy`") holds.
std::string check_input(const ir::Module &module, const ir::Function &function, size_t k,
                        rt::DType dtype, const rt::Shape &shape,
                        const std::string &found_in = "the given array");

}  // namespace spmd::interp
