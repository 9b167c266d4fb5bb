// The search and evaluate() price resharding alike (issue 28, item 5): each
// distinct reshard of a value once, as lower_plan emits it, however many
// uses need it. The references are independent of the search: evaluate() of
// the plan, and the minimum of evaluate() over every plan of small programs.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>

#include "../samples/sample_util.h"
#include "analysis/cost.h"
#include "analysis/stats.h"
#include "sharding/auto_shard.h"
#include "sharding/explain.h"
#include "sharding/ilp.h"
#include "sharding_test_util.h"

namespace spmd {
namespace {

std::string golden(const std::string &name) {
  return test::slurp(std::string(SPMDC_SOURCE_DIR) + "/tests/golden/sharding/" + name);
}

/// The program's sharded function (derivatives are appended after it).
const ir::Function &sharded_function(const Compilation &c) {
  const ir::Function *found = nullptr;
  for (const ir::Function &f : c.module->functions)
    if (f.kind == ir::FunctionKind::Sharded) found = &f;
  REQUIRE(found != nullptr);
  return *found;
}

sharding::Problem problem_of(const Compilation &c, const ir::Function &f) {
  return sharding::make_problem(*c.module, f, builtin_profiles().front());
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(a) + 1e-15; }

/// Solves `p` with `options`; the plan, after checking that the search's
/// objective is evaluate() of it.
sharding::Plan solve_checked(sharding::Problem &p, sharding::AutoOptions options,
                             sharding::AutoReport &report) {
  DiagnosticEngine diags;
  // Every shared reshard a copy node (the default budget, 64, would price
  // train_step_mlp_auto's 70 per consumer: an upper bound, not the sum).
  options.max_copy_nodes = 4096;
  std::optional<sharding::Plan> plan = sharding::auto_shard(p, options, report, diags);
  REQUIRE(plan.has_value());
  INFO("solver " << report.solver << ", " << report.copy_nodes << " copy nodes");
  REQUIRE(report.shared_per_group == 0);
  const sharding::PlanCost cost = sharding::evaluate(p, *plan);
  // The search breaks ties by the parameters' bytes, at 1e-18 s a byte.
  const double evaluated = cost.total_s() + 1e-18 * cost.param_bytes;
  INFO("objective " << report.objective_s << " s, evaluate " << evaluated << " s");
  CHECK(close(report.objective_s, evaluated));
  return *plan;
}

// q, k and v read x in the same layout (Megatron's attention input): one
// all_gather of x serves the three matmuls, so the search must see one, not
// three; y feeds an elementwise op folded into its producer and a matmul.
const char *kSeveralConsumers = R"(mesh M = (data: 2, model: 2)

sharded f(x: f32[64, 256] @ P(None, model), wq: f32[256, 256] @ auto, wk: f32[256, 256] @ auto,
          wv: f32[256, 256] @ auto, w2: f32[256, 256] @ auto) -> f32[64, 256] @ auto on M {
  q = x @ wq
  k = x @ wk
  v = x @ wv
  y = q * k + v
  return tanh(y) * (y @ w2)
}
)";

}  // namespace

TEST_CASE("shard --auto: the search's objective is evaluate() of its plan",
          "[sharding][shard][objective]") {
  struct Case {
    std::string name, text;
  };
  const Case cases[] = {
      {"several consumers", kSeveralConsumers},
      {"global/train_adamw.spmd", test::sample_text("global/train_adamw.spmd")},
      {"global/tp_mlp.spmd", test::sample_text("global/tp_mlp.spmd")},
      {"global/moe.spmd", test::sample_text("global/moe.spmd")},
      {"shard_loop_explain.spmd", golden("shard_loop_explain.spmd")},  // a loop
      {"train_step_mlp_auto.spmd", golden("train_step_mlp_auto.spmd")},
      {"train_step_like.spmd", golden("train_step_like.spmd")},
  };
  for (const Case &k : cases) {
    INFO(k.name);
    auto c = std::make_unique<Compilation>();
    compile_source(*c, k.name, k.text, {});
    INFO(render_diagnostics(c->diags, c->sources));
    REQUIRE(c->ok());
    sharding::Problem p = problem_of(*c, sharded_function(*c));
    sharding::AutoReport report;
    sharding::Plan plan = solve_checked(p, {}, report);
    if (sharding::ilp_solver_available()) {
      sharding::AutoOptions cbc;
      cbc.elimination_states = 0;
      sharding::AutoReport cbc_report;
      solve_checked(p, cbc, cbc_report);
      CHECK(cbc_report.solver == "CBC");
      CHECK(close(cbc_report.objective_s, report.objective_s));
    }
    // The emitted program runs the collectives evaluate() counts (before,
    // a reshard two consumers needed with different varying axes was priced
    // once and emitted twice).
    // (`spmdc shard`'s plan: with the default copy-node budget.)
    std::string printed;
    sharding::PlanCost cost;
    auto s = test::shard_text(*c, sharded_function(*c).name, true, &printed, std::nullopt, &cost);
    INFO(printed);
    const ir::Function &sf =
        s->module
            ->functions[static_cast<size_t>(test::function_index(*s, sharded_function(*c).name))];
    if (p.loops.empty())
      CHECK(collective_stats(*s->module, sf).communicating_count() == cost.collectives);
    CHECK(estimate_cost(*s->module, sf, builtin_profiles().front()).comm_s ==
          Approx(cost.reshard_s + cost.finish_s).epsilon(1e-6));
    // No worse than either baseline, priced the same way.
    sharding::Baselines b = sharding::baselines(p);
    const double ours = sharding::evaluate(p, plan).total_s();
    CHECK(ours <= b.replicated.total_s() * (1 + 1e-9));
    if (b.pure_dp.total_s() > 0) CHECK(ours <= b.pure_dp.total_s() * (1 + 1e-9));
  }
}

