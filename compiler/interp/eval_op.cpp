// interp/eval_op.cpp — the one exhaustive switch from OpCode to runtime kernels.
//
// Every op of ops.def has exactly one case here and no `default:`, so adding an
// op fails to compile (-Werror=switch) until the interpreter can run it. The
// cases only translate attributes into kernel arguments: the arithmetic lives
// in the runtime (spmdrt/kernels.h, spmdrt/collectives.h), shared with the CPU
// backend, so there is one implementation per op per target. The meaning of
// each attribute follows its shape rule (ops/families/).
#include "interp/eval_op.h"

// A missing case is an error for this file whatever the build flags.
#pragma GCC diagnostic error "-Wswitch"

#include <string>

#include "ops/variance_rules.h"
#include "spmdrt/kernels.h"

namespace spmd::interp::detail {
namespace {

using rt::Tensor;

Tensor red(rt::ReduceOp op, const std::vector<Tensor> &x, const ir::Instr &in) {
  return rt::reduce(op, x[0], in.attrs.reduce().dims);
}

/// The reduction of an all-reduce op.
rt::ReduceOp reduce_op(OpCode op) {
  return op == OpCode::Pmax ? rt::ReduceOp::Max
                            : (op == OpCode::Pmin ? rt::ReduceOp::Min : rt::ReduceOp::Sum);
}

/// The i32 scalar operand of dynamic_slice / dynamic_update_slice.
int64_t block_index(const Tensor &index) { return static_cast<int64_t>(index.get(0)); }

/// pscatter: this device's block of an invariant value along attrs.collective().dim (no
/// communication).
Tensor local_scatter(const Tensor &x, const Attrs &attrs, rt::DeviceContext &ctx) {
  const int64_t n = ctx.mesh().group_size(attrs.collective().axes);
  const int64_t rank = ctx.axis_index(attrs.collective().axes);
  const int64_t dim = attrs.collective().dim;
  std::vector<int64_t> start(x.shape().size(), 0), limit = x.shape(), stride(x.shape().size(), 1);
  if (attrs.collective().tiled) {
    const int64_t block = x.shape()[dim] / n;
    start[dim] = rank * block;
    limit[dim] = (rank + 1) * block;
    return rt::slice(x, start, limit, stride);
  }
  start[dim] = rank;
  limit[dim] = rank + 1;
  Tensor s = rt::slice(x, start, limit, stride);
  rt::Shape shape = x.shape();
  shape.erase(shape.begin() + dim);
  return rt::reshape(s, shape);
}

/// A draw: (key, [lo, hi,] offsets...) and RandomAttrs.
Tensor draw(rt::RandomOp op, const ir::Instr &in, const std::vector<Tensor> &x) {
  const RandomAttrs &r = in.attrs.random();
  return rt::random_draw(op, x, r.dtype, r.shape, r.global);
}

Tensor one(const ir::Instr &in, std::vector<Tensor> &x, rt::DeviceContext &ctx) {
  const Attrs &a = in.attrs;
  switch (in.op) {
    // Creation.
    case OpCode::Constant:
      return Tensor::scalar(a.creation().dtype, a.creation().value);
    case OpCode::Full:
      return Tensor::full(a.creation().dtype, a.creation().shape, a.creation().value);
    case OpCode::Iota:
      return rt::iota(a.creation().dtype, a.creation().shape, a.creation().dim);
      // Elementwise: one kernel each (elementwise_kernel below).
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) case OpCode::Name:
#include "spmdrt/unary_math.def"
    case OpCode::StopGradient:
    case OpCode::Cast:
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:
#include "spmdrt/binary_math.def"
    case OpCode::Select: {
      const ElementwiseKernel k = elementwise_kernel(in.op);
      switch (k.kind) {
        case ElementwiseKernel::Kind::Unary:
          return rt::unary(k.unary, x[0]);
        case ElementwiseKernel::Kind::Binary:
          return rt::binary(k.binary, x[0], x[1]);
        case ElementwiseKernel::Kind::Select:
          return rt::select(x[0], x[1], x[2]);
        case ElementwiseKernel::Kind::Cast:
          return rt::cast(x[0], a.cast().dtype);
        case ElementwiseKernel::Kind::Identity:
          return x[0];
        case ElementwiseKernel::Kind::None:
          break;
      }
      break;
    }
    // Reductions.
    case OpCode::ReduceSum:
      return red(rt::ReduceOp::Sum, x, in);
    case OpCode::ReduceMax:
      return red(rt::ReduceOp::Max, x, in);
    case OpCode::ReduceMin:
      return red(rt::ReduceOp::Min, x, in);
    case OpCode::ArgMax:
      return rt::arg_reduce(rt::ReduceOp::Max, x[0], a.reduce().dims);
    case OpCode::ArgMin:
      return rt::arg_reduce(rt::ReduceOp::Min, x[0], a.reduce().dims);
    // Contraction.
    case OpCode::Einsum:
      return rt::einsum(a.einsum().spec, x);
    // Layout.
    case OpCode::Reshape:
      return rt::reshape(x[0], a.layout().shape);
    case OpCode::Constrain:  // a sharding hint: the identity
      return x[0];
    case OpCode::Transpose:
      return rt::transpose(x[0], a.layout().dims);
    case OpCode::Reverse:
      return rt::reverse(x[0], a.layout().dims);
    case OpCode::BroadcastTo:
      return rt::broadcast_to(x[0], a.layout().shape);
    case OpCode::Slice:
      return rt::slice(x[0], a.layout().start, a.layout().limit, a.layout().stride);
    case OpCode::Pad:
      return rt::pad_into(x[0], a.layout().shape, a.layout().start, a.layout().stride);
    case OpCode::Concat:
      return rt::concat(x, a.layout().dim);
    case OpCode::DynamicSlice: {
      std::vector<int64_t> start(a.layout().shape.size(), 0);
      start[a.layout().dim] = block_index(x[1]) * a.layout().shape[a.layout().dim];
      return rt::dynamic_slice(x[0], start, a.layout().shape);
    }
    case OpCode::DynamicUpdateSlice: {
      std::vector<int64_t> start(x[0].shape().size(), 0);
      start[a.layout().dim] = block_index(x[2]) * x[1].shape()[a.layout().dim];
      return rt::dynamic_update_slice(std::move(x[0]), x[1], start);  // in place if unshared
    }
    case OpCode::Take:
      return rt::take(x[0], x[1], a.gather().axis, a.gather().mode);
    case OpCode::ScatterAdd:
      return rt::scatter_add(x[0], x[1], x[2], a.gather().axis, a.gather().mode);
    // Collectives.
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
      return ctx.all_reduce(x[0], a.collective().axes, reduce_op(in.op));
    case OpCode::Pbroadcast:
      return x[0];  // Invariant -> Varying: no data moves
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
      return ctx.all_gather(x[0], a.collective().axes, a.collective().dim, a.collective().tiled);
    case OpCode::PsumScatter:
      return ctx.reduce_scatter(x[0], a.collective().axes, a.collective().dim,
                                a.collective().tiled);
    case OpCode::Pscatter:
      return local_scatter(x[0], a, ctx);
    case OpCode::AllToAll:
      return ctx.all_to_all(x[0], a.collective().axes, a.collective().dim,
                            a.collective().concat_dim);
    case OpCode::Ppermute:
      return ctx.ppermute(x[0], a.collective().axes, a.collective().perm);
    case OpCode::AxisIndex:
      return Tensor::scalar(DType::I32, static_cast<double>(ctx.axis_index(a.collective().axes)));
    // Random numbers (spmdrt/random.h).
    case OpCode::RandomKey:
      return rt::random_key(x[0]);
    case OpCode::RandomFoldIn:
      return rt::random_fold_in(x[0], x[1]);
    case OpCode::KeyData:
      return rt::key_data(x[0]);
    case OpCode::RandomSplit:
      return draw(rt::RandomOp::Split, in, x);
    case OpCode::RandomBits:
      return draw(rt::RandomOp::Bits, in, x);
    case OpCode::RandomUniform:
      return draw(rt::RandomOp::Uniform, in, x);
    case OpCode::RandomNormal:
      return draw(rt::RandomOp::Normal, in, x);
    case OpCode::RandomInt:
      return draw(rt::RandomOp::Int, in, x);
    case OpCode::For:         // a region: run by the interpreter (interpreter.cpp, run_loop)
    case OpCode::Call:        // several results: handled by eval_op
    case OpCode::DebugPrint:  // no results: run by the interpreter (it needs the variances)
      break;
  }
  throw std::logic_error("interpreter: `" + std::string(op_spelling(in.op)) +
                         "` has no single-result evaluation");
}

}  // namespace

