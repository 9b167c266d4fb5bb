#!/usr/bin/env bash
# find_package.sh BUILD_DIR SOURCE_DIR — the installed tree, used from outside.
#
# 1. `cmake --install` into a temporary prefix, then MOVE the tree: nothing in
#    it may depend on where it was installed.
# 2. The expected files are there; `spmdc --version` names the commit.
# 3. An external CMake project (tests/packaging/external) finds spmdc with
#    find_package, links spmdc::spmdrt and builds a .spmd program with
#    spmdc_add_program; both executables run, and the program prints exactly
#    what `spmdc run` prints. A version the tree does not satisfy is refused.
# 4. pkg-config: the same runtime program built with `pkg-config --cflags --libs spmdrt`.
# 5. The moved spmdc's `spmdc build` links the moved runtime, not the build tree.
# 6. CUDA is a component: find_package(spmdc) never looks for the CUDA toolkit (it
#    succeeds with the toolkit made unfindable, as on a CPU-only laptop, whatever
#    this tree was built with); COMPONENTS cuda fails there with a reason, and
#    finds spmdc::spmdrt_cuda where the tree has CUDA and the toolkit is present.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/staged" >/dev/null
mv "$tmp/staged" "$tmp/moved"
prefix=$tmp/moved
libdir=$(sed -n 's/^libdir=\${prefix}\///p' "$(find "$prefix" -name spmdrt.pc)")

for f in bin/spmdc "$libdir/libspmdrt.a" include/spmdrt/tensor.h include/spmdrt/program.h \
         "$libdir/cmake/spmdc/spmdcConfig.cmake" "$libdir/cmake/spmdc/spmdcConfigVersion.cmake" \
         "$libdir/cmake/spmdc/spmdcTargets.cmake" "$libdir/pkgconfig/spmdrt.pc" \
         share/man/man1/spmdc.1 share/bash-completion/completions/spmdc \
         share/zsh/vendor-completions/_spmdc share/spmdc/stdlib/std/nn.spmd \
         share/spmdc/samples/collectives101.spmd share/spmdc/samples/global/tp_mlp.spmd \
         share/spmdc/exercises/01-replicate/starter.spmd share/spmdc/exercises/README.md \
         share/spmdc/editors/vim/syntax/spmd.vim share/spmdc/editors/vscode/package.json \
         share/spmdc/editors/textmate/spmd.tmLanguage.json bin/spmdc-grade; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
if grep -rlF "$tmp/staged" "$prefix" >/dev/null; then
  fail "the installed tree names the prefix it was installed to: $(grep -rlF "$tmp/staged" "$prefix")"
fi
"$prefix/bin/spmdc" --version | grep -Eq '^spmdc [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}|unknown' \
  || fail "spmdc --version: $("$prefix/bin/spmdc" --version)"

# 3. find_package from another project.
cmake -S "$src/tests/packaging/external" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure"; }
grep -q "^stdlib=$prefix/share/spmdc/stdlib$" "$tmp/consumer/found.txt" || fail "spmdc_STDLIB_DIR: $(cat "$tmp/consumer/found.txt")"
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build"; }
"$tmp/consumer/uses_runtime" | grep -q "uses_runtime: ok" || fail "uses_runtime"
# x = [-7.5, -6.5, ..., 7.5] (8 x 2): sum(relu(x)) = 0.5 + 1.5 + ... + 7.5 = 32.
"${PYTHON:-python3}" -c "import numpy as np; np.save('$tmp/x.npy', (np.arange(16, dtype=np.float32) - 7.5).reshape(8, 2))"
"$tmp/consumer/psum_program" --in "x=$tmp/x.npy" >"$tmp/exe.out"
"$prefix/bin/spmdc" run "$src/tests/packaging/external/psum.spmd" --in "x=$tmp/x.npy" >"$tmp/run.out"
diff "$tmp/exe.out" "$tmp/run.out" || fail "the spmdc_add_program executable and spmdc run differ"
tr '\n' ' ' <"$tmp/run.out" | grep -Eq '^total: f32\[\] \(global\) = *32\.? *$' \
  || fail "expected total = 32: $(cat "$tmp/run.out")"
