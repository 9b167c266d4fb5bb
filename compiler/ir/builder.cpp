// ir/builder.cpp — typed instruction construction.
#include "ir/builder.h"

#include <span>
#include <stdexcept>

#include "ops/shape_rules.h"
#include "ops/variance_rules.h"

namespace spmd::ir {

namespace {

/// The operand types and variances of the instruction being typed, in
/// buffers reused from one instruction to the next: copy-assigning a Type
/// reuses its shape's storage, so typing an instruction allocates nothing
/// for its operands (a derivative builds 100k+ instructions).
struct OperandScratch {
  std::vector<Type> types;
  std::vector<AxisSet> variances;
};
thread_local OperandScratch scratch;

}  // namespace

const Instr *Builder::append_typed(OpCode op, ValueList &operands, Attrs &attrs, SourceSpan span,
                                   BuildError &error, Origin origin) {
  OperandScratch &s = scratch;
  const size_t n = operands.size();
  if (s.types.size() < n) s.types.resize(n);
  s.variances.clear();
  for (size_t k = 0; k < n; ++k) {
    s.types[k] = function_.type(operands[k]);
    s.variances.push_back(s.types[k].variance);
  }
  ShapeRuleResult shapes =
      infer_shapes(op, std::span<const Type>(s.types.data(), n), attrs, mesh());
  if (!shapes.ok()) {
    error = {shapes.code, shapes.error};
    return nullptr;
  }
  const auto result_vars = result_variances(op, s.variances, shapes.results.size(), attrs);
  Instr &instr = body_->emplace_back();
  instr.op = op;
  instr.operands = std::move(operands);
  instr.attrs = std::move(attrs);
  instr.span = span;
  instr.origin = origin;
  instr.results.reserve(shapes.results.size());
  for (size_t k = 0; k < shapes.results.size(); ++k) {
    shapes.results[k].variance = result_vars[k];
    instr.results.push_back(function_.add_value(std::move(shapes.results[k]), "", span));
  }
  return &instr;
}

ValueList Builder::add(OpCode op, ValueList operands, Attrs attrs, SourceSpan span,
                       BuildError &error, Origin origin) {
  const Instr *in = append_typed(op, operands, attrs, span, error, origin);
  return in ? in->results : ValueList{};
}

ValueId Builder::add1(OpCode op, ValueList operands, Attrs attrs, SourceSpan span, Origin origin) {
  BuildError error;
  const Instr *in = append_typed(op, operands, attrs, span, error, origin);
  if (!in || in->results.size() != 1)
    throw std::logic_error("builder: " + std::string(op_spelling(op)) + ": " + error.message);
  return in->results[0];
}

ValueList Builder::add_typed(OpCode op, ValueList operands, Attrs attrs,
                             std::vector<Type> result_types, SourceSpan span, Origin origin) {
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
  a.creation().dtype = dtype;
  a.creation().value = value;
  return add1(OpCode::Constant, {}, a, span);
}

ValueId Builder::full(DType dtype, const Shape &shape, double value, SourceSpan span) {
  if (shape.empty()) return constant(dtype, value, span);
  Attrs a;
  a.creation().dtype = dtype;
  a.creation().shape = shape;
  a.creation().value = value;
  return add1(OpCode::Full, {}, a, span);
}

ValueId Builder::pbroadcast(ValueId x, const std::vector<int> &axes, SourceSpan span,
                            Origin origin) {
  Attrs a;
  a.collective().axes = axes;
  return add1(OpCode::Pbroadcast, {x}, a, span, origin);
}

}  // namespace spmd::ir
