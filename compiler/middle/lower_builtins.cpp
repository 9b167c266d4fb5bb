// middle/lower_builtins.cpp — the builtin functions of the language.
//
// Each builtin binds its arguments (positional or keyword) against a small
// signature, evaluates compile-time arguments (axes, shapes, dimensions,
// dtypes, permutations) and emits IR. Sugar lowers to core ops here:
// mean -> sum * (1/n), pmean -> psum * (1/n), zeros/ones -> full,
// matmul -> einsum, keepdims -> reshape, axis_size -> a constant.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "middle/lower_internal.h"
#include "middle/spellings.h"
#include "ops/shape_rules.h"
#include "ops/variance_rules.h"
#include "spmdrt/checked.h"
#include "support/suggest.h"

namespace spmd::lowering {
namespace {

struct ParamSpec {
  const char *name;
  bool required = true;
};

/// Binds call arguments to parameter names; reports problems at the call.
class Args {
 public:
  Args(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span,
       std::initializer_list<ParamSpec> params, bool variadic_tail = false)
      : b_(b), call_(call), span_(span) {
    std::vector<ParamSpec> ps(params);
    size_t pos = 0;
    bool seen_keyword = false;
    for (const auto &arg : call.args) {
      if (arg.keyword.empty()) {
        if (seen_keyword) {
          fail(arg.span, "positional argument after a keyword argument");
          return;
        }
        if (pos < ps.size() && !(variadic_tail && pos == ps.size() - 1)) {
          bound_[ps[pos].name] = arg.value.get();
          ++pos;
        } else if (variadic_tail) {
          rest_.push_back(arg.value.get());
        } else {
          fail(arg.span, "`" + call.callee.name + "` takes at most " + std::to_string(ps.size()) +
                             " argument" + (ps.size() == 1 ? "" : "s"));
          return;
        }
        continue;
      }
      seen_keyword = true;
      bool known = false;
      for (const auto &p : ps) known |= arg.keyword == p.name;
      if (!known) {
        std::string names;
        std::vector<std::string> params;
        for (const auto &p : ps) {
          names += (names.empty() ? "`" : ", `") + std::string(p.name) + "`";
          params.emplace_back(p.name);
        }
        Diagnostic &d = fail(arg.span, "`" + call.callee.name + "` has no parameter `" +
                                           arg.keyword + "` (its parameters: " + names + ")");
        SourceSpan keyword_span{arg.span.file, arg.span.begin,
                                arg.span.begin + static_cast<uint32_t>(arg.keyword.size())};
        suggest(d, keyword_span, arg.keyword, foreign_keyword(arg.keyword, params), params);
        return;
      }
      if (bound_.count(arg.keyword)) {
        fail(arg.span, "argument `" + arg.keyword + "` is given twice");
        return;
      }
      bound_[arg.keyword] = arg.value.get();
    }
    for (const auto &p : ps)
      if (p.required && !bound_.count(p.name) && !(variadic_tail && &p == &ps.back())) {
        fail(span, "`" + call.callee.name + "` needs argument `" + p.name + "`");
        return;
      }
  }
  bool ok() const { return ok_; }
  bool has(const char *name) const { return bound_.count(name) > 0; }
  const ast::Expr *get(const char *name) const {
    auto it = bound_.find(name);
    return it == bound_.end() ? nullptr : it->second;
  }
  const std::vector<const ast::Expr *> &rest() const { return rest_; }

  ir::ValueId value(const char *name, std::optional<DType> hint = std::nullopt) {
    return b_.lower_value(*get(name), hint);
  }
  std::optional<std::vector<int>> axes(const char *name) { return b_.eval_axes(*get(name)); }
  std::optional<int64_t> integer(const char *name, int64_t dflt) {
    if (!has(name)) return dflt;
    return b_.eval_int(*get(name), (std::string("`") + name + "`").c_str());
  }
  std::optional<Shape> shape(const char *name) {
    const ast::Expr *e = get(name);
    Shape s;
    if (auto *t = std::get_if<ast::TupleExpr>(&e->node)) {
      for (const auto &el : t->elements) {
        auto v = b_.eval_int(*el, "a shape entry");
        if (!v) return std::nullopt;
        s.push_back(*v);
      }
    } else if (auto *l = std::get_if<ast::ListExpr>(&e->node)) {
      for (const auto &el : l->elements) {
        auto v = b_.eval_int(*el, "a shape entry");
        if (!v) return std::nullopt;
        s.push_back(*v);
      }
    } else {
      auto v = b_.eval_int(*e, "a shape");
      if (!v) return std::nullopt;
      s.push_back(*v);
    }
    return s;
  }
  std::optional<bool> boolean(const char *name, bool dflt) {
    if (!has(name)) return dflt;
    if (auto *l = std::get_if<ast::BoolLit>(&get(name)->node)) return l->value;
    fail(get(name)->span, std::string("`") + name + "` must be `true` or `false`");
    return std::nullopt;
  }
  std::optional<DType> dtype(const char *name, DType dflt) {
    if (!has(name)) return dflt;
    const ast::Expr &e = *get(name);
    auto *n = std::get_if<ast::NameExpr>(&e.node);
    if (n) {
      if (auto d = parse_dtype(n->name)) return d;
      if (auto it = b_.dtype_symbols.find(n->name); it != b_.dtype_symbols.end()) return it->second;
    }
    Diagnostic &d =
        fail(e.span, std::string("`") + name + "` must be a dtype (f32, f64, bf16, i32, bool)");
    if (n)
      suggest(d, e.span, n->name, foreign_dtype(n->name), {"f32", "f64", "bf16", "i32", "bool"});
    return std::nullopt;
  }
  Diagnostic &fail(SourceSpan s, std::string message) {
    ok_ = false;
    return b_.diags().error("bad-argument", s, std::move(message));
  }

 private:
  BodyLowerer &b_;
  const ast::CallExpr &call_;
  SourceSpan span_;
  std::map<std::string, const ast::Expr *> bound_;
  std::vector<const ast::Expr *> rest_;
  bool ok_ = true;
};

LExpr value_or_invalid(ir::ValueId v, SourceSpan span) {
  if (v == ir::kNoValue) return {};
  return LExpr::of(v, span);
}

/// Normalises possibly negative dimension indices against `rank`.
std::optional<std::vector<int64_t>> normalize_dims(BodyLowerer &b, std::vector<int64_t> dims,
                                                   int64_t rank, SourceSpan span) {
  for (auto &d : dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) {
      b.diags().error("bad-argument", span,
                      "dimension out of range for a value of rank " + std::to_string(rank));
      return std::nullopt;
    }
  }
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) {
    b.diags().error("bad-argument", span, "a dimension is listed twice");
    return std::nullopt;
  }
  return dims;
}

BuiltinHandler unary(OpCode op) {
  return [op](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
    Args a(b, call, span, {{"x"}});
    if (!a.ok()) return {};
    ir::ValueId x =
        a.value("x", op == OpCode::Not ? std::optional(DType::Bool) : std::optional(DType::F32));
    return value_or_invalid(b.emit(op, {x}, {}, span), span);
  };
}

