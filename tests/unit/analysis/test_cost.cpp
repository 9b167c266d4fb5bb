// test_cost.cpp — analysis/cost.h against hand-derived flop and byte counts:
// the per-op conventions, the alpha-beta model, and the arithmetic intensity
// of each parallelism strategy as derived in MaxText's sharding notes
// (shared/seeds/maxtext-sharding.md), in bf16 (2 bytes per element).
#include "../transforms/transform_test_util.h"
#include "analysis/cost.h"
#include "analysis/profile_file.h"

namespace spmd::test {
namespace {

HardwareProfile test_profile() { return {"test", 1e12, 1e9, 1e-6, ""}; }

CostReport cost_of(const Compilation &c, const HardwareProfile &p = test_profile()) {
  return estimate_cost(*c.module, shmap_of(c), p);
}

CostReport grad_cost_of(const Compilation &c, std::vector<std::string> wrt) {
  auto g = derive_ok(c, DeriveKind::Grad, "", std::move(wrt));
  return cost_of(*g);
}

TEST_CASE("cost: per-op flop conventions", "[cost]") {
  // Local shapes (mesh i: 4): x f32[8, 6], w f32[6, 5].
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[32, 6] @ P(i), w: f32[6, 5] @ P()) -> f32[] @ P() on M {\n"
      "  h = tanh(x @ w)\n"           // einsum 2*8*6*5 = 480; tanh 40 elementwise
      "  t = transpose(h, (1, 0))\n"  // layout: 0
      "  s = sum(t * t, axes=0)\n"    // mul 40 elementwise; sum 40 (operand size)
      "  return psum(sum(s), i)\n"    // sum 8 (operand f32[8]); psum: 0 flops
      "}\n");
  CostReport r = cost_of(*c);
  CHECK(r.einsum_flops == 2 * 8 * 6 * 5);
  CHECK(r.elementwise_flops == 40 + 40);
  CHECK(r.reduction_flops == 40 + 8);
  CHECK(r.flops() == 480 + 80 + 48);
  CHECK(r.devices == 4);
  // psum of an f32 scalar over 4 devices: 2 (n-1)/n * 4 bytes = 6.
  CHECK(r.comm_bytes() == Approx(6.0));
  CHECK(r.comm_ops == 1);  // the pbroadcast of w moves nothing and pays no alpha
  REQUIRE(r.intensity().has_value());
  CHECK(*r.intensity() == Approx(608.0 / 6.0));
  // Alpha-beta: 608 flops at 1e12/s; one collective: 1e-6 + 6 B / 1e9 B/s.
  CHECK(r.compute_s == Approx(608e-12));
  CHECK(r.comm_s == Approx(1e-6 + 6e-9));
  CHECK_FALSE(r.compute_bound());
}

TEST_CASE("cost: no communication means no intensity; calls count as inlined", "[cost]") {
  auto c = compile_ok(
      "mesh M = (x: 2, y: 4)\n"
      "def layer(a: f32[n, k], w: f32[k, m]) -> f32[n, m] {\n  return exp(a @ w)\n}\n"
      "shmap f(a: f32[8, 16] @ P(x), w: f32[16, 32] @ P(None, y)) -> f32[8, 32] @ P(x, y) on M {\n"
      "  return layer(a, w)\n}\n");
  CostReport r = cost_of(*c);
  // Local a f32[4, 16], w f32[16, 8]: einsum 2*4*16*8; exp on 4*8 elements.
  CHECK(r.einsum_flops == 2 * 4 * 16 * 8);
  CHECK(r.elementwise_flops == 4 * 8);
  CHECK(r.comm_bytes() == 0);
  CHECK(r.comm_ops == 0);
  CHECK_FALSE(r.intensity().has_value());
  CHECK(r.comm_s == 0);
  CHECK(r.compute_bound());
}

TEST_CASE("cost: the built-in profiles", "[cost]") {
  auto h100 = find_profile("H100");
  auto h200 = find_profile("h200");
  REQUIRE(h100);
  REQUIRE(h200);
  CHECK_FALSE(find_profile("tpu"));
  // Dense bf16 peak ~989 TFLOP/s on both; ~370 GB/s NCCL bus bandwidth.
  CHECK(h100->flops_per_s == Approx(989e12));
  CHECK(h200->flops_per_s == Approx(989e12));
  CHECK(h100->bw_bytes_per_s == Approx(370e9));
  CHECK(h100->latency_s > 0);
  CHECK(h100->latency_s < 20e-6);
}

// Data parallelism. B x E @ E x M with the batch split over n devices and the
// weight replicated (MaxText: B_x E x E M = B_x M).
//   forward:  2 B_l E M flops (B_l = B / n)
//   backward w.r.t. the weight only: dW = x^T @ dy, another 2 B_l E M
//   so the gradient program does 4 B_l E M matmul flops;
//   communication: the psum (all-reduce) of dW, E M bf16 elements:
//   2 (n-1)/n * 2 E M bytes (plus the loss's scalar psum, 2 (n-1)/n * 2).
//   intensity = 4 B_l E M / (4 (n-1)/n E M) = B_l * n / (n-1)   ~ local batch.
// (MaxText counts the backward pass's dW and dX, 4 B_l P, for the same ratio.)
TEST_CASE("cost: data parallelism's intensity is the local batch", "[cost]") {
  const double n = 8, B = 256, Bl = B / n, E = 64, Mm = 128;
  auto c = compile_ok(
      "mesh M = (data: 8)\n"
      "shmap f(w: bf16[64, 128] @ P(), x: bf16[256, 64] @ P(data)) -> bf16[] @ P() on M {\n"
      "  return psum(sum(x @ w), data)\n}\n");
  CostReport fwd = cost_of(*c);
  CHECK(fwd.einsum_flops == 2 * Bl * E * Mm);
  CostReport r = grad_cost_of(*c, {"w"});
  CHECK(r.einsum_flops == 4 * Bl * E * Mm);
  CHECK(r.comm_bytes() == Approx(2 * (n - 1) / n * (2 * E * Mm + 2)));
  // dW's psum and the loss's, combined into one collective.
  CHECK(r.comm.by_op.at("psum").values == 2);
  CHECK(r.comm.by_op.at("psum").count == 1);
  REQUIRE(r.intensity());
  double expected = Bl * n / (n - 1);
  CHECK(r.einsum_flops / r.comm.by_op.at("psum").moved_bytes == Approx(expected).epsilon(1e-3));
  // Elementwise and reduction flops (the loss) are lower order: within 2%.
  CHECK(*r.intensity() >= expected * 0.999);
  CHECK(*r.intensity() <= expected * 1.02);
  // Differentiating w.r.t. x too adds dX = dy @ W^T: 6 B_l E M flops, same bytes.
  CostReport both = grad_cost_of(*c, {"w", "x"});
  CHECK(both.einsum_flops == 6 * Bl * E * Mm);
  CHECK(both.comm_bytes() == Approx(r.comm_bytes()));
}

// FSDP. The weight is sharded over the data axis and all-gathered before use.
//   forward: 2 B_l E M flops; all_gather of E M bf16: (n-1)/n * 2 E M bytes
//   intensity = 2 B_l E M / (2 (n-1)/n E M) = B_l * n / (n-1)  ~ local batch.
//   The gradient reduce-scatters dW: (n-1)/n * 2 E M more bytes for 2 B_l E M
//   more flops — the same ratio.
TEST_CASE("cost: FSDP's intensity is the local batch too", "[cost]") {
  const double n = 4, B = 128, Bl = B / n, E = 64, Mm = 96;
  auto c = compile_ok(
      "mesh M = (data: 4)\n"
      "shmap f(w: bf16[64, 96] @ P(data), x: bf16[128, 64] @ P(data)) -> bf16[128, 96] @ P(data) "
      "on M {\n  return x @ all_gather(w, data)\n}\n");
  CostReport r = cost_of(*c);
  CHECK(r.flops() == 2 * Bl * E * Mm);
  CHECK(r.comm.by_op.at("all_gather").size_bytes == 2 * E * Mm);
  CHECK(r.comm_bytes() == Approx((n - 1) / n * 2 * E * Mm));
  CHECK(*r.intensity() == Approx(Bl * n / (n - 1)));
  auto v = derive_ok(*c, DeriveKind::Vjp, "", {"w"});
  CostReport g = cost_of(*v);
  CHECK(g.comm.by_op.at("psum_scatter").count == 1);
  CHECK(g.einsum_flops == 4 * Bl * E * Mm);
  CHECK(g.comm_bytes() == Approx(2 * (n - 1) / n * 2 * E * Mm));
  CHECK(g.einsum_flops / g.comm_bytes() == Approx(Bl * n / (n - 1)));
}

// Tensor parallelism, second matmul: B M_x x M_x E = B E (partial), then a
// reduce-scatter over x to B E_x.
//   flops 2 B M_x E; reduce-scatter of the B E bf16 partial: (n-1)/n * 2 B E
//   intensity = 2 B M_x E / (2 (n-1)/n B E) = M_x * n / (n-1)  ~ local mlp dim.
// With an all-reduce (psum) instead, twice the bytes: M_x * n / (2 (n-1)).
TEST_CASE("cost: tensor parallelism's intensity is the local mlp dimension", "[cost]") {
  const double n = 4, B = 64, Mm = 256, Mx = Mm / n, E = 32;
  auto c = compile_ok(
      "mesh M = (model: 4)\n"
      "shmap f(h: bf16[64, 256] @ P(None, model), w: bf16[256, 32] @ P(model, None))\n"
      "    -> bf16[64, 32] @ P(None, model) on M {\n"
      "  return psum_scatter(h @ w, model, scatter_dimension=1)\n}\n"
      "shmap g(h: bf16[64, 256] @ P(None, model), w: bf16[256, 32] @ P(model, None))\n"
      "    -> bf16[64, 32] @ P() on M {\n"
      "  return psum(h @ w, model)\n}\n");
  CostReport rs = estimate_cost(
      *c->module, c->module->functions[static_cast<size_t>(find_shmap(*c->module, "f"))],
      test_profile());
  CHECK(rs.flops() == 2 * B * Mx * E);
  CHECK(rs.comm_bytes() == Approx((n - 1) / n * 2 * B * E));
  CHECK(*rs.intensity() == Approx(Mx * n / (n - 1)));
  CostReport ar = estimate_cost(
      *c->module, c->module->functions[static_cast<size_t>(find_shmap(*c->module, "g"))],
      test_profile());
  CHECK(ar.flops() == 2 * B * Mx * E);
  CHECK(*ar.intensity() == Approx(Mx * n / (2 * (n - 1))));
}

// Expert parallelism: tokens B_x E X -> all-to-all -> B E X_x, then each
// device multiplies its expert's tokens by its expert's E x M weight.
// Per device: T = n * C tokens of width E (C slots per expert).
//   flops 2 T E M; all-to-all of the T x E bf16 tokens: (n-1)/n * 2 T E bytes
//   intensity = 2 T E M / (2 (n-1)/n T E) = M * n / (n-1)   ~ the mlp dim;
//   the batch cancels.
TEST_CASE("cost: expert parallelism's intensity is the mlp dimension", "[cost]") {
  const double n = 4, C = 8, T = n * C, E = 16, Mm = 48;
  auto c = compile_ok(
      "mesh M = (expert: 4)\n"
      "shmap f(x: bf16[128, 16] @ P(expert), w: bf16[4, 16, 48] @ P(expert))\n"
      "    -> bf16[128, 48] @ P(expert) on M {\n"
      "  mine = all_to_all(x, expert, split_axis=0, concat_axis=0)\n"
      "  return mine @ reshape(w, (16, 48))\n}\n");
  CostReport r = cost_of(*c);
  CHECK(r.flops() == 2 * T * E * Mm);
  CHECK(r.comm_bytes() == Approx((n - 1) / n * 2 * T * E));
  CHECK(*r.intensity() == Approx(Mm * n / (n - 1)));
}

// Pipeline-style point-to-point: a ppermute sends the whole array; devices
// that keep their data (identity pairs only) send nothing.
TEST_CASE("cost: ppermute moves its whole array; alpha per collective", "[cost]") {
  auto c = compile_ok(
      "mesh M = (stage: 4)\n"
      "shmap f(x: bf16[64, 32] @ P(stage), w: bf16[32, 32] @ P()) -> bf16[64, 32] @ P(stage) "
      "on M {\n  return ppermute(x @ w, stage, shift=1)\n}\n");
  HardwareProfile p{"custom", 2e12, 4e9, 3e-6, ""};
  CostReport r = cost_of(*c, p);
  const double flops = 2.0 * 16 * 32 * 32, bytes = 16 * 32 * 2;
  CHECK(r.flops() == flops);
  CHECK(r.comm_bytes() == bytes);
  CHECK(r.compute_s == Approx(flops / 2e12));
  CHECK(r.comm_s == Approx(3e-6 + bytes / 4e9));
  CHECK(r.total_s() == Approx(flops / 2e12 + 3e-6 + bytes / 4e9));
}

TEST_CASE("cost: a ppermute over two axes is one collective moving its array", "[cost]") {
  auto c = compile_ok(
      "mesh M = (a: 2, b: 4)\n"
      "shmap f(x: f32[64] @ P((a, b))) -> f32[64] @ P((a, b)) on M {\n"
      "  return ppermute(x, (a, b), shift=3) + ppermute(x, (b, a), perm=[(0, 0)])\n}\n");
  HardwareProfile p{"custom", 2e12, 4e9, 3e-6, ""};
  CostReport r = cost_of(*c, p);
  CHECK(r.comm_bytes() == 8 * 4);  // the identity permutation moves nothing
  CHECK(r.comm_s == Approx(2 * 3e-6 + 8 * 4 / 4e9));
}

TEST_CASE("cost: table and JSON", "[cost]") {
  auto c = compile_ok(
      "mesh M = (i: 2)\nshmap f(x: f32[4] @ P(i)) -> f32[] @ P() on M {\n"
      "  return psum(sum(x), i)\n}\n");
  CostReport r = cost_of(*c);
  std::string table = format_cost(r, "forward: f");
  CHECK(table.find("arithmetic intensity") != std::string::npos);
  CHECK(table.find("communication-bound") != std::string::npos);
  std::string json = cost_json(r);
  CHECK(json.find("\"flops\": 2,") != std::string::npos);
  CHECK(json.find("\"bound\": \"communication\"") != std::string::npos);
  CHECK(json.front() == '{');
  CHECK(json.back() == '}');
}

}  // namespace
TEST_CASE("cost: a collective runs on the link its axes cross", "[cost][profile]") {
  const rt::Mesh mesh({{"node", 2}, {"gpu", 4}});
  HardwareProfile p{.name = "two",
                    .flops_per_s = 1e12,
                    .bw_bytes_per_s = 100e9,
                    .latency_s = 1e-6,
                    .devices_per_node = 4,
                    .inter_node = LinkCost{10e-6, 10e9}};
  const std::vector<int> gpu{1}, node{0}, both{0, 1};
  // gpu: devices 4k..4k+3, inside one node of 4; node: devices 4 apart, across.
  CHECK(p.link(mesh, gpu) == LinkCost{1e-6, 100e9});
  CHECK(p.link(mesh, node) == LinkCost{10e-6, 10e9});
  CHECK(p.link(mesh, both) == LinkCost{10e-6, 10e9});  // the slowest link bounds it
  CHECK(collective_seconds(OpCode::Psum, 1e9, p, mesh, node) == Approx(10e-6 + 0.1));
  CHECK(collective_seconds(OpCode::Pbroadcast, 1e9, p, mesh, node) == 0);
  // Nodes of 2: even `gpu`'s groups (4 consecutive devices) cross nodes.
  p.devices_per_node = 2;
  CHECK(p.link(mesh, gpu) == LinkCost{10e-6, 10e9});
  // Nodes of 8 hold the whole mesh.
  p.devices_per_node = 8;
  CHECK(p.link(mesh, both) == LinkCost{1e-6, 100e9});
  // A link named for an axis overrides the node rule.
  p.devices_per_node = 4;
  p.axes["node"] = LinkCost{2e-6, 50e9};
  CHECK(p.link(mesh, node) == LinkCost{2e-6, 50e9});
  CHECK(p.link(mesh, both) == LinkCost{2e-6, 50e9});
}

