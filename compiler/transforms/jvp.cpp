// transforms/jvp.cpp — see jvp.h. The per-op rules are in jvp_rules.cpp.
#include "transforms/jvp.h"

#include "ir/value_map.h"
#include "transforms/jvp_rules.h"

namespace spmd {

std::string tangent_name(const std::string &name) { return name.empty() ? "" : name + "_dot"; }

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
  ir::ValueMap<ir::ValueId> primal;   // f value -> out value
  ir::ValueMap<ir::ValueId> tangent;  // f value -> its tangent in out
  primal.reserve(f.values.size());
  tangent.reserve(f.values.size());
  for (const ir::Param &p : f.params) {
    ir::Param np = p;
    const ir::Value &v = f.values[p.value];
    np.value = out.add_value(v.type, v.name, v.span);
    primal[p.value] = np.value;
    out.params.push_back(np);
  }
  result.num_primal_params = out.params.size();
  for (size_t k = 0; k < f.params.size(); ++k) {
    if (!wrt[k]) continue;
    ir::Param tp = f.params[k];
    const ir::Value &v = f.values[tp.value];
    tp.value = out.add_value(v.type, tangent_name(v.name), v.span);
    tangent[f.params[k].value] = tp.value;
    out.params.push_back(tp);
  }
  Emitter e(module, out);
  out.body.reserve(f.body.size() * 2);
  for (const ir::Instr &in : f.body) {
    ir::Instr copy = in;
    for (auto &o : copy.operands) o = primal.at(o);
    copy.results.clear();
    for (ir::ValueId r : in.results) {
      const ir::Value &v = f.values[r];
      ir::ValueId nr = out.add_value(v.type, v.name, v.span);
      primal[r] = nr;
      copy.results.push_back(nr);
    }
    out.body.push_back(copy);
    std::vector<std::optional<ir::ValueId>> tangents;
    bool any = false;
    for (ir::ValueId o : in.operands) {
      const ir::ValueId *t = tangent.find(o);
      tangents.push_back(t ? std::optional(*t) : std::nullopt);
      any |= t != nullptr;
    }
    if (!any) continue;
    const auto fresh = static_cast<ir::ValueId>(out.values.size());
    std::optional<ir::ValueId> t = apply_jvp_rule(e, JvpRuleInput{copy, tangents});
    if (t) {
      tangent[in.results[0]] = *t;
      if (*t >= fresh) e.set_name(*t, tangent_name(f.values[in.results[0]].name));
    }
  }
  for (ir::ValueId r : f.returns) out.returns.push_back(primal.at(r));
  out.results = f.results;
  for (size_t k = 0; k < f.results.size(); ++k) out.results[k].name = ir::result_name(f, k);
  result.num_primal_results = out.results.size();
  for (size_t k = 0; k < f.returns.size(); ++k) {
    const ir::ValueId *found = tangent.find(f.returns[k]);
    ir::ValueId t;
    if (found) {
      t = *found;
    } else {
      t = e.zeros(f.type(f.returns[k]));  // the output does not depend on the inputs
    }
    out.returns.push_back(t);
    ir::Result r = f.results[k];
    r.name = tangent_name(ir::result_name(f, k));
    out.results.push_back(r);
  }
  return result;
}

}  // namespace spmd
