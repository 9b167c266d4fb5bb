// transforms/emitter.cpp — see emitter.h.
#include "transforms/emitter.h"

namespace spmd {

ir::ValueId Emitter::op(OpCode op, ir::ValueList operands, Attrs attrs, SourceSpan span) {
  ir::BuildError error;
  auto results = builder_.add(op, std::move(operands), std::move(attrs), span, error, origin_);
  if (results.size() != 1)
    throw std::logic_error("transform built an ill-typed `" + std::string(op_spelling(op)) +
                           "`: " + error.message);
  return results[0];
}

ir::ValueId Emitter::full(Type type, double value, SourceSpan span) {
  Attrs a;
  a.dtype = type.dtype;
  a.value = value;
  a.shape = type.shape;
  ir::ValueId v = op(type.shape.empty() ? OpCode::Constant : OpCode::Full, {}, a, span);
  f_.type(v).variance = type.variance;  // constants may carry any variance
  return v;
}

ir::ValueId Emitter::scalar_like(ir::ValueId like, double value, SourceSpan span) {
  return full(Type{type(like).dtype, {}, type(like).variance}, value, span);
}

ir::ValueId Emitter::cast(ir::ValueId a, DType d, SourceSpan s) {
  if (type(a).dtype == d) return a;
  Attrs at;
  at.dtype = d;
  return op(OpCode::Cast, {a}, at, s);
}

ir::ValueId Emitter::reshape(ir::ValueId a, Shape shape, SourceSpan s) {
  if (type(a).shape == shape) return a;
  Attrs at;
  at.shape = shape;
  return op(OpCode::Reshape, {a}, at, s);
}

ir::ValueId Emitter::broadcast_to(ir::ValueId a, Shape shape, SourceSpan s) {
  if (type(a).shape == shape) return a;
  Attrs at;
  at.shape = shape;
  return op(OpCode::BroadcastTo, {a}, at, s);
}

ir::ValueId Emitter::reduce_sum(ir::ValueId a, std::vector<int64_t> dims, SourceSpan s) {
  if (dims.empty()) return a;
  Attrs at;
  at.dims = std::move(dims);
  return op(OpCode::ReduceSum, {a}, at, s);
}

ir::ValueId Emitter::unbroadcast(ir::ValueId v, Shape shape, SourceSpan s) {
  const Shape from = type(v).shape;
  if (from == shape) return v;
  int64_t extra = static_cast<int64_t>(from.size()) - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(from.size()); ++d) {
    if (d < extra) {
      dims.push_back(d);
    } else if (shape[d - extra] == 1 && from[d] != 1) {
      dims.push_back(d);
    }
  }
  return reshape(reduce_sum(v, dims, s), shape, s);
}

ir::ValueId Emitter::expand_reduced(ir::ValueId v, Shape shape, const std::vector<int64_t> &reduced,
                                    SourceSpan s) {
  // broadcast_to works directly when the reduced dims are the leading ones.
  bool leading = true;
  for (size_t k = 0; k < reduced.size(); ++k) leading &= reduced[k] == static_cast<int64_t>(k);
  if (leading) return broadcast_to(v, shape, s);
  Shape keep = shape;
  for (int64_t d : reduced) keep[d] = 1;
  return broadcast_to(reshape(v, keep, s), shape, s);
}

}  // namespace spmd
