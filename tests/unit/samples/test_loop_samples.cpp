// test_loop_samples.cpp — the samples written with static loops (collective
// matmul, GPipe, ring attention): each equals its direct reference version,
// runs with replication checking, and its gradient matches finite differences.
#include <fstream>
#include <sstream>

#include "../transforms/transform_test_util.h"

namespace spmd::test {
namespace {

std::string read_sample(const std::string &name, bool f64) {
  std::ifstream in(std::string(SPMDC_SOURCE_DIR) + "/samples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (f64)
    for (size_t p = 0; (p = text.find("f32", p)) != std::string::npos; p += 3)
      text.replace(p, 3, "f64");
  return text;
}

std::vector<rt::Tensor> run_fn(const Compilation &c, const std::string &fn,
                               const std::vector<rt::Tensor> &inputs) {
  interp::InterpOptions o;
  o.check_replication = true;
  return interp::run_shmap(*c.module, find_shmap(*c.module, fn), inputs, o);
}

std::vector<rt::Tensor> inputs_for(const Compilation &c, const std::string &fn, uint64_t seed) {
  const ir::Function &f = c.module->functions[static_cast<size_t>(find_shmap(*c.module, fn))];
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < f.params.size(); ++k)
    in.push_back(rt::random_tensor(f.type(f.params[k].value).dtype, f.params[k].global_shape,
                                   seed * 131 + k));
  return in;
}

void check_matches_reference(const std::string &file, const std::string &fn,
                             const std::string &reference) {
  auto c = compile_ok(read_sample(file, false));
  auto x = inputs_for(*c, fn, 1);
  auto a = run_fn(*c, fn, x);
  auto b = run_fn(*c, reference, x);
  REQUIRE(a.size() == 1);
  REQUIRE(a[0].shape() == b[0].shape());
  for (int64_t e = 0; e < a[0].numel(); ++e)
    CHECK(a[0].get(e) == Approx(b[0].get(e)).margin(1e-5).epsilon(1e-4));
}

/// <grad f(x), v> against central differences, where f = sum of the outputs.
void check_gradient(const std::string &file, const std::string &fn) {
  std::string text = read_sample(file, true);
  auto c = compile_ok(text);
  // Differentiate sum(f(x)) through vjp with all-ones cotangents.
  auto g = derive_ok(*c, DeriveKind::Vjp, fn);
  auto x = inputs_for(*c, fn, 2);
  std::vector<rt::Tensor> v;
  for (size_t k = 0; k < x.size(); ++k)
    v.push_back(rt::random_tensor(x[k].dtype(), x[k].shape(), 500 + k));
  auto total = [&](const std::vector<rt::Tensor> &in) {
    double s = 0;
    for (const auto &t : run_fn(*c, fn, in))
      for (int64_t e = 0; e < t.numel(); ++e) s += t.get(e);
    return s;
  };
  const double h = 1e-5;
  std::vector<rt::Tensor> xp, xm;
  for (size_t k = 0; k < x.size(); ++k) {
    xp.push_back(axpy(h, v[k], x[k]));
    xm.push_back(axpy(-h, v[k], x[k]));
  }
  double fd = (total(xp) - total(xm)) / (2 * h);
  auto y = run_fn(*c, fn, x);
  std::vector<rt::Tensor> in = x;
  for (auto &o : y) in.push_back(rt::Tensor::full(o.dtype(), o.shape(), 1.0));
  auto out = run(*g, in);
  double rev = 0;
  for (size_t k = 0; k < x.size(); ++k) rev += dot(out[y.size() + k], v[k]);
  INFO(file << ": finite differences " << fd << ", reverse mode " << rev);
  CHECK(std::abs(rev - fd) <= 1e-6 * std::max(1.0, std::abs(fd)));
}

TEST_CASE("loop samples equal their direct versions", "[samples][loops]") {
  check_matches_reference("collective_matmul.spmd", "allgather_matmul",
                          "allgather_matmul_reference");
  check_matches_reference("pipeline_gpipe.spmd", "gpipe", "gpipe_reference");
  check_matches_reference("ring_attention.spmd", "ring_attention", "attention_reference");
}

TEST_CASE("loop samples: gradients match finite differences", "[samples][loops]") {
  check_gradient("collective_matmul.spmd", "allgather_matmul");
  check_gradient("pipeline_gpipe.spmd", "gpipe");
  check_gradient("ring_attention.spmd", "ring_attention");
}

TEST_CASE("collective matmul communicates with ppermute only", "[samples][loops]") {
  auto c = compile_ok(read_sample("collective_matmul.spmd", false));
  const ir::Function &f =
      c->module->functions[static_cast<size_t>(find_shmap(*c->module, "allgather_matmul"))];
  auto s = collective_stats(*c->module, f);
  CHECK(s.by_op["ppermute"].count == 3);
  CHECK(s.by_op.count("all_gather") == 0);
  // Three block moves of 4x8 floats each: the same bytes as the all_gather's (n-1)/n.
  CHECK(s.total_moved_bytes() == 3 * 4 * 8 * 4);
}

TEST_CASE("a loop-carried value's variance is the join over iterations", "[loops]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f32[8] @ P(i)) -> f32[8] @ P(i) on M {\n"
      "  acc = zeros((2,))\n  for k in range(3) { acc = acc * 0.5 + x }\n"
      "  return acc\n}\n");
  const ir::Module &m = *c->module;  // loops stay loops
  const ir::Instr *loop = nullptr;
  for (const auto &in : m.functions[0].body)
    if (in.op == OpCode::For) loop = &in;
  REQUIRE(loop != nullptr);
  const ir::Function &f = m.functions[0];
  CHECK(f.type(loop->results[0]).variance == AxisSet::of(0));
  CHECK(f.type(loop->operands[0]).variance == AxisSet::of(0));  // the initial zeros were lifted
  auto x = rt::random_tensor(rt::DType::F32, {8}, 4);
  auto out = run(*c, {x});
  for (int64_t e = 0; e < 8; ++e) {
    double expect = 0;
    for (int k = 0; k < 3; ++k)
      expect = static_cast<float>(static_cast<float>(expect * 0.5) + x.get(e));
    CHECK(out[0].get(e) == Approx(expect).epsilon(1e-6));
  }
}

}  // namespace
}  // namespace spmd::test
