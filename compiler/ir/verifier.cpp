// ir/verifier.cpp — see verifier.h.
#include "ir/verifier.h"

#include <deque>
#include <span>

#include "ops/shape_rules.h"
#include "ops/variance_rules.h"

namespace spmd::ir {
namespace {

class FunctionVerifier {
 public:
  FunctionVerifier(const Module &m, const Function &f, const VerifyOptions &options)
      : m_(m),
        f_(f),
        options_(options),
        mesh_(m.mesh_of(f)),
        visible_(f.values.size(), false),
        defined_(f.values.size(), false),
        varying_constant_(f.values.size(), false) {}

  std::vector<std::string> run() {
    for (const Param &p : f_.params) {
      if (!valid(p.value)) {
        errors_.push_back(f_.name + ": parameter with an invalid value id");
        return errors_;
      }
      define(p.value);
      if (f_.kind == FunctionKind::Shmap) {
        if (f_.type(p.value).variance != spec_axes(p.spec))
          errors_.push_back(f_.name + ": parameter `" + f_.values[p.value].name +
                            "` variance differs from its in_spec");
        if (f_.type(p.value).shape != rt::local_shape(mesh_, p.global_shape, p.spec))
          errors_.push_back(f_.name + ": parameter `" + f_.values[p.value].name +
                            "` local shape differs from its in_spec");
      }
      if (f_.kind == FunctionKind::Sharded && f_.type(p.value).shape != p.global_shape)
        errors_.push_back(f_.name + ": parameter `" + f_.values[p.value].name +
                          "` of a sharded function does not have its global shape");
    }
    block(f_.body, "");
    returns();
    return errors_;
  }

 private:
  static AxisSet spec_axes(const rt::PartitionSpec &spec) {
    AxisSet s;
    for (const auto &d : spec) s = s | AxisSet::of_all(d);
    return s;
  }
  bool valid(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < f_.values.size(); }
  bool visible(ValueId v) const { return valid(v) && visible_[v]; }

  /// Marks `v` defined (and visible); false for an invalid id.
  bool define(ValueId v) {
    if (!valid(v)) {
      error("invalid value id %" + std::to_string(v));
      return false;
    }
    if (defined_[v]) error("value %" + std::to_string(v) + " is defined twice");
    defined_[v] = visible_[v] = true;
    return true;
  }

  void error(const std::string &msg) {
    errors_.push_back(f_.name + ": instruction " + where_ + ": " + msg);
  }

  void check_constant_use(ValueId v, const char *where) {
    if (options_.printable && varying_constant_[static_cast<size_t>(v)])
      error("constant %" + std::to_string(v) + " typed " +
            axis_set_str(f_.type(v).variance, mesh_) + " is used " + where +
            ", where the printed program would type it invariant");
  }

  /// Checks `body`; `prefix` names its position ("3." inside the loop at 3).
  /// The values a region defines are not visible after it; `yields` (a
  /// region's next values) must be visible at its end.
  void block(const std::vector<Instr> &body, const std::string &prefix,
             const std::vector<ValueId> &yields = {}) {
    std::vector<ValueId> local;
    for (size_t i = 0; i < body.size(); ++i) {
      where_ = prefix + std::to_string(i);
      instr(body[i], prefix + std::to_string(i) + ".");
      if (!prefix.empty())  // (the function body's values stay visible: not listed)
        for (ValueId r : body[i].results)
          if (valid(r)) local.push_back(r);
    }
    where_ = prefix + "yield";
    for (ValueId y : yields)
      if (!visible(y)) error("next value %" + std::to_string(y) + " is not defined");
    if (!prefix.empty())
      for (ValueId v : local) visible_[v] = false;
  }

