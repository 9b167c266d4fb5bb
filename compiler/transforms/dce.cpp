// transforms/dce.cpp — see dce.h. Everything in the IR is pure but print, so an
// instruction is live exactly when one of its results is, or it is a print or
// a loop holding one (ir::has_effect; calls count as pure: DCE runs after
// inlining, and before it only on constants' copies) (and a combined
// collective, psum((a, b), axes) or all_gather((a, b), axes), keeps only its
// live components); a loop's carried value is live when its result is, or
// when the live part of the body reads its parameter (found by a fixpoint,
// since the body feeds itself).
#include "transforms/dce.h"

#include "ir/loops.h"
#include "ops/variance_rules.h"

namespace spmd {
namespace {

class DeadCode {
 public:
  explicit DeadCode(ir::Function &f) : live_(f.values.size(), false) {
    for (auto r : f.returns) live_[r] = true;
  }

  /// Marks, walking backwards, what `body` needs for the values already live;
  /// decides which carries of each loop are live. Repeating it changes nothing.
  void mark(const std::vector<ir::Instr> &body) {
    for (size_t i = body.size(); i-- > 0;) {
      const ir::Instr &in = body[i];
      bool used = ir::has_effect(in);
      for (auto r : in.results) used = used || live_[r];
      if (!used) continue;
      if (in.op == OpCode::For) {
        mark_loop(in);
        continue;
      }
      const bool combined = is_combinable_collective(in.op) && in.operands.size() > 1;
      for (size_t k = 0; k < in.operands.size(); ++k)  // combined: only live components
        if (!combined || live_[in.results[k]]) live_[in.operands[k]] = true;
      for (const auto &region : in.regions) {
        for (auto y : region.yields) live_[y] = true;
        mark(region.body);
      }
    }
  }

  /// Removes what mark() left dead, carries included.
  /// In place: the kept instructions move down over the dropped ones.
  void sweep(std::vector<ir::Instr> &body) {
    size_t kept = 0;
    for (ir::Instr &in : body) {
      bool used = ir::has_effect(in);
      for (auto r : in.results) used = used || live_[r];
      if (!used) continue;
      if (in.op == OpCode::For) drop_dead_carries(in);
      if (is_combinable_collective(in.op) && in.operands.size() > 1) {
        // psum((a, b), axes), all_gather((a, b), ...): drop the dead components.
        std::vector<ir::ValueId> operands, results;
        for (size_t k = 0; k < in.results.size(); ++k) {
          if (!live_[in.results[k]]) continue;
          operands.push_back(in.operands[k]);
          results.push_back(in.results[k]);
        }
        in.operands = std::move(operands);
        in.results = std::move(results);
      }
      for (auto &region : in.regions) sweep(region.body);
      if (&body[kept] != &in) body[kept] = std::move(in);
      ++kept;
    }
    body.erase(body.begin() + static_cast<std::ptrdiff_t>(kept), body.end());
  }

 private:
  void mark_loop(const ir::Instr &loop) {
    const ir::Region &r = loop.regions.at(0);
    for (;;) {
      for (size_t k = 0; k < loop.results.size(); ++k)
        if (live_[loop.results[k]] || live_[r.params[k + 1]])
          live_[loop.results[k]] = live_[r.params[k + 1]] = live_[r.yields[k]] = true;
      mark(r.body);
      // The body may now read a parameter whose carry was dead: go again.
      bool changed = false;
      for (size_t k = 0; k < loop.results.size(); ++k)
        changed = changed || (live_[r.params[k + 1]] && !live_[loop.results[k]]);
      if (!changed) break;
    }
    for (size_t k = 0; k < loop.results.size(); ++k)
      if (live_[loop.results[k]]) live_[loop.operands[k]] = true;
  }

  void drop_dead_carries(ir::Instr &loop) {
    ir::Region &r = loop.regions.at(0);
    size_t kept = 0;
    for (size_t k = 0; k < loop.results.size(); ++k) {
      if (!live_[loop.results[k]]) continue;
      loop.operands[kept] = loop.operands[k];
      loop.results[kept] = loop.results[k];
      r.params[kept + 1] = r.params[k + 1];
      r.yields[kept] = r.yields[k];
      ++kept;
    }
    loop.operands.resize(kept);
    loop.results.resize(kept);
    r.params.resize(kept + 1);
    r.yields.resize(kept);
  }

  std::vector<bool> live_;
};

}  // namespace

void eliminate_dead_code(ir::Function &f) {
  DeadCode dce(f);
  dce.mark(f.body);
  dce.sweep(f.body);
}

}  // namespace spmd
