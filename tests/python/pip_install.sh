#!/bin/sh
# tests/python/pip_install.sh SOURCE_DIR PYTHON SPMDC HAVE_PYBIND11 CC CXX
#
# What issue 33 asks of the Python package: `pip install ./` into a fresh
# virtual environment works, and the installed package compiles, runs against
# NumPy, derives the CLI's text byte for byte and raises errors with spans
# (test_package.py). The build directory is build-python/ in the source tree
# (pyproject.toml), so the compiler's objects come from ccache, not a cold
# build. Exit 77 (skipped) without pybind11, a working venv, or PyPI.
set -u
src=$1 python=$2 spmdc=$3 have_pybind11=$4 cc=$5 cxx=$6
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$have_pybind11" = 1 ] || skip "pybind11 was not found when configuring (apt install pybind11-dev)"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
start=$(date +%s)
"$python" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 ||
  skip "\`$python -m venv\` does not work (apt install python3-venv): $(tail -1 "$tmp/venv.log")"
venv_python=$tmp/venv/bin/python
# The build backend from PyPI; no network (or no PyPI mirror) skips the test.
timeout 300 "$venv_python" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 20 \
  'scikit-build-core>=0.10' >"$tmp/pip.log" 2>&1 ||
  skip "cannot install scikit-build-core from PyPI: $(tail -1 "$tmp/pip.log")"
setup=$(date +%s)
cd "$src" || exit 1
# --no-build-isolation: the backend just installed, and the system's pybind11
# and NumPy; the wheel is built in build-python/ (pyproject.toml) with the
# compilers of this build (the same command lines, so ccache has the objects).
if ! "$venv_python" -m pip install --disable-pip-version-check --no-build-isolation \
    --config-settings=cmake.define.CMAKE_C_COMPILER="$cc" \
    --config-settings=cmake.define.CMAKE_CXX_COMPILER="$cxx" ./ \
    >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAILED: pip install ./"
  exit 1
fi
installed=$(date +%s)
grep -E "ccache|Building|Successfully" "$tmp/install.log" | tail -3
# Import from the venv, not from the source tree's python/ folder.
cd "$tmp" || exit 1
"$venv_python" "$src/tests/python/test_package.py" "$src" "$spmdc" || exit 1
done_at=$(date +%s)
echo "times: venv + scikit-build-core $((setup - start)) s, pip install ./ $((installed - setup)) s," \
     "tests $((done_at - installed)) s"
