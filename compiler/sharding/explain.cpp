// sharding/explain.cpp — see explain.h.
#include "sharding/explain.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "sharding/memory_kinds.h"
#include "sharding/propagate.h"
#include "sharding/source_quote.h"

namespace spmd::sharding {
namespace {

std::string seconds(double s) { return format_seconds(s); }
std::string bytes(double b) { return format_bytes(b); }

/// `line 7 `h @ w2``: where a global op is, and its text.
std::string quote(const SourceManager *sources, SourceSpan span, std::string fallback) {
  if (sources == nullptr || !span.valid()) return fallback;
  SourceQuote q = quote_source(*sources, span, 32);
  return q.where + " `" + q.text + "`";
}

/// How a strategy lays out the op: `P(data) @ P(None, model) -> P(data, model)`.
std::string layouts(const Strategy &s, const rt::Mesh &mesh) {
  std::string out;
  for (size_t k = 0; k < s.operands.size(); ++k)
    out += (k ? ", " : "") + to_string(s.operands[k], mesh);
  out += " -> ";
  for (size_t r = 0; r < s.results.size(); ++r)
    out += (r ? ", " : "") + to_string(s.results[r], mesh);
  return out;
}

class Explainer {
 public:
  Explainer(Problem &p, const Plan &plan, const std::optional<double> &memory_limit,
            const SourceManager *sources)
      : p_(p), plan_(plan), memory_limit_(memory_limit), sources_(sources) {}

  /// The cost terms that depend on op i's strategy s, other choices kept:
  /// the strategy itself, its operands' reshards and its results' reshards.
  double local_cost(size_t i, int s) {
    const ir::Instr &in = p_.flat.body[i];
    const Strategy &st = p_.strategies[i][static_cast<size_t>(s)];
    double c = st.cost();
    for (size_t k = 0; k < in.operands.size(); ++k)
      c += reshard(in.operands[k], value_sharding(p_, plan_, in.operands[k]), st.operands[k]);
    for (size_t r = 0; r < in.results.size(); ++r)
      for (const Use &u : p_.uses[static_cast<size_t>(in.results[r])])
        c += reshard(in.results[r], st.results[r], requirement(p_, plan_, u));
    return c;
  }

  double reshard(ir::ValueId v, const std::optional<Sharding> &have, const Sharding &need) {
    if (!have || *have == need) return 0;
    const Type &t = p_.type(v);
    return p_.connector->cost(t.shape, t.dtype, *have, need);
  }

  /// A kept loop's index (the loop's heading) or one of its carried values.
  void carry_line(std::ostringstream &out, size_t i, const ProblemLoop &loop) {
    const ir::Instr &in = p_.flat.body[i];
    if (static_cast<int>(i) == loop.index) {
      out << "  " << quote(sources_, in.span, "a loop") << ": kept a loop, " << loop.trips
          << " iterations; its ops (below, to the end of the loop) take one strategy for every "
             "iteration, and their costs count once per iteration\n";
      return;
    }
    const Strategy &st = p_.strategies[i][static_cast<size_t>(plan_.choice[i])];
    const std::string &name = p_.flat.values[static_cast<size_t>(in.results[0])].name;
    out << "    carried " << (name.empty() ? std::string("value") : "`" + name + "`") << ": "
        << to_string(st.results[0], p_.mesh) << " in every iteration\n";
  }

