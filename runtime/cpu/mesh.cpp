// runtime/cpu/mesh.cpp — Mesh coordinates, device groups and host-side sharding.
//
// Devices are numbered row-major over the mesh axes. A dimension split over
// several axes is divided into prod(sizes) equal blocks; the block a device holds
// is the linear index of its coordinates along those axes, the first listed axis
// major. Axes a spec does not mention replicate the array.
#include "spmdrt/mesh.h"

#include <algorithm>

#include "internal.h"
#include "spmdrt/kernels.h"

namespace spmd::rt {

using detail::fail;

Mesh::Mesh(std::vector<MeshAxis> axes) : axes_(std::move(axes)) {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].size <= 0) {
      fail("mesh axis '" + axes_[i].name + "' has non-positive size " +
           std::to_string(axes_[i].size));
    }
    for (size_t j = 0; j < i; ++j) {
      if (axes_[j].name == axes_[i].name) fail("duplicate mesh axis name '" + axes_[i].name + "'");
    }
    num_devices_ *= axes_[i].size;
  }
}

int Mesh::find_axis(const std::string &name) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int64_t> Mesh::coords(int64_t device) const {
  if (device < 0 || device >= num_devices_) {
    fail("device " + std::to_string(device) + " out of range for a mesh of " +
         std::to_string(num_devices_) + " devices");
  }
  std::vector<int64_t> c(axes_.size());
  for (int64_t i = static_cast<int64_t>(axes_.size()) - 1; i >= 0; --i) {
    c[i] = device % axes_[i].size;
    device /= axes_[i].size;
  }
  return c;
}

int64_t Mesh::device_at(const std::vector<int64_t> &coords) const {
  if (coords.size() != axes_.size()) fail("device_at: wrong number of coordinates");
  int64_t device = 0;
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (coords[i] < 0 || coords[i] >= axes_[i].size) fail("device_at: coordinate out of range");
    device = device * axes_[i].size + coords[i];
  }
  return device;
}

namespace {

void check_axes(const Mesh &mesh, const std::vector<int> &group_axes) {
  for (size_t i = 0; i < group_axes.size(); ++i) {
    int a = group_axes[i];
    if (a < 0 || a >= static_cast<int>(mesh.axes().size())) {
      fail("mesh axis index " + std::to_string(a) + " out of range for a mesh with " +
           std::to_string(mesh.axes().size()) + " axes");
    }
    for (size_t j = 0; j < i; ++j) {
      if (group_axes[j] == a) fail("mesh axis '" + mesh.axes()[a].name + "' listed twice");
    }
  }
}

}  // namespace

int64_t Mesh::group_size(const std::vector<int> &group_axes) const {
  check_axes(*this, group_axes);
  int64_t size = 1;
  for (int a : group_axes) size *= axes_[a].size;
  return size;
}

int64_t Mesh::rank_in_group(int64_t device, const std::vector<int> &group_axes) const {
  check_axes(*this, group_axes);
  const std::vector<int64_t> c = coords(device);
  int64_t rank = 0;
  for (int a : group_axes) rank = rank * axes_[a].size + c[a];
  return rank;
}

std::vector<int64_t> Mesh::group_of(int64_t device, const std::vector<int> &group_axes) const {
  const int64_t size = group_size(group_axes);
  std::vector<int64_t> c = coords(device);
  std::vector<int64_t> members(static_cast<size_t>(size));
  for (int64_t rank = 0; rank < size; ++rank) {
    int64_t r = rank;
    for (int64_t i = static_cast<int64_t>(group_axes.size()) - 1; i >= 0; --i) {
      c[group_axes[i]] = r % axes_[group_axes[i]].size;
      r /= axes_[group_axes[i]].size;
    }
    members[rank] = device_at(c);
  }
  return members;
}

