// transforms/rules/reductions.cpp — the JVP and transpose rules of sum, max,
// min, argmax and argmin.
#include "transforms/rules/rules.h"

namespace spmd::derivatives {
namespace {
constexpr std::string_view kFamily = "reductions";
}  // namespace

// sum is linear: d sum(x) = sum(dx); sum^T ct = ct broadcast back over the reduced dims
const DerivativeRules kReduceSum{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent { return j.e.op(j.instr.op, {j.t(0)}, j.a, j.span()); },
    .transpose =
        [](TransposeContext &tr) {
          tr.give(0, tr.e.expand_reduced(tr.ct, tr.shape(0), tr.a.reduce().dims, tr.s));
        },
};

// max, min: the tangent flows from the elements equal to the extreme,
// averaged over ties: dr = sum(m dx) / sum(m), m = (x == r broadcast back).
const DerivativeRules kReduceExtreme{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      const Type xt = j.e.type(j.x[0]);
      ir::ValueId back = j.e.expand_reduced(j.r, xt.shape, j.a.reduce().dims, j.span());
      ir::ValueId mask =
          j.e.cast(j.e.op(OpCode::Eq, {j.x[0], back}, {}, j.span()), xt.dtype, j.span());
      ir::ValueId num =
          j.e.reduce_sum(j.e.mul(mask, j.t(0), j.span()), j.a.reduce().dims, j.span());
      ir::ValueId den = j.e.reduce_sum(mask, j.a.reduce().dims, j.span());
      return j.e.div(num, den, j.span());
    },
    .transpose = nullptr,
};

// argmax, argmin: integer results have no tangent.
const DerivativeRules kArgExtreme{
    .family = kFamily,
    .jvp = [](JvpContext &) -> Tangent { return std::nullopt; },
    .transpose = nullptr,
};

}  // namespace spmd::derivatives
