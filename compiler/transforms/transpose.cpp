// transforms/transpose.cpp — see transpose.h. Rules are in transpose_rules.cpp.
#include "transforms/transpose.h"

#include "ir/value_map.h"
#include "transforms/transpose_rules.h"

namespace spmd {
namespace {

constexpr ir::ValueId kNoSeed = -2;  // seed with the constant 1 (grad)

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string cotangent_name(const std::string &name) {
  if (name.empty()) return "";
  std::string base = name;
  if (ends_with(base, "_dot")) base.resize(base.size() - 4);
  if (ends_with(base, "_bar")) return base.substr(0, base.size() - 4);
  return base + "_bar";
}

ir::Function transpose_function(const ir::Module &module, const ir::Function &f,
                                const TransposeSpec &spec) {
  // 1. Linearity.
  std::vector<bool> linear(f.values.size(), false);
  std::vector<bool> zero_const(f.values.size(), false);
  for (size_t k = 0; k < f.params.size(); ++k) linear[f.params[k].value] = spec.linear_params[k];
  for (const ir::Instr &in : f.body) {
    if ((in.op == OpCode::Constant || in.op == OpCode::Full) && in.attrs.value == 0.0)
      zero_const[in.results[0]] = true;
    std::vector<bool> lin_ops;
    bool any = false;
    for (ir::ValueId o : in.operands) {
      lin_ops.push_back(linear[o]);
      any |= linear[o];
    }
    if (!any) continue;
    std::vector<bool> zeros;
    for (ir::ValueId o : in.operands) zeros.push_back(zero_const[o]);
    if (auto problem = linearity_problem(in, lin_ops, zeros))
      throw TransformError("not-linear", in.span, *problem);
    for (ir::ValueId r : in.results) linear[r] = true;
  }

  ir::Function out;
  out.name = spec.name;
  out.kind = f.kind;
  out.mesh = f.mesh;
  out.auto_pbroadcast = false;
  out.span = f.span;
  out.return_span = f.return_span;
  ir::ValueMap<ir::ValueId> map;  // constant values of f -> out
  map.reserve(f.values.size());
  for (size_t k = 0; k < f.params.size(); ++k) {
    if (spec.linear_params[k]) continue;
    ir::Param p = f.params[k];
    const ir::Value &v = f.values[p.value];
    p.value = out.add_value(v.type, v.name, v.span);
    map[f.params[k].value] = p.value;
    out.params.push_back(p);
  }
  Emitter e(module, out);
  // Cotangent seeds.
  ir::ValueMap<ir::ValueId> ct;
  ct.reserve(f.values.size());
  auto accumulate = [&](ir::ValueId v, ir::ValueId c) {
    if (ir::ValueId *sum = ct.find(v)) {
      *sum = e.add(*sum, c);
      e.set_name(*sum, cotangent_name(f.values[v].name));
    } else {
      ct[v] = c;
    }
  };
  std::vector<std::pair<size_t, ir::ValueId>> seeds;
  for (size_t k = 0; k < f.results.size(); ++k) {
    if (!spec.ct_results[k]) continue;
    ir::ValueId r = f.returns[k];
    const Type &t = f.type(r);
    std::string name = !f.results[k].name.empty() ? f.results[k].name : f.values[r].name;
    if (name.empty()) name = ir::result_name(f, k);
    ir::ValueId seed;
    if (!spec.seed_ones.empty() && spec.seed_ones[k]) {
      seed = kNoSeed;
    } else {
      ir::Param p;
      p.global_shape = f.results[k].global_shape;
      p.spec = f.results[k].spec;
      p.span = f.results[k].span;
      p.value = out.add_value(t, cotangent_name(name), f.results[k].span);
      out.params.push_back(p);
      seed = p.value;
    }
    seeds.emplace_back(k, seed);
  }
  // 2. Forward: the constant instructions.
  for (const ir::Instr &in : f.body) {
    if (!in.results.empty() && linear[in.results[0]]) continue;
    ir::Instr copy = in;
    for (auto &o : copy.operands) o = map.at(o);
    copy.results.clear();
    for (ir::ValueId r : in.results) {
      const ir::Value &v = f.values[r];
      ir::ValueId nr = out.add_value(v.type, v.name, v.span);
      map[r] = nr;
      copy.results.push_back(nr);
    }
    out.body.push_back(std::move(copy));
  }
  for (auto [k, seed] : seeds) {
    ir::ValueId r = f.returns[k];
    if (!linear[r]) continue;  // a constant output: its cotangent goes nowhere
    if (seed == kNoSeed) seed = e.full(f.type(r), 1.0);
    accumulate(r, seed);
  }
  // 3. Backward over the linear instructions.
  for (size_t i = f.body.size(); i-- > 0;) {
    const ir::Instr &in = f.body[i];
    if (in.results.empty() || !linear[in.results[0]]) continue;
    const ir::ValueId *result_ct = ct.find(in.results[0]);
    if (!result_ct) continue;                          // zero cotangent
    std::vector<std::optional<ir::ValueId>> operands;  // constant operands, mapped
    std::vector<bool> lin_ops;
    for (ir::ValueId o : in.operands) {
      lin_ops.push_back(linear[o] && !zero_const[o]);
      operands.push_back(linear[o] ? std::nullopt : std::optional(map.at(o)));
    }
    std::vector<Type> operand_types;
    for (ir::ValueId o : in.operands) operand_types.push_back(f.type(o));
    TransposeRuleInput rule{in, operands, operand_types, lin_ops, *result_ct};
    const auto fresh = static_cast<ir::ValueId>(out.values.size());
    for (auto [k, c] : apply_transpose_rule(e, rule)) {
      if (c >= fresh) e.set_name(c, cotangent_name(f.values[in.operands[k]].name));
      accumulate(in.operands[k], c);
    }
  }
  // 4. Results.
  out.results.clear();
  for (size_t k = 0; k < f.results.size(); ++k) {
    if (spec.keep_results.empty() || !spec.keep_results[k]) continue;
    ir::ValueId r = f.returns[k];
    if (linear[r])
      throw TransformError("not-linear", f.return_span,
                           "result " + std::to_string(k + 1) +
                               " depends on the differentiated inputs and cannot be kept as is");
    out.returns.push_back(map.at(r));
    out.results.push_back(f.results[k]);
  }
  for (size_t k = 0; k < f.params.size(); ++k) {
    if (!spec.linear_params[k]) continue;
    ir::ValueId pv = f.params[k].value;
    const ir::ValueId *found = ct.find(pv);
    ir::ValueId c = found ? *found : e.zeros(f.type(pv));
    out.returns.push_back(c);
    ir::Result r;
    r.name = cotangent_name(f.values[pv].name);
    r.global_shape = f.params[k].global_shape;
    r.spec = f.params[k].spec;
    r.span = f.params[k].span;
    out.results.push_back(r);
  }
  return out;
}

}  // namespace spmd