  void op_line(std::ostringstream &out, size_t i) {
    const ir::Instr &in = p_.flat.body[i];
    const rt::Mesh &mesh = p_.mesh;
    if (const ProblemLoop *loop = p_.carry_loop(static_cast<int>(i)))
      return carry_line(out, i, *loop);

    std::string what = quote(sources_, in.span, "`" + std::string(op_display_name(in.op)) + "`");
    if (plan_.choice[i] < 0) {
      out << "  " << what << ": a constant, made in whatever layout each use needs\n";
      return;
    }
    int chosen = plan_.choice[i];
    const Strategy &st = p_.strategies[i][static_cast<size_t>(chosen)];
    double operand_reshards = 0;
    for (size_t k = 0; k < in.operands.size(); ++k)
      operand_reshards +=
          reshard(in.operands[k], value_sharding(p_, plan_, in.operands[k]), st.operands[k]);
    out << "  " << what << " [" << rule_family_name(p_.ops[i].rule.family) << "]\n";
    out << "      chosen:   " << layouts(st, mesh) << "  (" << strategy_str(st, p_.ops[i], mesh)
        << ")\n";
    out << "                compute " << seconds(st.compute_s);
    if (st.finish_s > 0) out << ", pmax/pmin " << seconds(st.finish_s);
    if (operand_reshards > 0) out << ", resharding its operands " << seconds(operand_reshards);
    out << "\n";
    // The best rejected alternative with a different layout.
    double here = local_cost(i, chosen);
    int best = -1;
    double best_cost = HUGE_VAL;
    for (size_t s = 0; s < p_.strategies[i].size(); ++s) {
      const Strategy &alt = p_.strategies[i][s];
      if (static_cast<int>(s) == chosen ||
          (alt.operands == st.operands && alt.results == st.results))
        continue;
      double c = local_cost(i, static_cast<int>(s));
      if (c < best_cost) {
        best_cost = c;
        best = static_cast<int>(s);
      }
    }
    if (best < 0) {
      out << "      (no other strategy on this mesh)\n";
      return;
    }
    const Strategy &alt = p_.strategies[i][static_cast<size_t>(best)];
    out << "      rejected: " << layouts(alt, mesh) << "  (" << strategy_str(alt, p_.ops[i], mesh)
        << ")\n";
    if (best_cost >= here) {
      out << "                " << seconds(best_cost - here) << " slower here (compute "
          << seconds(alt.compute_s) << ")\n";
      return;
    }
    Plan other = plan_;
    other.choice[i] = best;
    PlanCost oc = evaluate(p_, other);
    if (memory_limit_ && oc.peak_bytes > *memory_limit_) {
      out << "                " << seconds(here - best_cost)
          << " faster here, but the plan would need " << bytes(oc.peak_bytes)
          << " per device, over the " << bytes(*memory_limit_) << " limit\n";
    } else {
      out << "                " << seconds(here - best_cost)
          << " faster here alone, but the layouts around it were chosen together\n";
    }
  }

