// test_connect.cpp — resharding plans (sharding/connect.h): one test per case
// of the issue with the exact collectives and bytes (computed by hand in the
// comments, with the conventions of analysis/stats.h), and random pairs of
// layouts on random 2-D meshes whose plan, emitted as a program and run, must
// move the data correctly.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "sharding/emit_reshard.h"
#include "sharding_test_util.h"

namespace spmd {
namespace {

using sharding::Sharding;

Sharding parse(const std::string &text, const rt::Mesh &mesh, size_t rank) {
  std::string error;
  auto s = sharding::parse_sharding(text, mesh, rank, error);
  INFO(text << ": " << error);
  REQUIRE(s.has_value());
  return *s;
}

/// "all_gather(v, x, axis=0) | pscatter(v, y, axis=0)" and the bytes.
struct PlanText {
  std::string steps;
  double bytes = 0;
  int collectives = 0;
};

PlanText plan(const std::string &mesh_text, const rt::Mesh &mesh, Shape shape,
              const std::string &from, const std::string &to) {
  sharding::Connector c(mesh, builtin_profiles().front());
  auto r =
      c.connect(shape, DType::F32, parse(from, mesh, shape.size()), parse(to, mesh, shape.size()));
  INFO(mesh_text << " " << from << " -> " << to);
  REQUIRE(r.possible);
  PlanText t;
  for (const auto &s : r.steps)
    t.steps += (t.steps.empty() ? "" : " | ") + sharding::step_str(s, mesh);
  t.bytes = r.moved_bytes;
  t.collectives = r.collectives();
  return t;
}

const rt::Mesh kMesh({{"x", 2}, {"y", 4}});

}  // namespace

// f32[64, 64] is 16384 bytes; on (x: 2, y: 4) a block split over x is 8192.

TEST_CASE("connect: replicate -> shard is a local slice", "[sharding][connect]") {
  auto p = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P()", "P(x)");
  CHECK(p.steps == "pscatter(v, x, axis=0)");
  CHECK(p.bytes == 0);
  CHECK(p.collectives == 0);
}

TEST_CASE("connect: shard -> replicate is an all_gather", "[sharding][connect]") {
  // all_gather moves (n-1)/n of the gathered block: 1/2 * 16384.
  auto p = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x)", "P()");
  CHECK(p.steps == "all_gather(v, x, axis=0)");
  CHECK(p.bytes == 8192);
}

TEST_CASE("connect: partial -> replicate is a psum", "[sharding][connect]") {
  // psum moves 2(n-1)/n of the array: 2 * 1/2 * 16384.
  auto p = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(partial=x)", "P()");
  CHECK(p.steps == "psum(v, x)");
  CHECK(p.bytes == 16384);
}

TEST_CASE("connect: partial -> shard is a psum_scatter", "[sharding][connect]") {
  // (n-1)/n of the operand: 1/2 * 16384.
  auto p = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(partial=x)", "P(x)");
  CHECK(p.steps == "psum_scatter(v, x, scatter_dimension=0)");
  CHECK(p.bytes == 8192);
  // Over y into a dimension x already splits: 3/4 of the 8192-byte block.
  auto q = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x, partial=y)", "P((x, y))");
  CHECK(q.steps == "psum_scatter(v, y, scatter_dimension=0)");
  CHECK(q.bytes == 6144);
}

TEST_CASE("connect: moving a split to another dimension is an all_to_all", "[sharding][connect]") {
  // (n-1)/n of the 8192-byte block.
  auto p = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x)", "P(None, x)");
  CHECK(p.steps == "all_to_all(v, x, split_axis=1, concat_axis=0)");
  CHECK(p.bytes == 4096);
}

