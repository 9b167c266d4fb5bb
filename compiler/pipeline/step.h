// pipeline/step.h — how a pass script runs its steps.
//
// Every command runs its passes as a script of named steps, each in one
// place in this folder: the check script (compile.h), the derive script
// (derive.h), prepare-for-codegen and flatten-for-sharding (prepare.h).
// A Script runs each step through one helper, which
//   - times it and logs it under `spmdc -v` (support/timed.h);
//   - runs the IR verifier after it when verification is on: in debug
//     builds, and whenever $SPMDC_VERIFY_STEPS is 1 (ctest sets it for every
//     test), so a pass that leaves broken IR behind is named by the test
//     that meets it; a failure is a compiler bug (std::logic_error). Every
//     step must leave well-typed IR; the steps marked Check::Printable (the
//     explicit_pbroadcast steps and what follows them) also IR that prints
//     as the program it is (ir::VerifyOptions);
//   - stops the script after the step named by `--emit STEP`, so each
//     step's result can be printed (ir::dump_ir) and tested.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "support/diagnostics.h"
#include "support/timed.h"

namespace spmd::pipeline {

/// Whether steps are verified (debug builds; $SPMDC_VERIFY_STEPS=1).
bool verify_steps();

/// Throws std::logic_error listing the verifier's problems with `function`
/// (of `module`), or with every function of `module`, after `step` of `script`.
void verify_after(std::string_view script, std::string_view step, const ir::Module &module,
                  const ir::Function &function, bool printable);
void verify_after(std::string_view script, std::string_view step, const ir::Module &module,
                  bool printable);

/// What the verifier checks after a step: well-typed IR, or also printable IR.
enum class Check { Typed, Printable };

/// One run of a script: stops after step `stop_after` (empty: never). With
/// `diags`, a step after which it holds errors is not verified (the IR of a
/// program with errors is incomplete; the script stops there).
class Script {
 public:
  explicit Script(std::string_view name, std::string stop_after = {},
                  const DiagnosticEngine *diags = nullptr)
      : name_(name), stop_after_(std::move(stop_after)), diags_(diags) {}

  /// Runs step `step` (`fn()`, which changes `function` of `module`) unless
  /// the script has stopped: timed, then verified when verification is on.
  template <typename Fn>
  void run(const char *step, const ir::Module &module, const ir::Function &function, Fn &&fn,
           Check check = Check::Typed) {
    if (stopped_) return;
    timed(step, std::forward<Fn>(fn));
    if (verifying()) verify_after(name_, step, module, function, check == Check::Printable);
    stopped_ = step == stop_after_;
  }
  /// The same for a step that changes the whole module.
  template <typename Fn>
  void run(const char *step, const ir::Module &module, Fn &&fn, Check check = Check::Typed) {
    if (stopped_) return;
    timed(step, std::forward<Fn>(fn));
    if (verifying()) verify_after(name_, step, module, check == Check::Printable);
    stopped_ = step == stop_after_;
  }
  /// A step after which the IR is not expected to verify yet (lowering, before
  /// variance is known): timed, never verified.
  template <typename Fn>
  void run_unverified(const char *step, Fn &&fn) {
    if (stopped_) return;
    timed(step, std::forward<Fn>(fn));
    stopped_ = step == stop_after_;
  }

  /// True once the step named `stop_after` has run: the caller returns what it has.
  bool stopped() const { return stopped_; }

 private:
  bool verifying() const {
    return verify_steps() && !(diags_ && (diags_->has_errors() || diags_->has_internal_errors()));
  }

  std::string_view name_;
  std::string stop_after_;
  const DiagnosticEngine *diags_;
  bool stopped_ = false;
};

}  // namespace spmd::pipeline
