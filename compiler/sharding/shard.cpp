// sharding/shard.cpp — see shard.h.
#include "sharding/shard.h"

#include "sharding/explain.h"
#include "support/cpu_time.h"

namespace spmd::sharding {
namespace {

std::string header_comment(const ShardResult &r, const ShardOptions &o, const std::string &name) {
  const rt::Mesh &mesh = r.problem.mesh;
  std::string c = "The shmap of sharded `" + name + "`";
  if (!o.source_path.empty()) c += " (" + o.source_path + ")";
  c += ", emitted by `spmdc shard" + std::string(o.automatic ? " --auto" : "") + "`.\n";
  const ir::Function &g = r.problem.flat;
  for (size_t k = 0; k < g.params.size(); ++k)
    c += "  " + g.values[static_cast<size_t>(g.params[k].value)].name + ": " +
         to_string(r.plan.params[k], mesh) + (g.params[k].auto_spec ? " (chosen)" : "") + "\n";
  for (size_t k = 0; k < g.results.size(); ++k)
    c += "  " + ir::result_name(g, k) + " (result): " + to_string(r.plan.results[k], mesh) +
         (g.results[k].auto_spec || g.results[k].like_param >= 0 ? " (" + result_origin(g, k) + ")"
                                                                 : "") +
         "\n";
  c += "Estimated per device on " + r.problem.profile.name + ": " +
       format_seconds(r.cost.total_s()) + " (compute " + format_seconds(r.cost.compute_s) +
       ", communication " + format_seconds(r.cost.finish_s + r.cost.reshard_s) + "), " +
       format_bytes(r.cost.reshard_bytes) + " moved by " + std::to_string(r.cost.collectives) +
       " collectives, peak memory " + format_bytes(r.cost.peak_bytes) + ".";
  if (r.search) c += "\nSearch: " + r.search->status + ".";
  return c;
}

}  // namespace

int find_sharded(const ir::Module &module, const std::string &name, DiagnosticEngine &diags) {
  std::vector<int> found;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (module.functions[i].kind == ir::FunctionKind::Sharded) found.push_back(static_cast<int>(i));
  std::string names;
  for (int i : found) names += (names.empty() ? "`" : ", `") + module.functions[i].name + "`";
  if (name.empty()) {
    if (found.size() == 1) return found[0];
    diags.error(
        "unknown-function", {},
        found.empty()
            ? "the file has no sharded function (declare one with `sharded f(...) "
              "on MESH`)"
            : "the file has several sharded functions (" + names + "); choose one with --fn");
    return -1;
  }
  for (int i : found)
    if (module.functions[i].name == name) return i;
  diags.error("unknown-function", {},
              "no sharded function named `" + name + "`" +
                  (names.empty() ? std::string() : " (sharded functions: " + names + ")"));
  return -1;
}

std::optional<ShardResult> shard(const ir::Module &module, const ShardOptions &options,
                                 DiagnosticEngine &diags) {
  int index = find_sharded(module, options.function, diags);
  if (index < 0) return std::nullopt;
  const ir::Function &f = module.functions[static_cast<size_t>(index)];
  if (!check_problem_size(module, f, diags)) return std::nullopt;
  ShardResult r;
  // The search sees a smaller space: axes in mesh order, no partial sums
  // carried through linear ops (propagation considers both). Its time limit
  // counts from here: preparing the problem is part of the search.
  const double start = process_cpu_seconds();
  StrategyOptions so;
  so.carry_partials = !options.automatic;
  so.all_axis_orders = !options.automatic;
  if (options.automatic) {
    so.deadline = Deadline(start + options.search.time_limit_s);
    so.max_candidates =
        exhaustive_mesh(module.mesh_of(f)) ? kMaxAutoCandidates : kMaxAutoCandidatesLargeMesh;
  }
  std::optional<Plan> plan;
  try {
    r.problem = make_problem(module, f, options.profile, so);
    if (options.automatic) {
      AutoReport report;
      AutoOptions search = options.search;
      search.start_cpu_s = start;
      plan = auto_shard(r.problem, search, report, diags);
      if (r.problem.candidates_capped_at)
        report.status += " among at most " + std::to_string(r.problem.candidates_capped_at) +
                         " candidates per op and per `auto` value (docs/limits.md)";
      r.search = report;
    }
  } catch (const OutOfTime &) {
    diags
        .error("search-time-limit", f.span,
               "the sharding search for `" + f.name + "` did not finish preparing within " +
                   format_seconds(options.search.time_limit_s) + " of CPU time (a mesh of " +
                   std::to_string(module.mesh_of(f).axes().size()) + " axes)")
        .fix = "raise --time-limit, or write more specs to shrink the search";
    return std::nullopt;
  }
  if (r.problem.connector) r.problem.connector->set_deadline(Deadline{});  // the plan is chosen
  if (options.automatic) {
    if (plan && options.strict) {
      // Written specs must still agree where the search kept them.
      PropagateOptions po;
      po.conflicts = PropagateOptions::Conflicts::Error;
      po.require_resolved = false;
      DiagnosticEngine strict;
      if (!propagate(r.problem, po, strict)) {
        for (const Diagnostic &d : strict.all()) diags.error(d.code, d.span, d.message) = d;
        return std::nullopt;
      }
    }
  } else {
    PropagateOptions po;
    po.conflicts =
        options.strict ? PropagateOptions::Conflicts::Error : PropagateOptions::Conflicts::Silent;
    plan = propagate(r.problem, po, diags);
  }
  if (!plan) return std::nullopt;
  r.plan = *plan;
  r.cost = evaluate(r.problem, r.plan);
  LowerPlanOptions lo;
  lo.sources = options.sources;
  lo.comment = header_comment(r, options, f.name);
  r.module = lower_plan(r.problem, r.plan, lo);
  return r;
}

bool check_sharded_functions(const ir::Module &module, bool strict, DiagnosticEngine &diags) {
  bool ok = true;
  for (const ir::Function &f : module.functions) {
    if (f.kind != ir::FunctionKind::Sharded) continue;
    if (!check_problem_size(module, f, diags)) {
      ok = false;
      continue;
    }
    Problem p = make_problem(module, f, builtin_profiles().front());
    PropagateOptions po;
    po.conflicts = strict ? PropagateOptions::Conflicts::Error : PropagateOptions::Conflicts::Warn;
    po.require_resolved = false;  // `spmdc shard --auto` may still choose them
    ok = propagate(p, po, diags).has_value() && ok;
  }
  return ok;
}

}  // namespace spmd::sharding
