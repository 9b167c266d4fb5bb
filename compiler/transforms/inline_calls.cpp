// transforms/inline_calls.cpp — see inline_calls.h.
#include "transforms/inline_calls.h"

#include "ir/value_map.h"

namespace spmd {
namespace {

/// Appends the body of `callee` to `out`, reading `args` for its parameters;
/// returns the values it returns.
std::vector<ir::ValueId> inline_body(const ir::Module &m, const ir::Function &callee,
                                     const std::vector<ir::ValueId> &args, ir::Function &out,
                                     int depth) {
  if (depth > 1000) throw std::logic_error("inline_calls: call depth over 1000");
  ir::ValueMap<ir::ValueId> map;
  map.reserve(callee.values.size());
  for (size_t i = 0; i < callee.params.size(); ++i) map[callee.params[i].value] = args[i];
  for (const ir::Instr &in : callee.body) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : in.operands) operands.push_back(map.at(o));
    if (in.op == OpCode::Call) {
      const ir::Function &c = m.functions.at(static_cast<size_t>(in.attrs.callee));
      auto results = inline_body(m, c, operands, out, depth + 1);
      for (size_t k = 0; k < in.results.size(); ++k) {
        map[in.results[k]] = results[k];
        // The caller's name for a result is the more meaningful one.
        if (!callee.values[in.results[k]].name.empty())
          out.values[results[k]].name = callee.values[in.results[k]].name;
      }
      continue;
    }
    ir::Instr copy = in;
    copy.operands = std::move(operands);
    copy.results.clear();
    for (ir::ValueId r : in.results) {
      const ir::Value &v = callee.values[r];
      ir::ValueId nr = out.add_value(v.type, v.name, v.span);
      map[r] = nr;
      copy.results.push_back(nr);
    }
    out.body.push_back(std::move(copy));
  }
  std::vector<ir::ValueId> results;
  for (ir::ValueId r : callee.returns) results.push_back(map.at(r));
  return results;
}

}  // namespace

ir::Function inline_calls(const ir::Module &module, const ir::Function &function) {
  ir::Function out = function.without_body();
  out.values.reserve(function.values.size());
  out.body.reserve(function.body.size());
  std::vector<ir::ValueId> args;
  for (auto &p : out.params) {
    const ir::Value &v = function.values[p.value];
    p.value = out.add_value(v.type, v.name, v.span);
    args.push_back(p.value);
  }
  out.returns = inline_body(module, function, args, out, 0);
  return out;
}

}  // namespace spmd