BuiltinHandler binary_fn(OpCode op) {
  return [op](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
    Args a(b, call, span, {{"a"}, {"b"}});
    if (!a.ok()) return {};
    LExpr x = b.lower_expr(*a.get("a"));
    LExpr y = b.lower_expr(*a.get("b"));
    return b.binary(op, x, y, span);
  };
}

BuiltinHandler reduction(OpCode op, bool mean) {
  return [op, mean](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
    Args a(b, call, span, {{"x"}, {"axes", false}, {"keepdims", false}});
    if (!a.ok()) return {};
    ir::ValueId x = a.value("x", DType::F32);
    auto keep = a.boolean("keepdims", false);
    if (x == ir::kNoValue || !keep) return {};
    const Type xt = b.function().type(x);
    std::vector<int64_t> dims;
    if (a.has("axes")) {
      auto s = a.shape("axes");
      if (!s) return {};
      auto n = normalize_dims(b, *s, xt.rank(), a.get("axes")->span);
      if (!n) return {};
      dims = *n;
    } else {
      dims.resize(static_cast<size_t>(xt.rank()));
      std::iota(dims.begin(), dims.end(), 0);
    }
    Attrs attrs;
    attrs.reduce().dims = dims;
    ir::ValueId r = b.emit(op, {x}, attrs, span);
    if (r == ir::kNoValue) return {};
    if (mean) {
      int64_t count = 1;
      for (auto d : dims) count *= xt.shape[d];
      if (!rt::is_float(xt.dtype)) {
        b.diags().error("type-error", span, "mean needs a floating-point operand");
        return {};
      }
      Attrs c;
      c.creation().dtype = xt.dtype;
      c.creation().value = 1.0 / static_cast<double>(std::max<int64_t>(count, 1));
      ir::ValueId scale = b.emit(OpCode::Constant, {}, c, span, ir::Origin::Lowering);
      r = b.emit(OpCode::Mul, {r, scale}, {}, span, ir::Origin::Lowering);
    }
    if (keep.value_or(false) && r != ir::kNoValue) {
      Attrs rs;
      rs.layout().shape = xt.shape;
      for (auto d : dims) rs.layout().shape[d] = 1;
      r = b.emit(OpCode::Reshape, {r}, rs, span, ir::Origin::Lowering);
    }
    return value_or_invalid(r, span);
  };
}

/// The operands of a collective's argument `x`: its value, or each element of
/// a tuple `(a, b, ...)` when `op` has a combined form (then `combined` is
/// set). Empty after reporting an error (an empty tuple, a failed element).
std::vector<ir::ValueId> collective_operands(BodyLowerer &b, const Args &a,
                                             const ast::CallExpr &call, OpCode op, bool &combined) {
  const ast::Expr &x = *a.get("x");
  const auto *tuple = std::get_if<ast::TupleExpr>(&x.node);
  combined = tuple && is_combinable_collective(op);
  std::vector<ir::ValueId> xs;
  if (!combined) {
    xs.push_back(b.lower_value(x, DType::F32));
  } else if (tuple->elements.empty()) {
    b.diags().error("bad-argument", x.span, "`" + call.callee.name + "` of an empty tuple");
    return {};
  } else {
    for (const auto &e : tuple->elements) xs.push_back(b.lower_value(*e, DType::F32));
  }
  if (std::count(xs.begin(), xs.end(), ir::kNoValue)) return {};
  return xs;
}

/// A collective's value: its result, or the tuple of a combined one's results.
LExpr collective_value(const std::vector<ir::ValueId> &rs, bool combined, SourceSpan span) {
  if (!combined) return value_or_invalid(rs[0], span);
  LExpr e;
  e.kind = LExpr::Kind::Tuple;
  e.tuple = rs;
  e.span = span;
  return e;
}

/// psum-like collectives: (x, axes). psum, pmean, pmax and pmin also take a
/// tuple, `psum((a, b, c), axes)`: one combined collective, a tuple of results.
BuiltinHandler collective(OpCode op, bool mean = false) {
  return [op, mean](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
    Args a(b, call, span, {{"x"}, {"axes"}});
    if (!a.ok()) return {};
    bool combined = false;
    std::vector<ir::ValueId> xs = collective_operands(b, a, call, op, combined);
    auto axes = a.axes("axes");
    if (!axes || xs.empty()) return {};
    Attrs attrs;
    attrs.collective().axes = *axes;
    std::vector<ir::ValueId> rs = b.emit_all(op, xs, attrs, span);
    if (rs.empty()) return {};
    if (mean) {
      for (ir::ValueId &r : rs) {
        const Type &t = b.function().type(r);
        if (!rt::is_float(t.dtype)) {
          b.diags().error("type-error", span, "pmean needs a floating-point operand");
          return {};
        }
        Attrs c;
        c.creation().dtype = t.dtype;
        c.creation().value = 1.0 / static_cast<double>(axes_size(b.mesh(), *axes));
        ir::ValueId scale = b.emit(OpCode::Constant, {}, c, span, ir::Origin::Lowering);
        r = b.emit(OpCode::Mul, {r, scale}, {}, span, ir::Origin::Lowering);
        if (r == ir::kNoValue) return {};
      }
    }
    return collective_value(rs, combined, span);
  };
}

/// Gather/scatter collectives: (x, axes, axis=0, tiled=true). all_gather,
/// all_gather_invariant and psum_scatter also take a tuple,
/// `all_gather((a, b), axes, axis=0)`: one combined collective, a tuple of
/// results; the components share the axes, the dimension and `tiled` (a
/// negative dimension must name the same dimension of every component).
BuiltinHandler gather_like(OpCode op, const char *dim_name) {
  return [op, dim_name](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
    Args a(b, call, span, {{"x"}, {"axes"}, {dim_name, false}, {"tiled", false}});
    if (!a.ok()) return {};
    bool combined = false;
    std::vector<ir::ValueId> xs = collective_operands(b, a, call, op, combined);
    auto axes = a.axes("axes");
    auto dim = a.integer(dim_name, 0);
    auto tiled = a.boolean("tiled", true);
    if (!axes || !dim || !tiled || xs.empty()) return {};
    Attrs attrs;
    attrs.collective().axes = *axes;
    attrs.collective().tiled = *tiled;
    for (size_t k = 0; k < xs.size(); ++k) {
      const int64_t rank = b.function().type(xs[k]).rank();
      const int64_t d = *dim < 0 ? *dim + rank + (*tiled ? 0 : 1) : *dim;
      if (k > 0 && d != attrs.collective().dim) {
        b.diags().error("bad-argument", a.get(dim_name) ? a.get(dim_name)->span : span,
                        "`" + std::string(dim_name) + "=" + std::to_string(*dim) +
                            "` names dimension " + std::to_string(attrs.collective().dim) +
                            " of the first component but " + std::to_string(d) + " of component " +
                            std::to_string(k) +
                            "; a combined collective gathers or scatters one dimension");
        return {};
      }
      attrs.collective().dim = d;
    }
    std::vector<ir::ValueId> rs = b.emit_all(op, xs, attrs, span);
    if (rs.empty()) return {};
    return collective_value(rs, combined, span);
  };
}

