// runtime/mpi/mpi_unavailable.cpp — spmdrt_mpi without MPI (spmdrt/mpi.h).
//
// Built instead of the mpi_*.cpp files when CMake found no MPI, so that every
// executable links the same way: the MPI executor is absent (an empty
// factory) and asking for MPI says why.
#include "spmdrt/mpi.h"

namespace spmd::rt {
namespace {

[[noreturn]] void unavailable() {
  throw RuntimeError(
      "this runtime was built without MPI (OpenMPI was not found when spmdc was configured; "
      "install libopenmpi-dev and openmpi-bin, then reconfigure)");
}

}  // namespace

bool mpi_available() { return false; }

std::unique_ptr<MpiProcesses> start_mpi_processes() { unavailable(); }

std::unique_ptr<Fabric> make_mpi_fabric(const Mesh &, bool) { unavailable(); }

void run_on_mpi_mesh(MpiProcesses &, const Mesh &, const std::function<void(DeviceContext &)> &) {
  unavailable();
}

ExecutorFactory mpi_cpu_executor(const std::vector<ProgramFunction> &,
                                 const std::vector<CpuBody> &) {
  return nullptr;
}

}  // namespace spmd::rt
