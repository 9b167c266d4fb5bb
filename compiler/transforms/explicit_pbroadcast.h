// transforms/explicit_pbroadcast.h — makes a function's variance readable from its text.
//
// In the IR a constant (a creation op: a literal, zeros, full, iota) may be
// typed with any variance: it is the same on every device, so typing it
// varying inserts no communication. Printed as source, though, a constant is a
// literal again, and the checker re-derives its variance only where the
// language lets it adapt a literal to its context (ops/variance_rules.h,
// ir/verifier.h): as an operand of a non-collective op beside a value that
// carries the variance, as a loop's initial or next value, as a shmap's
// result. Anywhere else — a collective's or a call's operand, an op whose
// operands are all constants, a def's result — the printed program would see
// an invariant constant and either be rejected with auto pbroadcast off or,
// worse, mean something else.
//
// make_pbroadcasts_explicit rewrites those uses to read `pbroadcast(c, axes)`
// of an invariant copy of the constant:
//   1. walk each block in order (loop bodies first, then the loop itself);
//   2. for each use of a constant typed varying in a position where its
//      variance would not be re-derived, insert (once per block and constant)
//      an invariant copy and a pbroadcast to the constant's variance just
//      before the user, and read that instead; for an op whose operands are
//      all constants, only the first operand needs it;
//   3. for a loop, simulate how the checker types the printed loop (its
//      carried variance is the least fixpoint from its initial values, a
//      constant counting as invariant) and make each constant initial value
//      explicit whose carried variance that fixpoint would not reach;
//   4. drop the constants no longer used.
// derive() runs it on every derived function, the pipeline on every checked
// one, so `spmdc print` and the derived programs re-check with automatic
// pbroadcast insertion off and compute the same values (a pbroadcast of a
// constant is the constant). The verifier checks the result.
#pragma once

#include "ir/ir.h"

namespace spmd {

/// `origin` marks the inserted pbroadcasts (AutoPbroadcast for checked user
/// programs, so `print --types` shows them as inserted).
void make_pbroadcasts_explicit(const ir::Module &module, ir::Function &function, ir::Origin origin);

/// Every function of the module.
void make_pbroadcasts_explicit(ir::Module &module, ir::Origin origin);

}  // namespace spmd
