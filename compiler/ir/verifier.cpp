// ir/verifier.cpp — see verifier.h.
#include "ir/verifier.h"

#include "ops/shape_rules.h"
#include "ops/variance_rules.h"

namespace spmd::ir {

std::vector<std::string> verify_function(const Module &m, const Function &f) {
  std::vector<std::string> errors;
  const rt::Mesh &mesh = m.mesh_of(f);
  auto err = [&](size_t i, const std::string &msg) {
    errors.push_back(f.name + ": instruction " + std::to_string(i) + ": " + msg);
  };
  std::vector<bool> defined(f.values.size(), false);
  for (const Param &p : f.params) {
    if (p.value < 0 || static_cast<size_t>(p.value) >= f.values.size()) {
      errors.push_back(f.name + ": parameter with an invalid value id");
      return errors;
    }
    defined[p.value] = true;
    if (f.kind == FunctionKind::Shmap) {
      AxisSet want;
      for (const auto &d : p.spec) want = want | AxisSet::of_all(d);
      if (f.type(p.value).variance != want)
        errors.push_back(f.name + ": parameter `" + f.values[p.value].name +
                         "` variance differs from its in_spec");
      if (f.type(p.value).shape != rt::local_shape(mesh, p.global_shape, p.spec))
        errors.push_back(f.name + ": parameter `" + f.values[p.value].name +
                         "` local shape differs from its in_spec");
    }
  }
  // Constants typed varying; the printed program types them by their context.
  std::vector<bool> varying_constant(f.values.size(), false);
  auto check_constant_use = [&](size_t i, ValueId v, const char *where) {
    if (varying_constant[static_cast<size_t>(v)])
      err(i, "constant %" + std::to_string(v) + " typed " + axis_set_str(f.type(v).variance, mesh) +
                 " is used " + where + ", where the printed program would type it invariant");
  };
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Instr &in = f.body[i];
    std::vector<Type> ops;
    bool ok = true;
    for (ValueId o : in.operands) {
      if (o < 0 || static_cast<size_t>(o) >= f.values.size() || !defined[o]) {
        err(i, "operand %" + std::to_string(o) + " is used before it is defined");
        ok = false;
        continue;
      }
      ops.push_back(f.type(o));
    }
    for (ValueId r : in.results) {
      if (r < 0 || static_cast<size_t>(r) >= f.values.size()) {
        err(i, "invalid result id");
        ok = false;
        continue;
      }
      if (defined[r]) err(i, "value %" + std::to_string(r) + " is defined twice");
      defined[r] = true;
    }
    if (!ok) continue;
    if (op_kind(in.op) == OpKind::Creation)
      for (ValueId r : in.results) varying_constant[r] = !f.type(r).variance.empty();
    bool all_constant = !in.operands.empty();
    for (ValueId o : in.operands) all_constant = all_constant && varying_constant[o];
    if (!constant_operand_adapts(in.op))
      for (ValueId o : in.operands) check_constant_use(i, o, "by a collective or call");
    else if (all_constant)
      check_constant_use(i, in.operands[0], "by an op whose operands are all constants");
    std::string name(op_spelling(in.op));
    if (in.op == OpCode::Call) {
      if (in.attrs.callee < 0 || static_cast<size_t>(in.attrs.callee) >= m.functions.size()) {
        err(i, "call of an unknown function");
        continue;
      }
      const Function &c = m.functions[static_cast<size_t>(in.attrs.callee)];
      if (c.params.size() != in.operands.size() || c.returns.size() != in.results.size()) {
        err(i, "call arity differs from `" + c.name + "`");
        continue;
      }
      for (size_t k = 0; k < ops.size(); ++k)
        if (!(c.type(c.params[k].value) == ops[k]))
          err(i, "argument " + std::to_string(k + 1) + " type differs from `" + c.name + "`");
      for (size_t k = 0; k < in.results.size(); ++k)
        if (!(c.type(c.returns[k]) == f.type(in.results[k])))
          err(i, "result " + std::to_string(k + 1) + " type differs from `" + c.name + "`");
      continue;
    }
    ShapeRuleResult shapes = infer_shapes(in.op, ops, in.attrs, mesh);
    if (!shapes.ok()) {
      err(i, name + ": " + shapes.error);
      continue;
    }
    if (shapes.results.size() != in.results.size()) {
      err(i, name + ": wrong number of results");
      continue;
    }
    AxisSet uni;
    for (const Type &t : ops) uni = uni | t.variance;
    OpKind kind = op_kind(in.op);
    if (kind != OpKind::Collective && kind != OpKind::Creation)
      for (const Type &t : ops)
        if (t.variance != uni) err(i, name + ": operands differ in variance");
    AxisSet axes = AxisSet::of_all(in.attrs.axes);
    AxisRequirement req = operand_requirement(in.op);
    for (const Type &t : ops) {
      if (req == AxisRequirement::Varying && !t.variance.contains_all(axes))
        err(i, name + ": operand must vary along " + axis_set_str(axes, mesh));
      if (req == AxisRequirement::Invariant && !(t.variance & axes).empty())
        err(i, name + ": operand must be invariant along " + axis_set_str(axes, mesh));
    }
    std::vector<AxisSet> operand_vars;
    for (const Type &t : ops) operand_vars.push_back(t.variance);
    const std::vector<AxisSet> rvs =
        result_variances(in.op, operand_vars, in.results.size(), in.attrs);
    for (size_t k = 0; k < in.results.size(); ++k) {
      const AxisSet rv = rvs[k];
      const Type &t = f.type(in.results[k]);
      if (t.dtype != shapes.results[k].dtype || t.shape != shapes.results[k].shape)
        err(i, name + ": result type " + type_str(t, mesh) + " differs from the shape rule's " +
                   shape_type_str(shapes.results[k].dtype, shapes.results[k].shape));
      // A creation op may be typed with any variance (a constant is equal everywhere).
      if (kind != OpKind::Creation && t.variance != rv)
        err(i, name + ": result variance " + axis_set_str(t.variance, mesh) +
                   " differs from the rule's " + axis_set_str(rv, mesh));
    }
  }
  if (f.returns.size() != f.results.size())
    errors.push_back(f.name + ": returns " + std::to_string(f.returns.size()) + " values for " +
                     std::to_string(f.results.size()) + " results");
  for (size_t k = 0; k < f.returns.size() && k < f.results.size(); ++k) {
    ValueId v = f.returns[k];
    if (v < 0 || static_cast<size_t>(v) >= f.values.size() || !defined[v]) {
      errors.push_back(f.name + ": returned value is not defined");
      continue;
    }
    if (f.kind != FunctionKind::Shmap) {
      if (varying_constant[static_cast<size_t>(v)])
        errors.push_back(f.name + ": returns a constant typed " +
                         axis_set_str(f.type(v).variance, mesh) +
                         ", which the printed def would return invariant");
      continue;
    }
    const Result &r = f.results[k];
    AxisSet want;
    for (const auto &d : r.spec) want = want | AxisSet::of_all(d);
    if (f.type(v).variance != want)
      errors.push_back(f.name + ": result " + std::to_string(k + 1) + " has variance " +
                       axis_set_str(f.type(v).variance, mesh) + " but its out_spec needs " +
                       axis_set_str(want, mesh));
    if (f.type(v).shape != rt::local_shape(mesh, r.global_shape, r.spec))
      errors.push_back(f.name + ": result " + std::to_string(k + 1) +
                       " local shape differs from its out_spec");
  }
  return errors;
}

std::vector<std::string> verify_module(const Module &m) {
  std::vector<std::string> all;
  for (const Function &f : m.functions) {
    auto e = verify_function(m, f);
    all.insert(all.end(), e.begin(), e.end());
  }
  return all;
}

}  // namespace spmd::ir