TEST_CASE("connect: changing the axes that split a dimension", "[sharding][connect]") {
  // Small array: one all_gather then a free slice (8192 bytes, one alpha) beats
  // the 3-step route that moves fewer bytes (6144) but pays alpha twice.
  auto small = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x)", "P(y)");
  CHECK(small.steps == "all_gather(v, x, axis=0) | pscatter(v, y, axis=0)");
  CHECK(small.bytes == 8192);
  // Large array (f32[8192, 8192] = 256 MiB, 128 MiB per x block): bytes
  // dominate. Slice y on dimension 1 (32 MiB blocks), move x there (1/2 of
  // 32 MiB), move (y, x) to dimension 0 (7/8 of 32 MiB), gather x (1/2 of the
  // 64 MiB result): 16 + 28 + 32 = 76 MiB in three collectives, where one
  // all_gather of the array moves 128 MiB.
  auto large = plan("(x: 2, y: 4)", kMesh, {8192, 8192}, "P(x)", "P(y)");
  CHECK(large.steps ==
        "pscatter(v, y, axis=1) | all_to_all(v, x, split_axis=1, concat_axis=0) | "
        "all_to_all(v, (y, x), split_axis=0, concat_axis=1) | all_gather(v, x, axis=0)");
  CHECK(large.bytes == (16.0 + 28.0 + 32.0) * 1024 * 1024);
  CHECK(large.collectives == 3);
  // Splitting a dimension further is free; merging a split into a finer one too.
  auto finer = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x)", "P((x, y))");
  CHECK(finer.steps == "pscatter(v, y, axis=0)");
}

TEST_CASE("connect: n-D combinations", "[sharding][connect]") {
  // The example: P(x, y) -> P(y, x). Gather x on the [32, 16] block
  // (1/2 of the gathered 4096 bytes = 2048), move y to dimension 0 (3/4 of
  // the 4096-byte [64, 16] block = 3072), slice x locally: 5120 bytes.
  auto p = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x, y)", "P(y, x)");
  CHECK(p.steps ==
        "all_gather(v, x, axis=0) | all_to_all(v, y, split_axis=0, concat_axis=1) | "
        "pscatter(v, x, axis=1)");
  CHECK(p.bytes == 5120);
  CHECK(p.collectives == 2);
  // Partial over y and split over x, to replicated: the all-reduce over y as
  // a reduce-scatter (3/4 of the 8192-byte block = 6144) folded into one
  // all_gather over (x, y) (7/8 of 16384 = 14336); psum then gather x moves
  // the same 20480 bytes in as many collectives.
  auto q = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P(x, partial=y)", "P()");
  CHECK(q.steps == "psum_scatter(v, y, scatter_dimension=0) | all_gather(v, (x, y), axis=0)");
  CHECK(q.bytes == 6144 + 14336);
  // The same layout is free.
  auto same = plan("(x: 2, y: 4)", kMesh, {64, 64}, "P((x, y))", "P((x, y))");
  CHECK(same.steps.empty());
  CHECK(same.bytes == 0);
}

TEST_CASE("connect: layouts parse and print as written", "[sharding][connect]") {
  CHECK(sharding::to_string(parse("P(x, None, partial=y)", kMesh, 3), kMesh) == "P(x, partial=y)");
  CHECK(sharding::to_string(parse("P((y, x))", kMesh, 1), kMesh) == "P((y, x))");
  CHECK(sharding::to_string(parse("P(partial=(x, y))", kMesh, 2), kMesh) == "P(partial=(x, y))");
  std::string error;
  CHECK_FALSE(sharding::parse_sharding("P(x, x)", kMesh, 2, error));
  CHECK(error.find("twice") != std::string::npos);
  CHECK_FALSE(sharding::parse_sharding("P(z)", kMesh, 2, error));
  CHECK_FALSE(sharding::parse_sharding("P(x, y, x)", kMesh, 2, error));
}

