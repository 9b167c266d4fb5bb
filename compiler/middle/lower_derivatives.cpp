// middle/lower_derivatives.cpp — lowering of calls of derivatives:
// `grad(loss, wrt=params)(params, x, y)`, `vjp(f, of=0)(x, ybar)`,
// `jvp(f)(x, dx)`, `transpose(f, wrt=x)(c, ybar)`, nested as in
// `grad(jvp(f, wrt=x), wrt=x_dot)`. Part of the lowering pass (lower.h).
//
// 1. Read the derivatives (innermost first) and the function they are taken
//    of, a shmap or a def, from the syntax.
// 2. Find that function: a shmap is lowered as it is; a def is instantiated
//    for the types the arguments give its parameters (through the derived
//    function's signature: each argument stands for a parameter or a result
//    of the def; dimensions no argument binds are an error).
// 3. Derive the signature step by step (transforms/derived_signature.h), resolving
//    `wrt=`/`of=` names as the CLI's --wrt/--of do, check the arguments
//    against it and emit the call, typed from the signature. The call names
//    the function derived and the steps (ir::DerivedCallee); infer_variance
//    declares the derived function and the check script builds it
//    (pipeline/derived_functions.h).
#include <algorithm>

#include "frontend/format.h"
#include "middle/lower_internal.h"
#include "transforms/derived_signature.h"

namespace spmd {
namespace lowering {
namespace {

std::optional<DeriveKind> derive_kind(const std::string &name) {
  if (name == "grad") return DeriveKind::Grad;
  if (name == "vjp") return DeriveKind::Vjp;
  if (name == "jvp") return DeriveKind::Jvp;
  if (name == "transpose") return DeriveKind::Transpose;
  return std::nullopt;
}

class DerivativeParser {
 public:
  explicit DerivativeParser(DiagnosticEngine &diags) : diags_(diags) {}

  /// Parses `e` into `steps` (innermost first) and `base`; false after errors.
  bool parse(const ast::Expr &e, std::vector<DerivativeStepSyntax> &steps, ast::Ident &base) {
    const auto *call = std::get_if<ast::CallExpr>(&e.node);
    std::optional<DeriveKind> kind;
    if (call != nullptr && call->function == nullptr) kind = derive_kind(call->callee.name);
    if (!kind) {
      diags_
          .error("bad-derivative", e.span,
                 "`" + format_expr(e) + "` does not name a function: only a derivative of a " +
                     "function can be called this way")
          .fix = "write grad(f), vjp(f), jvp(f) or transpose(f), with wrt=... or of=...";
      return false;
    }
    DerivativeStepSyntax step;
    step.kind = *kind;
    step.span = e.span;
    const std::string &what = call->callee.name;
    const ast::Expr *function = nullptr;
    bool ok = true;
    for (const ast::Argument &arg : call->args) {
      if (arg.keyword.empty()) {
        if (function != nullptr) {
          diags_.error("bad-derivative", arg.span,
                       "`" + what + "` takes one function; name the parameters with wrt=...");
          return false;
        }
        function = arg.value.get();
      } else if (arg.keyword == "wrt" ||
                 (arg.keyword == "of" && (*kind == DeriveKind::Grad || *kind == DeriveKind::Vjp))) {
        std::vector<std::string> &names = arg.keyword == "wrt" ? step.wrt : step.of;
        if (!names.empty()) {
          diags_.error("bad-derivative", arg.span, "`" + arg.keyword + "` is given twice");
          return false;
        }
        ok &= entry_names(*arg.value, arg.keyword, names);
      } else {
        diags_.error("bad-derivative", arg.span,
                     "`" + what + "` has no option `" + arg.keyword + "` (it takes wrt=" +
                         (*kind == DeriveKind::Grad || *kind == DeriveKind::Vjp ? " and of=" : "") +
                         ")");
        return false;
      }
    }
    if (function == nullptr) {
      diags_.error("bad-derivative", e.span, "`" + what + "` needs the function to derive");
      return false;
    }
    if (!ok) return false;
    if (const auto *name = std::get_if<ast::NameExpr>(&function->node)) {
      base = {name->name, function->span};
    } else if (!parse(*function, steps, base)) {
      return false;
    }
    steps.push_back(std::move(step));
    return true;
  }

