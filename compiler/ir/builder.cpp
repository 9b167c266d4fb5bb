// ir/builder.cpp — typed instruction construction.
#include "ir/builder.h"

#include <stdexcept>

#include "ops/shape_rules.h"
#include "ops/variance_rules.h"

namespace spmd::ir {

std::vector<ValueId> Builder::add(OpCode op, std::vector<ValueId> operands, Attrs attrs,
                                  SourceSpan span, std::string &error, Origin origin) {
  std::vector<Type> operand_types;
  std::vector<AxisSet> variances;
  for (ValueId v : operands) {
    operand_types.push_back(function_.type(v));
    variances.push_back(function_.type(v).variance);
  }
  ShapeRuleResult shapes = infer_shapes(op, operand_types, attrs, mesh());
  if (!shapes.ok()) {
    error = shapes.error;
    return {};
  }
  const std::vector<AxisSet> result_vars =
      result_variances(op, variances, shapes.results.size(), attrs);
  Instr instr;
  instr.op = op;
  instr.operands = std::move(operands);
  instr.attrs = std::move(attrs);
  instr.span = span;
  instr.origin = origin;
  for (size_t k = 0; k < shapes.results.size(); ++k) {
    shapes.results[k].variance = result_vars[k];
    instr.results.push_back(function_.add_value(shapes.results[k], "", span));
  }
  body_->push_back(std::move(instr));
  return body_->back().results;
}

ValueId Builder::add1(OpCode op, std::vector<ValueId> operands, Attrs attrs, SourceSpan span,
                      Origin origin) {
  std::string error;
  auto results = add(op, std::move(operands), std::move(attrs), span, error, origin);
  if (results.size() != 1)
    throw std::logic_error("builder: " + std::string(op_spelling(op)) + ": " + error);
  return results[0];
}

std::vector<ValueId> Builder::add_typed(OpCode op, std::vector<ValueId> operands, Attrs attrs,
                                        std::vector<Type> result_types, SourceSpan span,
                                        Origin origin) {
  Instr instr;
  instr.op = op;
  instr.operands = std::move(operands);
  instr.attrs = std::move(attrs);
  instr.span = span;
  instr.origin = origin;
  for (Type &t : result_types) instr.results.push_back(function_.add_value(t, "", span));
  body_->push_back(std::move(instr));
  return body_->back().results;
}

ValueId Builder::constant(DType dtype, double value, SourceSpan span) {
  Attrs a;
  a.dtype = dtype;
  a.value = value;
  return add1(OpCode::Constant, {}, a, span);
}

ValueId Builder::full(DType dtype, const Shape &shape, double value, SourceSpan span) {
  if (shape.empty()) return constant(dtype, value, span);
  Attrs a;
  a.dtype = dtype;
  a.shape = shape;
  a.value = value;
  return add1(OpCode::Full, {}, a, span);
}

ValueId Builder::pbroadcast(ValueId x, const std::vector<int> &axes, SourceSpan span,
                            Origin origin) {
  Attrs a;
  a.axes = axes;
  return add1(OpCode::Pbroadcast, {x}, a, span, origin);
}

}  // namespace spmd::ir
