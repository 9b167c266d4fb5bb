// analysis/stats.h — what a function communicates, per device.
//
// collective_stats counts the collectives a function runs (calls included, as
// if inlined; a collective inside a loop once per iteration) and the bytes
// they move. For each collective, `size` follows
// nccl-tests' convention for the buffer size (all-reduce: the array; all-gather:
// the gathered output; reduce-scatter and all-to-all: the input; permute: the
// array) and `moved` is what one device sends over the network:
// all-reduce 2(n-1)/n size, all-gather/reduce-scatter/all-to-all (n-1)/n size,
// permute size (for devices that send). pbroadcast, pscatter and axis_index
// appear with zero bytes: they are collectives of the type system that need no
// communication.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spmd {

struct CollectiveStat {
  int64_t count = 0;       // collectives run (a combined psum((a, b), axes) is one)
  int64_t values = 0;      // tensors they carry (psum((a, b), axes) carries two)
  double size_bytes = 0;   // summed over occurrences
  double moved_bytes = 0;  // summed over occurrences
};

struct FunctionStats {
  std::map<std::string, CollectiveStat> by_op;  // op spelling -> totals
  double total_moved_bytes() const;
  int64_t communicating_count() const;  // collectives that move data
};

/// One collective in a function's body (calls expanded, in program order):
/// what one run of it moves per device, and how often it runs per call of the
/// function (its loops' trip counts multiplied).
struct CollectiveEvent {
  std::string op;             // spelling: "psum", "all_gather", ...
  std::string axes;           // `i` / `(i, j)`
  std::vector<int> axis_ids;  // the same axes, as indices into the mesh
  std::string operand_types;  // `f32[8, 4]{i}`, comma-separated
  double size_bytes = 0, moved_bytes = 0;
  int64_t values = 1;  // tensors it carries
  int64_t times = 1;   // runs per call (saturating)
  SourceSpan span;
};

std::vector<CollectiveEvent> collective_events(const ir::Module &module,
                                               const ir::Function &function);

FunctionStats collective_stats(const ir::Module &module, const ir::Function &function);

/// One collective's traffic under the convention above.
struct CollectiveTraffic {
  double size_bytes = 0;   // nccl-tests buffer size
  double moved_bytes = 0;  // what one device sends
};
/// The traffic of `op` over `n` devices whose (local) operand and result hold
/// `operand_bytes` and `result_bytes`; `permutes` says whether a ppermute
/// sends anything (a permutation that maps every rank to itself does not).
CollectiveTraffic collective_traffic(OpCode op, double n, double operand_bytes, double result_bytes,
                                     bool permutes = true);

/// A readable table of the stats of every shmap in the module, or with
/// `only` >= 0 of the function of that index alone.
std::string format_stats(const ir::Module &module, int only = -1);

}  // namespace spmd
