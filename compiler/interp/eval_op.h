// interp/eval_op.h — the meaning of one IR instruction on one simulated device.
//
// Internal to the interpreter. eval_op maps an instruction to the runtime's
// CPU kernels (spmdrt/kernels.h) and simulated collectives
// (spmdrt/collectives.h); calls of def instances go back to the interpreter
// through `call`.
#pragma once

#include <functional>
#include <vector>

#include "ir/ir.h"
#include "spmdrt/collectives.h"
#include "spmdrt/kernels.h"

namespace spmd::interp::detail {

/// Evaluates the callee (an index into Module::functions) on these arguments.
using CallFn = std::function<std::vector<rt::Tensor>(int callee, std::vector<rt::Tensor> args)>;

/// The runtime kernel of an elementwise op (interp/fused_group.cpp runs fused
/// groups with it): kind None for every other op.
struct ElementwiseKernel {
  enum class Kind { None, Unary, Binary, Select, Cast, Identity } kind = Kind::None;
  rt::UnaryOp unary = rt::UnaryOp::Neg;
  rt::BinaryOp binary = rt::BinaryOp::Add;
};
ElementwiseKernel elementwise_kernel(OpCode op);

/// Executes `instr` on this device; returns one tensor per result. It may
/// take `operands` over (dynamic_update_slice updates a tensor no other value
/// shares in place), so the caller passes operands it no longer needs by move.
std::vector<rt::Tensor> eval_op(const ir::Instr &instr, std::vector<rt::Tensor> &operands,
                                rt::DeviceContext &ctx, const CallFn &call);

}  // namespace spmd::interp::detail
