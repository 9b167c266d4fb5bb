// sharding/problem.h — a sharded function prepared for choosing its shardings.
//
// make_problem flattens a `sharded` function (calls inlined, loops unrolled
// except the top-level ones, simplified), looks up the sharding rule of every
// instruction and
// lists its strategies, the candidate shardings of every parameter and
// result (the written spec, or every layout for `auto`), and who uses each
// value. A Plan picks one strategy per instruction and one sharding per
// parameter and result; propagation (propagate.h) and the ILP (auto_shard.h)
// produce plans, evaluate() prices them, and lower_plan.h turns one into a
// shmap. Constants (creation ops) are not chosen: each use makes the
// constant in the sharding it needs, locally.
//
// A top-level loop stays a loop: its body's instructions are listed once
// (one strategy each, for every iteration) and each carried value becomes a
// *carry* instruction — operands (initial value, next value), results (the
// body's parameter, the loop's result), one strategy per layout — so a
// carried value keeps one layout across iterations, and the loop index a
// replicated *index* instruction. Costs inside the loop count once per
// iteration (Problem::weight, use_weight); a value from before the loop is
// resharded once, before it (lower_plan hoists it).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "ir/ir.h"
#include "sharding/connect.h"
#include "sharding/strategy.h"
#include "support/diagnostics.h"

namespace spmd::sharding {

/// One use of a value: operand `operand` of instruction `instr`, or (instr ==
/// kReturn) result `operand` of the function.
struct Use {
  static constexpr int kReturn = -1;
  int instr = kReturn;
  int operand = 0;
};

/// A loop kept as a loop (see above): its instructions are
/// [index, first_carry, ..., body_begin, ..., body_end).
struct ProblemLoop {
  ir::Instr loop;  // the flattened `for` (its region's params and yields; body moved out)
  int64_t trips = 0;
  int index = -1;  // the instruction defining the loop index
  int first_carry = -1;
  int body_begin = -1, body_end = -1;
  int num_carries() const { return body_begin - first_carry; }
};

struct Problem {
  const ir::Module *module = nullptr;
  ir::Function flat;  // the sharded function: flat, simplified
  rt::Mesh mesh;
  HardwareProfile profile;
  std::vector<OpSignature> ops;                   // per instruction of flat.body
  std::vector<std::vector<Strategy>> strategies;  // per instruction (empty: creation op)
  /// Per value: the instruction that defines it, or -(k + 1) for parameter k.
  std::vector<int> producer;
  std::vector<int> producer_result;  // which result of that instruction
  std::vector<std::vector<Use>> uses;
  std::vector<std::vector<Sharding>> param_candidates;   // written: one; auto: all layouts
  std::vector<std::vector<Sharding>> result_candidates;  // likewise
  std::unique_ptr<Connector> connector;
  /// Some op's strategies or some `auto` value's layouts reached
  /// StrategyOptions::max_candidates (sharding/budget.h): not all were listed.
  size_t candidates_capped_at = 0;

  /// Per value of `flat`: its MemoryKind (sharding/memory_kinds.h), set by
  /// the first evaluate().
  std::vector<uint8_t> memory_kinds;
  /// Per instruction and strategy: consumer_varying(...).bits(), set by the
  /// first evaluate() or reshard_seconds().
  std::vector<std::vector<uint64_t>> varying_bits;
  /// live_values(*this) without a plan (the search's memory rows), set by
  /// the first evaluate() or memory_rows().
  std::optional<std::vector<std::vector<ir::ValueId>>> row_points;
  /// Per instruction and strategy: scratch_bytes(), or -1 until
  /// cached_scratch_bytes() computes it (the strategies listed then).
  std::vector<std::vector<double>> scratch;

  std::vector<ProblemLoop> loops;
  std::vector<int> loop_of;  // per instruction: its loop (index into loops), or -1

