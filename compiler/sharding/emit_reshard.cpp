// sharding/emit_reshard.cpp — see emit_reshard.h.
#include "sharding/emit_reshard.h"

#include <stdexcept>

#include "ir/verifier.h"
#include "middle/infer_variance.h"
#include "ops/shape_rules.h"

namespace spmd::sharding {

ir::ValueId emit_reshard(ir::Builder &b, ir::ValueId x, const ReshardPlan &plan,
                         AxisSet consumer_varying, const std::string &comment,
                         const std::string &name, SourceSpan span) {
  ir::Function &f = b.function();
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const ReshardStep &step = plan.steps[k];
    Attrs a;
    a.collective().axes = step.axes;
    a.collective().tiled = true;
    OpCode op = step.op;
    if (op == OpCode::AllGather) {
      bool varying = consumer_varying.contains_all(AxisSet::of_all(step.axes));
      for (size_t later = k + 1; later < plan.steps.size(); ++later)
        if (plan.steps[later].op == OpCode::Pscatter &&
            !(AxisSet::of_all(plan.steps[later].axes) & AxisSet::of_all(step.axes)).empty())
          varying = false;
      if (!varying) op = OpCode::AllGatherInvariant;
    }
    if (op == OpCode::AllToAll) {
      a.collective().dim = step.dim2;        // split: where the axes go
      a.collective().concat_dim = step.dim;  // concat: where they leave
    } else {
      a.collective().dim = step.dim;
    }
    ir::BuildError error;
    auto results = b.add(op, {x}, a, span, error);
    if (results.size() != 1)
      throw std::logic_error("reshard: cannot emit `" + std::string(op_spelling(op)) +
                             "`: " + error.message);
    x = results[0];
    std::string text = comment;
    if (plan.steps.size() > 1)
      text += " (step " + std::to_string(k + 1) + " of " + std::to_string(plan.steps.size()) + ")";
    b.body().back().comment = text;
    f.values[static_cast<size_t>(x)].name = name;
  }
  return x;
}

void finish_emitted_module(ir::Module &m, const std::string &what) {
  for (ir::Function &f : m.functions) f.auto_pbroadcast = true;
  DiagnosticEngine diags;
  infer_variance(m, diags);
  if (diags.has_errors() || diags.has_internal_errors()) {
    std::string all;
    for (const Diagnostic &d : diags.all()) all += "\n  " + d.message;
    throw std::logic_error(what + ": the emitted program does not type-check:" + all);
  }
  for (ir::Function &f : m.functions) f.auto_pbroadcast = false;
  for (const std::string &problem : ir::verify_module(m))
    throw std::logic_error(what + ": the emitted program is malformed: " + problem);
}

ir::Module reshard_program(const rt::Mesh &mesh, const Shape &global, DType dtype,
                           const Sharding &src, const Sharding &dst, const ReshardPlan &plan) {
  ir::Module m;
  m.meshes.push_back({"M", mesh, {}});
  ir::Function f;
  f.name = "reshard";
  f.kind = ir::FunctionKind::Shmap;
  f.mesh = 0;
  f.comment = "Reshards " + shape_type_str(dtype, global) + " from " + to_string(src, mesh) +
              " to " + to_string(dst, mesh) + " (emitted by `spmdc reshard --program`).";
  std::vector<int> partial = src.partial.axes();
  ir::Param param;
  param.global_shape = global;
  param.spec = src.dims;
  if (!partial.empty()) {
    // The parts of a partial sum: one block per device along the partial axes.
    f.comment += "\n`parts` holds the partial sums; the array is their sum over dimension 0.";
    param.global_shape.insert(param.global_shape.begin(), axes_size(mesh, partial));
    param.spec.insert(param.spec.begin(), partial);
  }
  Sharding in = src;
  in.partial = {};
  AxisSet variance = src.used();
  Shape local = local_shape(mesh, global, in);
  Shape param_local = local;
  if (!partial.empty()) param_local.insert(param_local.begin(), 1);
  param.value =
      f.add_value({dtype, param_local, variance}, partial.empty() ? "array" : "parts", {});
  f.params.push_back(param);
  ir::Builder b(m, f);
  ir::ValueId x = param.value;
  if (!partial.empty()) {
    Attrs r;
    r.layout().shape = local;
    x = b.add1(OpCode::Reshape, {x}, r, {}, ir::Origin::User);
    f.values[static_cast<size_t>(x)].name = "array";
  }
  x = emit_reshard(b, x, plan, dst.split_axes(),
                   to_string(src, mesh) + " -> " + to_string(dst, mesh), "out", {});
  f.returns.push_back(x);
  ir::Result result;
  result.global_shape = global;
  result.spec = dst.dims;
  f.results.push_back(result);
  f.auto_pbroadcast = true;
  m.functions.push_back(std::move(f));
  finish_emitted_module(m, "reshard");
  return m;
}

}  // namespace spmd::sharding
