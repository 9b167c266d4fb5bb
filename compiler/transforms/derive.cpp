// transforms/derive.cpp — see derive.h.
#include "transforms/derive.h"

#include <algorithm>

#include "ir/loops.h"
#include "ir/verifier.h"
#include "transforms/combine_collectives.h"
#include "transforms/explicit_pbroadcast.h"
#include "transforms/inline_calls.h"
#include "transforms/jvp.h"
#include "transforms/simplify.h"
#include "transforms/transpose.h"
#include "transforms/unroll_loops.h"

namespace spmd {
namespace {

std::vector<bool> select_params(const ir::Function &f, const std::vector<std::string> &wrt) {
  std::vector<bool> sel(f.params.size(), wrt.empty());
  for (const std::string &name : wrt) {
    bool found = false;
    for (size_t k = 0; k < f.params.size(); ++k)
      if (f.values[f.params[k].value].name == name) {
        sel[k] = true;
        found = true;
      }
    if (!found) {
      std::string names;
      for (const auto &p : f.params)
        names += (names.empty() ? "`" : ", `") + f.values[p.value].name + "`";
      throw TransformError(
          "unknown-parameter", f.span,
          "`" + f.name + "` has no parameter `" + name + "` (its parameters: " + names + ")");
    }
  }
  for (size_t k = 0; k < f.params.size(); ++k)
    if (sel[k] && !rt::is_float(f.type(f.params[k].value).dtype)) {
      if (!wrt.empty())
        throw TransformError("not-differentiable", f.params[k].span,
                             "parameter `" + f.values[f.params[k].value].name +
                                 "` is not floating point, so it has no derivative");
      sel[k] = false;  // integer and bool inputs are never differentiated
    }
  // With nothing selected the derived function would have no parameters (jvp) or no results
  // (transpose, vjp, grad): a program that cannot be written as source, and has nothing to say.
  if (std::find(sel.begin(), sel.end(), true) == sel.end())
    throw TransformError("nothing-to-differentiate", f.span,
                         "`" + f.name +
                             "` has no floating-point parameter, so it has no derivative or "
                             "transpose to derive");
  return sel;
}

std::vector<bool> select_results(const ir::Function &f, const std::vector<std::string> &of,
                                 bool default_all) {
  std::vector<bool> sel(f.results.size(), false);
  if (of.empty()) {
    if (default_all)
      sel.assign(f.results.size(), true);
    else if (!sel.empty())
      sel[0] = true;
    return sel;
  }
  for (const std::string &name : of) {
    bool found = false;
    for (size_t k = 0; k < f.results.size(); ++k)
      if (ir::result_name(f, k) == name || std::to_string(k) == name) {
        sel[k] = true;
        found = true;
      }
    if (!found)
      throw TransformError("unknown-result", f.span,
                           "`" + f.name + "` has no result `" + name +
                               "` (name results by index 0, 1, ... or by name)");
  }
  return sel;
}

std::string strip_suffix(const std::string &name, const std::string &suffix) {
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return "";
}

std::string param_list(const ir::Function &f, const std::vector<bool> &sel) {
  std::string s;
  for (size_t k = 0; k < sel.size(); ++k)
    if (sel[k]) s += (s.empty() ? "" : ", ") + f.values[f.params[k].value].name;
  return s.empty() ? "(none)" : s;
}

}  // namespace

int find_shmap(const ir::Module &module, const std::string &name) {
  std::vector<int> shmaps;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (module.functions[i].kind == ir::FunctionKind::Shmap) shmaps.push_back(static_cast<int>(i));
  std::string names;
  for (int i : shmaps) names += (names.empty() ? "`" : ", `") + module.functions[i].name + "`";
  if (name.empty()) {
    if (shmaps.size() == 1) return shmaps[0];
    throw TransformError("unknown-function", {},
                         shmaps.empty()
                             ? "the file has no shmap function"
                             : "the file has several shmaps (" + names + "); choose one with --fn");
  }
  for (int i : shmaps)
    if (module.functions[i].name == name) return i;
  int other = module.find_function(name);
  if (other >= 0 && module.functions[other].kind == ir::FunctionKind::Sharded)
    throw TransformError("unknown-function", module.functions[other].span,
                         "`" + name +
                             "` is a sharded function; make a shmap of it with `spmdc shard` "
                             "first, then transform that");
  throw TransformError("unknown-function", {},
                       "no shmap named `" + name + "`" +
                           (names.empty() ? std::string() : " (shmaps: " + names + ")"));
}

const char *derive_kind_name(DeriveKind k) {
  switch (k) {
    case DeriveKind::Transpose:
      return "transpose";
    case DeriveKind::Jvp:
      return "jvp";
    case DeriveKind::Vjp:
      return "vjp";
    case DeriveKind::Grad:
      return "grad";
  }
  return "";
}

ir::Module derive(const ir::Module &module, const DeriveRequest &request) {
  int index = find_shmap(module, request.function);
  const ir::Function &original = module.functions[static_cast<size_t>(index)];
  ir::Module out;
  out.meshes = module.meshes;
  // Combined collectives are differentiated component by component; the
  // result is combined again below.
  ir::Function inlined = inline_calls(module, original);
  split_collectives(inlined);
  ir::Function flat = simplify(module, inlined);
  std::vector<bool> wrt = select_params(flat, request.wrt);
  ir::Function result;
  std::string what;
  switch (request.kind) {
    case DeriveKind::Transpose: {
      TransposeSpec spec;
      spec.remat = request.remat;
      spec.linear_params = wrt;
      spec.ct_results.assign(flat.results.size(), true);
      std::string base = strip_suffix(flat.name, "_transpose");
      spec.name = base.empty() ? flat.name + "_transpose" : base;
      result = transpose_function(module, flat, spec);
      what = "Transpose of `" + flat.name + "` in " + param_list(flat, wrt) +
             ": cotangents of its results in, cotangents of those parameters out.";
      break;
    }
    case DeriveKind::Jvp: {
      result = jvp_function(module, flat, wrt).function;
      what = "Forward-mode derivative (JVP) of `" + flat.name + "` in " + param_list(flat, wrt) +
             ": primal inputs and tangents in, outputs and their tangents out.";
      break;
    }
    case DeriveKind::Vjp:
    case DeriveKind::Grad: {
      bool grad = request.kind == DeriveKind::Grad;
      std::vector<bool> of = select_results(flat, request.of, !grad);
      if (grad)
        for (size_t k = 0; k < of.size(); ++k)
          if (of[k] && flat.type(flat.returns[k]).rank() != 0)
            throw TransformError(
                "not-scalar", flat.results[k].span,
                "grad needs a scalar output, but " + ir::describe_result(flat, k) + " is " +
                    shape_type_str(flat.type(flat.returns[k]).dtype, flat.results[k].global_shape) +
                    "; use `spmdc vjp` to pass its cotangent explicitly");
      JvpResult j = jvp_function(module, flat, wrt);
      TransposeSpec spec;
      spec.remat = request.remat;
      size_t np = j.num_primal_params, nr = j.num_primal_results;
      spec.linear_params.assign(j.function.params.size(), false);
      for (size_t k = np; k < j.function.params.size(); ++k) spec.linear_params[k] = true;
      spec.ct_results.assign(j.function.results.size(), false);
      spec.keep_results.assign(j.function.results.size(), false);
      spec.seed_ones.assign(j.function.results.size(), false);
      for (size_t k = 0; k < nr; ++k) {
        spec.keep_results[k] = true;
        spec.ct_results[nr + k] = of[k];
        spec.seed_ones[nr + k] = grad && of[k];
      }
      spec.name = flat.name + (grad ? "_grad" : "_vjp");
      result = transpose_function(module, j.function, spec);
      std::string outs;
      for (size_t k = 0; k < of.size(); ++k)
        if (of[k]) outs += (outs.empty() ? "" : ", ") + ir::result_name(flat, k);
      what = grad ? "Gradient of `" + flat.name + "` (output " + outs + ") with respect to " +
                        param_list(flat, wrt) + ": returns the outputs, then the gradients."
                  : "Reverse-mode derivative (VJP) of `" + flat.name + "` in " +
                        param_list(flat, wrt) + ": inputs and cotangents of " + outs +
                        " in; outputs and cotangents of the parameters out.";
      break;
    }
  }
  result = simplify(module, std::move(result));
  combine_collectives(result, request.combine);
  make_pbroadcasts_explicit(out, result, ir::Origin::Transform);
  result.comment = what + "\nGenerated by `spmdc " + derive_kind_name(request.kind) + "`" +
                   (request.source_path.empty() ? "" : " from " + request.source_path) + ".";
  out.functions.push_back(std::move(result));
  for (const std::string &problem : ir::verify_module(out))
    throw std::logic_error("the derived program does not verify: " + problem);
  return out;
}

}  // namespace spmd
