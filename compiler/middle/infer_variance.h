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
//      (`grad(f)(x)`) is typed from the derived function's signature
//      (transforms/derived_signature.h) computed from `f` checked — a def
//      typed for the variance the arguments give it: the derived function is
//      declared in the module (its signature only) and the call points at
//      the declaration; the check script's next step builds it
//      (pipeline/derived_functions.h);
//   4. annotated values (`w: f32[]{i} = ...`) are checked and lifted;
//   5. each returned value must be invariant along every axis its out_spec
//      leaves out (otherwise an error naming the axis and where its variance
//      came from) and is lifted along the axes the out_spec mentions.
// Lifting inserts `pbroadcast` (Origin::AutoPbroadcast), at most once per
// value and axis set. With auto-pbroadcast off (the function attribute or the
// CLI flag), every place that would need one is an error whose fix names the
// `pbroadcast` to write.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/diagnostics.h"

namespace spmd {

/// A derivative a call names, declared by infer_variance: module.functions
/// [index] holds its signature only until pipeline/derived_functions.h
/// builds it as derivative `step` of function `base` (checked, or an earlier
/// pending derivative: `grad(jvp(f))`).
struct PendingDerivative {
  int index = -1;
  int base = -1;
  ir::DeriveStep step;
};

/// A call through derivatives (`grad(loss, wrt=w)(...)`): where an error
/// building one of them is reported.
struct DerivedCallSite {
  SourceSpan span;
  std::string text;                    // as written: `grad(loss, wrt=w)`
  std::vector<size_t> chain;           // its derivatives, innermost first (into pending)
  std::vector<DiagnosticLabel> notes;  // the calls of defs it sits in, innermost first
};

struct DerivedCalls {
  std::vector<PendingDerivative> pending;  // in the order met: a base before its derivative
  std::vector<DerivedCallSite> sites;
};

/// Types every shmap and the def instances they call; returns the
/// derivatives declared (each to build before the module is complete).
DerivedCalls infer_variance(ir::Module &module, DiagnosticEngine &diags);

}  // namespace spmd
