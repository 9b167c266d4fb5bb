// ops/op_rules.h — the one table of the ops layer's rules: every op's shape,
// variance and sharding rules, registered side by side.
//
// Each op family has one file under ops/families/ (creation, elementwise,
// reductions, contractions, layout, gather, collectives, random, control,
// print) holding that family's shape, variance and sharding rules next to each
// other, as OpRules values; op_rules() maps every op to its rules with an
// exhaustive switch over OpCode (ops/families/table.cpp), so an op added to
// ops.def does not compile until it is registered. The entry points of
// shape_rules.h, variance_rules.h and sharding_rules.h dispatch through it;
// callers use those, not this table. The transforms layer has the same
// arrangement for JVP and transpose (transforms/rules/).
#pragma once

#include <span>
#include <string_view>

#include "ops/op_info.h"
#include "ops/shape_rules.h"
#include "ops/sharding_rules.h"
#include "ops/types.h"
#include "ops/variance_rules.h"

namespace spmd {

/// The ops layer's rules of one op (or of ops that share every rule).
struct OpRules {
  /// The family, named as its file under ops/families/ ("elementwise", ...).
  std::string_view family;

  // Shape (infer_shapes): the result dtypes and local shapes, before
  // infer_shapes' size check; an error is a complete sentence.
  ShapeRuleResult (*shape)(OpCode op, std::span<const Type> operands, const Attrs &attrs,
                           const rt::Mesh &mesh);
  /// True when the op computes with its operands' values, so that a random
  /// key cannot be one (checked before `shape`: code `key-as-number`).
  bool computes_with_values;

  // Variance (variance_rules.h).
  /// What the op needs of its (first) operand along its collective axes.
  AxisRequirement requirement;
  /// The result variance from the operands' (reconciled) variance and the
  /// op's collective axes (empty for every op but the collectives).
  AxisSet (*variance)(AxisSet operands, AxisSet axes);
  /// Whether a constant operand takes the variance of the other operands
  /// (constant_operand_adapts).
  bool constant_operand_adapts;

  // Sharding (sharding_rule): the op's factors with these global types;
  // sharding_rule adds which operands may carry a partial sum (ops.def's
  // Linearity column).
  ShardingRule (*sharding)(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                           const Attrs &attrs);
};

/// The rules of `op` (the one table: ops/families/table.cpp).
const OpRules &op_rules(OpCode op);

}  // namespace spmd