# ConfigVersion: this tree is 0.x; asking for 99 must fail.
mkdir -p "$tmp/too_new"
echo 'cmake_minimum_required(VERSION 3.22)
project(too_new LANGUAGES CXX)
find_package(spmdc 99 REQUIRED)' >"$tmp/too_new/CMakeLists.txt"
if cmake -S "$tmp/too_new" -B "$tmp/too_new/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
  fail "find_package(spmdc 99) succeeded"
fi

# 4. pkg-config.
cflags_libs=$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags --libs spmdrt)
case "$cflags_libs" in *"$prefix"*) ;; *) fail "pkg-config does not point into the moved tree: $cflags_libs" ;; esac
# shellcheck disable=SC2086
c++ "$src/tests/packaging/external/uses_runtime.cpp" $cflags_libs -o "$tmp/pc_uses_runtime"
"$tmp/pc_uses_runtime" | grep -q "uses_runtime: ok" || fail "pkg-config build"

# 5. The moved compiler uses the moved runtime.
"$prefix/bin/spmdc" build "$src/tests/packaging/external/psum.spmd" --target cpu \
    -o "$tmp/psum_built" --show-command 2>"$tmp/cmd.txt"
grep -q "runtime from install prefix $prefix" "$tmp/cmd.txt" || fail "spmdc build: $(cat "$tmp/cmd.txt")"
"$tmp/psum_built" --in "x=$tmp/x.npy" | diff - "$tmp/run.out" || fail "spmdc build from the moved tree"
# 6. CUDA as a component.
cuda=$(sed -n 's/^cuda=//p' "$tmp/consumer/found.txt")
mkdir -p "$tmp/cpu_only"
cat >"$tmp/cpu_only/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(cpu_only LANGUAGES CXX)
find_package(spmdc REQUIRED ${WANT})
file(WRITE ${CMAKE_BINARY_DIR}/found.txt "cuda_found=${spmdc_cuda_FOUND}\n")
if(TARGET spmdc::spmdrt_cuda)
  file(APPEND ${CMAKE_BINARY_DIR}/found.txt "cuda_target=yes\n")
endif()
CMAKE
no_cuda=(-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=TRUE -DCMAKE_PREFIX_PATH="$prefix")
cmake -S "$tmp/cpu_only" -B "$tmp/cpu_only/b1" "${no_cuda[@]}" >"$tmp/cpu1.log" 2>&1 \
  || { cat "$tmp/cpu1.log"; fail "find_package(spmdc) needs CUDA (built with cuda=$cuda)"; }
grep -q "cuda_target" "$tmp/cpu_only/b1/found.txt" && fail "spmdc::spmdrt_cuda defined without the component"
if cmake -S "$tmp/cpu_only" -B "$tmp/cpu_only/b2" "${no_cuda[@]}" "-DWANT=COMPONENTS;cuda" \
     >"$tmp/cpu2.log" 2>&1; then
  fail "find_package(spmdc COMPONENTS cuda) succeeded without a CUDA toolkit"
fi
grep -q "component .cuda. is not available" "$tmp/cpu2.log" \
  || { cat "$tmp/cpu2.log"; fail "no reason given for the missing cuda component"; }
if [ "$cuda" = ON ]; then
  cmake -S "$tmp/cpu_only" -B "$tmp/cpu_only/b3" -DCMAKE_PREFIX_PATH="$prefix" \
        "-DWANT=OPTIONAL_COMPONENTS;cuda" >"$tmp/cpu3.log" 2>&1 || { cat "$tmp/cpu3.log"; fail "cuda component"; }
  grep -q "cuda_target=yes" "$tmp/cpu_only/b3/found.txt" || fail "OPTIONAL_COMPONENTS cuda: no spmdc::spmdrt_cuda"
fi
echo "find_package: ok"