TEST_CASE("shard --auto: a reshard several consumers need is one collective, priced once",
          "[sharding][shard][objective]") {
  // x arrives split by columns; the three matmuls all read it whole (the
  // weights are too large to gather): the plan gathers x once.
  auto c = test::compile_text(kSeveralConsumers);
  const ir::Function &f = sharded_function(*c);
  sharding::Problem p = problem_of(*c, f);
  sharding::AutoReport report;
  sharding::Plan plan = solve_checked(p, {}, report);
  CHECK(report.copy_nodes > 0);
  // The emitted program runs as many collectives as evaluate() counts.
  std::string text;
  sharding::PlanCost cost;
  auto s = test::shard_text(*c, f.name, true, &text, std::nullopt, &cost);
  INFO(text);
  const ir::Function &sf =
      s->module->functions[static_cast<size_t>(test::function_index(*s, f.name))];
  CHECK(cost.total_s() == Approx(sharding::evaluate(p, plan).total_s()).epsilon(1e-9));
  CHECK(collective_stats(*s->module, sf).communicating_count() == cost.collectives);
}

// Random small programs in which values have several consumers: the
// search's optimum (CBC and the dynamic program, every op its own node and
// with the simplifications) equals the minimum of evaluate() over every plan.
TEST_CASE("shard --auto: the optimum equals exhaustive enumeration under evaluate()",
          "[sharding][shard][objective][ilp]") {
  std::mt19937 rng(28);
  auto pick = [&](std::initializer_list<const char *> xs) {
    return *(xs.begin() + std::uniform_int_distribution<size_t>(0, xs.size() - 1)(rng));
  };
  auto dim = [&] { return std::to_string(8 << std::uniform_int_distribution<int>(0, 6)(rng)); };
  for (int round = 0; round < 12; ++round) {
    const std::string m = dim(), n = dim(), h = dim();
    const char *xspec = pick({"P(a)", "P(None, a)", "P()", "auto"});
    const char *w1spec = pick({"auto", "P(a)", "P(None, a)"});
    const char *w2spec = pick({"auto", "P()"});
    const char *body = pick({
        "  y = x @ w1\n  z = x @ w2\n  return y + z\n",          // x read twice
        "  y = x @ w1\n  return tanh(y) * y + (x @ w2)\n",       // y and x read twice
        "  y = x @ w1\n  z = x @ w2\n  return exp(y) - z * y\n"  // all of them
    });
    std::string text = "mesh M = (a: 2)\n\nsharded f(x: f32[" + m + ", " + n + "] @ " + xspec +
                       ", w1: f32[" + n + ", " + h + "] @ " + w1spec + ", w2: f32[" + n + ", " + h +
                       "] @ " + w2spec + ") -> f32[" + m + ", " + h + "] @ auto on M {\n" + body +
                       "}\n";
    INFO(text);
    auto c = test::compile_text(text);
    sharding::Problem p = problem_of(*c, sharded_function(*c));
    double best = HUGE_VAL;
    sharding::Plan trial;
    test::for_each_plan(p, trial, [&] {
      const double t = sharding::evaluate(p, trial).total_s();
      if (std::isfinite(t)) best = std::min(best, t);
    });
    REQUIRE(std::isfinite(best));
    sharding::AutoOptions dp;
    dp.simplify = false;
    sharding::AutoReport dp_report;
    sharding::Plan dp_plan = solve_checked(p, dp, dp_report);
    CHECK(dp_report.solver == "dynamic program");
    CHECK(close(sharding::evaluate(p, dp_plan).total_s(), best));
    if (sharding::ilp_solver_available()) {
      sharding::AutoOptions cbc = dp;
      cbc.elimination_states = 0;
      sharding::AutoReport cbc_report;
      sharding::Plan cbc_plan = solve_checked(p, cbc, cbc_report);
      CHECK(close(sharding::evaluate(p, cbc_plan).total_s(), best));
    }
    // The simplifications (followers, merged strategies, reduce.h) are
    // exact here too: the same optimum.
    sharding::AutoReport simple_report;
    sharding::Plan simple = solve_checked(p, {}, simple_report);
    CHECK(sharding::evaluate(p, simple).total_s() <= best * (1 + 1e-9));
  }
}

}  // namespace spmd
