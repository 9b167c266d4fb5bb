// tests/unit/runtime/test_block_io.cpp — blockwise random inputs, .npy block I/O, printing.
//
// What distributed executables rely on, checked against the whole-array
// functions they replace: random_block is the slice of random_tensor,
// read_npy_block the slice of read_npy, files filled block by block (by the
// devices that keep each block) are byte-identical to write_npy's, and each
// block is kept by exactly one device.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "rt_test_util.h"
#include "spmdrt/cli_io.h"
#include "spmdrt/mesh.h"
#include "spmdrt/npy.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("spmdrt_block_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Tensor slice_box(const Tensor &t, const Shape &start, const Shape &extent) {
  std::vector<int64_t> limit(start.size()), stride(start.size(), 1);
  for (size_t d = 0; d < start.size(); ++d) limit[d] = start[d] + extent[d];
  return slice(t, start, limit, stride);
}

struct Case {
  Mesh mesh;
  Shape global;
  PartitionSpec spec;
};

// Splits along leading, inner, several and no dimensions, over 1-D and 2-D meshes.
std::vector<Case> cases() {
  const Mesh line({{"i", 4}});
  const Mesh grid({{"x", 2}, {"y", 3}});
  return {
      {line, {8, 5}, {{0}}},
      {line, {3, 8}, {{}, {0}}},
      {line, {2, 3, 8}, {{}, {}, {0}}},
      {line, {6, 4}, {}},
      {grid, {4, 6, 2}, {{0}, {1}}},
      {grid, {6, 4}, {{1}}},
      {grid, {12, 5}, {{0, 1}}},
      {grid, {5, 2, 12}, {{}, {}, {1, 0}}},
      {line, {}, {}},
  };
}

}  // namespace

TEST_CASE("random_block is the box of random_tensor", "[runtime][block_io]") {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::Bool}) {
    for (const Case &c : cases()) {
      const Tensor whole = random_tensor(dtype, c.global, 42);
      for (int64_t d = 0; d < c.mesh.num_devices(); ++d) {
        const Block b = block_of(c.mesh, c.global, c.spec, d);
        INFO(dtype_name(dtype) << shape_str(c.global) << " device " << d);
        CHECK(random_block(dtype, c.global, 42, b.start, b.extent)
                  .bitwise_equal(shard(c.mesh, whole, c.spec, d)));
      }
    }
  }
  // An arbitrary box, not aligned to any mesh.
  const Tensor whole = random_tensor(DType::F32, {7, 9, 5}, 3);
  CHECK(random_block(DType::F32, {7, 9, 5}, 3, {2, 4, 1}, {3, 5, 3})
            .bitwise_equal(slice_box(whole, {2, 4, 1}, {3, 5, 3})));
}

