// Every op of ops.def, walked: each has a distinct spelling, and each math
// function of one operand (the rows of spmdrt/unary_math.def but logical_not)
// has every rule a user reaches: a builtin that lowers to it, shape and
// variance rules, a printed form that parses back, an elementwise sharding
// rule, a derivative (and a transpose when the row is Linear), an interpreter
// kernel and emitted C++ calling its scalar function. A missing rule fails
// the test with a line naming the op and the rule, e.g.
//   `expm1` has no jvp (... not differentiable ...) rule
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "ops/sharding_rules.h"
#include "pipeline/compile.h"
#include "pipeline/derive.h"
#include "spmdrt/tensor.h"

namespace spmd {
namespace {

/// The unary math rows of spmdrt/unary_math.def that take floats (all but logical_not).
bool is_math_function(OpCode op) { return op_is_unary_math(op) && op != OpCode::Not; }

std::string program(std::string_view spelling) {
  return "mesh M = (i: 2)\nshmap f(x: f32[4] @ P(i)) -> f32[4] @ P(i) on M {\n  return " +
         std::string(spelling) + "(x)\n}\n";
}

bool holds_op(const ir::Module &m, OpCode op) {
  for (const ir::Function &f : m.functions)
    for (const ir::Instr &in : f.body)
      if (in.op == op) return true;
  return false;
}

TEST_CASE("every op has a distinct spelling", "[ops][coverage]") {
  std::set<std::string_view> seen;
  for (int k = 0; k < kNumOps; ++k) {
    const OpCode op = static_cast<OpCode>(k);
    INFO("op " << k << " `" << op_spelling(op) << "`");
    CHECK(!op_spelling(op).empty());
    CHECK(!op_display_name(op).empty());
    CHECK(seen.insert(op_spelling(op)).second);
  }
}

/// The scalar function of each unary math op (spmdrt/unary_math.def), which
/// the emitted C++ must call.
std::string scalar_function(OpCode op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  if (op == OpCode::Name) return #scalar_fn;
#include "spmdrt/unary_math.def"
  return "";
}

/// Whether a unary math op is linear (spmdrt/unary_math.def), so it has a transpose rule.
bool is_linear(OpCode op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  if (op == OpCode::Name) return SPMD_IF_LINEAR_##Linearity(true) + 0;
#include "spmdrt/unary_math.def"
  return false;
}

/// The rules of `op` that are missing, by name: builtin, shape, printer,
/// variance, sharding, jvp, transpose, eval, codegen.
std::vector<std::string> missing_rules(OpCode op) {
  std::vector<std::string> missing;
  const std::string_view spelling = op_spelling(op);
  // The builtin (middle/lower_builtins.cpp) and the shape and variance rules.
  Compilation c;
  compile_source(c, "coverage.spmd", program(spelling), {});
  if (!c.ok() || !holds_op(*c.module, op)) {
    missing.push_back("builtin/shape/variance (" + render_diagnostics(c.diags, c.sources) + ")");
    return missing;
  }
  for (const ir::Function &f : c.module->functions)
    for (const ir::Instr &in : f.body)
      if (in.op == op && f.type(in.results[0]).variance.empty()) missing.push_back("variance");
  // The printer: the printed program parses back to the same op.
  Compilation again;
  compile_source(again, "printed.spmd", ir::print_module(*c.module), {});
  if (!again.ok() || !holds_op(*again.module, op)) missing.push_back("printer");
  // The sharding rule: elementwise, every dimension splits with the operand's.
  const std::vector<Type> types{Type{DType::F32, {4, 6}, {}}};
  const ShardingRule rule = sharding_rule(op, types, types, {});
  if (rule.family != RuleFamily::Elementwise || rule.num_factors() != 2)
    missing.push_back("sharding");
  // The derivative (a missing JVP rule is a "not differentiable" error), and
  // for a linear op its transpose.
  DeriveRequest jvp;
  jvp.kind = DeriveKind::Jvp;
  try {
    derive(*c.module, jvp);
  } catch (const std::exception &e) {
    missing.push_back(std::string("jvp (") + e.what() + ")");
  }
  if (is_linear(op)) {
    DeriveRequest transpose;
    transpose.kind = DeriveKind::Transpose;
    try {
      derive(*c.module, transpose);
    } catch (const std::exception &e) {
      missing.push_back(std::string("transpose (") + e.what() + ")");
    }
  }
  // The interpreter's kernel (interp/eval_op.cpp and the runtime's unary table).
  try {
    const rt::Tensor x = rt::random_tensor(DType::F32, {4}, 7);
    interp::run_shmap(*c.module, c.module->find_function("f"), {x});
  } catch (const std::exception &e) {
    missing.push_back(std::string("eval (") + e.what() + ")");
  }
  // The emitted C++ calls the op's scalar function of spmdrt/scalar_ops.h.
  try {
    backend::EmitOptions eo;
    eo.entry = "f";
    const std::string cpp = backend::emit_program(*c.module, &c.sources, eo);
    if (cpp.find("sc::" + scalar_function(op) + "(") == std::string::npos)
      missing.push_back("codegen (no call of sc::" + scalar_function(op) + ")");
  } catch (const std::exception &e) {
    missing.push_back(std::string("codegen (") + e.what() + ")");
  }
  return missing;
}

TEST_CASE("every one-operand math function has every rule", "[ops][coverage]") {
  int walked = 0;
  std::vector<std::string> failures;
  for (int k = 0; k < kNumOps; ++k) {
    const OpCode op = static_cast<OpCode>(k);
    if (!is_math_function(op)) continue;
    ++walked;
    for (const std::string &rule : missing_rules(op))
      failures.push_back("`" + std::string(op_spelling(op)) + "` has no " + rule + " rule");
  }
  for (const std::string &f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
  CHECK(walked >= 15);
}

}  // namespace
}  // namespace spmd
