// spmdrt/mesh.h — named device meshes, partition specs and host-side sharding.
//
// A mesh is an ordered list of named axes with sizes; devices are numbered in
// row-major order of their coordinates. A partition spec gives, per dimension
// of a global array, the mesh axes that dimension is split over (major to
// minor); an empty list means the dimension is not split.
#pragma once

#include <string>
#include <vector>

#include "spmdrt/tensor.h"

namespace spmd::rt {

struct MeshAxis {
  std::string name;
  int64_t size;
};

class Mesh {
 public:
  Mesh() = default;
  explicit Mesh(std::vector<MeshAxis> axes);
  const std::vector<MeshAxis> &axes() const { return axes_; }
  int64_t num_devices() const { return num_devices_; }
  int64_t axis_size(int axis) const { return axes_.at(axis).size; }
  /// Index of the axis named `name`, or -1.
  int find_axis(const std::string &name) const;
  /// Coordinates of device `device` (one per axis).
  std::vector<int64_t> coords(int64_t device) const;
  int64_t device_at(const std::vector<int64_t> &coords) const;

  /// The devices that share every coordinate of `device` except along `group_axes`,
  /// ordered by their rank in the group: the linear index of their coordinates
  /// along group_axes, the first listed axis major.
  std::vector<int64_t> group_of(int64_t device, const std::vector<int> &group_axes) const;
  /// Rank of `device` within its group over `group_axes` (see group_of).
  int64_t rank_in_group(int64_t device, const std::vector<int> &group_axes) const;
  int64_t group_size(const std::vector<int> &group_axes) const;

 private:
  std::vector<MeshAxis> axes_;
  int64_t num_devices_ = 1;
};

/// Per dimension, the mesh axis indices it is split over (major to minor).
using PartitionSpec = std::vector<std::vector<int>>;

/// The local (per-device) shape of a global array under `spec`.
Shape local_shape(const Mesh &mesh, const Shape &global, const PartitionSpec &spec);

/// A box of a global array: per dimension its first index and its extent.
struct Block {
  Shape start;
  Shape extent;
};
/// The block of a `global`-shaped array that `device` holds under `spec`.
Block block_of(const Mesh &mesh, const Shape &global, const PartitionSpec &spec, int64_t device);
/// True when `device`'s copy of its block is the one kept when blocks are
/// assembled (unshard) or written to a file: the device at coordinate 0 along
/// every mesh axis `spec` does not mention. Exactly one device per block.
bool keeps_block(const Mesh &mesh, const PartitionSpec &spec, int64_t device);
/// The block of `global` that `device` holds under `spec`.
Tensor shard(const Mesh &mesh, const Tensor &global, const PartitionSpec &spec, int64_t device);
/// Assembles a global array from every device's local block (indexed by device):
/// blocks are concatenated along mapped dimensions; for mesh axes the spec does
/// not mention, the copy of the device with coordinate 0 on those axes is used.
Tensor unshard(const Mesh &mesh, const std::vector<Tensor> &locals, const PartitionSpec &spec);

}  // namespace spmd::rt
