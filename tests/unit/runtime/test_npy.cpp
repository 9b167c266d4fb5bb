// tests/unit/runtime/test_npy.cpp — .npy reading and writing.
//
// Round trips for every dtype and ranks 0..3, the exact bytes of a written
// header, every malformed-file error (bytes written by hand; read_npy and
// read_npy_header alike), and an
// interoperability check with NumPy when /usr/bin/python3 has it.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "rt_test_util.h"
#include "spmdrt/npy.h"

using namespace spmd::rt;
using namespace spmd::rt::testing;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("spmdrt_npy_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A version 1.0 file with the given header dict and data bytes.
std::string npy_v1(const std::string &dict, const std::string &data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

}  // namespace

TEST_CASE("npy round trip for every dtype and rank 0..3", "[runtime][npy]") {
  const fs::path dir = temp_dir();
  const std::vector<Shape> shapes = {{}, {5}, {2, 3}, {2, 1, 4}, {0, 3}};
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::Bool, DType::BF16}) {
    for (const Shape &shape : shapes) {
      INFO(dtype_name(dtype) << shape_str(shape));
      Tensor t = random_tensor(dtype, shape, 5);
      const std::string path = (dir / "t.npy").string();
      write_npy(path, t);
      CHECK(fs::file_size(path) % 64 == (t.nbytes() * (dtype == DType::BF16 ? 2 : 1)) % 64);
      Tensor back = read_npy(path);
      if (dtype == DType::BF16) {
        CHECK(back.dtype() == DType::F32);  // written as '<f4'
        CHECK(cast(back, DType::BF16).bitwise_equal(t));
      } else {
        CHECK(back.bitwise_equal(t));
      }
    }
  }
  for (const auto &entry : fs::directory_iterator(dir)) {
    CHECK(entry.path().filename() == "t.npy");  // no temporary files left behind
  }
  fs::remove_all(dir);
}

TEST_CASE("npy header bytes", "[runtime][npy]") {
  const fs::path dir = temp_dir();
  const fs::path path = dir / "h.npy";
  write_npy(path.string(), make(DType::I32, {3}, {1, 2, 3}));
  const std::string bytes = read_bytes(path);
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  REQUIRE(bytes.size() == 128 + 12);  // 10 + 57 + 1 header bytes padded to 128
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(static_cast<unsigned char>(bytes[8]) == 118);
  CHECK(bytes[9] == 0);
  CHECK(bytes.substr(10, 118) == dict + std::string(118 - dict.size() - 1, ' ') + "\n");
  int32_t data[3];
  std::memcpy(data, bytes.data() + 128, 12);
  CHECK(data[2] == 3);
  fs::remove_all(dir);
}

TEST_CASE("npy reads versions 2.0 and 3.0 and tolerant spellings", "[runtime][npy]") {
  const fs::path dir = temp_dir();
  const fs::path path = dir / "v.npy";
  std::string data(8, '\0');
  const float values[2] = {1.5f, -2.0f};
  std::memcpy(data.data(), values, 8);
  for (char version : {'\x02', '\x03'}) {
    std::string header = "{\"descr\": \"=f4\", \"fortran_order\": False, \"shape\": (2,)}";
    while ((12 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::string file = "\x93NUMPY";
    file += version;
    file += '\x00';
    file += static_cast<char>(header.size());
    file += std::string(3, '\0');
    write_bytes(path, file + header + data);
    check_equal(read_npy(path.string()), DType::F32, {2}, {1.5, -2});
  }
  write_bytes(path, npy_v1("{'descr': '<b1', 'shape': (2, 1), 'fortran_order': False}",
                           std::string("\x01\x00", 2)));
  check_equal(read_npy(path.string()), DType::Bool, {2, 1}, {1, 0});
  fs::remove_all(dir);
}

TEST_CASE("npy malformed files", "[runtime][npy]") {
  const fs::path dir = temp_dir();
  const fs::path path = dir / "bad.npy";
  const std::string p = path.string();
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  auto expect_error = [&](const std::string &bytes, const std::string &what) {
    write_bytes(path, bytes);
    INFO(what);
    CHECK_THROWS_WITH(read_npy(p), Catch::StartsWith(p + ": ") && Catch::Contains(what));
    // The header-only reader of distributed runs reports the same.
    CHECK_THROWS_WITH(read_npy_header(p), Catch::StartsWith(p + ": ") && Catch::Contains(what));
  };
  write_bytes(path, npy_v1(good_dict, std::string(8, '\0')));
  CHECK(read_npy(p).shape() == Shape{2});
  expect_error(npy_v1(good_dict, std::string(7, '\0')), "truncated data");
  expect_error(npy_v1(good_dict, std::string(9, '\0')), "unexpected bytes");
  expect_error("NUMPYxx junk junk", "bad magic");
  expect_error("\x93NUM", "too short");
  std::string version4 = npy_v1(good_dict, std::string(8, '\0'));
  version4[6] = '\x04';
  expect_error(version4, "version 4.0");
  expect_error(
      npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", std::string(8, '\0')),
      "Fortran");
  expect_error(
      npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0')),
      "unsupported dtype '<i8'");
  expect_error(
      npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')),
      "big-endian");
  expect_error(npy_v1("{'descr': '<f4', 'shape': (2,), }", std::string(8, '\0')), "missing key");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", ""),
               "unexpected key");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,x), }", ""),
               "bad .npy header");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': Nope, 'shape': (2,), }", ""),
               "True or False");
  std::string header_cut = npy_v1(good_dict, "");
  expect_error(header_cut.substr(0, 40), "truncated header");
  CHECK_THROWS_WITH(
      read_npy((dir / "missing.npy").string()),
      Catch::StartsWith((dir / "missing.npy").string()) && Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(
      write_npy((dir / "no_such_dir" / "x.npy").string(), Tensor::scalar(DType::F32, 1)),
      Catch::Contains("cannot open"));
  fs::remove_all(dir);
}

TEST_CASE("npy interoperates with NumPy", "[runtime][npy]") {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    WARN("skipping: /usr/bin/python3 has no numpy");
    return;
  }
  const fs::path dir = temp_dir();
  const std::string from_numpy = (dir / "from_numpy.npy").string();
  const std::string from_us = (dir / "from_us.npy").string();
  write_npy(from_us, make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6.5}));
  write_npy((dir / "scalar.npy").string(), Tensor::scalar(DType::I32, -7));
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "a = np.load(d + '/from_us.npy')\n"
      "assert a.dtype == np.float64 and a.shape == (2, 3), (a.dtype, a.shape)\n"
      "assert (a == np.array([[1, 2, 3], [4, 5, 6.5]])).all()\n"
      "s = np.load(d + '/scalar.npy')\n"
      "assert s.shape == () and s.dtype == np.int32 and s == -7\n"
      "np.save(d + '/from_numpy.npy', np.arange(12, dtype=np.float32).reshape(3, 4) / 4)\n"
      "np.save(d + '/bools.npy', np.array([True, False, True]))\n";
  std::ofstream(dir / "check.py") << script;
  REQUIRE(std::system(
              ("/usr/bin/python3 " + (dir / "check.py").string() + " " + dir.string()).c_str()) ==
          0);
  std::vector<double> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(i / 4.0);
  check_equal(read_npy(from_numpy), DType::F32, {3, 4}, expected);
  check_equal(read_npy((dir / "bools.npy").string()), DType::Bool, {3}, {1, 0, 1});
  fs::remove_all(dir);
}
