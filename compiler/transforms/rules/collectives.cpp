// transforms/rules/collectives.cpp — the JVP and transpose rules of the
// collectives: the design note's table. Linear collectives apply themselves
// to the tangents; each transpose moves no more data than the op did.
#include "transforms/rules/rules.h"

namespace spmd::derivatives {
namespace {

constexpr std::string_view kFamily = "collectives";

/// The same collective on the tangents.
Tangent linear_jvp(JvpContext &j) { return j.same_op_on_tangents(); }

}  // namespace

// psum^T = pbroadcast (no communication)
const DerivativeRules kPsum{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) { tr.give(0, tr.collective(OpCode::Pbroadcast, tr.axes_only())); },
};

// pmax, pmin: not differentiable (the derivative would have to pick the
// devices holding the extreme value).
const DerivativeRules kPextreme{
    .family = kFamily,
    .jvp = [](JvpContext &j) -> Tangent {
      throw TransformError(
          "not-differentiable", j.span(),
          "`" + std::string(op_spelling(j.instr.op)) +
              "` is not differentiable in spmdc (the derivative would have to pick the devices "
              "holding the extreme value); rewrite with psum, or keep it out of the path to the "
              "differentiated inputs");
    },
    .transpose = nullptr,
};

// pbroadcast^T = psum
const DerivativeRules kPbroadcast{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) { tr.give(0, tr.collective(OpCode::Psum, tr.axes_only())); },
};

// all_gather^T = psum_scatter
const DerivativeRules kAllGather{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose = [](TransposeContext &tr) { tr.give(0, tr.collective(OpCode::PsumScatter, tr.a)); },
};

// all_gather_invariant^T = pscatter (no communication)
const DerivativeRules kAllGatherInvariant{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose = [](TransposeContext &tr) { tr.give(0, tr.collective(OpCode::Pscatter, tr.a)); },
};

// psum_scatter^T = all_gather
const DerivativeRules kPsumScatter{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose = [](TransposeContext &tr) { tr.give(0, tr.collective(OpCode::AllGather, tr.a)); },
};

// pscatter^T = all_gather_invariant
const DerivativeRules kPscatter{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) { tr.give(0, tr.collective(OpCode::AllGatherInvariant, tr.a)); },
};

// all_to_all^T = all_to_all with split and concat swapped
const DerivativeRules kAllToAll{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) {
          Attrs ta = tr.a;
          std::swap(ta.collective().dim, ta.collective().concat_dim);
          tr.give(0, tr.collective(OpCode::AllToAll, ta));
        },
};

// ppermute^T = ppermute by the inverse permutation
const DerivativeRules kPpermute{
    .family = kFamily,
    .jvp = linear_jvp,
    .transpose =
        [](TransposeContext &tr) {
          Attrs ta = tr.a;
          for (auto &p : ta.collective().perm) std::swap(p.first, p.second);
          tr.give(0, tr.collective(OpCode::Ppermute, ta));
        },
};

// axis_index: an integer, no tangent.
const DerivativeRules kAxisIndex{
    .family = kFamily,
    .jvp = [](JvpContext &) -> Tangent { return std::nullopt; },
    .transpose = nullptr,
};

}  // namespace spmd::derivatives
