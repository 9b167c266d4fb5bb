// analysis/fusion.cpp — the elementwise fusion plan shared by the CPU and CUDA emitters.
//
// One pass over the instructions with at most one open group (see fusion.h for
// the rules); a second pass over the finished groups computes their inputs and
// outputs and which scalar constants need no tensor at all.
#include "analysis/fusion.h"

// A missing case is an error for this file whatever the build flags.
#pragma GCC diagnostic error "-Wswitch"

#include <algorithm>
#include <unordered_map>

#include "ir/loops.h"

namespace spmd::fusion {

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
    case OpKind::Random:
    case OpKind::Effect:
      return false;
  }
  return false;
}

FusionPlan plan_fusion(const ir::Function &f) { return plan_fusion(f, f.body, f.returns); }

std::vector<int> step_positions(const FusionPlan &plan) {
  std::vector<int> at(plan.group_of_instr.size(), 0);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    if (step.is_group) {
      for (size_t i : plan.groups[step.index].members) at[i] = static_cast<int>(s);
    } else {
      at[step.index] = static_cast<int>(s);
    }
  }
  return at;
}

FusionPlan plan_fusion(const ir::Function &f, const std::vector<ir::Instr> &body,
                       const std::vector<ir::ValueId> &live_out, bool fuse) {
  const size_t n = body.size();
  FusionPlan plan;
  plan.body = &body;
  plan.group_of_instr.assign(n, -1);
  plan.folded_constant.assign(n, false);

  std::unordered_map<ir::ValueId, int> def;  // values defined in this block
  for (size_t i = 0; i < n; ++i) {
    for (ir::ValueId r : body[i].results) def[r] = static_cast<int>(i);
    if (body[i].op == OpCode::Constant) plan.constant_def[body[i].results[0]] = &body[i];
  }
  auto def_of = [&](ir::ValueId v) {
    auto it = def.find(v);
    return it == def.end() ? -1 : it->second;
  };
  // What each instruction reads: its operands and, for a loop, what its body reads.
  std::vector<std::vector<ir::ValueId>> reads(n);
  for (size_t i = 0; i < n; ++i) {
    reads[i] = body[i].operands;
    for (const ir::Region &r : body[i].regions)
      for (ir::ValueId v : ir::captured_values(r)) reads[i].push_back(v);
  }

  int open = -1;
  auto close = [&] {
    if (open >= 0) plan.steps.push_back({true, static_cast<size_t>(open)});
    open = -1;
  };
  auto reads_open_group = [&](size_t i) {
    if (open < 0) return false;
    return std::any_of(reads[i].begin(), reads[i].end(), [&](ir::ValueId v) {
      return def_of(v) >= 0 && plan.group_of_instr[def_of(v)] == open;
    });
  };

  for (size_t i = 0; i < n; ++i) {
    const ir::Instr &in = body[i];
    if (is_fusable(in.op) && in.results.size() == 1) {
      const Shape &shape = f.type(in.results[0]).shape;
      if (open < 0 || plan.groups[open].shape != shape || !fuse) {
        close();
        plan.groups.push_back({});
        plan.groups.back().shape = shape;
        open = static_cast<int>(plan.groups.size()) - 1;
      }
      plan.groups[open].members.push_back(i);
      plan.group_of_instr[i] = open;
      continue;
    }
    if (reads_open_group(i)) close();
    plan.steps.push_back({false, i});
  }
  close();

  // Uses of every value: by which group (-1 for a non-group instruction, -2
  // for a result of the block).
  std::unordered_map<ir::ValueId, std::vector<int>> users;
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId v : reads[i]) users[v].push_back(plan.group_of_instr[i]);
  for (ir::ValueId v : live_out) users[v].push_back(-2);
  auto is_scalar_constant = [&](ir::ValueId v) {
    return def_of(v) >= 0 && body[def_of(v)].op == OpCode::Constant;
  };

  for (size_t g = 0; g < plan.groups.size(); ++g) {
    FusedGroup &group = plan.groups[g];
    for (size_t i : group.members) {
      for (ir::ValueId v : body[i].operands) {
        const bool internal =
            def_of(v) >= 0 && plan.group_of_instr[def_of(v)] == static_cast<int>(g);
        if (internal || is_scalar_constant(v)) continue;
        if (std::find(group.inputs.begin(), group.inputs.end(), v) == group.inputs.end())
          group.inputs.push_back(v);
      }
      for (ir::ValueId r : body[i].results) {
        const auto &u = users[r];
        if (std::any_of(u.begin(), u.end(), [&](int user) { return user != static_cast<int>(g); }))
          group.outputs.push_back(r);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (body[i].op != OpCode::Constant) continue;
    const auto &u = users[body[i].results[0]];
    plan.folded_constant[i] =
        !u.empty() && std::all_of(u.begin(), u.end(), [](int user) { return user >= 0; });
  }
  return plan;
}

}  // namespace spmd::fusion
