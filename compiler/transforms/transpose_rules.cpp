// transforms/transpose_rules.cpp — which operands an op is linear in
// (linearity_problem) and the transpose rule of every op: the entry point.
// Each family's transpose rules sit beside its JVP rules in
// transforms/rules/<family>.cpp; derivative_rules() (transforms/rules/rules.h)
// finds them.
#include "transforms/transpose_rules.h"

#include "transforms/rules/rules.h"

namespace spmd {
namespace {

int count(const std::vector<bool> &v) {
  int n = 0;
  for (bool b : v) n += b;
  return n;
}

std::string quoted(OpCode op) { return "`" + std::string(op_display_name(op)) + "`"; }

}  // namespace

std::optional<std::string> linearity_problem(const ir::Instr &in, const std::vector<bool> &lin,
                                             const std::vector<bool> &zero) {
  // Three ops need more than ops.def's Linearity column says.
  if (in.op == OpCode::StopGradient)
    return "`stop_gradient` blocks derivatives: the function is not linear in an input that "
           "flows through it";
  if (in.op == OpCode::Cast) {  // the column's InFirst is a cast between float types
    if (rt::is_float(in.attrs.cast().dtype)) return std::nullopt;
    return "a cast to " + std::string(dtype_name(in.attrs.cast().dtype)) + " is not linear";
  }
  if (in.op == OpCode::Call || in.op == OpCode::For)
    return "internal: calls are inlined first; loops are handled by transpose.cpp";
  if (op_has_effect(in.op)) return std::nullopt;  // a print of a linear value is dropped (transpose.cpp)
  // The operands that may depend on the transposed inputs (here at least one
  // does): those the op is linear in, one of them for a product, any of them
  // (the others zero) for a sum.
  const OpLinearity linearity = op_linearity(in.op);
  bool others = false;  // an operand it is not linear in depends on the inputs
  for (size_t k = 0; k < lin.size(); ++k)
    others = others || (lin[k] && !linear_in_operand(linearity, k));
  auto linear_or_zero = [&] {
    for (size_t k = 0; k < lin.size(); ++k)
      if (linear_in_operand(linearity, k) && !lin[k] && !zero[k]) return false;
    return true;
  };
  switch (linearity) {
    case OpLinearity::NotLinear:
      break;
    case OpLinearity::PerOperand:  // (a combined collective: each component on its own)
      return std::nullopt;
    case OpLinearity::InFirst:  // (a divisor or an index must not depend on them)
      if (!others) return std::nullopt;
      if (in.op == OpCode::Div)
        return "`/` divides by a value that depends on the transposed inputs";
      return "the index of " + quoted(in.op) + " depends on the transposed inputs";
    case OpLinearity::InEach:
      if (count(lin) == 1) return std::nullopt;
      return quoted(in.op) + " multiplies two values that both depend on the transposed inputs";
    case OpLinearity::InAll:
      if (linear_or_zero()) return std::nullopt;
      return quoted(in.op) +
             " combines a value that depends on the transposed inputs with one that does not: "
             "the function is affine, not linear";
    case OpLinearity::InBranches:
      if (others) return "the condition of `where` depends on the transposed inputs";
      if (linear_or_zero()) return std::nullopt;
      return "`where` selects between a value that depends on the transposed inputs and one "
             "that does not: the function is not linear";
    case OpLinearity::InArrayAndUpdate:
      if (others) return "the index of " + quoted(in.op) + " depends on the transposed inputs";
      if (linear_or_zero()) return std::nullopt;
      return quoted(in.op) + " mixes values that do and do not depend on the inputs";
  }
  return quoted(in.op) + " is not linear, but its operand depends on the inputs being transposed";
}

std::vector<std::pair<size_t, ir::ValueId>> apply_transpose_rule(Emitter &e,
                                                                 const TransposeRuleInput &in) {
  const TransposeRule rule = derivative_rules(in.instr.op).transpose;
  // The ops linear in no operand (ops.def's Linearity column), and stop_gradient.
  if (!rule)
    throw std::logic_error("transpose rule for a non-linear op `" +
                           std::string(op_spelling(in.instr.op)) + "`");
  TransposeContext tr(e, in);
  rule(tr);
  return std::move(tr.out);
}

}  // namespace spmd
