// tests/unit/transforms/test_combine_gather.cpp — combined all_gathers and
// psum_scatters: `all_gather((a, b), axes)`, `psum_scatter((a, b), axes)`.
//
// The language form is checked against values computed by hand from the
// devices' blocks and against the same program written with one collective
// per tensor (the same bits); the combine pass on FSDP's gradient, on what
// must stay apart, and on its threshold; transposition (a combined all_gather
// transposes to a combined psum_scatter and back) and the cost model.

#include "analysis/cost.h"
#include "ir/verifier.h"
#include "transform_test_util.h"
#include "transforms/combine_collectives.h"

using namespace spmd;
using namespace spmd::test;

namespace {

void check_same_bits(const std::vector<rt::Tensor> &x, const std::vector<rt::Tensor> &y) {
  REQUIRE(x.size() == y.size());
  for (size_t k = 0; k < x.size(); ++k) {
    INFO("output " << k);
    CHECK(same_bits(x[k], y[k]));
  }
}

/// Instructions of `op` in the only shmap's body, and the values they carry.
std::pair<int, int> instructions(const Compilation &c, OpCode op) {
  int n = 0, values = 0;
  for (const ir::Instr &in : shmap_of(c).body)
    if (in.op == op) {
      ++n;
      values += static_cast<int>(in.operands.size());
    }
  return {n, values};
}

/// The derived program as printed and re-checked strictly, with the given threshold.
std::unique_ptr<Compilation> derived(const Compilation &c, DeriveKind kind, int64_t threshold,
                                     std::vector<std::string> wrt = {}) {
  DeriveRequest r;
  r.kind = kind;
  r.wrt = std::move(wrt);
  r.combine.threshold_bytes = threshold;
  return compile_ok(ir::print_module(derive(*c.module, r)), /*auto_pb=*/false);
}

const char *kCombined =
    "mesh M = (i: 4)\n"
    "shmap f(a: f32[8, 2] @ P(i), n: i32[4] @ P(i), x: f32[16, 8] @ P(i), y: f32[16, 4] @ P(i))\n"
    "    -> (g: f32[32, 2] @ P(i), k: i32[16] @ P(i), c: f32[8, 8] @ P(i),\n"
    "        u: f32[8, 8] @ P(i), s: f32[16, 2] @ P(i), t: f32[16, 1] @ P(i)) on M {\n"
    "  g, k = all_gather((a, n), i)\n"
    "  c, u = all_gather((a, a * 2.0), i, axis=1, tiled=true)\n"
    "  s, t = psum_scatter((x, y), i, scatter_dimension=1)\n"
    "  return g, k, c, u, s, t\n}\n";

const char *kSeparate =
    "mesh M = (i: 4)\n"
    "shmap f(a: f32[8, 2] @ P(i), n: i32[4] @ P(i), x: f32[16, 8] @ P(i), y: f32[16, 4] @ P(i))\n"
    "    -> (g: f32[32, 2] @ P(i), k: i32[16] @ P(i), c: f32[8, 8] @ P(i),\n"
    "        u: f32[8, 8] @ P(i), s: f32[16, 2] @ P(i), t: f32[16, 1] @ P(i)) on M {\n"
    "  g = all_gather(a, i)\n"
    "  k = all_gather(n, i)\n"
    "  c = all_gather(a, i, axis=1)\n"
    "  u = all_gather(a * 2.0, i, axis=1)\n"
    "  s = psum_scatter(x, i, scatter_dimension=1)\n"
    "  t = psum_scatter(y, i, scatter_dimension=1)\n"
    "  return g, k, c, u, s, t\n}\n";

}  // namespace

