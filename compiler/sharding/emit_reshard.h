// sharding/emit_reshard.h — a reshard plan as IR instructions.
//
// emit_reshard appends the collectives of a connect() plan to a shmap body
// (lower_plan.h for `spmdc shard`, reshard_program for `spmdc reshard
// --program`). all_gather is emitted typed varying (so its transpose is a
// psum_scatter) only when the consumer varies along the gathered axes anyway
// and no later step slices along them; otherwise all_gather_invariant.
#pragma once

#include <string>

#include "ir/builder.h"
#include "sharding/connect.h"

namespace spmd::sharding {

/// Appends `plan`'s steps applied to x; every instruction gets `comment`
/// (with "(step k of n)" when there are several) and `name`. Returns the
/// resharded value.
ir::ValueId emit_reshard(ir::Builder &b, ir::ValueId x, const ReshardPlan &plan,
                         AxisSet consumer_varying, const std::string &comment,
                         const std::string &name, SourceSpan span);

/// Types the (only) shmap of an emitted module: infer_variance places the
/// pbroadcasts, which then stay as written ones (auto insertion off), and the
/// verifier checks it. A failure is a compiler bug (std::logic_error naming `what`).
void finish_emitted_module(ir::Module &module, const std::string &what);

/// A module with mesh `M` and one shmap `reshard` that takes an array laid
/// out as `src` and returns it laid out as `dst` by `plan`. A partial source
/// is passed as its parts: an extra leading dimension of size n (the number
/// of devices along the partial axes) split over those axes, whose sum is
/// the array.
ir::Module reshard_program(const rt::Mesh &mesh, const Shape &global, DType dtype,
                           const Sharding &src, const Sharding &dst, const ReshardPlan &plan);

}  // namespace spmd::sharding
