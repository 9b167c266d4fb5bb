// pipeline/derive.cpp — the derive script (see derive.h).
#include "pipeline/derive.h"

#include <stdexcept>

#include "ir/verifier.h"
#include "pipeline/step.h"
#include "support/unique_names.h"
#include "transforms/explicit_pbroadcast.h"
#include "transforms/hoist_broadcasts.h"
#include "transforms/inline_calls.h"
#include "transforms/jvp.h"
#include "transforms/peephole.h"
#include "transforms/simplify.h"
#include "transforms/transpose.h"

namespace spmd {
namespace {

constexpr const char *kScript = "derive";

/// The derivable form's steps, run on `flat` (a copy of `function`).
void run_derivable_form(pipeline::Script &script, const ir::Module &module,
                        const ir::Function &function, ir::Function &flat) {
  // Combined collectives are differentiated component by component; the
  // derivative is combined again by derive_function.
  script.run("inline_calls", module, flat, [&] { flat = inline_calls(module, function); });
  script.run("split_collectives", module, flat, [&] { split_collectives(flat); });
  script.run("simplify", module, flat, [&] { flat = simplify(module, std::move(flat)); });
  script.run("hoist_broadcasts", module, flat, [&] { hoist_broadcasts(module, flat); });
  script.run("peephole", module, flat, [&] { rewrite_peepholes(module, flat); });
}

}  // namespace

const std::vector<std::string> &derive_steps() {
  static const std::vector<std::string> steps{"inline_calls",
                                              "split_collectives",
                                              "simplify",
                                              "hoist_broadcasts",
                                              "peephole",
                                              "jvp",
                                              "transpose",
                                              "simplify_result",
                                              "hoist_broadcasts_result",
                                              "peephole_result",
                                              "combine_collectives",
                                              "explicit_pbroadcast"};
  return steps;
}

ir::Function derivable_form(const ir::Module &module, const ir::Function &function) {
  pipeline::Script script(kScript);
  ir::Function flat;
  run_derivable_form(script, module, function, flat);
  return flat;
}

ir::Function derive_function(const ir::Module &module, const ir::Function &function,
                             const ir::DeriveStep &step, const CombineOptions &combine, bool remat,
                             const std::string &stop_after) {
  pipeline::Script script(kScript, stop_after);
  ir::Function flat;
  run_derivable_form(script, module, function, flat);
  if (script.stopped()) return flat;
  std::string name = derived_name(flat.name, step.kind);
  ir::Function result;
  switch (step.kind) {
    case DeriveKind::Transpose: {
      TransposeSpec spec;
      spec.remat = remat;
      spec.linear_params = step.wrt;
      spec.ct_results.assign(flat.results.size(), true);
      spec.name = name;
      script.run("transpose", module, result,
                 [&] { result = transpose_function(module, flat, spec); });
      break;
    }
    case DeriveKind::Jvp:
      script.run("jvp", module, result,
                 [&] { result = jvp_function(module, flat, step.wrt).function; });
      break;
    case DeriveKind::Vjp:
    case DeriveKind::Grad: {
      bool grad = step.kind == DeriveKind::Grad;
      JvpResult j;
      script.run("jvp", module, j.function, [&] { j = jvp_function(module, flat, step.wrt); });
      if (script.stopped()) return std::move(j.function);
      flat = ir::Function{};  // (not needed any more: free it before transposing)
      TransposeSpec spec;
      spec.remat = remat;
      size_t np = j.num_primal_params, nr = j.num_primal_results;
      spec.linear_params.assign(j.function.params.size(), false);
      for (size_t k = np; k < j.function.params.size(); ++k) spec.linear_params[k] = true;
      spec.ct_results.assign(j.function.results.size(), false);
      spec.keep_results.assign(j.function.results.size(), false);
      spec.seed_ones.assign(j.function.results.size(), false);
      for (size_t k = 0; k < nr; ++k) {
        spec.keep_results[k] = true;
        spec.ct_results[nr + k] = step.of[k];
        spec.seed_ones[nr + k] = grad && step.of[k];
      }
      spec.name = name;
      script.run("transpose", module, result,
                 [&] { result = transpose_function(module, j.function, spec); });
      break;
    }
  }
  script.run("simplify_result", module, result,
             [&] { result = simplify(module, std::move(result)); });
  script.run("hoist_broadcasts_result", module, result, [&] { hoist_broadcasts(module, result); });
  script.run("peephole_result", module, result, [&] { rewrite_peepholes(module, result); });
  script.run("combine_collectives", module, result, [&] { combine_collectives(result, combine); });
  script.run(
      "explicit_pbroadcast", module, result,
      [&] { make_pbroadcasts_explicit(module, result, ir::Origin::Transform); },
      pipeline::Check::Printable);
  if (script.stopped()) return result;
  // Results are known by name (--out, --out-dir; two may not share one, and
  // a printed signature may not repeat one): a cotangent named like one of
  // the function's own results (`w1_bar`, when the function already returns
  // gradients) gets a fresh name. The CLI and in-language derivatives share it.
  UniqueNames labels(2);
  for (size_t k = 0; k < result.results.size(); ++k)
    if (result.results[k].name.empty()) labels.reserve(ir::result_name(result, k));
  for (ir::Result &r : result.results)
    if (!r.name.empty()) r.name = labels.claim(r.name);
  return result;
}

ir::Module derive(const ir::Module &module, const DeriveRequest &request) {
  int index = find_shmap(module, request.function);
  const ir::Function &original = module.functions[static_cast<size_t>(index)];
  FunctionSignature sig = signature_of(original);
  ir::DeriveStep step = select_step(sig, request.kind, request.wrt, request.of, original.span);
  ir::Module out;
  out.meshes = module.meshes;
  ir::Function result =
      derive_function(module, original, step, request.combine, request.remat, request.stop_after);
  if (!request.stop_after.empty()) {
    out.functions.push_back(std::move(result));
    return out;
  }
  result.comment = describe_step(sig, step) + "\nGenerated by `spmdc " +
                   derive_kind_name(request.kind) + "`" +
                   (request.source_path.empty() ? "" : " from " + request.source_path) + ".";
  out.functions.push_back(std::move(result));
  for (const std::string &problem : timed("verify", [&] { return ir::verify_module(out); }))
    throw std::logic_error("the derived program does not verify: " + problem);
  return out;
}

}  // namespace spmd
