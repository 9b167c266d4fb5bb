// sharding/block_search.cpp — see block_search.h.
#include "sharding/block_search.h"

#include <algorithm>
#include <cmath>

#include "sharding/plan_walker.h"
#include "support/cpu_time.h"

namespace spmd::sharding {

// 1. Blocks.

namespace {

/// At most this many instructions per block: a chain that runs further is
/// no longer one parameter's (an elementwise stack reaching the forward pass).
constexpr size_t kMaxBlockInstrs = 24;
/// At most this many values followed through elementwise ops from one
/// matmul that reads the parameter.
constexpr size_t kMaxFollowers = 4;

bool elementwise_same_shape(const Problem &p, int instr) {
  const ir::Instr &in = p.flat.body[static_cast<size_t>(instr)];
  if (p.ops[static_cast<size_t>(instr)].rule.family != RuleFamily::Elementwise) return false;
  return in.results.size() == 1;
}

}  // namespace

std::vector<ParamBlock> find_blocks(const Problem &p) {
  const ir::Function &f = p.flat;
  std::vector<ParamBlock> blocks;
  std::vector<int> seen_instr(f.body.size(), -1);
  std::vector<int> seen_param(f.params.size(), -1);
  for (size_t k = 0; k < f.params.size(); ++k) {
    if (p.param_candidates[k].size() < 2) continue;
    const int mark = static_cast<int>(k);
    ParamBlock block;
    block.param = mark;
    seen_param[k] = mark;
    const ir::ValueId w = f.params[k].value;
    const auto &shape = p.type(w).shape;
    std::vector<ir::ValueId> forward = {w}, backward;
    bool has_update = false;
    auto add_instr = [&](int i) {
      if (seen_instr[static_cast<size_t>(i)] == mark || block.instrs.size() >= kMaxBlockInstrs)
        return false;
      seen_instr[static_cast<size_t>(i)] = mark;
      block.instrs.push_back(i);
      return true;
    };
    // The ops that read the parameter (the forward matmul, the backward one
    // that multiplies by its transpose), each with the elementwise ops that
    // read its result (the activation, its derivative).
    for (const Use &u : p.uses[static_cast<size_t>(w)]) {
      if (u.instr == Use::kReturn || elementwise_same_shape(p, u.instr) || !add_instr(u.instr))
        continue;
      const ir::Instr &in = f.body[static_cast<size_t>(u.instr)];
      if (in.results.size() != 1) continue;
      std::vector<ir::ValueId> out = {in.results[0]};
      for (size_t q = 0; q < out.size() && q < kMaxFollowers; ++q)
        for (const Use &v : p.uses[static_cast<size_t>(out[q])]) {
          if (v.instr == Use::kReturn || !elementwise_same_shape(p, v.instr)) continue;
          const ir::Instr &e = f.body[static_cast<size_t>(v.instr)];
          if (p.type(e.results[0]).shape != p.type(out[q]).shape || !add_instr(v.instr)) continue;
          out.push_back(e.results[0]);
        }
    }
    // The update chain: elementwise ops of the parameter's shape reading it,
    // and theirs; their other operands lead back to the gradient.
    for (size_t q = 0; q < forward.size(); ++q)
      for (const Use &u : p.uses[static_cast<size_t>(forward[q])]) {
        if (u.instr == Use::kReturn || !elementwise_same_shape(p, u.instr)) continue;
        const ir::Instr &in = f.body[static_cast<size_t>(u.instr)];
        if (p.type(in.results[0]).shape != shape || !add_instr(u.instr)) continue;
        forward.push_back(in.results[0]);
        has_update = true;
        for (ir::ValueId x : in.operands)
          if (std::find(forward.begin(), forward.end(), x) == forward.end()) backward.push_back(x);
      }
    if (!has_update) continue;
    // Back to the gradient: through elementwise ops of the shape, to the
    // first other op (the gradient's matmul or reduction), and the
    // parameters met on the way (optimizer state).
    for (size_t q = 0; q < backward.size(); ++q) {
      const ir::ValueId x = backward[q];
      if (p.type(x).shape != shape) continue;
      const int prod = p.producer[static_cast<size_t>(x)];
      if (prod < 0) {
        const auto other = static_cast<size_t>(-prod - 1);
        if (seen_param[other] != mark && p.param_candidates[other].size() > 1) {
          seen_param[other] = mark;
          block.params.push_back(static_cast<int>(other));
        }
        continue;
      }
      if (p.is_creation(prod) || !add_instr(prod)) continue;
      if (!elementwise_same_shape(p, prod)) continue;
      for (ir::ValueId y : f.body[static_cast<size_t>(prod)].operands) backward.push_back(y);
    }
    blocks.push_back(std::move(block));
  }
  return blocks;
}

std::vector<int> reduced_node_of(const Reduced &r) {
  const size_t n = r.original_id.size() - 1;
  std::vector<int> out(n, -1);
  std::vector<int> stack;
  for (size_t node = 0; node < r.node_ids.size(); ++node)
    for (int id : r.node_ids[node]) {
      stack.assign(1, id);
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        const auto &kids = r.children[static_cast<size_t>(x)];
        if (!kids.empty()) {
          stack.insert(stack.end(), kids.begin(), kids.end());
          continue;
        }
        // An original candidate: its node is the one whose ids hold it.
        const auto at = std::upper_bound(r.original_id.begin(), r.original_id.end(), x);
        const auto v = static_cast<size_t>(at - r.original_id.begin() - 1);
        if (v < n) out[v] = static_cast<int>(node);
      }
    }
  return out;
}

