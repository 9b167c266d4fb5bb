// tests/unit/transforms/test_combine.cpp — combined collectives: psum((a, b), axes).
//
// The language form is checked against sums computed by hand over the
// devices' blocks; the combine pass against the uncombined program (the same
// bits: each element is reduced in the same order), through printed source
// that is parsed and checked again, as users see it.

#include "ir/verifier.h"
#include "transform_test_util.h"
#include "transforms/combine_collectives.h"

using namespace spmd;
using namespace spmd::test;

namespace {

/// The derived program as printed and re-checked, with the given combine threshold.
std::unique_ptr<Compilation> derived(const Compilation &c, DeriveKind kind, int64_t threshold,
                                     std::vector<std::string> wrt = {}) {
  DeriveRequest r;
  r.kind = kind;
  r.wrt = std::move(wrt);
  r.combine.threshold_bytes = threshold;
  return compile_ok(ir::print_module(derive(*c.module, r)), /*auto_pb=*/false);
}

int instructions(const Compilation &c, OpCode op) {
  int n = 0;
  for (const ir::Instr &in : shmap_of(c).body) n += in.op == op;
  return n;
}

}  // namespace

TEST_CASE("psum((a, b), axis) reduces each component; pmean and pmax too", "[combine]") {
  // x: f32[8, 2] @ P(i) on 4 devices (rows 2d, 2d+1 on device d); n: i32[4] @ P(i).
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[8, 2] @ P(i), n: i32[4] @ P(i)) -> (s: f32[2, 2] @ P(), k: i32[1] @ P(),\n"
      "    m: f32[2, 2] @ P(), t: f32[2, 2] @ P(), lo: f32[2, 2] @ P()) on M {\n"
      "  s, k = psum((x, n), i)\n"
      "  m, t = pmean((x, x * 2.0), i)\n"
      "  hi, lo = pmax((x, -x), i)\n"
      "  return s, k, m, t, lo\n}\n");
  REQUIRE(instructions(*c, OpCode::Psum) == 2);
  REQUIRE(instructions(*c, OpCode::Pmax) == 1);
  rt::Tensor x = rt::Tensor::empty(DType::F32, {8, 2});
  for (int64_t e = 0; e < 16; ++e) x.set(e, 0.25 * static_cast<double>(e) - 1.0);
  rt::Tensor n = rt::Tensor::empty(DType::I32, {4});
  for (int64_t e = 0; e < 4; ++e) n.set(e, static_cast<double>(3 * e + 1));
  std::vector<rt::Tensor> out = run(*c, {x, n});
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t col = 0; col < 2; ++col) {
      double sum = 0, lo = 1e9;
      for (int64_t d = 0; d < 4; ++d) sum += x.get((2 * d + r) * 2 + col);
      for (int64_t d = 0; d < 4; ++d) lo = std::min(lo, x.get((2 * d + r) * 2 + col));
      CHECK(out[0].get(r * 2 + col) == sum);
      CHECK(out[4].get(r * 2 + col) == -lo);
      CHECK(out[2].get(r * 2 + col) == Approx(sum / 4));
      CHECK(out[3].get(r * 2 + col) == Approx(2 * sum / 4));
    }
  CHECK(out[1].get(0) == 1 + 4 + 7 + 10);
}

TEST_CASE("combined psums print as psum((a, b), axis) and round-trip", "[combine]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(a: f32[4, 3] @ P(i), b: f32[8] @ P(i)) -> (f32[3] @ P(), f32[2] @ P()) on M {\n"
      "  sa, sb = psum((sum(a, axes=0), b), i)\n"
      "  return sa, sb\n}\n");
  const std::string printed = ir::print_module(*c->module);
  CHECK(printed.find("= psum((") != std::string::npos);
  auto again = compile_ok(printed);
  CHECK(ir::print_module(*again->module) == printed);
  auto in = random_inputs(*c, 3);
  auto x = run(*c, in), y = run(*again, in);
  for (size_t k = 0; k < x.size(); ++k) CHECK(same_bits(x[k], y[k]));
}

