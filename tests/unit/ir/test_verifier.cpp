// The IR verifier rejects broken IR: one case per rule of ir/verifier.cpp.
//
// Each case compiles a small correct program (which must verify cleanly),
// breaks one thing in it by hand, the way a buggy pass could, and checks that
// the verifier names that rule. The rules are listed in verifier.h's comment.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "ir/verifier.h"
#include "pipeline/compile.h"

namespace spmd {
namespace {

ir::Module checked(const std::string &text) {
  Compilation c;
  CompileOptions o;
  compile_source(c, "verifier_test.spmd", text, o);
  INFO(render_diagnostics(c.diags, c.sources));
  REQUIRE(c.ok());
  REQUIRE(ir::verify_module(*c.module).empty());
  return *c.module;
}

ir::Function &function_named(ir::Module &m, const std::string &name) {
  const int i = m.find_function(name);
  REQUIRE(i >= 0);
  return m.functions[static_cast<size_t>(i)];
}

/// The first instruction of `f`'s body with op `op`.
ir::Instr &first(ir::Function &f, OpCode op) {
  for (ir::Instr &in : f.body)
    if (in.op == op) return in;
  FAIL("no " << op_spelling(op) << " in " << f.name);
  throw;  // unreachable
}

/// Parameter k's value.
ir::ValueId param(const ir::Function &f, size_t k) { return f.params.at(k).value; }

std::string all(const std::vector<std::string> &errors) {
  std::string s;
  for (const auto &e : errors) s += e + "\n";
  return s;
}

/// Breaks a copy of `module` with `edit` and checks the verifier reports
/// `expected` (a fragment of its sentence).
void rejects(const ir::Module &module, const std::string &function,
             const std::function<void(ir::Module &, ir::Function &)> &edit,
             const std::string &expected) {
  ir::Module broken = module;
  edit(broken, function_named(broken, function));
  const std::vector<std::string> errors = ir::verify_module(broken);
  INFO("expected: " << expected << "\ngot:\n" << all(errors));
  bool found = false;
  for (const auto &e : errors) found = found || e.find(expected) != std::string::npos;
  CHECK(found);
}

// x varies along i, y does not; psum makes an invariant value of x.
const char *kShmap = R"(
mesh M = (i: 2)
shmap f(x: f32[4] @ P(i), y: f32[2] @ P()) -> (f32[4] @ P(i), f32[2] @ P()) on M {
  a = x * 2.0
  b = psum(a, i)
  c = sin(y) + b
  d = pbroadcast(c, i)
  e = a * d
  return e, c
}
)";

const char *kLoop = R"(
mesh M = (i: 2)
shmap f(x: f32[4] @ P()) -> f32[4] @ P() on M {
  s = x
  for k in range(3) {
    s = s * 2.0
  }
  return s
}
)";

const char *kCall = R"(
mesh M = (i: 2)
def twice(v: f32[n]) -> f32[n] {
  return v * 2.0
}
shmap f(x: f32[4] @ P(i)) -> f32[4] @ P(i) on M {
  return twice(x)
}
)";

const char *kSharded = R"(
mesh M = (i: 2)
sharded g(x: f32[4, 2] @ P(i), w: f32[2, 3] @ auto) -> f32[4, 3] @ P(i) on M {
  return x @ w
}
)";

TEST_CASE("the verifier rejects a broken parameter", "[verifier]") {
  const ir::Module m = checked(kShmap);
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.params[0].value = 999; },
      "parameter with an invalid value id");
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.values[param(f, 0)].type.variance = {}; },
      "parameter `x` variance differs from its in_spec");
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.values[param(f, 0)].type.shape = {4}; },
      "parameter `x` local shape differs from its in_spec");
  const ir::Module s = checked(kSharded);
  rejects(
      s, "g",
      [](ir::Module &, ir::Function &f) {
        f.values[param(f, 0)].type.shape = {2, 2};
      },
      "parameter `x` of a sharded function does not have its global shape");
}

TEST_CASE("the verifier rejects broken SSA", "[verifier]") {
  const ir::Module m = checked(kShmap);
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { first(f, OpCode::Sin).results[0] = 999; },
      "invalid value id %999");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        first(f, OpCode::Sin).results[0] = first(f, OpCode::Psum).results[0];
      },
      "is defined twice");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        // sin(y) now reads the psum's result, defined after it.
        ir::Instr &sin = first(f, OpCode::Sin);
        ir::Instr &pbroadcast = first(f, OpCode::Pbroadcast);
        sin.operands[0] = pbroadcast.results[0];
      },
      "is used before it is defined");
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.returns[1] = 999; },
      "returned value is not defined");
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.returns.pop_back(); },
      "returns 1 values for 2 results");
}

TEST_CASE("the verifier rejects instructions their rules do not type", "[verifier]") {
  const ir::Module m = checked(kShmap);
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &add = first(f, OpCode::Add);
        f.values[add.results[0]].type.dtype = DType::F64;
      },
      "differs from the shape rule's");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        // sin(y) + b with b replaced by x, of another shape: the shape rule fails.
        first(f, OpCode::Add).operands[1] = param(f, 0);
      },
      "add: ");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &add = first(f, OpCode::Add);
        add.results.push_back(f.add_value(f.type(add.results[0]), "extra", {}));
      },
      "add: wrong number of results");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        // a * d, d replaced by c: one operand varies along i, the other does not.
        ir::Instr &pb = first(f, OpCode::Pbroadcast);
        for (ir::Instr &in : f.body)
          if (in.op == OpCode::Mul && !in.operands.empty() && in.operands[1] == pb.results[0])
            in.operands[1] = pb.operands[0];
      },
      "mul: operands differ in variance");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &sin = first(f, OpCode::Sin);
        f.values[sin.results[0]].type.variance = AxisSet::of(0);
      },
      "sin: result variance");
}

