#!/usr/bin/env bash
# deb.sh BUILD_DIR SOURCE_DIR — the Debian package (cmake/Packaging.cmake).
#
# 1. cpack builds it; `dpkg-deb --info` shows the package and its Depends: the
#    shared libraries spmdc links (from dpkg-shlibdeps) and what `spmdc build`
#    runs (g++, libopenblas-dev); when apt has package lists, every Depends
#    resolves on this Debian (`apt-get install --simulate`).
# 2. `dpkg-deb --contents`: the files under /usr, nothing under /usr/local,
#    no tests or benchmarks.
# 3. dpkg installs it into a throwaway root (its own database); the installed
#    spmdc checks and builds a sample there, linking the runtime of that root.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1) \
  || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/out/spmdc_*.deb)

dpkg-deb --info "$deb" >"$tmp/info"
grep -q "^ Package: spmdc$" "$tmp/info" || fail "package name"
depends=$(sed -n 's/^ Depends: //p' "$tmp/info")
echo "Depends: $depends"
for dep in libc6 libstdc++6 libantlr4-runtime libopenblas libspdlog "g++" libopenblas-dev; do
  case ", $depends" in *", $dep"*) ;; *) fail "Depends lacks $dep: $depends" ;; esac
done
if [ -n "$(apt-cache policy libc6 2>/dev/null | sed -n 's/ *Candidate: //p')" ]; then
  apt-get install --simulate -qq "$deb" >"$tmp/simulate.log" 2>&1 \
    || { cat "$tmp/simulate.log"; fail "the Depends do not resolve with apt"; }
else
  echo "note: apt has no package lists; Depends resolution not simulated"
fi

dpkg-deb --contents "$deb" | awk '{print $NF}' >"$tmp/contents"
for f in ./usr/bin/spmdc ./usr/lib/libspmdrt.a ./usr/include/spmdrt/tensor.h \
         ./usr/lib/cmake/spmdc/spmdcConfig.cmake ./usr/lib/cmake/spmdc/spmdcConfigVersion.cmake \
         ./usr/lib/pkgconfig/spmdrt.pc ./usr/share/man/man1/spmdc.1 \
         ./usr/share/bash-completion/completions/spmdc ./usr/share/zsh/vendor-completions/_spmdc \
         ./usr/share/spmdc/stdlib/std/nn.spmd ./usr/share/spmdc/samples/collectives101.spmd \
         ./usr/share/spmdc/exercises/01-replicate/starter.spmd ./usr/bin/spmdc-grade ./usr/bin/spmdc-profile \
         ./usr/share/spmdc/editors/vim/syntax/spmd.vim; do
  grep -qxF "$f" "$tmp/contents" || fail "not in the package: $f"
done
if grep -E '^\./usr/local|bench|/tests?/' "$tmp/contents"; then fail "unexpected files in the package"; fi
if grep -i 'solution' "$tmp/contents"; then fail "the package holds the exercises' answers"; fi

root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
# The throwaway root has no other packages: its dependencies are the host's.
dpkg --root="$root" --force-depends --force-not-root -i "$deb" >"$tmp/dpkg.log" 2>&1 \
  || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
dpkg --root="$root" -s spmdc | grep -q "^Status: install ok installed" || fail "dpkg status"
"$root/usr/bin/spmdc" --version | grep -q "^spmdc " || fail "--version"
"$root/usr/bin/spmdc" check "$src/samples/dp_mlp.spmd" || fail "check with the packaged stdlib"
"$root/usr/bin/spmdc" build "$src/samples/seed/example1.spmd" --target cpu -o "$tmp/ex1" \
    --show-command 2>"$tmp/cmd.txt" || { cat "$tmp/cmd.txt"; fail "build"; }
grep -q "runtime from install prefix $root/usr" "$tmp/cmd.txt" || fail "runtime: $(cat "$tmp/cmd.txt")"
"$tmp/ex1" --random 0 | diff - <("$root/usr/bin/spmdc" run "$src/samples/seed/example1.spmd" --random 0) \
  || fail "packaged build differs from run"
echo "deb: ok"
