// ops/op_info.cpp — the OpInfo table, generated from ops.def.
#include "ops/op_info.h"

#include <array>

namespace spmd {
namespace {

constexpr std::array<OpInfo, kNumOps> kOpTable = {{
#define OP(Name, spelling, Kind) {OpCode::Name, spelling, OpKind::Kind},
#include "ops/ops.def"
}};

}  // namespace

const OpInfo &op_info(OpCode op) { return kOpTable[static_cast<size_t>(op)]; }

std::string_view op_symbol(OpCode op) {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk) \
  if (op == OpCode::Name) return symbol;
#include "spmdrt/binary_math.def"
  return "";
}

std::string_view op_display_name(OpCode op) {
  const std::string_view symbol = op_symbol(op);
  return symbol.empty() ? op_spelling(op) : symbol;
}

bool op_communicates(OpCode op) {
  switch (op) {
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
    case OpCode::PsumScatter:
    case OpCode::AllToAll:
    case OpCode::Ppermute:
      return true;
    default:
      return false;
  }
}

bool op_is_unary_math(OpCode op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  if (op == OpCode::Name) return true;
#include "spmdrt/unary_math.def"
  return false;
}

bool op_accepts_int(OpCode op) {
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  if (op == OpCode::Name) return SPMD_ACCEPTS_INT_##Domain;
#include "spmdrt/unary_math.def"
  return false;
}

}  // namespace spmd