TEST_CASE("cost: a link may price kinds of collective apart", "[cost][profile]") {
  const rt::Mesh mesh({{"node", 2}, {"gpu", 4}});
  HardwareProfile p{.name = "kinds",
                    .flops_per_s = 1e12,
                    .bw_bytes_per_s = 100e9,
                    .latency_s = 1e-6,
                    .devices_per_node = 4,
                    .inter_node = LinkCost{10e-6, 10e9, {{"psum", {30e-6, 5e9}}}},
                    .intra_by_collective = {{"all_to_all", {5e-6, 20e9}}}};
  const std::vector<int> gpu{1}, node{0}, both{0, 1};
  CHECK(p.per_collective());
  // Inside a node all_to_all has its own figures, every other kind the link's.
  CHECK(p.link(mesh, gpu, "all_to_all") == LinkCost{5e-6, 20e9});
  CHECK(p.link(mesh, gpu, "psum") == LinkCost{1e-6, 100e9});
  CHECK(p.link(mesh, gpu, "") == LinkCost{1e-6, 100e9});
  // Between nodes psum, pmax and pmin share psum's figures; all_gather the link's.
  for (const char *op : {"psum", "pmax", "pmin"})
    CHECK(p.link(mesh, node, op) == LinkCost{30e-6, 5e9});
  CHECK(p.link(mesh, node, "all_gather_invariant") == LinkCost{10e-6, 10e9});
  // Over both axes: the slowest of each axis's figures for that kind.
  CHECK(p.link(mesh, both, "all_to_all") == LinkCost{10e-6, 10e9});
  CHECK(p.link(mesh, both, "psum") == LinkCost{30e-6, 5e9});
  CHECK(collective_seconds(OpCode::AllToAll, 1e9, p, mesh, gpu) == Approx(5e-6 + 0.05));
  CHECK(collective_seconds(OpCode::Pmax, 1e9, p, mesh, node) == Approx(30e-6 + 0.2));
  CHECK(collective_seconds(OpCode::AllToAll, 1e9, p) == Approx(5e-6 + 0.05));  // no mesh: intra
  // Files: the kinds parse, print and parse back.
  std::string error;
  auto back = parse_profile(profile_json(p), "k.json", error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->intra_by_collective == p.intra_by_collective);
  CHECK(back->inter_node == p.inter_node);
  CHECK_FALSE(parse_profile(
      R"({"name": "x", "flops_per_s": 1, "intra_node": {"latency_s": 0, "bw_bytes_per_s": 1,
          "collectives": {"psum": {"latency_s": 0, "bw_bytes_per_s": 0}}}})",
      "k.json", error));
  CHECK(error == "k.json: `intra_node.collectives.psum.bw_bytes_per_s` must be positive");
  CHECK_FALSE(parse_profile(
      R"({"name": "x", "flops_per_s": 1, "intra_node": {"latency_s": 0, "bw_bytes_per_s": 1,
          "collectives": {"psum": {"latency_s": 0, "bw_bytes_per_s": 1, "collectives": {}}}}})",
      "k.json", error));
  CHECK(error ==
        "k.json: `intra_node.collectives.psum.collectives` is not a profile key (known: "
        "bw_bytes_per_s, latency_s)");
}

