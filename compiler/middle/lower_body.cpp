// middle/lower_body.cpp — lowering of function bodies: statements (assignments,
// returns, static loops, branches) and expressions, into IR instructions.
// Part of the lowering pass (lower.h); builtins are in lower_builtins.cpp and
// declarations, signatures and def instantiation in lower.cpp.
#include <set>
#include <utility>

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

OpCode binary_opcode(ast::BinaryOpKind k) {
  switch (k) {
    case ast::BinaryOpKind::Add:
      return OpCode::Add;
    case ast::BinaryOpKind::Sub:
      return OpCode::Sub;
    case ast::BinaryOpKind::Mul:
      return OpCode::Mul;
    case ast::BinaryOpKind::Div:
      return OpCode::Div;
    case ast::BinaryOpKind::FloorDiv:
      return OpCode::FloorDiv;
    case ast::BinaryOpKind::Mod:
      return OpCode::Rem;
    case ast::BinaryOpKind::Pow:
      return OpCode::Pow;
    case ast::BinaryOpKind::MatMul:
      return OpCode::Einsum;
    case ast::BinaryOpKind::Lt:
      return OpCode::Lt;
    case ast::BinaryOpKind::Le:
      return OpCode::Le;
    case ast::BinaryOpKind::Gt:
      return OpCode::Gt;
    case ast::BinaryOpKind::Ge:
      return OpCode::Ge;
    case ast::BinaryOpKind::Eq:
      return OpCode::Eq;
    case ast::BinaryOpKind::Ne:
      return OpCode::Ne;
    case ast::BinaryOpKind::And:
      return OpCode::And;
    case ast::BinaryOpKind::Or:
      return OpCode::Or;
  }
  return OpCode::Add;
}

std::optional<double> fold(OpCode op, double a, double b, bool ints) {
  switch (op) {
    case OpCode::Add:
      return a + b;
    case OpCode::Sub:
      return a - b;
    case OpCode::Mul:
      return a * b;
    case OpCode::Div:
      if (ints) return std::nullopt;  // integer division is not folded
      return a / b;
    default:
      return std::nullopt;
  }
}

}  // namespace

// ============================================================== BodyLowerer

BodyLowerer::BodyLowerer(ProgramLowerer &program, ir::Function &function, int module_index)
    : program_(program),
      function_(function),
      builder_(program.module, function),
      module_index_(module_index) {}

DiagnosticEngine &BodyLowerer::diags() { return program_.diags; }

ir::ValueId BodyLowerer::emit(OpCode op, std::vector<ir::ValueId> operands, Attrs attrs,
                              SourceSpan span, ir::Origin origin) {
  std::vector<ir::ValueId> results =
      emit_all(op, std::move(operands), std::move(attrs), span, origin);
  return results.empty() ? ir::kNoValue : results[0];
}

std::vector<ir::ValueId> BodyLowerer::emit_all(OpCode op, std::vector<ir::ValueId> operands,
                                               Attrs attrs, SourceSpan span, ir::Origin origin) {
  for (ir::ValueId v : operands)
    if (v == ir::kNoValue) return {};
  if (function_.kind == ir::FunctionKind::Sharded && op_kind(op) == OpKind::Collective) {
    std::string name = builtin_name_.empty() ? std::string(op_spelling(op)) : builtin_name_;
    diags()
        .error("collective-in-sharded", span,
               "`" + name + "` is not allowed in the sharded function `" + function_.name +
                   "`: its body works on global arrays, and the compiler places the "
                   "collectives when it splits them (`spmdc shard`)" +
                   (op == OpCode::AxisIndex ? "; a device's position has no meaning there" : ""))
        .fix =
        "write the global computation (e.g. `sum(x)` instead of `psum(sum(x), i)`), or "
        "make the function a shmap";
    return {};
  }
  ir::BuildError error;
  auto results = builder_.add(op, std::move(operands), std::move(attrs), span, error, origin);
  if (results.empty())
    diags().error(error.code, span, "`" + std::string(op_display_name(op)) + "`: " + error.message);
  return results;
}

void BodyLowerer::lower_block(const ast::Block &block) {
  for (const auto &stmt : block) {
    if (returned) {
      diags().error("unreachable-code", stmt->span, "statement after `return`");
      return;
    }
    lower_stmt(*stmt);
    if (diags().at_limit()) return;
  }
}

void BodyLowerer::lower_stmt(const ast::Stmt &stmt) {
  std::visit(
      [&](const auto &node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, ast::AssignStmt>) {
          lower_assign(node, stmt.span);
        } else if constexpr (std::is_same_v<T, ast::ReturnStmt>) {
          lower_return(node, stmt.span);
        } else if constexpr (std::is_same_v<T, ast::ForStmt>) {
          lower_for(node, stmt.span);
        } else if constexpr (std::is_same_v<T, ast::IfStmt>) {
          lower_if(node, stmt.span);
        } else {
          lower_call_stmt(node, stmt.span);
        }
      },
      stmt.node);
}

namespace {

/// The number of `{}` holes of a print format (`{{` and `}}` are literal
/// braces), or an error message.
std::optional<size_t> count_holes(std::string_view format, std::string &error) {
  size_t holes = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '{') {
      if (i + 1 < format.size() && format[i + 1] == '{') {
        ++i;
      } else if (i + 1 < format.size() && format[i + 1] == '}') {
        ++holes;
        ++i;
      } else {
        error = "a print format marks each value with `{}` (no field names or format specs); "
                "write `{{` for a literal `{`";
        return std::nullopt;
      }
    } else if (format[i] == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        ++i;
      } else {
        error = "a lone `}` in a print format; write `}}` for a literal `}`";
        return std::nullopt;
      }
    }
  }
  return holes;
}

}  // namespace

void BodyLowerer::lower_call_stmt(const ast::CallStmt &stmt, SourceSpan span) {
  const auto &call = std::get<ast::CallExpr>(stmt.call->node);
  if (call.callee.name != "print") {
    diags()
        .error("bad-argument", stmt.call->span,
               "the value of `" + call.callee.name +
                   "(...)` is not used: only `print(...)` can be a statement on its own")
        .fix = "assign the result to a name: `y = " + call.callee.name + "(...)`";
    return;
  }
  if (call.args.empty() || !std::holds_alternative<ast::StringLit>(call.args[0].value->node) ||
      !call.args[0].keyword.empty()) {
    diags()
        .error("bad-argument", call.args.empty() ? span : call.args[0].value->span,
               "the first argument of `print` must be a format string literal, e.g. "
               "`print(\"step {} loss {}\", k, loss)`")
        .fix = "write the format as a string with one `{}` per value";
    return;
  }
  const std::string &format = std::get<ast::StringLit>(call.args[0].value->node).value;
  std::string error;
  std::optional<size_t> holes = count_holes(format, error);
  if (!holes) {
    diags().error("bad-argument", call.args[0].value->span, error);
    return;
  }
  std::vector<ir::ValueId> operands;
  for (size_t k = 1; k < call.args.size(); ++k) {
    if (!call.args[k].keyword.empty()) {
      diags().error("bad-argument", call.args[k].span,
                    "`print` takes no keyword arguments: its values follow the format");
      return;
    }
    ir::ValueId v = lower_value(*call.args[k].value);
    if (v == ir::kNoValue) return;  // reported
    operands.push_back(v);
  }
  if (*holes != operands.size()) {
    diags()
        .error("bad-argument", call.args[0].value->span,
               "the print format has " + std::to_string(*holes) + " `{}` hole" +
                   (*holes == 1 ? "" : "s") + " but " + std::to_string(operands.size()) +
                   " value" + (operands.size() == 1 ? " follows" : "s follow") + " it")
        .fix = "write one `{}` per value";
    return;
  }
  Attrs attrs;
  attrs.print().format = format;
  builder_.add_typed(OpCode::DebugPrint, ir::ValueList(operands.begin(), operands.end()),
                     std::move(attrs), {}, span);
}

void BodyLowerer::bind(const std::string &name, ir::ValueId v) {
  env[name] = v == ir::kNoValue ? kPoisoned : v;
  out_of_scope.erase(name);
}

std::vector<std::string> BodyLowerer::visible_names() const {
  std::vector<std::string> names;
  for (const auto &[n, v] : env) names.push_back(n);
  for (const auto &[n, size] : dim_symbols) names.push_back(n);
  return names;
}

