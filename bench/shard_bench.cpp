// bench/shard_bench.cpp — how long `spmdc shard --auto` takes on programs of
// 100, 1,000 and 10,000 ops.
//
// The programs are stacks of residual MLP blocks over global shapes on a
// (data: 2, model: 4) mesh, the batch written P(data) and every weight
// `auto`: per block h = tanh(x @ w1), x = x + h @ w2 (4 ops, 2 weights to
// choose). For each size the benchmark prints the time to compile, to prepare
// the problem (rules, strategies, layouts), to build the ILP and to solve it
// with CBC, the ILP's size, whether it was proven optimal within the time
// limit, and the plan's estimate next to pure DP.
//
// By default the solver is chosen as `spmdc shard --auto` chooses it (the
// exact elimination of pairwise.h on the problem reduce.h leaves, else
// CBC); --cbc always uses CBC. Each size runs once per memory limit: by
// default without one and with one of 60% of the parameters' bytes
// replicated (so the weights must be split); --memory-share F,... gives the
// shares (0: no limit), --memory BYTES one absolute limit. Under a limit the
// search is the Lagrangian relaxation of lagrangian.h, then CBC when its gap
// stays over 1% and the time left covers CBC's root LP. Columns: the limit,
// the nodes with a choice before and after reduce.h, the CPU time of
// building the problem, of the reductions and of the solve (reductions
// included), the search's CPU time (search_cpu_s, which --time-limit
// budgets) and wall time (search_wall_s: what the machine's load made of
// it), the eliminations the relaxation ran and its eliminations with labels
// (exact: limited_elimination.h, while a gap stays open), optimal / in-gap (proven within
// 1%) / stopped (by the time limit, default 10 s of CPU time as in `spmdc
// shard`), the proven gap of the plan, and its estimate next to pure DP.
//
// --no-blocks turns the block moves off (AutoOptions::block_moves,
// sharding/block_search.h), for a before/after in one run; the column
// `blk` counts the block moves made.
//
// Under a limit the search bounds the plan's estimate (evaluate()'s peak
// bytes, column peak_MB), searching again with lower memory rows while its
// plan is estimated over the limit (column `rnd`: the searches run);
// --rows-only bounds the rows alone (AutoOptions::fit_estimate off), as
// before, for a before/after in one run.
//
// --train makes each program a training step (training_program below: the
// gradient of the stack's loss and the SGD update, weights `like` their
// parameters), about 4x the forward's ops.
//
// Usage: shard_bench [--ops N,...] [--time-limit S] [--width W] [--cbc] [--train]
//                    [--no-blocks] [--rows-only] [--memory BYTES | --memory-share F,...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/compile.h"
#include "sharding/auto_shard.h"
#include "sharding/explain.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string program(int blocks, int width) {
  std::ostringstream s;
  s << "mesh M = (data: 2, model: 4)\n\nsharded mlp_stack(x: f32[64, " << width << "] @ P(data)";
  for (int b = 0; b < blocks; ++b)
    s << ", w1_" << b << ": f32[" << width << ", " << 4 * width << "] @ auto, w2_" << b << ": f32["
      << 4 * width << ", " << width << "] @ auto";
  s << ") -> f32[64, " << width << "] @ P(data) on M {\n";
  for (int b = 0; b < blocks; ++b)
    s << "  h = tanh(x @ w1_" << b << ")\n  x = x + h @ w2_" << b << "\n";
  s << "  return x\n}\n";
  return s.str();
}

