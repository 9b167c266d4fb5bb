// transforms/rules/layout.cpp — the JVP and transpose rules of the layout ops
// (reshape ... dynamic_update_slice, constrain). All are linear in the array
// they move: the JVP applies the op to the tangents (indices are data, not
// differentiated), the transpose moves the cotangent back.
#include "transforms/rules/rules.h"

namespace spmd::derivatives {
namespace {

constexpr std::string_view kFamily = "layout";

/// The same op on the tangents.
Tangent linear_jvp(JvpContext &j) { return j.same_op_on_tangents(); }

}  // namespace

// reshape^T = reshape back
const DerivativeRules kReshape{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose = [](TransposeContext &tr) { tr.give(0, tr.e.reshape(tr.ct, tr.shape(0), tr.s)); },
};

// transpose^T = transpose by the inverse permutation
const DerivativeRules kTranspose{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) {
          Attrs ta;
          ta.layout().dims.resize(tr.a.layout().dims.size());
          for (size_t d = 0; d < tr.a.layout().dims.size(); ++d)
            ta.layout().dims[tr.a.layout().dims[d]] = static_cast<int64_t>(d);
          tr.give(0, tr.e.op(OpCode::Transpose, {tr.ct}, ta, tr.s));
        },
};

// flip^T = the same flip
const DerivativeRules kReverse{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) { tr.give(0, tr.e.op(OpCode::Reverse, {tr.ct}, tr.a, tr.s)); },
};

// broadcast^T = sum over the broadcast dims
const DerivativeRules kBroadcastTo{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) { tr.give(0, tr.e.unbroadcast(tr.ct, tr.shape(0), tr.s)); },
};

// slice^T = pad with zeros
const DerivativeRules kSlice{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) {
          Attrs ta;
          ta.layout().shape = tr.shape(0);
          ta.layout().start = tr.a.layout().start;
          ta.layout().stride = tr.a.layout().stride;
          tr.give(0, tr.e.op(OpCode::Pad, {tr.ct}, ta, tr.s));
        },
};

// pad^T = slice out the placed elements
const DerivativeRules kPad{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) {
          const LayoutAttrs &l = tr.a.layout();
          Attrs ta;
          ta.layout().start = l.start;
          ta.layout().stride = l.stride;
          for (size_t d = 0; d < tr.shape(0).size(); ++d) {
            int64_t n = tr.shape(0)[d];
            ta.layout().limit.push_back(n == 0 ? l.start[d]
                                               : l.start[d] + (n - 1) * l.stride[d] + 1);
          }
          tr.give(0, tr.e.op(OpCode::Slice, {tr.ct}, ta, tr.s));
        },
};

// concat^T = the slices
const DerivativeRules kConcat{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) {
          const int64_t dim = tr.a.layout().dim;
          int64_t offset = 0;
          for (size_t k = 0; k < tr.instr.operands.size(); ++k) {
            const Shape &sk = tr.shape(k);
            if (tr.in.linear[k]) {
              Attrs ta;
              const Shape full = tr.e.type(tr.ct).shape;
              ta.layout().start.assign(full.size(), 0);
              ta.layout().limit = full;
              ta.layout().stride.assign(full.size(), 1);
              ta.layout().start[dim] = offset;
              ta.layout().limit[dim] = offset + sk[dim];
              tr.give(k, tr.e.op(OpCode::Slice, {tr.ct}, ta, tr.s));
            }
            offset += sk[dim];
          }
        },
};

// Linear in x; the index is data. ^T = write ct into zeros at the index.
const DerivativeRules kDynamicSlice{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.op(j.instr.op, {j.t(0), j.x[1]}, j.a, j.span());
    },
    .transpose =
        [](TransposeContext &tr) {
          ir::ValueId zeros = tr.e.zeros(tr.in.operand_types[0], tr.s);
          Attrs ta;
          ta.layout().dim = tr.a.layout().dim;
          tr.give(0, tr.e.op(OpCode::DynamicUpdateSlice, {zeros, tr.ct, tr.c(1)}, ta, tr.s));
        },
};

// Linear in x and the update together. ^T = (ct with the block zeroed, the block).
const DerivativeRules kDynamicUpdateSlice{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      return j.e.op(j.instr.op, {j.t_or_zero(0), j.t_or_zero(1), j.x[2]}, j.a, j.span());
    },
    .transpose =
        [](TransposeContext &tr) {
          if (tr.in.linear[0]) {
            ir::ValueId zeros = tr.e.zeros(tr.in.operand_types[1], tr.s);
            tr.give(0, tr.e.op(OpCode::DynamicUpdateSlice, {tr.ct, zeros, tr.c(2)}, tr.a, tr.s));
          }
          if (tr.in.linear[1]) {
            Attrs ta;
            ta.layout().dim = tr.a.layout().dim;
            ta.layout().shape = tr.shape(1);
            tr.give(1, tr.e.op(OpCode::DynamicSlice, {tr.ct, tr.c(2)}, ta, tr.s));
          }
        },
};

// The identity (a sharding hint): constrain^T ct = constrain(ct)
const DerivativeRules kConstrain{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) { tr.give(0, tr.e.op(OpCode::Constrain, {tr.ct}, tr.a, tr.s)); },
};

}  // namespace spmd::derivatives
