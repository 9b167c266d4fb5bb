// sharding/propagate.cpp — see propagate.h for the steps.
#include "sharding/propagate.h"

#include <cmath>

#include "ops/shape_rules.h"

namespace spmd::sharding {
namespace {

/// A value whose layout is decided, and the written spec it comes from.
struct Known {
  Sharding spec;  // complete
  SourceSpan origin;
};

class Propagator {
 public:
  Propagator(Problem &p, const PropagateOptions &options, DiagnosticEngine &diags)
      : p_(p), options_(options), diags_(diags), known_(p.flat.values.size()) {}

  std::optional<Plan> run() {
    const ir::Function &f = p_.flat;
    // 1. What the user wrote.
    for (const ir::Param &param : f.params)
      if (!param.auto_spec || options_.replicate_auto)
        known_[param.value] = Known{from_spec(param.spec, param.global_shape.size()),
                                    param.auto_spec ? SourceSpan{} : param.spec_span};
    for (const ir::Instr &in : f.body)
      if (in.op == OpCode::Constrain)
        known_[in.results[0]] =
            Known{from_spec(in.attrs.sharding, p_.type(in.results[0]).shape.size()), in.span};
    for (size_t k = 0; k < f.returns.size(); ++k)
      if (!f.results[k].auto_spec && !known_[f.returns[k]] && !is_constant(f.returns[k]))
        known_[f.returns[k]] = Known{from_spec(f.results[k].spec, f.results[k].global_shape.size()),
                                     f.results[k].spec_span};
    // 2-3. Sweeps, and unsplit defaults where they stop.
    for (;;) {
      sweep();
      bool filled = tie_like_results();
      for (size_t i = 0; i < f.body.size() && !filled; ++i)
        if (has_known_and_open(i)) filled = propagate_op(i, /*fill_open=*/true);
      if (!filled) break;
    }
    if (!check_resolved()) return std::nullopt;
    // 4. Strategies, in program order.
    Plan plan = choose_strategies();
    if (options_.conflicts != PropagateOptions::Conflicts::Silent) report_conflicts(plan);
    if (options_.conflicts == PropagateOptions::Conflicts::Error && diags_.has_errors())
      return std::nullopt;
    return plan;
  }

 private:
  bool is_constant(ir::ValueId v) const {
    int prod = p_.producer[static_cast<size_t>(v)];
    return prod >= 0 && p_.is_creation(prod);
  }

  /// A result declared `like(w)` of an `auto` w and w itself share one
  /// layout: whichever of the two is known first gives it to the other.
  /// True when that taught something new.
  bool tie_like_results() {
    const ir::Function &f = p_.flat;
    bool changed = false;
    for (size_t k = 0; k < f.results.size(); ++k) {
      const ir::Result &r = f.results[k];
      if (!r.auto_spec || r.like_param < 0 || is_constant(f.returns[k])) continue;
      const ir::ValueId w = f.params[static_cast<size_t>(r.like_param)].value;
      std::optional<Known> &param = known_[w];
      std::optional<Known> &ret = known_[f.returns[k]];
      if (param && !ret) {
        ret = Known{param->spec, {}};
        changed = true;
      } else if (ret && !param) {
        param = Known{ret->spec, {}};
        changed = true;
      }
    }
    return changed;
  }

  void sweep() {
    const int n = static_cast<int>(p_.flat.body.size());
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = 0; i < n; ++i) changed |= propagate_op(static_cast<size_t>(i), false);
      for (int i = n - 1; i >= 0; --i) changed |= propagate_op(static_cast<size_t>(i), false);
    }
  }

  bool has_known_and_open(size_t i) const {
    if (p_.is_creation(static_cast<int>(i))) return false;
    const ir::Instr &in = p_.flat.body[i];
    bool any_known = false, any_open = false;
    auto look = [&](ir::ValueId v) {
      if (is_constant(v)) return;
      (known_[v] ? any_known : any_open) = true;
    };
    for (ir::ValueId v : in.operands) look(v);
    for (ir::ValueId v : in.results) look(v);
    return any_known && any_open;
  }