TEST_CASE("all_gather((a, b)) and psum_scatter((a, b)) give each component's own result",
          "[combine]") {
  auto c = compile_ok(kCombined);
  CHECK(instructions(*c, OpCode::AllGather) == std::pair{2, 4});
  CHECK(instructions(*c, OpCode::PsumScatter) == std::pair{1, 2});
  auto in = random_inputs(*c, 21);
  const rt::Tensor &a = in[0], &n = in[1], &x = in[2], &y = in[3];
  std::vector<rt::Tensor> out = run(*c, in);
  REQUIRE(out.size() == 6);
  // Device d holds rows 2d, 2d+1 of a, element d of n, rows 4d..4d+3 of x and y.
  for (int64_t d = 0; d < 4; ++d) {
    for (int64_t e = 0; e < 16; ++e) CHECK(out[0].get(d * 16 + e) == a.get(e));  // all of a
    for (int64_t e = 0; e < 4; ++e) CHECK(out[1].get(d * 4 + e) == n.get(e));
    // c on device d: f32[2, 8], c[r, 2j + col] = a[2j + r, col].
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t col = 0; col < 2; ++col) {
          const double want = a.get((2 * j + r) * 2 + col);
          CHECK(out[2].get((2 * d + r) * 8 + 2 * j + col) == want);
          CHECK(out[3].get((2 * d + r) * 8 + 2 * j + col) == static_cast<float>(2 * want));
        }
    // s on device d: f32[4, 2], columns 2d, 2d+1 of the sum of the devices' x blocks;
    // t: f32[4, 1], column d of the sum of the y blocks (summed in rank order, in f32).
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t col = 0; col < 2; ++col) {
        float sum = 0;
        for (int64_t src = 0; src < 4; ++src)
          sum += static_cast<float>(x.get((4 * src + r) * 8 + 2 * d + col));
        CHECK(out[4].get((4 * d + r) * 2 + col) == sum);
      }
      float sum = 0;
      for (int64_t src = 0; src < 4; ++src) sum += static_cast<float>(y.get((4 * src + r) * 4 + d));
      CHECK(out[5].get(4 * d + r) == sum);
    }
  }
  // One collective per tensor gives the same bits.
  auto sep = compile_ok(kSeparate);
  CHECK(instructions(*sep, OpCode::AllGather) == std::pair{4, 4});
  check_same_bits(out, run(*sep, in));
}

TEST_CASE("combined all_gathers and psum_scatters print, parse, check strictly and run",
          "[combine]") {
  auto c = compile_ok(kCombined);
  const std::string printed = ir::print_module(*c->module);
  CHECK(printed.find("g, k = all_gather((a, n), i)") != std::string::npos);
  CHECK(printed.find("= all_gather((a, t0), i, axis=1)") != std::string::npos);
  CHECK(printed.find("s, t = psum_scatter((x, y), i, scatter_dimension=1)") != std::string::npos);
  CHECK(ir::print_module(*compile_ok(printed)->module) == printed);
  auto strict = compile_ok(printed, /*auto_pb=*/false);  // (no pbroadcast was needed)
  auto in = random_inputs(*c, 3);
  check_same_bits(run(*c, in), run(*strict, in));
}

TEST_CASE("combined gathers: each component typed as by its own op", "[combine]") {
  // a varies along (i, j), w along i only: all_gather keeps each one's
  // variance, all_gather_invariant removes i from each; untiled stacks.
  auto c = compile_ok(
      "mesh M = (i: 2, j: 2)\n"
      "shmap f(a: f32[4, 4] @ P(i, j), w: f32[6] @ P(i)) -> (f32[4, 4] @ P(None, j),\n"
      "    f32[6] @ P(), f32[4, 2, 4] @ P(i, None, j), f32[4, 3] @ P(i)) on M {\n"
      "  ga, gw = all_gather_invariant((a, w), i)\n"
      "  sa, sw = all_gather((a, w), i, axis=0, tiled=false)\n"
      "  return ga, gw, sa, sw\n}\n");
  const ir::Function &f = shmap_of(*c);
  const rt::Mesh &mesh = c->module->mesh_of(f);
  auto type_of = [&](const char *name) {
    for (size_t v = 0; v < f.values.size(); ++v)
      if (f.values[v].name == name) return type_str(f.type(static_cast<ir::ValueId>(v)), mesh);
    return std::string("?");
  };
  CHECK(type_of("ga") == "f32[4, 2]{j}");
  CHECK(type_of("gw") == "f32[6]");
  CHECK(type_of("sa") == "f32[2, 2, 2]{i, j}");
  CHECK(type_of("sw") == "f32[2, 3]{i}");
  auto in = random_inputs(*c, 4);
  auto out = run(*c, in);  // (checks replication of the invariant ga, gw)
  check_same_bits({out[0], out[1]}, {in[0], in[1]});
}