TEST_CASE("the verifier rejects collectives of the wrong variance or place", "[verifier]") {
  const ir::Module m = checked(kShmap);
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        // psum of y, which is the same on every device.
        first(f, OpCode::Psum).operands[0] = param(f, 1);
      },
      "psum: operand must vary along");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &pb = first(f, OpCode::Pbroadcast);
        pb.operands[0] = first(f, OpCode::Psum).operands[0];  // a, which varies along i
      },
      "pbroadcast: operand must be invariant along");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &sin = first(f, OpCode::Sin);
        sin.op = OpCode::Constrain;
        sin.attrs.constrain().sharding = {{}};
      },
      "constrain in a shmap");
  const ir::Module s = checked(kSharded);
  rejects(
      s, "g",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &dot = f.body.back();
        ir::Instr psum;
        psum.op = OpCode::Psum;
        psum.operands = {dot.results[0]};
        psum.results = {f.add_value(f.type(dot.results[0]), "p", {})};
        psum.attrs.collective().axes = {0};
        f.body.push_back(psum);
      },
      "psum: a collective in a sharded function");
  rejects(
      s, "g",
      [](ir::Module &, ir::Function &f) {
        f.values[f.returns[0]].type.shape = {2, 3};
      },
      "result 1 of a sharded function does not have its global shape");
}

TEST_CASE("the verifier rejects constants the printed program would type otherwise", "[verifier]") {
  const ir::Module m = checked(kShmap);
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        // The constant 2.0 typed varying along i, then read by the psum.
        ir::Instr &constant = first(f, OpCode::Constant);
        f.values[constant.results[0]].type.variance = AxisSet::of(0);
        first(f, OpCode::Psum).operands[0] = constant.results[0];
      },
      "is used by a collective or call, where the printed program would type it invariant");
  const ir::Module c = checked(kCall);
  rejects(
      c, "twice",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &constant = first(f, OpCode::Constant);
        f.values[constant.results[0]].type.variance = AxisSet::of(0);
        f.returns[0] = constant.results[0];
        f.values[constant.results[0]].type.shape = f.type(f.params[0].value).shape;
      },
      "which the printed def would return invariant");
}

TEST_CASE("the verifier rejects calls that do not match their callee", "[verifier]") {
  const ir::Module m = checked(kCall);
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) { first(f, OpCode::Call).attrs.call().derived = 0; },
      "call of a derivative");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) { first(f, OpCode::Call).attrs.call().callee = 99; },
      "call of an unknown function");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) { first(f, OpCode::Call).operands.push_back(param(f, 0)); },
      "call arity differs from `twice`");
  rejects(
      m, "f",
      [](ir::Module &m, ir::Function &f) {
        // `twice` typed for an invariant argument, called with a varying one.
        ir::Instr &call = first(f, OpCode::Call);
        ir::Function &callee = m.functions[static_cast<size_t>(call.attrs.call().callee)];
        callee.values[callee.params[0].value].type.variance = {};
      },
      "argument 1 type differs from `twice`");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &call = first(f, OpCode::Call);
        f.values[call.results[0]].type.dtype = DType::F64;
      },
      "result 1 type differs from `twice`");
}

TEST_CASE("the verifier rejects malformed loops", "[verifier]") {
  const ir::Module m = checked(kLoop);
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { first(f, OpCode::For).regions.clear(); },
      "for: expected one region");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) { first(f, OpCode::For).regions[0].yields.clear(); },
      "for: 1 initial values, 2 region parameters, 0 next values and 1 results do not match");
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { first(f, OpCode::For).attrs.loop().step = 0; },
      "for: the step is zero");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &loop = first(f, OpCode::For);
        loop.attrs = Attrs{};
        loop.attrs.collective().axes = {0};
      },
      "for: carries collective attributes, not loop ones");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        f.values[first(f, OpCode::For).regions[0].params[0]].type.dtype = DType::F32;
      },
      "for: the loop index is not an invariant i32 scalar");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        // The next value is the loop's own result, defined only after it.
        ir::Instr &loop = first(f, OpCode::For);
        loop.regions[0].yields[0] = loop.results[0];
      },
      "next value");
  rejects(
      m, "f",
      [](ir::Module &, ir::Function &f) {
        ir::Instr &loop = first(f, OpCode::For);
        f.values[loop.regions[0].params[1]].type.variance = AxisSet::of(0);
      },
      ") starts as ");
}

TEST_CASE("the verifier rejects shmap results that break their out_specs", "[verifier]") {
  const ir::Module m = checked(kShmap);
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.returns[1] = f.returns[0]; },
      "result 2 has variance");
  rejects(
      m, "f", [](ir::Module &, ir::Function &f) { f.values[f.returns[0]].type.shape = {3}; },
      "result 1 local shape differs from its out_spec");
}

}  // namespace
}  // namespace spmd