  /// Step 2 for one op; with fill_open, factors nobody fixed are unsplit.
  bool propagate_op(size_t i, bool fill_open) {
    if (p_.is_creation(static_cast<int>(i))) return false;
    const ir::Instr &in = p_.flat.body[i];
    const ShardingRule &rule = p_.ops[i].rule;
    if (rule.family == RuleFamily::Unsupported) return false;
    const int nf = rule.num_factors();
    std::vector<std::optional<std::vector<int>>> factor(static_cast<size_t>(nf));
    std::vector<SourceSpan> origin(static_cast<size_t>(nf));
    auto consider = [&](ir::ValueId v, const std::vector<int> &dims) {
      if (!known_[v] || is_constant(v)) return;
      const Known &k = *known_[v];
      for (size_t d = 0; d < dims.size(); ++d) {
        int fi = dims[d];
        if (fi == kNoFactor || factor[static_cast<size_t>(fi)]) continue;
        const std::vector<int> &axes = k.spec.dims.at(d);
        if (rule.factor_sizes[static_cast<size_t>(fi)] % axes_size(p_.mesh, axes) != 0) continue;
        factor[static_cast<size_t>(fi)] = axes;
        origin[static_cast<size_t>(fi)] = k.origin;
      }
    };
    for (size_t k = 0; k < in.operands.size(); ++k)
      consider(in.operands[k], rule.operand_factors[k]);
    for (size_t r = 0; r < in.results.size(); ++r) consider(in.results[r], rule.result_factors[r]);
    // A mesh axis splits one factor only: the first claim wins.
    AxisSet used;
    for (auto &axes : factor) {
      if (!axes) continue;
      AxisSet a = AxisSet::of_all(*axes);
      if (!(a & used).empty()) {
        axes.reset();
        continue;
      }
      used = used | a;
    }
    if (fill_open)
      for (auto &axes : factor)
        if (!axes) axes = std::vector<int>{};
    bool changed = false;
    auto decide = [&](ir::ValueId v, const std::vector<int> &dims) {
      if (known_[v] || is_constant(v)) return;
      Known k;
      k.spec = replicated(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        int fi = dims[d];
        if (fi == kNoFactor) continue;
        if (!factor[static_cast<size_t>(fi)]) return;  // still open
        k.spec.dims[d] = *factor[static_cast<size_t>(fi)];
        if (!k.origin.valid()) k.origin = origin[static_cast<size_t>(fi)];
      }
      known_[v] = k;
      changed = true;
    };
    for (size_t k = 0; k < in.operands.size(); ++k) decide(in.operands[k], rule.operand_factors[k]);
    for (size_t r = 0; r < in.results.size(); ++r) decide(in.results[r], rule.result_factors[r]);
    return changed;
  }

  bool check_resolved() {
    const ir::Function &f = p_.flat;
    std::vector<std::pair<SourceSpan, std::string>> open;
    for (const ir::Param &param : f.params)
      if (param.auto_spec && !known_[param.value])
        open.push_back({param.spec_span, "`" + f.values[param.value].name + "`"});
    for (size_t k = 0; k < f.results.size(); ++k)
      if (f.results[k].auto_spec && f.results[k].like_param < 0 && !known_[f.returns[k]] &&
          !is_constant(f.returns[k]))
        open.push_back({f.results[k].spec_span,
                        !f.results[k].name.empty() ? "result `" + f.results[k].name + "`"
                        : f.results.size() == 1    ? "the result"
                                                   : "result " + std::to_string(k + 1)});
    if (open.empty() || !options_.require_resolved) {
      for (size_t v = 0; v < known_.size(); ++v)
        if (!known_[v])
          known_[v] = Known{replicated(p_.type(static_cast<ir::ValueId>(v)).rank()), {}};
      return true;
    }
    std::string names;
    for (size_t k = 0; k < open.size(); ++k)
      names += (k == 0 ? "" : k + 1 == open.size() ? " and " : ", ") + open[k].second;
    auto &d = diags_.error("unresolved-auto", open[0].first,
                           "cannot choose a layout for " + names + " of `" + f.name +
                               "` by propagation: no written spec reaches " +
                               (open.size() == 1 ? "it" : "them"));
    for (size_t k = 1; k < open.size(); ++k) d.notes.push_back({open[k].first, "also `auto`"});
    d.fix =
        "write a spec or a constrain(...) that reaches them, or let the compiler search with "
        "`spmdc shard --auto`";
    return false;
  }

  /// Reshard seconds from `have` to `need` for value v (0 for constants).
  double reshard(ir::ValueId v, const std::optional<Sharding> &have, const Sharding &need) {
    if (!have || *have == need) return 0;
    const Type &t = p_.type(v);
    return p_.connector->cost(t.shape, t.dtype, *have, need);
  }

