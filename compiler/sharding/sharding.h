// sharding/sharding.h — how one global array is laid out over a mesh.
//
// A Sharding is a partition spec (per dimension, the mesh axes it is split
// over, major first) plus the set of axes along which the devices hold
// *partial sums* of the array instead of the array itself (the value is the
// sum over those axes; a contraction over a split index leaves one). Every
// other axis replicates the array. This is what the sharding phase reasons
// about: the in/out specs of the shmap it emits are shardings without
// partial axes, and every value of the emitted body varies exactly along
// the axes its sharding uses (sharding/lower_plan.h checks it).
//
// Text form (docs/sharding.md): `P(x, None)`, `P((x, y))`, `P()`, and with
// partial sums `P(x, partial=y)` / `P(partial=(x, y))`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/types.h"
#include "spmdrt/mesh.h"

namespace spmd::sharding {

struct Sharding {
  rt::PartitionSpec dims;  // one entry per dimension (major axis first)
  AxisSet partial;         // axes along which devices hold partial sums

  /// The axes that split some dimension.
  AxisSet split_axes() const;
  /// split_axes() and partial: the axes along which devices hold different data.
  AxisSet used() const { return split_axes() | partial; }
  bool complete() const { return partial.empty(); }
  bool operator==(const Sharding &) const = default;
  bool operator<(const Sharding &o) const;
};

/// Not split, not partial.
Sharding replicated(size_t rank);
/// The sharding of a written spec (padded to `rank` dimensions).
Sharding from_spec(const rt::PartitionSpec &spec, size_t rank);

/// `P(x, None)`, `P(x, partial=y)`, `P(partial=(x, y))` (trailing `None`s dropped).
std::string to_string(const Sharding &s, const rt::Mesh &mesh);
/// Parses the text form; on failure returns nullopt and a sentence in `error`.
std::optional<Sharding> parse_sharding(const std::string &text, const rt::Mesh &mesh, size_t rank,
                                       std::string &error);

/// True when every split dimension's size is divisible by its axes' product
/// and no axis is used twice.
bool fits(const rt::Mesh &mesh, const Shape &global, const Sharding &s);
/// The per-device block of a `global`-shaped array under `s`.
Shape local_shape(const rt::Mesh &mesh, const Shape &global, const Sharding &s);
/// Bytes of one device's block.
double local_bytes(const rt::Mesh &mesh, const Shape &global, DType dtype, const Sharding &s);

/// True when the mesh has at most kExhaustiveReshardAxes axes (sharding/budget.h):
/// reshards are searched over every layout.
bool exhaustive_mesh(const rt::Mesh &mesh);

/// Non-empty subsets of `axes` (each in the order of `axes`; at most the
/// first 16 axes take part).
std::vector<std::vector<int>> nonempty_subsets(const std::vector<int> &axes);

/// Every way to give each mesh axis of size > 1 to at most one of the slots,
/// in every order within a slot, such that each slot's size is divisible by
/// the product of its axes: result[k][slot] = the axes of that slot, major
/// first. The assignment with no axes comes first; at most `max` are listed
/// (the enumeration stops there: on 16 axes there are 4^16 for three slots). (Slots are the
/// dimensions of an array, or the factors of an op's sharding rule.) Without `all_orders`, the axes
/// of a slot are listed in mesh order only.
inline constexpr size_t kMaxAssignments = 4096;
std::vector<std::vector<std::vector<int>>> axis_assignments(const rt::Mesh &mesh,
                                                            const std::vector<int64_t> &slot_sizes,
                                                            bool all_orders = true,
                                                            size_t max = kMaxAssignments);

/// Every complete sharding of a `global`-shaped array (each mesh axis of size
/// > 1 splits at most one dimension, in any order), replicated first; at
/// most `max`.
std::vector<Sharding> all_layouts(const rt::Mesh &mesh, const Shape &global, bool all_orders = true,
                                  size_t max = kMaxAssignments);

}  // namespace spmd::sharding