TEST_CASE("read_npy_block reads the box of the file", "[runtime][block_io][npy]") {
  const fs::path dir = temp_dir();
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::Bool}) {
    for (const Case &c : cases()) {
      const std::string path = (dir / "in.npy").string();
      const Tensor whole = random_tensor(dtype, c.global, 5);
      write_npy(path, whole);
      const NpyHeader header = read_npy_header(path);
      REQUIRE(header.dtype == dtype);
      REQUIRE(header.shape == c.global);
      for (int64_t d = 0; d < c.mesh.num_devices(); ++d) {
        const Block b = block_of(c.mesh, c.global, c.spec, d);
        INFO(dtype_name(dtype) << shape_str(c.global) << " device " << d);
        CHECK(read_npy_block(path, header, b.start, b.extent)
                  .bitwise_equal(shard(c.mesh, whole, c.spec, d)));
      }
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("files written block by block equal write_npy", "[runtime][block_io][npy]") {
  const fs::path dir = temp_dir();
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::Bool}) {
    for (const Case &c : cases()) {
      INFO(dtype_name(dtype) << shape_str(c.global));
      const Tensor whole = random_tensor(dtype, c.global, 9);
      const fs::path reference = dir / "reference.npy", blockwise = dir / "blockwise.npy";
      write_npy(reference.string(), whole);
      create_npy_file(blockwise.string(), dtype, c.global);
      // Each block exactly once, by the device that keeps it, in reverse order.
      std::set<Shape> written;
      for (int64_t d = c.mesh.num_devices() - 1; d >= 0; --d) {
        if (!keeps_block(c.mesh, c.spec, d)) continue;
        const Block b = block_of(c.mesh, c.global, c.spec, d);
        CHECK(written.insert(b.start).second);
        write_npy_block(blockwise.string(), c.global, b.start, shard(c.mesh, whole, c.spec, d));
      }
      std::set<Shape> all;
      for (int64_t d = 0; d < c.mesh.num_devices(); ++d)
        all.insert(block_of(c.mesh, c.global, c.spec, d).start);
      CHECK(written == all);
      CHECK(read_bytes(blockwise) == read_bytes(reference));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("OutputFiles: all outputs or none", "[runtime][block_io]") {
  const fs::path dir = temp_dir();
  const Tensor a = random_tensor(DType::F32, {4, 2}, 1), b = random_tensor(DType::I32, {3}, 2);
  const std::string pa = (dir / "a.npy").string(), pb = (dir / "b.npy").string();
  {
    OutputFiles files({{pa}, {pb}}, "test", "1");
    files.create({DType::F32, DType::I32}, {{4, 2}, {3}});
    files.write_block(0, {4, 2}, {2, 0}, slice_box(a, {2, 0}, {2, 2}));
    files.write_block(0, {4, 2}, {0, 0}, slice_box(a, {0, 0}, {2, 2}));
    files.write_block(1, {3}, {0}, b);
    CHECK_FALSE(fs::exists(pa));  // nothing final before commit
    files.commit();
  }
  CHECK(read_npy(pa).bitwise_equal(a));
  CHECK(read_npy(pb).bitwise_equal(b));
  fs::remove(pa);
  fs::remove(pb);
  {
    OutputFiles files({{pa}, {pb}}, "test", "2");
    files.create({DType::F32, DType::I32}, {{4, 2}, {3}});
    files.discard();
  }
  CHECK(fs::is_empty(dir));
  // A missing directory fails at create and leaves nothing.
  OutputFiles bad({{pa}, {(dir / "no" / "b.npy").string()}}, "test", "3");
  try {
    bad.create({DType::F32, DType::I32}, {{4, 2}, {3}});
    FAIL("create should fail");
  } catch (const CliError &e) {
    CHECK_THAT(e.message, Catch::Contains("cannot write outputs"));
  }
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST_CASE("format_printed from the printed elements alone", "[runtime][format]") {
  // format_tensor's own output (checked against NumPy-style text in test_tensor)
  // must come out of the box of printed indices, which is all a distributed run sends.
  const Tensor big = random_tensor(DType::F32, {10, 3, 9}, 4);
  const auto printed = printed_indices(big.shape(), 20);
  REQUIRE(printed[0] == std::vector<int64_t>{0, 1, 2, 7, 8, 9});
  REQUIRE(printed[1] == std::vector<int64_t>{0, 1, 2});
  Tensor box = Tensor::empty(DType::F32, {6, 3, 6});
  int64_t k = 0;
  for (int64_t i : printed[0])
    for (int64_t j : printed[1])
      for (int64_t l : printed[2]) box.set(k++, big.get((i * 3 + j) * 9 + l));
  const std::string text = format_printed(box, big.shape(), 20);
  CHECK(text == format_tensor(big, 20));
  CHECK(text.find("...") != std::string::npos);
  CHECK(printed_indices({4, 5}, 1000) ==
        std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {0, 1, 2, 3, 4}});
}

TEST_CASE("keeps_block picks one device per block", "[runtime][mesh]") {
  const Mesh grid({{"x", 2}, {"y", 3}});
  // P(x): devices with y == 0 keep; P(): only device 0; P((y, x)): everyone.
  std::vector<bool> px, none, both;
  for (int64_t d = 0; d < 6; ++d) {
    px.push_back(keeps_block(grid, {{0}}, d));
    none.push_back(keeps_block(grid, {}, d));
    both.push_back(keeps_block(grid, {{1, 0}}, d));
  }
  CHECK(px == std::vector<bool>{true, false, false, true, false, false});
  CHECK(none == std::vector<bool>{true, false, false, false, false, false});
  CHECK(both == std::vector<bool>(6, true));
}