TEST_CASE("cost: profile files parse, print and parse back", "[cost][profile]") {
  std::string error;
  auto ib = find_profile("h100-ib");
  REQUIRE(ib);
  auto back = parse_profile(profile_json(*ib), "h100-ib.json", error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->name == ib->name);
  CHECK(back->flops_per_s == ib->flops_per_s);
  CHECK(back->intra_node() == ib->intra_node());
  CHECK(back->devices_per_node == 8);
  CHECK(back->inter_node == ib->inter_node);
  auto axes = parse_profile(
      R"({"name": "a", "flops_per_s": 1e12, "intra_node": {"latency_s": 0, "bw_bytes_per_s": 1e9},
          "axes": {"model": {"latency_s": 1e-6, "bw_bytes_per_s": 2e9}}})",
      "a.json", error);
  REQUIRE(axes);
  CHECK(axes->axes.at("model") == LinkCost{1e-6, 2e9});
  CHECK(parse_profile(profile_json(*axes), "a.json", error)->axes == axes->axes);

  auto fails = [&](const std::string &text, const std::string &message) {
    CHECK_FALSE(parse_profile(text, "p.json", error));
    CHECK(error == "p.json: " + message);
  };
  const std::string intra = R"("intra_node": {"latency_s": 1e-6, "bw_bytes_per_s": 1e9})";
  fails("{", "not valid JSON");
  fails("[]", "a profile is a JSON object");
  fails(R"({"flops_per_s": 1, )" + intra + "}", "`name` needs a non-empty string");
  fails(R"({"name": "x", "flops_per_s": -1, )" + intra + "}",
        "`flops_per_s` must be a finite number, 0 or more");
  fails(R"({"name": "x", "flops_per_s": 0, )" + intra + "}", "`flops_per_s` must be positive");
  fails(R"({"name": "x", "flops_per_s": 1})", "`intra_node` is required");
  fails(R"({"name": "x", "flops_per_s": 1, "devices_per_node": 4, )" + intra + "}",
        "`inter_node` is required when devices_per_node is given");
  fails(R"({"name": "x", "flops_per_s": 1, "devices_per_node": 2.5, )" + intra + "}",
        "`devices_per_node` must be a whole number, 0 or more");
  fails(R"({"name": "x", "flops_per_s": 1, "intra_node": {"latency_s": 1e-6}})",
        "`intra_node.bw_bytes_per_s` is required");
  fails(R"({"name": "x", "flop_per_s": 1, )" + intra + "}",
        "`flop_per_s` is not a profile key (known: axes, description, devices_per_node, "
        "flops_per_s, inter_node, intra_node, matmul_gemm_s, matmul_layout_rates, matmul_op_s, "
        "matmul_rates, memory_bw_bytes_per_s, memory_rates, name, transcendental_rate)");
}

