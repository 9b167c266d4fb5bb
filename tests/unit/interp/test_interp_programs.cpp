// tests/unit/interp/test_interp_programs.cpp — whole programs, input errors, checker controls.
//
// The seed examples of the design note and samples/dp_loss.spmd run sharded
// and must equal the unsharded computation written here with plain loops.
// Calls of defs, values freed early, and the documented InputError messages
// are covered too. Negative controls build modules with ir::Builder whose
// types lie (a varying value labelled invariant) and assert that
// check_replication reports the lying op — the checker can fail.
#include <fstream>
#include <sstream>

#include "interp_test_util.h"
#include "ir/builder.h"

using namespace spmd;
using namespace spmd::interp::testing;

namespace {

std::string read_sample(const std::string &rel) {
  std::ifstream in(std::string(SPMDC_SOURCE_DIR) + "/" + rel);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Tensor rnd(Shape s, uint64_t seed) { return rt::random_tensor(DType::F32, std::move(s), seed); }

}  // namespace

TEST_CASE("seed examples equal the unsharded computation", "[interp][programs]") {
  Tensor x32 = rnd({32, 3}, 1), y8 = rnd({8, 3}, 2), x8 = rnd({8}, 3), y64 = rnd({64}, 4),
         x4 = rnd({4}, 5);
  {
    auto out = run(read_sample("samples/seed/example1.spmd"), "f1", {x32});
    double s = 0;
    for (int64_t i = 0; i < 96; ++i) s += 2 * x32.get(i);
    check_close(out[0], {}, [&](int64_t) { return s; });
  }
  {
    auto out = run(read_sample("samples/seed/example2.spmd"), "f2", {x32, y8});
    check_close(out[0], {8, 3}, [&](int64_t i) {
      double s = 0;
      for (int64_t r = 0; r < 32; ++r) s += 3 * x32.get(r * 3 + i % 3);  // g = sum(3.0 * x)
      return s * y8.get(i);
    });
  }
  {
    auto out = run(read_sample("samples/seed/example3.spmd"), "cursed_identity", {x4});
    check_equal(out[0], DType::F32, {4}, [&](int64_t i) { return x4.get(i); });
  }
  {
    auto out = run(read_sample("samples/seed/example4.spmd"), "f4", {x8});
    check_equal(out[0], DType::F32, {8}, [&](int64_t i) { return x8.get(i); });
  }
  {
    auto out = run(read_sample("samples/seed/example5.spmd"), "f5", {x8, y64});
    check_equal(out[0], DType::F32, {64}, [&](int64_t i) {
      return double(static_cast<float>(x8.get(i % 8)) * static_cast<float>(y64.get(i)));
    });
  }
}

TEST_CASE("dp_loss equals the unsharded loss", "[interp][programs]") {
  Tensor params = rnd({16, 4}, 11), inputs = rnd({64, 16}, 12), targets = rnd({64, 4}, 13);
  auto out = run(read_sample("samples/dp_loss.spmd"), "loss", {params, inputs, targets});
  double loss = 0;
  for (int64_t b = 0; b < 64; ++b)
    for (int64_t k = 0; k < 4; ++k) {
      double z = 0;
      for (int64_t d = 0; d < 16; ++d) z += inputs.get(b * 16 + d) * params.get(d * 4 + k);
      double e = std::tanh(z) - targets.get(b * 4 + k);
      loss += e * e;
    }
  check_close(
      out[0], {}, [&](int64_t) { return loss / 64; }, 1e-5);
}

TEST_CASE("defs are evaluated recursively, values are reused after being freed",
          "[interp][programs]") {
  const std::string src = R"(mesh M = (a: 2, b: 2)
def sq(x: f32[n]) -> f32[n] { return x * x }
def twice(x: f32[n]) -> (f32[n], f32[]) {
  y = sq(x) + sq(x)
  return y, sum(y)
}
shmap f(x: f32[8] @ P((a, b)), unused: f32[3] @ P()) -> (f32[8] @ P((a, b)), f32[] @ P(), f32[8] @ P((b, a))) on M {
  y, s = twice(x)
  z, unused_sum = twice(x)
  return y + z, psum(s, (a, b)), sq(x)
})";
  Tensor x = ramp(DType::F32, {8}), unused = ramp(DType::F32, {3});
  auto out = run(src, "f", {x, unused});
  check_equal(out[0], DType::F32, {8}, [&](int64_t i) { return 4 * x.get(i) * x.get(i); });
  double s = 0;
  for (int64_t i = 0; i < 8; ++i) s += 2 * x.get(i) * x.get(i);
  check_close(out[1], {}, [&](int64_t) { return s; });
  // P((b, a)) assembles device (a, b)'s block at position b * 2 + a.
  check_equal(out[2], DType::F32, {8}, [&](int64_t i) {
    int64_t pos = i / 2, b = pos / 2, a = pos % 2, src_block = a * 2 + b;
    double v = x.get(src_block * 2 + i % 2);
    return v * v;
  });
}

