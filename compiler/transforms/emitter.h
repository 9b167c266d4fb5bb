// transforms/emitter.h — small typed helpers shared by the JVP and transpose rules.
//
// Emitter wraps an ir::Builder and adds the operations rules need often:
// constants with a given value's dtype and variance (constants may be typed
// with any variance), arithmetic with names, and the reshaping helpers that
// undo NumPy broadcasting (`unbroadcast`, the transpose of an implicit
// broadcast, sums over the broadcast dimensions).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "ir/builder.h"

namespace spmd {

/// A program a transform cannot handle (not linear, not differentiable, ...):
/// a user error at `span` with a diagnostic code.
class TransformError : public std::runtime_error {
 public:
  TransformError(std::string code, SourceSpan span, std::string message)
      : std::runtime_error(message), code(std::move(code)), span(span) {}
  std::string code;
  SourceSpan span;
};

class Emitter {
 public:
  Emitter(const ir::Module &module, ir::Function &function)
      : builder_(module, function), f_(function) {}

  ir::Function &function() { return f_; }
  /// The origin of the instructions op() emits from now on (Transform until
  /// set); returns the previous one.
  ir::Origin set_origin(ir::Origin origin) { return std::exchange(origin_, origin); }
  /// Appends to `body` from now on (a loop body being built); returns the previous target.
  std::vector<ir::Instr> *set_body(std::vector<ir::Instr> *body) { return builder_.set_body(body); }
  /// Appends an instruction built elsewhere (a copy, a loop).
  void append(ir::Instr in) { builder_.append(std::move(in)); }
  /// A copy: emitting instructions may move the function's value table.
  Type type(ir::ValueId v) const { return f_.type(v); }

  ir::ValueId op(OpCode op, ir::ValueList operands, Attrs attrs = {}, SourceSpan span = {});
  /// A scalar constant of `like`'s dtype, typed with `like`'s variance.
  ir::ValueId scalar_like(ir::ValueId like, double value, SourceSpan span = {});
  /// A constant array of type `type` (variance included).
  ir::ValueId full(Type type, double value, SourceSpan span = {});
  ir::ValueId zeros(Type type, SourceSpan span = {}) { return full(std::move(type), 0.0, span); }

  ir::ValueId add(ir::ValueId a, ir::ValueId b, SourceSpan s = {}) {
    return op(OpCode::Add, {a, b}, {}, s);
  }
  ir::ValueId sub(ir::ValueId a, ir::ValueId b, SourceSpan s = {}) {
    return op(OpCode::Sub, {a, b}, {}, s);
  }
  ir::ValueId mul(ir::ValueId a, ir::ValueId b, SourceSpan s = {}) {
    return op(OpCode::Mul, {a, b}, {}, s);
  }
  ir::ValueId div(ir::ValueId a, ir::ValueId b, SourceSpan s = {}) {
    return op(OpCode::Div, {a, b}, {}, s);
  }
  ir::ValueId neg(ir::ValueId a, SourceSpan s = {}) { return op(OpCode::Neg, {a}, {}, s); }
  ir::ValueId cast(ir::ValueId a, DType d, SourceSpan s = {});
  ir::ValueId reshape(ir::ValueId a, Shape shape, SourceSpan s = {});
  ir::ValueId broadcast_to(ir::ValueId a, Shape shape, SourceSpan s = {});
  ir::ValueId reduce_sum(ir::ValueId a, std::vector<int64_t> dims, SourceSpan s = {});

  /// Sums `v` (a broadcast result) back to `shape`: over leading extra
  /// dimensions and over dimensions where `shape` has 1; then reshapes.
  ir::ValueId unbroadcast(ir::ValueId v, Shape shape, SourceSpan s = {});
  /// Broadcasts `v` to `shape` (after a reduction over `reduced` dims of `shape`).
  ir::ValueId expand_reduced(ir::ValueId v, Shape shape, const std::vector<int64_t> &reduced,
                             SourceSpan s = {});

  void set_name(ir::ValueId v, const std::string &name) {
    if (!name.empty()) f_.values[v].name = name;
  }

 private:
  ir::Builder builder_;
  ir::Function &f_;
  ir::Origin origin_ = ir::Origin::Transform;
};

}  // namespace spmd
