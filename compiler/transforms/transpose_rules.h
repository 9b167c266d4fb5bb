// transforms/transpose_rules.h — linearity and transpose rule of every op
// (internal to transpose.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "transforms/emitter.h"

namespace spmd {

/// Why `instr` is not linear in the operands marked in `linear` (operands in
/// `zero` are constant zeros, which count as linear); nullopt when it is.
std::optional<std::string> linearity_problem(const ir::Instr &instr,
                                             const std::vector<bool> &linear,
                                             const std::vector<bool> &zero);

struct TransposeRuleInput {
  const ir::Instr &instr;  // in the original function
  /// Constant operands mapped into the output function; nullopt for linear ones.
  const std::vector<std::optional<ir::ValueId>> &constants;
  const std::vector<Type> &operand_types;
  const std::vector<bool> &linear;  // operands that need a cotangent
  ir::ValueId ct;                   // cotangent of the result, in the output function
};

/// Emits the cotangents of the linear operands: (operand index, value) pairs.
std::vector<std::pair<size_t, ir::ValueId>> apply_transpose_rule(Emitter &e,
                                                                 const TransposeRuleInput &in);

}  // namespace spmd
