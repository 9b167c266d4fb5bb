// spmdrt/collectives.h — the collectives of one mesh position, over a Fabric.
//
// A DeviceContext is what a per-device body (interpreted or emitted) calls for
// communication. It checks the arguments (dimensions, divisibility, permutation
// pairs) and hands the call to a Fabric, the transport: the simulated fabric
// here (one thread per mesh position, collectives in shared memory) or the MPI
// fabric of spmdrt/mpi.h (one process per mesh position). Every fabric gives
// the results of the table in docs/runtime.md.
//
// run_on_mesh starts one thread per device of the mesh and calls `body` on each
// with a DeviceContext on the simulated fabric. Inside, every device of a group
// calls the same collective in the same order (SPMD); the call blocks until the
// whole group has arrived. Reductions add contributions in group-rank order 0,
// 1, ..., n-1, so results are bit-for-bit reproducible. If any device throws,
// the others are released from their waits (they throw CollectiveAborted) and
// run_on_mesh rethrows the first error.
//
// Axes are given as mesh axis indices; a collective over several axes acts on
// the group of devices that differ only along them (see Mesh::group_of).
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "spmdrt/kernels.h"
#include "spmdrt/mesh.h"

namespace spmd::rt {

class CollectiveAborted : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

/// A permutation of a group: (source rank, destination rank) pairs.
using PermutePairs = std::vector<std::pair<int64_t, int64_t>>;

/// The transport behind DeviceContext. Arguments arrive checked and normalised
/// (dimensions in range, divisible extents, a one-to-one permutation); `device`
/// is the calling mesh position. Semantics as documented on DeviceContext.
class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual const Mesh &mesh() const = 0;
  virtual Tensor all_reduce(int64_t device, const Tensor &x, const std::vector<int> &axes,
                            ReduceOp op) = 0;
  virtual Tensor all_gather(int64_t device, const Tensor &x, const std::vector<int> &axes,
                            int64_t dim, bool tiled) = 0;
  virtual Tensor reduce_scatter(int64_t device, const Tensor &x, const std::vector<int> &axes,
                                int64_t dim, bool tiled) = 0;
  virtual Tensor all_to_all(int64_t device, const Tensor &x, const std::vector<int> &axes,
                            int64_t split_dim, int64_t concat_dim) = 0;
  virtual Tensor ppermute(int64_t device, const Tensor &x, const std::vector<int> &axes,
                          const PermutePairs &perm) = 0;
  virtual void barrier(int64_t device) = 0;
};

class DeviceContext {
 public:
  DeviceContext(Fabric &fabric, int64_t device);
  int64_t device() const { return device_; }
  const Mesh &mesh() const;
  /// Rank of this device along the listed axes (first axis major).
  int64_t axis_index(const std::vector<int> &axes) const;

  /// psum / pmax / pmin: every member gets the reduction of all members' x.
  Tensor all_reduce(const Tensor &x, const std::vector<int> &axes, ReduceOp op);
  /// A combined psum/pmax/pmin of several tensors (`psum((a, b), axes)`): the
  /// tensors of one dtype are packed into one buffer and reduced by a single
  /// collective (one per dtype present), then unpacked. Each element is reduced
  /// exactly as by all_reduce(x), so the results are the same bits. (Here and
  /// in the combined all_gather and reduce_scatter, a tensor of more than 128 KiB
  /// of buffer per device is not packed: it runs as its own collective.)
  std::vector<Tensor> all_reduce(const std::vector<Tensor> &xs, const std::vector<int> &axes,
                                 ReduceOp op);
  /// all_gather: concatenation of all members' x along `dim` in rank order
  /// (tiled); untiled stacks them in a new leading dimension at `dim`.
  Tensor all_gather(const Tensor &x, const std::vector<int> &axes, int64_t dim, bool tiled);
  /// A combined all_gather of several tensors (`all_gather((a, b), axes)`),
  /// each along `dim`: the tensors of one dtype are packed into one buffer and
  /// gathered by a single collective (one per dtype present), then each result
  /// is assembled from the members' pieces. The same bits as all_gather(x).
  std::vector<Tensor> all_gather(const std::vector<Tensor> &xs, const std::vector<int> &axes,
                                 int64_t dim, bool tiled);
  /// psum_scatter: the sum of all members' x, of which member r keeps block r
  /// along `dim` (tiled: x.shape[dim] divisible by the group size; untiled:
  /// x.shape[dim] equals the group size and the dimension is removed).
  Tensor reduce_scatter(const Tensor &x, const std::vector<int> &axes, int64_t dim, bool tiled);
  /// A combined psum_scatter of several tensors (`psum_scatter((a, b), axes)`):
  /// the tensors of one dtype are packed so that the buffer's block r holds
  /// block r of each, reduce-scattered by a single collective (one per dtype
  /// present), then unpacked. Each element is summed in the same rank order as
  /// by reduce_scatter(x), so the results are the same bits.
  std::vector<Tensor> reduce_scatter(const std::vector<Tensor> &xs, const std::vector<int> &axes,
                                     int64_t dim, bool tiled);
  /// all_to_all: split x into n blocks along split_dim, send block j to member j,
  /// concatenate the received blocks along concat_dim in sender-rank order.
  Tensor all_to_all(const Tensor &x, const std::vector<int> &axes, int64_t split_dim,
                    int64_t concat_dim);
  /// ppermute over `axes`: for each (src, dst) pair the member of rank dst
  /// receives x from rank src (ranks in the group, first axis major); members
  /// that receive nothing get zeros.
  Tensor ppermute(const Tensor &x, const std::vector<int> &axes, const PermutePairs &perm);
  /// Waits for every device of the mesh.
  void barrier();

 private:
  Fabric *fabric_;
  int64_t device_;
};

/// The most devices a simulated mesh runs (one thread each; about 0.1 MiB of
/// memory and 0.25 ms to start per device, measured): docs/limits.md.
inline constexpr int64_t kMaxSimulatedDevices = 4096;

/// Runs `body` once per device of `mesh`, each on its own thread, and waits.
/// Throws RuntimeError for a mesh of more than kMaxSimulatedDevices devices.
void run_on_mesh(const Mesh &mesh, const std::function<void(DeviceContext &)> &body);

}  // namespace spmd::rt