// 2. The search.

namespace {

/// One sweep of block moves over the blocks with a member in `dirty` (all
/// when it is empty); returns how many were made.
int block_sweep(PlanWalker &w, const PairwiseProblem &p,
                const std::vector<std::vector<int>> &blocks, const std::vector<char> &dirty,
                double deadline) {
  int made = 0;
  PlanWalker::Move move, best;
  for (const std::vector<int> &block : blocks) {
    if (process_cpu_seconds() > deadline) break;
    if (!dirty.empty() && std::none_of(block.begin(), block.end(),
                                       [&](int v) { return dirty[static_cast<size_t>(v)] != 0; }))
      continue;
    const auto anchor = static_cast<size_t>(block.front());
    const int from = w.at(anchor);
    double best_change = 0;
    best.clear();
    for (size_t a = 0; a < p.unary[anchor].size(); ++a) {
      if (static_cast<int>(a) == from) continue;
      // The anchor at a, then each member at its cheapest given those set
      // before it (twice over, so the first members see the last ones).
      move.clear();
      std::vector<int> keep(block.size());
      for (size_t i = 0; i < block.size(); ++i) keep[i] = w.at(static_cast<size_t>(block[i]));
      w.set(anchor, static_cast<int>(a));
      for (int sweep = 0; sweep < 2; ++sweep)
        for (size_t i = 1; i < block.size(); ++i) {
          const auto v = static_cast<size_t>(block[i]);
          w.set(v, w.cheapest(v));
        }
      for (size_t i = 0; i < block.size(); ++i) {
        const auto v = static_cast<size_t>(block[i]);
        if (w.at(v) != keep[i]) move.push_back({v, w.at(v)});
        w.set(v, keep[i]);
      }
      const double c = w.change(move);
      if (std::isfinite(c) && c < best_change - 1e-12 * std::abs(best_change) && w.fits(move)) {
        best_change = c;
        best = move;
      }
    }
    if (!best.empty()) {
      w.make(best);
      ++made;
    }
  }
  return made;
}

}  // namespace

BlockSearchResult block_search(const PairwiseProblem &p, const MemoryModel &memory,
                               const std::vector<std::vector<int>> &blocks, std::vector<int> start,
                               const BlockSearchOptions &options) {
  const double deadline = process_cpu_seconds() + options.time_limit_s;
  BlockSearchResult out;
  out.start_objective = objective(p, start);
  // Only blocks whose first node has a choice and that hold another node
  // with one (a lone node is local_search_within's move).
  std::vector<std::vector<int>> useful;
  for (const std::vector<int> &block : blocks) {
    if (block.empty() || p.unary[static_cast<size_t>(block.front())].size() < 2) continue;
    std::vector<int> members;
    for (int v : block)
      if (p.unary[static_cast<size_t>(v)].size() > 1 &&
          std::find(members.begin(), members.end(), v) == members.end())
        members.push_back(v);
    if (members.size() > 1) useful.push_back(std::move(members));
  }
  Elimination best{start, out.start_objective, 0};
  PlanWalker w(p, memory, start);
  // After the first sweep, only the blocks next to a node the last
  // local_search_within moved can have a new move.
  std::vector<char> dirty;
  for (int round = 0; round < options.max_rounds && !useful.empty(); ++round) {
    if (process_cpu_seconds() > deadline) break;
    const int made = block_sweep(w, p, useful, dirty, deadline);
    out.block_moves += made;
    ++out.rounds;
    if (made == 0 && round > 0) break;
    Elimination e = local_search_within(p, memory, w.choice());
    const double before = best.objective;
    if (e.objective < best.objective && memory.fits(e.choice)) best = e;
    if (before - best.objective <= options.min_gain * std::abs(before)) break;
    // The walker to the best plan, by the nodes that differ (its running
    // sums updated, not recounted: a full count of the memory model costs
    // about as much as a sweep at 1,000 ops).
    dirty.assign(p.unary.size(), 0);
    PlanWalker::Move to_best;
    for (size_t v = 0; v < p.unary.size(); ++v)
      if (best.choice[v] != w.at(v)) {
        w.mark_around(v, dirty);
        to_best.push_back({v, best.choice[v]});
      }
    w.make(to_best);
  }
  // `best` is the start (which fits) or a plan memory.fits() accepted.
  out.plan = std::move(best);
  return out;
}

}  // namespace spmd::sharding
