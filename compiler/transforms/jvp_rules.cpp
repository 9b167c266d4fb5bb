// transforms/jvp_rules.cpp — the tangent rule of every op: the entry point.
// Each family's JVP rules sit beside its transpose rules in
// transforms/rules/<family>.cpp; derivative_rules() (transforms/rules/rules.h)
// finds them.
#include "transforms/jvp_rules.h"

#include <stdexcept>
#include <string>

#include "transforms/rules/rules.h"

namespace spmd {

std::optional<ir::ValueId> apply_jvp_rule(Emitter &e, const JvpRuleInput &in) {
  if (in.instr.results.empty()) return std::nullopt;  // print: nothing to differentiate
  JvpContext j(e, in);
  // Not differentiable data (bool, i32) has no tangent; a call's results are
  // its callee's business.
  if (!rt::is_float(e.type(j.r).dtype) && in.instr.op != OpCode::Call) return std::nullopt;
  const JvpRule rule = derivative_rules(in.instr.op).jvp;
  if (!rule)
    throw std::logic_error("jvp: `" + std::string(op_spelling(in.instr.op)) +
                           "` has no JVP rule (transforms/rules/)");
  return rule(j);
}

}  // namespace spmd