  void instr(const Instr &in, const std::string &inner_prefix) {
    // The operand types, copied into a buffer of this loop depth that is
    // reused from one instruction to the next (copy-assigning a Type reuses
    // its shape's storage: no allocation per operand on 100k-op bodies).
    if (depth_ == operand_types_.size()) operand_types_.emplace_back();
    std::vector<Type> &buffer = operand_types_[depth_];
    size_t n = 0;
    bool ok = true;
    for (ValueId o : in.operands) {
      if (!visible(o)) {
        error("operand %" + std::to_string(o) + " is used before it is defined");
        ok = false;
        continue;
      }
      if (n == buffer.size())
        buffer.push_back(f_.type(o));
      else
        buffer[n] = f_.type(o);
      ++n;
    }
    const std::span<const Type> ops(buffer.data(), n);
    // Each op carries its own family's typed attributes (or none: all defaults).
    const AttrFamily carried = in.attrs.family();
    if (carried != AttrFamily::None && carried != op_attr_family(in.op)) {
      error(std::string(op_spelling(in.op)) + ": carries " +
            std::string(attr_family_name(carried)) + " attributes, not " +
            std::string(attr_family_name(op_attr_family(in.op))) + " ones");
      return;
    }
    if (in.op == OpCode::For) {
      ++depth_;
      loop(in, ok, inner_prefix);
      --depth_;
      return;
    }
    for (ValueId r : in.results) ok = define(r) && ok;
    if (!ok) return;
    if (op_kind(in.op) == OpKind::Creation)
      for (ValueId r : in.results) varying_constant_[r] = !f_.type(r).variance.empty();
    bool all_constant = !in.operands.empty();
    for (ValueId o : in.operands) all_constant = all_constant && varying_constant_[o];
    if (!constant_operand_adapts(in.op))
      for (ValueId o : in.operands) check_constant_use(o, "by a collective or call");
    else if (all_constant)
      check_constant_use(in.operands[0], "by an op whose operands are all constants");
    std::string name(op_spelling(in.op));
    if (f_.kind == FunctionKind::Sharded && op_kind(in.op) == OpKind::Collective)
      error(name + ": a collective in a sharded function");
    if (f_.kind == FunctionKind::Shmap && in.op == OpCode::Constrain) error("constrain in a shmap");
    if (in.op == OpCode::Call) {
      call(in, ops);
      return;
    }
    ShapeRuleResult shapes = infer_shapes(in.op, ops, in.attrs, mesh_);
    if (!shapes.ok()) {
      error(name + ": " + shapes.error);
      return;
    }
    if (shapes.results.size() != in.results.size()) {
      error(name + ": wrong number of results");
      return;
    }
    AxisSet uni;
    for (const Type &t : ops) uni = uni | t.variance;
    OpKind kind = op_kind(in.op);
    if (kind != OpKind::Collective && kind != OpKind::Creation && kind != OpKind::Effect)
      for (const Type &t : ops)
        if (t.variance != uni) error(name + ": operands differ in variance");
    AxisSet axes = AxisSet::of_all(collective_axes(in.op, in.attrs));
    AxisRequirement req = operand_requirement(in.op);
    for (const Type &t : ops) {
      if (req == AxisRequirement::Varying && !t.variance.contains_all(axes))
        error(name + ": operand must vary along " + axis_set_str(axes, mesh_));
      if (req == AxisRequirement::Invariant && !(t.variance & axes).empty())
        error(name + ": operand must be invariant along " + axis_set_str(axes, mesh_));
    }
    operand_vars_.clear();
    for (const Type &t : ops) operand_vars_.push_back(t.variance);
    const auto rvs = result_variances(in.op, operand_vars_, in.results.size(), in.attrs);
    for (size_t k = 0; k < in.results.size(); ++k) {
      const AxisSet rv = rvs[k];
      const Type &t = f_.type(in.results[k]);
      if (t.dtype != shapes.results[k].dtype || t.shape != shapes.results[k].shape)
        error(name + ": result type " + type_str(t, mesh_) + " differs from the shape rule's " +
              shape_type_str(shapes.results[k].dtype, shapes.results[k].shape));
      // A creation op may be typed with any variance (a constant is equal everywhere).
      if (kind != OpKind::Creation && t.variance != rv)
        error(name + ": result variance " + axis_set_str(t.variance, mesh_) +
              " differs from the rule's " + axis_set_str(rv, mesh_));
    }
  }

  void call(const Instr &in, std::span<const Type> ops) {
    if (in.attrs.call().derived >= 0) {
      error("call of a derivative that was not built (pipeline/derived_functions.h)");
      return;
    }
    if (in.attrs.call().callee < 0 ||
        static_cast<size_t>(in.attrs.call().callee) >= m_.functions.size()) {
      error("call of an unknown function");
      return;
    }
    const Function &c = m_.functions[static_cast<size_t>(in.attrs.call().callee)];
    if (c.params.size() != in.operands.size() || c.returns.size() != in.results.size()) {
      error("call arity differs from `" + c.name + "`");
      return;
    }
    for (size_t k = 0; k < ops.size(); ++k)
      if (!(c.type(c.params[k].value) == ops[k]))
        error("argument " + std::to_string(k + 1) + " type differs from `" + c.name + "`");
    for (size_t k = 0; k < in.results.size(); ++k)
      if (!(c.type(c.returns[k]) == f_.type(in.results[k])))
        error("result " + std::to_string(k + 1) + " type differs from `" + c.name + "`");
  }