void BodyLowerer::lower_assign(const ast::AssignStmt &assign, SourceSpan span) {
  LExpr value = lower_expr(*assign.value);
  auto poison_targets = [&] {
    for (const auto &t : assign.targets) bind(t.name.name, kPoisoned);
  };
  if (!value.ok()) {
    poison_targets();  // the error is reported; later uses stay silent
    return;
  }
  std::vector<ir::ValueId> values;
  if (value.kind == LExpr::Kind::Tuple) {
    values = value.tuple;
  } else {
    values.push_back(materialize(value, std::nullopt));
  }
  if (values.size() != assign.targets.size()) {
    diags().error("arity-mismatch", span,
                  "assigning " + std::to_string(values.size()) + " value" +
                      (values.size() == 1 ? "" : "s") + " to " +
                      std::to_string(assign.targets.size()) + " name" +
                      (assign.targets.size() == 1 ? "" : "s"));
    poison_targets();
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const ast::AssignTarget &target = assign.targets[i];
    ir::ValueId v = values[i];
    if (v == ir::kNoValue) {
      bind(target.name.name, kPoisoned);
      continue;
    }
    // Not in the standard library: its locals are no business of the caller's mesh.
    if (mesh().find_axis(target.name.name) >= 0 && !program().sources.in_library(target.name.span))
      diags().warning("shadows-axis", target.name.span,
                      "`" + target.name.name + "` shadows the mesh axis of the same name");
    if (target.annotation) {
      const ast::TypeExpr &ann = *target.annotation;
      std::optional<DType> dtype = parse_dtype(ann.dtype.name);
      if (!dtype)
        if (auto it = dtype_symbols.find(ann.dtype.name); it != dtype_symbols.end())
          dtype = it->second;
      Shape shape;
      bool ok = dtype.has_value();
      if (!dtype) report_unknown_dtype(diags(), ann.dtype.span, ann.dtype.name);
      for (const auto &d : ann.dims) {
        if (auto *n = std::get_if<int64_t>(&d.value)) {
          shape.push_back(*n);
        } else if (d.is_ellipsis()) {
          if (ellipsis) {
            shape.insert(shape.end(), ellipsis->begin(), ellipsis->end());
          } else {
            diags().error("unknown-name", d.span,
                          "`...` is not bound here: only a def whose signature has it may use it");
            ok = false;
          }
        } else {
          auto it = dim_symbols.find(std::get<std::string>(d.value));
          if (it == dim_symbols.end()) {
            diags().error("unknown-name", d.span,
                          "unknown dimension `" + std::get<std::string>(d.value) + "`");
            ok = false;
          } else {
            shape.push_back(it->second);
          }
        }
      }
      const Type &actual = function_.type(v);
      if (ok && (actual.dtype != *dtype || actual.shape != shape)) {
        diags().error("annotation-mismatch", ann.span,
                      "`" + target.name.name + "` is annotated " + shape_type_str(*dtype, shape) +
                          " but its value is " + shape_type_str(actual.dtype, actual.shape));
      }
      if (ann.variance) {
        AxisSet declared;
        for (const auto &axis : *ann.variance) {
          int a = mesh().find_axis(axis.name);
          if (a < 0) {
            report_unknown_axis(diags(), axis.span, axis.name, mesh());
            ok = false;
          } else {
            declared = declared | AxisSet::of(a);
          }
        }
        if (ok) {
          // The annotation applies to this binding; give it its own value so
          // the check (and any lifting pbroadcast) happens at this statement.
          function_.values[v].declared_variance = declared;
          function_.values[v].annotation_span = ann.span;
        }
      }
    }
    ir::Value &info = function_.values[v];
    if (info.name.empty()) info.name = target.name.name;
    bind(target.name.name, v);
    function_.bindings.push_back({target.name.span, v});
  }
}

void BodyLowerer::lower_return(const ast::ReturnStmt &ret, SourceSpan span) {
  returned = true;
  function_.return_span = span;
  std::vector<ir::ValueId> values;
  for (const auto &e : ret.values) {
    LExpr le = lower_expr(*e);
    if (!le.ok()) {
      return_failed = true;
      return;
    }
    if (le.kind == LExpr::Kind::Tuple) {
      for (auto v : le.tuple) values.push_back(v);
    } else {
      std::optional<DType> hint;
      size_t k = values.size();
      if (k < function_.results.size() && !function_.results[k].global_shape.empty()) hint = {};
      values.push_back(materialize(le, hint));
    }
  }
  function_.returns = values;
}

namespace {

/// Names assigned anywhere in `block`, nested loops and branches included, in
/// first-assignment order.
void assigned_names(const ast::Block &block, std::vector<std::string> &out) {
  for (const auto &stmt : block) {
    if (auto *a = std::get_if<ast::AssignStmt>(&stmt->node)) {
      for (const auto &t : a->targets)
        if (std::find(out.begin(), out.end(), t.name.name) == out.end()) out.push_back(t.name.name);
    } else if (auto *f = std::get_if<ast::ForStmt>(&stmt->node)) {
      assigned_names(f->body, out);
    } else if (auto *i = std::get_if<ast::IfStmt>(&stmt->node)) {
      assigned_names(i->then_body, out);
      assigned_names(i->else_body, out);
    }
  }
}

}  // namespace

