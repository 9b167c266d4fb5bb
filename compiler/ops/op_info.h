// ops/op_info.h — OpCode and the static facts about every op.
//
// OpCode is generated from ops.def. OpInfo says how an op is spelled, what kind
// of rule derives its type, which typed attributes it carries and whether it
// moves data between devices. Attrs holds an op's parameters: one struct per
// family (LoopAttrs, CollectiveAttrs, ...).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
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
  Reduce,       // removes the reduced dimensions (ReduceAttrs)
  Contraction,  // einsum
  Layout,       // moves elements around
  Collective,   // works across devices; variance rule from the design note
  Call,         // call of an instantiated def
  Control,      // structured control flow with regions (for)
  Random,       // random keys and draws (spmdrt/random.h); results vary as operands do
  Effect,       // no results, kept for its effect (print)
};

enum class OpCode : uint8_t {
#define OP(Name, spelling, Kind, Attrs, Comm, Linearity) Name,
#include "ops/ops.def"
};

inline constexpr int kNumOps = 0
#define OP(Name, spelling, Kind, Attrs, Comm, Linearity) +1
#include "ops/ops.def"
    ;

/// Which typed attribute struct an op carries (the Attrs column of ops.def).
enum class AttrFamily : uint8_t {
  None,        // elementwise ops (but cast), where, stop_gradient: no parameters
  Creation,    // CreationAttrs: constant, full, iota
  Cast,        // CastAttrs
  Reduce,      // ReduceAttrs: sum ... argmin
  Einsum,      // EinsumAttrs
  Layout,      // LayoutAttrs: reshape ... dynamic_update_slice
  Gather,      // GatherAttrs: take, scatter_add
  Constrain,   // ConstrainAttrs
  Collective,  // CollectiveAttrs
  Call,        // CallAttrs
  Loop,        // LoopAttrs
  Random,      // RandomAttrs: split ... randint
  Print,       // PrintAttrs: print
};

/// Which operands an op is linear in (the Linearity column of ops.def).
enum class OpLinearity : uint8_t {
  NotLinear,         // none (exp, max, comparisons, argmax, pmax, calls, loops)
  InFirst,           // operand 0 alone; the others (a divisor, an index) are fixed
  InEach,            // any one operand, the others fixed: a * b, einsum
  InAll,             // all operands together: a + b, a - b, concat
  InBranches,        // where(c, a, b): a and b together; c is fixed
  InArrayAndUpdate,  // dynamic_update_slice(x, u, i): x and u together; i is fixed
  PerOperand,        // each operand to its own result: psum((a, b), axes), all_gather
};

struct OpInfo {
  OpCode code;
  std::string_view spelling;
  OpKind kind;
  AttrFamily attrs;   // which typed attributes it carries
  bool communicates;  // moves data between devices
  OpLinearity linearity;
};

const OpInfo &op_info(OpCode op);
inline std::string_view op_spelling(OpCode op) { return op_info(op).spelling; }
inline OpKind op_kind(OpCode op) { return op_info(op).kind; }
inline AttrFamily op_attr_family(OpCode op) { return op_info(op).attrs; }
inline OpLinearity op_linearity(OpCode op) { return op_info(op).linearity; }
/// True for ops kept for their effect, whether or not anything reads them
/// (OpKind::Effect: print). Dead-code elimination keeps them, CSE never merges them.
inline bool op_has_effect(OpCode op) { return op_info(op).kind == OpKind::Effect; }
/// Whether an op of this linearity is linear in its operand `k`.
bool linear_in_operand(OpLinearity linearity, size_t k);
/// True when the operands it is linear in vary together (a sum: InAll,
/// InBranches, InArrayAndUpdate); false when only one of them may vary at a
/// time (a product: InFirst, InEach), each on its own (PerOperand) or none.
bool linear_together(OpLinearity linearity);
/// "loop", "collective", ...: for messages.
std::string_view attr_family_name(AttrFamily family);
/// How users write the op: the operator for arithmetic ("+", "@"), else the spelling.
std::string_view op_display_name(OpCode op);
/// The infix operator of a binary op (spmdrt/binary_math.def: "+", "<=", "and"), else "".
std::string_view op_symbol(OpCode op);
/// True for ops that move data between devices (the Comm column of ops.def:
/// pbroadcast, pscatter and axis_index are collectives in the type system but
/// communicate nothing).
inline bool op_communicates(OpCode op) { return op_info(op).communicates; }
/// True for the math functions of one operand (the rows of spmdrt/unary_math.def).
bool op_is_unary_math(OpCode op);
/// True for the unary math functions that take i32 operands (neg, abs, sign).
bool op_accepts_int(OpCode op);

