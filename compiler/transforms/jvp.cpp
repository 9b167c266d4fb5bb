// transforms/jvp.cpp — see jvp.h. The per-op rules are in transforms/rules/
// (apply_jvp_rule, jvp_rules.h).
//
// A loop's JVP is a loop: it carries the primal values and, next to them,
// the tangents of the carried values that have one. Which carried values
// have a tangent is a fixpoint (a carry whose initial value has none gets one
// when an iteration gives its next value one); such a carry starts from zeros.
#include "transforms/jvp.h"

#include <unordered_set>

#include "ir/loops.h"
#include "ir/value_map.h"
#include "transforms/jvp_rules.h"

namespace spmd {

std::string tangent_name(const std::string &name) { return name.empty() ? "" : name + "_dot"; }

namespace {

using ValueSet = std::unordered_set<ir::ValueId>;

class Linearizer {
 public:
  Linearizer(const ir::Module &module, const ir::Function &f, ir::Function &out)
      : f_(f), out_(out), e_(module, out) {
    primal_.reserve(f.values.size());
    tangent_.reserve(f.values.size());
  }

  /// Maps parameter `v` of f to `primal` (and its tangent, if any).
  void param(ir::ValueId v, ir::ValueId primal) { primal_[v] = primal; }
  void param_tangent(ir::ValueId v, ir::ValueId tangent) { set_tangent(v, tangent); }

  void block(const std::vector<ir::Instr> &body) {
    for (const ir::Instr &in : body) {
      if (in.op == OpCode::For)
        loop(in);
      else
        instr(in);
    }
  }

  ir::ValueId primal(ir::ValueId v) const { return primal_.at(v); }
  /// The tangent of `v`, or null when it is zero.
  std::optional<ir::ValueId> tangent(ir::ValueId v) const {
    const ir::ValueId *t = tangent_.find(v);
    return t ? std::optional(*t) : std::nullopt;
  }
  Emitter &emitter() { return e_; }

 private:
  /// Gives `v` (a value of f) its tangent `t` (a value of out).
  ir::ValueId set_tangent(ir::ValueId v, ir::ValueId t) {
    if (!tangent_.contains(v)) has_tangent_.push_back(v);
    return tangent_[v] = t;
  }

  ir::ValueId fresh(ir::ValueId v, const std::string &name) {
    const ir::Value &old = f_.values[v];
    return out_.add_value(old.type, name, old.span);
  }
  ir::ValueId tangent_or_zeros(ir::ValueId v) {
    auto t = tangent(v);
    return t ? *t : e_.zeros(f_.type(v));
  }

  /// Copies `in` and emits the tangent of its result.
  void instr(const ir::Instr &in) {
    ir::Instr copy = in;
    for (auto &o : copy.operands) o = primal_.at(o);
    copy.results.clear();
    for (ir::ValueId r : in.results) {
      ir::ValueId nr = fresh(r, f_.values[r].name);
      primal_[r] = nr;
      copy.results.push_back(nr);
    }
    e_.append(copy);
    SmallVector<std::optional<ir::ValueId>, 4> tangents;
    bool any = false;
    for (ir::ValueId o : in.operands) {
      tangents.push_back(tangent(o));
      any = any || tangents.back().has_value();
    }
    if (!any) return;
    const auto first_new = static_cast<ir::ValueId>(out_.values.size());
    std::optional<ir::ValueId> t = apply_jvp_rule(e_, JvpRuleInput{copy, tangents});
    if (t) {
      set_tangent(in.results[0], *t);
      if (*t >= first_new) e_.set_name(*t, tangent_name(f_.values[in.results[0]].name));
    }
  }

  /// Which values of `body` have a tangent, given those in `t` (an
  /// over-approximation: a float result of an op with a tangent operand).
  void flow(const std::vector<ir::Instr> &body, ValueSet &t) const {
    for (const ir::Instr &in : body) {
      if (in.op == OpCode::For) {
        const std::vector<bool> has = carried_tangents(in, t);
        for (size_t k = 0; k < has.size(); ++k)
          if (has[k]) t.insert(in.results[k]);
        continue;
      }
      bool any = false;
      for (ir::ValueId o : in.operands) any = any || t.count(o);
      if (!any) continue;
      for (ir::ValueId r : in.results)
        if (rt::is_float(f_.type(r).dtype)) t.insert(r);
    }
  }

  /// Which carried values of `loop` have a tangent: those whose initial
  /// value has one, and (a fixpoint) those whose next value gets one.
  std::vector<bool> carried_tangents(const ir::Instr &loop, const ValueSet &outside) const {
    const ir::Region &r = loop.regions.at(0);
    std::vector<bool> has(loop.operands.size());
    for (size_t k = 0; k < has.size(); ++k) has[k] = outside.count(loop.operands[k]) > 0;
    for (;;) {
      ValueSet t = outside;
      for (size_t k = 0; k < has.size(); ++k)
        if (has[k]) t.insert(r.params[k + 1]);
      flow(r.body, t);
      bool changed = false;
      for (size_t k = 0; k < has.size(); ++k)
        if (!has[k] && t.count(r.yields[k]) && rt::is_float(f_.type(r.yields[k]).dtype))
          has[k] = changed = true;
      if (!changed) return has;
    }
  }