  /// A loop: one region with parameters (k, carried...); each carried value
  /// has one type (variance included) as initial value, parameter, next value
  /// and result.
  void loop(const Instr &in, bool operands_ok, const std::string &inner_prefix) {
    const std::string here = where_;
    if (in.regions.size() != 1) {
      error("for: expected one region");
      return;
    }
    const Region &r = in.regions[0];
    const size_t n = in.operands.size();
    if (r.params.size() != n + 1 || r.yields.size() != n || in.results.size() != n) {
      error("for: " + std::to_string(n) + " initial values, " + std::to_string(r.params.size()) +
            " region parameters, " + std::to_string(r.yields.size()) + " next values and " +
            std::to_string(in.results.size()) + " results do not match");
      return;
    }
    if (in.attrs.loop().step == 0) error("for: the step is zero");
    for (ValueId p : r.params)
      if (!define(p)) return;
    if (!(f_.type(r.params[0]) == Type{DType::I32, {}, {}}))
      error("for: the loop index is not an invariant i32 scalar");
    block(r.body, inner_prefix, r.yields);
    where_ = here;
    for (size_t k = 0; k < n; ++k) {
      const Type &carried = f_.type(r.params[k + 1]);
      const std::string what =
          "for: carried value " + std::to_string(k + 1) + " (" + type_str(carried, mesh_) + ")";
      if (operands_ok && !(f_.type(in.operands[k]) == carried))
        error(what + " starts as " + type_str(f_.type(in.operands[k]), mesh_));
      if (valid(r.yields[k]) && !(f_.type(r.yields[k]) == carried))
        error(what + " continues as " + type_str(f_.type(r.yields[k]), mesh_));
      if (valid(in.results[k]) && !(f_.type(in.results[k]) == carried))
        error(what + " ends as " + type_str(f_.type(in.results[k]), mesh_));
    }
    for (ValueId p : r.params) visible_[p] = false;
    for (ValueId res : in.results) define(res);
  }

  void returns() {
    where_ = "return";
    if (f_.returns.size() != f_.results.size())
      errors_.push_back(f_.name + ": returns " + std::to_string(f_.returns.size()) +
                        " values for " + std::to_string(f_.results.size()) + " results");
    for (size_t k = 0; k < f_.returns.size() && k < f_.results.size(); ++k) {
      ValueId v = f_.returns[k];
      if (!visible(v)) {
        errors_.push_back(f_.name + ": returned value is not defined");
        continue;
      }
      if (f_.kind == FunctionKind::Sharded && f_.type(v).shape != f_.results[k].global_shape)
        errors_.push_back(f_.name + ": result " + std::to_string(k + 1) +
                          " of a sharded function does not have its global shape");
      if (f_.kind != FunctionKind::Shmap) {
        if (options_.printable && varying_constant_[static_cast<size_t>(v)])
          errors_.push_back(f_.name + ": returns a constant typed " +
                            axis_set_str(f_.type(v).variance, mesh_) +
                            ", which the printed def would return invariant");
        continue;
      }
      const Result &r = f_.results[k];
      AxisSet want = spec_axes(r.spec);
      if (f_.type(v).variance != want)
        errors_.push_back(f_.name + ": result " + std::to_string(k + 1) + " has variance " +
                          axis_set_str(f_.type(v).variance, mesh_) + " but its out_spec needs " +
                          axis_set_str(want, mesh_));
      if (f_.type(v).shape != rt::local_shape(mesh_, r.global_shape, r.spec))
        errors_.push_back(f_.name + ": result " + std::to_string(k + 1) +
                          " local shape differs from its out_spec");
    }
  }

  const Module &m_;
  const Function &f_;
  const VerifyOptions options_;
  const rt::Mesh &mesh_;
  std::vector<bool> visible_;           // defined and in scope
  std::vector<bool> defined_;           // defined anywhere so far (a second definition is an error)
  std::vector<bool> varying_constant_;  // constants typed varying
  std::vector<std::string> errors_;
  std::string where_;  // "4" or "3.1" (instruction 1 inside the loop at 3)
  /// Reused buffers: operand types per loop depth (a deque: a deeper one
  /// added does not move the outer ones), operand variances.
  std::deque<std::vector<Type>> operand_types_;
  size_t depth_ = 0;
  std::vector<AxisSet> operand_vars_;
};

}  // namespace

std::vector<std::string> verify_function(const Module &m, const Function &f,
                                         const VerifyOptions &options) {
  return FunctionVerifier(m, f, options).run();
}

std::vector<std::string> verify_module(const Module &m, const VerifyOptions &options) {
  std::vector<std::string> all;
  for (const Function &f : m.functions) {
    auto e = verify_function(m, f, options);
    all.insert(all.end(), e.begin(), e.end());
  }
  return all;
}

}  // namespace spmd::ir
