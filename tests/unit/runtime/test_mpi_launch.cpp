// tests/unit/runtime/test_mpi_launch.cpp — the launch checks of the MPI executors.
//
// Pure functions (no MPI call, built with and without MPI): the world-size
// check and the GPU each process of the CUDA MPI executor drives, written out
// by hand for the launches users make (mpirun on one node, srun binding one GPU
// per task, more processes than GPUs).
#include "rt_test_util.h"
#include "spmdrt/mpi.h"

using namespace spmd::rt;

TEST_CASE("MPI world size must equal the mesh size", "[runtime][mpi]") {
  ProgramFunction f;
  f.name = "step";
  f.mesh = Mesh({{"x", 2}, {"y", 4}});
  CHECK(check_world_size(8, f).empty());
  const std::string e = check_world_size(3, f);
  CHECK(e.find("3 processes") != std::string::npos);
  CHECK(e.find("`step` runs on a mesh of 8 positions") != std::string::npos);
  CHECK(e.find("mpirun -np 8") != std::string::npos);
  CHECK(e.find("srun -n 8") != std::string::npos);
  CHECK(check_world_size(1, f).find("1 process but") != std::string::npos);
}

TEST_CASE("the CUDA MPI executor's GPU per process", "[runtime][mpi]") {
  // mpirun -np 4 on a node of 4 or 8 GPUs: local rank r drives GPU r.
  for (int r = 0; r < 4; ++r) {
    CHECK(choose_gpu(r, 4, 4).device == r);
    CHECK(choose_gpu(r, 4, 8).device == r);
    CHECK(choose_gpu(r, 4, 8).error.empty());
  }
  // srun --gpus-per-task=1: each of the node's 4 processes sees its own GPU as device 0.
  for (int r = 0; r < 4; ++r) CHECK(choose_gpu(r, 4, 1).device == 0);
  // One process, one GPU (the single-GPU machine).
  CHECK(choose_gpu(0, 1, 1).device == 0);
  // 4 processes sharing 2 GPUs: refused, with the fix.
  const GpuChoice shared = choose_gpu(3, 4, 2);
  CHECK(shared.device == -1);
  CHECK(shared.error.find("4 processes of this job but each sees 2 GPUs") != std::string::npos);
  CHECK(shared.error.find("--gpus-per-task=1") != std::string::npos);
  // No GPU at all.
  CHECK(choose_gpu(0, 1, 0).device == -1);
  CHECK(choose_gpu(0, 1, 0).error.find("sees no GPU") != std::string::npos);
}
