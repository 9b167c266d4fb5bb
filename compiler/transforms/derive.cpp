// transforms/derive.cpp — see derive.h.
#include "transforms/derive.h"

#include <algorithm>

#include "ir/verifier.h"
#include "support/timed.h"
#include "support/unique_names.h"
#include "transforms/combine_collectives.h"
#include "transforms/explicit_pbroadcast.h"
#include "transforms/hoist_broadcasts.h"
#include "transforms/inline_calls.h"
#include "transforms/jvp.h"
#include "transforms/peephole.h"
#include "transforms/simplify.h"
#include "transforms/transpose.h"

namespace spmd {
namespace {

std::string strip_suffix(const std::string &name, const std::string &suffix) {
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return "";
}

std::string names_of(const std::vector<SignatureEntry> &entries,
                     const std::vector<bool> *selected = nullptr) {
  std::string s;
  for (size_t k = 0; k < entries.size(); ++k)
    if (!selected || (*selected)[k]) s += (s.empty() ? "" : ", ") + entries[k].name;
  return s.empty() ? "(none)" : s;
}

/// Flags for the entries named (or numbered) in `chosen`; every entry when
/// `chosen` is empty and `default_all`, else the first. Throws `code` for a
/// name that is no entry.
std::vector<bool> select_entries(const std::vector<SignatureEntry> &entries,
                                 const std::vector<std::string> &chosen, bool default_all,
                                 const std::string &code, const std::string &what,
                                 const std::string &fn, SourceSpan at) {
  std::vector<bool> sel(entries.size(), false);
  if (chosen.empty()) {
    if (default_all)
      sel.assign(entries.size(), true);
    else if (!sel.empty())
      sel[0] = true;
    return sel;
  }
  for (const std::string &name : chosen) {
    bool found = false;
    for (size_t k = 0; k < entries.size(); ++k)
      if (entries[k].name == name || std::to_string(k) == name) {
        sel[k] = true;
        found = true;
      }
    if (!found)
      throw TransformError(code, at,
                           "`" + fn + "` has no " + what + " `" + name + "` (its " + what +
                               "s, by name or by index 0, 1, ...: " + names_of(entries) + ")");
  }
  return sel;
}

/// `entry` of the function being derived, as an entry of its derivative.
SignatureEntry derived_entry(const SignatureEntry &entry, std::string name) {
  SignatureEntry e = entry;
  e.name = std::move(name);
  return e;
}

}  // namespace

int find_shmap(const ir::Module &module, const std::string &name) {
  std::vector<int> shmaps;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (module.functions[i].kind == ir::FunctionKind::Shmap && module.functions[i].entry)
      shmaps.push_back(static_cast<int>(i));
  std::string names;
  for (int i : shmaps) names += (names.empty() ? "`" : ", `") + module.functions[i].name + "`";
  if (name.empty()) {
    if (shmaps.size() == 1) return shmaps[0];
    if (shmaps.empty()) {
      // Only global-view functions: they become shmaps through `spmdc shard`.
      std::string sharded;
      SourceSpan first;
      for (const ir::Function &f : module.functions)
        if (f.kind == ir::FunctionKind::Sharded && f.entry) {
          sharded += (sharded.empty() ? "`" : ", `") + f.name + "`";
          if (!first.valid()) first = f.span;
        }
      if (!sharded.empty())
        throw TransformError("unknown-function", first,
                             "the file has no shmap, only sharded (global-view) functions (" +
                                 sharded +
                                 "); run `spmdc shard` first to make a shmap of one, then use "
                                 "that (`spmdc shard FILE -o f_shmap.spmd`)");
    }
    throw TransformError("unknown-function", {},
                         shmaps.empty()
                             ? "the file has no shmap function"
                             : "the file has several shmaps (" + names + "); choose one with --fn");
  }
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (module.functions[i].kind == ir::FunctionKind::Shmap && module.functions[i].name == name)
      return static_cast<int>(i);
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

FunctionSignature signature_of(const ir::Function &f) {
  FunctionSignature sig;
  sig.name = f.name;
  sig.kind = f.kind;
  for (size_t k = 0; k < f.params.size(); ++k) {
    const ir::Param &p = f.params[k];
    sig.params.push_back(
        {f.values[p.value].name, f.type(p.value), p.global_shape, p.spec, p.span, false, k});
  }
  for (size_t k = 0; k < f.results.size(); ++k) {
    const ir::Result &r = f.results[k];
    Type t = k < f.returns.size() ? f.type(f.returns[k]) : Type{};
    sig.results.push_back({ir::result_name(f, k), t, r.global_shape, r.spec, r.span, true, k});
    std::string base = r.name;
    if (base.empty() && k < f.returns.size()) base = f.values[f.returns[k]].name;
    sig.cotangent_bases.push_back(base.empty() ? ir::result_name(f, k) : base);
  }
  return sig;
}

std::string derived_name(const std::string &name, DeriveKind kind) {
  switch (kind) {
    case DeriveKind::Transpose: {
      std::string base = strip_suffix(name, "_transpose");
      return base.empty() ? name + "_transpose" : base;
    }
    case DeriveKind::Jvp:
      return name + "_jvp";
    case DeriveKind::Vjp:
      return name + "_vjp";
    case DeriveKind::Grad:
      return name + "_grad";
  }
  return name;
}

// The names below follow jvp_function and transpose_function exactly: a
// tangent of `x` is `x_dot`, a cotangent `x_bar`; the JVP names its results
// after the function's result names, and a vjp's cotangent of `y` is the
// cotangent of the tangent `y_dot`, i.e. `y_bar`.
FunctionSignature derived_signature(const FunctionSignature &f, const ir::DeriveStep &step) {
  FunctionSignature d;
  d.name = derived_name(f.name, step.kind);
  d.kind = f.kind;
  auto results_named = [&](const std::vector<SignatureEntry> &entries) {
    for (const SignatureEntry &e : entries) {
      d.results.push_back(e);
      d.cotangent_bases.push_back(e.name);
    }
  };
  switch (step.kind) {
    case DeriveKind::Transpose: {
      for (size_t k = 0; k < f.params.size(); ++k)
        if (!step.wrt[k]) d.params.push_back(f.params[k]);
      for (size_t k = 0; k < f.results.size(); ++k)
        d.params.push_back(derived_entry(f.results[k], cotangent_name(f.cotangent_bases[k])));
      std::vector<SignatureEntry> results;
      for (size_t k = 0; k < f.params.size(); ++k)
        if (step.wrt[k])
          results.push_back(derived_entry(f.params[k], cotangent_name(f.params[k].name)));
      results_named(results);
      break;
    }
    case DeriveKind::Jvp: {
      d.params = f.params;
      for (size_t k = 0; k < f.params.size(); ++k)
        if (step.wrt[k])
          d.params.push_back(derived_entry(f.params[k], tangent_name(f.params[k].name)));
      std::vector<SignatureEntry> results = f.results;
      for (const SignatureEntry &r : f.results)
        results.push_back(derived_entry(r, tangent_name(r.name)));
      results_named(results);
      break;
    }
    case DeriveKind::Vjp:
    case DeriveKind::Grad: {
      d.params = f.params;
      if (step.kind == DeriveKind::Vjp)
        for (size_t k = 0; k < f.results.size(); ++k)
          if (step.of[k])
            d.params.push_back(
                derived_entry(f.results[k], cotangent_name(tangent_name(f.results[k].name))));
      std::vector<SignatureEntry> results = f.results;
      for (size_t k = 0; k < f.params.size(); ++k)
        if (step.wrt[k])
          results.push_back(
              derived_entry(f.params[k], cotangent_name(tangent_name(f.params[k].name))));
      results_named(results);
      break;
    }
  }
  return d;
}

ir::DeriveStep select_step(const FunctionSignature &f, DeriveKind kind,
                           const std::vector<std::string> &wrt, const std::vector<std::string> &of,
                           SourceSpan at) {
  ir::DeriveStep step;
  step.kind = kind;
  step.wrt = select_entries(f.params, wrt, true, "unknown-parameter", "parameter", f.name, at);
  for (size_t k = 0; k < f.params.size(); ++k)
    if (step.wrt[k] && !rt::is_float(f.params[k].type.dtype)) {
      if (!wrt.empty())
        throw TransformError("not-differentiable", f.params[k].span,
                             "parameter `" + f.params[k].name + "` of `" + f.name +
                                 "` is not floating point, so it has no derivative");
      step.wrt[k] = false;  // integer and bool inputs are never differentiated
    }
  // With nothing selected the derived function would have no parameters (jvp) or no results
  // (transpose, vjp, grad): a program that cannot be written as source, and has nothing to say.
  if (std::find(step.wrt.begin(), step.wrt.end(), true) == step.wrt.end())
    throw TransformError("nothing-to-differentiate", at,
                         "`" + f.name +
                             "` has no floating-point parameter, so it has no derivative or "
                             "transpose to derive");
  if (kind == DeriveKind::Vjp || kind == DeriveKind::Grad) {
    bool grad = kind == DeriveKind::Grad;
    step.of = select_entries(f.results, of, !grad, "unknown-result", "result", f.name, at);
    for (size_t k = 0; grad && k < f.results.size(); ++k)
      if (step.of[k] && f.results[k].type.rank() != 0)
        throw TransformError(
            "not-scalar", f.results[k].span,
            "grad needs a scalar output, but " +
                ir::describe_result(f.name, f.results.size(), f.results[k].name) + " is " +
                shape_type_str(f.results[k].type.dtype, f.kind == ir::FunctionKind::Shmap
                                                            ? f.results[k].global_shape
                                                            : f.results[k].type.shape) +
                "; use vjp to pass its cotangent explicitly");
  }
  return step;
}

std::string describe_step(const FunctionSignature &f, const ir::DeriveStep &step) {
  std::string in = names_of(f.params, &step.wrt);
  switch (step.kind) {
    case DeriveKind::Transpose:
      return "Transpose of `" + f.name + "` in " + in +
             ": cotangents of its results in, cotangents of those parameters out.";
    case DeriveKind::Jvp:
      return "Forward-mode derivative (JVP) of `" + f.name + "` in " + in +
             ": primal inputs and tangents in, outputs and their tangents out.";
    case DeriveKind::Vjp:
      return "Reverse-mode derivative (VJP) of `" + f.name + "` in " + in +
             ": inputs and cotangents of " + names_of(f.results, &step.of) +
             " in; outputs and cotangents of the parameters out.";
    case DeriveKind::Grad:
      return "Gradient of `" + f.name + "` (output " + names_of(f.results, &step.of) +
             ") with respect to " + in + ": returns the outputs, then the gradients.";
  }
  return "";
}

ir::Function derivable_form(const ir::Module &module, const ir::Function &function) {
  // Combined collectives are differentiated component by component; the
  // derivative is combined again by derive_function.
  ir::Function inlined = timed("inline_calls", [&] { return inline_calls(module, function); });
  timed("split_collectives", [&] { split_collectives(inlined); });
  ir::Function flat = timed("simplify", [&] { return simplify(module, std::move(inlined)); });
  timed("hoist_broadcasts", [&] { hoist_broadcasts(module, flat); });
  timed("peephole", [&] { rewrite_peepholes(module, flat); });
  return flat;
}

ir::Function derive_function(const ir::Module &module, const ir::Function &function,
                             const ir::DeriveStep &step, const CombineOptions &combine,
                             bool remat) {
  ir::Function flat = derivable_form(module, function);
  std::string name = derived_name(flat.name, step.kind);
  ir::Function result;
  switch (step.kind) {
    case DeriveKind::Transpose: {
      TransposeSpec spec;
      spec.remat = remat;
      spec.linear_params = step.wrt;
      spec.ct_results.assign(flat.results.size(), true);
      spec.name = name;
      result = timed("transpose", [&] { return transpose_function(module, flat, spec); });
      break;
    }
    case DeriveKind::Jvp:
      result = timed("jvp", [&] { return jvp_function(module, flat, step.wrt).function; });
      break;
    case DeriveKind::Vjp:
    case DeriveKind::Grad: {
      bool grad = step.kind == DeriveKind::Grad;
      JvpResult j = timed("jvp", [&] { return jvp_function(module, flat, step.wrt); });
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
      result = timed("transpose", [&] { return transpose_function(module, j.function, spec); });
      break;
    }
  }
  result = timed("simplify", [&] { return simplify(module, std::move(result)); });
  timed("hoist_broadcasts", [&] { hoist_broadcasts(module, result); });
  timed("peephole", [&] { rewrite_peepholes(module, result); });
  timed("combine_collectives", [&] { combine_collectives(result, combine); });
  timed("explicit_pbroadcast",
        [&] { make_pbroadcasts_explicit(module, result, ir::Origin::Transform); });
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
  ir::Function result = derive_function(module, original, step, request.combine, request.remat);
  result.comment = describe_step(sig, step) + "\nGenerated by `spmdc " +
                   derive_kind_name(request.kind) + "`" +
                   (request.source_path.empty() ? "" : " from " + request.source_path) + ".";
  out.functions.push_back(std::move(result));
  for (const std::string &problem : timed("verify", [&] { return ir::verify_module(out); }))
    throw std::logic_error("the derived program does not verify: " + problem);
  return out;
}

}  // namespace spmd