// Random pairs of layouts on random 2-D meshes: the plan, emitted as a shmap
// (printed, re-checked with auto pbroadcast off) and run with replication
// checking, returns exactly the source array (or the sum of its parts).
TEST_CASE("connect: random layout pairs move the data correctly", "[sharding][connect][random]") {
  const int count = 150;
  std::mt19937_64 rng(20240612);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int t = 0; t < count; ++t) {
    const int64_t sizes[] = {1, 2, 3, 4};
    rt::Mesh mesh({{"a", sizes[pick(4)]}, {"b", sizes[pick(4)]}});
    int rank = 1 + pick(3);
    Shape shape;
    for (int d = 0; d < rank; ++d) shape.push_back(12 * (1 + pick(2)));  // divisible by 1-4
    // A random layout: each axis splits a random dimension, is partial, or replicates.
    auto random_layout = [&](bool allow_partial, AxisSet partial_within) {
      Sharding s = sharding::replicated(static_cast<size_t>(rank));
      int first = pick(2);  // the order in which axes join a dimension
      for (int a : {first, 1 - first}) {
        int choice = pick(rank + 2);
        if (choice < rank) {
          s.dims[static_cast<size_t>(choice)].push_back(a);
        } else if (choice == rank && allow_partial && partial_within.contains(a)) {
          s.partial = s.partial | AxisSet::of(a);
        }
      }
      return s;
    };
    Sharding src = random_layout(true, AxisSet::of(0) | AxisSet::of(1));
    Sharding dst = random_layout(true, src.partial);
    if (!sharding::fits(mesh, shape, src) || !sharding::fits(mesh, shape, dst)) continue;
    sharding::Connector connector(mesh, builtin_profiles().front());
    sharding::ReshardPlan plan = connector.connect(shape, DType::F32, src, dst);
    INFO("mesh (a: " << mesh.axis_size(0) << ", b: " << mesh.axis_size(1) << ") "
                     << shape_type_str(DType::F32, shape) << " " << sharding::to_string(src, mesh)
                     << " -> " << sharding::to_string(dst, mesh));
    REQUIRE(plan.possible);
    if (!dst.complete()) continue;  // a partial result is not a program's output
    std::string text =
        ir::print_module(sharding::reshard_program(mesh, shape, DType::F32, src, dst, plan));
    INFO(text);
    auto c = test::compile_text(text, /*auto_pb=*/false);
    const ir::Function &f = c->module->functions.at(0);
    rt::Tensor input = rt::random_tensor(DType::F32, f.params[0].global_shape, 1000 + t);
    auto out = test::run_fn(*c, 0, {input});
    // Expected: the array, or the sum of the parts along dimension 0.
    rt::Tensor expected = input;
    if (!src.complete()) {
      expected = rt::Tensor::zeros(DType::F32, shape);
      int64_t block = expected.numel();
      for (int64_t p = 0; p < f.params[0].global_shape[0]; ++p)
        for (int64_t i = 0; i < block; ++i)
          expected.set(i, expected.get(i) + input.get(p * block + i));
    }
    CHECK(test::max_abs_diff(out[0], expected) <= 1e-5 * (1 + test::max_abs(expected)));
  }
}

}  // namespace spmd

