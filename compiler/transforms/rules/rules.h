// transforms/rules/rules.h — the one table of the transforms layer: every op's
// JVP and transpose rules, registered side by side (internal to jvp_rules.cpp
// and transpose_rules.cpp).
//
// Each op family has one file under transforms/rules/ (creation, elementwise,
// reductions, contractions, layout, gather, collectives, random, control,
// print: the families of ops/families/) holding, per op, a DerivativeRules
// value with its JVP rule and its transpose rule next to each other, the rule
// as a comment. derivative_rules() maps every op to its value with an
// exhaustive switch over OpCode (table.cpp), so an op added to ops.def does not
// compile until it is registered; the math rows of spmdrt/unary_math.def and
// binary_math.def are registered by name (kExp for Exp), so a row without its
// value in elementwise.cpp does not link.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "transforms/emitter.h"
#include "transforms/jvp_rules.h"
#include "transforms/transpose_rules.h"

namespace spmd {

/// What a JVP rule sees: the primal instruction (already in the output
/// function), its operands x, result r and attributes a, and the tangents of
/// the operands. Notation in the rules' comments: x, y operands, r the primal
/// result, dx, dy tangents. A tangent has its primal's type, so every rule is
/// typed like the primal op.
class JvpContext {
 public:
  JvpContext(Emitter &e, const JvpRuleInput &in)
      : e(e),
        instr(in.instr),
        a(in.instr.attrs),
        x(in.instr.operands),
        r(in.instr.results[0]),
        in_(in) {}

  Emitter &e;
  const ir::Instr &instr;
  const Attrs &a;
  const ir::ValueList &x;
  ir::ValueId r;

  /// Whether operand k has a tangent (nullopt = zero: it does not depend on the inputs).
  bool has(size_t k) const { return in_.tangents[k].has_value(); }
  ir::ValueId t(size_t k) const { return *in_.tangents[k]; }
  /// Tangent of operand k, or zeros of its type.
  ir::ValueId t_or_zero(size_t k) { return has(k) ? t(k) : e.zeros(e.type(x[k])); }
  /// Broadcasts a tangent term up to the result's shape.
  ir::ValueId to_result_shape(ir::ValueId v) { return e.broadcast_to(v, e.type(r).shape); }
  /// The op itself applied to the tangents (a linear op).
  ir::ValueId same_op_on_tangents() {
    ir::ValueList ops;
    for (size_t k = 0; k < x.size(); ++k) ops.push_back(t_or_zero(k));
    return e.op(instr.op, ops, instr.attrs, span());
  }
  SourceSpan span() const { return instr.span; }
  /// A scalar constant like the result.
  ir::ValueId c(double v) { return e.scalar_like(r, v, span()); }

 private:
  const JvpRuleInput &in_;
};

/// The tangent of the instruction's (single) result; nullopt when it is zero.
using Tangent = std::optional<ir::ValueId>;
using JvpRule = Tangent (*)(JvpContext &j);

/// What a transpose rule sees: r = op(x, ...) is linear in the operands marked
/// linear; ct is the cotangent of r; the rule gives (give) the cotangent of
/// each linear operand, with exactly that operand's type (dtype, shape,
/// variance). `<ct, f(x)> = <f^T(ct), x>` is what the tests check.
class TransposeContext {
 public:
  TransposeContext(Emitter &e, const TransposeRuleInput &in)
      : e(e), in(in), instr(in.instr), a(in.instr.attrs), s(in.instr.span), ct(in.ct) {}

  Emitter &e;
  const TransposeRuleInput &in;
  const ir::Instr &instr;  // in the original function
  const Attrs &a;
  const SourceSpan s;
  const ir::ValueId ct;
  std::vector<std::pair<size_t, ir::ValueId>> out;

  const Shape &shape(size_t k) const { return in.operand_types[k].shape; }
  /// Constant operand k, mapped into the output function.
  ir::ValueId c(size_t k) const { return *in.constants[k]; }
  /// The cotangent of operand k, when it is linear.
  void give(size_t k, ir::ValueId v) {
    if (in.linear[k]) out.emplace_back(k, v);
  }
  /// A collective of the cotangent.
  ir::ValueId collective(OpCode op, Attrs attrs) { return e.op(op, {ct}, std::move(attrs), s); }
  /// The attrs naming only this collective's axes.
  Attrs axes_only() const {
    Attrs ta;
    ta.collective().axes = a.collective().axes;
    return ta;
  }
};

/// Emits the cotangents of the linear operands into ctx.out.
using TransposeRule = void (*)(TransposeContext &tr);

/// The transforms layer's rules of one op.
struct DerivativeRules {
  /// The family, named as its file under transforms/rules/ (and ops/families/).
  std::string_view family;
  JvpRule jvp;
  /// nullptr for the ops linear in no operand (ops.def's Linearity column)
  /// and stop_gradient, which blocks derivatives.
  TransposeRule transpose;
};

/// The rules of `op` (the one table: transforms/rules/table.cpp).
const DerivativeRules &derivative_rules(OpCode op);

/// The rule values, by family file (each registered for its op in table.cpp).
namespace derivatives {
// creation.cpp
extern const DerivativeRules kCreation;
// elementwise.cpp: one per row of spmdrt/unary_math.def and binary_math.def,
// then cast, stop_gradient, where.
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  extern const DerivativeRules k##Name;
#include "spmdrt/unary_math.def"
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  extern const DerivativeRules k##Name;
#include "spmdrt/binary_math.def"
extern const DerivativeRules kCast, kStopGradient, kSelect;
// reductions.cpp
extern const DerivativeRules kReduceSum, kReduceExtreme, kArgExtreme;
// contractions.cpp
extern const DerivativeRules kEinsum;
// layout.cpp
extern const DerivativeRules kReshape, kTranspose, kReverse, kBroadcastTo, kSlice, kPad, kConcat,
    kDynamicSlice, kDynamicUpdateSlice, kConstrain;
// gather.cpp
extern const DerivativeRules kTake, kScatterAdd;
// collectives.cpp
extern const DerivativeRules kPsum, kPextreme, kPbroadcast, kAllGather, kAllGatherInvariant,
    kPsumScatter, kPscatter, kAllToAll, kPpermute, kAxisIndex;
// random.cpp
extern const DerivativeRules kRandom;
// control.cpp
extern const DerivativeRules kCallOrLoop;
// print.cpp
extern const DerivativeRules kPrint;
}  // namespace derivatives

}  // namespace spmd