TEST_CASE("cost: with memory bandwidth an op costs the slower of its flops and bytes",
          "[cost][profile]") {
  HardwareProfile p{.name = "m", .flops_per_s = 1e12, .bw_bytes_per_s = 1e9, .latency_s = 1e-6};
  CHECK(op_seconds(2e9, 4e9, p) == Approx(2e-3));  // no memory term: flops only
  p.mem_bw_bytes_per_s = 1e11;
  CHECK(op_seconds(2e9, 4e9, p) == Approx(0.04));  // 4e9 bytes at 1e11 B/s
  CHECK(op_seconds(2e11, 4e9, p) == Approx(0.2));  // 2e11 flops at 1e12 flop/s
  // x + y on f32[1000] per device (mesh i: 4 of f32[4000]): 1000 flops and
  // 12000 bytes (two operands and the result): 1e-9 s vs 1.2e-7 s.
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[4000] @ P(i), y: f32[4000] @ P(i)) -> f32[4000] @ P(i) on M {\n"
      "  return x + y\n"
      "}\n");
  CostReport r = cost_of(*c, p);
  CHECK(r.op_bytes == Approx(12000));
  CHECK(r.compute_s == Approx(1.2e-7));
  std::string error;
  auto back = parse_profile(profile_json(p), "m.json", error);
  REQUIRE(back);
  CHECK(back->mem_bw_bytes_per_s == 1e11);
}

}  // namespace spmd::test

