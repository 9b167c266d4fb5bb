#!/usr/bin/env bash
# Installs every Debian package spmdc needs to build and test.
# Safe to run again; uses sudo when not root.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PKGS=(
  build-essential cmake ninja-build
  antlr4 libantlr4-runtime-dev   # grammar tool (4.7.2) and C++ runtime (4.9)
  libcli11-dev libspdlog-dev     # command line and logging
  nlohmann-json3-dev             # --diagnostics-format=json
  catch2                         # unit tests (v2)
  libopenblas-dev                # BLAS for matmul/einsum on the CPU
  coinor-libcbc-dev              # CBC solves the automatic sharding ILP (spmdc shard --auto)
  libopenmpi-dev openmpi-bin     # the MPI executor of built executables; mpirun for its tests
  python3 python3-numpy          # test helpers read/write .npy with NumPy
  ccache                         # rebuilds; the Python package's build reuses the main build's objects
  pybind11-dev python3-dev       # the Python module spmdc._spmdc (python/, docs/python.md)
  python3-venv python3-pip       # its test: `pip install ./` into a fresh venv
  python3-nbclient python3-ipykernel python3-jupyter-client  # docs/notebooks/ run in a real kernel
  python3-nbconvert chromium     # a notebook rendered to HTML and screenshotted headless (~290 MB)
  bc                             # bench/build_vs_run.sh arithmetic
  dpkg-dev file pkg-config       # packaging tests: CPack's Debian package, pkg-config
  man-db zsh                     # packaging tests: the man page renders, zsh completion parses
  vim                            # editors/vim is tested in a headless Vim
  neovim                         # docs/lsp.md's Neovim (0.7) setup is tested headless
  fortunes-min fortunes          # English text for samples/gpt (/usr/share/games/fortunes)
  libxsmm-dev libblis4-serial    # bench/kernels_bench's peers: small-GEMM JIT, BLIS (its libblas
                                 # alternative ranks below OpenBLAS's, which stays the BLAS)
  libdnnl2                       # oneDNN: products the runtime hands it on AVX2 (opened at run time)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
