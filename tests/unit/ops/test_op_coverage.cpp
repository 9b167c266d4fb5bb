// Every op of ops.def, walked: each has a distinct spelling, and each math
// function of one operand (exp, log, ..., log1p: the Unary ops but neg, not,
// cast and stop_gradient) has every rule a user reaches — a builtin that
// lowers to it, a printed form that parses back, an elementwise sharding
// rule, a derivative, an interpreter kernel and emitted C++. Several of these
// sit behind a `default:` or a table that still compiles when a row is
// forgotten (docs/adding-an-op.md marks them *silent*); this test names the op
// and the rule that is missing.
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

bool is_math_function(OpCode op) {
  return op_kind(op) == OpKind::Unary && op != OpCode::Neg && op != OpCode::Not &&
         op != OpCode::Cast && op != OpCode::StopGradient;
}

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

TEST_CASE("every one-operand math function has every rule", "[ops][coverage]") {
  int walked = 0;
  for (int k = 0; k < kNumOps; ++k) {
    const OpCode op = static_cast<OpCode>(k);
    if (!is_math_function(op)) continue;
    ++walked;
    const std::string_view spelling = op_spelling(op);
    INFO("op `" << spelling << "`");

    // The builtin (middle/lower_builtins.cpp) and the shape rule.
    Compilation c;
    compile_source(c, "coverage.spmd", program(spelling), {});
    INFO(render_diagnostics(c.diags, c.sources));
    REQUIRE(c.ok());
    CHECK(holds_op(*c.module, op));
    // The printer: the printed program parses back to the same op.
    Compilation again;
    compile_source(again, "printed.spmd", ir::print_module(*c.module), {});
    REQUIRE(again.ok());
    CHECK(holds_op(*again.module, op));

    // The sharding rule: elementwise, every dimension splits with the operand's.
    const std::vector<Type> types{Type{DType::F32, {4, 6}, {}}};
    const ShardingRule rule = sharding_rule(op, types, types, {});
    CHECK(rule.family == RuleFamily::Elementwise);
    CHECK(rule.num_factors() == 2);

    // The derivative (a missing JVP rule is a "not differentiable" error).
    DeriveRequest jvp;
    jvp.kind = DeriveKind::Jvp;
    CHECK_NOTHROW(derive(*c.module, jvp));

    // The interpreter's kernel (interp/eval_op.cpp and the runtime's unary table).
    const rt::Tensor x = rt::random_tensor(DType::F32, {4}, 7);
    CHECK_NOTHROW(interp::run_shmap(*c.module, c.module->find_function("f"), {x}));

    // The emitted C++ computes it with a scalar function of spmdrt/scalar_ops.h.
    backend::EmitOptions eo;
    eo.entry = "f";
    const std::string cpp = backend::emit_program(*c.module, &c.sources, eo);
    CHECK(cpp.find("sc::") != std::string::npos);
  }
  CHECK(walked >= 12);
}

}  // namespace
}  // namespace spmd