/// The same stack as a training step: a def computes the loss (mean squared
/// error against y), the sharded step takes its gradient with respect to every
/// weight and returns the SGD update, each weight `like` its parameter. The
/// `ops` figure counts the forward blocks (4 ops each); the problem holds the
/// backward pass and the update too (about 4x as many ops).
std::string training_program(int blocks, int width) {
  std::ostringstream s, weights, types, names, grads, updates, results;
  for (int b = 0; b < blocks; ++b) {
    const std::string w1 = "w1_" + std::to_string(b), w2 = "w2_" + std::to_string(b);
    const std::string t1 = "f32[" + std::to_string(width) + ", " + std::to_string(4 * width) + "]";
    const std::string t2 = "f32[" + std::to_string(4 * width) + ", " + std::to_string(width) + "]";
    types << ", " << w1 << ": " << t1 << ", " << w2 << ": " << t2;
    weights << ", " << w1 << ": " << t1 << " @ auto, " << w2 << ": " << t2 << " @ auto";
    names << (b ? ", " : "") << w1 << ", " << w2;
    grads << ", g" << w1 << ", g" << w2;
    updates << ", " << w1 << " - 0.01 * g" << w1 << ", " << w2 << " - 0.01 * g" << w2;
    results << ", " << w1 << ": " << t1 << " @ like(" << w1 << "), " << w2 << ": " << t2
            << " @ like(" << w2 << ")";
  }
  const std::string act = "f32[64, " + std::to_string(width) + "]";
  s << "mesh M = (data: 2, model: 4)\n\ndef loss(x: " << act << ", y: " << act << types.str()
    << ") -> f32[] {\n";
  for (int b = 0; b < blocks; ++b)
    s << "  h = tanh(x @ w1_" << b << ")\n  x = x + h @ w2_" << b << "\n";
  s << "  d = x - y\n  return mean(d * d)\n}\n\n";
  s << "sharded mlp_stack(x: " << act << " @ P(data), y: " << act << " @ P(data)" << weights.str()
    << ") -> (l: f32[] @ P()" << results.str() << ") on M {\n";
  s << "  l" << grads.str() << " = grad(loss, wrt=(" << names.str() << "))(x, y, " << names.str()
    << ")\n";
  s << "  return l" << updates.str() << "\n}\n";
  return s.str();
}