namespace {

void check_spec(const Mesh &mesh, const Shape &global, const PartitionSpec &spec) {
  if (spec.size() > global.size()) {
    fail("partition spec has " + std::to_string(spec.size()) + " entries for an array of rank " +
         std::to_string(global.size()));
  }
  std::vector<int> all;
  for (const auto &axes : spec) all.insert(all.end(), axes.begin(), axes.end());
  check_axes(mesh, all);  // also rejects an axis used by two dimensions
}

}  // namespace

Shape local_shape(const Mesh &mesh, const Shape &global, const PartitionSpec &spec) {
  check_spec(mesh, global, spec);
  Shape local = global;
  for (size_t d = 0; d < spec.size(); ++d) {
    const int64_t parts = mesh.group_size(spec[d]);
    if (global[d] % parts != 0) {
      fail("dimension " + std::to_string(d) + " of size " + std::to_string(global[d]) + " (shape " +
           shape_str(global) + ") is not divisible into " + std::to_string(parts) + " shards");
    }
    local[d] = global[d] / parts;
  }
  return local;
}

Block block_of(const Mesh &mesh, const Shape &global, const PartitionSpec &spec, int64_t device) {
  Block block{Shape(global.size(), 0), local_shape(mesh, global, spec)};
  for (size_t d = 0; d < spec.size(); ++d)
    block.start[d] = mesh.rank_in_group(device, spec[d]) * block.extent[d];
  return block;
}

bool keeps_block(const Mesh &mesh, const PartitionSpec &spec, int64_t device) {
  std::vector<bool> mapped(mesh.axes().size(), false);
  for (const auto &axes : spec)
    for (int a : axes) mapped.at(static_cast<size_t>(a)) = true;
  const std::vector<int64_t> c = mesh.coords(device);
  for (size_t a = 0; a < c.size(); ++a)
    if (!mapped[a] && c[a] != 0) return false;
  return true;
}

Tensor shard(const Mesh &mesh, const Tensor &global, const PartitionSpec &spec, int64_t device) {
  const Block block = block_of(mesh, global.shape(), spec, device);
  std::vector<int64_t> limit(block.start.size()), stride(block.start.size(), 1);
  for (size_t d = 0; d < limit.size(); ++d) limit[d] = block.start[d] + block.extent[d];
  return slice(global, block.start, limit, stride);
}

Tensor unshard(const Mesh &mesh, const std::vector<Tensor> &locals, const PartitionSpec &spec) {
  if (static_cast<int64_t>(locals.size()) != mesh.num_devices()) {
    fail("unshard: got " + std::to_string(locals.size()) + " local arrays for a mesh of " +
         std::to_string(mesh.num_devices()) + " devices");
  }
  const Tensor &first = locals[0];
  Shape global = first.shape();
  if (spec.size() > global.size()) {
    fail("partition spec has " + std::to_string(spec.size()) + " entries for an array of rank " +
         std::to_string(global.size()));
  }
  for (size_t d = 0; d < spec.size(); ++d) global[d] *= mesh.group_size(spec[d]);
  check_spec(mesh, global, spec);
  Tensor out = Tensor::empty(first.dtype(), global);
  const std::vector<int64_t> strides = detail::row_major_strides(global);
  const size_t esize = dtype_size(first.dtype());
  for (int64_t device = 0; device < mesh.num_devices(); ++device) {
    const Tensor &block = locals[device];
    if (block.dtype() != first.dtype() || block.shape() != first.shape()) {
      fail("unshard: device " + std::to_string(device) + " holds " + dtype_name(block.dtype()) +
           shape_str(block.shape()) + " but device 0 holds " + dtype_name(first.dtype()) +
           shape_str(first.shape()));
    }
    if (!keeps_block(mesh, spec, device)) continue;
    int64_t offset = 0;
    for (size_t d = 0; d < spec.size(); ++d) {
      offset += mesh.rank_in_group(device, spec[d]) * block.shape()[d] * strides[d];
    }
    detail::strided_copy(out.raw() + offset * esize, strides, block.raw(),
                         detail::row_major_strides(block.shape()), block.shape(), esize);
  }
  return out;
}

}  // namespace spmd::rt