  std::string run(const std::optional<AutoReport> &search) {
    std::ostringstream out;
    const ir::Function &f = p_.flat;
    const rt::Mesh &mesh = p_.mesh;
    const ir::MeshDef &md = p_.module->meshes.at(static_cast<size_t>(f.mesh));
    out << "sharding of `" << f.name << "` on mesh " << md.name << " (";
    for (size_t a = 0; a < mesh.axes().size(); ++a)
      out << (a ? ", " : "") << mesh.axes()[a].name << ": " << mesh.axes()[a].size;
    out << "), profile " << p_.profile.name << "\n";
    if (search) {
      out << "search: " << search->status << " (" << search->solver << "); " << search->ops
          << " ops, " << search->choice_nodes << " with a choice (" << search->followers
          << " elementwise ops follow their producers)";
      if (search->copy_nodes > 0)
        out << "; " << search->copy_nodes
            << " reshards several consumers can share, each priced once";
      if (search->shared_per_group > 0)
        out << "; " << search->shared_per_group
            << " reshards several consumers can share, priced per consumer (too many to price "
               "once: docs/sharding.md, \"One objective\"), the plan then chosen and polished "
               "by evaluate()";
      out << "\n";
    } else {
      out << "plan: propagation of the written specs (no search; `--auto` searches)\n";
    }
    out << "\nparameters\n";
    for (size_t k = 0; k < f.params.size(); ++k) {
      const ir::Param &param = f.params[k];
      const Type &t = f.type(param.value);
      out << "  " << f.values[static_cast<size_t>(param.value)].name << ": "
          << shape_type_str(t.dtype, t.shape) << " " << to_string(plan_.params[k], mesh)
          << (param.auto_spec ? "  (chosen)" : "  (written)") << ", "
          << bytes(local_bytes(mesh, t.shape, t.dtype, plan_.params[k])) << " per device\n";
    }
    out << "\nops\n";
    for (size_t i = 0; i < f.body.size(); ++i) {
      op_line(out, i);
      const int l = p_.loop_of[i];
      if (l >= 0 && static_cast<int>(i) + 1 == p_.loops[static_cast<size_t>(l)].body_end)
        out << "  (end of the loop)\n";
    }
    out << "\nresults\n";
    for (size_t k = 0; k < f.results.size(); ++k) {
      ir::ValueId v = f.returns[k];
      auto have = value_sharding(p_, plan_, v);
      out << "  " << ir::result_name(f, k) << ": " << to_string(plan_.results[k], mesh) << "  ("
          << result_origin(f, k) << ")";
      double r = reshard(v, have, plan_.results[k]);
      if (r > 0) out << ", resharded from " << to_string(*have, mesh) << ": " << seconds(r);
      out << "\n";
    }
    PlanCost c = evaluate(p_, plan_);
    Baselines b = baselines(p_);
    out << "\nestimate per device (" << p_.profile.name << ")\n";
    auto row = [&](const char *name, const PlanCost &pc) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "  %-16s %12s   compute %10s   communication %10s   %3lld "
                    "collectives   memory %10s",
                    name, seconds(pc.total_s()).c_str(), seconds(pc.compute_s).c_str(),
                    seconds(pc.finish_s + pc.reshard_s).c_str(),
                    static_cast<long long>(pc.collectives), bytes(pc.peak_bytes).c_str());
      out << line;
      if (memory_limit_ && pc.peak_bytes > *memory_limit_) out << "  (over the limit)";
      out << "\n";
    };
    row("this plan", c);
    row("pure DP", b.pure_dp);
    row("replicated", b.replicated);
    if (memory_limit_) out << "  memory limit     " << bytes(*memory_limit_) << " per device\n";
    if (memory_limit_ && search && search->memory_rounds > 1)
      out << "  (the search's memory rows bounded at " << bytes(search->rows_limit) << " after "
          << search->memory_rounds
          << " searches, so that the estimate fits; docs/sharding.md, \"Memory\")\n";
    out << "\nmemory per device at this plan's peak (docs/sharding.md, \"Memory\")\n";
    for (size_t k = 0; k < kNumMemoryKinds; ++k) {
      char line[128];
      std::snprintf(line, sizeof line, "  %-18s %10s\n",
                    std::string(memory_kind_name(static_cast<MemoryKind>(k))).c_str(),
                    bytes(c.peak_by_kind[k]).c_str());
      out << line;
    }
    char total[128];
    std::snprintf(total, sizeof total, "  %-18s %10s\n", "total", bytes(c.peak_bytes).c_str());
    out << total;
    return out.str();
  }

 private:
  Problem &p_;
  const Plan &plan_;
  std::optional<double> memory_limit_;
  const SourceManager *sources_;
};

}  // namespace

std::string result_origin(const ir::Function &f, size_t k) {
  const ir::Result &r = f.results[k];
  if (r.like_param >= 0)
    return "like " +
           f.values[static_cast<size_t>(f.params[static_cast<size_t>(r.like_param)].value)].name;
  return r.auto_spec ? "chosen" : "written";
}

BaselinePlans baseline_plans(Problem &p) {
  BaselinePlans b;
  DiagnosticEngine quiet;
  PropagateOptions po;
  po.replicate_auto = true;
  b.pure_dp = propagate(p, po, quiet);
  Plan &rep = b.replicated;
  const ir::Function &f = p.flat;
  for (size_t k = 0; k < f.params.size(); ++k)
    rep.params.push_back(f.params[k].auto_spec ? replicated(f.params[k].global_shape.size())
                                               : p.param_candidates[k][0]);
  for (size_t k = 0; k < f.results.size(); ++k)
    rep.results.push_back(f.results[k].auto_spec ? replicated(f.results[k].global_shape.size())
                                                 : p.result_candidates[k][0]);
  rep.choice.assign(f.body.size(), -1);
  for (size_t i = 0; i < f.body.size(); ++i)
    if (!p.is_creation(static_cast<int>(i))) rep.choice[i] = 0;  // the unsplit strategy
  return b;
}

Baselines baselines(Problem &p) {
  BaselinePlans plans = baseline_plans(p);
  Baselines b;
  if (plans.pure_dp) b.pure_dp = evaluate(p, *plans.pure_dp);
  b.replicated = evaluate(p, plans.replicated);
  return b;
}

std::string explain(Problem &p, const Plan &plan, const std::optional<AutoReport> &search,
                    const std::optional<double> &memory_limit, const SourceManager *sources) {
  return Explainer(p, plan, memory_limit, sources).run(search);
}

}  // namespace spmd::sharding