 private:
  /// `w`, `0` or `(w, b)`: parameter or result names or indices.
  bool entry_names(const ast::Expr &e, const std::string &option, std::vector<std::string> &out) {
    std::vector<const ast::Expr *> items{&e};
    if (const auto *t = std::get_if<ast::TupleExpr>(&e.node)) {
      items.clear();
      for (const auto &x : t->elements) items.push_back(x.get());
    }
    for (const ast::Expr *x : items) {
      if (const auto *n = std::get_if<ast::NameExpr>(&x->node)) {
        out.push_back(n->name);
      } else if (const auto *i = std::get_if<ast::IntLit>(&x->node)) {
        out.push_back(std::to_string(i->value));
      } else {
        diags_.error("bad-derivative", x->span,
                     "`" + option + "=` takes names or indices, e.g. `" + option + "=x` or `" +
                         option + "=(x, 1)`");
        return false;
      }
    }
    if (out.empty()) {
      diags_.error("bad-derivative", e.span, "`" + option + "=()` names nothing");
      return false;
    }
    return true;
  }

  DiagnosticEngine &diags_;
};

/// The signature of def `decl` as written (a dimension that is a symbol has
/// size -1), with the names lowering gives its instances.
FunctionSignature declared_signature(const ast::FuncDecl &decl) {
  auto type_of = [](const ast::TypeExpr &t) {
    Type type{parse_dtype(t.dtype.name).value_or(DType::F32), {}, {}};
    for (const auto &d : t.dims) {
      const auto *n = std::get_if<int64_t>(&d.value);
      type.shape.push_back(n ? *n : -1);
    }
    return type;
  };
  FunctionSignature sig;
  sig.name = decl.name.name;
  sig.kind = ir::FunctionKind::Def;
  for (size_t k = 0; k < decl.params.size(); ++k) {
    const ast::Param &p = decl.params[k];
    sig.params.push_back({p.name.name, type_of(p.type), {}, {}, p.span, false, k});
  }
  for (size_t k = 0; k < decl.results.size(); ++k) {
    std::string name = decl.results.size() == 1 ? decl.name.name : "out" + std::to_string(k);
    sig.results.push_back(
        {name, type_of(decl.results[k].type), {}, {}, decl.results[k].span, true, k});
    sig.cotangent_bases.push_back(name);
  }
  return sig;
}

/// What the arguments bound: dimension symbols, dtype variables, `...`.
struct Bound {
  std::map<std::string, int64_t> dims;
  std::map<std::string, DType> dtypes;
  std::optional<Shape> ellipsis;
};

/// Binds the symbols of `written` (dimension names, a dtype variable, `...`)
/// to what `type` has in their places.
void bind_symbols(const ast::TypeExpr &written, const Type &type, Bound &bound) {
  if (!parse_dtype(written.dtype.name)) bound.dtypes.emplace(written.dtype.name, type.dtype);
  const auto &dims = written.dims;
  // A rank that does not fit is a mismatch the instantiation reports (without
  // `...`, the dimensions both have still bind).
  const std::optional<DimLayout> fits = layout_dims(dims, type.shape.size());
  const bool ellipsis =
      std::any_of(dims.begin(), dims.end(), [](const ast::DimExpr &d) { return d.is_ellipsis(); });
  if (!fits && ellipsis) return;
  const DimLayout layout = fits.value_or(DimLayout{dims.size(), 0});
  const size_t common = std::min(dims.size(), type.shape.size() + (ellipsis ? 1 : 0));
  for (size_t d = 0; d < common; ++d) {
    if (d == layout.at) {
      const auto first = type.shape.begin() + static_cast<std::ptrdiff_t>(layout.at);
      if (!bound.ellipsis)
        bound.ellipsis = Shape(first, first + static_cast<std::ptrdiff_t>(layout.spread));
      continue;
    }
    if (const auto *s = std::get_if<std::string>(&dims[d].value))
      bound.dims.emplace(*s, type.shape[layout.index(d)]);
  }
}

}  // namespace

ir::DeriveStep BodyLowerer::select_derive_step(const FunctionSignature &sig, DeriveKind kind,
                                               const std::vector<std::string> &wrt,
                                               const std::vector<std::string> &of, SourceSpan at,
                                               bool &ok) {
  try {
    return select_step(sig, kind, wrt, of, at);
  } catch (const TransformError &e) {
    auto &d = diags().error(e.code, at, e.what());
    if (e.span.valid() && !(e.span == at)) d.notes.push_back({e.span, "declared here"});
    ok = false;
    return {};
  }
}

std::optional<std::vector<Type>> BodyLowerer::derivative_param_types(
    const ast::FuncDecl &decl, const std::vector<DerivativeStepSyntax> &steps,
    const std::vector<Type> &args, SourceSpan span) {
  FunctionSignature sig = declared_signature(decl);
  for (const DerivativeStepSyntax &s : steps) {
    bool ok = true;
    ir::DeriveStep step = select_derive_step(sig, s.kind, s.wrt, s.of, s.span, ok);
    if (!ok) return std::nullopt;
    sig = derived_signature(sig, step);
  }
  if (args.size() != sig.params.size()) return std::nullopt;  // reported by the caller
  std::vector<std::optional<Type>> params(decl.params.size());
  Bound bound;
  for (size_t k = 0; k < args.size(); ++k) {
    const SignatureEntry &e = sig.params[k];
    if (e.from_result) {
      bind_symbols(decl.results[e.origin].type, args[k], bound);
    } else if (!params[e.origin]) {
      params[e.origin] = args[k].with_variance({});
      bind_symbols(decl.params[e.origin].type, args[k], bound);
    }
  }
  std::vector<Type> types;
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]) {
      types.push_back(*params[k]);
      continue;
    }
    const ast::TypeExpr &t = decl.params[k].type;
    auto cannot_infer = [&](const std::string &what) {
      diags()
          .error("cannot-infer-type", span,
                 "the type of parameter `" + decl.params[k].name.name + "` of `" + decl.name.name +
                     "` is not given by any argument, and its " + what +
                     " is not bound by the others")
          .notes.push_back({decl.params[k].span, "declared here"});
    };
    std::optional<DType> dtype = parse_dtype(t.dtype.name);
    if (!dtype)
      if (auto it = bound.dtypes.find(t.dtype.name); it != bound.dtypes.end()) dtype = it->second;
    if (!dtype) {
      cannot_infer("dtype `" + t.dtype.name + "`");
      return std::nullopt;
    }
    Type type{*dtype, {}, {}};
    for (const auto &d : t.dims) {
      if (const auto *n = std::get_if<int64_t>(&d.value)) {
        type.shape.push_back(*n);
        continue;
      }
      if (d.is_ellipsis()) {
        if (!bound.ellipsis) {
          cannot_infer("`...`");
          return std::nullopt;
        }
        type.shape.insert(type.shape.end(), bound.ellipsis->begin(), bound.ellipsis->end());
        continue;
      }
      const std::string &sym = std::get<std::string>(d.value);
      auto it = bound.dims.find(sym);
      if (it == bound.dims.end()) {
        cannot_infer("dimension `" + sym + "`");
        return std::nullopt;
      }
      type.shape.push_back(it->second);
    }
    types.push_back(type);
  }
  return types;
}

