// transforms/rules/elementwise.cpp — the JVP and transpose rules of the math
// functions of one operand (spmdrt/unary_math.def) and of two
// (spmdrt/binary_math.def), cast, stop_gradient and where: one value per op,
// the rule as a comment (r the result, dx, dy the tangents, ct the cotangent).
#include "transforms/rules/rules.h"

namespace spmd::derivatives {
namespace {

constexpr std::string_view kFamily = "elementwise";

/// Piecewise constant, or not differentiable data (bool results): d = 0.
Tangent no_tangent(JvpContext &) { return std::nullopt; }

}  // namespace

// Functions of one operand.

// d(-x) = -dx; (-x)^T ct = -ct
const DerivativeRules kNeg{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent { return j.e.neg(j.t(0), j.span()); },
    .transpose = [](TransposeContext &tr) { tr.give(0, tr.e.neg(tr.ct, tr.s)); },
};
// d exp(x) = r dx
const DerivativeRules kExp{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent { return j.e.mul(j.r, j.t(0), j.span()); },
    .transpose = nullptr,
};
// d log(x) = dx / x
const DerivativeRules kLog{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent { return j.e.div(j.t(0), j.x[0], j.span()); },
    .transpose = nullptr,
};
// d sin(x) = cos(x) dx
const DerivativeRules kSin{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.mul(j.e.op(OpCode::Cos, {j.x[0]}, {}, j.span()), j.t(0), j.span());
    },
    .transpose = nullptr,
};
// d cos(x) = -sin(x) dx
const DerivativeRules kCos{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.neg(j.e.mul(j.e.op(OpCode::Sin, {j.x[0]}, {}, j.span()), j.t(0), j.span()),
                     j.span());
    },
    .transpose = nullptr,
};
// d tanh(x) = (1 - r^2) dx
const DerivativeRules kTanh{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.mul(j.e.sub(j.c(1), j.e.mul(j.r, j.r, j.span()), j.span()), j.t(0), j.span());
    },
    .transpose = nullptr,
};
// d sqrt(x) = dx / (2 r)
const DerivativeRules kSqrt{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.div(j.t(0), j.e.mul(j.c(2), j.r, j.span()), j.span());
    },
    .transpose = nullptr,
};
// d x^(-1/2) = -1/2 r / x dx
const DerivativeRules kRsqrt{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.mul(j.e.mul(j.c(-0.5), j.e.div(j.r, j.x[0], j.span()), j.span()), j.t(0),
                     j.span());
    },
    .transpose = nullptr,
};
// d |x| = sign(x) dx
const DerivativeRules kAbs{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.mul(j.e.op(OpCode::Sign, {j.x[0]}, {}, j.span()), j.t(0), j.span());
    },
    .transpose = nullptr,
};
// piecewise constant: d sign(x) = 0
const DerivativeRules kSign{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
// d s(x) = r (1 - r) dx
const DerivativeRules kLogistic{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.mul(j.e.mul(j.r, j.e.sub(j.c(1), j.r, j.span()), j.span()), j.t(0), j.span());
    },
    .transpose = nullptr,
};
// d erf(x) = 2/sqrt(pi) exp(-x^2) dx
const DerivativeRules kErf{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      ir::ValueId x2 = j.e.mul(j.x[0], j.x[0], j.span());
      ir::ValueId g = j.e.op(OpCode::Exp, {j.e.neg(x2, j.span())}, {}, j.span());
      return j.e.mul(j.e.mul(j.c(1.1283791670955126), g, j.span()), j.t(0), j.span());
    },
    .transpose = nullptr,
};
// d log(1 + x) = dx / (1 + x)
const DerivativeRules kLog1p{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.div(j.t(0), j.e.add(j.c(1), j.x[0], j.span()), j.span());
    },
    .transpose = nullptr,
};
// d (exp(x) - 1) = exp(x) dx = (r + 1) dx
const DerivativeRules kExpm1{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.mul(j.e.add(j.r, j.c(1), j.span()), j.t(0), j.span());
    },
    .transpose = nullptr,
};
// d x^(1/3) = dx / (3 r^2)
const DerivativeRules kCbrt{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.div(j.t(0), j.e.mul(j.c(3), j.e.mul(j.r, j.r, j.span()), j.span()), j.span());
    },
    .transpose = nullptr,
};
// bool: no tangent
const DerivativeRules kNot{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};