LExpr lower_all_to_all(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"axes"}, {"split_axis"}, {"concat_axis"}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  auto axes = a.axes("axes");
  auto split = a.integer("split_axis", 0);
  auto concat = a.integer("concat_axis", 0);
  if (x == ir::kNoValue || !axes || !split || !concat) return {};
  int64_t rank = b.function().type(x).rank();
  Attrs attrs;
  attrs.collective().axes = *axes;
  attrs.collective().dim = *split < 0 ? *split + rank : *split;
  attrs.collective().concat_dim = *concat < 0 ? *concat + rank : *concat;
  return value_or_invalid(b.emit(OpCode::AllToAll, {x}, attrs, span), span);
}

LExpr lower_ppermute(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"axis"}, {"perm", false}, {"shift", false}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  auto axes = a.axes("axis");
  if (x == ir::kNoValue || !axes) return {};
  // Over several axes the ranks are the flattened index along them, first
  // axis major (as axis_index numbers them).
  int64_t n = b.mesh().group_size(*axes);
  Attrs attrs;
  attrs.collective().axes = *axes;
  if (a.has("perm") == a.has("shift")) {
    b.diags().error("bad-argument", span, "ppermute needs exactly one of `perm` and `shift`");
    return {};
  }
  if (a.has("shift")) {
    auto shift = a.integer("shift", 0);
    if (!shift) return {};
    for (int64_t i = 0; i < n; ++i)
      attrs.collective().perm.emplace_back(i, (((i + *shift) % n) + n) % n);
  } else {
    const ast::Expr *p = a.get("perm");
    auto *list = std::get_if<ast::ListExpr>(&p->node);
    auto *tuple = std::get_if<ast::TupleExpr>(&p->node);
    const std::vector<ast::ExprPtr> *elems = list    ? &list->elements
                                             : tuple ? &tuple->elements
                                                     : nullptr;
    if (!elems) {
      b.diags().error("bad-argument", p->span,
                      "`perm` must be a list of (source, destination) pairs");
      return {};
    }
    std::vector<bool> src_seen(static_cast<size_t>(n)), dst_seen(static_cast<size_t>(n));
    for (const auto &e : *elems) {
      auto *pair = std::get_if<ast::TupleExpr>(&e->node);
      if (!pair || pair->elements.size() != 2) {
        b.diags().error("bad-argument", e->span, "expected a (source, destination) pair");
        return {};
      }
      auto s = b.eval_int(*pair->elements[0], "a source rank");
      auto d = b.eval_int(*pair->elements[1], "a destination rank");
      if (!s || !d) return {};
      if (*s < 0 || *s >= n || *d < 0 || *d >= n) {
        b.diags().error("bad-argument", e->span,
                        "ranks must be between 0 and " + std::to_string(n - 1));
        return {};
      }
      if (src_seen[*s] || dst_seen[*d]) {
        b.diags().error("bad-argument", e->span,
                        "`perm` is not a permutation: a source or destination repeats");
        return {};
      }
      src_seen[*s] = dst_seen[*d] = true;
      attrs.collective().perm.emplace_back(*s, *d);
    }
  }
  return value_or_invalid(b.emit(OpCode::Ppermute, {x}, attrs, span), span);
}

std::optional<double> literal_value(BodyLowerer &b, const ast::Expr *v);

LExpr lower_creation(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span, double fill,
                     bool has_value) {
  Args a = has_value ? Args(b, call, span, {{"shape"}, {"value"}, {"dtype", false}})
                     : Args(b, call, span, {{"shape"}, {"dtype", false}});
  if (!a.ok()) return {};
  auto shape = a.shape("shape");
  auto dtype = a.dtype("dtype", DType::F32);
  if (!shape || !dtype) return {};
  Attrs attrs;
  attrs.creation().shape = *shape;
  attrs.creation().dtype = *dtype;
  attrs.creation().value = fill;
  if (has_value) {
    auto v = literal_value(b, a.get("value"));
    if (!v) return {};
    attrs.creation().value = *v;
  }
  OpCode op = shape->empty() ? OpCode::Constant : OpCode::Full;
  return value_or_invalid(b.emit(op, {}, attrs, span), span);
}

/// The dimensions named by argument `name` (an int or a tuple, negative from
/// the end) of a value of rank `rank`, sorted; `all` when the argument is absent.
std::optional<std::vector<int64_t>> dims_argument(BodyLowerer &b, Args &a, const char *name,
                                                  int64_t rank) {
  if (!a.has(name)) {
    std::vector<int64_t> all(static_cast<size_t>(rank));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  auto s = a.shape(name);
  if (!s) return std::nullopt;
  return normalize_dims(b, *s, rank, a.get(name)->span);
}

/// take's and scatter_add's `axis` (negative from the end) and `mode`
/// ("check" or "fill") for an array of rank `rank`.
std::optional<Attrs> gather_attrs(BodyLowerer &b, Args &a, int64_t rank) {
  auto axis = a.integer("axis", 0);
  if (!axis) return std::nullopt;
  Attrs attrs;
  attrs.gather().axis = *axis < 0 ? *axis + rank : *axis;
  if (a.has("mode")) {
    const ast::Expr *m = a.get("mode");
    auto *lit = std::get_if<ast::StringLit>(&m->node);
    if (!lit || (lit->value != "check" && lit->value != "fill")) {
      b.diags().error("bad-argument", m->span,
                      "`mode` is \"check\" (an index out of range is an error) or \"fill\" "
                      "(it reads zeros and drops updates)");
      return std::nullopt;
    }
    attrs.gather().mode = lit->value == "fill" ? rt::IndexMode::Fill : rt::IndexMode::Check;
  }
  return attrs;
}

/// A literal fill value (`full`, `full_like`): an optionally negated number or bool.
std::optional<double> literal_value(BodyLowerer &b, const ast::Expr *v) {
  double sign = 1;
  if (auto *u = std::get_if<ast::UnaryExpr>(&v->node); u && u->op == ast::UnaryOpKind::Neg) {
    sign = -1;
    v = u->operand.get();
  }
  if (auto *f = std::get_if<ast::FloatLit>(&v->node)) return sign * f->value;
  if (auto *i = std::get_if<ast::IntLit>(&v->node)) return sign * static_cast<double>(i->value);
  if (auto *bl = std::get_if<ast::BoolLit>(&v->node)) return bl->value ? 1.0 : 0.0;
  b.diags().error("bad-argument", v->span, "the fill value must be a literal");
  return std::nullopt;
}

/// clip(x, min, max): maximum(minimum(x, max), min) as NumPy; either bound may be left out.
LExpr lower_clip(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"min", false}, {"max", false}});
  if (!a.ok()) return {};
  if (!a.has("min") && !a.has("max")) {
    b.diags().error("bad-argument", span, "`clip` needs `min`, `max` or both");
    return {};
  }
  LExpr r = b.lower_expr(*a.get("x"));
  if (a.has("min")) r = b.binary(OpCode::Max, r, b.lower_expr(*a.get("min")), span);
  if (a.has("max")) r = b.binary(OpCode::Min, r, b.lower_expr(*a.get("max")), span);
  return r;
}

