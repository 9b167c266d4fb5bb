// sharding_test_util.h — helpers for the sharding tests: shard a global-view
// program, print the emitted shmap and check it again with automatic
// pbroadcast insertion off, and compare runs with the unsharded reference.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../transforms/transform_test_util.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "pipeline/compile.h"
#include "sharding/shard.h"
#include "spmdrt/tensor.h"

namespace spmd::test {

/// Compiles `text`; fails the test (printing diagnostics) on any error.
inline std::unique_ptr<Compilation> compile_text(const std::string &text, bool auto_pb = true) {
  return compile_ok(text, auto_pb);
}

inline int function_index(const Compilation &c, const std::string &name) {
  int i = c.module->find_function(name);
  REQUIRE(i >= 0);
  return i;
}

/// The emitted shmap of `fn`, printed and compiled again with auto
/// pbroadcast off (what a user re-checks); `text` receives the source.
inline std::unique_ptr<Compilation> shard_text(const Compilation &c, const std::string &fn,
                                               bool automatic, std::string *text = nullptr,
                                               std::optional<double> memory = std::nullopt,
                                               sharding::PlanCost *cost = nullptr) {
  sharding::ShardOptions o;
  o.function = fn;
  o.automatic = automatic;
  o.search.memory_per_device = memory;
  o.profile = builtin_profiles().front();
  o.sources = &c.sources;
  DiagnosticEngine diags;
  std::optional<sharding::ShardResult> r = sharding::shard(*c.module, o, diags);
  INFO(render_diagnostics(diags, c.sources));
  REQUIRE(r.has_value());
  if (cost) *cost = r->cost;
  std::string printed = ir::print_module(r->module);
  if (text) *text = printed;
  return compile_text(printed, /*auto_pb=*/false);
}

inline std::vector<rt::Tensor> random_inputs(const ir::Function &f, uint64_t seed,
                                             DType force = DType::F32) {
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < f.params.size(); ++k) {
    DType d = f.type(f.params[k].value).dtype;
    in.push_back(rt::random_tensor(d == DType::F32 || d == DType::F64 ? force : d,
                                   f.params[k].global_shape, seed * 7919 + k));
  }
  return in;
}

inline std::vector<rt::Tensor> run_fn(const Compilation &c, int index,
                                      const std::vector<rt::Tensor> &inputs) {
  interp::InterpOptions o;
  o.check_replication = true;
  return interp::run_shmap(*c.module, index, inputs, o);
}

inline double max_abs_diff(const rt::Tensor &a, const rt::Tensor &b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.get(i) - b.get(i)));
  return m;
}

inline double max_abs(const rt::Tensor &a) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.get(i)));
  return m;
}

/// Every plan of `p`, for exhaustive searches: sets `trial` (sized to the
/// flat function) to each combination of a strategy per body instruction that
/// has strategies, a candidate layout per parameter (a written spec has one)
/// and per result, and calls `visit` on each.
inline void for_each_plan(const sharding::Problem &p, sharding::Plan &trial,
                          const std::function<void()> &visit) {
  const size_t n_params = p.param_candidates.size(), n_results = p.result_candidates.size();
  trial.params.resize(n_params);
  trial.results.resize(n_results);
  trial.choice.resize(p.flat.body.size(), -1);
  std::function<void(size_t)> layouts = [&](size_t k) {  // parameters, then results
    if (k == n_params + n_results) return visit();
    const bool param = k < n_params;
    for (const sharding::Sharding &s :
         param ? p.param_candidates[k] : p.result_candidates[k - n_params]) {
      (param ? trial.params[k] : trial.results[k - n_params]) = s;
      layouts(k + 1);
    }
  };
  std::function<void(size_t)> choices = [&](size_t i) {
    if (i == p.flat.body.size()) return layouts(0);
    if (p.strategies[i].empty()) return choices(i + 1);
    for (size_t s = 0; s < p.strategies[i].size(); ++s) {
      trial.choice[i] = static_cast<int>(s);
      choices(i + 1);
    }
  };
  choices(0);
}

}  // namespace spmd::test
