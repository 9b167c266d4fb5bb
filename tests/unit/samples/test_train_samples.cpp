// test_train_samples.cpp — samples/train_mlp.spmd and train_mlp_tp.spmd: a
// whole training loop in one file, its gradient named in the language.
//
// The reference is independent of the in-language derivative and of the
// rolled loop: the host runs the loop, calling the gradient program the CLI
// derives (`spmdc grad --fn loss`) step by step; every loss and the trained
// parameters must be the same bits. The gradient itself is checked against
// central finite differences of the loss, the loss must fall, and the DP x TP
// variant must train like the DP one (same numbers up to summation order).

#include "../transforms/transform_test_util.h"

namespace spmd::test {
namespace {

constexpr int kSteps = 40;

/// The inputs of `train`: w1, b1, w2, b2, teacher, x (uniform in [-1, 1)).
std::vector<rt::Tensor> train_inputs(uint64_t seed) {
  std::vector<rt::Tensor> in;
  for (const rt::Shape &shape : {rt::Shape{16, 32}, rt::Shape{32}, rt::Shape{32, 4}, rt::Shape{4},
                                 rt::Shape{16, 4}, rt::Shape{256, 16}})
    in.push_back(rt::random_tensor(DType::F32, shape, seed * 1009 + in.size()));
  return in;
}

/// What `train` does before its loop (the initial scaling and the synthetic
/// targets), as a shmap of its own so that the host loop starts from the same
/// bits.
std::string prepare_shmap(const std::string &specs) {
  return "\nshmap prepare(" + specs + R"() on M {
  y = tanh(x @ teacher)
  w1 = 0.25 * w1
  w2 = 0.17677669 * w2
  b1 = 0.0 * b1
  b2 = 0.0 * b2
  return w1, b1, w2, b2, y
}
)";
}

struct Trained {
  std::vector<float> losses;
  std::vector<rt::Tensor> params;      // w1, b1, w2, b2
  std::vector<rt::Tensor> first_grad;  // host loop: the gradient of the first step
};

Trained train_in_program(const Compilation &c, const std::vector<rt::Tensor> &in) {
  auto out = run_named(c, "train", in);
  REQUIRE(out.size() == 5);
  Trained t;
  for (int k = 0; k < kSteps; ++k) t.losses.push_back(static_cast<float>(out[0].get(k)));
  t.params.assign(out.begin() + 1, out.end());
  return t;
}

/// The host loop over the CLI's gradient program.
Trained train_on_host(const Compilation &c, const std::vector<rt::Tensor> &in) {
  DeriveRequest r;
  r.kind = DeriveKind::Grad;
  r.function = "loss";
  r.wrt = {"w1", "b1", "w2", "b2"};
  auto grad = compile_ok(ir::print_module(derive(*c.module, r)), /*auto_pb=*/false);
  auto prepared = run_named(c, "prepare", in);
  std::vector<rt::Tensor> params(prepared.begin(), prepared.begin() + 4);
  const rt::Tensor &x = in[5], &y = prepared[4];
  Trained t;
  for (int step = 0; step < kSteps; ++step) {
    auto out = run(*grad, {params[0], params[1], params[2], params[3], x, y});
    REQUIRE(out.size() == 5);
    t.losses.push_back(static_cast<float>(out[0].get(0)));
    if (step == 0) t.first_grad.assign(out.begin() + 1, out.end());
    for (size_t k = 0; k < 4; ++k)
      for (int64_t e = 0; e < params[k].numel(); ++e)
        params[k].set(
            e, static_cast<float>(params[k].get(e) - static_cast<float>(0.5f * out[1 + k].get(e))));
  }
  t.params = params;
  return t;
}

void check_sample(const std::string &name, const std::string &specs) {
  INFO(name);
  auto c = compile_ok(sample(name) + prepare_shmap(specs));
  auto in = train_inputs(3);
  Trained got = train_in_program(*c, in);
  Trained want = train_on_host(*c, in);
  for (int k = 0; k < kSteps; ++k) CHECK(got.losses[k] == want.losses[k]);
  for (size_t k = 0; k < 4; ++k) require_same_bits(got.params[k], want.params[k]);

  // The loss falls at every step, to a fifth of where it started.
  for (int k = 1; k < kSteps; ++k) CHECK(got.losses[k] < got.losses[k - 1]);
  CHECK(got.losses[kSteps - 1] < 0.2f * got.losses[0]);

  // The first step's gradient against central differences of `loss`, along a
  // random direction in all four parameters.
  auto prepared = run_named(*c, "prepare", in);
  std::vector<rt::Tensor> at(prepared.begin(), prepared.begin() + 4), dir;
  for (size_t k = 0; k < 4; ++k)
    dir.push_back(rt::random_tensor(DType::F32, at[k].shape(), 77 + k));
  auto loss_at = [&](double h) {
    std::vector<rt::Tensor> args;
    for (size_t k = 0; k < 4; ++k) args.push_back(axpy(h, dir[k], at[k]));
    args.push_back(in[5]);
    args.push_back(prepared[4]);
    return static_cast<double>(run_named(*c, "loss", args)[0].get(0));
  };
  // A small step: the loss is far from linear along a step of all four
  // parameters (f32 rounding of the loss is ~1e-5 of the difference here).
  const double h = 2e-3;
  double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
  CHECK(got.losses[0] == static_cast<float>(loss_at(0)));
  double directional = 0;
  for (size_t k = 0; k < 4; ++k) directional += dot(want.first_grad[k], dir[k]);
  CHECK(directional == Approx(fd).epsilon(2e-3).margin(1e-4));
}

TEST_CASE("train_mlp: the rolled loop with grad(loss) trains like the host loop over `spmdc grad`",
          "[samples][train]") {
  check_sample("train_mlp.spmd",
               "w1: f32[16, 32] @ P(), b1: f32[32] @ P(), w2: f32[32, 4] @ P(), b2: f32[4] @ P(), "
               "teacher: f32[16, 4] @ P(), x: f32[256, 16] @ P(batch)) -> (f32[16, 32] @ P(), "
               "f32[32] @ P(), f32[32, 4] @ P(), f32[4] @ P(), f32[256, 4] @ P(batch)");
}

TEST_CASE("train_mlp_tp: DP x TP training, checked the same way", "[samples][train]") {
  check_sample("train_mlp_tp.spmd",
               "w1: f32[16, 32] @ P(None, model), b1: f32[32] @ P(model), "
               "w2: f32[32, 4] @ P(model), b2: f32[4] @ P(), teacher: f32[16, 4] @ P(), "
               "x: f32[256, 16] @ P(data)) -> (f32[16, 32] @ P(None, model), f32[32] @ P(model), "
               "f32[32, 4] @ P(model), f32[4] @ P(), f32[256, 4] @ P(data)");
}

TEST_CASE("train_mlp_tp trains like train_mlp: the same losses up to summation order",
          "[samples][train]") {
  auto dp = compile_ok(sample("train_mlp.spmd"));
  auto tp = compile_ok(sample("train_mlp_tp.spmd"));
  auto in = train_inputs(4);
  Trained a = train_in_program(*dp, in), b = train_in_program(*tp, in);
  for (int k = 0; k < kSteps; ++k) CHECK(b.losses[k] == Approx(a.losses[k]).epsilon(1e-4));
  for (size_t k = 0; k < 4; ++k)
    for (int64_t e = 0; e < a.params[k].numel(); ++e)
      CHECK(b.params[k].get(e) == Approx(a.params[k].get(e)).epsilon(1e-3).margin(1e-5));
}

}  // namespace
}  // namespace spmd::test