namespace spmd {

// Meshes of more than 4 axes (issue 30): the search over the layouts on the
// way to the target (and, with a budget of 1 layout, the direct plan) must
// still move the data correctly; on small meshes the directed plan is never
// cheaper than the exhaustive one (which is the cheapest).
TEST_CASE("connect: many axes, directed and direct plans move the data correctly",
          "[sharding][connect][random]") {
  std::mt19937_64 rng(30);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  int checked = 0;
  for (int t = 0; t < 40; ++t) {
    const int num_axes = 5 + pick(2);  // 32 or 64 devices, one thread each
    std::vector<rt::MeshAxis> axes;
    for (int a = 0; a < num_axes; ++a) axes.push_back({std::string(1, char('a' + a)), 2});
    rt::Mesh mesh(axes);
    const int rank = 1 + pick(3);
    Shape shape(static_cast<size_t>(rank), 64);
    auto random_layout = [&](AxisSet partial_within) {
      Sharding s = sharding::replicated(static_cast<size_t>(rank));
      std::vector<int> order(static_cast<size_t>(num_axes));
      for (int a = 0; a < num_axes; ++a) order[static_cast<size_t>(a)] = a;
      std::shuffle(order.begin(), order.end(), rng);
      for (int a : order) {
        int choice = pick(rank + 2);
        if (choice < rank)
          s.dims[static_cast<size_t>(choice)].push_back(a);
        else if (choice == rank && partial_within.contains(a))
          s.partial = s.partial | AxisSet::of(a);
      }
      return s;
    };
    AxisSet all;
    for (int a = 0; a < num_axes; ++a) all = all | AxisSet::of(a);
    Sharding src = random_layout(pick(2) ? all : AxisSet());
    Sharding dst = random_layout(AxisSet());
    if (!sharding::fits(mesh, shape, src) || !sharding::fits(mesh, shape, dst) || src == dst)
      continue;
    for (size_t budget : {sharding::kMaxReshardLayouts, size_t{1}}) {
      sharding::Connector connector(mesh, builtin_profiles().front(), budget);
      sharding::ReshardPlan plan = connector.connect(shape, DType::F32, src, dst);
      INFO(shape_type_str(DType::F32, shape)
           << " on " << num_axes << " axes: " << sharding::to_string(src, mesh) << " -> "
           << sharding::to_string(dst, mesh) << ", budget " << budget);
      REQUIRE(plan.possible);
      CHECK(plan.search != sharding::ReshardSearch::Exhaustive);
      if (budget == 1) CHECK(plan.search == sharding::ReshardSearch::Direct);
      // The steps end in dst, each step's layout fits.
      Sharding at = src;
      for (const auto &s : plan.steps) {
        CHECK(sharding::fits(mesh, shape, s.after));
        at = s.after;
      }
      CHECK(at == dst);
      std::string text =
          ir::print_module(sharding::reshard_program(mesh, shape, DType::F32, src, dst, plan));
      INFO(text);
      auto c = test::compile_text(text, /*auto_pb=*/false);
      const ir::Function &f = c->module->functions.at(0);
      rt::Tensor input = rt::random_tensor(DType::F32, f.params[0].global_shape, 3000 + t);
      auto out = test::run_fn(*c, 0, {input});
      rt::Tensor expected = input;
      if (!src.complete()) {
        expected = rt::Tensor::zeros(DType::F32, shape);
        int64_t block = expected.numel();
        for (int64_t p = 0; p < f.params[0].global_shape[0]; ++p)
          for (int64_t i = 0; i < block; ++i)
            expected.set(i, expected.get(i) + input.get(p * block + i));
      }
      CHECK(test::max_abs_diff(out[0], expected) <= 1e-4 * (1 + test::max_abs(expected)));
      ++checked;
    }
  }
  CHECK(checked >= 30);
}

TEST_CASE("connect: on small meshes the exhaustive plan is the cheapest of the three",
          "[sharding][connect]") {
  // (x: 2, y: 4): exhaustive; the same reshard planned with a budget of 1 is
  // the direct plan, never cheaper.
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"P(x, y)", "P(y, x)"}, {"P((x, y))", "P(None, (y, x))"}, {"P(x, partial=y)", "P(y)"}}) {
    sharding::Connector best(kMesh, builtin_profiles().front());
    sharding::Connector direct(kMesh, builtin_profiles().front(), 1);
    Shape shape{64, 64};
    auto a = best.connect(shape, DType::F32, parse(from, kMesh, 2), parse(to, kMesh, 2));
    auto b = direct.connect(shape, DType::F32, parse(from, kMesh, 2), parse(to, kMesh, 2));
    INFO(from << " -> " << to);
    CHECK(a.search == sharding::ReshardSearch::Exhaustive);
    CHECK(b.search == sharding::ReshardSearch::Direct);
    CHECK(a.seconds <= b.seconds);
  }
}

}  // namespace spmd