  Plan choose_strategies() {
    const ir::Function &f = p_.flat;
    Plan plan;
    for (const ir::Param &param : f.params) plan.params.push_back(known_[param.value]->spec);
    for (size_t k = 0; k < f.results.size(); ++k)
      plan.results.push_back(f.results[k].like_param >= 0
                                 ? plan.params[static_cast<size_t>(f.results[k].like_param)]
                             : f.results[k].auto_spec
                                 ? complete_of(f.returns[k])
                                 : from_spec(f.results[k].spec, f.results[k].global_shape.size()));
    plan.choice.assign(f.body.size(), -1);
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (p_.is_creation(static_cast<int>(i))) continue;
      const ir::Instr &in = f.body[i];
      add_matching_strategy(i);
      const std::vector<Strategy> &options = p_.strategies[i];
      double best = HUGE_VAL;
      for (size_t s = 0; s < options.size(); ++s) {
        const Strategy &st = options[s];
        double c = st.cost();
        for (size_t k = 0; k < in.operands.size(); ++k)
          c += reshard(in.operands[k], value_sharding(p_, plan, in.operands[k]), st.operands[k]);
        for (size_t r = 0; r < in.results.size(); ++r)
          c += reshard(in.results[r], st.results[r], known_[in.results[r]]->spec);
        if (c < best * (1 - 1e-12)) {
          best = c;
          plan.choice[i] = static_cast<int>(s);
        }
      }
      if (plan.choice[i] < 0)
        throw std::logic_error("shard: `" + std::string(op_spelling(in.op)) +
                               "` has no strategy on this mesh");
    }
    return plan;
  }

  /// On a large mesh the strategies listed are capped (sharding/budget.h):
  /// make sure the one that takes every operand and result as propagation
  /// decided is among them.
  void add_matching_strategy(size_t i) {
    const ShardingRule &rule = p_.ops[i].rule;
    if (rule.family == RuleFamily::Unsupported || p_.flat.body[i].op == OpCode::Constrain) return;
    const ir::Instr &in = p_.flat.body[i];
    std::vector<std::optional<std::vector<int>>> factor(static_cast<size_t>(rule.num_factors()));
    auto take = [&](ir::ValueId v, const std::vector<int> &dims) {
      if (!known_[v] || is_constant(v)) return;
      for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d] != kNoFactor && !factor[static_cast<size_t>(dims[d])])
          factor[static_cast<size_t>(dims[d])] = known_[v]->spec.dims.at(d);
    };
    for (size_t k = 0; k < in.operands.size(); ++k) take(in.operands[k], rule.operand_factors[k]);
    for (size_t r = 0; r < in.results.size(); ++r) take(in.results[r], rule.result_factors[r]);
    std::vector<std::vector<int>> axes;
    for (auto &f : factor) axes.push_back(f.value_or(std::vector<int>{}));
    std::vector<Strategy> &listed = p_.strategies[i];
    for (const Strategy &s : listed)
      if (s.carried.empty() && s.factor_axes == axes) return;
    if (auto s = make_strategy(p_.ops[i], p_.mesh, p_.profile, std::move(axes), {},
                               std::vector<bool>(in.operands.size(), false)))
      listed.push_back(std::move(*s));
  }

  Sharding complete_of(ir::ValueId v) const {
    if (known_[v]) return known_[v]->spec;
    return replicated(p_.type(v).rank());
  }

  std::string name_of(ir::ValueId v) const {
    const std::string &n = p_.flat.values[static_cast<size_t>(v)].name;
    return n.empty() ? "the value" : "`" + n + "`";
  }

  /// `all_gather, all_to_all` — the data-moving steps of a reshard.
  std::string moving_steps(ir::ValueId v, const Sharding &have, const Sharding &need) {
    const Type &t = p_.type(v);
    ReshardPlan r = p_.connector->connect(t.shape, t.dtype, have, need);
    std::string out;
    for (const ReshardStep &s : r.steps) {
      if (s.op != OpCode::AllGather && s.op != OpCode::AllToAll) continue;
      std::string name(op_spelling(s.op));
      if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
    }
    return out;
  }

  Diagnostic &conflict(SourceSpan at, std::string message) {
    if (options_.conflicts == PropagateOptions::Conflicts::Error)
      return diags_.error("sharding-conflict", at, std::move(message));
    return diags_.warning("sharding-conflict", at, std::move(message));
  }

  void note_origin(Diagnostic &d, ir::ValueId v, const Sharding &have) {
    std::string text = name_of(v) + " is " + to_string(have, p_.mesh);
    if (known_[v] && known_[v]->origin.valid() && known_[v]->spec == have) {
      d.notes.push_back({known_[v]->origin, text + " because of this spec"});
    } else if (p_.flat.values[static_cast<size_t>(v)].span.valid()) {
      d.notes.push_back({p_.flat.values[static_cast<size_t>(v)].span, text + " here"});
    }
  }

  void report_conflicts(const Plan &plan) {
    const ir::Function &f = p_.flat;
    const bool strict = options_.conflicts == PropagateOptions::Conflicts::Error;
    const std::string inserted =
        "spmdc shard inserts the collectives; make the specs agree (or add a constrain) to avoid "
        "them";
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (plan.choice[i] < 0) continue;
      const ir::Instr &in = f.body[i];
      const Strategy &s = p_.strategies[i][static_cast<size_t>(plan.choice[i])];
      std::string moves;
      for (size_t k = 0; k < in.operands.size(); ++k) {
        auto have = value_sharding(p_, plan, in.operands[k]);
        if (!have || *have == s.operands[k]) continue;
        std::string m = moving_steps(in.operands[k], *have, s.operands[k]);
        if (!m.empty() && moves.find(m) == std::string::npos)
          moves += (moves.empty() ? "" : ", ") + m;
      }
      if (moves.empty()) continue;
      std::string op(op_display_name(in.op));
      Diagnostic &d =
          p_.carry_loop(static_cast<int>(i)) != nullptr
              ? conflict(in.span, "this loop carries " + name_of(in.results[0]) + " as " +
                                      to_string(s.results[0], p_.mesh) +
                                      " in every iteration, so its value before the loop or "
                                      "its next value must move between devices (" +
                                      moves + ")")
          : in.op == OpCode::Constrain
              ? conflict(in.span, "`constrain` requires " + to_string(s.operands[0], p_.mesh) +
                                      ", which needs its operand moved between devices (" + moves +
                                      ")")
              : conflict(in.span,
                         "`" + op + "` (" + rule_family_name(p_.ops[i].rule.family) +
                             "): " + rule_family_requirement(p_.ops[i].rule.family) +
                             "; with the layouts its operands have, data must move between "
                             "devices (" +
                             moves + ")");
      for (size_t k = 0; k < in.operands.size(); ++k)
        if (auto have = value_sharding(p_, plan, in.operands[k]))
          note_origin(d, in.operands[k], *have);
      if (!strict) d.fix = inserted;
    }
    for (size_t k = 0; k < f.returns.size(); ++k) {
      ir::ValueId v = f.returns[k];
      auto have = value_sharding(p_, plan, v);
      if (!have || *have == plan.results[k]) continue;
      std::string m = moving_steps(v, *have, plan.results[k]);
      if (m.empty()) continue;
      std::string what = f.results[k].name.empty() ? "result " + std::to_string(k + 1)
                                                   : "result `" + f.results[k].name + "`";
      Diagnostic &d = conflict(
          f.results[k].spec_span.valid() ? f.results[k].spec_span : f.return_span,
          what + " must be " + to_string(plan.results[k], p_.mesh) + " but its value is " +
              to_string(*have, p_.mesh) + ", so data must move between devices (" + m + ")");
      note_origin(d, v, *have);
      if (!strict) d.fix = inserted;
    }
  }

  Problem &p_;
  const PropagateOptions &options_;
  DiagnosticEngine &diags_;
  std::vector<std::optional<Known>> known_;
};

}  // namespace

std::optional<Plan> propagate(Problem &p, const PropagateOptions &options,
                              DiagnosticEngine &diags) {
  return Propagator(p, options, diags).run();
}

bool reshard_moves_data(Problem &p, ir::ValueId v, const Sharding &have, const Sharding &need) {
  if (have == need) return false;
  const Type &t = p.type(v);
  for (const ReshardStep &s : p.connector->connect(t.shape, t.dtype, have, need).steps)
    if (s.op == OpCode::AllGather || s.op == OpCode::AllToAll) return true;
  return false;
}

}  // namespace spmd::sharding