namespace spmd::test {
namespace {

TEST_CASE("cost: thin contractions run at the profile's measured matmul rates", "[cost][profile]") {
  HardwareProfile p{.name = "r", .flops_per_s = 8e10, .bw_bytes_per_s = 1e9, .latency_s = 1e-6};
  // No rates: every product at the peak.
  CHECK(p.contraction_rate(4) == 8e10);
  p.matmul_rates = {{8, 1e10}, {32, 3e10}, {512, 8e10}};
  CHECK(p.contraction_rate(0) == 8e10);  // not a product
  CHECK(p.contraction_rate(8) == Approx(1e10));
  CHECK(p.contraction_rate(2) == Approx(2.5e9));  // a quarter of the first dimension
  CHECK(p.contraction_rate(16) == Approx(2e10));  // halfway on a log scale from 8 to 32
  CHECK(p.contraction_rate(128) == Approx(3e10 + 0.5 * 5e10));  // 32 -> 128 -> 512
  CHECK(p.contraction_rate(4096) == 8e10);

  const std::vector<Type> mk{{DType::F32, {64, 8}, {}}, {DType::F32, {8, 256}, {}}};
  CHECK(contraction_smallest_dim(mk, "ij,jk->ik") == 8);  // contracted length
  const std::vector<Type> tall{{DType::F32, {3, 512}, {}}, {DType::F32, {512, 256}, {}}};
  CHECK(contraction_smallest_dim(tall, "ij,jk->ik") == 3);  // rows
  const std::vector<Type> gemv{{DType::F32, {64, 32}, {}}, {DType::F32, {32}, {}}};
  CHECK(contraction_smallest_dim(gemv, "ij,j->i") == 1);  // no columns
  // Batched: b is a batch label (not counted); s = 16 rows, t = 16 columns, d = 8 contracted.
  const std::vector<Type> batched{{DType::F32, {4, 16, 8}, {}}, {DType::F32, {4, 16, 8}, {}}};
  CHECK(contraction_smallest_dim(batched, "bsd,btd->bst") == 8);
  // Several labels in a group multiply: rows a*c = 6.
  const std::vector<Type> grouped{{DType::F32, {2, 3, 100}, {}}, {DType::F32, {100, 50}, {}}};
  CHECK(contraction_smallest_dim(grouped, "acj,jk->ack") == 6);
  CHECK(contraction_smallest_dim(std::vector<Type>{{DType::F32, {4, 4}, {}}}, "ii->i") == 0);

  // a @ b on f32[64, 8] x f32[8, 256] per device: 2*64*8*256 flops at the rate
  // for 8, and the wide 256^3 product at the peak (above the last rate).
  auto c = compile_ok(
      "mesh M = (i: 2)\n"
      "shmap f(a: f32[64, 8] @ P(), b: f32[8, 256] @ P(), w: f32[256, 256] @ P())\n"
      "    -> (t: f32[64, 256] @ P(), s: f32[256, 256] @ P()) on M {\n"
      "  return a @ b, w @ w\n"
      "}\n");
  CostReport r = cost_of(*c, p);
  // 256 is 3/4 of the way from 32 to 512 on a log scale: 3e10 + 0.75 * 5e10.
  CHECK(r.compute_s == Approx(2.0 * 64 * 8 * 256 / 1e10 + 2.0 * 256 * 256 * 256 / 6.75e10));
  std::string error;
  auto back = parse_profile(profile_json(p), "r.json", error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->matmul_rates == p.matmul_rates);

  auto fails = [&](const std::string &rates, const std::string &message) {
    CHECK_FALSE(parse_profile(R"({"name": "x", "flops_per_s": 1, "matmul_rates": )" + rates +
                                  R"(, "intra_node": {"latency_s": 0, "bw_bytes_per_s": 1}})",
                              "p.json", error));
    CHECK(error == "p.json: " + message);
  };
  fails("[]",
        "`matmul_rates` must be a non-empty list of {\"smallest_dim\": ..., \"flops_per_s\": ...}");
  fails(R"([{"smallest_dim": 8, "flops_per_s": 1}, {"smallest_dim": 8, "flops_per_s": 2}])",
        "`matmul_rates[1].smallest_dim` must be larger than the one before (the list is in "
        "increasing order)");
  fails(R"([{"smallest_dim": 0.5, "flops_per_s": 1}])",
        "`matmul_rates[0].smallest_dim` must be 1 or more");
  fails(R"([{"smallest_dim": 8, "flops_per_s": 0}])",
        "`matmul_rates[0].flops_per_s` must be positive");
  fails(R"([{"smallest_dim": 8, "rate": 1}])",
        "`matmul_rates[0].rate` is not a profile key (known: flops_per_s, smallest_dim)");
}

TEST_CASE("cost: a product's gemm shape and layout pick its measured rate", "[cost][profile]") {
  // The gemms the runtime runs (rt::einsum_gemm_shape), worked out by hand.
  auto gemm = [](const std::string &spec, rt::Shape a, rt::Shape b) {
    const rt::Shape shapes[2] = {std::move(a), std::move(b)};
    return rt::einsum_gemm_shape(spec, shapes);
  };
  rt::GemmShape g = gemm("ij,jk->ik", {64, 8}, {8, 256});
  CHECK((g.batch == 1 && g.m == 64 && g.k == 8 && g.n == 256));
  CHECK((!g.trans_a && !g.trans_b && g.copied_elements == 0));
  CHECK(HardwareProfile::layout_key(g) == "nn/k");
  // x^T y: a is read transposed in place (a gemm flag), nothing copied.
  g = gemm("ij,ik->jk", {512, 128}, {512, 256});
  CHECK((g.m == 128 && g.k == 512 && g.n == 256 && g.trans_a && !g.trans_b));
  CHECK(g.copied_elements == 0);
  CHECK(HardwareProfile::layout_key(g) == "tn/m");
  g = gemm("ik,jk->ij", {512, 256}, {128, 256});
  CHECK(HardwareProfile::layout_key(g) == "nt/n");
  // Batched attention scores: b batch, s rows, t columns, e contracted; k is read
  // transposed; the product "bst" is already the output's order.
  g = gemm("bse,bte->bst", {2, 64, 32}, {2, 64, 32});
  CHECK((g.batch == 2 && g.m == 64 && g.n == 64 && g.k == 32 && !g.trans_a && g.trans_b));
  CHECK(g.copied_elements == 0);
  // The output wants "ts" order: the 2x64x64 product is copied into it; and an
  // operand whose letters are in neither gemm order ("sbe") is copied first.
  g = gemm("bse,bte->bts", {2, 64, 32}, {2, 64, 32});
  CHECK(g.copied_elements == 2 * 64 * 64);
  g = gemm("sbe,bte->bst", {64, 2, 32}, {2, 64, 32});
  CHECK(g.copied_elements == 64 * 2 * 32);
  // A private index summed out of b first (k is in b only and not in the output).
  g = gemm("ij,jk->i", {4, 8}, {8, 16});
  CHECK(g.copied_elements == 8 * 16);
  CHECK(gemm("ij,jk->ik", {4, 8, 1}, {8, 16}).batch == 0);  // shapes that do not match: none

  HardwareProfile p{.name = "l", .flops_per_s = 8e10, .bw_bytes_per_s = 1e9, .latency_s = 1e-6};
  p.matmul_rates = {{8, 1e10}, {32, 3e10}, {512, 8e10}};
  p.matmul_layout_rates["tn/m"] = {{8, 5e9}, {128, 2e10}};
  const rt::GemmShape tn_m{.batch = 1, .m = 32, .k = 512, .n = 256, .trans_a = true};
  // Halfway from 8 to 128 on a log scale is 32: 5e9 + 0.5 * 1.5e10.
  CHECK(p.contraction_rate(tn_m) == Approx(1.25e10));
  // Above the list's last entry matmul_rates takes over: 256 is halfway from 128 to 512.
  rt::GemmShape wide = tn_m;
  wide.m = 256;
  wide.n = 1024;
  CHECK(p.contraction_rate(wide) == Approx(2e10 + 0.5 * 6e10));
  // A layout without a list: matmul_rates by the smallest dimension.
  CHECK(p.contraction_rate(rt::GemmShape{.batch = 1, .m = 32, .k = 512, .n = 256}) ==
        Approx(3e10));
  CHECK(p.contraction_rate(rt::GemmShape{}) == 8e10);  // not a product

  // x^T @ y through the cost model: 2*128*512*256 flops at the tn/m rate for 128
  // (the list's last, 2e10), and with memory rates the copy of a transposed
  // product (64x64 elements of f32, read and written) at the cache's bandwidth.
  auto c = compile_ok(
      "mesh M = (i: 2)\n"
      "shmap f(x: f32[512, 128] @ P(), y: f32[512, 256] @ P()) -> f32[128, 256] @ P() on M {\n"
      "  return einsum(\"ij,ik->jk\", x, y)\n"
      "}\n");
  CHECK(cost_of(*c, p).compute_s == Approx(2.0 * 128 * 512 * 256 / 2e10));
  p.memory_rates = {{1e3, 1e12}, {1e9, 1e12}};
  c = compile_ok(
      "mesh M = (i: 2)\n"
      "shmap f(q: f32[2, 64, 32] @ P(), k: f32[2, 64, 32] @ P()) -> f32[2, 64, 64] @ P() on M {\n"
      "  return einsum(\"bse,bte->bts\", q, k)\n"
      "}\n");
  // nt/k (k = 32): matmul_rates' 3e10 (no nt list); the copy: 2 * 8192 * 4 bytes at 1e12.
  const double flops = 2.0 * 2 * 64 * 64 * 32, copy = 2.0 * 2 * 64 * 64 * 4;
  const double bytes = 4.0 * (2 * 64 * 32 * 2 + 2 * 64 * 64);
  CHECK(cost_of(*c, p).compute_s == Approx(std::max(flops / 3e10 + copy / 1e12, bytes / 1e12)));
  // Fixed costs: the op once, each of its 2 gemms (b = 2) once.
  p.matmul_op_s = 1e-5;
  p.matmul_gemm_s = 1e-6;
  CHECK(cost_of(*c, p).compute_s ==
        Approx(std::max(flops / 3e10 + copy / 1e12 + 1e-5 + 2e-6, bytes / 1e12)));

  std::string error;
  auto back = parse_profile(profile_json(p), "l.json", error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->matmul_layout_rates == p.matmul_layout_rates);
  CHECK((back->matmul_op_s == 1e-5 && back->matmul_gemm_s == 1e-6));
  auto fails = [&](const std::string &rates, const std::string &message) {
    CHECK_FALSE(parse_profile(R"({"name": "x", "flops_per_s": 1, "matmul_layout_rates": )" +
                                  rates +
                                  R"(, "intra_node": {"latency_s": 0, "bw_bytes_per_s": 1}})",
                              "p.json", error));
    CHECK(error == "p.json: " + message);
  };
  fails("[]", "`matmul_layout_rates` must be an object of lists, keyed \"nn/m\", \"tn/k\", ... "
              "(layout/thin)");
  fails(R"({"nx/m": [{"smallest_dim": 8, "flops_per_s": 1}]})",
        "`matmul_layout_rates.nx/m` is not a layout key: nn, tn, nt or tt, a slash, and m, n or k");
  fails(R"({"nn/m": [{"smallest_dim": 8, "flops_per_s": 0}]})",
        "`matmul_layout_rates.nn/m[0].flops_per_s` must be positive");
}

}  // namespace
}  // namespace spmd::test

