// middle/derived_functions.cpp — see derived_functions.h.
#include "middle/derived_functions.h"

#include <map>

#include "ir/loops.h"
#include "spmdrt/checked.h"
#include "support/limits.h"
#include "transforms/derive.h"
#include "transforms/explicit_pbroadcast.h"

namespace spmd {
namespace {

void retarget_calls(std::vector<ir::Instr> &body, const std::map<int, int> &index) {
  for (ir::Instr &in : body) {
    if (in.op == OpCode::Call) in.attrs.callee = index.at(in.attrs.callee);
    for (ir::Region &r : in.regions) retarget_calls(r.body, index);
  }
}

template <typename Fn>
void for_each_callee(const std::vector<ir::Instr> &body, Fn &&fn) {
  for (const ir::Instr &in : body) {
    if (in.op == OpCode::Call) fn(in.attrs.callee);
    for (const ir::Region &r : in.regions) for_each_callee(r.body, fn);
  }
}

/// A module holding `module.functions[root]` and the functions it calls,
/// renumbered; `root` becomes function 0.
ir::Module extract(const ir::Module &module, int root) {
  std::map<int, int> index;
  std::vector<int> order{root};
  index[root] = 0;
  for (size_t k = 0; k < order.size(); ++k)
    for_each_callee(module.functions[static_cast<size_t>(order[k])].body, [&](int callee) {
      if (index.emplace(callee, static_cast<int>(order.size())).second) order.push_back(callee);
    });
  ir::Module out;
  out.meshes = module.meshes;
  for (int i : order) {
    out.functions.push_back(module.functions[static_cast<size_t>(i)]);
    retarget_calls(out.functions.back().body, index);
  }
  return out;
}

/// Instructions of `body` with each call counted as its callee's whole size
/// (loops kept; ir::unrolled_size), memoised in `sizes`.
int64_t inlined_size(const ir::Module &module, const std::vector<ir::Instr> &body,
                     std::map<int, int64_t> &sizes) {
  return ir::unrolled_size(
      body, [](const ir::Instr &) { return false; },
      [&](int callee) -> int64_t {
        if (callee < 0 || static_cast<size_t>(callee) >= module.functions.size()) return 1;
        if (auto it = sizes.find(callee); it != sizes.end()) return it->second;
        sizes[callee] = 1;  // (recursion was rejected when lowering)
        const int64_t n =
            inlined_size(module, module.functions[static_cast<size_t>(callee)].body, sizes);
        sizes[callee] = n;
        return n;
      });
}

}  // namespace

int add_derived_function(ir::Module &module, int primal, const ir::DeriveStep &step) {
  // Each derivative multiplies the size (grad of grad of ... grows about
  // 6.5 times a level): refuse before deriving what would pass the limit.
  std::map<int, int64_t> sizes;
  const int64_t size =
      inlined_size(module, module.functions[static_cast<size_t>(primal)].body, sizes);
  if (rt::saturating_mul(size, kMaxDerivativeGrowth) > kMaxUnrolledInstructions)
    throw TransformError("program-too-large", {},
                         "the function derived has " + std::to_string(size) +
                             " instructions with its calls inlined, and its derivative may have "
                             "up to " +
                             std::to_string(kMaxDerivativeGrowth) + " times as many: it " +
                             too_many_instructions(rt::saturating_mul(size, kMaxDerivativeGrowth)));
  ir::Module scratch = extract(module, primal);
  make_pbroadcasts_explicit(scratch, ir::Origin::AutoPbroadcast);
  ir::Function derived = derive_function(scratch, scratch.functions[0], step);
  derived.entry = false;
  // Shmaps print under their own names, so a derived one needs a fresh name.
  std::string name = derived.name;
  for (int k = 2;; ++k) {
    bool taken = false;
    for (const ir::Function &f : module.functions)
      taken |= f.kind == ir::FunctionKind::Shmap && f.name == name;
    if (!taken || derived.kind != ir::FunctionKind::Shmap) break;
    name = derived.name + "_" + std::to_string(k);
  }
  derived.name = name;
  if (derived.kind == ir::FunctionKind::Def) derived.source_name = name;
  if (const int64_t n = inlined_size(module, derived.body, sizes); n > kMaxUnrolledInstructions)
    throw TransformError("program-too-large", {}, "the derivative " + too_many_instructions(n));
  module.functions.push_back(std::move(derived));
  return static_cast<int>(module.functions.size() - 1);
}

}  // namespace spmd
