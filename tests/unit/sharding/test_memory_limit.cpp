// `--memory-per-device` bounds the estimate (evaluate()'s peak_bytes,
// docs/sharding.md, "Memory"): on the global samples, under the limits their
// headers give, under limits between what the search's rows count of the
// unlimited plan (row_bytes) and its estimate (peak_bytes), and under
// train_ep's 7 KiB, where the search's first plan (expert parallelism) is
// estimated at 7,301 bytes (the executable holds 7,172), the plan the search
// answers is estimated within the limit — or the search reports that no
// plan fits (`memory-limit`), never a plan over it.
#include "../samples/sample_util.h"
#include "sharding/auto_shard.h"
#include "sharding/ilp.h"
#include "sharding_test_util.h"

using namespace spmd;

namespace {

struct Outcome {
  std::optional<sharding::ShardResult> result;
  std::string diagnostics;
  bool no_fit = false;  // a memory-limit error
};

Outcome shard_under(const Compilation &c, std::optional<double> limit) {
  sharding::ShardOptions o;
  o.automatic = true;
  o.search.memory_per_device = limit;
  o.profile = builtin_profiles().front();
  o.sources = &c.sources;
  DiagnosticEngine diags;
  Outcome out;
  out.result = sharding::shard(*c.module, o, diags);
  out.diagnostics = render_diagnostics(diags, c.sources);
  for (const Diagnostic &d : diags.all()) out.no_fit = out.no_fit || d.code == "memory-limit";
  return out;
}

/// The search's plan under `limit` is estimated within it, or the search
/// says no plan fits. Returns the plan's estimate (0: no fit).
double check_fits(Compilation &c, double limit) {
  Outcome o = shard_under(c, limit);
  INFO("limit " << limit << "\n" << o.diagnostics);
  if (!o.result) {
    CHECK(o.no_fit);
    return 0;
  }
  // Priced again here, independently of what the search kept.
  const sharding::PlanCost cost = sharding::evaluate(o.result->problem, o.result->plan);
  INFO("status: " << o.result->search->status << ", rounds " << o.result->search->memory_rounds
                  << ", rows' limit " << o.result->search->rows_limit);
  CHECK(cost.peak_bytes <= limit);
  CHECK(cost.peak_bytes == o.result->cost.peak_bytes);
  // The rows' limit is the limit, or lower after a plan over it.
  CHECK(o.result->search->rows_limit <= limit);
  CHECK(o.result->search->memory_rounds >= 1);
  return cost.peak_bytes;
}

}  // namespace

TEST_CASE("memory limit: train_ep under 7 KiB is answered within 7 KiB or not at all",
          "[sharding][memory][memory_limit]") {
  if (!sharding::ilp_solver_available()) {
    WARN("spmdc was built without CBC, which a memory limit needs");
    return;
  }
  auto c = test::compile_text(test::sample_text("global/train_ep.spmd"));
  // The search's rows alone answer expert parallelism, estimated over 7 KiB
  // (its copies of the tokens, which the rows cannot state).
  {
    sharding::ShardOptions o;
    o.automatic = true;
    o.search.memory_per_device = 7.0 * 1024;
    o.search.fit_estimate = false;
    o.profile = builtin_profiles().front();
    DiagnosticEngine diags;
    auto r = sharding::shard(*c->module, o, diags);
    REQUIRE(r.has_value());
    CHECK(r->cost.row_bytes <= 7.0 * 1024);
    CHECK(r->cost.peak_bytes > 7.0 * 1024);
  }
  check_fits(*c, 7.0 * 1024);
}

TEST_CASE("memory limit: the global samples' plans are estimated within their limits",
          "[sharding][memory][memory_limit]") {
  if (!sharding::ilp_solver_available()) {
    WARN("spmdc was built without CBC, which a memory limit needs");
    return;
  }
  // The limits of the samples' headers (KiB).
  const std::pair<const char *, double> cases[] = {
      {"global/tp_mlp.spmd", 6}, {"global/fsdp_mlp.spmd", 7},   {"global/dp_tp.spmd", 6},
      {"global/moe.spmd", 3.5},  {"global/train_ep.spmd", 7.5},
  };
  for (const auto &[name, kib] : cases) {
    INFO(name);
    auto c = test::compile_text(test::sample_text(name));
    CHECK(check_fits(*c, kib * 1024) > 0);
  }
}

TEST_CASE("memory limit: between the rows' count and the estimate of the unlimited plan",
          "[sharding][memory][memory_limit]") {
  if (!sharding::ilp_solver_available()) {
    WARN("spmdc was built without CBC, which a memory limit needs");
    return;
  }
  // A limit the unlimited plan meets by the search's rows but not by its
  // estimate: the search must not answer it (nor anything else over it).
  int between = 0;
  for (const char *name : {"global/tp_mlp.spmd", "global/fsdp_mlp.spmd", "global/dp_tp.spmd",
                           "global/moe.spmd", "global/train_ep.spmd", "global/train_adamw.spmd"}) {
    INFO(name);
    auto c = test::compile_text(test::sample_text(name));
    Outcome free = shard_under(*c, std::nullopt);
    INFO(free.diagnostics);
    REQUIRE(free.result.has_value());
    const sharding::PlanCost &cost = free.result->cost;
    INFO("unlimited: rows " << cost.row_bytes << ", estimate " << cost.peak_bytes);
    if (cost.peak_bytes <= cost.row_bytes) continue;
    ++between;
    const double limit = std::floor((cost.row_bytes + cost.peak_bytes) / 2);
    const double got = check_fits(*c, limit);
    // That plan itself is over the limit: a plan that fits is another one.
    if (got > 0) CHECK(got < cost.peak_bytes);
  }
  CHECK(between >= 2);
}
