// transforms/jvp_rules.h — the JVP rule of every op (internal to jvp.cpp).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "transforms/emitter.h"

namespace spmd {

struct JvpRuleInput {
  const ir::Instr &instr;  // the primal instruction, already in the output function
  /// Tangent of each operand; nullopt = zero (the operand does not depend on the inputs).
  std::span<const std::optional<ir::ValueId>> tangents;
};

/// Emits the tangent of instr's (single) result; nullopt when it is zero or
/// the result is not differentiable data (bool, i32). Throws TransformError for
/// ops that cannot be differentiated.
std::optional<ir::ValueId> apply_jvp_rule(Emitter &e, const JvpRuleInput &in);

}  // namespace spmd
