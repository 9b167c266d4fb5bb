// analysis/layout.h — which block of a global array each device holds.
//
// The rule is the runtime's own (rt::local_shape, rt::Mesh::rank_in_group, as
// rt::shard uses them): along dimension d, a device holds block number
// rank_in_group(device, spec[d]) of size global[d] / group_size(spec[d]);
// dimensions the spec leaves out are whole. Devices that differ only along
// mesh axes the spec does not mention hold the same block (a replica).
// `spmdc show` draws these layouts (analysis/picture.h).
#pragma once

#include <cstdint>
#include <vector>

#include "spmdrt/mesh.h"

namespace spmd {

/// One distinct block of the global array and the devices that hold it.
struct LayoutBlock {
  std::vector<int64_t> start;    // per dimension, the first global index
  std::vector<int64_t> devices;  // ascending
};

struct ArrayLayout {
  rt::Shape global, local;
  std::vector<LayoutBlock> blocks;      // ordered by start, row-major
  std::vector<size_t> block_of_device;  // device -> index into blocks
  int64_t replicas() const;             // devices per block
};

/// The layout of an array of shape `global` under `spec` on `mesh`. Throws
/// rt::RuntimeError when the spec does not fit (as rt::local_shape does).
ArrayLayout array_layout(const rt::Mesh &mesh, const rt::Shape &global,
                         const rt::PartitionSpec &spec);

}  // namespace spmd
