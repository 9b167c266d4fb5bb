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

}  // namespace spmd::rt