LExpr BodyLowerer::lower_derived_call(const ast::CallExpr &call, SourceSpan span) {
  std::vector<DerivativeStepSyntax> steps;
  ast::Ident base;
  if (!DerivativeParser(diags()).parse(*call.function, steps, base)) return {};
  const std::string text = format_expr(*call.function);
  int base_module = -1;
  const ast::FuncDecl *decl = program_.find_def(base.name, module_index_, base.span, base_module);
  if (!decl) return {};
  std::vector<ir::ValueId> args;
  for (const auto &arg : call.args) {
    if (!arg.keyword.empty()) {
      diags().error("bad-argument", arg.span,
                    "keyword arguments are not supported in calls of derived functions");
      return {};
    }
    args.push_back(lower_value(*arg.value));
    if (args.back() == ir::kNoValue) return {};
  }
  std::vector<Type> arg_types;
  for (auto v : args) arg_types.push_back(function_.type(v));

  // The function derived.
  int base_index = -1;
  if (decl->kind == ast::FuncKind::Shmap) {
    base_index = program_.shmap_function(*decl, base_module, span);
    if (base_index < 0 || !check_callee_mesh(base_index, *decl, base.span)) return {};
  } else {
    int errors_before = diags().num_errors();
    auto types = derivative_param_types(*decl, steps, arg_types, span);
    if (!types) {
      if (diags().num_errors() != errors_before) return {};  // else: an arity error below
    } else {
      base_index = program_.instantiate(*decl, base_module, *types, function_.mesh, span);
      if (base_index < 0) return {};
    }
  }

  // Its derivatives' signatures.
  ir::DerivedCallee callee;
  callee.text = text;
  FunctionSignature sig;
  if (base_index >= 0) {
    callee.base = base_index;
    sig = signature_of(program_.module.functions[static_cast<size_t>(base_index)]);
  } else {
    sig = declared_signature(*decl);  // only to count the parameters below
  }
  for (const DerivativeStepSyntax &s : steps) {
    bool ok = true;
    callee.steps.push_back(select_derive_step(sig, s.kind, s.wrt, s.of, s.span, ok));
    if (!ok) return {};
    sig = derived_signature(sig, callee.steps.back());
  }
  if (args.size() != sig.params.size()) {
    std::string names;
    for (const auto &p : sig.params) names += (names.empty() ? "" : ", ") + p.name;
    diags()
        .error("arity-mismatch", span,
               "`" + text + "` takes " + std::to_string(sig.params.size()) + " argument" +
                   (sig.params.size() == 1 ? "" : "s") + " (" + names + ") but " +
                   std::to_string(args.size()) + (args.size() == 1 ? " was" : " were") + " given")
        .notes.push_back({decl->name.span, "`" + base.name + "` is defined here"});
    return {};
  }
  bool ok = base_index >= 0;
  for (size_t k = 0; k < args.size(); ++k) {
    const Type &have = arg_types[k];
    const SignatureEntry &want = sig.params[k];
    if (have.dtype == want.type.dtype && have.shape == want.type.shape) continue;
    diags()
        .error("argument-type-mismatch", span,
               "argument " + std::to_string(k + 1) + " of `" + text + "` (`" + want.name +
                   "`) is " + shape_type_str(have.dtype, have.shape) + " on each device, but " +
                   "the derived function takes " + shape_type_str(want.type.dtype, want.type.shape))
        .notes.push_back({want.span, "it stands for this"});
    ok = false;
  }
  if (!ok) return {};

  auto &known = program_.module.derived_callees;
  auto it = std::find(known.begin(), known.end(), callee);
  if (it == known.end()) it = known.insert(known.end(), callee);
  std::vector<Type> result_types;
  for (const SignatureEntry &r : sig.results) result_types.push_back(r.type.with_variance({}));
  Attrs attrs;
  attrs.call().callee = base_index;
  attrs.call().derived = static_cast<int>(it - known.begin());
  auto results = builder_.add_typed(OpCode::Call, std::move(args), attrs, result_types, span);
  return tuple_or_value(results, span);
}

}  // namespace lowering
}  // namespace spmd