void BodyLowerer::lower_for(const ast::ForStmt &loop, SourceSpan span) {
  std::vector<std::string> assigned, carried;
  assigned_names(loop.body, assigned);
  // A loop that cannot be lowered leaves every name it assigns poisoned.
  auto poison_assigned = [&] {
    for (const auto &n : assigned)
      if (env.count(n)) bind(n, kPoisoned);
  };
  bool unroll = false, remat = false;
  for (const ast::Ident &attr : loop.attributes) {
    if (attr.name == "unroll") {
      unroll = true;
    } else if (attr.name == "remat") {
      remat = true;
    } else {
      diags().error("unknown-attribute", attr.span,
                    "unknown loop attribute `" + attr.name + "` (known: unroll, remat)");
    }
  }
  std::optional<int64_t> start = int64_t{0}, step = int64_t{1};
  if (loop.start) start = eval_int(*loop.start, "a loop bound");
  std::optional<int64_t> stop = eval_int(*loop.stop, "a loop bound");
  if (loop.step) step = eval_int(*loop.step, "a loop step");
  if (!start || !stop || !step) return poison_assigned();
  if (*step == 0) {
    diags().error("bad-loop-range", loop.step->span, "the step of `range` must not be zero");
    return poison_assigned();
  }
  const int64_t trips = ir::trip_count(*start, *stop, *step);
  // The index is an i32 value: every index the loop takes must fit.
  if (trips > 0) {
    const __int128 last = static_cast<__int128>(*start) + static_cast<__int128>(trips - 1) * *step;
    for (__int128 v : {static_cast<__int128>(*start), last}) {
      if (v >= INT32_MIN && v <= INT32_MAX) continue;
      diags().error("bad-loop-range", span,
                    "this loop's index reaches " + std::to_string(static_cast<int64_t>(v)) +
                        ", which does not fit in i32, the type of the loop index");
      return poison_assigned();
    }
  }
  if (unroll && trips > ir::kMaxUnrolledIterations) {
    diags()
        .error("loop-too-long", span,
               "this loop is marked [[unroll]] but runs " + std::to_string(trips) +
                   " times; at most " + std::to_string(ir::kMaxUnrolledIterations) +
                   " iterations are unrolled")
        .fix = "remove [[unroll]]: a loop runs as a loop, whatever its length";
    return poison_assigned();
  }
  // Loop-carried: names bound before the loop and assigned in its body (a
  // poisoned name is not carried: it stays poisoned after the loop).
  for (const auto &n : assigned) {
    auto it = env.find(n);
    if (n != loop.var.name && it != env.end() && it->second != kPoisoned) carried.push_back(n);
  }

  ir::Instr instr;
  instr.op = OpCode::For;
  instr.span = span;
  instr.attrs.loop().start = *start;
  instr.attrs.loop().stop = *stop;
  instr.attrs.loop().step = *step;
  instr.attrs.loop().unroll = unroll;
  instr.attrs.loop().remat = remat;
  ir::Region region;
  region.params.push_back(
      function_.add_value(Type{DType::I32, {}, {}}, loop.var.name, loop.var.span));
  if (trips > 0) {
    const int64_t first = ir::loop_index_at(instr.attrs, 0);
    const int64_t last = ir::loop_index_at(instr.attrs, trips - 1);
    loop_indices_[region.params[0]] = {std::min(first, last), std::max(first, last), span};
  }
  auto saved_env = env;
  env[loop.var.name] = region.params[0];
  function_.bindings.push_back({loop.var.span, region.params[0]});
  for (const auto &n : carried) {
    ir::ValueId init = saved_env.at(n);
    instr.operands.push_back(init);
    ir::ValueId p = function_.add_value(function_.type(init).with_variance({}), n, span);
    region.params.push_back(p);
    env[n] = p;
  }
  std::vector<ir::Instr> *outer = builder_.set_body(&region.body);
  int errors_before = diags().num_errors();
  bool returned_before = returned;
  const int64_t outer_iterations = enclosing_iterations;
  // Only a loop marked [[unroll]] is copied once per iteration.
  const int64_t copies = unroll ? std::max<int64_t>(trips, 1) : 1;
  enclosing_iterations = rt::saturating_mul(outer_iterations, copies);
  lower_block(loop.body);
  enclosing_iterations = outer_iterations;
  builder_.set_body(outer);
  // Unrolled, the loop (and the [[unroll]] loops around it) makes this many instructions.
  if (unroll && diags().num_errors() == errors_before)
    program_.check_unrolled_size(
        rt::saturating_mul(
            outer_iterations,
            rt::saturating_mul(trips, rt::saturating_add(1, program_.unrolled_size(region.body)))),
        span,
        outer_iterations > 1 ? "unrolling this loop and the loops around it"
                             : "unrolling this loop");
  if (returned && !returned_before) {
    report_nested_return("a loop", span);
    returned = returned_before;
  }
  bool ok = diags().num_errors() == errors_before;
  for (size_t k = 0; ok && k < carried.size(); ++k) {
    auto it = env.find(carried[k]);
    if (it == env.end() || it->second == kPoisoned) {
      ok = false;
      break;
    }
    const Type &before = function_.type(instr.operands[k]);
    const Type &after = function_.type(it->second);
    if (before.dtype != after.dtype || before.shape != after.shape) {
      diags().error("loop-type-change", span,
                    "loop-carried `" + carried[k] + "` is " +
                        shape_type_str(before.dtype, before.shape) + " before the loop but " +
                        shape_type_str(after.dtype, after.shape) + " after one iteration");
      ok = false;
    }
    region.yields.push_back(it->second);
  }
  // Names first bound in the body are local to it.
  for (const auto &n : assigned)
    if (!saved_env.count(n) && n != loop.var.name)
      out_of_scope[n] = {loop.var.span, "`" + n + "` is bound only inside this loop"};
  env = std::move(saved_env);
  if (!ok) return poison_assigned();
  // A name the body assigns but leaves equal to its value on entry is not
  // really carried: the body reads the initial value directly.
  for (size_t k = carried.size(); k-- > 0;) {
    if (region.yields[k] != region.params[k + 1]) continue;
    ir::replace_uses(region.body, region.yields, region.params[k + 1], instr.operands[k]);
    carried.erase(carried.begin() + static_cast<long>(k));
    instr.operands.erase(instr.operands.begin() + static_cast<long>(k));
    region.params.erase(region.params.begin() + static_cast<long>(k + 1));
    region.yields.erase(region.yields.begin() + static_cast<long>(k));
  }
  for (size_t k = 0; k < carried.size(); ++k) {
    ir::ValueId r =
        function_.add_value(function_.type(instr.operands[k]).with_variance({}), carried[k], span);
    instr.results.push_back(r);
    bind(carried[k], r);
  }
  instr.regions.push_back(std::move(region));
  std::vector<ir::Instr> *target = builder_.set_body(nullptr);
  target->push_back(std::move(instr));
  builder_.set_body(target);
}

void BodyLowerer::lower_if(const ast::IfStmt &branch, SourceSpan span) {
  ir::ValueId cond = lower_value(*branch.cond, DType::Bool);
  if (cond != ir::kNoValue) {
    const Type ct = function_.type(cond);
    if (ct.dtype != DType::Bool || ct.rank() != 0) {
      diags().error("type-error", branch.cond->span,
                    "the condition of `if` must be a bool scalar, got " +
                        shape_type_str(ct.dtype, ct.shape) +
                        "; use where(...) for elementwise choices");
      cond = ir::kNoValue;
    }
  }
  // Both branches are computed (they have no side effects); `where` picks.
  // With a bad condition they are still checked, and what they assign is
  // poisoned afterwards.
  std::vector<std::string> assigned;
  assigned_names(branch.then_body, assigned);
  assigned_names(branch.else_body, assigned);
  auto saved_env = env;
  bool returned_before = returned;
  lower_block(branch.then_body);
  auto then_env = env;
  env = saved_env;
  lower_block(branch.else_body);
  auto else_env = env;
  env = saved_env;
  if (returned != returned_before) {
    report_nested_return("`if`", span);
    returned = returned_before;
  }
  for (const auto &n : assigned) {
    auto t = then_env.find(n), e = else_env.find(n);
    if (t == then_env.end() || e == else_env.end()) {
      // Bound on one path only: not visible after the `if`.
      env.erase(n);
      out_of_scope[n] = {branch.cond->span, "`" + n + "` is bound in only one branch of this `if`"};
      continue;
    }
    if (cond == ir::kNoValue || t->second == kPoisoned || e->second == kPoisoned) {
      bind(n, kPoisoned);
      continue;
    }
    if (t->second == e->second) {
      bind(n, t->second);
      continue;
    }
    const Type &a = function_.type(t->second), &b = function_.type(e->second);
    if (a.dtype != b.dtype || a.shape != b.shape) {
      diags().error("branch-type-mismatch", span,
                    "`" + n + "` is " + shape_type_str(a.dtype, a.shape) +
                        " after the `if` branch but " + shape_type_str(b.dtype, b.shape) +
                        " after the `else` branch");
      bind(n, kPoisoned);
      continue;
    }
    // The join is attributed to the condition: that is where a varying
    // predicate makes the joined value vary (infer_variance's notes point here).
    ir::ValueId v = emit(OpCode::Select, {cond, t->second, e->second}, {}, branch.cond->span);
    if (v != ir::kNoValue) function_.values[v].name = n;
    bind(n, v);
  }
}

void BodyLowerer::report_nested_return(const char *where, SourceSpan stmt_span) {
  SourceSpan at = function_.return_span.valid() ? function_.return_span : stmt_span;
  diags()
      .error("unsupported", at, std::string("`return` inside ") + where + " is not supported")
      .note(stmt_span, std::string("the `return` is inside this ") +
                           (std::string(where) == "a loop" ? "loop" : "`if`"))
      .help(std::string(where) == "a loop"
                ? "assign the value to a name in the loop and `return` it after the loop"
                : "assign the value to the same name in both branches (`y = ...`) and "
                  "`return y` after the `if`");
}

LExpr BodyLowerer::lower_name(const std::string &name, SourceSpan span) {
  auto it = env.find(name);
  if (it != env.end()) {
    if (it->second == kPoisoned) return {};  // its statement failed and was reported
    return LExpr::of(it->second, span);
  }
  if (auto path = member_path(name)) {  // `x.T`: attributes of a local value
    LExpr value = lower_name(path->front(), span);
    for (size_t k = 1; k < path->size() && value.ok(); ++k)
      value = lower_member(value, (*path)[k], span);
    return value;
  }
  auto sym = dim_symbols.find(name);
  if (sym != dim_symbols.end()) {
    if (set_sizes) program().note_size_used(name);
    LExpr e;
    e.kind = LExpr::Kind::Literal;
    e.literal = static_cast<double>(sym->second);
    e.literal_is_int = true;
    e.span = span;
    return e;
  }
  if (mesh().find_axis(name) >= 0) {
    diags().error("axis-as-value", span, "`" + name + "` is a mesh axis, not a value").fix =
        "use axis_index(" + name + ") for this device's position along it, or axis_size(" + name +
        ") for its size";
    return {};
  }
  Diagnostic &d = diags().error("unknown-name", span, "unknown name `" + name + "`");
  auto scope = out_of_scope.find(name);
  if (scope != out_of_scope.end()) {
    d.notes.push_back(scope->second);
    return {};
  }
  std::vector<std::string> candidates = visible_names();
  candidates.insert(candidates.end(), {"true", "false"});
  suggest(d, span, name, foreign_value(name), candidates);
  return {};
}

