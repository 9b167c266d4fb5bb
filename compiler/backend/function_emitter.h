// backend/function_emitter.h — one shmap's per-device function as C++, for
// either target.
//
// Both targets write a shmap the same way: a host function over this device's
// blocks, its fused elementwise groups as kernels with one loop nest each, its
// `for` loops as C++ loops, and every other op as one call into the target's
// runtime (`rt::` on the CPU, `cu::` on CUDA) or its device context (the
// collectives). FunctionEmitter holds all of that, including the backends' one
// exhaustive switch over OpCode; a target (emit_cpu.cpp, emit_cuda.cpp)
// overrides only what differs: how a kernel is declared, loops and is
// launched, how a statement records its source line, and the two ops whose
// runtime calls take different arguments (dynamic_slice, dynamic_update_slice).
#pragma once

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/fusion.h"
#include "backend/emit_common.h"
#include "ir/ir.h"
#include "ir/loops.h"
#include "support/source.h"

namespace spmd::backend::detail {

class FunctionEmitter {
 public:
  FunctionEmitter(const ir::Module &module, const ir::Function &f, const SourceManager *sources)
      : module_(module), f_(f), sources_(sources), names_(f) {}
  virtual ~FunctionEmitter() = default;
  FunctionEmitter(const FunctionEmitter &) = delete;
  FunctionEmitter &operator=(const FunctionEmitter &) = delete;

  /// Appends the kernels and the body function to `kernels` / `body`.
  void emit(std::ostringstream &kernels, std::ostringstream &body);

  std::string fn_name() const { return sanitize(f_.name); }
  /// `spmdc build --check-nan`: no fusion, and every floating result is
  /// checked for NaN and Inf right after the op that makes it.
  void set_check_nan(bool on) { check_nan_ = on; }
  /// Top-level loops of a shmap go through an rt::CheckpointSite (CPU target).
  void set_checkpoints(bool on) { checkpoints_ = on; }

 protected:
  // ---- what a target decides
  /// The namespace of the runtime's kernels: "rt" or "cu".
  virtual std::string kernel_namespace() const = 0;
  /// The type of the per-device context parameter: "rt::DeviceContext".
  virtual std::string context_type() const = 0;
  /// Extra statements after the comment quoting a source line (`where` is
  /// "line 17" or "file:17"); none by default.
  virtual void locate(const std::string &where, std::ostringstream &out);
  /// A fused kernel's declaration up to its name: "static void ".
  /// `vector_math`: the kernel calls spmdrt's vectorisable exp, log, tanh or
  /// logistic (a backend may compile such a loop for several instruction sets).
  virtual std::string kernel_declaration(bool vector_math) const = 0;
  /// Opens the loop nest of a fused kernel: fills `idx` with one index
  /// variable per dimension of `nest` (outermost first) and sets `indent` to
  /// the indentation of the loop body.
  virtual void open_kernel_loops(const LoopNest &nest, std::vector<std::string> &idx,
                                 std::string &indent, std::ostringstream &kernels) = 0;
  /// Closes what open_kernel_loops opened, and the kernel.
  virtual void close_kernel_loops(const LoopNest &nest, std::string &indent,
                                  std::ostringstream &kernels) = 0;
  /// A kernel call up to its argument list: "name(" or "name<<<...>>>(".
  virtual std::string kernel_call(const std::string &kname, const LoopNest &nest) const = 0;
  /// What ends a kernel call after its arguments: ");\n" by default.
  virtual std::string kernel_call_end() const { return ");\n"; }
  /// Parameters of a fused kernel before its operands, with a trailing ", " (none by
  /// default).
  virtual std::string kernel_leading_params() const { return ""; }
  /// Whether each value's variable is emptied after its last use (so the
  /// device holds what is live, as the interpreter does) rather than at the
  /// end of its scope: variables become non-const Tensors. Off by default.
  virtual bool release_dead_values() const { return false; }
  /// Statements after a kernel call's ");\n" (none by default).
  virtual std::string after_kernel_call(const std::string &kname) const;
  /// `dynamic_slice(x0, x1)`: statements go to `pre`, returns the expression.
  virtual std::string dynamic_slice(const ir::Instr &in, std::string &pre) = 0;
  /// `dynamic_update_slice(x0, x1, x2)` updating `target` (x0's name, or
  /// std::move of it when updated in place).
  virtual std::string dynamic_update_slice(const ir::Instr &in, const std::string &target,
                                           std::string &pre) = 0;

  // ---- shared with the targets
  /// `name(` of a runtime kernel in the target's namespace: "rt::slice(".
  std::string call(const char *name) const { return kernel_namespace() + "::" + name + "("; }
  const std::string &name(ir::ValueId v) const { return names_[v]; }
  Names &names() { return names_; }
  const ir::Function &function() const { return f_; }

 private:
  void comment(SourceSpan span, std::ostringstream &out);
  std::string ty(ir::ValueId v) const;
  /// A block (the body or a loop body) with parameters `params` and results
  /// `live_out`: its fused groups and instructions, in plan order.
  void emit_block(const std::vector<ir::Instr> &block, const std::vector<ir::ValueId> &params,
                  const std::vector<ir::ValueId> &live_out, std::ostringstream &kernels,
                  std::ostringstream &body);
  /// A real C++ loop: carried variables, the body once per iteration, the
  /// next values assigned at its end (emit_common.h, loop_code).
  void emit_loop(const ir::Instr &loop, std::ostringstream &kernels, std::ostringstream &body);
  void emit_group(const FusionPlan &plan, size_t g, std::ostringstream &kernels,
                  std::ostringstream &body);
  void emit_instr(const FusionPlan &plan, const ir::BlockUses &uses, size_t i,
                  std::ostringstream &out);
  /// With check_nan_: the check of value `v`, the result of `in`.
  void emit_check(const ir::Instr &in, ir::ValueId v, std::ostringstream &out);

  const ir::Module &module_;
  const ir::Function &f_;
  const SourceManager *sources_;
  Names names_;
  std::string last_comment_;
  int next_kernel_ = 0;
  std::set<ir::ValueId> mutable_;     // carried variables (non-const Tensors)
  std::set<ir::ValueId> releasable_;  // with release_dead_values: variables one may empty
  bool check_nan_ = false;
  int loop_depth_ = 0;  // loops around the block being emitted
  bool checkpoints_ = false;
  size_t top_level_loops_ = 0;  // checkpoint sites emitted so far
  /// Whether `in` is an instruction of the function's own body (not a loop's).
  bool is_body_instr(const ir::Instr &in) const {
    return &in >= f_.body.data() && &in < f_.body.data() + f_.body.size();
  }
};

}  // namespace spmd::backend::detail
