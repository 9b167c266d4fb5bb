// spmdrt/mpi.h — the MPI executor: one process per mesh position (library spmdrt_mpi).
//
// An executable started by `mpirun -np N` or `srun -n N` runs as N processes;
// world rank r runs mesh position r (devices are numbered row-major over the
// mesh axes, so rank r has the coordinates Mesh::coords(r)), and the world size
// must equal the mesh size. Every collective of the language becomes an MPI
// call on a communicator of the ranks that differ only along its axes
// (MPI_Comm_split of the world, made on first use and cached):
//
//   psum/pmax/pmin -> MPI_Allreduce        all_gather   -> MPI_Allgather (+ unpack)
//   psum_scatter   -> MPI_Reduce_scatter_block (pack first)
//   all_to_all     -> MPI_Alltoall (pack, unpack)   ppermute -> MPI_Isend/MPI_Irecv pairs
//
// with the same packing as the CUDA runtime. By default reductions are MPI's
// own (fast; sums may differ from `spmdc run` in the last bits, since MPI
// chooses the order). Deterministic mode reduces in group-rank order exactly
// as the simulated fabric does — an all-to-all of slices, each rank reducing
// one slice, then an all-gather: the same bytes moved as a ring all-reduce,
// plus one extra copy — so results are bit-identical to `spmdc run`.
//
// Built without MPI (OpenMPI not found when spmdc was configured), the library
// holds stubs: mpi_available() is false, mpi_cpu_executor() returns an empty
// factory and start_mpi_processes() throws.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spmdrt/collectives.h"
#include "spmdrt/program.h"

namespace spmd::rt {

/// True when spmdrt_mpi was built with MPI.
bool mpi_available();

/// The processes of an MPI job. Made by start_mpi_processes, which calls
/// MPI_Init; MPI_Finalize runs when it is destroyed.
class MpiProcesses : public Processes {
 public:
  /// This process's rank among the processes of its node (the GPU it drives),
  /// from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
  virtual int local_rank() const = 0;
  /// The number of this job's processes on this node.
  virtual int local_size() const = 0;
  /// Collective over the world: waits for every process.
  virtual void barrier() = 0;
};

/// Initialises MPI (once per process). Throws RuntimeError when built without MPI.
std::unique_ptr<MpiProcesses> start_mpi_processes();

/// A fabric whose collectives are MPI calls among the world's processes, each
/// running the mesh position equal to its world rank. `deterministic`: rank-order
/// reductions, bit-identical to the simulated fabric.
std::unique_ptr<Fabric> make_mpi_fabric(const Mesh &mesh, bool deterministic);

/// A runner for code that talks through the collectives itself (`spmdc-profile`):
/// calls `body` once with this process's DeviceContext (mesh position =
/// world rank) on a fabric over the world's processes. The world size must equal
/// mesh.num_devices() (RuntimeError otherwise); BLAS threads share the node's
/// cores between the job's processes, as in executables. Throws without MPI.
void run_on_mpi_mesh(MpiProcesses &processes, const Mesh &mesh,
                     const std::function<void(DeviceContext &)> &body);

/// Why an MPI job of `world_size` processes cannot run `f` ("" when it can: one
/// process per mesh position), with the launch command that would.
std::string check_world_size(int world_size, const ProgramFunction &f);

/// The GPU a process of the CUDA MPI executor drives, or why there is none.
/// `local_rank`/`local_size`: this process and the job's processes on its node;
/// `visible`: the GPUs this process sees. When it sees at least one per process
/// of the node, GPU `local_rank` (mpirun on a node); when it sees exactly one,
/// that GPU (the launcher bound one GPU per process: `srun --gpus-per-task=1`,
/// or CUDA_VISIBLE_DEVICES set per rank); otherwise an error naming the fix.
struct GpuChoice {
  int device = -1;    ///< the CUDA device number, or -1
  std::string error;  ///< "" when device >= 0
};
GpuChoice choose_gpu(int local_rank, int local_size, int visible);

/// The CPU MPI executor (empty without MPI): this process runs mesh position
/// rank; check_launch requires world size == mesh size.
ExecutorFactory mpi_cpu_executor(const std::vector<ProgramFunction> &functions,
                                 const std::vector<CpuBody> &bodies);

}  // namespace spmd::rt