ir::ValueId BodyLowerer::materialize(const LExpr &e, std::optional<DType> hint) {
  switch (e.kind) {
    case LExpr::Kind::Invalid:
      return ir::kNoValue;
    case LExpr::Kind::Value:
      return e.value;
    case LExpr::Kind::Tuple:
      diags().error("type-error", e.span, "a tuple of values is not allowed here");
      return ir::kNoValue;
    case LExpr::Kind::Literal: {
      DType d = e.literal_is_bool ? DType::Bool : e.literal_is_int ? DType::I32 : DType::F32;
      if (hint) {
        if (e.literal_is_bool && *hint != DType::Bool) {
          diags().error("type-error", e.span,
                        std::string("a bool literal cannot be used as ") + dtype_name(*hint));
          return ir::kNoValue;
        }
        if (!e.literal_is_bool && *hint == DType::Bool) {
          diags().error("type-error", e.span, "a number cannot be used as a bool");
          return ir::kNoValue;
        }
        if (!e.literal_is_int && !e.literal_is_bool && *hint == DType::I32 &&
            e.literal != static_cast<double>(static_cast<int64_t>(e.literal))) {
          diags().error("type-error", e.span,
                        "a fractional literal cannot be used as i32; cast the other operand");
          return ir::kNoValue;
        }
        d = *hint;
      }
      Attrs a;
      a.creation().dtype = d;
      a.creation().value = e.literal;
      return emit(OpCode::Constant, {}, a, e.span);
    }
  }
  return ir::kNoValue;
}

ir::ValueId BodyLowerer::lower_value(const ast::Expr &expr, std::optional<DType> hint) {
  return materialize(lower_expr(expr), hint);
}

LExpr BodyLowerer::binary(OpCode op, const LExpr &a, const LExpr &b, SourceSpan span,
                          const char *matmul_spelling) {
  if (!a.ok() || !b.ok()) return {};
  using K = LExpr::Kind;
  if (a.kind == K::Literal && b.kind == K::Literal && !a.literal_is_bool && !b.literal_is_bool) {
    bool ints = a.literal_is_int && b.literal_is_int;
    if (auto r = fold(op, a.literal, b.literal, ints)) {
      LExpr e = a;
      e.literal = *r;
      e.literal_is_int = ints;
      e.span = span;
      return e;
    }
  }
  for (const LExpr *e : {&a, &b})  // a key is no number, not even next to a literal
    if (e->kind == K::Value && function_.type(e->value).dtype == DType::Key) {
      diags()
          .error("key-as-number", span,
                 "a random key is not a number: `" + std::string(op_display_name(op)) +
                     "` cannot take it")
          .note(e->span, "this is a random key")
          .help(
              "draw numbers from the key: uniform(key, shape), normal(key, shape) or "
              "random_bits(key, shape)");
      return {};
    }
  std::optional<DType> hint;
  if (a.kind == K::Value) hint = function_.type(a.value).dtype;
  if (b.kind == K::Value) hint = function_.type(b.value).dtype;
  if (!hint && a.kind == K::Literal && b.kind == K::Literal)
    hint = (a.literal_is_int && b.literal_is_int) ? DType::I32 : DType::F32;
  ir::ValueId va = materialize(a, hint), vb = materialize(b, hint);
  if (va == ir::kNoValue || vb == ir::kNoValue) return {};
  if (op == OpCode::Einsum) return matmul(va, vb, span, matmul_spelling);
  ir::ValueId r = emit_checked(op, {va, vb}, {}, span, [&](Diagnostic &d) {
    if (function_.type(va).shape != function_.type(vb).shape) add_local_shape_notes(d, {va, vb});
  });
  return LExpr::of(r, span);
}

std::optional<DiagnosticLabel> BodyLowerer::local_block_note(ir::ValueId v) const {
  for (const ir::Param &p : function_.params) {
    if (p.value != v || function_.kind != ir::FunctionKind::Shmap) continue;
    const Type &t = function_.type(v);
    if (t.shape == p.global_shape) return std::nullopt;
    std::string split;
    for (size_t d = 0; d < p.spec.size(); ++d) {
      if (p.spec[d].empty()) continue;
      split += std::string(split.empty() ? "" : "; ") + "dimension " + std::to_string(d) +
               " is split over the " + std::to_string(axes_size(mesh(), p.spec[d])) +
               " devices along `" + axis_list_str(p.spec[d], mesh()) + "`";
    }
    return DiagnosticLabel{p.span, "`" + function_.values[v].name + "` is the local block of " +
                                       shape_type_str(t.dtype, p.global_shape) +
                                       " (global): " + split};
  }
  return std::nullopt;
}

void BodyLowerer::add_local_shape_notes(Diagnostic &d, const std::vector<ir::ValueId> &values) {
  bool any = false;
  for (ir::ValueId v : values)
    if (auto note = local_block_note(v)) {
      d.notes.push_back(*note);
      any = true;
    }
  if (any && d.message.find("per device") == std::string::npos)
    d.message += " (shapes are local, per device)";
}

ir::ValueId BodyLowerer::emit_checked(OpCode op, std::vector<ir::ValueId> operands, Attrs attrs,
                                      SourceSpan span,
                                      const std::function<void(Diagnostic &)> &explain) {
  size_t before = diags().count();
  ir::ValueId r = emit(op, std::move(operands), std::move(attrs), span);
  if (r == ir::kNoValue && diags().count() > before) explain(diags().at(diags().count() - 1));
  return r;
}

LExpr BodyLowerer::matmul(ir::ValueId va, ir::ValueId vb, SourceSpan span, const char *spelling) {
  // NumPy's matmul: rank-1 operands are vectors; otherwise the last two
  // dimensions multiply and the leading (batch) dimensions broadcast. Lowered
  // to einsum; a size-1 batch dimension facing a larger one is reshaped away
  // (einsum broadcasts an index missing from one operand).
  const Type ta = function_.type(va), tb = function_.type(vb);
  auto operand_name = [&](ir::ValueId v, const char *side) {
    const std::string &n = function_.values[v].name;
    return n.empty() ? std::string("the ") + side + " operand" : "`" + n + "`";
  };
  auto shapes = [&] {
    return operand_name(va, "left") + " is " + shape_type_str(ta.dtype, ta.shape) + " and " +
           operand_name(vb, "right") + " is " + shape_type_str(tb.dtype, tb.shape);
  };
  auto fail = [&](const std::string &what) -> LExpr {
    Diagnostic &d = diags().error("type-error", span,
                                  std::string("`") + spelling + "`: " + what + ": " + shapes() +
                                      " (local shapes, per device)");
    add_local_shape_notes(d, {va, vb});
    return {};
  };
  if (ta.rank() < 1 || tb.rank() < 1) return fail("operands must have rank 1 or more");
  if (ta.dtype != tb.dtype) return fail("the operands have different dtypes (use cast(x, dtype))");
  int64_t ka = ta.shape.back();
  int64_t kb = tb.rank() == 1 ? tb.shape[0] : tb.shape[tb.rank() - 2];
  if (ka != kb)
    return fail("the contracted dimensions differ (" + std::to_string(ka) + " vs " +
                std::to_string(kb) + ")");
  Shape batch_a(ta.shape.begin(), ta.shape.end() - std::min<int64_t>(ta.rank(), 2));
  Shape batch_b(tb.shape.begin(), tb.shape.end() - std::min<int64_t>(tb.rank(), 2));
  if (ta.rank() == 1) batch_a.clear();
  if (tb.rank() == 1) batch_b.clear();
  size_t nb = std::max(batch_a.size(), batch_b.size());
  if (nb > 49) return fail("too many batch dimensions");
  Shape batch(nb, 1);
  for (size_t j = 0; j < nb; ++j) {
    auto dim = [&](const Shape &s) {
      return j + s.size() < nb ? int64_t{1} : s[j + s.size() - nb];
    };
    int64_t da = dim(batch_a), db = dim(batch_b);
    if (da != db && da != 1 && db != 1)
      return fail("the batch dimensions " + rt::shape_str(batch_a) + " and " +
                  rt::shape_str(batch_b) + " do not broadcast");
    batch[j] = da == 1 ? db : da;
  }
  // Index letters: i (rows), j (contracted), k (columns), as the printer
  // writes `@` for them; batch dimensions a, b, c, ... (skipping i, j, k).
  static constexpr std::string_view kBatchLetters =
      "abcdefghlmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  auto letter = [](size_t k) { return kBatchLetters[k]; };
  const char kRow = 'i', kInner = 'j', kCol = 'k';
  // The indices of one operand's batch dimensions; drops size-1 dimensions
  // that broadcast (through a reshape of the operand).
  auto batch_indices = [&](ir::ValueId &v, const Shape &own) -> std::optional<std::string> {
    std::string idx;
    Shape kept_shape;
    bool dropped = false;
    const Type &t = function_.type(v);
    for (size_t d = 0; d < own.size(); ++d) {
      size_t j = d + nb - own.size();
      if (own[d] == 1 && batch[j] != 1) {
        dropped = true;
        continue;
      }
      idx += letter(j);
      kept_shape.push_back(own[d]);
    }
    if (dropped) {
      for (size_t d = own.size(); d < t.shape.size(); ++d) kept_shape.push_back(t.shape[d]);
      Attrs r;
      r.layout().shape = kept_shape;
      v = emit(OpCode::Reshape, {v}, r, span, ir::Origin::Lowering);
      if (v == ir::kNoValue) return std::nullopt;
    }
    return idx;
  };
  auto ia = batch_indices(va, batch_a);
  auto ib = batch_indices(vb, batch_b);
  if (!ia || !ib) return {};
  std::string lhs = *ia + (ta.rank() >= 2 ? std::string(1, kRow) : "") + kInner;
  std::string rhs = *ib + kInner + (tb.rank() >= 2 ? std::string(1, kCol) : "");
  std::string out;
  for (size_t j = 0; j < nb; ++j) out += letter(j);
  if (ta.rank() >= 2) out += kRow;
  if (tb.rank() >= 2) out += kCol;
  Attrs attrs;
  attrs.einsum().spec = lhs + "," + rhs + "->" + out;
  const size_t before = diags().count();
  ir::ValueId r = emit(OpCode::Einsum, {va, vb}, attrs, span);
  if (r == ir::kNoValue && diags().count() > before) {
    // Name the operator the user wrote, not the einsum it is lowered to.
    std::string &message = diags().at(diags().count() - 1).message;
    const std::string lowered = "`" + std::string(op_display_name(OpCode::Einsum)) + "`: ";
    if (message.rfind(lowered, 0) == 0)
      message = std::string("`") + spelling + "`: " + message.substr(lowered.size());
  }
  return LExpr::of(r, span);
}

