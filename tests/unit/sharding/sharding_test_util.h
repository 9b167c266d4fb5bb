// sharding_test_util.h — helpers for the sharding tests: shard a global-view
// program, print the emitted shmap and check it again with automatic
// pbroadcast insertion off, and compare runs with the unsharded reference.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
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

}  // namespace spmd::test
