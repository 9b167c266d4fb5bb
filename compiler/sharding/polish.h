// sharding/polish.h — the search's plan improved by moves priced by evaluate()'s own sum.
//
// The search's objective is evaluate()'s total only while every reshard
// several consumers can share has its copy node (auto_shard.cpp, "One
// objective"); past AutoOptions::max_copy_nodes those reshards are priced
// once per consumer group, an upper bound, and the solvers' best plan by
// that bound need not be the best by evaluate(). polish() walks a plan of
// the search's nodes (a root with the ops that follow it and the results
// tied to it) by moves priced by evaluate()'s sum — the ops' compute and
// finish, and each ReshardKey of a value once (reshard_seconds, problem.h) —
// accepting a move when that total drops and the memory model (the
// search's rows) still fits:
//
//   - one node to its cheapest candidate given the rest of the plan, every
//     node in order, then only the nodes next to one that moved (they share
//     a value with it);
//   - the readers of a value (at most kMaxReaders nodes) onto one layout of
//     it: for each layout two of them can need that costs a reshard from
//     the value's own (at most kMaxLayouts), each reader to its cheapest
//     candidate needing it, then each to its cheapest — one reshard then
//     serves them all, which a move of one reader alone never sees
//     (per-consumer pricing overprices exactly this); a layout is skipped
//     when the readers' own costs rise by more than all the reshards
//     around them cost;
//   - block moves as block_search.h makes them (a parameter's node to each
//     of its candidates, then every other member of its block to its
//     cheapest given those set before it, twice over), of the blocks with a
//     node the other moves moved (block_search swept them all already);
//
// in rounds until one moves nothing or gains less than `min_gain`
// (relative), `max_rounds` have run, or the time is spent. A move re-prices only the values its
// nodes produce or read (their reshards, with every use of each), so a
// sweep costs about what evaluate() costs per candidate tried.
#pragma once

#include <vector>

#include "sharding/pairwise.h"
#include "sharding/problem.h"

namespace spmd::sharding {

/// One node of the search: what each of its candidates sets in a Plan.
struct PolishNode {
  struct Member {
    enum class Kind { Param, Op, Result };
    Kind kind = Kind::Op;
    int index = 0;        // parameter k, instruction i or result k
    std::vector<int> at;  // per candidate: layout (parameter, result) or strategy (op)
  };
  std::vector<Member> members;  // none: a node that sets nothing (a copy node)
  size_t candidates = 1;
};

struct PolishOptions {
  double time_limit_s = 1;  // CPU time
  int max_rounds = 10;
  double min_gain = 1e-4;  // stop when a round improves the plan by less (relative)
};

struct PolishResult {
  std::vector<int> choice;  // per node: fits the memory model when `start` did
  double start_s = 0;       // evaluate()'s total of the start and of the result
  double total_s = 0;
  int moves = 0;         // single-node moves made
  int shared_moves = 0;  // moves of a value's readers onto one layout
  int block_moves = 0;   // block moves made
  int rounds = 0;
};

/// The plan a choice of every node of `nodes` makes (creation ops: -1).
Plan plan_of(const Problem &p, const std::vector<PolishNode> &nodes,
             const std::vector<int> &choice);

/// evaluate(p, plan).total_s(), summed as polish() sums it (per instruction,
/// then per value): equal up to rounding.
double plan_seconds(Problem &p, const Plan &plan);

/// From `start` (a choice of every node that fits `memory`, when given:
/// indexed by the same nodes), the moves above. `blocks`: lists of nodes,
/// the parameter's first.
PolishResult polish(Problem &p, const std::vector<PolishNode> &nodes, const MemoryModel *memory,
                    const std::vector<std::vector<int>> &blocks, std::vector<int> start,
                    const PolishOptions &options = {});

}  // namespace spmd::sharding
