// pipeline/prepare.cpp — prepare-for-codegen and flatten-for-sharding (see prepare.h).
#include "pipeline/prepare.h"

#include "pipeline/step.h"
#include "transforms/combine_collectives.h"
#include "transforms/inline_calls.h"
#include "transforms/simplify.h"
#include "transforms/unroll_loops.h"

namespace spmd {

const std::vector<std::string> &prepare_for_codegen_steps() {
  static const std::vector<std::string> steps{"inline_calls", "simplify", "combine_collectives"};
  return steps;
}

const std::vector<std::string> &flatten_for_sharding_steps() {
  static const std::vector<std::string> steps{"inline_calls", "unroll_loops", "simplify"};
  return steps;
}

std::vector<ir::Function> prepare_for_codegen(const ir::Module &module,
                                              const std::string &stop_after) {
  std::vector<ir::Function> prepared;
  for (const ir::Function &f : module.functions) {
    if (f.kind != ir::FunctionKind::Shmap) continue;
    pipeline::Script script("prepare-for-codegen", stop_after);
    ir::Function flat;
    script.run("inline_calls", module, flat, [&] { flat = inline_calls(module, f); });
    script.run("simplify", module, flat, [&] { flat = simplify(module, std::move(flat)); });
    script.run("combine_collectives", module, flat, [&] { combine_collectives(flat); });
    prepared.push_back(std::move(flat));
  }
  return prepared;
}

ir::Function flatten_for_sharding(const ir::Module &module, const ir::Function &function,
                                  const std::string &stop_after) {
  pipeline::Script script("flatten-for-sharding", stop_after);
  ir::Function flat;
  script.run("inline_calls", module, flat, [&] { flat = inline_calls(module, function); });
  script.run("unroll_loops", module, flat,
             [&] { unroll_loops(flat, UnrollPolicy{.keep_top_level = true}); });
  script.run("simplify", module, flat, [&] { flat = simplify(module, std::move(flat)); });
  return flat;
}

}  // namespace spmd
