# Packaging.cmake — a Debian package with CPack: `cpack --config build/CPackConfig.cmake`
# (or `cmake --build build --target package`) writes spmdc_<version>_<arch>.deb.
#
# It installs under /usr exactly what `cmake --install` installs. Depends:
# the shared libraries spmdc links (found by dpkg-shlibdeps: libc, libstdc++,
# the ANTLR runtime, spdlog/fmt, OpenBLAS), plus what `spmdc build` runs: a
# C++20 compiler (g++) and OpenBLAS's development files to link executables
# (and Open MPI's, when built with MPI: every executable links the MPI executor).
# A package built with CUDA records that toolkit's location, like the build
# itself; CUDA is not a Debian package and is not declared. Recommends
# python3-numpy: the exercises' grader (bin/spmdc-grade) needs it.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "spmdc")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "the spmdc developers")
set(CPACK_PACKAGE_CONTACT "spmdc developers <spmdc-dev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "compiler for SPMD programs over a named device mesh (shard_map style)")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "spmdc checks .spmd programs whose types carry dtype, local shape and device\n\
variance, derives their transposes and gradients as new source, runs them on a\n\
simulated mesh on the CPU and builds executables for the CPU or CUDA + NCCL.\n\
Includes the spmdrt runtime library with CMake and pkg-config files.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "g++ (>= 4:12), libopenblas-dev")
if(SPMDC_HAVE_MPI)  # built executables link libspmdrt_mpi.a and Open MPI; mpirun starts them
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libopenmpi-dev")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin, cmake, pkg-config, python3-numpy")
else()
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "cmake, pkg-config, python3-numpy")
endif()
# BLIS and oneDNN take some products on x86 when installed (opened at run time:
# runtime/cpu/kernels_gemm.cpp); without them OpenBLAS computes everything.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion, libblis4-serial, libdnnl2")
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
include(CPack)