ElementwiseKernel elementwise_kernel(OpCode op) {
  using K = ElementwiseKernel::Kind;
  auto un = [](rt::UnaryOp u) { return ElementwiseKernel{K::Unary, u, rt::BinaryOp::Add}; };
  auto bin = [](rt::BinaryOp b) { return ElementwiseKernel{K::Binary, rt::UnaryOp::Neg, b}; };
  switch (op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  case OpCode::Name:                                                     \
    return un(rt::UnaryOp::Name);
#include "spmdrt/unary_math.def"
    case OpCode::StopGradient:  // the identity when running; it only matters to derivatives
      return {K::Identity};
    case OpCode::Cast:
      return {K::Cast};
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:                                                                    \
    return bin(rt::BinaryOp::Name);
#include "spmdrt/binary_math.def"
    case OpCode::Select:
      return {K::Select};
    case OpCode::Constant:
    case OpCode::Full:
    case OpCode::Iota:
    case OpCode::ReduceSum:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
    case OpCode::ArgMax:
    case OpCode::ArgMin:
    case OpCode::Einsum:
    case OpCode::Reshape:
    case OpCode::Transpose:
    case OpCode::Reverse:
    case OpCode::BroadcastTo:
    case OpCode::Slice:
    case OpCode::Pad:
    case OpCode::Concat:
    case OpCode::DynamicSlice:
    case OpCode::DynamicUpdateSlice:
    case OpCode::Take:
    case OpCode::ScatterAdd:
    case OpCode::Constrain:
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::Pbroadcast:
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
    case OpCode::PsumScatter:
    case OpCode::Pscatter:
    case OpCode::AllToAll:
    case OpCode::Ppermute:
    case OpCode::AxisIndex:
    case OpCode::RandomKey:
    case OpCode::RandomFoldIn:
    case OpCode::KeyData:
    case OpCode::RandomSplit:
    case OpCode::RandomBits:
    case OpCode::RandomUniform:
    case OpCode::RandomNormal:
    case OpCode::RandomInt:
    case OpCode::For:
    case OpCode::Call:
    case OpCode::DebugPrint:
      return {};
  }
  return {};
}

std::vector<rt::Tensor> eval_op(const ir::Instr &instr, std::vector<rt::Tensor> &operands,
                                rt::DeviceContext &ctx, const CallFn &call) {
  if (instr.op == OpCode::Call) return call(instr.attrs.call().callee, std::move(operands));
  if (operands.size() != 1 && is_combinable_collective(instr.op)) {  // psum((a, b), axes), ...
    const Attrs &a = instr.attrs;
    if (is_combinable_reduce(instr.op))
      return ctx.all_reduce(operands, a.collective().axes, reduce_op(instr.op));
    if (instr.op == OpCode::PsumScatter)
      return ctx.reduce_scatter(operands, a.collective().axes, a.collective().dim,
                                a.collective().tiled);
    return ctx.all_gather(operands, a.collective().axes, a.collective().dim,
                          a.collective().tiled);  // all_gather(_invariant)
  }
  return {one(instr, operands, ctx)};
}

}  // namespace spmd::interp::detail
