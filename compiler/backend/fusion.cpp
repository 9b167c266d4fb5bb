// backend/fusion.cpp — the elementwise fusion plan shared by the CPU and CUDA emitters.
//
// One pass over the instructions with at most one open group (see fusion.h for
// the rules); a second pass over the finished groups computes their inputs and
// outputs and which scalar constants need no tensor at all.
#include "backend/fusion.h"

// A missing case is an error for this file whatever the build flags.
#pragma GCC diagnostic error "-Wswitch"

#include <algorithm>

namespace spmd::backend {

bool is_fusable(OpCode op) {
  switch (op_kind(op)) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical:
    case OpKind::Select:
      return true;
    case OpKind::Creation:
    case OpKind::Reduce:
    case OpKind::Contraction:
    case OpKind::Layout:
    case OpKind::Collective:
    case OpKind::Call:
    case OpKind::Control:
      return false;
  }
  return false;
}

FusionPlan plan_fusion(const ir::Function &f) {
  const size_t n = f.body.size();
  FusionPlan plan;
  plan.group_of_instr.assign(n, -1);
  plan.folded_constant.assign(n, false);

  std::vector<int> def(f.values.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId r : f.body[i].results) def[r] = static_cast<int>(i);

  int open = -1;
  auto close = [&] {
    if (open >= 0) plan.steps.push_back({true, static_cast<size_t>(open)});
    open = -1;
  };
  auto reads_open_group = [&](const ir::Instr &in) {
    if (open < 0) return false;
    return std::any_of(in.operands.begin(), in.operands.end(), [&](ir::ValueId v) {
      return def[v] >= 0 && plan.group_of_instr[def[v]] == open;
    });
  };

  for (size_t i = 0; i < n; ++i) {
    const ir::Instr &in = f.body[i];
    if (is_fusable(in.op) && in.results.size() == 1) {
      const Shape &shape = f.type(in.results[0]).shape;
      if (open < 0 || plan.groups[open].shape != shape) {
        close();
        plan.groups.push_back({});
        plan.groups.back().shape = shape;
        open = static_cast<int>(plan.groups.size()) - 1;
      }
      plan.groups[open].members.push_back(i);
      plan.group_of_instr[i] = open;
      continue;
    }
    if (reads_open_group(in)) close();
    plan.steps.push_back({false, i});
  }
  close();

  // Uses of every value: by which group (or -2 for a non-group instruction / return).
  std::vector<std::vector<int>> users(f.values.size());
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId v : f.body[i].operands) users[v].push_back(plan.group_of_instr[i]);
  for (ir::ValueId v : f.returns) users[v].push_back(-2);
  auto is_scalar_constant = [&](ir::ValueId v) {
    return def[v] >= 0 && f.body[def[v]].op == OpCode::Constant;
  };

  for (size_t g = 0; g < plan.groups.size(); ++g) {
    FusedGroup &group = plan.groups[g];
    for (size_t i : group.members) {
      for (ir::ValueId v : f.body[i].operands) {
        const bool internal = def[v] >= 0 && plan.group_of_instr[def[v]] == static_cast<int>(g);
        if (internal || is_scalar_constant(v)) continue;
        if (std::find(group.inputs.begin(), group.inputs.end(), v) == group.inputs.end())
          group.inputs.push_back(v);
      }
      for (ir::ValueId r : f.body[i].results) {
        const auto &u = users[r];
        if (std::any_of(u.begin(), u.end(), [&](int user) { return user != static_cast<int>(g); }))
          group.outputs.push_back(r);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (f.body[i].op != OpCode::Constant) continue;
    const auto &u = users[f.body[i].results[0]];
    plan.folded_constant[i] =
        !u.empty() && std::all_of(u.begin(), u.end(), [](int user) { return user >= 0; });
  }
  return plan;
}

}  // namespace spmd::backend