TEST_CASE("combined gathers: one dimension for every component", "[combine]") {
  Compilation c;
  compile_source(c, "test.spmd",
                 "mesh M = (i: 2)\n"
                 "shmap f(a: f32[4, 4] @ P(i), b: f32[4] @ P(i)) -> f32[4, 4] @ P(i) on M {\n"
                 "  x, y = all_gather((a, b), i, axis=-1)\n"
                 "  return x\n}\n",
                 CompileOptions{});
  REQUIRE_FALSE(c.ok());
  const std::string text = render_diagnostics(c.diags, c.sources);
  CHECK(text.find("names dimension 1 of the first component but 0 of component 1") !=
        std::string::npos);
}

TEST_CASE("combining FSDP's gradient: one all_gather and one psum_scatter, the same bits",
          "[combine]") {
  auto c = compile_ok(sample("fsdp_mlp.spmd"));
  const std::vector<std::string> params{"w1", "b1", "w2", "b2"};
  auto one = derived(*c, DeriveKind::Grad, CombineOptions{}.threshold_bytes, params);
  auto many = derived(*c, DeriveKind::Grad, 0, params);
  CHECK(instructions(*one, OpCode::AllGather) == std::pair{1, 4});
  CHECK(instructions(*one, OpCode::PsumScatter) == std::pair{1, 4});
  CHECK(instructions(*many, OpCode::AllGather) == std::pair{4, 4});
  CHECK(instructions(*many, OpCode::PsumScatter) == std::pair{4, 4});
  // One latency per collective: 1 + 1 + 1 (the loss's psum) instead of 4 + 4 + 1,
  // the same bytes.
  const HardwareProfile p{"test", 1e12, 1e9, 1e-6, ""};
  const CostReport r1 = estimate_cost(*one->module, shmap_of(*one), p);
  const CostReport r9 = estimate_cost(*many->module, shmap_of(*many), p);
  CHECK(r1.comm_ops == 3);
  CHECK(r9.comm_ops == 9);
  CHECK(r1.comm_bytes() == Approx(r9.comm_bytes()));
  CHECK(r9.comm_s - r1.comm_s == Approx(6e-6));
  auto in = random_inputs(*c, 17);
  check_same_bits(run(*one, in), run(*many, in));
}

