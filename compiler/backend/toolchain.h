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
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace spmd::backend {

struct Toolchain {
  std::string where;        // "build tree /x/build" or "install prefix /usr/local"
  std::string cxx;          // the C++ compiler that built spmdc
  std::string include_dir;  // holds spmdrt/*.h
  std::string lib_dir;      // holds libspmdrt.a (and libspmdrt_cuda.a)
  // lib_dir/spmdc-pch/cpu_program.h when its precompiled .gch is there, made with this
  // spmdc's compiler and flags (its .key) and newer than every header; else empty.
  std::string pch_header;
  std::vector<std::string> blas_libraries;
  std::vector<std::string> mpi_libraries;  // empty without MPI (spmdrt_mpi is then stubs)
  bool have_cuda = false;                  // CUDA toolkit + NCCL found at configure time
  std::string nvcc, cuda_include_dir, cuda_lib_dir, nccl_include_dir, nccl_library, cuda_arch;
};

/// The toolchain, or nullopt with `error` explaining what is missing.
std::optional<Toolchain> find_toolchain(std::string &error);

/// True when spmdc was configured with a CUDA toolkit and NCCL.
bool cuda_configured();

/// A malformed --cxxflags or SPMDC_CXXFLAGS value.
class FlagsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Whether this machine shows spmdc a GPU now, at run time: the NVIDIA device
/// files exist, the CUDA driver (libcuda.so.1) loads and reports at least one
/// device (so CUDA_VISIBLE_DEVICES= hides them). `why` says what was found or
/// missing, for the one-line note of `spmdc build`.
bool gpu_visible(std::string &why);

/// Splits `text` into words as a POSIX shell does, without any expansion:
/// blanks separate words, '...' and "..." quote, a backslash escapes.
std::vector<std::string> split_flags(const std::string &text);

/// The user's extra host-compiler flags: the words of $SPMDC_CXXFLAGS, then
/// those of each --cxxflags value. Throws FlagsError on unbalanced quotes.
std::vector<std::string> host_compiler_flags(const std::vector<std::string> &cxxflags);

/// The command line compiling `source` into the executable `output`: the
/// toolchain's flags (with the sanitizer flags spmdc itself was built with,
/// which the runtime library needs at link time), then `extra_flags`. The CPU
/// target `-include`s the precompiled runtime header (tc.pch_header) only when
/// `extra_flags` is empty: a GCC PCH is valid only with the flags it was made
/// with. Paths that start with `-` are given as `./-...`, never as options.
std::vector<std::string> compile_command(const Toolchain &tc, Target target,
                                         const std::string &source, const std::string &output,
                                         const std::vector<std::string> &extra_flags = {});

/// `argv` as one line a POSIX shell reads back as the same words.
std::string shell_quote(const std::vector<std::string> &argv);

/// Runs argv[0] with argv (searching PATH when it has no '/') in a process
/// group of its own, which SIGINT/SIGTERM to spmdc stop too
/// (rt::set_child_process_group); returns its exit status, or -1 with
/// `error` set when it could not be started or was killed.
int run_process(const std::vector<std::string> &argv, std::string &error);

}  // namespace spmd::backend