  /// for k in range(...) carrying (x...) -> the same loop carrying (x..., dx...).
  void loop(const ir::Instr &in) {
    const ir::Region &r = in.regions.at(0);
    const ValueSet outside(has_tangent_.begin(), has_tangent_.end());
    const std::vector<bool> has = carried_tangents(in, outside);
    ir::Instr copy;
    copy.op = OpCode::For;
    copy.attrs = in.attrs;
    copy.span = in.span;
    copy.origin = in.origin;
    for (ir::ValueId o : in.operands) copy.operands.push_back(primal_.at(o));
    for (size_t k = 0; k < has.size(); ++k)
      if (has[k]) copy.operands.push_back(tangent_or_zeros(in.operands[k]));
    ir::Region nr;
    for (ir::ValueId p : r.params) nr.params.push_back(primal_[p] = fresh(p, f_.values[p].name));
    for (size_t k = 0; k < has.size(); ++k) {
      if (!has[k]) continue;
      const ir::ValueId p = r.params[k + 1];
      nr.params.push_back(set_tangent(p, fresh(p, tangent_name(f_.values[p].name))));
    }
    std::vector<ir::Instr> *outer = e_.set_body(&nr.body);
    block(r.body);
    for (ir::ValueId y : r.yields) nr.yields.push_back(primal_.at(y));
    for (size_t k = 0; k < has.size(); ++k)
      if (has[k]) nr.yields.push_back(tangent_or_zeros(r.yields[k]));
    e_.set_body(outer);
    copy.regions.push_back(std::move(nr));
    for (ir::ValueId res : in.results)
      copy.results.push_back(primal_[res] = fresh(res, f_.values[res].name));
    for (size_t k = 0; k < has.size(); ++k) {
      if (!has[k]) continue;
      const ir::ValueId res = in.results[k];
      copy.results.push_back(set_tangent(res, fresh(res, tangent_name(f_.values[res].name))));
    }
    e_.append(std::move(copy));
  }

  const ir::Function &f_;
  ir::Function &out_;
  Emitter e_;
  ir::ValueMap<ir::ValueId> primal_;      // f value -> out value
  ir::ValueMap<ir::ValueId> tangent_;     // f value -> its tangent in out
  std::vector<ir::ValueId> has_tangent_;  // the values tangent_ maps
};

}  // namespace

JvpResult jvp_function(const ir::Module &module, const ir::Function &f,
                       const std::vector<bool> &wrt) {
  JvpResult result;
  ir::Function &out = result.function;
  out.name = f.name + "_jvp";
  out.kind = f.kind;
  out.mesh = f.mesh;
  out.auto_pbroadcast = false;  // the transform inserts every pbroadcast itself
  out.span = f.span;
  out.return_span = f.return_span;
  // Room for a primal copy and a few tangent ops per instruction up front
  // (a chain needs 2.7x): growing a body of 500k instructions by doubling
  // copies it and leaves the old block free but too small for what follows,
  // so the heap grows and every page of it faults in (vjp of 200k ops: 10%
  // of its time). Capacity never written costs no memory.
  out.body.reserve(3 * f.body.size());
  out.values.reserve(3 * f.values.size());
  Linearizer lin(module, f, out);
  for (const ir::Param &p : f.params) {
    ir::Param np = p;
    const ir::Value &v = f.values[p.value];
    np.value = out.add_value(v.type, v.name, v.span);
    lin.param(p.value, np.value);
    out.params.push_back(np);
  }
  result.num_primal_params = out.params.size();
  for (size_t k = 0; k < f.params.size(); ++k) {
    if (!wrt[k]) continue;
    ir::Param tp = f.params[k];
    const ir::Value &v = f.values[tp.value];
    tp.value = out.add_value(v.type, tangent_name(v.name), v.span);
    lin.param_tangent(f.params[k].value, tp.value);
    out.params.push_back(tp);
  }
  lin.block(f.body);
  for (ir::ValueId r : f.returns) out.returns.push_back(lin.primal(r));
  out.results = f.results;
  for (size_t k = 0; k < f.results.size(); ++k) out.results[k].name = ir::result_name(f, k);
  result.num_primal_results = out.results.size();
  for (size_t k = 0; k < f.returns.size(); ++k) {
    auto t = lin.tangent(f.returns[k]);
    // An output that does not depend on the inputs has a zero tangent.
    out.returns.push_back(t ? *t : lin.emitter().zeros(f.type(f.returns[k])));
    ir::Result r = f.results[k];
    r.name = tangent_name(ir::result_name(f, k));
    out.results.push_back(r);
  }
  return result;
}

}  // namespace spmd
