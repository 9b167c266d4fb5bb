// runtime/mpi/mpi_launch.cpp — launch checks shared by the CPU and CUDA MPI executors.
//
// Built with and without MPI (it calls no MPI function).
#include "spmdrt/mpi.h"

namespace spmd::rt {

std::string check_world_size(int world_size, const ProgramFunction &f) {
  const int64_t n = f.mesh.num_devices();
  if (world_size == n) return "";
  return "this MPI job has " + std::to_string(world_size) + " process" +
         (world_size == 1 ? "" : "es") + " but `" + f.name + "` runs on a mesh of " +
         std::to_string(n) + " positions " + format_mesh(f.mesh) +
         ", one per process; start it with `mpirun -np " + std::to_string(n) + "` (or `srun -n " +
         std::to_string(n) + "`)";
}

GpuChoice choose_gpu(int local_rank, int local_size, int visible) {
  if (visible >= local_size) return {local_rank, ""};
  if (visible == 1) return {0, ""};
  if (visible == 0)
    return {-1, "this process sees no GPU (CUDA_VISIBLE_DEVICES is empty, or no GPU is installed)"};
  return {-1, "a node runs " + std::to_string(local_size) +
                  " processes of this job but each sees " + std::to_string(visible) +
                  " GPUs; start at most one process per GPU on each node, or bind one GPU to "
                  "each process (`srun --gpus-per-task=1`)"};
}

}  // namespace spmd::rt