/// var(x, axes=all, keepdims=false, ddof=0) = sum((x - mean(x))^2) / (n - ddof).
LExpr lower_var(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"axes", false}, {"keepdims", false}, {"ddof", false}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  auto keep = a.boolean("keepdims", false);
  auto ddof = a.integer("ddof", 0);
  if (x == ir::kNoValue || !keep || !ddof) return {};
  const Type xt = b.function().type(x);
  if (!rt::is_float(xt.dtype)) {
    b.diags().error(
        "type-error", span,
        "`var` needs a floating-point operand, got " + std::string(dtype_name(xt.dtype)));
    return {};
  }
  auto dims = dims_argument(b, a, "axes", xt.rank());
  if (!dims) return {};
  int64_t n = 1;
  for (int64_t d : *dims) n *= xt.shape[d];
  Shape kept = xt.shape;
  for (int64_t d : *dims) kept[d] = 1;
  auto constant = [&](double v) {
    Attrs c;
    c.creation().dtype = xt.dtype;
    c.creation().value = v;
    return b.emit(OpCode::Constant, {}, c, span, ir::Origin::Lowering);
  };
  auto sum_kept = [&](ir::ValueId v) {
    Attrs sum;
    sum.reduce().dims = *dims;
    Attrs shape;
    shape.layout().shape = kept;
    return b.emit(OpCode::Reshape,
                  {b.emit(OpCode::ReduceSum, {v}, sum, span, ir::Origin::Lowering)}, shape, span,
                  ir::Origin::Lowering);
  };
  ir::ValueId mean = b.emit(OpCode::Mul, {sum_kept(x), constant(1.0 / std::max<int64_t>(n, 1))}, {},
                            span, ir::Origin::Lowering);
  ir::ValueId centered = b.emit(OpCode::Sub, {x, mean}, {}, span, ir::Origin::Lowering);
  ir::ValueId squares = b.emit(OpCode::Mul, {centered, centered}, {}, span, ir::Origin::Lowering);
  ir::ValueId r =
      b.emit(OpCode::Mul, {sum_kept(squares), constant(1.0 / static_cast<double>(n - *ddof))}, {},
             span, ir::Origin::Lowering);
  if (!*keep) {
    Attrs shape;
    for (int64_t d = 0; d < xt.rank(); ++d)
      if (std::find(dims->begin(), dims->end(), d) == dims->end())
        shape.layout().shape.push_back(xt.shape[d]);
    r = b.emit(OpCode::Reshape, {r}, shape, span, ir::Origin::Lowering);
  }
  return value_or_invalid(r, span);
}

/// flip(x, axes=all): the elements in reverse order along `axes`.
LExpr lower_flip(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"axes", false}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  if (x == ir::kNoValue) return {};
  auto dims = dims_argument(b, a, "axes", b.function().type(x).rank());
  if (!dims) return {};
  Attrs attrs;
  attrs.layout().dims = *dims;
  return value_or_invalid(b.emit(OpCode::Reverse, {x}, attrs, span), span);
}

/// squeeze(x, axes=all size-1 dimensions): a reshape without those dimensions.
LExpr lower_squeeze(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"axes", false}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  if (x == ir::kNoValue) return {};
  const Type t = b.function().type(x);
  std::vector<int64_t> dims;
  if (a.has("axes")) {
    auto named = dims_argument(b, a, "axes", t.rank());
    if (!named) return {};
    for (int64_t d : *named)
      if (t.shape[d] != 1) {
        b.diags().error("bad-argument", a.get("axes")->span,
                        "cannot squeeze dimension " + std::to_string(d) + " of " +
                            shape_type_str(t.dtype, t.shape) + ": its size is " +
                            std::to_string(t.shape[d]) + ", not 1 (local shape, per device)");
        return {};
      }
    dims = *named;
  } else {
    for (int64_t d = 0; d < t.rank(); ++d)
      if (t.shape[d] == 1) dims.push_back(d);
  }
  Attrs attrs;
  for (int64_t d = 0; d < t.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      attrs.layout().shape.push_back(t.shape[d]);
  return value_or_invalid(b.emit(OpCode::Reshape, {x}, attrs, span), span);
}

/// expand_dims(x, axis): new dimensions of size 1 at `axis` (an int or a tuple,
/// positions in the result, negative from its end).
LExpr lower_expand_dims(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"axis"}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  auto axes = a.shape("axis");
  if (x == ir::kNoValue || !axes) return {};
  const Type t = b.function().type(x);
  const int64_t out_rank = t.rank() + static_cast<int64_t>(axes->size());
  auto dims = normalize_dims(b, *axes, out_rank, a.get("axis")->span);
  if (!dims) return {};
  Attrs attrs;
  for (int64_t d = 0, k = 0; d < out_rank; ++d)
    attrs.layout().shape.push_back(
        std::find(dims->begin(), dims->end(), d) != dims->end() ? 1 : t.shape[k++]);
  return value_or_invalid(b.emit(OpCode::Reshape, {x}, attrs, span), span);
}

/// The values of a tuple or list argument (`concat((a, b))`, `stack([a, b])`), lowered;
/// `elements` (if given) receives the element expressions, for locating later errors.
std::optional<std::vector<ir::ValueId>> lower_value_list(
    BodyLowerer &b, const ast::Expr &values, const char *builtin,
    const std::vector<ast::ExprPtr> **elements = nullptr, DType hint = DType::F32) {
  auto *list = std::get_if<ast::ListExpr>(&values.node);
  auto *tuple = std::get_if<ast::TupleExpr>(&values.node);
  const std::vector<ast::ExprPtr> *elems = list    ? &list->elements
                                           : tuple ? &tuple->elements
                                                   : nullptr;
  if (!elems || elems->empty()) {
    b.diags().error("bad-argument", values.span,
                    std::string(builtin) + " takes a non-empty tuple or list of values");
    return std::nullopt;
  }
  if (elements) *elements = elems;
  std::vector<ir::ValueId> ops;
  for (const auto &e : *elems) {
    ops.push_back(b.lower_value(*e, hint));
    if (ops.back() == ir::kNoValue) return std::nullopt;
  }
  return ops;
}