LExpr BodyLowerer::lower_expr(const ast::Expr &expr) {
  const SourceSpan span = expr.span;
  return std::visit(
      [&](const auto &node) -> LExpr {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, ast::NameExpr>) {
          return lower_name(node.name, span);
        } else if constexpr (std::is_same_v<T, ast::IntLit>) {
          LExpr e;
          e.kind = LExpr::Kind::Literal;
          e.literal = static_cast<double>(node.value);
          e.literal_is_int = true;
          e.span = span;
          if (node.value > INT32_MAX) {
            diags().error("literal-out-of-range", span, "integer literal does not fit in i32");
            return {};
          }
          return e;
        } else if constexpr (std::is_same_v<T, ast::FloatLit>) {
          LExpr e;
          e.kind = LExpr::Kind::Literal;
          e.literal = node.value;
          e.span = span;
          return e;
        } else if constexpr (std::is_same_v<T, ast::BoolLit>) {
          LExpr e;
          e.kind = LExpr::Kind::Literal;
          e.literal = node.value ? 1 : 0;
          e.literal_is_bool = true;
          e.span = span;
          return e;
        } else if constexpr (std::is_same_v<T, ast::StringLit>) {
          diags().error("type-error", span, "a string is only allowed as an einsum spec");
          return {};
        } else if constexpr (std::is_same_v<T, ast::NoneLit>) {
          diags().error("type-error", span,
                        "`None` is only allowed in a partition spec, e.g. `P(i, None)`");
          return {};
        } else if constexpr (std::is_same_v<T, ast::UnaryExpr>) {
          LExpr x = lower_expr(*node.operand);
          if (!x.ok()) return {};
          if (node.op == ast::UnaryOpKind::Neg) {
            if (x.kind == LExpr::Kind::Literal && !x.literal_is_bool) {
              x.literal = -x.literal;
              x.span = span;
              return x;
            }
            return LExpr::of(emit(OpCode::Neg, {materialize(x, std::nullopt)}, {}, span), span);
          }
          return LExpr::of(emit(OpCode::Not, {materialize(x, DType::Bool)}, {}, span), span);
        } else if constexpr (std::is_same_v<T, ast::BinaryExpr>) {
          LExpr a = lower_expr(*node.lhs);
          LExpr b = lower_expr(*node.rhs);
          if (!a.ok() || !b.ok()) return {};
          return binary(binary_opcode(node.op), a, b, span);
        } else if constexpr (std::is_same_v<T, ast::CallExpr>) {
          return lower_call(node, span);
        } else if constexpr (std::is_same_v<T, ast::IndexExpr>) {
          return lower_index(node, span);
        } else if constexpr (std::is_same_v<T, ast::MemberExpr>) {
          LExpr base = lower_expr(*node.base);
          if (!base.ok()) return {};
          return lower_member(base, node.member.name, span);
        } else {
          diags().error("type-error", span,
                        "a tuple or list is only allowed as an argument of a builtin (shapes, "
                        "axes, permutations)");
          return {};
        }
      },
      expr.node);
}

