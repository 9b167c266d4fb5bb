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

std::string_view op_display_name(OpCode op) {
  switch (op) {
    case OpCode::Add:
      return "+";
    case OpCode::Sub:
      return "-";
    case OpCode::Mul:
      return "*";
    case OpCode::Div:
      return "/";
    case OpCode::FloorDiv:
      return "//";
    case OpCode::Rem:
      return "%";
    case OpCode::Pow:
      return "**";
    case OpCode::Lt:
      return "<";
    case OpCode::Le:
      return "<=";
    case OpCode::Gt:
      return ">";
    case OpCode::Ge:
      return ">=";
    case OpCode::Eq:
      return "==";
    case OpCode::Ne:
      return "!=";
    case OpCode::And:
      return "and";
    case OpCode::Or:
      return "or";
    default:
      return op_spelling(op);
  }
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
