// Every op of ops.def, walked: each has a distinct spelling, and each math
// function of one operand (the rows of spmdrt/unary_math.def but logical_not)
// and of two (the arithmetic rows of spmdrt/binary_math.def) has every rule a
// user reaches: a builtin that lowers to it, shape and
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

/// A math function as the coverage test walks it: a one-line program using
/// it, its scalar function, and which derivative rules it must have.
struct Walked {
  OpCode op;
  std::string source;  // shmap `f` applying the op to its parameters
  int operands = 1;
  std::string scalar_fn;  // the spmd::rt::sc function the emitted C++ calls
  bool linear = false;    // has a transpose rule
};

std::string program(const std::string &params, const std::string &expr) {
  return "mesh M = (i: 2)\nshmap f(" + params + ") -> f32[4] @ P(i) on M {\n  return " + expr +
         "\n}\n";
}

Walked unary(OpCode op, std::string scalar_fn, bool linear) {
  return {op, program("x: f32[4] @ P(i)", std::string(op_spelling(op)) + "(x)"), 1,
          std::move(scalar_fn), linear};
}

/// `x + y`, or `maximum(x, y)` for an op written as a call.
Walked binary(OpCode op, std::string_view symbol, std::string scalar_fn, bool linear) {
  const std::string expr =
      symbol.empty() ? std::string(op_spelling(op)) + "(x, y)" : "x " + std::string(symbol) + " y";
  return {op, program("x: f32[4] @ P(i), y: f32[4] @ P(i)", expr), 2, std::move(scalar_fn), linear};
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

/// The math functions of one operand (spmdrt/unary_math.def), linear ones
/// with a transpose rule.
std::vector<Walked> unary_functions() {
  std::vector<Walked> out;
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  if (is_math_function(OpCode::Name))                                    \
    out.push_back(                                                       \
        unary(OpCode::Name, #scalar_fn, op_linearity(OpCode::Name) != OpLinearity::NotLinear));
#include "spmdrt/unary_math.def"
  return out;
}

/// The arithmetic functions of two operands (spmdrt/binary_math.def, kind
/// Binary): add and sub are linear in both operands together, so they have a
/// transpose rule.
std::vector<Walked> binary_functions() {
  std::vector<Walked> out;
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  if (op_kind(OpCode::Name) == OpKind::Binary)                                          \
    out.push_back(binary(OpCode::Name, symbol, #scalar_fn,                              \
                         op_linearity(OpCode::Name) == OpLinearity::InAll));
#include "spmdrt/binary_math.def"
  return out;
}

/// The rules of `op` that are missing, by name: builtin, shape, printer,
/// variance, sharding, jvp, transpose, eval, codegen.
std::vector<std::string> missing_rules(const Walked &w) {
  std::vector<std::string> missing;
  const OpCode op = w.op;
  // The builtin (middle/lower_builtins.cpp) and the shape and variance rules.
  Compilation c;
  compile_source(c, "coverage.spmd", w.source, {});
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
  const Type t{DType::F32, {4, 6}, {}};
  const std::vector<Type> operands(static_cast<size_t>(w.operands), t), results{t};
  const ShardingRule rule = sharding_rule(op, operands, results, {});
  if (rule.family != RuleFamily::Elementwise || rule.num_factors() != 2)
    missing.push_back("sharding");
  // The derivative (a missing JVP rule is a "not differentiable" error), and
  // for a linear op its transpose.
  auto derives = [&](DeriveKind kind, const char *rule) {
    DeriveRequest request;
    request.kind = kind;
    try {
      derive(*c.module, request);
    } catch (const std::exception &e) {
      missing.push_back(std::string(rule) + " (" + e.what() + ")");
    }
  };
  derives(DeriveKind::Jvp, "jvp");
  if (w.linear) derives(DeriveKind::Transpose, "transpose");
  // The interpreter's kernel (interp/eval_op.cpp and the runtime's tables).
  try {
    std::vector<rt::Tensor> inputs;
    for (int k = 0; k < w.operands; ++k)
      inputs.push_back(rt::random_tensor(DType::F32, {4}, 7 + k));
    interp::run_shmap(*c.module, c.module->find_function("f"), inputs);
  } catch (const std::exception &e) {
    missing.push_back(std::string("eval (") + e.what() + ")");
  }
  // The emitted C++ calls the op's scalar function of spmdrt/scalar_ops.h.
  try {
    backend::EmitOptions eo;
    eo.entry = "f";
    const std::string cpp = backend::emit_program(*c.module, &c.sources, eo);
    if (cpp.find("sc::" + w.scalar_fn + "(") == std::string::npos)
      missing.push_back("codegen (no call of sc::" + w.scalar_fn + ")");
  } catch (const std::exception &e) {
    missing.push_back(std::string("codegen (") + e.what() + ")");
  }
  return missing;
}

/// Walks `functions`; one failure line per missing rule.
void check_every_rule(const std::vector<Walked> &functions) {
  std::vector<std::string> failures;
  for (const Walked &w : functions)
    for (const std::string &rule : missing_rules(w))
      failures.push_back("`" + std::string(op_spelling(w.op)) + "` has no " + rule + " rule");
  for (const std::string &f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

TEST_CASE("every one-operand math function has every rule", "[ops][coverage]") {
  const std::vector<Walked> functions = unary_functions();
  check_every_rule(functions);
  CHECK(functions.size() >= 15);
}

TEST_CASE("every two-operand arithmetic function has every rule", "[ops][coverage]") {
  const std::vector<Walked> functions = binary_functions();
  check_every_rule(functions);
  CHECK(functions.size() == 9);  // add sub mul div floor_divide remainder pow maximum minimum
}

}  // namespace
}  // namespace spmd