  bool is_creation(int instr) const;
  /// The loop whose carry (or index) instruction `instr` is, or nullptr.
  const ProblemLoop *carry_loop(int instr) const;
  /// How many times instruction `instr` runs: its loop's trip count, or 1.
  double weight(int instr) const;
  /// How many times value `v` is resharded for `use`: the loop's trip count
  /// when both are in one loop (the next value of a carry included), else 1
  /// (a value from before a loop is resharded once, before it).
  double use_weight(ir::ValueId v, Use use) const;
  bool is_param(ir::ValueId v) const { return producer[static_cast<size_t>(v)] < 0; }
  const Type &type(ir::ValueId v) const { return flat.type(v); }
};

/// True when `function` (a sharded function of `module`), flattened for
/// sharding (its calls inlined, the loops inside its top-level loops
/// unrolled; a top-level loop counts its body once), has at most
/// kMaxShardedInstructions instructions; otherwise reports
/// `program-too-large` at the loop (or call) that makes it too large.
bool check_problem_size(const ir::Module &module, const ir::Function &function,
                        DiagnosticEngine &diags);

/// Prepares shmap-to-be `function` (a sharded function of `module`; check
/// its size with check_problem_size first). With `options.deadline`, throws
/// OutOfTime once it passes.
Problem make_problem(const ir::Module &module, const ir::Function &function,
                     const HardwareProfile &profile, const StrategyOptions &options = {});

struct Plan {
  std::vector<Sharding> params;   // per parameter (complete)
  std::vector<Sharding> results;  // per result (complete)
  std::vector<int> choice;        // per instruction: index into strategies; -1 for constants
};

/// The sharding value `v` has in `plan` (its producer's result), or nullopt
/// for a constant (made at each use in the sharding the use needs).
std::optional<Sharding> value_sharding(const Problem &p, const Plan &plan, ir::ValueId v);
/// What `use` needs of its value in `plan`.
Sharding requirement(const Problem &p, const Plan &plan, Use use);
/// The value a use reads.
ir::ValueId used_value(const Problem &p, Use use);
/// The axes instruction `instr` varies along under its strategy `strategy`
/// (a carry: its layout's split axes), as lower_plan passes them to
/// emit_reshard for its operands.
AxisSet consumer_varying(const Problem &p, int instr, int strategy);
/// lower_plan makes one reshard per distinct (value, needed sharding, axes
/// its consumer varies along) — a result's: its layout's split axes — at the
/// weight of where it runs (Problem::use_weight): the search and evaluate()
/// both price each key once.
using ReshardKey = std::pair<Sharding, uint64_t>;
ReshardKey reshard_key(const Problem &p, const Plan &plan, Use use);
/// Fills p.varying_bits.
void fill_varying_bits(Problem &p);

/// Calls f(need, use) once per distinct ReshardKey the uses of value v need
/// under `plan` (with the first use needing it) whose layout is not `have`,
/// v's own: the reshards evaluate() prices. `need` refers into `plan` (a
/// result's) or p.strategies (an operand's).
template <typename F>
void for_each_reshard(Problem &p, const Plan &plan, ir::ValueId v, const Sharding &have, F &&f) {
  if (p.varying_bits.empty()) fill_varying_bits(p);
  // A value has few distinct keys: a linear search beats a tree of layouts.
  std::vector<std::pair<const Sharding *, uint64_t>> done;
  for (const Use &u : p.uses[static_cast<size_t>(v)]) {
    const Sharding *need = nullptr;
    uint64_t varying = 0;
    if (u.instr == Use::kReturn) {
      need = &plan.results.at(static_cast<size_t>(u.operand));
      varying = need->split_axes().bits();
    } else {
      const int s = plan.choice.at(static_cast<size_t>(u.instr));
      need = &p.strategies[static_cast<size_t>(u.instr)][static_cast<size_t>(s)].operands.at(
          static_cast<size_t>(u.operand));
      varying = p.varying_bits[static_cast<size_t>(u.instr)][static_cast<size_t>(s)];
    }
    if (*need == have) continue;
    bool seen = false;
    for (const auto &d : done) seen = seen || (d.second == varying && *d.first == *need);
    if (seen) continue;
    done.push_back({need, varying});
    f(*need, u);
  }
}

/// What value v's reshards cost under `plan` (seconds), as evaluate() counts
/// them: each ReshardKey once, at the weight of where it runs; infinite when
/// one is impossible; 0 for a constant. evaluate()'s reshard_s is the sum
/// over the values (sharding/polish.h prices moves by it).
double reshard_seconds(Problem &p, const Plan &plan, ir::ValueId v);

/// The estimate of a plan, per device, in the cost model of analysis/cost.h.
struct PlanCost {
  double compute_s = 0;  // the local ops
  double finish_s = 0;   // pmax/pmin right after split max/min
  double reshard_s = 0;  // the collectives between ops (each ReshardKey of a value once)
  double reshard_bytes = 0;
  int64_t collectives = 0;  // collectives run (inside a loop: once per iteration)
  double param_bytes = 0;   // the parameters' blocks
  /// Parameters + the most bytes live at once (docs/sharding.md, "Memory"):
  /// the values, fused as the backends fuse the blocks, array constants,
  /// reshape views sharing their operand's buffer, the resharded copies
  /// (each made just before its first reader) and einsum scratch. The
  /// estimate, and what --memory-per-device bounds.
  double peak_bytes = 0;
  /// Parameters + the most bytes live at once as the search's memory rows
  /// count them (live_values without a plan: fused by global shapes, views
  /// as values of their own, no resharded copies; array constants and
  /// einsum scratch as peak_bytes counts them). The search bounds this by
  /// its rows' limit, which it lowers while peak_bytes is over
  /// --memory-per-device (auto_shard.h).
  double row_bytes = 0;
  /// peak_bytes by kind of value, indexed by MemoryKind (sharding/memory_kinds.h):
  /// parameters, optimizer state, gradients, saved activations, inputs, temporaries.
  std::array<double, 6> peak_by_kind{};
  double total_s() const { return compute_s + finish_s + reshard_s; }
};
PlanCost evaluate(Problem &p, const Plan &plan);

/// What instruction `instr` allocates beyond its result while it runs under
/// its strategy `strategy`: an einsum's operands copied into the gemm's
/// order and its product before the transpose into the output's
/// (rt::einsum_scratch_bytes, the runtime's own count); 0 for other ops.
double scratch_bytes(const Problem &p, int instr, int strategy);
/// scratch_bytes(), each computed once (Problem::scratch).
double cached_scratch_bytes(Problem &p, int instr, int strategy);

/// Per program point (after each instruction), the values live there that
/// an instruction defines (parameters are live everywhere and not listed;
/// an array constant is, from where it is made, in the layout its first use
/// needs; a scalar one is folded into the loops that read it).
/// A value the backends keep in registers is not listed: the result of an
/// elementwise op whose every reader is an elementwise op of the same shape
/// in the same loop (fused into one loop with it, analysis/fusion.h). Ops
/// fuse when their results' shapes agree: the blocks' under `plan` (as the
/// backends see the shmap), the global shapes without one (the search's
/// memory rows, which hold for every plan).
std::vector<std::vector<ir::ValueId>> live_values(const Problem &p, const Plan *plan = nullptr);
/// live_values(p) without a plan, computed once (Problem::row_points).
const std::vector<std::vector<ir::ValueId>> &memory_rows(Problem &p);

}  // namespace spmd::sharding
