// backend/toolchain.h — finding the runtime and invoking the C++ / CUDA compilers.
//
// `spmdc build` compiles the emitted source with the C++ compiler that built
// spmdc (CPU target) or with nvcc (CUDA target) and links it against the
// runtime: libspmdrt (+ OpenBLAS, pthreads) and, for CUDA, libspmdrt_cuda,
// NCCL, cuBLAS and the CUDA runtime. The runtime is looked for in the build
// tree spmdc was built in and in the install prefix (`cmake --install`),
// whichever matches where the running spmdc lives; SPMDC_RUNTIME_PREFIX (an
// environment variable naming a prefix with include/ and lib/) overrides both.
// All paths come from a header generated at configure time
// (spmdc_build_config.h). Compilers run without a shell (posix_spawn).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace spmd::backend {

struct Toolchain {
  std::string where;        // "build tree /x/build" or "install prefix /usr/local"
  std::string cxx;          // the C++ compiler that built spmdc
  std::string include_dir;  // holds spmdrt/*.h
  std::string lib_dir;      // holds libspmdrt.a (and libspmdrt_cuda.a)
  std::vector<std::string> blas_libraries;
  std::vector<std::string> mpi_libraries;  // empty without MPI (spmdrt_mpi is then stubs)
  bool have_cuda = false;                  // CUDA toolkit + NCCL found at configure time
  std::string nvcc, cuda_include_dir, cuda_lib_dir, nccl_include_dir, nccl_library, cuda_arch;
};

/// The toolchain, or nullopt with `error` explaining what is missing.
std::optional<Toolchain> find_toolchain(std::string &error);

/// True when spmdc was configured with a CUDA toolkit and NCCL.
bool cuda_configured();

/// Whether this machine shows spmdc a GPU now, at run time: the NVIDIA device
/// files exist, the CUDA driver (libcuda.so.1) loads and reports at least one
/// device (so CUDA_VISIBLE_DEVICES= hides them). `why` says what was found or
/// missing, for the one-line note of `spmdc build`.
bool gpu_visible(std::string &why);

/// The command line compiling `source` into the executable `output`.
std::vector<std::string> compile_command(const Toolchain &tc, Target target,
                                         const std::string &source, const std::string &output);

/// Runs argv[0] with argv (searching PATH when it has no '/'); returns its exit
/// status, or -1 with `error` set when it could not be started.
int run_process(const std::vector<std::string> &argv, std::string &error);

}  // namespace spmd::backend