TEST_CASE("combining a gradient's psums keeps every bit (dp_mlp, gpipe)", "[combine]") {
  auto c = compile_ok(sample("dp_mlp.spmd"));
  auto one = derived(*c, DeriveKind::Grad, CombineOptions{}.threshold_bytes);
  auto many = derived(*c, DeriveKind::Grad, 0);
  CHECK(instructions(*one, OpCode::Psum) == 1);  // loss and 4 parameter gradients
  CHECK(instructions(*many, OpCode::Psum) == 5);
  auto in = random_inputs(*c, 11);
  auto x = run(*one, in), y = run(*many, in);
  REQUIRE(x.size() == y.size());
  for (size_t k = 0; k < x.size(); ++k) CHECK(same_bits(x[k], y[k]));

  // The pipeline's loop unrolled ([[unroll]]): each step's psum is a separate
  // collective the combiner may join. (Kept as a loop, the backward pass has
  // one psum in its loop body and nothing to combine.)
  std::string gpipe = sample("pipeline_gpipe.spmd");
  const size_t loop = gpipe.find("  for t in range(7)");
  REQUIRE(loop != std::string::npos);
  gpipe.insert(loop + 2, "[[unroll]] ");
  auto p = compile_ok(gpipe);
  DeriveRequest r;
  r.kind = DeriveKind::Vjp;
  r.function = "gpipe";
  auto gp = compile_ok(ir::print_module(derive(*p->module, r)), false);
  r.combine.threshold_bytes = 0;
  auto gp0 = compile_ok(ir::print_module(derive(*p->module, r)), false);
  CHECK(instructions(*gp, OpCode::Psum) == 1);  // 8 psums of the backward pass, as XLA
  CHECK(instructions(*gp0, OpCode::Psum) == 8);
  auto pin = random_inputs(*gp, 5);
  auto u = run(*gp, pin), v = run(*gp0, pin);
  for (size_t k = 0; k < u.size(); ++k) CHECK(same_bits(u[k], v[k]));
}

TEST_CASE("combine_collectives: dependent, other-axis and huge psums stay apart", "[combine]") {
  auto c = compile_ok(
      "mesh M = (i: 2, j: 2)\n"
      "shmap f(a: f32[64] @ P((i, j)), b: f32[4096] @ P((i, j))) -> (f32[16] @ P(), f32[] @ P(),\n"
      "    f32[1024] @ P(), f32[32] @ P(j)) on M {\n"
      "  s = psum(a, (i, j))\n"
      "  t = psum(sum(s * a), (i, j))\n"  // reads s: may not join s's collective
      "  u = psum(b, (i, j))\n"           // 4 KiB
      "  v = psum(a, i)\n"                // other axes
      "  w = psum(a * 2.0, (i, j))\n"
      "  return s + w, t, u, v\n}\n");
  ir::Function f = shmap_of(*c);
  CombineOptions options;
  options.threshold_bytes = 1024;               // u (4 KiB) is too big to combine
  CHECK(combine_collectives(f, options) == 1);  // t and w
  ir::Module m = *c->module;
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  CHECK(ir::verify_module(m).empty());
  int combined = 0;
  for (const ir::Instr &in : f.body)
    if (in.op == OpCode::Psum && in.operands.size() == 2) ++combined;
  CHECK(combined == 1);
  // The same values as before, through the printed program.
  auto again = compile_ok(ir::print_module(m));
  auto in = random_inputs(*c, 2);
  auto x = run(*c, in), y = run(*again, in);
  for (size_t k = 0; k < x.size(); ++k) CHECK(same_bits(x[k], y[k]));
  // split_collectives undoes it.
  split_collectives(f);
  for (const ir::Instr &in : f.body) CHECK(in.operands.size() <= 2);
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  CHECK(ir::verify_module(m).empty());
}

TEST_CASE("combine_collectives: buckets joined up by an earlier merge stay acyclic", "[combine]") {
  // p1, p2 over i and q1, q2 over j: q1 reads p1 and p2 reads q2. Combining
  // {p1, p2} makes q1 depend on q2 through it, so q1 and q2 stay apart.
  auto c = compile_ok(
      "mesh M = (i: 2, j: 2)\n"
      "shmap f(a: f32[8] @ P((i, j)), b: f32[8] @ P((i, j))) -> (f32[2] @ P(), f32[2] @ P())\n"
      "    on M {\n"
      "  p1 = psum(a, i)\n"
      "  q1 = psum(p1 * 2.0, j)\n"
      "  q2 = psum(b, j)\n"
      "  p2 = psum(q2 * 3.0, i)\n"
      "  return q1, p2\n}\n");
  ir::Function f = shmap_of(*c);
  CHECK(combine_collectives(f) == 1);  // p1 and p2 only
  ir::Module m = *c->module;
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  REQUIRE(ir::verify_module(m).empty());
  auto again = compile_ok(ir::print_module(m));
  auto in = random_inputs(*c, 4);
  auto x = run(*c, in), y = run(*again, in);
  for (size_t k = 0; k < x.size(); ++k) CHECK(same_bits(x[k], y[k]));
}

