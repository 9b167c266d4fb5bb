// ops/op_info.cpp — the OpInfo table, generated from ops.def.
#include "ops/op_info.h"

#include <array>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace spmd {
namespace {

constexpr std::array<OpInfo, kNumOps> kOpTable = {{
#define OP(Name, spelling, Kind, Attrs, Comm, Linearity) \
  {OpCode::Name,      spelling,        OpKind::Kind,     \
   AttrFamily::Attrs, SPMD_YES_##Comm, OpLinearity::Linearity},
#define SPMD_YES_Yes true
#define SPMD_YES_No false
#include "ops/ops.def"
}};
#undef SPMD_YES_Yes
#undef SPMD_YES_No

const char *family_name(AttrFamily f) {
  switch (f) {
    case AttrFamily::None:
      return "none";
    case AttrFamily::Creation:
      return "creation";
    case AttrFamily::Cast:
      return "cast";
    case AttrFamily::Reduce:
      return "reduce";
    case AttrFamily::Einsum:
      return "einsum";
    case AttrFamily::Layout:
      return "layout";
    case AttrFamily::Gather:
      return "gather";
    case AttrFamily::Constrain:
      return "constrain";
    case AttrFamily::Collective:
      return "collective";
    case AttrFamily::Call:
      return "call";
    case AttrFamily::Loop:
      return "loop";
    case AttrFamily::Random:
      return "random";
    case AttrFamily::Print:
      return "print";
  }
  return "?";
}

}  // namespace

const OpInfo &op_info(OpCode op) { return kOpTable[static_cast<size_t>(op)]; }

std::string_view attr_family_name(AttrFamily family) { return family_name(family); }

bool linear_in_operand(OpLinearity linearity, size_t k) {
  switch (linearity) {
    case OpLinearity::NotLinear:
      return false;
    case OpLinearity::InFirst:
      return k == 0;
    case OpLinearity::InEach:
    case OpLinearity::InAll:
    case OpLinearity::PerOperand:
      return true;
    case OpLinearity::InBranches:
      return k == 1 || k == 2;
    case OpLinearity::InArrayAndUpdate:
      return k == 0 || k == 1;
  }
  return false;
}

bool linear_together(OpLinearity linearity) {
  switch (linearity) {
    case OpLinearity::NotLinear:
    case OpLinearity::InFirst:
    case OpLinearity::InEach:
    case OpLinearity::PerOperand:
      return false;
    case OpLinearity::InAll:
    case OpLinearity::InBranches:
    case OpLinearity::InArrayAndUpdate:
      return true;
  }
  return false;
}

AttrFamily Attrs::family() const {
  return std::visit(
      [](const auto &t) {
        if constexpr (std::is_same_v<std::decay_t<decltype(t)>, std::monostate>)
          return AttrFamily::None;
        else
          return std::decay_t<decltype(t)>::kFamily;
      },
      typed_);
}

const std::vector<int> &collective_axes(OpCode op, const Attrs &attrs) {
  static const std::vector<int> kNone;
  return op_attr_family(op) == AttrFamily::Collective ? attrs.collective().axes : kNone;
}

void Attrs::wrong_family(AttrFamily wanted) const {
  throw std::logic_error("internal: an op's " + std::string(family_name(family())) +
                         " attributes read as " + family_name(wanted) + " attributes");
}

// Attrs with nothing set equal the defaults of any family.
bool Attrs::operator==(const Attrs &o) const {
  if (typed_.index() == o.typed_.index()) return typed_ == o.typed_;
  const Typed &set = typed_.index() == 0 ? o.typed_ : typed_;
  if (typed_.index() != 0 && o.typed_.index() != 0) return false;
  return std::visit(
      [](const auto &t) {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return true;
        else
          return t == T{};
      },
      set);
}

size_t random_param_count(OpCode op) {
  return op == OpCode::RandomUniform || op == OpCode::RandomInt ? 3 : 1;
}

std::string_view op_symbol(OpCode op) {
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  if (op == OpCode::Name) return symbol;
#include "spmdrt/binary_math.def"
  return "";
}

std::string_view op_display_name(OpCode op) {
  const std::string_view symbol = op_symbol(op);
  return symbol.empty() ? op_spelling(op) : symbol;
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
