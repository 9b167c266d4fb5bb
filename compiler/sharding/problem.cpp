// sharding/problem.cpp — see problem.h.
#include "sharding/problem.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ir/loops.h"
#include "pipeline/prepare.h"
#include "support/limits.h"

namespace spmd::sharding {

bool Problem::is_creation(int instr) const {
  return op_kind(flat.body.at(static_cast<size_t>(instr)).op) == OpKind::Creation;
}

namespace {

/// Instructions of `body` with every loop unrolled and every call inlined
/// (saturating); `sizes` memoises the module's functions.
int64_t flat_size(const ir::Module &module, const std::vector<ir::Instr> &body,
                  std::map<int, int64_t> &sizes) {
  return ir::unrolled_size(
      body, [](const ir::Instr &) { return true; },
      [&](int callee) -> int64_t {
        if (callee < 0 || static_cast<size_t>(callee) >= module.functions.size()) return 1;
        auto it = sizes.find(callee);
        if (it != sizes.end()) return it->second;
        sizes[callee] = 1;  // (recursion was rejected when lowering)
        int64_t n = flat_size(module, module.functions[static_cast<size_t>(callee)].body, sizes);
        sizes[callee] = n;
        return n;
      });
}

}  // namespace

bool check_problem_size(const ir::Module &module, const ir::Function &function,
                        DiagnosticEngine &diags) {
  std::map<int, int64_t> sizes;
  const int64_t size = flat_size(module, function.body, sizes);
  if (size <= kMaxShardedInstructions) return true;
  // Point at the largest top-level loop or call: the one to shrink.
  SourceSpan at = function.span;
  int64_t largest = 0;
  for (const ir::Instr &in : function.body) {
    const int64_t n = flat_size(module, {in}, sizes);
    if ((in.op == OpCode::For || in.op == OpCode::Call) && n > largest && in.span.valid()) {
      largest = n;
      at = in.span;
    }
  }
  diags
      .error("program-too-large", at,
             "sharding `" + function.name + "` unrolls its loops and inlines its calls, which " +
                 too_many_instructions(size, kMaxShardedInstructions))
      .fix = "shorten the loop, or move it into a shmap (shmaps keep loops as loops)";
  return false;
}

Problem make_problem(const ir::Module &module, const ir::Function &function,
                     const HardwareProfile &profile, const StrategyOptions &options) {
  Problem p;
  p.module = &module;
  // One flat body (the flatten-for-sharding script): calls inlined, loops
  // unrolled (a static loop's iterations may be split differently), simplified.
  p.flat = flatten_for_sharding(module, function);
  p.mesh = module.mesh_of(function);
  p.profile = profile;
  p.connector = std::make_unique<Connector>(p.mesh, profile);
  p.connector->set_deadline(options.deadline);
  const ir::Function &f = p.flat;
  p.producer.assign(f.values.size(), 0);
  p.producer_result.assign(f.values.size(), 0);
  p.uses.assign(f.values.size(), {});
  for (size_t k = 0; k < f.params.size(); ++k)
    p.producer[static_cast<size_t>(f.params[k].value)] = -static_cast<int>(k) - 1;
  for (size_t i = 0; i < f.body.size(); ++i) {
    const ir::Instr &in = f.body[i];
    OpSignature sig;
    sig.op = in.op;
    sig.attrs = in.attrs;
    for (ir::ValueId v : in.operands) sig.operands.push_back(f.type(v));
    for (ir::ValueId v : in.results) sig.results.push_back(f.type(v));
    sig.rule = sharding_rule(in.op, sig.operands, sig.results, in.attrs);
    for (size_t k = 0; k < in.operands.size(); ++k)
      p.uses[static_cast<size_t>(in.operands[k])].push_back(
          {static_cast<int>(i), static_cast<int>(k)});
    for (size_t r = 0; r < in.results.size(); ++r) {
      p.producer[static_cast<size_t>(in.results[r])] = static_cast<int>(i);
      p.producer_result[static_cast<size_t>(in.results[r])] = static_cast<int>(r);
    }
    std::vector<Strategy> strategies;
    if (in.op == OpCode::Constrain) {
      // One strategy: exactly the written spec (its factors are the dimensions).
      Sharding spec = from_spec(in.attrs.sharding, sig.operands[0].shape.size());
      if (auto s = make_strategy(sig, p.mesh, profile, spec.dims, {}, {false}))
        strategies.push_back(*s);
    } else if (op_kind(in.op) != OpKind::Creation) {
      strategies = enumerate_strategies(sig, p.mesh, profile, options);
      if (strategies.size() >= options.max_candidates)
        p.candidates_capped_at = options.max_candidates;
    }
    options.deadline.check();
    p.ops.push_back(std::move(sig));
    p.strategies.push_back(std::move(strategies));
  }
  for (size_t k = 0; k < f.returns.size(); ++k)
    p.uses[static_cast<size_t>(f.returns[k])].push_back({Use::kReturn, static_cast<int>(k)});
  for (const ir::Param &param : f.params)
    p.param_candidates.push_back(
        param.auto_spec ? all_layouts(p.mesh, param.global_shape, options.all_axis_orders,
                                      options.max_candidates)
                        : std::vector<Sharding>{from_spec(param.spec, param.global_shape.size())});
  for (const auto &layouts : p.param_candidates)
    if (layouts.size() >= options.max_candidates) p.candidates_capped_at = options.max_candidates;
  for (const ir::Result &result : f.results)
    p.result_candidates.push_back(
        result.auto_spec
            ? all_layouts(p.mesh, result.global_shape, options.all_axis_orders,
                          options.max_candidates)
            : std::vector<Sharding>{from_spec(result.spec, result.global_shape.size())});
  for (const auto &layouts : p.result_candidates)
    if (layouts.size() >= options.max_candidates) p.candidates_capped_at = options.max_candidates;
  return p;
}

std::optional<Sharding> value_sharding(const Problem &p, const Plan &plan, ir::ValueId v) {
  int prod = p.producer[static_cast<size_t>(v)];
  if (prod < 0) return plan.params.at(static_cast<size_t>(-prod - 1));
  int choice = plan.choice.at(static_cast<size_t>(prod));
  if (choice < 0) return std::nullopt;
  return p.strategies[static_cast<size_t>(prod)][static_cast<size_t>(choice)].results.at(
      static_cast<size_t>(p.producer_result[static_cast<size_t>(v)]));
}

Sharding requirement(const Problem &p, const Plan &plan, Use use) {
  if (use.instr == Use::kReturn) return plan.results.at(static_cast<size_t>(use.operand));
  int choice = plan.choice.at(static_cast<size_t>(use.instr));
  return p.strategies[static_cast<size_t>(use.instr)][static_cast<size_t>(choice)].operands.at(
      static_cast<size_t>(use.operand));
}

ir::ValueId used_value(const Problem &p, Use use) {
  if (use.instr == Use::kReturn) return p.flat.returns.at(static_cast<size_t>(use.operand));
  return p.flat.body.at(static_cast<size_t>(use.instr))
      .operands.at(static_cast<size_t>(use.operand));
}

std::vector<std::vector<ir::ValueId>> live_values(const Problem &p) {
  const ir::Function &f = p.flat;
  const int n = static_cast<int>(f.body.size());
  std::vector<int> last(f.values.size(), -1);
  for (int i = 0; i < n; ++i)
    for (ir::ValueId v : f.body[i].operands) last[static_cast<size_t>(v)] = i;
  for (ir::ValueId v : f.returns) last[static_cast<size_t>(v)] = n;
  std::vector<std::vector<ir::ValueId>> live(static_cast<size_t>(n));
  std::vector<ir::ValueId> current;
  for (int i = 0; i < n; ++i) {
    for (ir::ValueId r : f.body[i].results)
      if (!p.is_creation(i)) current.push_back(r);
    live[static_cast<size_t>(i)] = current;
    std::vector<ir::ValueId> next;
    for (ir::ValueId v : current)
      if (last[static_cast<size_t>(v)] > i) next.push_back(v);
    current = std::move(next);
  }
  return live;
}

PlanCost evaluate(Problem &p, const Plan &plan) {
  PlanCost c;
  const ir::Function &f = p.flat;
  for (size_t i = 0; i < f.body.size(); ++i) {
    int choice = plan.choice[i];
    if (choice < 0) continue;
    const Strategy &s = p.strategies[i][static_cast<size_t>(choice)];
    c.compute_s += s.compute_s;
    c.finish_s += s.finish_s;
    c.collectives += static_cast<int>(s.finish.size());
  }
  // Each distinct (value, needed sharding) is resharded once.
  std::set<std::pair<ir::ValueId, Sharding>> done;
  for (size_t v = 0; v < p.uses.size(); ++v) {
    auto have = value_sharding(p, plan, static_cast<ir::ValueId>(v));
    if (!have) continue;  // constants are made where they are needed
    for (const Use &u : p.uses[v]) {
      Sharding need = requirement(p, plan, u);
      if (need == *have || !done.insert({static_cast<ir::ValueId>(v), need}).second) continue;
      const Type &t = p.type(static_cast<ir::ValueId>(v));
      ReshardPlan r = p.connector->connect(t.shape, t.dtype, *have, need);
      if (!r.possible)
        c.reshard_s = HUGE_VAL;  // e.g. a complete value where a partial one is needed
      c.reshard_s += r.seconds;
      c.reshard_bytes += r.moved_bytes;
      c.collectives += r.collectives();
    }
  }
  for (size_t k = 0; k < f.params.size(); ++k) {
    const Type &t = f.type(f.params[k].value);
    c.param_bytes += local_bytes(p.mesh, t.shape, t.dtype, plan.params[k]);
  }
  double peak = 0;
  for (const auto &live : live_values(p)) {
    double bytes = 0;
    for (ir::ValueId v : live)
      if (auto s = value_sharding(p, plan, v))
        bytes += local_bytes(p.mesh, p.type(v).shape, p.type(v).dtype, *s);
    peak = std::max(peak, bytes);
  }
  c.peak_bytes = c.param_bytes + peak;
  return c;
}

}  // namespace spmd::sharding