/// stack((a, b, ...), axis=0): values of one shape joined along a new dimension.
LExpr lower_stack(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"values"}, {"axis", false}});
  if (!a.ok()) return {};
  const ast::Expr *vals = a.get("values");
  const std::vector<ast::ExprPtr> *elems = nullptr;
  auto lowered = lower_value_list(b, *vals, "stack", &elems);
  if (!lowered) return {};
  std::vector<ir::ValueId> ops = std::move(*lowered);
  const Type first = b.function().type(ops[0]);
  for (size_t k = 1; k < ops.size(); ++k) {
    const Type &t = b.function().type(ops[k]);
    if (t.shape != first.shape || t.dtype != first.dtype) {
      b.diags().error("type-error", (*elems)[k]->span,
                      "stack needs values of one type: the first is " +
                          shape_type_str(first.dtype, first.shape) + " but this one is " +
                          shape_type_str(t.dtype, t.shape) + " (local shapes, per device)");
      return {};
    }
  }
  auto axis = a.integer("axis", 0);
  if (!axis) return {};
  const int64_t out_rank = first.rank() + 1;
  int64_t d = *axis < 0 ? *axis + out_rank : *axis;
  if (d < 0 || d >= out_rank) {
    b.diags().error("bad-argument", a.get("axis")->span,
                    "axis " + std::to_string(*axis) + " is out of range for a result of rank " +
                        std::to_string(out_rank));
    return {};
  }
  Attrs r;
  r.layout().shape = first.shape;
  r.layout().shape.insert(r.layout().shape.begin() + d, 1);
  for (auto &v : ops) v = b.emit(OpCode::Reshape, {v}, r, span, ir::Origin::Lowering);
  if (ops.size() == 1) return value_or_invalid(ops[0], span);
  Attrs c;
  c.layout().dim = d;
  return value_or_invalid(b.emit(OpCode::Concat, ops, c, span), span);
}

/// zeros_like / ones_like / full_like(x, [value,] dtype=x's): a constant of x's (local) shape.
LExpr lower_like(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span, double fill,
                 bool has_value) {
  Args a = has_value ? Args(b, call, span, {{"x"}, {"value"}, {"dtype", false}})
                     : Args(b, call, span, {{"x"}, {"dtype", false}});
  if (!a.ok()) return {};
  ir::ValueId x = a.value("x", DType::F32);
  if (x == ir::kNoValue) return {};
  const Type t = b.function().type(x);
  auto dtype = a.dtype("dtype", t.dtype);
  if (!dtype) return {};
  Attrs attrs;
  attrs.creation().shape = t.shape;
  attrs.creation().dtype = *dtype;
  attrs.creation().value = fill;
  if (has_value) {
    auto v = literal_value(b, a.get("value"));
    if (!v) return {};
    attrs.creation().value = *v;
  }
  OpCode op = t.shape.empty() ? OpCode::Constant : OpCode::Full;
  return value_or_invalid(b.emit(op, {}, attrs, span), span);
}

/// `P(i, None, (j, k))` written as an argument, as the ast::SpecExpr a
/// signature would hold; reports anything else.
std::optional<ast::SpecExpr> spec_argument(BodyLowerer &b, const ast::Expr &e) {
  auto fail = [&](SourceSpan at, const std::string &what) -> std::optional<ast::SpecExpr> {
    b.diags().error("bad-argument", at, what).fix = "write e.g. `P(i, None)` or `P((i, j))`";
    return std::nullopt;
  };
  auto *call = std::get_if<ast::CallExpr>(&e.node);
  if (call == nullptr || call->callee.name != "P")
    return fail(e.span, "expected a partition spec `P(...)`");
  ast::SpecExpr spec;
  spec.span = e.span;
  auto axis = [&](const ast::Expr &x) -> std::optional<ast::Ident> {
    if (auto *n = std::get_if<ast::NameExpr>(&x.node)) return ast::Ident{n->name, x.span};
    return std::nullopt;
  };
  for (const ast::Argument &arg : call->args) {
    ast::SpecDim dim;
    dim.span = arg.span;
    const ast::Expr &v = *arg.value;
    if (!arg.keyword.empty()) return fail(arg.span, "a partition spec takes no keyword arguments");
    if (std::holds_alternative<ast::NoneLit>(v.node)) {
      // an unsplit dimension
    } else if (auto name = axis(v)) {
      dim.axes.push_back(*name);
    } else if (auto *t = std::get_if<ast::TupleExpr>(&v.node)) {
      for (const auto &el : t->elements) {
        auto n = axis(*el);
        if (!n) return fail(el->span, "expected a mesh axis name");
        dim.axes.push_back(*n);
      }
    } else {
      return fail(v.span, "expected a mesh axis, a tuple of axes or `None`");
    }
    spec.dims.push_back(std::move(dim));
  }
  return spec;
}

LExpr lower_constrain(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"x"}, {"spec"}});
  if (!a.ok()) return {};
  if (b.function().kind != ir::FunctionKind::Sharded) {
    b.diags()
        .error("constrain-outside-sharded", span,
               "`constrain` is a sharding requirement for `spmdc shard`: it is only allowed in "
               "the body of a `sharded` function")
        .fix = "in a shmap every value is already split by the signature's specs; remove the call";
    return {};
  }
  ir::ValueId x = a.value("x", DType::F32);
  auto written = spec_argument(b, *a.get("spec"));
  if (x == ir::kNoValue || !written) return {};
  const Shape shape = b.function().type(x).shape;
  auto spec = b.program().resolve_spec(*written, b.mesh(), shape, a.get("x")->span);
  if (!spec) return {};
  Attrs attrs;
  attrs.constrain().sharding = *spec;
  return value_or_invalid(b.emit(OpCode::Constrain, {x}, attrs, span), span);
}

// ---- random numbers (docs/language.md, "Random numbers") ----