TEST_CASE("bad inputs give InputError naming the argument and the expected type",
          "[interp][programs]") {
  auto c = compile_ok(read_sample("samples/seed/example2.spmd"));
  const int f = c->module->find_function("f2");
  Tensor x = rnd({32, 3}, 1), y = rnd({8, 3}, 2);
  auto message = [&](const std::vector<Tensor> &in) -> std::string {
    try {
      interp::run_shmap(*c->module, f, in, {});
    } catch (const interp::InputError &e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(message({x}) == "`f2` takes 2 inputs but 1 were given");
  CHECK(message({rnd({30, 3}, 1), y}) ==
        "input `x` of `f2` must be f32[32, 3] @ P(i) (the global shape, split into f32[4, 3] "
        "per device), but the given array holds f32[30, 3]");
  CHECK(message({x, rt::random_tensor(DType::F64, {8, 3}, 1)}) ==
        "input `y` of `f2` must be f32[8, 3] @ P(i) (the global shape, split into f32[1, 3] per "
        "device), but the given array holds f64[8, 3]");
}

namespace {

/// Runs with the replication check and returns the error (or "").
std::string replication_error(const ir::Module &m, int f, const std::vector<Tensor> &in,
                              SourceSpan *span = nullptr) {
  interp::InterpOptions o;
  o.check_replication = true;
  try {
    interp::run_shmap(m, f, in, o);
  } catch (const interp::ReplicationError &e) {
    if (span) *span = e.span();
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("negative control: axis_index mislabelled invariant is caught", "[interp][replication]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f32[4] @ P(i)) -> f32[4] @ P(i) on M {\n"
      "  return x\n}\n");
  ir::Module &m = *c->module;
  const int fi = m.find_function("f");
  ir::Function &f = m.functions[fi];
  f.body.clear();
  ir::Builder b(m, f);
  Attrs ax;
  ax.collective().axes = {0};
  const SourceSpan lie{c->main_file, 5, 9};
  ir::ValueId idx = b.add1(OpCode::AxisIndex, {}, ax, lie);
  f.type(idx).variance = AxisSet();  // the lie: "the same on every device"
  f.values[idx].name = "k";
  ir::ValueId kf = b.add1(OpCode::Cast, {idx}, [] {
    Attrs a;
    a.cast().dtype = DType::F32;
    return a;
  }());
  ir::ValueId y = b.add1(OpCode::Add, {f.params[0].value, kf});
  f.returns = {y};
  Tensor x = ramp(DType::F32, {4});
  // Without the check the program runs; with it the lie is reported at the axis_index.
  interp::InterpOptions off;
  CHECK_NOTHROW(interp::run_shmap(m, fi, {x}, off));
  SourceSpan span;
  std::string msg = replication_error(m, fi, {x}, &span);
  CHECK(span.begin == 5);
  CHECK(span.end == 9);
  CHECK(msg ==
        "replication check failed: `k` of type i32[], computed by `axis_index`, is invariant "
        "along mesh axis `i` by its type, but device 0 (i=0) and device 1 (i=1) hold different "
        "bits");
}

TEST_CASE("negative control: a sharded input or a collective mislabelled on a 2-D mesh",
          "[interp][replication]") {
  auto c = compile_ok(
      "mesh M = (a: 2, b: 4)\nshmap f(x: f32[8] @ P(b), y: f32[2] @ P(a)) -> f32[2] @ P(a) on M "
      "{\n  return y + psum(x, b)[0:1]\n}\n");
  ir::Module &m = *c->module;
  const int fi = m.find_function("f");
  Tensor x = ramp(DType::F32, {8}), y = ramp(DType::F32, {2});
  CHECK(replication_error(m, fi, {x, y}).empty());  // the real types are sound
  {
    ir::Module lying = m;
    ir::Function &f = lying.functions[fi];
    f.type(f.params[0].value).variance = AxisSet();  // x is P(b): it varies along b
    std::string msg = replication_error(lying, fi, {x, y});
    CHECK(msg.find("computed by the in_spec of an input") != std::string::npos);
    CHECK(msg.find("along mesh axis `b`") != std::string::npos);
  }
  {
    ir::Module lying = m;
    ir::Function &f = lying.functions[fi];
    // Make every instruction claim invariance along b only where it holds, except
    // the last one, whose result (varying along a) is claimed invariant along a.
    ir::ValueId last = f.body.back().results[0];
    f.type(last).variance = AxisSet();
    SourceSpan span;
    std::string msg = replication_error(lying, fi, {x, y}, &span);
    CHECK(msg.find("along mesh axis `a`") != std::string::npos);
    CHECK(msg.find("device 0 (a=0, b=0) and device 4 (a=1, b=0)") != std::string::npos);
    CHECK(span.begin == f.body.back().span.begin);
  }
}
