// transforms/dce.cpp — see dce.h. Everything in the IR is pure, so an
// instruction is live exactly when one of its results is (and a combined
// psum((a, b), axes) keeps only its live components).
#include "transforms/dce.h"

#include "ops/variance_rules.h"

namespace spmd {
namespace {

/// Marks, walking backwards, the instructions of `body` that are live.
void sweep(std::vector<ir::Instr> &body, std::vector<bool> &live) {
  std::vector<bool> keep(body.size(), false);
  for (size_t i = body.size(); i-- > 0;) {
    ir::Instr &in = body[i];
    bool used = false;
    for (auto r : in.results) used = used || live[r];
    if (!used) continue;
    keep[i] = true;
    if (is_combinable_reduce(in.op) && in.operands.size() > 1) {
      // psum((a, b), axes): drop the components whose result is dead.
      std::vector<ir::ValueId> operands, results;
      for (size_t k = 0; k < in.results.size(); ++k) {
        if (!live[in.results[k]]) continue;
        operands.push_back(in.operands[k]);
        results.push_back(in.results[k]);
      }
      in.operands = std::move(operands);
      in.results = std::move(results);
    }
    for (auto o : in.operands) live[o] = true;
    for (auto &region : in.regions) {
      for (auto y : region.yields) live[y] = true;
      sweep(region.body, live);
    }
  }
  std::vector<ir::Instr> out;
  for (size_t i = 0; i < body.size(); ++i)
    if (keep[i]) out.push_back(std::move(body[i]));
  body = std::move(out);
}

}  // namespace

void eliminate_dead_code(ir::Function &f) {
  std::vector<bool> live(f.values.size(), false);
  for (auto r : f.returns) live[r] = true;
  sweep(f.body, live);
}

}  // namespace spmd
