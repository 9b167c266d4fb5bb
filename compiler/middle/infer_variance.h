// middle/infer_variance.h — device-variance inference and pbroadcast insertion.
//
// infer_variance computes the variance of every value of every shmap (and of
// the def instances it calls) and makes the program well typed under the
// rules of ops/variance_rules.h:
//   1. parameters vary along exactly the axes their in_spec mentions;
//   2. each instruction in order: operands of a non-collective op are lifted
//      to the union of their variance; a collective that needs a varying
//      operand gets one; an invariant operand where a collective needs one
//      varying, or a varying one where it needs one invariant, is reported;
//   3. calls specialise their def instance for the arguments' variance (a def
//      called with different variance becomes several functions); a call of
//      a shmap lifts each argument to the axes its in_spec maps (one varying
//      along an axis the in_spec leaves out is an error) and its results vary
//      along the axes of their out_specs; a call of a derivative
//      (`grad(f)(x)`) first builds it (middle/derived_functions.h) from `f`
//      checked — a def typed for the variance the arguments give it — and
//      then is typed as a call of the shmap or def it is;
//   4. annotated values (`w: f32[]{i} = ...`) are checked and lifted;
//   5. each returned value must be invariant along every axis its out_spec
//      leaves out (otherwise an error naming the axis and where its variance
//      came from) and is lifted along the axes the out_spec mentions.
// Lifting inserts `pbroadcast` (Origin::AutoPbroadcast), at most once per
// value and axis set. With auto-pbroadcast off (the function attribute or the
// CLI flag), every place that would need one is an error whose fix names the
// `pbroadcast` to write.
#pragma once

#include "ir/ir.h"
#include "support/diagnostics.h"

namespace spmd {

void infer_variance(ir::Module &module, DiagnosticEngine &diags);

}  // namespace spmd