/// A draw: `op(key, shape, [lo, hi,] global_shape=..., offset=(...))`; the
/// last two only in what `spmdc shard` prints (a block of a global draw).
LExpr lower_draw(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span, OpCode op) {
  const bool bounds = random_param_count(op) == 3;
  const bool has_dtype = op == OpCode::RandomUniform;
  std::initializer_list<ParamSpec> with_bounds = {
      {"key"},          {"shape", false},        {"lo", false},    {"hi", false},
      {"dtype", false}, {"global_shape", false}, {"offset", false}};
  std::initializer_list<ParamSpec> without = {
      {"key"}, {"shape", false}, {"global_shape", false}, {"offset", false}};
  Args a = bounds ? Args(b, call, span, with_bounds) : Args(b, call, span, without);
  if (!a.ok()) return {};
  if (!has_dtype && a.has("dtype")) {
    a.fail(a.get("dtype")->span,
           std::string("`") + std::string(op_spelling(op)) + "` has no `dtype` parameter");
    return {};
  }
  ir::ValueId key = a.value("key", DType::Key);
  std::optional<Shape> shape = a.has("shape") ? a.shape("shape") : std::optional<Shape>(Shape{});
  if (key == ir::kNoValue || !shape) return {};
  Attrs attrs;
  attrs.random().shape = *shape;
  switch (op) {
    case OpCode::RandomSplit:
      attrs.random().dtype = DType::Key;
      break;
    case OpCode::RandomBits:
    case OpCode::RandomInt:
      attrs.random().dtype = DType::I32;
      break;
    default: {
      auto d = a.dtype("dtype", DType::F32);
      if (!d) return {};
      attrs.random().dtype = *d;
    }
  }
  std::vector<ir::ValueId> operands{key};
  if (bounds) {
    const DType t = attrs.random().dtype;
    const bool ints = op == OpCode::RandomInt;
    if (ints && (!a.has("lo") || !a.has("hi"))) {
      a.fail(span, "`randint` needs `lo` and `hi` (values in [lo, hi))");
      return {};
    }
    for (const char *name : {"lo", "hi"}) {
      ir::ValueId v;
      if (a.has(name)) {
        v = a.value(name, t);
      } else {
        Attrs c;
        c.creation().dtype = t;
        c.creation().value = std::string(name) == "lo" ? 0.0 : 1.0;
        v = b.emit(OpCode::Constant, {}, c, span, ir::Origin::Lowering);
      }
      if (v == ir::kNoValue) return {};
      operands.push_back(v);
    }
  }
  if (a.has("global_shape") != a.has("offset")) {
    a.fail(span, "`global_shape` and `offset` go together (a block of a global draw)");
    return {};
  }
  if (a.has("global_shape")) {
    auto global = a.shape("global_shape");
    if (!global) return {};
    attrs.random().global = *global;
    auto offsets = lower_value_list(b, *a.get("offset"), "`offset`", nullptr, DType::I32);
    if (!offsets) return {};
    operands.insert(operands.end(), offsets->begin(), offsets->end());
  }
  return value_or_invalid(b.emit(op, operands, attrs, span), span);
}

/// bernoulli(key, p=0.5, shape=p's shape): uniform(key, shape) < p, as JAX.
LExpr lower_bernoulli(BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) {
  Args a(b, call, span, {{"key"}, {"p", false}, {"shape", false}});
  if (!a.ok()) return {};
  ir::ValueId key = a.value("key", DType::Key);
  ir::ValueId p;
  if (a.has("p")) {
    p = a.value("p", DType::F32);
  } else {
    Attrs c;
    c.creation().dtype = DType::F32;
    c.creation().value = 0.5;
    p = b.emit(OpCode::Constant, {}, c, span, ir::Origin::Lowering);
  }
  if (key == ir::kNoValue || p == ir::kNoValue) return {};
  const Type pt = b.function().type(p);
  std::optional<Shape> shape = a.has("shape") ? a.shape("shape") : std::optional<Shape>(pt.shape);
  if (!shape) return {};
  Attrs attrs;
  attrs.random().shape = *shape;
  attrs.random().dtype = rt::is_float(pt.dtype) && pt.dtype != DType::BF16 ? pt.dtype : DType::F32;
  std::vector<ir::ValueId> operands{key};
  for (double bound : {0.0, 1.0}) {
    Attrs c;
    c.creation().dtype = attrs.random().dtype;
    c.creation().value = bound;
    operands.push_back(b.emit(OpCode::Constant, {}, c, span, ir::Origin::Lowering));
  }
  ir::ValueId u = b.emit(OpCode::RandomUniform, operands, attrs, span);
  if (u == ir::kNoValue) return {};
  return b.binary(OpCode::Lt, LExpr::of(u, span), LExpr::of(p, span), span);
}

