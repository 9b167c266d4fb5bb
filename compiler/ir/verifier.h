// ir/verifier.h — re-checks every typing rule of an IR module.
//
// verify_module checks that each function is in SSA form (every operand
// defined before use, every value defined once), that every instruction's
// result types agree with its op's shape rule and variance rule, that
// collectives get operands of the variance they need, that calls match their
// callee, and that shmap returns match the out_specs (local shape, and
// variance equal to exactly the axes the out_spec mentions). It also checks
// that the module reads the same when printed: a constant typed varying is
// used only where a literal takes its context's variance
// (constant_operand_adapts, beside a non-constant operand, or as a shmap's
// result), so the printed program re-checks with automatic pbroadcast off
// (transforms/explicit_pbroadcast.h). A loop's body is checked like a block
// whose values are visible only inside it, and each carried value must have
// one type (dtype, shape and variance) as initial value, region parameter,
// next value and result. A failure is a compiler bug.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace spmd::ir {

/// What to check. `printable`: also that the module reads the same when
/// printed (the rule on constants typed varying above). A program is
/// printable once its pbroadcasts are explicit
/// (transforms/explicit_pbroadcast.h), which the pass scripts do as a late
/// step; the steps before it need only leave well-typed IR
/// (pipeline/step.h).
struct VerifyOptions {
  bool printable = true;
};

/// Problems found, one sentence each, prefixed with the function name; empty if valid.
std::vector<std::string> verify_module(const Module &module, const VerifyOptions &options = {});
std::vector<std::string> verify_function(const Module &module, const Function &function,
                                         const VerifyOptions &options = {});

}  // namespace spmd::ir
