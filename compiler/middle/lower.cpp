// middle/lower.cpp — AST to IR: symbol tables, signatures and def instantiation
// (see lower.h for the steps; bodies are lowered in lower_body.cpp).
#include "middle/lower.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "frontend/format.h"
#include "ir/loops.h"
#include "middle/lower_internal.h"
#include "middle/spellings.h"
#include "ops/shape_rules.h"
#include "spmdrt/checked.h"
#include "support/limits.h"
#include "support/suggest.h"

namespace spmd {
namespace lowering {
namespace {

std::string mesh_text(const std::vector<rt::MeshAxis> &axes) {
  std::string s;
  for (const auto &a : axes) s += (s.empty() ? "(" : ", ") + a.name + ": " + std::to_string(a.size);
  return s + ")";
}
std::string mesh_text(const ast::MeshDecl &mesh) {
  std::vector<rt::MeshAxis> axes;
  for (const auto &a : mesh.axes) axes.push_back({a.name.name, a.size});
  return mesh_text(axes);
}

std::string qualified_alias(const std::string &module_name) {
  auto dot = module_name.rfind('.');
  return dot == std::string::npos ? module_name : module_name.substr(dot + 1);
}

}  // namespace

std::string mesh_text(const rt::Mesh &mesh) { return mesh_text(mesh.axes()); }

void report_unknown_dtype(DiagnosticEngine &diags, SourceSpan span, const std::string &name) {
  Diagnostic &d = diags.error(
      "unknown-dtype", span, "unknown dtype `" + name + "` (expected f32, f64, bf16, i32 or bool)");
  suggest(d, span, name, foreign_dtype(name), {"f32", "f64", "bf16", "i32", "bool"});
}

void report_unknown_axis(DiagnosticEngine &diags, SourceSpan span, const std::string &name,
                         const rt::Mesh &mesh) {
  std::string names;
  std::vector<std::string> axes;
  for (const auto &ax : mesh.axes()) {
    names += (names.empty() ? "`" : ", `") + ax.name + "`";
    axes.push_back(ax.name);
  }
  Diagnostic &d = diags.error(
      "unknown-axis", span, "`" + name + "` is not an axis of the mesh (its axes: " + names + ")");
  suggest(d, span, name, std::nullopt, axes);
}

// ============================================================== ProgramLowerer

ProgramLowerer::ProgramLowerer(const Program &program, const SourceManager &sources,
                               const LowerOptions &options, DiagnosticEngine &diags)
    : diags(diags), sources(sources), program_(program), options_(options) {}

void ProgramLowerer::collect() {
  for (size_t m = 0; m < program_.modules.size(); ++m) {
    const ParsedModule &pm = program_.modules[m];
    for (const ast::Decl &decl : pm.ast.decls) {
      if (auto *mesh = std::get_if<ast::MeshDecl>(&decl.node)) {
        if (auto known = meshes_.find(mesh->name.name); known != meshes_.end()) {
          // An imported module (a derived program, say) may declare the same
          // mesh as the importer: equal declarations are one mesh.
          const ir::MeshDef *first =
              known->second >= 0 ? &module.meshes[static_cast<size_t>(known->second)] : nullptr;
          // (As declared: --mesh resizes both alike.)
          if (first && m > 0 && declared_meshes_[mesh->name.name] == mesh_text(*mesh)) continue;
          diags
              .error("duplicate-definition", mesh->name.span,
                     "mesh `" + mesh->name.name + "` is defined twice" +
                         (m > 0 ? " with different axes" : ""))
              .note(mesh_spans_[mesh->name.name],
                    "first defined here" +
                        (first && m > 0 ? " as " + mesh_text(first->mesh) : std::string()));
          continue;
        }
        mesh_spans_[mesh->name.name] = mesh->name.span;
        std::vector<rt::MeshAxis> axes;
        std::set<std::string> seen;
        bool ok = true;
        for (const auto &ax : mesh->axes) {
          if (!seen.insert(ax.name.name).second) {
            diags.error(
                "duplicate-axis", ax.name.span,
                "axis `" + ax.name.name + "` appears twice in mesh `" + mesh->name.name + "`");
            ok = false;
          }
          if (ax.size <= 0 || ax.size > kMaxMeshAxisSize) {
            diags.error("bad-mesh", ax.size_span,
                        "axis sizes must be between 1 and " + std::to_string(kMaxMeshAxisSize) +
                            ", got " + std::to_string(ax.size));
            ok = false;
          }
          axes.push_back({ax.name.name, ax.size});
        }
        declared_meshes_[mesh->name.name] = mesh_text(*mesh);
        override_mesh(*mesh, axes);
        if (mesh->axes.empty()) {
          diags.error("bad-mesh", mesh->name.span, "a mesh needs at least one axis");
          ok = false;
        }
        if (static_cast<int64_t>(axes.size()) > kMaxMeshAxes) {
          diags.error("bad-mesh", mesh->name.span,
                      "a mesh has at most " + std::to_string(kMaxMeshAxes) + " axes");
          ok = false;
        }
        int64_t total = 1;
        for (auto &a : axes) total = rt::saturating_mul(total, std::max<int64_t>(a.size, 1));
        if (ok && total > kMaxMeshDevices) {
          diags.error("bad-mesh", mesh->name.span,
                      "mesh `" + mesh->name.name + "` has more than " +
                          std::to_string(kMaxMeshDevices) + " devices");
          ok = false;
        }
        if (!ok) {
          meshes_[mesh->name.name] = -1;  // known but invalid: no follow-on errors
          continue;
        }
        meshes_[mesh->name.name] = static_cast<int>(module.meshes.size());
        module.meshes.push_back({mesh->name.name, rt::Mesh(axes), mesh->name.span});
      } else if (auto *fn = std::get_if<ast::FuncDecl>(&decl.node)) {
        const std::string &name = fn->name.name;
        if (is_builtin(name)) {
          diags.error("duplicate-definition", fn->name.span,
                      "`" + name + "` is a builtin function and cannot be redefined");
          continue;
        }
        auto &syms = funcs_[name];
        bool dup = false;
        for (const auto &s : syms)
          if (s.module_index == static_cast<int>(m)) {
            diags.error("duplicate-definition", fn->name.span, "`" + name + "` is defined twice")
                .notes.push_back({s.decl->name.span, "first defined here"});
            dup = true;
          }
        if (dup) continue;
        syms.push_back({fn, static_cast<int>(m)});
        if (!pm.name.empty()) {
          funcs_[pm.name + "." + name].push_back({fn, static_cast<int>(m)});
          std::string alias = qualified_alias(pm.name) + "." + name;
          if (alias != pm.name + "." + name) funcs_[alias].push_back({fn, static_cast<int>(m)});
        }
      }
    }
  }
}

const ast::FuncDecl *ProgramLowerer::find_def(const std::string &name, int from_module,
                                              SourceSpan span, int &def_module) {
  auto it = funcs_.find(name);
  if (it == funcs_.end() || it->second.empty()) {
    Diagnostic &d = diags.error("unknown-function", span, "unknown function `" + name + "`");
    std::string bare(strip_foreign_prefix(name));
    if (auto module_name = library_module_defining(bare, program_.library_paths)) {
      d.help("`" + bare + "` is defined in the library module `" + *module_name +
             "`: add `import " + *module_name + "` at the top of the file");
      d.fixit(SourceSpan{program_.modules[0].ast.file, 0, 0}, "import " + *module_name + "\n");
      if (bare != name) d.fixit(span, bare);
      return nullptr;
    }
    std::vector<std::string> candidates;
    for (const auto &[fname, syms] : funcs_)
      if (!syms.empty()) candidates.push_back(fname);
    for (const std::string &b : builtin_names()) candidates.push_back(b);
    suggest(d, span, name, foreign_function(name, is_builtin), candidates);
    return nullptr;
  }
  const auto &cands = it->second;
  // Prefer a definition in the calling module, then in the main module.
  for (int pref : {from_module, 0})
    for (const auto &c : cands)
      if (c.module_index == pref) {
        def_module = c.module_index;
        return c.decl;
      }
  if (cands.size() > 1) {
    auto &d = diags.error("ambiguous-name", span,
                          "`" + name + "` is defined by several imported modules");
    for (const auto &c : cands) d.notes.push_back({c.decl->name.span, "defined here"});
    d.fix = "call it with its module name, e.g. `" +
            qualified_alias(program_.modules[cands[0].module_index].name) + "." + name + "`";
    return nullptr;
  }
  def_module = cands[0].module_index;
  return cands[0].decl;
}

std::optional<Type> ProgramLowerer::resolve_type(const ast::TypeExpr &type, const DefBindings *def,
                                                 bool allow_symbols) {
  std::optional<DType> dtype = parse_dtype(type.dtype.name);
  if (!dtype && def)
    if (auto it = def->dtypes.find(type.dtype.name); it != def->dtypes.end()) dtype = it->second;
  bool ok = true;
  if (!dtype) {
    report_unknown_dtype(diags, type.dtype.span, type.dtype.name);
    ok = false;
  }
  Shape shape;
  for (const auto &d : type.dims) {
    if (auto *n = std::get_if<int64_t>(&d.value)) {
      if (*n < 0 || *n > (int64_t{1} << 40)) {
        diags.error("literal-out-of-range", d.span, "dimension size out of range");
        ok = false;
      }
      shape.push_back(*n);
      continue;
    }
    const std::string &sym = std::get<std::string>(d.value);
    if (d.is_ellipsis()) {
      if (!allow_symbols) {
        diags
            .error("symbolic-dimension", d.span,
                   "`...` (any number of dimensions) is only allowed in a `def` signature")
            .help("write the dimensions of the array");
        ok = false;
      } else if (def && def->ellipsis) {
        shape.insert(shape.end(), def->ellipsis->begin(), def->ellipsis->end());
      } else {
        diags.error("unknown-name", d.span, "`...` is not bound by any parameter")
            .help("a result may use `...` when a parameter's type has it too");
        ok = false;
      }
      continue;
    }
    if (!allow_symbols) {
      if (auto it = options_.overrides.sizes.find(sym); it != options_.overrides.sizes.end()) {
        sizes_used_.insert(sym);
        shape.push_back(it->second);
        continue;
      }
      diags
          .error("symbolic-dimension", d.span,
                 "shmap signatures need concrete sizes; `" + sym + "` is symbolic")
          .help("write a number, or give `" + sym + "` its size on the command line: --set " + sym +
                "=SIZE");
      ok = false;
      continue;
    }
    if (def) {
      auto it = def->dims.find(sym);
      if (it == def->dims.end()) {
        diags.error("unknown-name", d.span,
                    "dimension `" + sym + "` is not bound by any parameter");
        ok = false;
        continue;
      }
      shape.push_back(it->second);
    } else {
      shape.push_back(-1);  // bound later
    }
  }
  if (!ok) return std::nullopt;
  // (-1 stands for a dimension the caller binds later.)
  const bool complete = std::none_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
  if (complete && !rt::shape_fits(shape, static_cast<int64_t>(rt::dtype_size(*dtype)))) {
    diags.error(
        "shape-too-large", type.span,
        shape_type_str(*dtype, shape) + " is too large: an array may hold at most 2^60 bytes");
    return std::nullopt;
  }
  return Type{*dtype, shape, {}};
}

std::optional<rt::PartitionSpec> ProgramLowerer::resolve_spec(const ast::SpecExpr &spec,
                                                              const rt::Mesh &mesh,
                                                              const Shape &global,
                                                              SourceSpan type_span) {
  bool ok = true;
  if (spec.like) {  // results are resolved by the signature's lowering
    diags
        .error("misplaced-like", spec.span,
               "`like(" + spec.like->name +
                   ")` names a parameter's layout: it is only allowed as the spec of a result")
        .fix = "write the partition spec, e.g. `P()`, or `auto` in a `sharded` signature";
    return std::nullopt;
  }
  if (spec.dims.size() > global.size()) {
    diags.error("spec-too-long", spec.span,
                "partition spec has " + std::to_string(spec.dims.size()) +
                    " entries but the array has rank " + std::to_string(global.size()));
    return std::nullopt;
  }
  rt::PartitionSpec out(global.size());
  std::map<int, SourceSpan> used;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    int64_t product = 1;
    for (const auto &axis : spec.dims[d].axes) {
      int a = mesh.find_axis(axis.name);
      if (a < 0) {
        report_unknown_axis(diags, axis.span, axis.name, mesh);
        ok = false;
        continue;
      }
      if (used.count(a)) {
        diags
            .error("duplicate-axis", axis.span,
                   "axis `" + axis.name + "` is used twice in one partition spec")
            .notes.push_back({used[a], "first used here"});
        ok = false;
        continue;
      }
      used[a] = axis.span;
      out[d].push_back(a);
      product *= mesh.axis_size(a);
    }
    if (ok && product > 1 && global[d] % product != 0) {
      Diagnostic &e =
          diags
              .error("indivisible-dimension", spec.dims[d].span,
                     "dimension " + std::to_string(d) + " has size " + std::to_string(global[d]) +
                         ", which is not divisible by the " + std::to_string(product) +
                         " devices it is split over")
              .note(type_span, "the global type is declared here");
      note_overridden_axes(e, mesh, spec.dims[d].axes);
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

int ProgramLowerer::shmap_function(const ast::FuncDecl &decl, int module_index,
                                   SourceSpan call_span) {
  if (call_span.valid()) called_shmaps_.insert(&decl);
  auto [it, inserted] = shmaps_.emplace(&decl, -2);
  if (!inserted) {
    if (it->second == -2)
      diags.error("recursion", call_span,
                  "`" + decl.name.name + "` calls itself; recursion is not supported");
    return it->second < 0 ? -1 : it->second;
  }
  std::optional<ir::Function> f = lower_shmap(decl, module_index);
  if (!f) {
    shmaps_[&decl] = -1;
    return -1;
  }
  f->entry = module_index == 0;
  const int index = add_function(std::move(*f));
  shmaps_[&decl] = index;
  return index;
}

int ProgramLowerer::add_function(ir::Function f) {
  const int64_t size = unrolled_size(f.body);
  if (!check_unrolled_size(
          size, f.span,
          "`" + f.name + "`, with its [[unroll]] loops unrolled and its calls inlined,"))
    return -1;
  module.functions.push_back(std::move(f));
  function_sizes_.resize(module.functions.size(), 0);
  function_sizes_.back() = size;
  return static_cast<int>(module.functions.size() - 1);
}

std::optional<ir::Function> ProgramLowerer::lower_shmap(const ast::FuncDecl &decl,
                                                        int module_index) {
  // A sharded function is lowered like a shmap whose every value has its
  // global shape: its specs are requirements for `spmdc shard`, not a split.
  const bool sharded = decl.kind == ast::FuncKind::Sharded;
  const char *what = sharded ? "sharded function" : "shmap";
  ir::Function f;
  f.name = decl.name.name;
  f.kind = sharded ? ir::FunctionKind::Sharded : ir::FunctionKind::Shmap;
  f.span = decl.name.span;
  f.auto_pbroadcast = options_.auto_pbroadcast;
  for (const auto &attr : decl.attributes) {
    if (sharded) {
      diags.error("unknown-attribute", attr.span,
                  "a sharded function takes no attributes (`" + attr.name +
                      "` applies to shmaps); `spmdc shard` decides where pbroadcasts go");
    } else if (attr.name == "no_auto_pbroadcast") {
      f.auto_pbroadcast = false;
      f.no_auto_pbroadcast_span = attr.span;
    } else if (attr.name == "auto_pbroadcast") {
      f.auto_pbroadcast = true;
    } else {
      Diagnostic &d = diags.error(
          "unknown-attribute", attr.span,
          "unknown attribute `" + attr.name + "` (known: no_auto_pbroadcast, auto_pbroadcast)");
      suggest(d, attr.span, attr.name, std::nullopt, {"no_auto_pbroadcast", "auto_pbroadcast"});
    }
  }
  if (!decl.mesh) {  // the parser reports a missing `on MESH`
    diags.internal(decl.name.span,
                   std::string(what) + " `" + f.name + "` without a mesh reached lowering");
    return std::nullopt;
  }
  auto mit = meshes_.find(decl.mesh->name);
  if (mit == meshes_.end()) {
    Diagnostic &d =
        diags.error("unknown-mesh", decl.mesh->span, "unknown mesh `" + decl.mesh->name + "`");
    std::vector<std::string> names;
    for (const auto &[n, index] : meshes_) names.push_back(n);
    suggest(d, decl.mesh->span, decl.mesh->name, std::nullopt, names);
    return std::nullopt;
  }
  if (mit->second < 0) return std::nullopt;  // the mesh itself was reported
  f.mesh = mit->second;
  const rt::Mesh &mesh = module.meshes[static_cast<size_t>(f.mesh)].mesh;
  bool ok = true;
  std::set<std::string> names;
  std::vector<std::pair<std::string, ir::ValueId>> bindings;
  for (const ast::Param &p : decl.params) {
    if (!names.insert(p.name.name).second) {
      diags.error("duplicate-definition", p.name.span,
                  "parameter `" + p.name.name + "` is declared twice");
      ok = false;
    }
    // A parameter whose type or spec is wrong is poisoned in the body, which
    // is still checked for its own mistakes.
    auto type = resolve_type(p.type, nullptr, false);
    if (!type) {
      ok = false;
      bindings.emplace_back(p.name.name, kPoisoned);
      continue;
    }
    if (!p.spec) {  // the parser reports a missing spec
      diags.internal(p.span, std::string(what) + " parameter `" + p.name.name +
                                 "` without a spec reached lowering");
      ok = false;
      continue;
    }
    auto spec = resolve_spec(*p.spec, mesh, type->shape, p.type.span);
    if (!spec) {
      ok = false;
      bindings.emplace_back(p.name.name, kPoisoned);
      continue;
    }
    ir::Param param;
    param.global_shape = type->shape;
    param.spec = *spec;
    param.auto_spec = p.spec->is_auto;
    for (const ast::DimExpr &d : p.type.dims) {
      const auto *sym = std::get_if<std::string>(&d.value);
      param.size_names.push_back(sym ? *sym : std::string());
    }
    param.span = p.span;
    param.spec_span = p.spec->span;
    Type local{type->dtype, sharded ? type->shape : rt::local_shape(mesh, type->shape, *spec), {}};
    param.value = f.add_value(local, p.name.name, p.name.span);
    f.params.push_back(param);
    f.bindings.push_back({p.name.span, param.value});
    bindings.emplace_back(p.name.name, param.value);
  }
  for (const ast::Result &r : decl.results) {
    auto type = resolve_type(r.type, nullptr, false);
    if (!type) {
      ok = false;
      continue;
    }
    if (!r.spec) {  // the parser reports a missing spec
      diags.internal(r.span, std::string(what) + " result without a spec reached lowering");
      ok = false;
      continue;
    }
    ir::Result result;
    if (r.spec->like) {
      // `like(w)`: parameter w's layout, written or chosen by `spmdc shard`.
      const ir::Param *param = nullptr;
      for (size_t k = 0; k < f.params.size() && param == nullptr; ++k)
        if (f.values[static_cast<size_t>(f.params[k].value)].name == r.spec->like->name) {
          param = &f.params[k];
          result.like_param = static_cast<int>(k);
        }
      if (param == nullptr) {
        Diagnostic &d = diags.error(
            "unknown-like-parameter", r.spec->like->span,
            "`like(" + r.spec->like->name + ")` names no parameter of `" + f.name + "`");
        std::vector<std::string> names;
        for (const ir::Param &q : f.params)
          names.push_back(f.values[static_cast<size_t>(q.value)].name);
        suggest(d, r.spec->like->span, r.spec->like->name, std::nullopt, names);
        ok = false;
        continue;
      }
      const Type &pt = f.type(param->value);
      if (pt.dtype != type->dtype || param->global_shape != type->shape) {
        diags
            .error("like-type-mismatch", r.spec->span,
                   "a result declared `like(" + r.spec->like->name + ")` keeps that parameter's " +
                       "layout, so it needs its type " +
                       shape_type_str(pt.dtype, param->global_shape) + ", not " +
                       shape_type_str(type->dtype, type->shape))
            .note(param->span, "the parameter");
        ok = false;
        continue;
      }
      result.spec = param->spec;
      result.auto_spec = param->auto_spec;
    } else {
      auto spec = resolve_spec(*r.spec, mesh, type->shape, r.type.span);
      if (!spec) {
        ok = false;
        continue;
      }
      result.spec = *spec;
      result.auto_spec = r.spec->is_auto;
    }
    if (r.name) result.name = r.name->name;
    result.global_shape = type->shape;
    result.span = r.span;
    result.spec_span = r.spec->span;
    f.results.push_back(result);
  }
  // Results are known by name to --out, --out-dir and the executables: two
  // results may not share one, written or given (`out0`, ... or the function's).
  std::map<std::string, size_t> labels;
  for (size_t k = 0; ok && k < f.results.size(); ++k) {
    const std::string label = ir::result_name(f, k);
    auto [it, inserted] = labels.emplace(label, k);
    if (inserted) continue;
    const size_t j = it->second;
    const bool both_written = !f.results[j].name.empty() && !f.results[k].name.empty();
    diags
        .error(
            "duplicate-definition", f.results[k].span,
            "results " + std::to_string(j + 1) + " and " + std::to_string(k + 1) + " of `" +
                f.name + "` are both called `" + label + "`" +
                (both_written ? "" : " (a result without a name is called `out` and its position)"))
        .notes.push_back({f.results[j].span, "result " + std::to_string(j + 1) + " is here"});
    ok = false;
  }
  if (!ok) {
    // Check the body anyway (its result types are unknown, so returns are not checked).
    ir::Function scratch = f;
    BodyLowerer body(*this, scratch, module_index);
    body.dim_symbols = options_.overrides.sizes;
    body.set_sizes = true;
    for (auto &[n, v] : bindings) body.env[n] = v;
    body.lower_block(decl.body);
    return std::nullopt;
  }
  // Result dtypes are needed to check returns; keep them in a side vector.
  std::vector<DType> result_dtypes;
  for (const ast::Result &r : decl.results)
    result_dtypes.push_back(*parse_dtype(r.type.dtype.name));

  // Lower into a local function: instantiating defs appends to module.functions.
  int errors_before = diags.num_errors();
  ir::Function &fn = f;
  bool return_failed = false;
  {
    BodyLowerer body(*this, fn, module_index);
    // The --set sizes are compile-time integers in the body too (`range(steps)`).
    body.dim_symbols = options_.overrides.sizes;
    body.set_sizes = true;
    for (auto &[n, v] : bindings) body.env[n] = v;
    body.lower_block(decl.body);
    if (!body.returned && diags.num_errors() == errors_before)
      diags.error("missing-return", decl.name.span,
                  std::string(what) + " `" + fn.name + "` does not end with a `return`");
    return_failed = body.return_failed;
  }
  // A returned value whose statement failed because of an error elsewhere
  // (a call of a shmap that did not compile) is poisoned, not missing.
  if (diags.num_errors() != errors_before || return_failed) return std::nullopt;
  if (fn.returns.size() != fn.results.size()) {
    diags.error("arity-mismatch", fn.return_span,
                "`" + fn.name + "` returns " + std::to_string(fn.returns.size()) + " value" +
                    (fn.returns.size() == 1 ? "" : "s") + " but its signature declares " +
                    std::to_string(fn.results.size()));
    return std::nullopt;
  }
  for (size_t k = 0; k < fn.returns.size(); ++k) {
    const Type &t = fn.type(fn.returns[k]);
    if (sharded) {
      if (t.dtype != result_dtypes[k] || t.shape != fn.results[k].global_shape) {
        diags
            .error("return-type-mismatch", fn.return_span,
                   "result " + std::to_string(k + 1) + " of `" + fn.name + "` is " +
                       shape_type_str(t.dtype, t.shape) + " but the signature declares " +
                       shape_type_str(result_dtypes[k], fn.results[k].global_shape))
            .notes.push_back({fn.results[k].span, "declared here"});
        return std::nullopt;
      }
      continue;
    }
    Shape local = rt::local_shape(mesh, fn.results[k].global_shape, fn.results[k].spec);
    if (t.dtype != result_dtypes[k] || t.shape != local) {
      diags
          .error("return-type-mismatch", fn.return_span,
                 ir::describe_result(fn, k) + " has local type " +
                     shape_type_str(t.dtype, t.shape) + " but the signature needs " +
                     shape_type_str(result_dtypes[k], local) + " on each device (global " +
                     shape_type_str(result_dtypes[k], fn.results[k].global_shape) + ")")
          .notes.push_back({fn.results[k].span, "declared here"});
      return std::nullopt;
    }
  }
  if (sharded && !check_global_view(fn)) return std::nullopt;
  return f;
}

bool ProgramLowerer::check_global_view(const ir::Function &f) {
  bool ok = true;
  std::set<int> seen;
  // (function, the call in the sharded function that reached it)
  std::vector<std::pair<int, SourceSpan>> stack;
  std::vector<const std::vector<ir::Instr> *> own = {&f.body};  // with loop bodies
  while (!own.empty()) {
    const std::vector<ir::Instr> *body = own.back();
    own.pop_back();
    for (const ir::Instr &in : *body) {
      for (const ir::Region &r : in.regions) own.push_back(&r.body);
      if (in.op == OpCode::Call && seen.insert(in.attrs.call().callee).second)
        stack.emplace_back(in.attrs.call().callee, in.span);
    }
  }
  while (!stack.empty()) {
    auto [index, call_span] = stack.back();
    stack.pop_back();
    const ir::Function &callee = module.functions.at(static_cast<size_t>(index));
    std::vector<const std::vector<ir::Instr> *> blocks = {&callee.body};
    while (!blocks.empty()) {
      const std::vector<ir::Instr> *body = blocks.back();
      blocks.pop_back();
      for (const ir::Instr &in : *body) {
        for (const ir::Region &r : in.regions) blocks.push_back(&r.body);
        if (in.op == OpCode::Call && seen.insert(in.attrs.call().callee).second)
          stack.emplace_back(in.attrs.call().callee, call_span);
        if (op_kind(in.op) != OpKind::Collective) continue;
        auto &d =
            diags.error("collective-in-sharded", in.span,
                        "`" + std::string(op_spelling(in.op)) + "` in `" + callee.name +
                            "`, which the sharded function `" + f.name +
                            "` calls: a sharded function works on global arrays, so it cannot use "
                            "collectives or axis_index, even through a def");
        d.notes.push_back({call_span, "`" + f.name + "` calls it here"});
        d.fix = "call a def without collectives, or write this part as a shmap";
        ok = false;
      }
    }
  }
  return ok;
}

int64_t ProgramLowerer::unrolled_size(const std::vector<ir::Instr> &body) const {
  return ir::unrolled_size(
      body, [](const ir::Instr &loop) { return loop.attrs.loop().unroll; },
      [this](int callee) { return function_size(callee); });
}

bool ProgramLowerer::check_unrolled_size(int64_t size, SourceSpan span, const std::string &what) {
  if (size <= kMaxUnrolledInstructions) return true;
  Diagnostic &d = diags.error("program-too-large", span, what + " " + too_many_instructions(size));
  d.fix = "loops marked [[unroll]] are unrolled and calls inlined: unroll fewer or shorter loops";
  return false;
}

std::optional<DimLayout> layout_dims(const std::vector<ast::DimExpr> &dims, size_t rank) {
  size_t at = dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d].is_ellipsis()) at = std::min(at, d);
  const bool ellipsis = at < dims.size();
  const size_t fixed = dims.size() - (ellipsis ? 1 : 0);
  if (ellipsis ? rank < fixed : rank != fixed) return std::nullopt;
  return DimLayout{at, rank - fixed};
}

namespace {
/// `[2, 3]`: what `...` stands for, in messages.
std::string dims_str(const Shape &dims) {
  std::string out = "[";
  for (size_t k = 0; k < dims.size(); ++k) out += (k ? ", " : "") + std::to_string(dims[k]);
  return out + "]";
}
}  // namespace

namespace {

/// Whether `arg_types` fit `decl`'s parameters in order (the rules of
/// bind_signature, without reporting anything).
bool signature_fits(const ast::FuncDecl &decl, const std::vector<const Type *> &arg_types) {
  std::map<std::string, int64_t> dims;
  std::map<std::string, DType> dtypes;
  std::optional<Shape> ellipsis;
  for (size_t i = 0; i < decl.params.size() && i < arg_types.size(); ++i) {
    const ast::TypeExpr &type = decl.params[i].type;
    const Type &arg = *arg_types[i];
    if (auto dtype = parse_dtype(type.dtype.name)) {
      if (*dtype != arg.dtype) return false;
    } else {
      auto [it, inserted] = dtypes.emplace(type.dtype.name, arg.dtype);
      if (!inserted && it->second != arg.dtype) return false;
    }
    const std::optional<DimLayout> layout = layout_dims(type.dims, arg.shape.size());
    if (!layout) return false;
    for (size_t d = 0; d < type.dims.size(); ++d) {
      if (d == layout->at) {
        const auto first = arg.shape.begin() + static_cast<std::ptrdiff_t>(layout->at);
        Shape middle(first, first + static_cast<std::ptrdiff_t>(layout->spread));
        if (!ellipsis) ellipsis = middle;
        if (*ellipsis != middle) return false;
        continue;
      }
      const int64_t size = arg.shape[layout->index(d)];
      if (auto *n = std::get_if<int64_t>(&type.dims[d].value)) {
        if (*n != size) return false;
      } else {
        auto [it, inserted] = dims.emplace(std::get<std::string>(type.dims[d].value), size);
        if (!inserted && it->second != size) return false;
      }
    }
  }
  return true;
}

}  // namespace

std::optional<std::vector<size_t>> argument_order_that_fits(
    size_t n, const std::function<bool(const std::vector<size_t> &)> &fits) {
  if (n < 2 || n > 6) return std::nullopt;  // 720 orders at most
  std::vector<size_t> order(n);
  for (size_t k = 0; k < n; ++k) order[k] = k;
  while (std::next_permutation(order.begin(), order.end()))
    if (fits(order)) return order;
  return std::nullopt;
}

std::string wrong_order_help(const std::vector<std::string> &param_names,
                             const std::vector<size_t> &order) {
  // order[k]: the written argument that fits parameter k.
  std::string swapped;
  for (size_t k = 0; k < order.size(); ++k)
    if (order[k] != k)
      swapped += std::string(swapped.empty() ? "" : ", ") + "argument " +
                 std::to_string(order[k] + 1) + " as `" + param_names[k] + "`";
  return "wrong order? the arguments fit the parameters in another order (" + swapped + ")";
}

std::optional<ProgramLowerer::DefBindings> ProgramLowerer::bind_signature(
    const ast::FuncDecl &decl, const std::vector<Type> &arg_types, SourceSpan call_span) {
  const size_t first_diagnostic = diags.count();
  std::optional<DefBindings> bound = bind_signature_in_order(decl, arg_types, call_span);
  if (bound || diags.count() == first_diagnostic || arg_types.size() != decl.params.size())
    return bound;
  Diagnostic &d = diags.at(first_diagnostic);
  if (d.code != "argument-type-mismatch") return bound;
  auto order = argument_order_that_fits(arg_types.size(), [&](const std::vector<size_t> &o) {
    std::vector<const Type *> permuted;
    for (size_t k : o) permuted.push_back(&arg_types[k]);
    return signature_fits(decl, permuted);
  });
  if (order) {
    std::vector<std::string> names;
    for (const ast::Param &p : decl.params) names.push_back(p.name.name);
    d.help(wrong_order_help(names, *order));
  }
  return bound;
}

std::optional<ProgramLowerer::DefBindings> ProgramLowerer::bind_signature_in_order(
    const ast::FuncDecl &decl, const std::vector<Type> &arg_types, SourceSpan call_span) {
  DefBindings b;
  std::set<std::string> type_params;
  bool ok = true;
  for (const ast::Ident &t : decl.type_params) {
    if (parse_dtype(t.name)) {
      diags
          .error("bad-type-parameter", t.span,
                 "`" + t.name + "` is a dtype; a type parameter needs another name")
          .help("type parameters are usually single capitals: `def f[T](x: T[...])`");
      ok = false;
    } else if (!type_params.insert(t.name).second) {
      diags.error("duplicate-definition", t.span,
                  "type parameter `" + t.name + "` is declared twice");
      ok = false;
    }
  }
  auto mismatch = [&](const ast::Param &p, const Type &arg, const std::string &why) {
    Diagnostic &d =
        diags.error("argument-type-mismatch", call_span,
                    "argument `" + p.name.name + "` of `" + decl.name.name + "` has type " +
                        shape_type_str(arg.dtype, arg.shape) + ", which does not match `" +
                        format_type(p.type) + "`" + (why.empty() ? "" : ": " + why));
    d.notes.push_back({p.span, "parameter declared here"});
    ok = false;
  };
  for (size_t i = 0; i < decl.params.size() && i < arg_types.size(); ++i) {
    const ast::Param &p = decl.params[i];
    const Type &arg = arg_types[i];
    // The dtype: a concrete one, or a type parameter bound by its first use.
    if (auto dtype = parse_dtype(p.type.dtype.name)) {
      if (*dtype != arg.dtype) {
        mismatch(p, arg, "");
        continue;
      }
    } else if (type_params.count(p.type.dtype.name)) {
      auto [it, inserted] = b.dtypes.emplace(p.type.dtype.name, arg.dtype);
      if (!inserted && it->second != arg.dtype) {
        mismatch(p, arg,
                 "`" + it->first + "` is already " + std::string(dtype_name(it->second)) +
                     " from an earlier argument");
        continue;
      }
    } else {
      report_unknown_dtype(diags, p.type.dtype.span, p.type.dtype.name);
      Diagnostic &d = diags.at(diags.count() - 1);
      if (d.fix.empty())
        d.help("to accept any dtype, declare `" + p.type.dtype.name +
               "` as a type parameter: `def " + decl.name.name + "[" + p.type.dtype.name +
               "](...)`");
      ok = false;
      continue;
    }
    // The dimensions: those before `...` match the leading ones, those after
    // it the trailing ones, and `...` stands for the rest (the same in every
    // type of the signature).
    const auto &dims = p.type.dims;
    if (std::count_if(dims.begin(), dims.end(),
                      [](const ast::DimExpr &d) { return d.is_ellipsis(); }) > 1) {
      diags.error("bad-type-parameter", p.type.span, "`...` may appear at most once in a type");
      ok = false;
      continue;
    }
    const std::optional<DimLayout> layout = layout_dims(dims, arg.shape.size());
    if (!layout) {
      const bool ellipsis = std::any_of(dims.begin(), dims.end(),
                                        [](const ast::DimExpr &d) { return d.is_ellipsis(); });
      mismatch(p, arg,
               "its rank is " + std::to_string(arg.shape.size()) + ", the parameter's " +
                   (ellipsis ? "at least " : "") + std::to_string(dims.size() - ellipsis));
      continue;
    }
    bool match = true;
    std::string why;
    for (size_t d = 0; match && d < dims.size(); ++d) {
      if (d == layout->at) {
        const auto first = arg.shape.begin() + static_cast<std::ptrdiff_t>(layout->at);
        Shape middle(first, first + static_cast<std::ptrdiff_t>(layout->spread));
        if (!b.ellipsis) {
          b.ellipsis = middle;
        } else if (*b.ellipsis != middle) {
          match = false;
          why = "`...` is already " + dims_str(*b.ellipsis) + " from an earlier argument";
        }
        continue;
      }
      const int64_t size = arg.shape[layout->index(d)];
      if (auto *n = std::get_if<int64_t>(&dims[d].value)) {
        match = *n == size;
      } else {
        const std::string &sym = std::get<std::string>(dims[d].value);
        auto [sit, inserted] = b.dims.emplace(sym, size);
        match = inserted || sit->second == size;
      }
    }
    if (!match) mismatch(p, arg, why);
  }
  if (!ok) return std::nullopt;
  return b;
}

/// At most this many "in `f` called here" notes follow an error in a def.
constexpr size_t kMaxCallNotes = 8;

int ProgramLowerer::instantiate(const ast::FuncDecl &decl, int decl_module,
                                const std::vector<Type> &arg_types, int mesh,
                                SourceSpan call_span) {
  InstanceKey key{&decl, mesh, {}};
  for (const Type &t : arg_types) key.args.emplace_back(t.dtype, t.shape);
  auto it = instances_.find(key);
  if (it != instances_.end()) {
    if (it->second == -2)
      diags.error("recursion", call_span,
                  "`" + decl.name.name + "` calls itself; recursion is not supported");
    return it->second < 0 ? -1 : it->second;
  }
  if (call_stack_.size() >= static_cast<size_t>(kMaxCallDepth)) {
    // Lowering, the interpreter and inlining recurse once per level: bound it.
    std::string chain;
    const size_t n = call_stack_.size();
    for (size_t k = 0; k < n; ++k) {
      if (k == 3 && n > 6) {
        chain += " → …";
        k = n - 3;
      }
      chain += (k ? " → `" : "`") + call_stack_[k].first->name.name + "`";
    }
    chain += " → `" + decl.name.name + "`";
    Diagnostic &d = diags.error("call-too-deep", call_span,
                                "calls of `def` functions nest more than " +
                                    std::to_string(kMaxCallDepth) + " deep: " + chain);
    d.notes.push_back({call_stack_.front().second, "the outermost call of the chain"});
    d.fix = "calls may nest at most " + std::to_string(kMaxCallDepth) +
            " deep; merge some of the functions";
    instances_[key] = -1;
    return -1;
  }
  call_stack_.emplace_back(&decl, call_span);
  struct PopCall {
    std::vector<std::pair<const ast::FuncDecl *, SourceSpan>> &stack;
    ~PopCall() { stack.pop_back(); }
  } pop_call{call_stack_};
  instances_[key] = -2;  // in progress
  int errors_before = diags.num_errors();
  size_t diags_before = diags.count();

  std::optional<DefBindings> bound = bind_signature(decl, arg_types, call_span);
  if (!bound) {
    instances_[key] = -1;
    return -1;
  }
  bool ok = true;
  std::vector<Type> param_types;
  for (const Type &arg : arg_types) param_types.push_back(arg.with_variance({}));

  ir::Function f;
  f.name = decl.name.name;
  f.source_name = decl.name.name;
  f.kind = ir::FunctionKind::Def;
  f.mesh = mesh;
  f.span = decl.name.span;
  for (size_t i = 0; i < decl.params.size(); ++i) {
    ir::Param param;
    param.global_shape = param_types[i].shape;
    param.span = decl.params[i].span;
    param.value = f.add_value(param_types[i], decl.params[i].name.name, decl.params[i].name.span);
    f.params.push_back(param);
    f.bindings.push_back({decl.params[i].name.span, param.value});
  }
  std::vector<Type> result_types;
  for (const ast::Result &r : decl.results) {
    auto t = resolve_type(r.type, &*bound, true);
    if (!t) {
      ok = false;
      continue;
    }
    ir::Result result;
    if (r.name) result.name = r.name->name;
    result.global_shape = t->shape;
    result.span = r.span;
    f.results.push_back(result);
    result_types.push_back(*t);
  }
  if (!ok) {
    instances_[key] = -1;
    return -1;
  }
  // Lower into the local `f`: nested instantiations append to module.functions.
  ir::Function &fn = f;
  bool return_failed = false;
  {
    BodyLowerer body(*this, fn, decl_module);
    body.dim_symbols = bound->dims;
    body.dtype_symbols = bound->dtypes;
    body.ellipsis = bound->ellipsis;
    for (size_t i = 0; i < fn.params.size(); ++i)
      body.env[decl.params[i].name.name] = fn.params[i].value;
    body.lower_block(decl.body);
    if (!body.returned && diags.num_errors() == errors_before)
      diags.error("missing-return", decl.name.span,
                  "`" + fn.name + "` does not end with a `return`");
    return_failed = body.return_failed;
  }
  if (diags.num_errors() == errors_before && !return_failed) {
    if (fn.returns.size() != result_types.size()) {
      diags.error("arity-mismatch", fn.return_span,
                  "`" + fn.name + "` returns " + std::to_string(fn.returns.size()) +
                      " values but its signature declares " + std::to_string(result_types.size()));
    } else {
      for (size_t k = 0; k < fn.returns.size(); ++k) {
        const Type &t = fn.type(fn.returns[k]);
        if (t.dtype != result_types[k].dtype || t.shape != result_types[k].shape)
          diags
              .error("return-type-mismatch", fn.return_span,
                     ir::describe_result(fn, k) + " is " + shape_type_str(t.dtype, t.shape) +
                         " but the signature declares " +
                         shape_type_str(result_types[k].dtype, result_types[k].shape))
              .notes.push_back({fn.results[k].span, "declared here"});
      }
    }
  }
  if (diags.num_errors() != errors_before) {
    std::string sig;
    for (size_t i = 0; i < arg_types.size(); ++i)
      sig += (i ? ", " : "") + shape_type_str(arg_types[i].dtype, arg_types[i].shape);
    for (size_t k = diags_before; k < diags.count(); ++k)
      if (diags.at(k).code != "call-too-deep" &&  // which names its chain itself
          diags.at(k).notes.size() < kMaxCallNotes)
        diags.at(k).notes.push_back(
            {call_span, "in `" + decl.name.name + "` called here with (" + sig + ")"});
    instances_[key] = -1;
    return -1;
  }
  if (return_failed) {  // poisoned by an error reported elsewhere
    instances_[key] = -1;
    return -1;
  }
  const int index = add_function(std::move(f));
  instances_[key] = index;
  return index;
}

ir::Module ProgramLowerer::run() {
  collect();
  if (program_.modules.empty()) return std::move(module);
  for (size_t m = 0; m < 1; ++m)
    for (const ast::Decl &decl : program_.modules[m].ast.decls)
      if (auto *fn = std::get_if<ast::FuncDecl>(&decl.node)) {
        if (fn->kind != ast::FuncKind::Def) shmap_function(*fn, static_cast<int>(m), {});
        if (diags.at_limit()) break;
      }
  // The default entry is a shmap of the main file that no body calls: a
  // training loop, not the loss it differentiates.
  for (const ast::FuncDecl *decl : called_shmaps_)
    if (int index = shmaps_[decl]; index >= 0)
      module.functions[static_cast<size_t>(index)].entry = false;
  check_overrides_used();
  return std::move(module);
}

void ProgramLowerer::override_mesh(const ast::MeshDecl &decl, std::vector<rt::MeshAxis> &axes) {
  for (const MeshOverride &o : options_.overrides.meshes) {
    if (!o.mesh.empty() && o.mesh != decl.name.name) continue;
    for (const auto &[axis, size] : o.axes) {
      auto it = std::find_if(axes.begin(), axes.end(),
                             [&](const rt::MeshAxis &a) { return a.name == axis; });
      if (it == axes.end()) {
        std::vector<std::string> names;
        std::string list;
        for (const rt::MeshAxis &a : axes) {
          names.push_back(a.name);
          list += (list.empty() ? "`" : ", `") + a.name + "`";
        }
        Diagnostic &e = diags.error("bad-override", {},
                                    "--mesh " + o.text + ": mesh `" + decl.name.name +
                                        "` has no axis `" + axis + "` (its axes: " + list +
                                        "); --mesh resizes axes, it cannot add them");
        if (auto best = closest_match(axis, names)) e.help("did you mean `" + *best + "`?");
        e.note(decl.name.span, "mesh `" + decl.name.name + "` is declared here");
        continue;
      }
      for (const ast::MeshAxisDecl &a : decl.axes)
        if (a.name.name == axis) overridden_axes_[decl.name.name][axis] = a.size_span;
      it->size = size;
    }
  }
}

void ProgramLowerer::note_overridden_axes(Diagnostic &d, const rt::Mesh &mesh,
                                          const std::vector<ast::Ident> &axes) const {
  for (const ir::MeshDef &m : module.meshes) {
    if (&m.mesh != &mesh) continue;
    auto found = overridden_axes_.find(m.name);
    if (found == overridden_axes_.end()) return;
    for (const ast::Ident &axis : axes)
      if (auto it = found->second.find(axis.name); it != found->second.end())
        d.note(it->second, "axis `" + axis.name + "` of mesh `" + m.name + "` has size " +
                               std::to_string(mesh.axis_size(mesh.find_axis(axis.name))) +
                               " from --mesh, not the size written here");
  }
}

void ProgramLowerer::check_overrides_used() {
  std::vector<std::string> mesh_names;
  for (const ir::MeshDef &m : module.meshes) mesh_names.push_back(m.name);
  for (const MeshOverride &o : options_.overrides.meshes) {
    if (o.mesh.empty() && module.meshes.size() > 1) {
      std::string list;
      for (const std::string &n : mesh_names) list += (list.empty() ? "`" : ", `") + n + "`";
      diags
          .error("bad-override", {},
                 "--mesh " + o.text + " names no mesh, but the program has " +
                     std::to_string(mesh_names.size()) + " (" + list + ")")
          .help("name one: --mesh " + mesh_names.front() + "=" + o.text);
    } else if (!o.mesh.empty() && !meshes_.count(o.mesh)) {
      Diagnostic &e = diags.error(
          "bad-override", {}, "--mesh " + o.text + ": the program has no mesh `" + o.mesh + "`");
      if (auto best = closest_match(o.mesh, mesh_names)) e.help("did you mean `" + *best + "`?");
    }
  }
  for (const auto &[name, size] : options_.overrides.sizes)
    if (!sizes_used_.count(name))
      diags.error("bad-override", {},
                  "--set " + name + "=" + std::to_string(size) +
                      ": no shmap signature has a dimension named `" + name +
                      "` and no body uses it");
}

}  // namespace lowering

ir::Module lower_program(const Program &program, const SourceManager &sources,
                         const LowerOptions &options, DiagnosticEngine &diags) {
  lowering::ProgramLowerer lowerer(program, sources, options, diags);
  return lowerer.run();
}

}  // namespace spmd
