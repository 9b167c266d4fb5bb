// transforms/dce.cpp — see dce.h. Everything in the IR is pure, so an
// instruction is live exactly when one of its results is.
#include "transforms/dce.h"

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