TEST_CASE("combine_collectives: loop bodies are combined on their own", "[combine]") {
  // In the loop, p and q are independent: one collective per iteration. Outside,
  // the loop reads s, so s's bucket closes before t and w (which read the
  // loop's results); t and w combine. No collective moves into or out of the loop.
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(a: f32[8] @ P(i), b: f32[8] @ P(i)) -> (f32[2] @ P(), f32[2] @ P(), f32[2] @ P())\n"
      "    on M {\n"
      "  s = psum(a, i)\n"
      "  for k in range(3) {\n"
      "    p = psum(a * 2.0, i)\n"
      "    q = psum(b, i)\n"
      "    a = a + 0.5 * p - s\n"
      "    b = b - 0.25 * q\n"
      "  }\n"
      "  t = psum(a, i)\n"
      "  w = psum(b, i)\n"
      "  return s, t, w\n}\n");
  ir::Function f = shmap_of(*c);
  CHECK(combine_collectives(f) == 2);  // {p, q} in the loop, {t, w} after it
  int top = 0, inner = 0, loops = 0;
  for (const ir::Instr &in : f.body) {
    if (in.op == OpCode::Psum) top += static_cast<int>(in.operands.size()) * 10 + 1;
    for (const ir::Region &r : in.regions) {
      ++loops;
      for (const ir::Instr &x : r.body)
        if (x.op == OpCode::Psum) inner += static_cast<int>(x.operands.size()) * 10 + 1;
    }
  }
  CHECK(loops == 1);
  CHECK(top == 11 + 21);  // s alone, then psum((t, w))
  CHECK(inner == 21);     // psum((p, q)) once per iteration
  ir::Module m = *c->module;
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  REQUIRE(ir::verify_module(m).empty());
  const std::string printed = ir::print_module(m);
  CHECK(printed.find("for k in range(0, 3)") != std::string::npos);
  CHECK(printed.find("p, q = psum((t0, b_1), i)") != std::string::npos);
  auto again = compile_ok(printed, /*auto_pb=*/false);
  auto in = random_inputs(*c, 6);
  auto x = run(*c, in), y = run(*again, in);
  REQUIRE(x.size() == 3);
  for (size_t k = 0; k < x.size(); ++k) CHECK(same_bits(x[k], y[k]));
}

TEST_CASE("combine_collectives: several buckets in one block, members moved by a merge",
          "[combine]") {
  // Over i: p1, p2, p3 (a threshold of two psums per bucket splits them as
  // {p1, p2}, {p3, p4}). Over j: q1 reads p1, so merging {p1, p2} moves x and
  // q1 after the combined psum; q2 stays before it and still combines with q1.
  auto c = compile_ok(
      "mesh M = (i: 2, j: 2)\n"
      "shmap f(a: f32[8] @ P((i, j)), b: f32[8] @ P((i, j))) -> (f32[2] @ P(), f32[4] @ P(i),\n"
      "    f32[4] @ P(j), f32[4] @ P(j), f32[4] @ P(j))\n"
      "    on M {\n"
      "  p1 = psum(a, i)\n"
      "  x = p1 * 2.0\n"
      "  q1 = psum(x, j)\n"
      "  q2 = psum(b * 3.0, j)\n"
      "  p2 = psum(b, i)\n"
      "  p3 = psum(a * b, i)\n"
      "  p4 = psum(a - b, i)\n"
      "  return q1, q2, p2 + p3, p4, p1\n}\n");
  ir::Function f = shmap_of(*c);
  CombineOptions options;
  options.threshold_bytes = 2 * 2 * 4;  // two f32[2] per collective
  CHECK(combine_collectives(f, options) == 3);
  std::vector<std::string> order;  // the collectives, in program order
  for (const ir::Instr &in : f.body)
    if (in.op == OpCode::Psum) {
      std::string names;
      for (ir::ValueId r : in.results) names += f.values[r].name;
      order.push_back(names);
    }
  CHECK(order == std::vector<std::string>{"p1p2", "q2q1", "p3p4"});
  ir::Module m = *c->module;
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  REQUIRE(ir::verify_module(m).empty());
  auto again = compile_ok(ir::print_module(m), /*auto_pb=*/false);
  auto in = random_inputs(*c, 8);
  auto x = run(*c, in), y = run(*again, in);
  REQUIRE(x.size() == 5);
  for (size_t k = 0; k < x.size(); ++k) CHECK(same_bits(x[k], y[k]));
}