/// A short name for the report's solver.
const char *solver_label(const std::string &solver) {
  if (solver == "dynamic program") return "DP";
  if (solver == "CBC") return "CBC";
  if (solver == "local search") return "LS";
  if (solver == "local search + CBC") return "LS+CBC";
  if (solver.find("CBC") != std::string::npos) return "LR+CBC";
  return "LR";  // the Lagrangian relaxation alone
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<int> sizes = {100, 1000, 10000};
  double time_limit = 10;
  int width = 256;
  bool cbc = false;
  bool train = false;
  bool blocks_on = true;
  bool fit_estimate = true;
  bool polish_on = true;
  long max_copy_nodes = -1;  // -1: AutoOptions' default
  double memory = 0;
  std::vector<double> shares = {0, 0.6};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--ops") && i + 1 < argc) {
      sizes.clear();
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) sizes.push_back(std::atoi(item.c_str()));
    } else if (!std::strcmp(argv[i], "--time-limit") && i + 1 < argc) {
      time_limit = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--width") && i + 1 < argc) {
      width = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--cbc")) {
      cbc = true;
    } else if (!std::strcmp(argv[i], "--train")) {
      train = true;
    } else if (!std::strcmp(argv[i], "--no-blocks")) {
      blocks_on = false;
    } else if (!std::strcmp(argv[i], "--rows-only")) {
      fit_estimate = false;
    } else if (!std::strcmp(argv[i], "--no-polish")) {
      polish_on = false;
    } else if (!std::strcmp(argv[i], "--max-copy-nodes") && i + 1 < argc) {
      max_copy_nodes = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--memory") && i + 1 < argc) {
      memory = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--memory-share") && i + 1 < argc) {
      shares.clear();
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) shares.push_back(std::atof(item.c_str()));
    } else {
      std::fprintf(
          stderr,
          "usage: shard_bench [--ops N,...] [--time-limit S] [--width W] [--cbc] [--train] "
          "[--no-blocks] [--rows-only] [--no-polish] [--max-copy-nodes N] [--memory BYTES | "
          "--memory-share F,...]\n");
      return 2;
    }
  }
  std::printf(
      "%7s %8s %7s %7s %9s %9s %9s %9s %9s %12s %13s %8s %8s %8s  %-6s %5s %5s %5s %-8s %7s "
      "%11s %11s %8s %3s\n",
      "ops", "limit_MB", "choices", "reduced", "compile_s", "prepare_s", "build_s", "reduce_s",
      "solve_s", "search_cpu_s", "search_wall_s", "vars", "rows", "follow", "solver", "elims",
      "exact", "blk", "status", "gap_%", "plan_us", "pure_dp_us", "peak_MB", "rnd");
  if (memory > 0) shares = {-1};  // the absolute limit
  for (int n : sizes) {
    int blocks = std::max(1, n / 4);
    std::string text = train ? training_program(blocks, width) : program(blocks, width);
    auto t0 = Clock::now();
    spmd::Compilation c;
    spmd::compile_source(c, "stack.spmd", text, spmd::CompileOptions{});
    if (!c.ok()) {
      std::fprintf(stderr, "%s", spmd::render_diagnostics(c.diags, c.sources).c_str());
      return 1;
    }
    double compile_s = since(t0);
    auto t1 = Clock::now();
    spmd::sharding::Problem p = spmd::sharding::make_problem(
        *c.module, c.module->functions[static_cast<size_t>(c.module->find_function("mlp_stack"))],
        spmd::builtin_profiles().front(), {/*carry_partials=*/false, /*all_axis_orders=*/false});
    double prepare_s = since(t1);
    double replicated = 0;  // the parameters' bytes, replicated
    for (const auto &param : p.flat.params) {
      const spmd::Type &t = p.type(param.value);
      replicated += static_cast<double>(spmd::rt::num_elements(t.shape)) *
                    static_cast<double>(spmd::rt::dtype_size(t.dtype));
    }
    for (double share : shares) {
      spmd::sharding::AutoOptions options;
      options.time_limit_s = time_limit;
      if (cbc) options.elimination_states = 0;
      options.block_moves = blocks_on;
      options.fit_estimate = fit_estimate;
      options.polish = polish_on;
      if (max_copy_nodes >= 0) options.max_copy_nodes = static_cast<size_t>(max_copy_nodes);
      if (share < 0) options.memory_per_device = memory;
      if (share > 0) options.memory_per_device = share * replicated;
      spmd::sharding::AutoReport report;
      spmd::DiagnosticEngine diags;
      const std::clock_t cpu = std::clock();
      const auto wall = Clock::now();
      auto plan = spmd::sharding::auto_shard(p, options, report, diags);
      const double search_wall_s = since(wall);
      const double search_cpu_s = static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC;
      if (!plan) {
        std::fprintf(stderr, "%s", spmd::render_diagnostics(diags, c.sources).c_str());
        return 1;
      }
      const spmd::sharding::PlanCost planned_cost = spmd::sharding::evaluate(p, *plan);
      double planned = planned_cost.total_s();
      double dp = spmd::sharding::baselines(p).pure_dp.total_s();
      // optimal; "in-gap": proven within AutoOptions::gap; else stopped by the time limit.
      const char *status = report.optimal                          ? "optimal"
                           : report.status.rfind("within", 0) == 0 ? "in-gap"
                                                                   : "stopped";
      char limit[32] = "none";
      if (options.memory_per_device)
        std::snprintf(limit, sizeof limit, "%.1f", *options.memory_per_device / 1e6);
      std::printf(
          "%7d %8s %7d %7d %9.3f %9.3f %9.3f %9.3f %9.3f %12.3f %13.3f %8d %8d %8d  %-6s %5d %5d "
          "%5d "
          "%-8s "
          "%7.2f %11.2f %11.2f %8.1f %3d\n",
          report.ops, limit, report.choice_nodes, report.reduced_nodes, compile_s, prepare_s,
          report.build_seconds, report.reduce_seconds, report.solve_seconds, search_cpu_s,
          search_wall_s, report.variables, report.rows, report.followers,
          solver_label(report.solver), report.eliminations, report.exact_runs, report.block_moves,
          status, 100 * report.gap, planned * 1e6, dp * 1e6, planned_cost.peak_bytes / 1e6,
          report.memory_rounds);
      std::fflush(stdout);
    }
  }
  return 0;
}
