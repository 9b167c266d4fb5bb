// ir/builder.h — appending typed instructions to a function.
//
// Builder::add types a new instruction with the op's shape rule and variance
// rule (the union of the operands' variance, then result_variance), creates its
// result values and appends it. Passes that rewrite a body build a fresh
// instruction list with a Builder pointed at it.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace spmd::ir {

/// Why an instruction could not be typed: the diagnostic code and a sentence.
struct BuildError {
  std::string code;
  std::string message;
};

class Builder {
 public:
  Builder(const Module &module, Function &function)
      : module_(module), function_(function), body_(&function.body) {}
  /// Appends to `body` instead of function.body (values still live in function).
  Builder(const Module &module, Function &function, std::vector<Instr> &body)
      : module_(module), function_(function), body_(&body) {}

  Function &function() { return function_; }
  /// The instruction list appended to (the function's body, or a region's).
  std::vector<Instr> &body() { return *body_; }
  /// Appends to `body` from now on; returns the previous target.
  std::vector<Instr> *set_body(std::vector<Instr> *body) {
    std::swap(body, body_);
    return body;
  }
  const rt::Mesh &mesh() const { return module_.mesh_of(function_); }
  /// Appends an instruction built elsewhere (its values already exist).
  void append(Instr in) { body_->push_back(std::move(in)); }

  /// Appends `op`; on a shape-rule failure returns {} and sets `error`.
  ValueList add(OpCode op, ValueList operands, Attrs attrs, SourceSpan span, BuildError &error,
                Origin origin = Origin::User);
  /// As add, for single-result ops; a failure is a compiler bug (throws std::logic_error).
  ValueId add1(OpCode op, ValueList operands, Attrs attrs = {}, SourceSpan span = {},
               Origin origin = Origin::Transform);
  /// Appends an instruction whose result types are given (calls).
  ValueList add_typed(OpCode op, ValueList operands, Attrs attrs, std::vector<Type> result_types,
                      SourceSpan span, Origin origin = Origin::User);

  // Shorthands used by the transforms.
  ValueId constant(DType dtype, double value, SourceSpan span = {});
  ValueId full(DType dtype, const Shape &shape, double value, SourceSpan span = {});
  ValueId pbroadcast(ValueId x, const std::vector<int> &axes, SourceSpan span = {},
                     Origin origin = Origin::Transform);

 private:
  /// Types `op` and appends it (operands and attrs moved from); the new
  /// instruction, or nullptr with `error` set when the shape rule fails.
  const Instr *append_typed(OpCode op, ValueList &operands, Attrs &attrs, SourceSpan span,
                            BuildError &error, Origin origin);

  const Module &module_;
  Function &function_;
  std::vector<Instr> *body_;
};

}  // namespace spmd::ir