TEST_CASE("combine_collectives: gathers of other dims, tilings, ops or dependents stay apart",
          "[combine]") {
  // Local a, b: f32[4, 4] (64 bytes), gathered f32[8, 4] (128 bytes).
  const std::string text =
      "mesh M = (i: 2, j: 2)\n"
      "shmap f(a: f32[8, 4] @ P(i), b: f32[8, 4] @ P(i)) -> (f32[16, 4] @ P(i),\n"
      "    f32[8, 8] @ P(i), f32[16, 4] @ P(i), f32[4, 4, 4] @ P(i), f32[8, 4] @ P(),\n"
      "    f32[8, 4] @ P(i), f32[4, 4] @ P(i), f32[2, 4] @ P(i)) on M {\n"
      "  g1 = all_gather(a, i)\n"
      "  g2 = all_gather(b, i, axis=1)\n"       // another dimension
      "  g3 = all_gather(b, i)\n"               // joins g1
      "  g4 = all_gather(a, i, tiled=false)\n"  // untiled
      "  g5 = all_gather_invariant(b, i)\n"     // another op
      "  s1 = psum_scatter(g1, i)\n"            // reads g1, but no psum_scatter
      "  s2 = psum_scatter(b, i)\n"             // joins s1
      "  s3 = psum_scatter(s2 * 2.0, i)\n"      // reads s2: apart
      "  return g1, g2, g3, g4, g5, s1, s2, s3\n}\n";
  auto c = compile_ok(text);
  ir::Module m = *c->module;
  ir::Function f = shmap_of(*c);
  CHECK(combine_collectives(f) == 2);  // {g1, g3} and {s1, s2}
  std::vector<std::string> order;      // the collectives, in program order
  for (const ir::Instr &in : f.body)
    if (op_kind(in.op) == OpKind::Collective && in.op != OpCode::Pbroadcast) {
      std::string names;
      for (ir::ValueId r : in.results) names += f.values[r].name;
      order.push_back(names);
    }
  CHECK(order == std::vector<std::string>{"g2", "g1g3", "g4", "g5", "s1s2", "s3"});
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  REQUIRE(ir::verify_module(m).empty());
  auto again = compile_ok(ir::print_module(m), /*auto_pb=*/false);
  auto in = random_inputs(*c, 9);
  check_same_bits(run(*c, in), run(*again, in));

  // The threshold counts an all_gather's gathered bytes (g1 + g3: 256 > 200)
  // and a psum_scatter's operand bytes (s1 + s2: 128 + 64 = 192 <= 200).
  ir::Function h = shmap_of(*c);
  CombineOptions small;
  small.threshold_bytes = 200;
  CHECK(combine_collectives(h, small) == 1);
  int scatter_values = 0;
  for (const ir::Instr &in : h.body) {
    if (in.op == OpCode::AllGather) CHECK(in.operands.size() == 1);
    if (in.op == OpCode::PsumScatter && in.operands.size() == 2) ++scatter_values;
  }
  CHECK(scatter_values == 1);
  // split_collectives undoes it.
  split_collectives(f);
  for (const ir::Instr &in : f.body)
    if (op_kind(in.op) == OpKind::Collective) CHECK(in.operands.size() == 1);
  m.functions[static_cast<size_t>(only_shmap(*c))] = f;
  CHECK(ir::verify_module(m).empty());
}

TEST_CASE("transpose: a combined all_gather becomes a combined psum_scatter and back",
          "[combine][transpose]") {
  const std::string text =
      "mesh M = (i: 4)\n"
      "shmap f(a: f64[8, 3] @ P(i), b: f64[4] @ P(i)) -> (f64[32, 3] @ P(i), f64[16] @ P(i))\n"
      "    on M {\n"
      "  ga, gb = all_gather((a, b), i)\n"
      "  return ga * 2.0, gb\n}\n";
  auto c = compile_ok(text);
  auto t = derive_ok(*c, DeriveKind::Transpose, "");
  CHECK(instructions(*t, OpCode::PsumScatter) == std::pair{1, 2});
  CHECK(instructions(*t, OpCode::AllGather) == std::pair{0, 0});
  // <f(x), y> = <x, f^T(y)>.
  auto x = random_inputs(*c, 12);
  auto fx = run(*c, x);
  std::vector<rt::Tensor> y;
  for (size_t k = 0; k < fx.size(); ++k)
    y.push_back(rt::random_tensor(fx[k].dtype(), fx[k].shape(), 40 + k));
  auto xt = run(*t, y);
  REQUIRE(xt.size() == 2);
  const double lhs = dot(fx[0], y[0]) + dot(fx[1], y[1]);
  const double rhs = dot(x[0], xt[0]) + dot(x[1], xt[1]);
  CHECK(lhs == Approx(rhs).epsilon(1e-12));
  // Transposed again: the combined all_gather, the same values.
  auto tt = derive_ok(*t, DeriveKind::Transpose, "");
  CHECK(instructions(*tt, OpCode::AllGather) == std::pair{1, 2});
  CHECK(instructions(*tt, OpCode::PsumScatter) == std::pair{0, 0});
  check_same_bits(run(*c, x), run(*tt, x));
}