std::optional<std::vector<std::string>> BodyLowerer::member_path(const std::string &name) const {
  size_t dot = name.find('.');
  if (dot == std::string::npos || !env.count(name.substr(0, dot))) return std::nullopt;
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    size_t end = name.find('.', begin);
    parts.push_back(name.substr(begin, end == std::string::npos ? end : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

LExpr BodyLowerer::lower_member(const LExpr &base, const std::string &member, SourceSpan span) {
  ir::ValueId x = materialize(base, std::nullopt);
  if (x == ir::kNoValue) return {};
  const Type &t = function_.type(x);
  if (member == "T") {  // NumPy's .T: all dimensions reversed
    if (t.rank() < 2) return LExpr::of(x, span);
    Attrs attrs;
    for (int64_t d = t.rank() - 1; d >= 0; --d) attrs.layout().dims.push_back(d);
    return LExpr::of(emit(OpCode::Transpose, {x}, attrs, span), span);
  }
  Diagnostic &d =
      diags().error("unknown-member", span,
                    "values have no attribute `" + member + "` (they have `.T`, " +
                        "`.astype(dtype)` and, in sizes, `.shape[k]`, `.ndim`, `.size`)");
  if (member == "shape" || member == "ndim" || member == "size")
    d.help("shapes are static: `." + member +
           "` is a compile-time integer, usable where sizes are (e.g. reshape(x, (x.shape[0], "
           "-1)))");
  else if (member == "astype")
    d.help("call it: `x.astype(f32)`");
  else if (auto best = closest_match(member, {"T", "astype", "shape", "ndim", "size"}))
    d.help("did you mean `." + *best + "`?");
  return {};
}

LExpr BodyLowerer::lower_call(const ast::CallExpr &call, SourceSpan span) {
  if (call.function) return lower_derived_call(call, span);
  const std::string &name = call.callee.name;
  // Methods: `(a + b).astype(f32)`, or `x.astype(f32)` on a local name.
  if (call.receiver) {
    LExpr self = lower_expr(*call.receiver);
    if (!self.ok()) return {};
    return lower_method(self, call, span);
  }
  if (auto path = member_path(name)) {
    LExpr self = lower_name(path->front(), call.callee.span);
    for (size_t k = 1; k + 1 < path->size() && self.ok(); ++k)
      self = lower_member(self, (*path)[k], span);
    if (!self.ok()) return {};
    return lower_method(self, call, span, path->back());
  }
  if (const BuiltinHandler *h = find_builtin(name)) {
    std::string outer = std::exchange(builtin_name_, name);
    LExpr result = (*h)(*this, call, span);
    builtin_name_ = std::move(outer);
    return result;
  }
  int def_module = -1;
  const ast::FuncDecl *decl = program_.find_def(name, module_index_, call.callee.span, def_module);
  if (!decl) return {};
  if (decl->kind == ast::FuncKind::Sharded) {
    diags().error("call-sharded", call.callee.span,
                  "`" + name +
                      "` is a sharded function; a body can call only `def` and `shmap` "
                      "functions (make a shmap of it with `spmdc shard` first)");
    return {};
  }
  std::vector<LExpr> lowered;
  for (const auto &arg : call.args) {
    if (!arg.keyword.empty()) {
      diags().error("bad-argument", arg.span,
                    std::string("keyword arguments are not supported in calls of `") +
                        (decl->kind == ast::FuncKind::Shmap ? "shmap" : "def") + "` functions");
      return {};
    }
    lowered.push_back(lower_expr(*arg.value));
    if (!lowered.back().ok()) return {};
  }
  // A number written as an argument takes the dtype its parameter has in this
  // call, as it would in an expression: `adamw(w, g, m, v, 1.0, 0.001, ...)`
  // with f64 `w` passes f64 scalars.
  std::vector<ir::ValueId> args;
  for (size_t k = 0; k < lowered.size(); ++k) {
    std::optional<DType> hint;
    if (k < decl->params.size() && lowered[k].kind == LExpr::Kind::Literal)
      hint = literal_argument_dtype(*decl, lowered, k);
    args.push_back(materialize(lowered[k], hint));
    if (args.back() == ir::kNoValue) return {};
  }
  if (args.size() != decl->params.size()) {
    diags()
        .error("arity-mismatch", span,
               "`" + name + "` takes " + std::to_string(decl->params.size()) + " argument" +
                   (decl->params.size() == 1 ? "" : "s") + " but " + std::to_string(args.size()) +
                   " were given")
        .notes.push_back({decl->name.span, "`" + name + "` is defined here"});
    return {};
  }
  if (decl->kind == ast::FuncKind::Shmap)
    return call_shmap(*decl, def_module, std::move(args), call.callee.span, span);
  std::vector<Type> arg_types;
  for (auto v : args) arg_types.push_back(function_.type(v));
  int callee = program_.instantiate(*decl, def_module, arg_types, function_.mesh, span);
  if (callee < 0) return {};
  return emit_call(callee, std::move(args), span);
}

std::optional<DType> BodyLowerer::literal_argument_dtype(const ast::FuncDecl &decl,
                                                         const std::vector<LExpr> &args, size_t k) {
  const std::string &dtype = decl.params[k].type.dtype.name;
  if (auto concrete = parse_dtype(dtype)) return concrete;
  // A type parameter: bound by the first argument of that parameter's dtype
  // that is not itself a number (numbers alone leave it to the literal).
  for (size_t j = 0; j < args.size() && j < decl.params.size(); ++j)
    if (args[j].kind == LExpr::Kind::Value && decl.params[j].type.dtype.name == dtype)
      return function_.type(args[j].value).dtype;
  return std::nullopt;
}

LExpr BodyLowerer::call_shmap(const ast::FuncDecl &decl, int decl_module,
                              std::vector<ir::ValueId> args, SourceSpan callee_span,
                              SourceSpan span) {
  int callee = program_.shmap_function(decl, decl_module, span);
  if (callee < 0 || !check_callee_mesh(callee, decl, callee_span)) return {};
  const ir::Module &m = program_.module;
  const ir::Function &g = m.functions[static_cast<size_t>(callee)];
  const rt::Mesh &callee_mesh = m.mesh_of(g);
  bool ok = true;
  const size_t first_diagnostic = diags().count();
  for (size_t k = 0; k < args.size(); ++k) {
    const Type &have = function_.type(args[k]);
    const Type &want = g.type(g.params[k].value);
    if (have.dtype == want.dtype && have.shape == want.shape) continue;
    std::string split = want.shape == g.params[k].global_shape
                            ? std::string()
                            : " (global " + shape_type_str(want.dtype, g.params[k].global_shape) +
                                  " split by " + spec_str(g.params[k].spec, callee_mesh) + ")";
    diags()
        .error("argument-type-mismatch", span,
               "argument " + std::to_string(k + 1) + " of `" + g.name + "` is " +
                   shape_type_str(have.dtype, have.shape) +
                   " on each device, but the shmap takes " +
                   shape_type_str(want.dtype, want.shape) + split)
        .notes.push_back({g.params[k].span, "parameter declared here"});
    ok = false;
  }
  if (!ok) {
    auto order = argument_order_that_fits(args.size(), [&](const std::vector<size_t> &o) {
      for (size_t k = 0; k < o.size(); ++k) {
        const Type &have = function_.type(args[o[k]]);
        const Type &want = g.type(g.params[k].value);
        if (have.dtype != want.dtype || have.shape != want.shape) return false;
      }
      return true;
    });
    if (order) {
      std::vector<std::string> names;
      for (size_t k = 0; k < g.params.size(); ++k)
        names.push_back(g.values.at(static_cast<size_t>(g.params[k].value)).name);
      diags().at(first_diagnostic).help(wrong_order_help(names, *order));
    }
    return {};
  }
  return emit_call(callee, std::move(args), span);
}

bool BodyLowerer::check_callee_mesh(int callee, const ast::FuncDecl &decl, SourceSpan at) {
  const ir::Module &m = program_.module;
  const ir::Function &g = m.functions[static_cast<size_t>(callee)];
  const rt::Mesh &callee_mesh = m.mesh_of(g);
  if (mesh_text(callee_mesh) == mesh_text(mesh())) return true;
  const std::string &here = m.meshes[static_cast<size_t>(function_.mesh)].name;
  const std::string &there = m.meshes[static_cast<size_t>(g.mesh)].name;
  diags()
      .error("mesh-mismatch", at,
             "`" + g.name + "` runs on mesh `" + there + "` " + mesh_text(callee_mesh) +
                 ", but this body runs on mesh `" + here + "` " + mesh_text(mesh()) +
                 "; a shmap can be called only from a body on the same mesh")
      .notes.push_back({decl.mesh ? decl.mesh->span : decl.name.span,
                        "`" + g.name + "` is declared on `" + there + "` here"});
  return false;
}

LExpr BodyLowerer::emit_call(int callee, std::vector<ir::ValueId> args, SourceSpan span) {
  if (enclosing_iterations > 1) {
    const ir::Function &g = program_.module.functions[static_cast<size_t>(callee)];
    if (!program_.check_unrolled_size(
            rt::saturating_mul(enclosing_iterations, program_.function_size(callee)), span,
            "inlining `" + (g.source_name.empty() ? g.name : g.source_name) +
                "` in the loops around this call"))
      return {};
  }
  const ir::Function &f = program_.module.functions[static_cast<size_t>(callee)];
  std::vector<Type> result_types;
  for (auto v : f.returns) result_types.push_back(f.type(v).with_variance({}));
  Attrs attrs;
  attrs.call().callee = callee;
  return tuple_or_value(
      builder_.add_typed(OpCode::Call, std::move(args), attrs, result_types, span), span);
}

LExpr BodyLowerer::tuple_or_value(const std::vector<ir::ValueId> &results, SourceSpan span) {
  if (results.size() == 1) return LExpr::of(results[0], span);
  LExpr e;
  e.kind = LExpr::Kind::Tuple;
  e.tuple = results;
  e.span = span;
  return e;
}

LExpr BodyLowerer::lower_index(const ast::IndexExpr &index, SourceSpan span) {
  // NumPy basic indexing on the local block: integers drop a dimension,
  // slices keep it (a negative step reads it backwards), `None` inserts a new
  // dimension of size 1. Lowered to one slice with positive steps, a flip of
  // the dimensions read backwards, and a reshape for dropped/new dimensions.
  ir::ValueId base = lower_value(*index.base);
  if (base == ir::kNoValue) return {};
  const Type t = function_.type(base);
  int64_t consumed = 0;
  for (const ast::Subscript &s : index.subscripts) consumed += s.is_new_axis ? 0 : 1;
  if (consumed > t.rank()) {
    diags().error("bad-index", span,
                  "too many subscripts (" + std::to_string(consumed) + ") for a value of rank " +
                      std::to_string(t.rank()));
    return {};
  }
  Attrs attrs;
  std::vector<int64_t> reversed;
  // Integer indices that are not compile-time constants (a loop index, `me`):
  // dimension and the i32 value, sliced with dynamic_slice after the static slice.
  std::vector<std::pair<int64_t, ir::ValueId>> dynamic;
  Shape result_shape;  // after dropping indexed and inserting new dimensions
  int64_t d = 0;
  auto slice_dim = [&](const ast::Subscript *s) -> bool {
    const int64_t n = t.shape[d];
    int64_t b = 0, e = n, st = 1;
    auto normalize = [&](int64_t v) { return v < 0 ? v + n : v; };
    if (s && !s->is_slice && !is_static_int(*s->index)) {
      if (!lower_dynamic_index(*s->index, d, n, dynamic)) return false;
      attrs.layout().start.push_back(0);
      attrs.layout().limit.push_back(n);
      attrs.layout().stride.push_back(1);
      return true;
    }
    if (s && !s->is_slice) {
      auto i = eval_int(*s->index, "an index");
      if (!i) return false;
      int64_t k = normalize(*i);
      if (k < 0 || k >= n) {
        diags().error("bad-index", s->span,
                      "index " + std::to_string(*i) + " is out of bounds for dimension " +
                          std::to_string(d) + " of size " + std::to_string(n));
        return false;
      }
      attrs.layout().start.push_back(k);
      attrs.layout().limit.push_back(k + 1);
      attrs.layout().stride.push_back(1);
      return true;
    }
    if (s && s->step) {
      auto v = eval_int(*s->step, "a slice step");
      if (!v) return false;
      if (*v == 0) {
        diags().error("bad-index", s->step->span, "a slice step cannot be zero");
        return false;
      }
      st = *v;
    }
    std::optional<int64_t> start, stop;
    if (s && s->start && !(start = eval_int(*s->start, "a slice start"))) return false;
    if (s && s->stop && !(stop = eval_int(*s->stop, "a slice stop"))) return false;
    int64_t count;
    if (st > 0) {
      b = start ? std::clamp<int64_t>(normalize(*start), 0, n) : 0;
      e = stop ? std::clamp<int64_t>(normalize(*stop), 0, n) : n;
      if (e < b) e = b;
      count = rt::range_length(b, e, st);  // no overflow for a step near 2^63
    } else {
      // Backwards: from `first` down to just above `last` (exclusive; -1 = past the start).
      int64_t first = start ? std::clamp<int64_t>(normalize(*start), -1, n - 1) : n - 1;
      int64_t last = stop ? std::clamp<int64_t>(normalize(*stop), -1, n - 1) : -1;
      const int64_t back = st == INT64_MIN ? INT64_MAX : -st;  // any step past n takes one
      count = first > last ? rt::range_length(last + 1, first + 1, back) : 0;
      // The same elements read forwards, then flipped.
      b = count > 0 ? first - (count - 1) * back : 0;
      e = count > 0 ? first + 1 : 0;
      st = back;
      if (count > 0) reversed.push_back(d);
    }
    if (count == 0 && n > 0) {
      report_empty_slice(base, d, n, s->span);
      return false;
    }
    attrs.layout().start.push_back(b);
    attrs.layout().limit.push_back(e);
    attrs.layout().stride.push_back(st);
    result_shape.push_back(count);
    return true;
  };
  for (const ast::Subscript &s : index.subscripts) {
    if (s.is_new_axis) {
      result_shape.push_back(1);
      continue;
    }
    if (!slice_dim(&s)) return {};
    ++d;
  }
  for (; d < t.rank(); ++d)
    if (!slice_dim(nullptr)) return {};
  bool whole = true;  // no static slicing (only run-time indices)
  for (int64_t k = 0; k < t.rank(); ++k)
    whole = whole && attrs.layout().start[k] == 0 && attrs.layout().limit[k] == t.shape[k] &&
            attrs.layout().stride[k] == 1;
  ir::ValueId v = base;
  if (consumed > 0 && !(whole && !dynamic.empty())) v = emit(OpCode::Slice, {v}, attrs, span);
  for (const auto &[k, i] : dynamic) {
    if (v == ir::kNoValue) return {};
    Attrs ds;  // block i of size 1 along k
    ds.layout().dim = k;
    ds.layout().shape = function_.type(v).shape;
    ds.layout().shape[static_cast<size_t>(k)] = 1;
    v = emit(OpCode::DynamicSlice, {v, i}, ds, span);
  }
  if (v != ir::kNoValue && !reversed.empty()) {
    Attrs r;
    r.layout().dims = reversed;
    v = emit(OpCode::Reverse, {v}, r, span, ir::Origin::Lowering);
  }
  if (v == ir::kNoValue || function_.type(v).shape == result_shape) return LExpr::of(v, span);
  Attrs r;
  r.layout().shape = result_shape;
  return LExpr::of(emit(OpCode::Reshape, {v}, r, span, ir::Origin::Lowering), span);
}

void BodyLowerer::report_empty_slice(ir::ValueId base, int64_t dim, int64_t size,
                                     SourceSpan subscript_span) {
  const std::string &name = function_.values[base].name;
  Diagnostic &d =
      diags().error("empty-slice", subscript_span,
                    "this slice selects nothing: dimension " + std::to_string(dim) + " of " +
                        (name.empty() ? std::string("the value") : "`" + name + "`") +
                        " has size " + std::to_string(size) + " on each device");
  if (auto note = local_block_note(base)) {
    d.notes.push_back(*note);
    d.help(
        "slices index each device's local block, not the global array; to slice the global "
        "array, all_gather it first, or compute the local range from axis_index");
  } else {
    d.help("slices index each device's local block; indices past the end are clamped");
  }
}

bool BodyLowerer::lower_dynamic_index(const ast::Expr &expr, int64_t dim, int64_t size,
                                      std::vector<std::pair<int64_t, ir::ValueId>> &out) {
  SourceSpan loop;
  if (auto bounds = index_bounds(expr, loop)) {
    const auto [lo, hi] = *bounds;
    if (lo < 0 || hi >= size) {
      const std::string text = format_expr(expr);
      auto &d = diags().error(
          "bad-index", expr.span,
          "index `" + text + "` takes values from " + std::to_string(lo) + " to " +
              std::to_string(hi) + ", out of bounds for dimension " + std::to_string(dim) +
              " of size " + std::to_string(size) +
              (lo < 0 ? " (an index computed at run time is not counted from the end)" : ""));
      if (loop.valid()) d.notes.push_back({loop, "the loop that sets its range"});
      return false;
    }
  }
  ir::ValueId i = lower_value(expr, DType::I32);
  if (i == ir::kNoValue) return false;
  const Type it = function_.type(i);
  if (it.dtype != DType::I32 || it.rank() != 0) {
    diags().error(
        "bad-index", expr.span,
        "an index must be an i32 scalar, but this is " + shape_type_str(it.dtype, it.shape));
    return false;
  }
  out.emplace_back(dim, i);
  return true;
}

namespace {

/// The elements of an axis argument: `i` or `(i, j)`.
std::vector<const ast::Expr *> axis_exprs(const ast::Expr &expr) {
  std::vector<const ast::Expr *> items;
  if (auto *t = std::get_if<ast::TupleExpr>(&expr.node)) {
    for (const auto &e : t->elements) items.push_back(e.get());
  } else {
    items.push_back(&expr);
  }
  return items;
}

}  // namespace

bool BodyLowerer::is_static_int(const ast::Expr &expr) const {
  if (std::holds_alternative<ast::IntLit>(expr.node)) return true;
  if (auto *name = std::get_if<ast::NameExpr>(&expr.node)) return dim_symbols.count(name->name);
  if (auto *u = std::get_if<ast::UnaryExpr>(&expr.node))
    return u->op == ast::UnaryOpKind::Neg && is_static_int(*u->operand);
  if (auto *b = std::get_if<ast::BinaryExpr>(&expr.node))
    return (b->op == ast::BinaryOpKind::Add || b->op == ast::BinaryOpKind::Sub ||
            b->op == ast::BinaryOpKind::Mul || b->op == ast::BinaryOpKind::Div) &&
           is_static_int(*b->lhs) && is_static_int(*b->rhs);
  if (auto *c = std::get_if<ast::CallExpr>(&expr.node))
    return c->callee.name == "axis_size" && c->args.size() == 1;
  return false;
}

std::optional<std::pair<int64_t, int64_t>> BodyLowerer::index_bounds(const ast::Expr &expr,
                                                                     SourceSpan &loop) {
  using Bounds = std::pair<int64_t, int64_t>;
  constexpr int64_t kLimit = int64_t{1} << 31;  // keeps products of bounds exact
  auto fits = [&](const Bounds &b) -> std::optional<Bounds> {
    if (b.first < -kLimit || b.second > kLimit) return std::nullopt;
    return b;
  };
  if (auto *lit = std::get_if<ast::IntLit>(&expr.node)) return fits({lit->value, lit->value});
  if (auto *name = std::get_if<ast::NameExpr>(&expr.node)) {
    if (auto d = dim_symbols.find(name->name); d != dim_symbols.end())
      return fits({d->second, d->second});
    auto v = env.find(name->name);
    if (v == env.end()) return std::nullopt;
    auto l = loop_indices_.find(v->second);
    if (l == loop_indices_.end()) return std::nullopt;
    loop = l->second.loop;
    return Bounds{l->second.lo, l->second.hi};
  }
  if (auto *u = std::get_if<ast::UnaryExpr>(&expr.node)) {
    if (u->op != ast::UnaryOpKind::Neg) return std::nullopt;
    auto b = index_bounds(*u->operand, loop);
    if (!b) return std::nullopt;
    return Bounds{-b->second, -b->first};
  }
  if (auto *bin = std::get_if<ast::BinaryExpr>(&expr.node)) {
    auto l = index_bounds(*bin->lhs, loop);
    auto r = l ? index_bounds(*bin->rhs, loop) : std::nullopt;
    if (!l || !r) return std::nullopt;
    switch (bin->op) {
      case ast::BinaryOpKind::Add:
        return fits({l->first + r->first, l->second + r->second});
      case ast::BinaryOpKind::Sub:
        return fits({l->first - r->second, l->second - r->first});
      case ast::BinaryOpKind::Mul: {
        const int64_t c[] = {l->first * r->first, l->first * r->second, l->second * r->first,
                             l->second * r->second};
        return fits({*std::min_element(c, c + 4), *std::max_element(c, c + 4)});
      }
      default:
        return std::nullopt;
    }
  }
  if (auto *c = std::get_if<ast::CallExpr>(&expr.node)) {
    if ((c->callee.name != "axis_index" && c->callee.name != "axis_size") || c->args.size() != 1 ||
        !c->args[0].keyword.empty())
      return std::nullopt;
    std::vector<int> axes;
    for (const ast::Expr *e : axis_exprs(*c->args[0].value)) {
      auto *n = std::get_if<ast::NameExpr>(&e->node);
      int a = n ? mesh().find_axis(n->name) : -1;
      if (a < 0) return std::nullopt;  // lowering the call reports it
      axes.push_back(a);
    }
    const int64_t n = axes_size(mesh(), axes);
    if (c->callee.name == "axis_size") return Bounds{n, n};
    return Bounds{0, n - 1};
  }
  return std::nullopt;
}

std::optional<int64_t> BodyLowerer::eval_int(const ast::Expr &expr, const char *what) {
  auto fail = [&]() -> std::optional<int64_t> {
    Diagnostic &d = diags().error("not-constant", expr.span,
                                  std::string(what) + " must be a compile-time integer");
    // `range(steps)` with `steps` bound nowhere: a size to give on the command line.
    if (auto *name = std::get_if<ast::NameExpr>(&expr.node);
        name && set_sizes && !env.count(name->name) && !member_path(name->name))
      d.help("`" + name->name + "` is not defined; give it a size on the command line with --set " +
             name->name + "=N (or `sizes=` in Python), or write a number");
    return std::nullopt;
  };
  if (auto *lit = std::get_if<ast::IntLit>(&expr.node)) return lit->value;
  // `x.ndim`, `x.size`, `x.shape[k]` of a local value: its static (local) shape.
  auto local_shape = [&](const std::string &name, const char *attr) -> std::optional<Shape> {
    auto path = member_path(name);
    if (!path || path->size() != 2 || (*path)[1] != attr) return std::nullopt;
    auto it = env.find(path->front());
    if (it == env.end() || it->second == kPoisoned) return std::nullopt;
    return function_.type(it->second).shape;
  };
  if (auto *name = std::get_if<ast::NameExpr>(&expr.node)) {
    auto it = dim_symbols.find(name->name);
    if (it != dim_symbols.end()) {
      if (set_sizes) program().note_size_used(name->name);
      return it->second;
    }
    if (auto shape = local_shape(name->name, "ndim")) return static_cast<int64_t>(shape->size());
    if (auto shape = local_shape(name->name, "size")) return rt::num_elements(*shape);
    return fail();
  }
  if (auto *index = std::get_if<ast::IndexExpr>(&expr.node)) {
    auto *base = std::get_if<ast::NameExpr>(&index->base->node);
    std::optional<Shape> shape = base ? local_shape(base->name, "shape") : std::nullopt;
    if (!shape || index->subscripts.size() != 1 || index->subscripts[0].is_slice ||
        index->subscripts[0].is_new_axis)
      return fail();
    auto k = eval_int(*index->subscripts[0].index, "an index");
    if (!k) return std::nullopt;
    int64_t rank = static_cast<int64_t>(shape->size());
    if (*k < -rank || *k >= rank) {
      diags().error("bad-index", index->subscripts[0].span,
                    "index " + std::to_string(*k) + " is out of bounds for a shape of rank " +
                        std::to_string(rank));
      return std::nullopt;
    }
    return (*shape)[static_cast<size_t>(*k < 0 ? *k + rank : *k)];
  }
  if (auto *u = std::get_if<ast::UnaryExpr>(&expr.node)) {
    if (u->op != ast::UnaryOpKind::Neg) return fail();
    auto v = eval_int(*u->operand, what);
    if (!v) return std::nullopt;
    return -*v;
  }
  if (auto *b = std::get_if<ast::BinaryExpr>(&expr.node)) {
    auto l = eval_int(*b->lhs, what);
    if (!l) return std::nullopt;
    auto r = eval_int(*b->rhs, what);
    if (!r) return std::nullopt;
    __int128 res;
    switch (b->op) {
      case ast::BinaryOpKind::Add:
        res = static_cast<__int128>(*l) + *r;
        break;
      case ast::BinaryOpKind::Sub:
        res = static_cast<__int128>(*l) - *r;
        break;
      case ast::BinaryOpKind::Mul:
        res = static_cast<__int128>(*l) * *r;
        break;
      case ast::BinaryOpKind::FloorDiv:
      case ast::BinaryOpKind::Mod: {  // Python's // and %: rounding toward -inf
        if (*r == 0) {
          diags().error("not-constant", expr.span,
                        std::string(what) + " divides " + std::to_string(*l) + " by zero");
          return std::nullopt;
        }
        int64_t q = *l / *r;
        if (*l % *r != 0 && ((*l < 0) != (*r < 0))) --q;
        res = b->op == ast::BinaryOpKind::FloorDiv ? q : *l - q * *r;
        break;
      }
      case ast::BinaryOpKind::Div:
        if (*r == 0 || *l % *r != 0) {
          diags().error("not-constant", expr.span,
                        std::string(what) + " divides " + std::to_string(*l) + " by " +
                            std::to_string(*r) + ", which is not exact");
          return std::nullopt;
        }
        res = *l / *r;
        break;
      default:
        return fail();
    }
    if (res > INT64_MAX / 2 || res < INT64_MIN / 2) {
      diags().error("literal-out-of-range", expr.span, std::string(what) + " overflows");
      return std::nullopt;
    }
    return static_cast<int64_t>(res);
  }
  if (auto *c = std::get_if<ast::CallExpr>(&expr.node)) {
    if (c->callee.name == "axis_size" && c->args.size() == 1) {
      auto axes = eval_axes(*c->args[0].value);
      if (!axes) return std::nullopt;
      return axes_size(mesh(), *axes);
    }
  }
  return fail();
}

std::optional<std::vector<int>> BodyLowerer::eval_axes(const ast::Expr &expr) {
  std::vector<const ast::Expr *> items;
  if (auto *t = std::get_if<ast::TupleExpr>(&expr.node)) {
    for (const auto &e : t->elements) items.push_back(e.get());
    if (items.empty()) {
      diags().error("bad-axes", expr.span, "expected at least one mesh axis");
      return std::nullopt;
    }
  } else {
    items.push_back(&expr);
  }
  std::vector<int> axes;
  for (const ast::Expr *e : items) {
    auto *name = std::get_if<ast::NameExpr>(&e->node);
    if (auto *quoted = std::get_if<ast::StringLit>(&e->node)) {
      // psum(x, "batch"): a JAX habit.
      diags()
          .error("bad-axes", e->span,
                 "`\"" + quoted->value +
                     "\"`: mesh axis names are names, not strings; drop the "
                     "quotes")
          .help("write `" + quoted->value + "`")
          .fixit(e->span, quoted->value);
      return std::nullopt;
    }
    if (!name) {
      diags().error("bad-axes", e->span, "expected a mesh axis name");
      return std::nullopt;
    }
    int a = mesh().find_axis(name->name);
    if (a < 0) {
      report_unknown_axis(diags(), e->span, name->name, mesh());
      return std::nullopt;
    }
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) {
      diags().error("duplicate-axis", e->span, "axis `" + name->name + "` is named twice");
      return std::nullopt;
    }
    axes.push_back(a);
  }
  return axes;
}

}  // namespace lowering
}  // namespace spmd