// Casts between float types are linear (a cast to an integer type has no
// tangent); cast^T = the cast back to the operand's float type.
const DerivativeRules kCast{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      if (!rt::is_float(j.e.type(j.x[0]).dtype)) return std::nullopt;
      return j.e.cast(j.t(0), j.a.cast().dtype, j.span());
    },
    .transpose =
        [](TransposeContext &tr) {
          tr.give(0, tr.e.cast(tr.ct, tr.in.operand_types[0].dtype, tr.s));
        },
};
// No derivative flows through stop_gradient (and it has no transpose).
const DerivativeRules kStopGradient{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};

// Functions of two operands (NumPy broadcasting: a cotangent is summed over
// the dimensions its operand was broadcast along, `unbroadcast`).

// d(x + y) = dx + dy; (x + y)^T ct = (ct, ct)
const DerivativeRules kAdd{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      if (j.has(0) && j.has(1)) return j.e.add(j.t(0), j.t(1), j.span());
      return j.to_result_shape(j.has(0) ? j.t(0) : j.t(1));
    },
    .transpose =
        [](TransposeContext &tr) {
          for (size_t k = 0; k < 2; ++k)
            if (tr.in.linear[k]) tr.give(k, tr.e.unbroadcast(tr.ct, tr.shape(k), tr.s));
        },
};
// d(x - y) = dx - dy; (x - y)^T ct = (ct, -ct)
const DerivativeRules kSub{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      if (j.has(0) && j.has(1)) return j.e.sub(j.t(0), j.t(1), j.span());
      return j.to_result_shape(j.has(0) ? j.t(0) : j.e.neg(j.t(1), j.span()));
    },
    .transpose =
        [](TransposeContext &tr) {
          if (tr.in.linear[0]) tr.give(0, tr.e.unbroadcast(tr.ct, tr.shape(0), tr.s));
          if (tr.in.linear[1])
            tr.give(1, tr.e.unbroadcast(tr.e.neg(tr.ct, tr.s), tr.shape(1), tr.s));
        },
};
// d(x y) = dx y + x dy; (x * c)^T ct = ct * c
const DerivativeRules kMul{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      std::optional<ir::ValueId> d;
      if (j.has(0)) d = j.e.mul(j.t(0), j.x[1], j.span());
      if (j.has(1)) {
        ir::ValueId term = j.e.mul(j.x[0], j.t(1), j.span());
        d = d ? j.e.add(*d, term, j.span()) : term;
      }
      return d;
    },
    .transpose =
        [](TransposeContext &tr) {
          for (size_t k = 0; k < 2; ++k)
            if (tr.in.linear[k])
              tr.give(k, tr.e.unbroadcast(tr.e.mul(tr.ct, tr.c(1 - k), tr.s), tr.shape(k), tr.s));
        },
};
// d(x / y) = (dx - r dy) / y; (x / c)^T ct = ct / c
const DerivativeRules kDiv{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      ir::ValueId num;
      if (j.has(0) && j.has(1))
        num = j.e.sub(j.t(0), j.e.mul(j.r, j.t(1), j.span()), j.span());
      else if (j.has(0))
        num = j.t(0);
      else
        num = j.e.neg(j.e.mul(j.r, j.t(1), j.span()), j.span());
      return j.to_result_shape(j.e.div(num, j.x[1], j.span()));
    },
    .transpose =
        [](TransposeContext &tr) {
          tr.give(0, tr.e.unbroadcast(tr.e.div(tr.ct, tr.c(1), tr.s), tr.shape(0), tr.s));
        },
};
// piecewise constant: d(x // y) = 0
const DerivativeRules kFloorDiv{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
// d(x % y) = dx - (x // y) dy
const DerivativeRules kRem{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      std::optional<ir::ValueId> d;
      if (j.has(0)) d = j.to_result_shape(j.t(0));
      if (j.has(1)) {
        ir::ValueId q = j.e.op(OpCode::FloorDiv, {j.x[0], j.x[1]}, {}, j.span());
        ir::ValueId term = j.e.mul(q, j.t(1), j.span());
        d = d ? j.e.sub(*d, term, j.span()) : j.e.neg(term, j.span());
      }
      return d;
    },
    .transpose = nullptr,
};
// d(x^y) = y x^(y-1) dx + log(x) r dy
const DerivativeRules kPow{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      std::optional<ir::ValueId> d;
      if (j.has(0)) {
        ir::ValueId ym1 = j.e.sub(j.x[1], j.e.scalar_like(j.x[1], 1, j.span()), j.span());
        ir::ValueId coeff =
            j.e.mul(j.x[1], j.e.op(OpCode::Pow, {j.x[0], ym1}, {}, j.span()), j.span());
        d = j.e.mul(coeff, j.t(0), j.span());
      }
      if (j.has(1)) {
        ir::ValueId term = j.e.mul(
            j.e.mul(j.e.op(OpCode::Log, {j.x[0]}, {}, j.span()), j.r, j.span()), j.t(1), j.span());
        d = d ? j.e.add(*d, term, j.span()) : term;
      }
      return j.to_result_shape(*d);
    },
    .transpose = nullptr,
};