// Helpers for X-macro rows: SPMD_IF_NOT_LINEAR_##Linearity(x) expands to x for
// the NotLinear rows only (ops.def and the math tables share the column);
// SPMD_ACCEPTS_INT_##Domain is whether a row of spmdrt/unary_math.def takes i32
// operands.
#define SPMD_IF_NOT_LINEAR_NotLinear(...) __VA_ARGS__
#define SPMD_IF_NOT_LINEAR_InFirst(...)
#define SPMD_IF_NOT_LINEAR_InEach(...)
#define SPMD_IF_NOT_LINEAR_InAll(...)
#define SPMD_IF_NOT_LINEAR_InBranches(...)
#define SPMD_IF_NOT_LINEAR_InArrayAndUpdate(...)
#define SPMD_IF_NOT_LINEAR_PerOperand(...)
#define SPMD_ACCEPTS_INT_Signed true
#define SPMD_ACCEPTS_INT_Float false
#define SPMD_ACCEPTS_INT_Bool false

// Typed attributes, one struct per family (AttrFamily). Attrs holds at most one
// of them; a pass reads `in.attrs.loop().start`, never a shared field. Reading
// the family an op does not carry is an internal error (std::logic_error);
// reading an op whose attrs are all default (nothing was set) gives the
// family's defaults. The mutable accessors start the family on first use, so
// `Attrs a; a.loop().stop = n;` builds a loop's attrs. The verifier checks that
// every instruction carries its op's family (or none).

/// constant: dtype, value; full: shape, dtype, value; iota: shape, dtype, dim.
struct CreationAttrs {
  Shape shape;
  DType dtype = DType::F32;
  double value = 0;
  int64_t dim = 0;  // iota: the dimension it counts along
  static constexpr AttrFamily kFamily = AttrFamily::Creation;
  bool operator==(const CreationAttrs &) const = default;
};

/// cast: the result dtype.
struct CastAttrs {
  DType dtype = DType::F32;
  static constexpr AttrFamily kFamily = AttrFamily::Cast;
  bool operator==(const CastAttrs &) const = default;
};

/// sum ... argmin: the reduced dimensions, sorted (they are removed).
struct ReduceAttrs {
  std::vector<int64_t> dims;
  static constexpr AttrFamily kFamily = AttrFamily::Reduce;
  bool operator==(const ReduceAttrs &) const = default;
};

/// The layout ops, each using the fields its ops.def comment names: reshape,
/// broadcast_to: shape; transpose: dims = the permutation; flip: dims = the
/// reversed dimensions; slice: start, limit, stride; pad: shape, start,
/// stride; concat, dynamic_update_slice: dim; dynamic_slice: dim, shape.
struct LayoutAttrs {
  Shape shape;
  std::vector<int64_t> dims;
  int64_t dim = 0;
  std::vector<int64_t> start, limit, stride;
  static constexpr AttrFamily kFamily = AttrFamily::Layout;
  bool operator==(const LayoutAttrs &) const = default;
};

/// take, scatter_add: the indexed axis of x and what an out-of-range id does.
struct GatherAttrs {
  int64_t axis = 0;
  rt::IndexMode mode = rt::IndexMode::Check;  // what an id out of range does
  static constexpr AttrFamily kFamily = AttrFamily::Gather;
  bool operator==(const GatherAttrs &) const = default;
};

/// einsum: the normalised spec, e.g. "ij,jk->ik".
struct EinsumAttrs {
  std::string spec;
  static constexpr AttrFamily kFamily = AttrFamily::Einsum;
  bool operator==(const EinsumAttrs &) const = default;
};

/// constrain: the global spec the value must have (JAX's with_sharding_constraint).
struct ConstrainAttrs {
  rt::PartitionSpec sharding;
  static constexpr AttrFamily kFamily = AttrFamily::Constrain;
  bool operator==(const ConstrainAttrs &) const = default;
};

/// psum ... axis_index: the mesh axes, plus the gathered/scattered dimension.
struct CollectiveAttrs {
  std::vector<int> axes;   // mesh axis indices, in written order
  int64_t dim = 0;         // all_gather / psum_scatter / pscatter dim; all_to_all split dim
  int64_t concat_dim = 0;  // all_to_all: the dimension the received blocks are concatenated along
  bool tiled = true;       // all_gather / psum_scatter / pscatter
  std::vector<std::pair<int64_t, int64_t>> perm;  // ppermute (source, destination) ranks
  static constexpr AttrFamily kFamily = AttrFamily::Collective;
  bool operator==(const CollectiveAttrs &) const = default;
};

