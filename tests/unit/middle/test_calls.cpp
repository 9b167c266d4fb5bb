// test_calls.cpp — shmaps calling shmaps, and importing a derived program.
//
// A call of a shmap passes local values, so it must compute exactly what its
// body written in place computes (same ops, same bits). A gradient program
// written by `spmdc grad -o` is importable and its results used in a step.
#include <filesystem>
#include <fstream>
#include <random>

#include "../transforms/transform_test_util.h"

namespace spmd::test {
namespace {

namespace fs = std::filesystem;

TEST_CASE("calls: a shmap call computes what its body written in place does", "[calls]") {
  auto c = compile_ok(R"(
mesh M = (data: 2, model: 2)
shmap layer(x: f32[8, 4] @ P(data), w: f32[4, 6] @ P(None, model)) -> f32[8, 6] @ P(data, model) on M {
  return tanh(x @ w)
}
shmap loss(h: f32[8, 6] @ P(data, model), y: f32[8, 6] @ P(data, model)) -> f32[] @ P() on M {
  return psum(sum((h - y) ** 2.0), (data, model))
}
shmap step(x: f32[8, 4] @ P(data), w: f32[4, 6] @ P(None, model), y: f32[8, 6] @ P(data, model))
    -> (f32[] @ P(), f32[8, 6] @ P(data, model)) on M {
  h = layer(x, w)
  return loss(h, y), h
}
shmap step_inline(x: f32[8, 4] @ P(data), w: f32[4, 6] @ P(None, model), y: f32[8, 6] @ P(data, model))
    -> (f32[] @ P(), f32[8, 6] @ P(data, model)) on M {
  h = tanh(x @ w)
  return psum(sum((h - y) ** 2.0), (data, model)), h
}
)");
  std::vector<rt::Tensor> in;
  for (auto shape : {rt::Shape{8, 4}, rt::Shape{4, 6}, rt::Shape{8, 6}})
    in.push_back(rt::random_tensor(DType::F32, shape, 17 + in.size()));
  auto a = run_named(*c, "step", in);
  auto b = run_named(*c, "step_inline", in);
  REQUIRE(a.size() == 2);
  require_same_bits(a[0], b[0]);
  require_same_bits(a[1], b[1]);
  // The loss is the sum of squares, computed here on the host.
  auto h = a[1];
  double expected = 0;
  for (int64_t e = 0; e < h.numel(); ++e) expected += std::pow(h.get(e) - in[2].get(e), 2);
  CHECK(a[0].get(0) == Approx(expected).epsilon(1e-5));
}

TEST_CASE("calls: the default entry is the shmap no body calls", "[calls]") {
  const std::string lib = R"(
mesh M = (i: 2)
shmap loss(w: f32[4] @ P(), x: f32[8] @ P(i)) -> f32[] @ P() on M {
  return psum(sum(x * x) * sum(w * w), i)
}
shmap scale(w: f32[4] @ P()) -> f32[4] @ P() on M {
  return 2.0 * w
}
)";
  // `train` calls `scale` and a derivative of `loss`: it is the only entry.
  auto c = compile_ok(lib + R"(
shmap train(w: f32[4] @ P(), x: f32[8] @ P(i)) -> f32[4] @ P() on M {
  for k in range(3) {
    l, g = grad(loss, wrt=w)(w, x)
    w = scale(w) - 0.1 * g
  }
  return w
}
)");
  CHECK(c->module->functions[static_cast<size_t>(find_shmap(*c->module, ""))].name == "train");
  // `--fn` still picks a called shmap.
  CHECK(c->module->functions[static_cast<size_t>(find_shmap(*c->module, "loss"))].name == "loss");
  // Two shmaps nothing calls: the user must choose, and is told which two.
  auto two = compile_ok(lib);
  try {
    find_shmap(*two->module, "");
    FAIL("no error");
  } catch (const TransformError &e) {
    CHECK(std::string(e.what()).find("several shmaps (`loss`, `scale`)") != std::string::npos);
  }
}

TEST_CASE("calls: a step imports the program `spmdc grad -o` wrote", "[calls][imports]") {
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("spmdc_calls_test_" + std::to_string(rd()));
  fs::create_directories(dir / "grads");
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{dir};

  std::ifstream sample(std::string(SPMDC_SOURCE_DIR) + "/samples/dp_loss.spmd");
  std::stringstream text;
  text << sample.rdbuf();
  auto c = compile_ok(text.str());
  DeriveRequest r;
  r.kind = DeriveKind::Grad;
  r.wrt = {"params"};
  std::ofstream(dir / "grads" / "dp_loss_grad.spmd") << ir::print_module(derive(*c->module, r));

  const std::string step = R"(
mesh M = (batch: 8)
shmap sgd_step(params: f32[16, 4] @ P(), inputs: f32[64, 16] @ P(batch),
               targets: f32[64, 4] @ P(batch)) -> (f32[] @ P(), f32[16, 4] @ P()) on M {
  loss, g = CALLEE(params, inputs, targets)
  return loss, params - 0.5 * g
}
)";
  auto gradient = compile_ok(ir::print_module(derive(*c->module, r)), false);
  auto in = random_inputs(*c, 3);
  auto expected = run(*gradient, in);
  for (auto [import, callee] : {std::pair{"import \"grads/dp_loss_grad.spmd\"", "loss_grad"},
                                std::pair{"import grads.dp_loss_grad", "dp_loss_grad.loss_grad"}}) {
    INFO(import);
    std::string main = std::string(import) + "\n" + step;
    main.replace(main.find("CALLEE"), 6, callee);
    std::ofstream(dir / "step.spmd") << main;
    Compilation s;
    compile_file(s, (dir / "step.spmd").string(), {});
    INFO(render_diagnostics(s.diags, s.sources));
    REQUIRE(s.ok());
    auto out = run_named(s, "sgd_step", in);
    require_same_bits(out[0], expected[0]);
    for (int64_t e = 0; e < out[1].numel(); ++e)
      CHECK(out[1].get(e) ==
            static_cast<float>(in[0].get(e) - static_cast<float>(0.5f * expected[1].get(e))));
    // The imported shmap is not a default entry point: `sgd_step` is the only one.
    CHECK(find_shmap(*s.module, "") == find_shmap(*s.module, "sgd_step"));
  }
}

}  // namespace
}  // namespace spmd::test
