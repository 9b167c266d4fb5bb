// ir/loops.h — facts about `for` loops shared by every phase that meets them.
//
// A loop is one `For` instruction (ops.def): `range(start, stop, step)` in its
// attributes, the initial carried values as operands, one region whose
// parameters are (k, carried...) and whose yields are the next carried values,
// and the final carried values as results. Its body may read any value defined
// before the loop (a captured value); nothing defined inside is visible after
// it. These helpers count iterations and find what a body captures.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "ir/value_map.h"

namespace spmd::ir {

/// The most iterations a loop marked [[unroll]] may have.
inline constexpr int64_t kMaxUnrolledIterations = 4096;

/// Iterations of `range(start, stop, step)` (Python semantics; 0 when step is 0).
int64_t trip_count(int64_t start, int64_t stop, int64_t step);
inline int64_t trip_count(const Attrs &loop) {
  return trip_count(loop.loop().start, loop.loop().stop, loop.loop().step);
}
/// The loop index at iteration `n` (0-based).
inline int64_t loop_index_at(const Attrs &loop, int64_t n) {
  return loop.loop().start + n * loop.loop().step;
}

/// The values a block reads that it does not define (nested regions included,
/// their parameters counting as defined), in first-use order.
std::vector<ValueId> captured_values(const std::vector<Instr> &body,
                                     const std::vector<ValueId> &params,
                                     const std::vector<ValueId> &yields);
inline std::vector<ValueId> captured_values(const Region &region) {
  return captured_values(region.body, region.params, region.yields);
}

/// The last uses within one block (a function body or a loop body), for the
/// interpreter's and the backends' lifetime decisions. Instructions run at
/// positions (`position[i]`, default i); several may share one (a fused group
/// runs its members together, at the group's place).
struct BlockUses {
  static constexpr int kUnused = -1;  // defined, never read
  static constexpr int kKept = -2;    // a kept value of the block: never dies inside it
  /// For each value the block defines (its parameters, its instructions'
  /// results): the last position reading it, where reads inside a nested
  /// loop count as reads by that loop. Values defined outside the block are
  /// not listed: the block that defines them decides.
  std::unordered_map<ValueId, int> last;
  /// Per instruction, per operand: the value's last read in the block, the
  /// only one at this position, and not read by the instruction's regions —
  /// the instruction may take the value over (update it in place).
  std::vector<std::vector<bool>> takes_over;
};
/// `kept` are the block's results: a function's returns or a loop's next values.
BlockUses block_uses(const std::vector<Instr> &body, const std::vector<ValueId> &params,
                     const std::vector<ValueId> &kept, const std::vector<int> &position = {});

/// Replaces every use of `from` by `to` in `body` (nested regions included)
/// and in `yields`.
void replace_uses(std::vector<Instr> &body, std::vector<ValueId> &yields, ValueId from, ValueId to);

/// Reads every operand and next value of `body` (nested regions included)
/// through `map`: a value with an entry is replaced by it.
void remap_uses(std::vector<Instr> &body, std::vector<ValueId> &yields,
                const ValueMap<ValueId> &map);

/// Appends a copy of `in` (its regions included) to `out`: operands are read
/// through `map`, and every value `in` defines (results, region parameters,
/// values inside its regions) gets a new id in `f`, recorded in `map`.
void clone_instr(Function &f, const Instr &in, ValueMap<ValueId> &map, std::vector<Instr> &out);

/// Removes carried value `k` of `loop` (operand, parameter k + 1, next value
/// and result); the caller has replaced every use of its parameter and result.
void erase_carry(Instr &loop, size_t k);

/// The instructions `body` becomes once the loops `unrolls` selects are
/// unrolled (an iteration costs its body plus the index constant; a loop kept
/// costs itself plus its body once) and each call is counted as
/// `call_size(callee)` (1 when empty). Saturates at INT64_MAX. The limit on it
/// is kMaxUnrolledInstructions (support/limits.h, docs/limits.md).
int64_t unrolled_size(const std::vector<Instr> &body,
                      const std::function<bool(const Instr &)> &unrolls,
                      const std::function<int64_t(int)> &call_size = {});

/// True when any instruction of `body` (nested regions included) is a loop.
bool has_loop(const std::vector<Instr> &body);

/// True when `in` is an effect (print) or a loop whose body holds one: passes
/// keep it whether or not its results are used, never merge, hoist or reorder
/// it across another, and run it as often as the program says.
bool has_effect(const Instr &in);

/// Calls `fn(instr)` for every instruction of `body`, nested regions included,
/// outer instructions before the ones in their regions.
template <typename Body, typename Fn>
void for_each_instr(Body &body, Fn &&fn) {
  for (auto &in : body) {
    fn(in);
    for (auto &r : in.regions) for_each_instr(r.body, fn);
  }
}

}  // namespace spmd::ir
