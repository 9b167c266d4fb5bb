// ops/op_info.h — OpCode and the static facts about every op.
//
// OpCode is generated from ops.def. OpInfo says how an op is spelled, what kind
// of rule derives its type, and whether it moves data between devices. Attrs
// holds every op parameter in one typed struct (each op uses the fields its
// ops.def comment names; the rest stay default).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/types.h"

namespace spmd {

enum class OpKind {
  Creation,     // no operands, invariant result
  Unary,        // one operand, same shape
  Binary,       // two operands, broadcast, same dtype result
  Compare,      // two operands, broadcast, bool result
  Logical,      // two bool operands, broadcast, bool result
  Select,       // where(cond, a, b)
  Reduce,       // removes attrs.dims
  Contraction,  // einsum
  Layout,       // moves elements around
  Collective,   // works across devices; variance rule from the design note
  Call,         // call of an instantiated def
  Control,      // structured control flow with regions (for)
};

enum class OpCode : uint8_t {
#define OP(Name, spelling, Kind) Name,
#include "ops/ops.def"
};

inline constexpr int kNumOps = 0
#define OP(Name, spelling, Kind) +1
#include "ops/ops.def"
    ;

struct OpInfo {
  OpCode code;
  std::string_view spelling;
  OpKind kind;
};

const OpInfo &op_info(OpCode op);
inline std::string_view op_spelling(OpCode op) { return op_info(op).spelling; }
inline OpKind op_kind(OpCode op) { return op_info(op).kind; }
/// How users write the op: the operator for arithmetic ("+", "@"), else the spelling.
std::string_view op_display_name(OpCode op);
/// The infix operator of a binary op (spmdrt/binary_math.def: "+", "<=", "and"), else "".
std::string_view op_symbol(OpCode op);
/// True for ops that move data between devices (pbroadcast, pscatter and
/// axis_index are collectives in the type system but communicate nothing).
bool op_communicates(OpCode op);
/// True for the math functions of one operand (the rows of spmdrt/unary_math.def).
bool op_is_unary_math(OpCode op);
/// True for the unary math functions that take i32 operands (neg, abs, sign).
bool op_accepts_int(OpCode op);

// Helpers for X-macro rows of spmdrt/unary_math.def: SPMD_IF_LINEAR_##Linearity(x)
// expands to x for the linear rows only, SPMD_IF_NONLINEAR_##Linearity(x) for the
// others; SPMD_ACCEPTS_INT_##Domain is whether the row takes i32 operands.
#define SPMD_IF_LINEAR_Linear(...) __VA_ARGS__
#define SPMD_IF_LINEAR_Nonlinear(...)
#define SPMD_IF_NONLINEAR_Linear(...)
#define SPMD_IF_NONLINEAR_Nonlinear(...) __VA_ARGS__
#define SPMD_ACCEPTS_INT_Signed true
#define SPMD_ACCEPTS_INT_Float false
#define SPMD_ACCEPTS_INT_Bool false

struct Attrs {
  std::vector<int> axes;      // collectives: mesh axis indices, in written order
  std::vector<int64_t> dims;  // reduce: reduced dims; transpose: permutation
  Shape shape;                // reshape / broadcast_to / full / iota / pad: target shape
  int64_t dim = 0;            // gather/scatter/concat/iota dim; all_to_all split dim
  int64_t dim2 = 0;           // all_to_all concat dim
  bool tiled = true;          // all_gather / psum_scatter / pscatter
  std::vector<std::pair<int64_t, int64_t>> perm;  // ppermute (source, destination) ranks
  std::vector<int64_t> start, limit, stride;      // slice; pad uses start/stride
  std::string spec;                               // einsum
  DType dtype = DType::F32;                       // constant / full / iota / cast
  double value = 0;                               // constant / full
  int callee = -1;                                // call: index into Module::functions
  rt::PartitionSpec sharding;                     // constrain: the global spec
  int64_t step = 1;     // for: `range(dim, dim2, step)` (dim = start, dim2 = stop)
  bool unroll = false;  // for: `[[unroll]]` — unrolled right after checking
  bool remat = false;   // for: `[[remat]]` — its transpose recomputes instead of storing
  int derived = -1;     // call, until infer_variance: index into Module::derived_callees

  bool operator==(const Attrs &) const = default;
};

}  // namespace spmd