namespace spmd::test {
namespace {

TEST_CASE(
    "cost: with memory rates a fused chain of elementwise ops reads its inputs and writes "
    "its outputs once",
    "[cost][profile]") {
  HardwareProfile p{.name = "m", .flops_per_s = 1e12, .bw_bytes_per_s = 1e9, .latency_s = 1e-6};
  p.memory_rates = {{1, 1e10}};  // the cache-aware model: one rate at every size
  // tanh(x * y + x) on f32[1000] per device: the backends run the three ops as
  // one loop (analysis/fusion.h) that reads x and y and writes the result:
  // 3 * 4000 bytes, 3000 flops. Priced op by op, the two intermediates would
  // add 4 * 4000 bytes more (each written once and read once).
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[4000] @ P(i), y: f32[4000] @ P(i)) -> f32[4000] @ P(i) on M {\n"
      "  return tanh(x * y + x)\n"
      "}\n");
  CostReport r = cost_of(*c, p);
  CHECK(r.op_bytes == Approx(12000));
  CHECK(r.elementwise_flops == Approx(3000));
  CHECK(r.compute_s == Approx(12000 / 1e10));
  // Without memory rates every op pays its own: x * y (12000 bytes), + x (12000),
  // tanh (8000).
  HardwareProfile plain = p;
  plain.memory_rates.clear();
  plain.mem_bw_bytes_per_s = 1e10;
  CostReport unfused = cost_of(*c, plain);
  CHECK(unfused.op_bytes == Approx(32000));
  CHECK(unfused.compute_s == Approx(32000 / 1e10));
  // A reduction ends the group: sum(x * y) writes x * y for the sum to read
  // (8000 + 4000 bytes), then the sum reads 4000 and writes a scalar (4 bytes).
  auto d = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[4000] @ P(i), y: f32[4000] @ P(i)) -> f32[] @ P() on M {\n"
      "  return psum(sum(x * y), i)\n"
      "}\n");
  CostReport s = cost_of(*d, p);
  CHECK(s.op_bytes == Approx(12000 + 4004));
}

