// transforms/rules/contractions.cpp — the JVP and transpose rules of einsum.
#include "ops/shape_rules.h"
#include "transforms/rules/rules.h"

namespace spmd::derivatives {

// Bilinear: d(x . y) = dx . y + x . dy. (A . B)^T for A: einsum("O,B->A", ct,
// B); indices of A found in neither O nor B were summed away: broadcast over them.
const DerivativeRules kEinsum{
    .family = "contractions",
    .jvp = [](JvpContext &j) -> Tangent {
      if (j.x.size() == 1) return j.e.op(OpCode::Einsum, {j.t(0)}, j.a, j.span());
      std::optional<ir::ValueId> d;
      if (j.has(0)) d = j.e.op(OpCode::Einsum, {j.t(0), j.x[1]}, j.a, j.span());
      if (j.has(1)) {
        ir::ValueId term = j.e.op(OpCode::Einsum, {j.x[0], j.t(1)}, j.a, j.span());
        d = d ? j.e.add(*d, term, j.span()) : term;
      }
      return d;
    },
    .transpose =
        [](TransposeContext &tr) {
          EinsumSpec spec;
          std::string error;
          parse_einsum(tr.a.einsum().spec, spec, error);
          for (size_t k = 0; k < spec.inputs.size(); ++k) {
            if (!tr.in.linear[k]) continue;
            // ct takes operand k's place, so transposing twice gives the einsum back.
            const std::string &target = spec.inputs[k];
            std::string others = spec.output;
            std::vector<ir::ValueId> ops = {tr.ct};
            EinsumSpec t;
            t.inputs.push_back(spec.output);
            if (spec.inputs.size() == 2) {
              t.inputs.insert(t.inputs.begin() + static_cast<std::ptrdiff_t>(1 - k),
                              spec.inputs[1 - k]);
              others += spec.inputs[1 - k];
              ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(1 - k), tr.c(1 - k));
            }
            std::string kept;
            Shape kept_shape;
            std::vector<int64_t> missing;
            for (size_t d = 0; d < target.size(); ++d) {
              if (others.find(target[d]) != std::string::npos) {
                kept += target[d];
              } else {
                missing.push_back(static_cast<int64_t>(d));
              }
            }
            t.output = kept;
            Attrs ta;
            ta.einsum().spec = einsum_to_string(t);
            ir::ValueId r = tr.e.op(OpCode::Einsum, ops, ta, tr.s);
            if (!missing.empty()) r = tr.e.expand_reduced(r, tr.shape(k), missing, tr.s);
            tr.give(k, r);
          }
        },
};

}  // namespace spmd::derivatives