const std::map<std::string, BuiltinHandler> &builtins() {
  static const std::map<std::string, BuiltinHandler> table = [] {
    std::map<std::string, BuiltinHandler> t;
    // Elementwise math.
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  t[spelling] = unary(OpCode::Name);
#include "spmdrt/unary_math.def"
    t["maximum"] = binary_fn(OpCode::Max);
    t["minimum"] = binary_fn(OpCode::Min);
    t["pow"] = binary_fn(OpCode::Pow);
    t["cast"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"dtype"}});
      if (!a.ok()) return {};
      auto d = a.dtype("dtype", DType::F32);
      ir::ValueId x = a.value("x", DType::F32);
      if (!d || x == ir::kNoValue) return {};
      Attrs attrs;
      attrs.cast().dtype = *d;
      return value_or_invalid(b.emit(OpCode::Cast, {x}, attrs, span), span);
    };
    t["where"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"cond"}, {"a"}, {"b"}});
      if (!a.ok()) return {};
      ir::ValueId c = a.value("cond", DType::Bool);
      LExpr x = b.lower_expr(*a.get("a"));
      LExpr y = b.lower_expr(*a.get("b"));
      if (c == ir::kNoValue || !x.ok() || !y.ok()) return {};
      std::optional<DType> hint;
      if (x.kind == LExpr::Kind::Value) hint = b.function().type(x.value).dtype;
      if (y.kind == LExpr::Kind::Value) hint = b.function().type(y.value).dtype;
      ir::ValueId vx = b.materialize(x, hint), vy = b.materialize(y, hint);
      return value_or_invalid(b.emit(OpCode::Select, {c, vx, vy}, {}, span), span);
    };
    t["stop_gradient"] = unary(OpCode::StopGradient);
    t["astype"] = t["cast"];
    t["clip"] = lower_clip;
    // Reductions.
    t["sum"] = reduction(OpCode::ReduceSum, false);
    t["argmax"] = reduction(OpCode::ArgMax, false);
    t["argmin"] = reduction(OpCode::ArgMin, false);
    t["var"] = lower_var;
    t["mean"] = reduction(OpCode::ReduceSum, true);
    t["max"] = reduction(OpCode::ReduceMax, false);
    t["min"] = reduction(OpCode::ReduceMin, false);
    // Contractions.
    t["matmul"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"a"}, {"b"}});
      if (!a.ok()) return {};
      return b.binary(OpCode::Einsum, b.lower_expr(*a.get("a")), b.lower_expr(*a.get("b")), span,
                      "matmul");
    };
    // `print(...)` is a statement (lower_body.cpp, lower_call_stmt); as a value it is an error.
    t["print"] = [](BodyLowerer &b, const ast::CallExpr &, SourceSpan span) -> LExpr {
      b.diags()
          .error("bad-argument", span, "`print` has no value: it is a statement of its own")
          .fix = "write `print(\"...{}...\", x)` on its own line";
      return {};
    };
    t["einsum"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"spec"}, {"operands"}}, /*variadic_tail=*/true);
      if (!a.ok()) return {};
      auto *spec = std::get_if<ast::StringLit>(&a.get("spec")->node);
      if (!spec) {
        b.diags().error("bad-argument", a.get("spec")->span,
                        "the first argument of einsum must be a string like \"ij,jk->ik\"");
        return {};
      }
      EinsumSpec parsed;
      std::string error;
      if (!parse_einsum(spec->value, parsed, error)) {
        b.diags().error("bad-argument", a.get("spec")->span, error);
        return {};
      }
      std::vector<ir::ValueId> ops;
      for (const ast::Expr *e : a.rest()) {
        ops.push_back(b.lower_value(*e, DType::F32));
        if (ops.back() == ir::kNoValue) return {};
      }
      if (ops.empty()) {
        b.diags().error("bad-argument", span, "einsum needs at least one operand");
        return {};
      }
      Attrs attrs;
      attrs.einsum().spec = einsum_to_string(parsed);
      return value_or_invalid(b.emit(OpCode::Einsum, ops, attrs, span), span);
    };
    // Layout.
    t["reshape"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"shape"}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      auto shape = a.shape("shape");
      if (x == ir::kNoValue || !shape) return {};
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < shape->size(); ++i) {
        if ((*shape)[i] == -1) {
          if (infer >= 0) {
            b.diags().error("bad-argument", a.get("shape")->span, "at most one -1 in a shape");
            return {};
          }
          infer = static_cast<int64_t>(i);
        } else {  // saturating: a huge shape is reported by the shape rule
          known = rt::checked_mul(known, (*shape)[i]).value_or(INT64_MAX);
        }
      }
      int64_t numel = b.function().type(x).numel();
      if (infer >= 0) {
        if (known == 0 || numel % known != 0) {
          b.diags().error("bad-argument", a.get("shape")->span,
                          "cannot infer the -1 dimension of the new shape");
          return {};
        }
        (*shape)[infer] = numel / known;
      }
      Attrs attrs;
      attrs.layout().shape = *shape;
      return value_or_invalid(b.emit(OpCode::Reshape, {x}, attrs, span), span);
    };
    t["transpose"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"perm", false}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      if (x == ir::kNoValue) return {};
      int64_t rank = b.function().type(x).rank();
      Attrs attrs;
      if (a.has("perm")) {
        auto p = a.shape("perm");
        if (!p) return {};
        for (auto &d : *p)
          if (d < 0) d += rank;
        attrs.layout().dims = *p;
      } else {
        for (int64_t d = rank - 1; d >= 0; --d) attrs.layout().dims.push_back(d);
      }
      return value_or_invalid(b.emit(OpCode::Transpose, {x}, attrs, span), span);
    };
    t["flip"] = lower_flip;
    t["squeeze"] = lower_squeeze;
    t["expand_dims"] = lower_expand_dims;
    t["stack"] = lower_stack;
    t["broadcast_to"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"shape"}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      auto shape = a.shape("shape");
      if (x == ir::kNoValue || !shape) return {};
      Attrs attrs;
      attrs.layout().shape = *shape;
      return value_or_invalid(b.emit(OpCode::BroadcastTo, {x}, attrs, span), span);
    };
    t["concat"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"values"}, {"axis", false}});
      if (!a.ok()) return {};
      auto ops = lower_value_list(b, *a.get("values"), "concat");
      if (!ops) return {};
      auto axis = a.integer("axis", 0);
      if (!axis) return {};
      Attrs attrs;
      int64_t rank = b.function().type(ops->front()).rank();
      attrs.layout().dim = *axis < 0 ? *axis + rank : *axis;
      return value_or_invalid(b.emit(OpCode::Concat, *ops, attrs, span), span);
    };
    t["pad"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"shape"}, {"start"}, {"stride", false}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      auto shape = a.shape("shape");
      auto start = a.shape("start");
      if (x == ir::kNoValue || !shape || !start) return {};
      Attrs attrs;
      attrs.layout().shape = *shape;
      attrs.layout().start = *start;
      if (a.has("stride")) {
        auto stride = a.shape("stride");
        if (!stride) return {};
        attrs.layout().stride = *stride;
      } else {
        attrs.layout().stride.assign(shape->size(), 1);
      }
      return value_or_invalid(b.emit(OpCode::Pad, {x}, attrs, span), span);
    };
    t["dynamic_slice"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"index"}, {"size"}, {"axis", false}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      ir::ValueId index = a.value("index", DType::I32);
      auto size = a.integer("size", 1);
      auto axis = a.integer("axis", 0);
      if (x == ir::kNoValue || index == ir::kNoValue || !size || !axis) return {};
      const Type &t = b.function().type(x);
      Attrs attrs;
      attrs.layout().dim = *axis < 0 ? *axis + t.rank() : *axis;
      attrs.layout().shape = t.shape;
      if (attrs.layout().dim < 0 || attrs.layout().dim >= t.rank() || *size < 0 ||
          *size > t.shape[attrs.layout().dim]) {
        b.diags().error("bad-argument", span, "dynamic_slice axis or size out of range");
        return {};
      }
      attrs.layout().shape[attrs.layout().dim] = *size;
      return value_or_invalid(b.emit(OpCode::DynamicSlice, {x, index}, attrs, span), span);
    };
    t["dynamic_update_slice"] = [](BodyLowerer &b, const ast::CallExpr &call,
                                   SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"update"}, {"index"}, {"axis", false}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      ir::ValueId update = a.value("update", DType::F32);
      ir::ValueId index = a.value("index", DType::I32);
      auto axis = a.integer("axis", 0);
      if (x == ir::kNoValue || update == ir::kNoValue || index == ir::kNoValue || !axis) return {};
      Attrs attrs;
      int64_t rank = b.function().type(x).rank();
      attrs.layout().dim = *axis < 0 ? *axis + rank : *axis;
      return value_or_invalid(b.emit(OpCode::DynamicUpdateSlice, {x, update, index}, attrs, span),
                              span);
    };
    // Gathers: take(x, ids, axis=0, mode="check"), scatter_add(x, updates, ids, ...).
    t["take"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"ids"}, {"axis", false}, {"mode", false}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      ir::ValueId ids = a.value("ids", DType::I32);
      if (x == ir::kNoValue || ids == ir::kNoValue) return {};
      auto attrs = gather_attrs(b, a, b.function().type(x).rank());
      if (!attrs) return {};
      return value_or_invalid(b.emit(OpCode::Take, {x, ids}, *attrs, span), span);
    };
    t["scatter_add"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"x"}, {"updates"}, {"ids"}, {"axis", false}, {"mode", false}});
      if (!a.ok()) return {};
      ir::ValueId x = a.value("x", DType::F32);
      ir::ValueId updates = a.value("updates", DType::F32);
      ir::ValueId ids = a.value("ids", DType::I32);
      if (x == ir::kNoValue || updates == ir::kNoValue || ids == ir::kNoValue) return {};
      auto attrs = gather_attrs(b, a, b.function().type(x).rank());
      if (!attrs) return {};
      return value_or_invalid(b.emit(OpCode::ScatterAdd, {x, updates, ids}, *attrs, span), span);
    };
    // Creation.
    t["zeros"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_creation(b, c, s, 0.0, false);
    };
    t["ones"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_creation(b, c, s, 1.0, false);
    };
    t["full"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_creation(b, c, s, 0.0, true);
    };
    t["zeros_like"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_like(b, c, s, 0.0, false);
    };
    t["ones_like"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_like(b, c, s, 1.0, false);
    };
    t["full_like"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_like(b, c, s, 0.0, true);
    };
    t["iota"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"shape"}, {"dim", false}, {"dtype", false}});
      if (!a.ok()) return {};
      auto shape = a.shape("shape");
      auto dim = a.integer("dim", 0);
      auto dtype = a.dtype("dtype", DType::I32);
      if (!shape || !dim || !dtype) return {};
      Attrs attrs;
      attrs.creation().shape = *shape;
      attrs.creation().dim = *dim;
      attrs.creation().dtype = *dtype;
      return value_or_invalid(b.emit(OpCode::Iota, {}, attrs, span), span);
    };
    // Random numbers.
    t["key"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"seed"}});
      if (!a.ok()) return {};
      ir::ValueId seed = a.value("seed", DType::I32);
      if (seed == ir::kNoValue) return {};
      return value_or_invalid(b.emit(OpCode::RandomKey, {seed}, {}, span), span);
    };
    t["fold_in"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"key"}, {"data"}});
      if (!a.ok()) return {};
      ir::ValueId key = a.value("key", DType::Key), data = a.value("data", DType::I32);
      if (key == ir::kNoValue || data == ir::kNoValue) return {};
      return value_or_invalid(b.emit(OpCode::RandomFoldIn, {key, data}, {}, span), span);
    };
    t["key_data"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"keys"}});
      if (!a.ok()) return {};
      ir::ValueId keys = a.value("keys", DType::Key);
      if (keys == ir::kNoValue) return {};
      return value_or_invalid(b.emit(OpCode::KeyData, {keys}, {}, span), span);
    };
    t["split"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"key"}, {"num", false}, {"global_shape", false}, {"offset", false}});
      if (!a.ok()) return {};
      ir::ValueId key = a.value("key", DType::Key);
      std::optional<Shape> shape = a.has("num") ? a.shape("num") : std::optional<Shape>(Shape{2});
      if (key == ir::kNoValue || !shape) return {};
      Attrs attrs;
      attrs.random().shape = *shape;
      attrs.random().dtype = DType::Key;
      std::vector<ir::ValueId> operands{key};
      if (a.has("global_shape") != a.has("offset")) {
        a.fail(span, "`global_shape` and `offset` go together (a block of a global draw)");
        return {};
      }
      if (a.has("global_shape")) {
        auto global = a.shape("global_shape");
        auto offsets = lower_value_list(b, *a.get("offset"), "`offset`", nullptr, DType::I32);
        if (!global || !offsets) return {};
        attrs.random().global = *global;
        operands.insert(operands.end(), offsets->begin(), offsets->end());
      }
      return value_or_invalid(b.emit(OpCode::RandomSplit, operands, attrs, span), span);
    };
    t["random_bits"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_draw(b, c, s, OpCode::RandomBits);
    };
    t["uniform"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_draw(b, c, s, OpCode::RandomUniform);
    };
    t["normal"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_draw(b, c, s, OpCode::RandomNormal);
    };
    t["randint"] = [](BodyLowerer &b, const ast::CallExpr &c, SourceSpan s) {
      return lower_draw(b, c, s, OpCode::RandomInt);
    };
    t["bernoulli"] = lower_bernoulli;
    // Collectives.
    t["psum"] = collective(OpCode::Psum);
    t["pmean"] = collective(OpCode::Psum, /*mean=*/true);
    t["pmax"] = collective(OpCode::Pmax);
    t["pmin"] = collective(OpCode::Pmin);
    t["pbroadcast"] = collective(OpCode::Pbroadcast);
    t["pvary"] = collective(OpCode::Pbroadcast);
    t["all_gather"] = gather_like(OpCode::AllGather, "axis");
    t["all_gather_invariant"] = gather_like(OpCode::AllGatherInvariant, "axis");
    t["psum_scatter"] = gather_like(OpCode::PsumScatter, "scatter_dimension");
    t["pscatter"] = gather_like(OpCode::Pscatter, "axis");
    t["all_to_all"] = lower_all_to_all;
    t["ppermute"] = lower_ppermute;
    t["axis_index"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"axes"}});
      if (!a.ok()) return {};
      auto axes = a.axes("axes");
      if (!axes) return {};
      Attrs attrs;
      attrs.collective().axes = *axes;
      return value_or_invalid(b.emit(OpCode::AxisIndex, {}, attrs, span), span);
    };
    t["constrain"] = lower_constrain;
    t["axis_size"] = [](BodyLowerer &b, const ast::CallExpr &call, SourceSpan span) -> LExpr {
      Args a(b, call, span, {{"axes"}});
      if (!a.ok()) return {};
      auto axes = a.axes("axes");
      if (!axes) return {};
      LExpr e;
      e.kind = LExpr::Kind::Literal;
      e.literal = static_cast<double>(axes_size(b.mesh(), *axes));
      e.literal_is_int = true;
      e.span = span;
      return e;
    };
    return t;
  }();
  return table;
}

}  // namespace

