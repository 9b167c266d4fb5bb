// driver/version.cpp — `spmdc --version`.
//
// The commit comes from a header regenerated at every build
// (cmake/commit.cmake: `git rev-parse`, `-dirty` when tracked files changed,
// or the SPMDC_COMMIT cache variable for builds outside git); the rest from
// the configure-time spmdc_build_config.h that `spmdc build` also reads.
#include "driver/version.h"

#include "spmdc_build_config.h"
#include "sharding/ilp.h"
#include "spmdc_commit.h"

namespace spmd::driver {

std::string version_line() {
  std::string build_type = SPMDC_BUILD_TYPE;
  return std::string("spmdc ") + SPMDC_VERSION + " (commit " + SPMDC_COMMIT +
         (build_type.empty() ? "" : ", " + build_type) + ")";
}

std::string version_text() {
  std::string text = version_line() + "\n";
  text += "  C++ compiler: " SPMDC_CXX_COMPILER_ID " (" SPMDC_CXX_COMPILER ")\n";
  text += "  BLAS: OpenBLAS (" SPMDC_BLAS_LIBRARIES ")\n";
  text += sharding::ilp_solver_available()
              ? "  CBC: on: spmdc shard --auto solves its ILP with CBC\n"
              : "  CBC: off (coinor-libcbc-dev missing at configure time): spmdc shard --auto "
                "uses its dynamic program only\n";
  if (SPMDC_HAVE_CUDA)
    text += "  CUDA: on (toolkit " SPMDC_CUDA_VERSION ", NCCL, sm_" SPMDC_CUDA_ARCH
            "): spmdc build --target cuda";
  else
    text += "  CUDA: off (no CUDA toolkit with NCCL at configure time): CPU target only";
  return text;
}

}  // namespace spmd::driver
