// transforms/inline_calls.cpp — see inline_calls.h.
#include "transforms/inline_calls.h"

#include "ir/value_map.h"

namespace spmd {
namespace {

using ValueMap = ir::ValueMap<ir::ValueId>;

class Inliner {
 public:
  Inliner(const ir::Module &m, ir::Function &out) : m_(m), out_(out) {}

  /// Appends the body of `callee` to `body`, reading `args` for its
  /// parameters; returns the values it returns.
  std::vector<ir::ValueId> inline_function(const ir::Function &callee,
                                           std::span<const ir::ValueId> args,
                                           std::vector<ir::Instr> &body, int depth) {
    if (depth > 1000) throw std::logic_error("inline_calls: call depth over 1000");
    ValueMap map;
    map.reserve(callee.values.size());
    for (size_t i = 0; i < callee.params.size(); ++i) map[callee.params[i].value] = args[i];
    inline_block(callee, callee.body, map, body, depth);
    std::vector<ir::ValueId> results;
    for (ir::ValueId r : callee.returns) results.push_back(map.at(r));
    return results;
  }

 private:
  ir::ValueId fresh(const ir::Function &from, ir::ValueId v, ValueMap &map) {
    const ir::Value &old = from.values[v];
    ir::ValueId nv = out_.add_value(old.type, old.name, old.span);
    map[v] = nv;
    return nv;
  }

  void inline_block(const ir::Function &callee, const std::vector<ir::Instr> &block, ValueMap &map,
                    std::vector<ir::Instr> &body, int depth) {
    for (const ir::Instr &in : block) {
      ir::ValueList operands;
      operands.reserve(in.operands.size());
      for (ir::ValueId o : in.operands) operands.push_back(map.at(o));
      if (in.op == OpCode::Call) {
        const ir::Function &c = m_.functions.at(static_cast<size_t>(in.attrs.call().callee));
        auto results = inline_function(c, operands, body, depth + 1);
        for (size_t k = 0; k < in.results.size(); ++k) {
          map[in.results[k]] = results[k];
          // The caller's name for a result is the more meaningful one.
          if (!callee.values[in.results[k]].name.empty())
            out_.values[results[k]].name = callee.values[in.results[k]].name;
        }
        continue;
      }
      ir::Instr copy = in;
      copy.operands = std::move(operands);
      copy.regions.clear();
      for (const ir::Region &r : in.regions) {  // a loop body, calls inlined into it
        ir::Region nr;
        for (ir::ValueId p : r.params) nr.params.push_back(fresh(callee, p, map));
        inline_block(callee, r.body, map, nr.body, depth);
        for (ir::ValueId y : r.yields) nr.yields.push_back(map.at(y));
        copy.regions.push_back(std::move(nr));
      }
      for (ir::ValueId &r : copy.results) r = fresh(callee, r, map);
      body.push_back(std::move(copy));
    }
  }

  const ir::Module &m_;
  ir::Function &out_;
};

}  // namespace

ir::Function inline_calls(const ir::Module &module, const ir::Function &function) {
  ir::Function out = function.without_body();  // (not a copy of the body only to clear it)
  out.values.reserve(function.values.size());
  std::vector<ir::ValueId> args;
  for (auto &p : out.params) {
    const ir::Value &v = function.values[p.value];
    p.value = out.add_value(v.type, v.name, v.span);
    args.push_back(p.value);
  }
  std::vector<ir::Instr> body;
  body.reserve(function.body.size());
  out.returns = Inliner(module, out).inline_function(function, args, body, 0);
  out.body = std::move(body);
  return out;
}

}  // namespace spmd