const BuiltinHandler *find_builtin(const std::string &name) {
  auto it = builtins().find(name);
  return it == builtins().end() ? nullptr : &it->second;
}

bool is_builtin(const std::string &name) { return builtins().count(name) > 0; }

LExpr BodyLowerer::lower_method(const LExpr &self, const ast::CallExpr &call, SourceSpan span,
                                const std::string &method_name) {
  const std::string &method = method_name.empty() ? call.callee.name : method_name;
  ir::ValueId x = materialize(self, std::nullopt);
  if (x == ir::kNoValue) return {};
  if (method == "astype") {  // x.astype(dtype) = cast(x, dtype)
    Args a(*this, call, span, {{"dtype"}});
    if (!a.ok()) return {};
    auto d = a.dtype("dtype", DType::F32);
    if (!d) return {};
    Attrs attrs;
    attrs.cast().dtype = *d;
    return value_or_invalid(emit(OpCode::Cast, {x}, attrs, span), span);
  }
  Diagnostic &d =
      diags().error("unknown-member", call.callee.span,
                    "values have no method `" + method + "` (the only method is `.astype(dtype)`)");
  if (is_builtin(method)) {
    std::string self_text =
        method_name.empty() ? "x" : call.callee.name.substr(0, call.callee.name.rfind('.'));
    d.help("spmdc has functions, not methods: write `" + method + "(" + self_text +
           (call.args.empty() ? "" : ", ...") + ")`");
    if (!method_name.empty()) {  // `x.sum(...)` on a name: a mechanical rewrite
      SourceSpan callee = call.callee.span;
      d.fixit(callee, method);
      d.fixit(SourceSpan{callee.file, callee.end + 1, callee.end + 1},
              self_text + (call.args.empty() ? "" : ", "));
    }
  } else if (auto best = closest_match(method, {"astype"})) {
    d.help("did you mean `." + *best + "`?");
  }
  return {};
}

std::vector<std::string> builtin_names() {
  std::vector<std::string> names;
  for (const auto &[name, handler] : builtins()) names.push_back(name);
  return names;
}

}  // namespace spmd::lowering
