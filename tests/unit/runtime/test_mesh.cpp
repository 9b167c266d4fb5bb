// tests/unit/runtime/test_mesh.cpp — Mesh coordinates, groups and shard/unshard.
//
// Coordinates and groups on (2, 4) and (4, 2) meshes are written out by hand;
// shard/unshard are checked by hand and by round trips over many specs.
#include "rt_test_util.h"
#include "spmdrt/mesh.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;

TEST_CASE("mesh coordinates are row-major", "[runtime][mesh]") {
  Mesh mesh({{"x", 2}, {"y", 4}});
  CHECK(mesh.num_devices() == 8);
  CHECK(mesh.find_axis("y") == 1);
  CHECK(mesh.find_axis("z") == -1);
  CHECK(mesh.coords(6) == std::vector<int64_t>{1, 2});
  CHECK(mesh.device_at({1, 2}) == 6);
  for (int64_t d = 0; d < 8; ++d) CHECK(mesh.device_at(mesh.coords(d)) == d);
  CHECK(mesh.group_of(6, {1}) == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(mesh.group_of(6, {0}) == std::vector<int64_t>{2, 6});
  CHECK(mesh.group_of(6, {0, 1}) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(mesh.group_of(6, {1, 0}) == std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(mesh.group_of(6, {}) == std::vector<int64_t>{6});
  CHECK(mesh.rank_in_group(6, {1}) == 2);
  CHECK(mesh.rank_in_group(6, {0}) == 1);
  CHECK(mesh.rank_in_group(6, {0, 1}) == 6);
  CHECK(mesh.rank_in_group(6, {1, 0}) == 5);
  CHECK(mesh.group_size({0, 1}) == 8);
  CHECK_THROWS_AS(mesh.coords(8), RuntimeError);
  CHECK_THROWS_AS(mesh.group_of(0, {2}), RuntimeError);
  CHECK_THROWS_AS(mesh.group_of(0, {1, 1}), RuntimeError);
  CHECK_THROWS_AS(Mesh({{"x", 2}, {"x", 2}}), RuntimeError);
  CHECK_THROWS_AS(Mesh({{"x", 0}}), RuntimeError);
  CHECK(Mesh().num_devices() == 1);
}

TEST_CASE("mesh (4, 2) groups", "[runtime][mesh]") {
  Mesh mesh({{"a", 4}, {"b", 2}});
  CHECK(mesh.coords(5) == std::vector<int64_t>{2, 1});
  CHECK(mesh.group_of(5, {0}) == std::vector<int64_t>{1, 3, 5, 7});
  CHECK(mesh.group_of(5, {1}) == std::vector<int64_t>{4, 5});
  CHECK(mesh.rank_in_group(5, {0}) == 2);
  CHECK(mesh.rank_in_group(5, {1}) == 1);
  CHECK(mesh.rank_in_group(5, {1, 0}) == 6);
}

TEST_CASE("shard by hand", "[runtime][mesh]") {
  Mesh mesh({{"x", 2}, {"y", 2}});
  Tensor g = make(DType::I32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Rows split over (x, y): x major. Device 1 = (0, 1) holds row block 1.
  check_equal(shard(mesh, g, {{0, 1}}, 1), DType::I32, {1, 2}, {2, 3});
  check_equal(shard(mesh, g, {{0, 1}}, 2), DType::I32, {1, 2}, {4, 5});
  // Rows split over (y, x): y major. Device 1 = (x0, y1) -> block 1*2 + 0 = 2.
  check_equal(shard(mesh, g, {{1, 0}}, 1), DType::I32, {1, 2}, {4, 5});
  // Rows over x, columns over y.
  check_equal(shard(mesh, g, {{0}, {1}}, 3), DType::I32, {2, 1}, {5, 7});
  // Replicated: every device holds the whole array.
  check_equal(shard(mesh, g, {}, 3), DType::I32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(local_shape(mesh, {4, 2}, {{}, {0}}) == Shape{4, 1});
  CHECK_THROWS_WITH(local_shape(mesh, {3, 2}, {{0}}), Catch::Contains("not divisible"));
  CHECK_THROWS_AS(local_shape(mesh, {4, 2}, {{0}, {0}}), RuntimeError);
  CHECK_THROWS_AS(local_shape(mesh, {4}, {{0}, {1}}), RuntimeError);
}

TEST_CASE("shard/unshard round trip", "[runtime][mesh]") {
  Mesh mesh({{"x", 2}, {"y", 4}});
  Tensor global = random_tensor(DType::F32, {8, 4, 6}, 99);
  const std::vector<PartitionSpec> specs = {
      {},         {{0}},          {{1}},         {{0, 1}},      {{1, 0}},
      {{0}, {1}}, {{}, {1}, {0}}, {{}, {}, {0}}, {{1}, {}, {0}}};
  for (const PartitionSpec &spec : specs) {
    std::vector<Tensor> locals;
    for (int64_t d = 0; d < mesh.num_devices(); ++d) locals.push_back(shard(mesh, global, spec, d));
    CHECK(locals[5].shape() == local_shape(mesh, global.shape(), spec));
    CHECK(unshard(mesh, locals, spec).bitwise_equal(global));
  }
  std::vector<Tensor> wrong(3, global);
  CHECK_THROWS_AS(unshard(mesh, wrong, {}), RuntimeError);
}