namespace {
/// d max(x, y) = dx where x > y, else dy; d min(x, y) = dx where x < y, else dy.
Tangent extreme_jvp(JvpContext &j) {
  OpCode cmp = j.instr.op == OpCode::Max ? OpCode::Gt : OpCode::Lt;
  ir::ValueId pick = j.e.op(cmp, {j.x[0], j.x[1]}, {}, j.span());
  return j.e.op(OpCode::Select, {pick, j.t_or_zero(0), j.t_or_zero(1)}, {}, j.span());
}
}  // namespace

const DerivativeRules kMax{.family = kFamily, .jvp = extreme_jvp, .transpose = nullptr};
const DerivativeRules kMin{.family = kFamily, .jvp = extreme_jvp, .transpose = nullptr};
// Comparisons and logic: bool results, no tangent.
const DerivativeRules kLt{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kLe{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kGt{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kGe{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kEq{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kNe{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kAnd{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};
const DerivativeRules kOr{.family = kFamily, .jvp = no_tangent, .transpose = nullptr};

// d where(c, x, y) = where(c, dx, dy);
// where(c, x, y)^T ct = (where(c, ct, 0), where(c, 0, ct))
const DerivativeRules kSelect{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      if (!j.has(1) && !j.has(2)) return std::nullopt;
      return j.e.op(OpCode::Select, {j.x[0], j.t_or_zero(1), j.t_or_zero(2)}, {}, j.span());
    },
    .transpose =
        [](TransposeContext &tr) {
          ir::ValueId zero = tr.e.scalar_like(tr.ct, 0.0, tr.s);
          if (tr.in.linear[1])
            tr.give(1, tr.e.unbroadcast(tr.e.op(OpCode::Select, {tr.c(0), tr.ct, zero}, {}, tr.s),
                                        tr.shape(1), tr.s));
          if (tr.in.linear[2])
            tr.give(2, tr.e.unbroadcast(tr.e.op(OpCode::Select, {tr.c(0), zero, tr.ct}, {}, tr.s),
                                        tr.shape(2), tr.s));
        },
};

}  // namespace spmd::derivatives
