// analysis/layout.cpp — see layout.h.
#include "analysis/layout.h"

#include <map>

namespace spmd {

int64_t ArrayLayout::replicas() const {
  return blocks.empty() ? 0 : static_cast<int64_t>(blocks[0].devices.size());
}

ArrayLayout array_layout(const rt::Mesh &mesh, const rt::Shape &global,
                         const rt::PartitionSpec &spec) {
  ArrayLayout layout;
  layout.global = global;
  layout.local = rt::local_shape(mesh, global, spec);
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;  // start -> devices
  std::vector<std::vector<int64_t>> start_of(static_cast<size_t>(mesh.num_devices()));
  for (int64_t device = 0; device < mesh.num_devices(); ++device) {
    std::vector<int64_t> start(global.size(), 0);
    for (size_t d = 0; d < spec.size(); ++d)
      start[d] = mesh.rank_in_group(device, spec[d]) * layout.local[d];
    holders[start].push_back(device);
    start_of[static_cast<size_t>(device)] = std::move(start);
  }
  std::map<std::vector<int64_t>, size_t> index;
  for (auto &[start, devices] : holders) {
    index[start] = layout.blocks.size();
    layout.blocks.push_back({start, devices});
  }
  for (const std::vector<int64_t> &start : start_of) layout.block_of_device.push_back(index[start]);
  return layout;
}

}  // namespace spmd
