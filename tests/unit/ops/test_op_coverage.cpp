// Every op of ops.def, walked: each has a distinct spelling, a program using it
// (op_program) finds its builtin, shape, variance, printer, sharding, jvp,
// transpose (when ops.def's Linearity column says it is linear), interpreter
// and code generation rules; and each math
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
#include "ops/op_rules.h"
#include "ops/sharding_rules.h"
#include "pipeline/compile.h"
#include "pipeline/derive.h"
#include "spmdrt/tensor.h"
#include "transforms/rules/rules.h"

namespace spmd {
namespace {

TEST_CASE("every op is registered with its family's rules", "[ops][coverage]") {
  // ops/families/table.cpp maps every op to the OpRules of its family file,
  // transforms/rules/table.cpp to its DerivativeRules; a value that leaves a
  // rule out (a null function) is named here.
  const std::set<std::string_view> files{"creation", "elementwise", "reductions",  "contractions",
                                         "layout",   "gather",      "collectives", "random",
                                         "control",  "print"};
  for (int k = 0; k < kNumOps; ++k) {
    const OpCode op = static_cast<OpCode>(k);
    const OpRules &rules = op_rules(op);
    INFO("`" << op_spelling(op) << "` in family `" << rules.family << "`");
    CHECK(files.count(rules.family) == 1);
    CHECK(rules.shape != nullptr);
    CHECK(rules.variance != nullptr);
    CHECK(rules.sharding != nullptr);
    // Only the collectives ask anything of their operands' variance.
    CHECK((rules.requirement != AxisRequirement::None) ==
          (op_kind(op) == OpKind::Collective && op != OpCode::AxisIndex));
    // A constant operand adapts to the other operands' variance except in
    // the ops whose operands keep their own (and creation ops, which have none).
    const OpKind kind = op_kind(op);
    CHECK(rules.constant_operand_adapts == !(kind == OpKind::Collective || kind == OpKind::Call ||
                                             kind == OpKind::Control || kind == OpKind::Creation ||
                                             kind == OpKind::Effect));
    // transforms/rules/table.cpp: a JVP rule for every op, in the same family
    // file; a transpose rule exactly for the ops ops.def calls linear, but
    // stop_gradient (which blocks derivatives).
    const DerivativeRules &derivatives = derivative_rules(op);
    CHECK(derivatives.family == rules.family);
    CHECK(derivatives.jvp != nullptr);
    CHECK((derivatives.transpose != nullptr) ==
          (op_linearity(op) != OpLinearity::NotLinear && op != OpCode::StopGradient));
  }
}

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

/// An op as the whole-table walk uses it: a shmap (or sharded function) `f`
/// of x, y: f32[4] @ P(i) on a mesh of 2 whose result holds the op.
struct OpProgram {
  std::string source;
  /// Derived (jvp, transpose) as a shmap; constrain is only in sharded
  /// functions, which are derived after `spmdc shard` has lowered it.
  bool derived = true;
};

std::string entry(const std::string &body, const std::string &prelude = "",
                  const char *kind = "shmap") {
  return "mesh M = (i: 2)\n" + prelude + kind +
         " f(x: f32[4] @ P(i), y: f32[4] @ P(i)) -> f32[4] @ P(i) on M {\n" + body + "\n}\n";
}

/// `return expr` (locally x, y: f32[2]).
OpProgram returning(const std::string &expr) { return {entry("  return " + expr)}; }

/// `x OP y` (`x * 2.0`, `x / 2.0`: linear), a comparison or logic as where's condition.
OpProgram binary_program(OpCode op) {
  if (op == OpCode::Mul) return returning("x * 2.0");
  if (op == OpCode::Div) return returning("x / 2.0");
  const std::string symbol(op_symbol(op)), name(op_spelling(op));
  const std::string call = symbol.empty() ? name + "(x, y)" : "x " + symbol + " y";
  if (op_kind(op) == OpKind::Binary) return returning(call);
  if (op_kind(op) == OpKind::Compare) return returning("where(" + call + ", x, y)");
  return returning("where((x < y) " + symbol + " (y < x), x, y)");
}

/// A program using `op`, linear in x and y when the op is (ops.def's
/// Linearity column): the switch is exhaustive, so a new op fails to compile
/// until it has one here.
OpProgram op_program(OpCode op) {
  const std::string name(op_spelling(op));
  switch (op) {
    case OpCode::Constant:
      return returning("x * 2.0");
    case OpCode::Full:
      return returning("x + full((2,), 3.0)");
    case OpCode::Iota:
      return returning("x + iota((2,), dtype=f32)");
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) case OpCode::Name:
#include "spmdrt/unary_math.def"
      if (op == OpCode::Not) return returning("where(logical_not(x < y), x, y)");
      return returning(name + "(x)");
    case OpCode::Cast:
      return returning("cast(cast(x, f64), f32)");
    case OpCode::StopGradient:
      return returning("x + stop_gradient(y)");
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:
#include "spmdrt/binary_math.def"
      return binary_program(op);
    case OpCode::Select:
      return returning("where(iota((2,), dtype=f32) < 1.0, x, y)");
    case OpCode::ReduceSum:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
      return returning("x + " + name + "(x)");
    case OpCode::ArgMax:
    case OpCode::ArgMin:
      return returning("x + cast(" + name + "(x), f32)");
    case OpCode::Einsum:
      return returning("sum(einsum(\"i,j->ij\", x, ones((2,))), axes=1)");
    case OpCode::Reshape:
      return returning("reshape(reshape(x, (1, 2)), (2,))");
    case OpCode::Transpose:
      return returning("reshape(transpose(reshape(x, (1, 2))), (2,))");
    case OpCode::Reverse:
      return returning("flip(x)");
    case OpCode::BroadcastTo:
      return returning("sum(broadcast_to(x, (3, 2)), axes=0)");
    case OpCode::Slice:
    case OpCode::Concat:
      return returning("concat((x[1:2], y[0:1]))");
    case OpCode::Pad:
      return returning("pad(x[0:1], (2,), (1,))");
    case OpCode::DynamicSlice:
      return returning("dynamic_slice(concat((x, y)), axis_index(i), 2)");
    case OpCode::DynamicUpdateSlice:
      return returning("dynamic_update_slice(x, y[0:1], axis_index(i))");
    case OpCode::Take:
      return returning("take(x, 1 - iota((2,), dtype=i32))");
    case OpCode::ScatterAdd:  // both updates into entry 0
      return returning("scatter_add(x, y, 0 * iota((2,), dtype=i32))");
    case OpCode::Constrain:
      return {entry("  return constrain(x + y, P(i))", "", "sharded"), false};
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
      return returning("x + " + name + "(y, i)");
    case OpCode::Pbroadcast:
      return returning("x + pbroadcast(psum(y, i), i)");
    case OpCode::AllGather:
      return returning("sum(reshape(all_gather(x, i), (2, 2)), axes=0)");
    case OpCode::AllGatherInvariant:
      return returning("x + sum(reshape(all_gather_invariant(y, i), (2, 2)), axes=0)");
    case OpCode::PsumScatter:
      return returning("psum_scatter(concat((x, y)), i)");
    case OpCode::Pscatter:
      return returning("x + pscatter(psum(concat((y, y)), i), i)");
    case OpCode::AllToAll:
      return returning("all_to_all(x, i, 0, 0)");
    case OpCode::Ppermute:
      return returning("ppermute(x, i, shift=1)");
    case OpCode::AxisIndex:
      return returning("x + cast(axis_index(i), f32)");
    case OpCode::RandomKey:
    case OpCode::RandomUniform:
      return returning("x + uniform(key(3), (2,))");
    case OpCode::RandomFoldIn:
      return returning("x + uniform(fold_in(key(3), 1), (2,))");
    case OpCode::KeyData:
      return returning("x + cast(key_data(key(3)), f32)");
    case OpCode::RandomSplit:
      return returning("x + uniform(split(key(3), (1,))[0], (2,))");
    case OpCode::RandomBits:
      return returning("x + cast(random_bits(key(3), (2,)), f32)");
    case OpCode::RandomNormal:
      return returning("x + normal(key(3), (2,))");
    case OpCode::RandomInt:
      return returning("x + cast(randint(key(3), (2,), 0, 5), f32)");
    case OpCode::Call:
      return {entry("  return g(x)", "def g(a: f32[n]) -> f32[n] {\n  return 2.0 * a\n}\n")};
    case OpCode::For:
      return {entry("  s = x\n  for k in range(2) {\n    s = s + y\n  }\n  return s")};
    case OpCode::DebugPrint:
      return {entry("  print(\"x {} y {}\", x, y)\n  return x + y")};
  }
  return {};
}

/// The rules of `op` that its program finds missing: builtin/shape/variance,
/// printer, sharding (ops that may appear in sharded functions), jvp,
/// transpose (ops.def says it is linear), eval, codegen.
std::vector<std::string> missing_op_rules(OpCode op) {
  std::vector<std::string> missing;
  const OpProgram p = op_program(op);
  Compilation c;
  compile_source(c, "coverage.spmd", p.source, {});
  if (!c.ok() || !holds_op(*c.module, op)) {
    missing.push_back("builtin/shape/variance (" + render_diagnostics(c.diags, c.sources) + ")");
    return missing;
  }
  Compilation again;
  compile_source(again, "printed.spmd", ir::print_module(*c.module), {});
  if (!again.ok() || !holds_op(*again.module, op)) missing.push_back("printer");
  const OpKind kind = op_kind(op);
  if (kind != OpKind::Collective && kind != OpKind::Call && kind != OpKind::Control) {
    const ir::Function &f = c.module->functions[static_cast<size_t>(c.module->find_function("f"))];
    for (const ir::Instr &in : f.body) {
      if (in.op != op) continue;
      std::vector<Type> operands, results;
      for (ir::ValueId o : in.operands) operands.push_back(f.type(o));
      for (ir::ValueId r : in.results) results.push_back(f.type(r));
      const ShardingRule rule = sharding_rule(op, operands, results, in.attrs);
      if (rule.family == RuleFamily::Unsupported)
        missing.push_back("sharding (" + rule.unsupported + ")");
      break;
    }
  }
  // The derivative rules; pmax and pmin have none by design, and their rule
  // is the error that says so.
  const bool not_differentiable = op == OpCode::Pmax || op == OpCode::Pmin;
  auto derives = [&](DeriveKind derive_kind, const char *rule) {
    DeriveRequest request;
    request.kind = derive_kind;
    request.function = "f";
    const std::string refusal = "`" + std::string(op_spelling(op)) + "` is not differentiable";
    try {
      derive(*c.module, request);
      if (not_differentiable) missing.push_back(std::string(rule) + " (no refusal)");
    } catch (const std::exception &e) {
      if (!not_differentiable || std::string(e.what()).find(refusal) == std::string::npos)
        missing.push_back(std::string(rule) + " (" + e.what() + ")");
    }
  };
  if (p.derived) {
    derives(DeriveKind::Jvp, "jvp");
    if (op_linearity(op) != OpLinearity::NotLinear && op != OpCode::StopGradient)
      derives(DeriveKind::Transpose, "transpose");
  }
  try {
    const std::vector<rt::Tensor> inputs{rt::random_tensor(DType::F32, {4}, 7),
                                         rt::random_tensor(DType::F32, {4}, 8)};
    interp::run_shmap(*c.module, c.module->find_function("f"), inputs);
  } catch (const std::exception &e) {
    missing.push_back(std::string("eval (") + e.what() + ")");
  }
  try {
    backend::EmitOptions eo;
    eo.entry = "f";
    backend::emit_program(*c.module, &c.sources, eo);
  } catch (const std::exception &e) {
    missing.push_back(std::string("codegen (") + e.what() + ")");
  }
  return missing;
}

TEST_CASE("every op of ops.def has every rule", "[ops][coverage]") {
  std::vector<std::string> failures;
  for (int k = 0; k < kNumOps; ++k) {
    const OpCode op = static_cast<OpCode>(k);
    for (const std::string &rule : missing_op_rules(op))
      failures.push_back("`" + std::string(op_spelling(op)) + "` has no " + rule + " rule");
  }
  for (const std::string &f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

}  // namespace
}  // namespace spmd