TEST_CASE("cost: a transcendental_rate prices exp, tanh, ... per element", "[cost][profile]") {
  HardwareProfile p{.name = "m", .flops_per_s = 1e12, .bw_bytes_per_s = 1e9, .latency_s = 1e-6};
  p.memory_rates = {{1, 1e10}};
  p.transcendental_rate = 1e8;
  CHECK(op_seconds(2e9, 0, p, {}, 1e8) == Approx(2e-3 + 1.0));  // flops' time + elements'
  CHECK(op_seconds(0, 4e10, p, {}, 1e8) == Approx(4.0));        // the bytes' time is larger
  // tanh(x * y + x) on f32[1000] per device, one fused loop: 12000 bytes at 1e10 B/s
  // (1.2 us), 3000 flops at 1e12 (3 ns) and 1000 tanh at 1e8 (10 us): 10.003 us.
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[4000] @ P(i), y: f32[4000] @ P(i)) -> f32[4000] @ P(i) on M {\n"
      "  return tanh(x * y + x)\n"
      "}\n");
  CHECK(cost_of(*c, p).compute_s == Approx(3000 / 1e12 + 1000 / 1e8));
  // Not fused (no memory rates): the tanh alone reads and writes 8000 bytes at
  // 1e10 B/s (0.8 us) but computes 10 us.
  HardwareProfile plain = p;
  plain.memory_rates.clear();
  plain.mem_bw_bytes_per_s = 1e10;
  CHECK(cost_of(*c, plain).compute_s ==
        Approx(12000 / 1e10 + 12000 / 1e10 + (1000 / 1e12 + 1000 / 1e8)));
  // x * y + x has no transcendental: bytes only.
  auto d = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[4000] @ P(i), y: f32[4000] @ P(i)) -> f32[4000] @ P(i) on M {\n"
      "  return x * y + x\n"
      "}\n");
  CHECK(cost_of(*d, p).compute_s == Approx(12000 / 1e10));
  const std::vector<Type> ten{{DType::F32, {10}, {}}};
  CHECK(transcendental_elements(OpCode::Exp, ten) == 10);
  CHECK(transcendental_elements(OpCode::Pow, ten) == 10);
  CHECK(transcendental_elements(OpCode::Sqrt, ten) == 0);
  CHECK(transcendental_elements(OpCode::Add, ten) == 0);
  std::string error;
  auto back = parse_profile(profile_json(p), "m.json", error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->transcendental_rate == 1e8);
}

