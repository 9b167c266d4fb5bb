// sharding/block_search.h — moves that change a parameter with everything tied to it.
//
// Under a memory limit the training step's good plans differ from the poor
// ones in coordinated changes: FSDP stores a weight split, and then its
// `like` result, its optimizer update and the reduction of its gradient
// (psum_scatter instead of psum) must be split with it, or the cost between
// them hides the gain. local_search_within (pairwise.h) moves one node and
// its neighbours; the update sits between the weight and the gradient, so
// the gradient's reduction is two steps away and never moves with the
// weight. This pass:
//
//   1. find_blocks(): per `auto` parameter with a choice and an update
//      chain, the instructions tied to it — the ops that read it (the
//      forward matmul, the backward one by its transpose) with the
//      elementwise ops on their results (the activation, its derivative);
//      the elementwise ops that read it (its update chain, whose last value
//      is the `like` result, tied to the parameter's node already); and
//      backwards from their other operands through elementwise ops (the
//      learning rate's product, the momentum) the op that makes the
//      gradient (its reduction is that op's or the next elementwise op's
//      choice), with the parameters met on the way (optimizer state).
//   2. block_search(): on the pairwise problem (after reduce.h, the blocks'
//      nodes mapped onto the reduced nodes), for each block and each
//      candidate of its first node (the parameter's), the move that sets the
//      first node to it and every other member, in order (twice over), to its cheapest
//      candidate given the members set before it and the rest of the plan —
//      one consistent choice of the whole block. The cheapest move of a block
//      that keeps the plan within the limit is made when it improves the
//      plan; the changes are priced incrementally (the pairs of the moved
//      nodes; the memory sums they are in). A sweep of the block moves
//      alternates with local_search_within until a round improves the plan
//      by less than `min_gain` (relative), or the time runs out; after the
//      first sweep, only the blocks next to a node local_search_within
//      moved are tried again.
//
// auto_shard.h runs it on the relaxation's best plan under a memory limit,
// before CBC, which then starts from the result (CBC's initial solution).
#pragma once

#include <vector>

#include "sharding/pairwise.h"
#include "sharding/problem.h"
#include "sharding/reduce.h"

namespace spmd::sharding {

/// The instructions of `p.flat` tied to parameter `param` (see above).
struct ParamBlock {
  int param = 0;
  std::vector<int> params;  // other parameters in the block (optimizer state)
  /// In order: the ops reading the parameter and their elementwise
  /// followers, the update chain, then back to the gradient's op.
  std::vector<int> instrs;
};

/// A block for every parameter of `p` with more than one candidate that has
/// an update chain (an elementwise op reading it).
std::vector<ParamBlock> find_blocks(const Problem &p);

/// Per node of the problem `r` was reduced from, the reduced node that
/// decides it (whose candidates stand for its candidates), or -1 (removed:
/// fixed, or minimised out between its neighbours).
std::vector<int> reduced_node_of(const Reduced &r);

struct BlockSearchOptions {
  double min_gain = 1e-3;  // stop when a round improves the plan by less (relative)
  int max_rounds = 10;
  double time_limit_s = 10;  // CPU time
};

struct BlockSearchResult {
  Elimination plan;     // fits the limit; no worse than the start
  int rounds = 0;       // block sweeps run
  int block_moves = 0;  // block moves made
  double start_objective = 0;
};

/// From `start` (which fits `memory`), block moves over `blocks` (each a
/// list of nodes of `p`, the parameter's first) and local_search_within's
/// moves in turn, as above.
BlockSearchResult block_search(const PairwiseProblem &p, const MemoryModel &memory,
                               const std::vector<std::vector<int>> &blocks, std::vector<int> start,
                               const BlockSearchOptions &options = {});

}  // namespace spmd::sharding
