// tests/unit/interp/test_run_cli.cpp — `spmdc run` writing .npy outputs.
//
// Runs the built spmdc binary: outputs written with --out and --out-dir must
// read back (rt::read_npy) as exactly what run_shmap computes, bf16 inputs are
// read from f32 files, and a run that fails validation leaves no files behind.
// Error message texts are covered by the golden tests in tests/golden/run/.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "interp_test_util.h"
#include "spmdrt/npy.h"

using namespace spmd;
using namespace spmd::interp::testing;
namespace fs = std::filesystem;

namespace {

const std::string kSpmdc = std::string(SPMDC_BINARY_DIR) + "/compiler/spmdc";
const std::string kSource = SPMDC_SOURCE_DIR;

int shell(const std::string &command) {
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

fs::path fresh_dir(const std::string &name) {
  fs::path dir =
      fs::temp_directory_path() / ("spmdc_run_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("spmdc run writes outputs that read back exactly", "[interp][cli]") {
  if (!fs::exists(kSpmdc)) {
    WARN("spmdc is not built; skipped");
    return;
  }
  fs::path dir = fresh_dir("ok");
  Tensor x = rt::random_tensor(DType::F32, {32, 3}, 99);
  rt::write_npy((dir / "x.npy").string(), x);
  fs::create_directories(dir / "all");
  const std::string cmd = kSpmdc + " run " + kSource +
                          "/samples/seed/example1.spmd --fn f1 --in x=" + (dir / "x.npy").string() +
                          " --out f1=" + (dir / "f1.npy").string() + " --out-dir " +
                          (dir / "all").string() + " --check-replication -q";
  REQUIRE(shell(cmd) == 0);
  // The sample may evolve, so the files are compared with each other and with
  // run_shmap on the same program and input.
  std::ifstream in(kSource + "/samples/seed/example1.spmd");
  std::stringstream text;
  text << in.rdbuf();
  Tensor expected = run(text.str(), "f1", {x}).at(0);
  Tensor a = rt::read_npy((dir / "f1.npy").string());
  Tensor b = rt::read_npy((dir / "all" / "f1.npy").string());
  CHECK(a.bitwise_equal(b));
  CHECK(a.bitwise_equal(expected));
  std::vector<fs::path> leftovers;
  for (auto &e : fs::directory_iterator(dir))
    if (e.path().string().find(".tmp") != std::string::npos) leftovers.push_back(e.path());
  CHECK(leftovers.empty());
  fs::remove_all(dir);
}

TEST_CASE("spmdc run reads bf16 inputs from f32 files and writes bf16 as f32", "[interp][cli]") {
  if (!fs::exists(kSpmdc)) {
    WARN("spmdc is not built; skipped");
    return;
  }
  fs::path dir = fresh_dir("bf16");
  const std::string prog = (dir / "p.spmd").string();
  {
    FILE *f = std::fopen(prog.c_str(), "w");
    std::fputs(
        "mesh M = (i: 2)\nshmap h(x: bf16[4] @ P(i)) -> bf16[4] @ P(i) on M {\n"
        "  return x * 2.0\n}\n",
        f);
    std::fclose(f);
  }
  rt::write_npy((dir / "x.npy").string(), make(DType::F32, {4}, {1.5, -2, 0.25, 3}));
  REQUIRE(shell(kSpmdc + " run " + prog + " --in x=" + (dir / "x.npy").string() + " --out-dir " +
                dir.string()) == 0);
  Tensor out = rt::read_npy((dir / "h.npy").string());
  check_equal(out, DType::F32, {4}, [](int64_t i) {
    return std::vector<double>{3, -4, 0.5, 6}[i];
  });
  fs::remove_all(dir);
}

TEST_CASE("a failed spmdc run writes no output files", "[interp][cli]") {
  if (!fs::exists(kSpmdc)) {
    WARN("spmdc is not built; skipped");
    return;
  }
  fs::path dir = fresh_dir("fail");
  // Missing input `y`: validation fails before anything runs.
  CHECK(shell(kSpmdc + " run " + kSource + "/samples/seed/example2.spmd --out-dir " + dir.string() +
              " --in x=" + kSource + "/tests/golden/run/data/x_32x3.npy") == 1);
  // Integer division by zero at run time: nothing is written either.
  const std::string prog = (dir / "div.spmd").string();
  FILE *f = std::fopen(prog.c_str(), "w");
  std::fputs(
      "mesh M = (i: 2)\nshmap d(x: i32[4] @ P(i)) -> i32[4] @ P(i) on M {\n"
      "  return x / (x - x)\n}\n",
      f);
  std::fclose(f);
  CHECK(shell(kSpmdc + " run " + prog + " --random 1 --out-dir " + dir.string()) == 1);
  int files = 0;
  for (auto &e : fs::directory_iterator(dir)) files += e.path().extension() != ".spmd";
  CHECK(files == 0);
  fs::remove_all(dir);
}