TEST_CASE("cost: memory bandwidth depends on how many bytes an op touches", "[cost][profile]") {
  HardwareProfile p{.name = "m", .flops_per_s = 1e12, .bw_bytes_per_s = 1e9, .latency_s = 1e-6};
  p.mem_bw_bytes_per_s = 1e9;
  CHECK(p.memory_rate(1e6) == 1e9);  // no rates: the one bandwidth
  p.memory_rates = {{1e4, 4e10}, {1e6, 2e10}, {1e8, 1e9}};
  CHECK(p.memory_rate(100) == 4e10);             // below the first: the first
  CHECK(p.memory_rate(1e5) == Approx(3e10));     // halfway from 1e4 to 1e6 on a log scale
  CHECK(p.memory_rate(1e7) == Approx(1.05e10));  // halfway from 1e6 to 1e8
  CHECK(p.memory_rate(1e9) == 1e9);              // above the last: the last
  // x + y on f32[1000] per device touches 12000 bytes: log10(12000) = 4.079,
  // so 0.0396 of the way from 1e4 to 1e6: 4e10 - 0.0396 * 2e10.
  auto c = compile_ok(
      "mesh M = (i: 4)\n"
      "shmap f(x: f32[4000] @ P(i), y: f32[4000] @ P(i)) -> f32[4000] @ P(i) on M {\n"
      "  return x + y\n"
      "}\n");
  const double t = (std::log10(12000.0) - 4) / 2;
  CHECK(cost_of(*c, p).compute_s == Approx(12000 / (4e10 - t * 2e10)));

  std::string error;
  auto back = parse_profile(profile_json(p), "m.json", error);
  INFO(error);
  REQUIRE(back);
  CHECK(back->memory_rates == p.memory_rates);
  auto fails = [&](const std::string &rates, const std::string &message) {
    CHECK_FALSE(parse_profile(R"({"name": "x", "flops_per_s": 1, "memory_rates": )" + rates +
                                  R"(, "intra_node": {"latency_s": 0, "bw_bytes_per_s": 1}})",
                              "p.json", error));
    CHECK(error == "p.json: " + message);
  };
  fails("{}",
        "`memory_rates` must be a non-empty list of {\"bytes\": ..., \"bw_bytes_per_s\": ...}");
  fails(R"([{"bytes": 8e6, "bw_bytes_per_s": 1}, {"bytes": 1e6, "bw_bytes_per_s": 2}])",
        "`memory_rates[1].bytes` must be larger than the one before (the list is in "
        "increasing order)");
  fails(R"([{"bytes": 1e6, "bw_bytes_per_s": 0}])",
        "`memory_rates[0].bw_bytes_per_s` must be positive");
  fails(R"([{"bytes": 1e6, "bw": 1}])",
        "`memory_rates[0].bw` is not a profile key (known: bw_bytes_per_s, bytes)");
}

}  // namespace
}  // namespace spmd::test