/// call: the callee (and, between lowering and the derived-functions step, the
/// derivative still to build: `grad(f)(x)`).
struct CallAttrs {
  int callee = -1;   // index into Module::functions
  int derived = -1;  // index into Module::derived_callees
  static constexpr AttrFamily kFamily = AttrFamily::Call;
  bool operator==(const CallAttrs &) const = default;
};

/// for: `for k in range(start, stop, step)` with `[[unroll]]` / `[[remat]]`.
struct LoopAttrs {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  bool unroll = false;  // `[[unroll]]`: unrolled right after checking
  bool remat = false;   // `[[remat]]`: its transpose recomputes instead of storing
  static constexpr AttrFamily kFamily = AttrFamily::Loop;
  bool operator==(const LoopAttrs &) const = default;
};

/// split ... randint: the result's shape and dtype; global, when not empty, the
/// shape of the whole draw the result is a block of (its offsets are the op's
/// last global.size() operands, i32 scalars).
struct RandomAttrs {
  Shape shape;
  DType dtype = DType::F32;
  Shape global;
  static constexpr AttrFamily kFamily = AttrFamily::Random;
  bool operator==(const RandomAttrs &) const = default;
};
/// The operands of a draw before its offsets: the key, plus lo and hi for
/// uniform and randint.
size_t random_param_count(OpCode op);
/// print: the format string, `{}` marking where each operand goes (`{{` and
/// `}}` are literal braces).
struct PrintAttrs {
  std::string format;
  static constexpr AttrFamily kFamily = AttrFamily::Print;
  bool operator==(const PrintAttrs &) const = default;
};

struct Attrs;
/// The mesh axes of a collective's attrs; empty for every other op.
const std::vector<int> &collective_axes(OpCode op, const Attrs &attrs);

struct Attrs {
  AttrFamily family() const;

  const CreationAttrs &creation() const { return get<CreationAttrs>(); }
  CreationAttrs &creation() { return set<CreationAttrs>(); }
  const CastAttrs &cast() const { return get<CastAttrs>(); }
  CastAttrs &cast() { return set<CastAttrs>(); }
  const ReduceAttrs &reduce() const { return get<ReduceAttrs>(); }
  ReduceAttrs &reduce() { return set<ReduceAttrs>(); }
  const LayoutAttrs &layout() const { return get<LayoutAttrs>(); }
  LayoutAttrs &layout() { return set<LayoutAttrs>(); }
  const GatherAttrs &gather() const { return get<GatherAttrs>(); }
  GatherAttrs &gather() { return set<GatherAttrs>(); }
  const EinsumAttrs &einsum() const { return get<EinsumAttrs>(); }
  EinsumAttrs &einsum() { return set<EinsumAttrs>(); }
  const ConstrainAttrs &constrain() const { return get<ConstrainAttrs>(); }
  ConstrainAttrs &constrain() { return set<ConstrainAttrs>(); }
  const CollectiveAttrs &collective() const { return get<CollectiveAttrs>(); }
  CollectiveAttrs &collective() { return set<CollectiveAttrs>(); }
  const CallAttrs &call() const { return get<CallAttrs>(); }
  CallAttrs &call() { return set<CallAttrs>(); }
  const LoopAttrs &loop() const { return get<LoopAttrs>(); }
  LoopAttrs &loop() { return set<LoopAttrs>(); }
  const RandomAttrs &random() const { return get<RandomAttrs>(); }
  RandomAttrs &random() { return set<RandomAttrs>(); }
  const PrintAttrs &print() const { return get<PrintAttrs>(); }
  PrintAttrs &print() { return set<PrintAttrs>(); }

  bool operator==(const Attrs &other) const;

 private:
  using Typed = std::variant<std::monostate, CreationAttrs, CastAttrs, ReduceAttrs, LayoutAttrs,
                             GatherAttrs, EinsumAttrs, ConstrainAttrs, CollectiveAttrs, CallAttrs,
                             LoopAttrs, RandomAttrs, PrintAttrs>;

  [[noreturn]] void wrong_family(AttrFamily wanted) const;
  template <class T>
  const T &get() const {
    if (const T *p = std::get_if<T>(&typed_)) return *p;
    if (typed_.index() == 0) {
      static const T kDefault{};
      return kDefault;
    }
    wrong_family(T::kFamily);
  }
  template <class T>
  T &set() {
    if (typed_.index() == 0) typed_.emplace<T>();
    if (T *p = std::get_if<T>(&typed_)) return *p;
    wrong_family(T::kFamily);
  }

  Typed typed_;
};

}  // namespace spmd
