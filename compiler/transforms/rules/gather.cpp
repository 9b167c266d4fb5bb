// transforms/rules/gather.cpp — the JVP and transpose rules of take and
// scatter_add, each other's transposes (the ids are data, not differentiated).
#include "transforms/rules/rules.h"

namespace spmd::derivatives {

// d take(x, ids) = take(dx, ids); take(x, ids)^T ct = scatter_add(zeros like x, ct, ids)
const DerivativeRules kTake{
    .family = "gather",
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.op(j.instr.op, {j.t(0), j.x[1]}, j.a, j.span());
    },
    .transpose =
        [](TransposeContext &tr) {
          ir::ValueId zeros = tr.e.zeros(tr.in.operand_types[0], tr.s);
          tr.give(0, tr.e.op(OpCode::ScatterAdd, {zeros, tr.ct, tr.c(1)}, tr.a, tr.s));
        },
};

// d scatter_add(x, u, ids) = scatter_add(dx, du, ids);
// scatter_add(x, u, ids)^T ct = (ct, take(ct, ids))
const DerivativeRules kScatterAdd{
    .family = "gather",
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.op(j.instr.op, {j.t_or_zero(0), j.t_or_zero(1), j.x[2]}, j.a, j.span());
    },
    .transpose =
        [](TransposeContext &tr) {
          if (tr.in.linear[0]) tr.give(0, tr.ct);
          if (tr.in.linear[1]) tr.give(1, tr.e.op(OpCode::Take, {tr.ct, tr.c(2)}, tr.a, tr.s));
        },
};

}  // namespace spmd::derivatives
