#!/usr/bin/env bash
# tests/backend/build_cli.sh — the command line of `spmdc build` and of built executables:
# the default target (cuda only when a GPU is visible), -q, building every shmap of a file
# without --fn, the executable's --fn / --version / --help, --cast and --out-dir (executable
# and spmdc run), the progress a build reports on a terminal, and when the precompiled runtime
# headers are used.
# Usage: build_cli.sh SPMDC SOURCE_DIR   (SPMDC_NO_CUDA=1 when spmdc was configured without CUDA)
set -u
SPMDC=$1; ROOT=$2
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
ok() { echo "ok   $*"; }

# 1. Default target, decided independently of spmdc: cuda only with CUDA configured and a GPU
#    that nvidia-smi lists; the note says which.
want=cpu
if [[ "${SPMDC_NO_CUDA:-0}" != 1 ]] && command -v nvidia-smi >/dev/null &&
   nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then want=cuda; fi
S=$ROOT/samples/seed/example1.spmd
"$SPMDC" build "$S" --emit-source "$W/ex1.src" 2>"$W/err" || fail "emit-source: $(cat "$W/err")"
if grep -q "^spmdc: note: building for target $want (" "$W/err" && [[ $(wc -l <"$W/err") -eq 1 ]]; then
  ok "default target $want: $(cat "$W/err")"
else
  fail "default target: want one note naming $want, got: $(cat "$W/err")"
fi
executor=$([[ $want == cuda ]] && echo cu::cuda_executor || echo rt::cpu_executor)
grep -q "$executor(functions(), bodies)" "$W/ex1.src" || fail "emitted source is not for $want"
# CUDA_VISIBLE_DEVICES= hides every GPU from the CUDA driver: cpu on any machine.
CUDA_VISIBLE_DEVICES= "$SPMDC" build "$S" --emit-source "$W/ex1.src" 2>"$W/err"
grep -q "^spmdc: note: building for target cpu (" "$W/err" && ok "CUDA_VISIBLE_DEVICES= gives cpu" ||
  fail "CUDA_VISIBLE_DEVICES=: $(cat "$W/err")"
# -q and an explicit --target print nothing.
for flags in "-q" "--target cpu"; do
  "$SPMDC" build "$S" $flags --emit-source "$W/ex1.src" 2>"$W/err"
  [[ -s "$W/err" ]] && fail "$flags printed: $(cat "$W/err")" || ok "$flags: no note"
done

# 2. Without --fn every shmap of the file is built; the executable then needs --fn.
F=$ROOT/samples/collective_matmul.spmd
"$SPMDC" build "$F" --target cpu -o "$W/cm" 2>"$W/err" || { fail "build without --fn: $(cat "$W/err")"; exit 1; }
"$W/cm" --random 3 >"$W/out" 2>"$W/err"; rc=$?
[[ $rc -eq 1 ]] && grep -qF "this program has 2 functions (\`allgather_matmul\`, \`allgather_matmul_reference\`); choose one with --fn NAME" "$W/err" &&
  ok "no default function" || fail "no default function: exit $rc, $(cat "$W/err")"
"$W/cm" --help | grep -q "^Functions (choose one with --fn):" && ok "--help says choose" || fail "--help"
for fn in allgather_matmul allgather_matmul_reference; do
  "$SPMDC" run "$F" --fn $fn --random 3 >"$W/want" || fail "spmdc run --fn $fn"
  "$W/cm" --fn $fn --random 3 >"$W/got" && cmp -s "$W/want" "$W/got" && ok "--fn $fn = spmdc run" ||
    fail "--fn $fn differs from spmdc run: $(diff "$W/want" "$W/got" | head -5)"
done
# With --fn the executable has a default, marked in --help.
"$SPMDC" build "$F" --target cpu --fn allgather_matmul_reference -o "$W/cm2" -q || fail "build --fn"
"$W/cm2" --random 3 >"$W/got" && "$SPMDC" run "$F" --fn allgather_matmul_reference --random 3 >"$W/want" &&
  cmp -s "$W/want" "$W/got" && ok "--fn default runs" || fail "--fn default"
"$W/cm2" --help | grep -q "allgather_matmul_reference(.*) on mesh (x: 4) (default)$" && ok "--help marks default" ||
  fail "--help default: $("$W/cm2" --help | tail -2)"

# 3. --version: the program, its target and the spmdc that built it (spmdc --version's first line).
want_version="cm (target cpu), built by $("$SPMDC" --version | head -1) from $F"
got=$("$W/cm" --version); rc=$?
[[ $rc -eq 0 && "$got" == "$want_version" ]] && ok "--version: $got" ||
  fail "--version: exit $rc, got '$got', want '$want_version'"
# 4. --cast and --out-dir, in the executable and in spmdc run alike. The f64 file holds the f32
#    file's values (multiples of 0.25), so both give the result of the f32 file, bit for bit.
D=$ROOT/tests/golden/run/data
"$SPMDC" build "$S" --target cpu -q -o "$W/ex1" || fail "build ex1"
"$W/ex1" --in x="$D/x_32x3.npy" >"$W/want" || fail "ex1 with the f32 file"
for runner in "$W/ex1" "$SPMDC run $S"; do
  name=${runner%% *}; name=${name##*/}
  $runner --in x="$D/x_32x3_f64.npy" >"$W/out" 2>"$W/err"; rc=$?
  [[ $rc -eq 1 ]] && grep -qF "holds f64[32, 3]; pass --cast to convert it to f32" "$W/err" &&
    ok "$name: f64 file refused, --cast suggested" || fail "$name without --cast: exit $rc, $(cat "$W/err")"
  $runner --in x="$D/x_32x3_f64.npy" --cast --out-dir "$W/out_$name/new/dir" >"$W/got" 2>"$W/err"; rc=$?
  [[ $rc -eq 0 ]] && cmp -s "$W/want" "$W/got" && ok "$name: --cast gives the f32 file's result" ||
    fail "$name --cast: exit $rc, $(cat "$W/err"; diff "$W/want" "$W/got")"
  grep -qF "note: input \`x\`: \`$D/x_32x3_f64.npy\` holds f64, cast to f32 (--cast)" "$W/err" &&
    [[ $(wc -l <"$W/err") -eq 1 ]] && ok "$name: one note" || fail "$name note: $(cat "$W/err")"
  [[ -f "$W/out_$name/new/dir/f1.npy" ]] && ok "$name: --out-dir created" || fail "$name: no $W/out_$name/new/dir/f1.npy"
done
cmp -s "$W/out_ex1/new/dir/f1.npy" "$W/out_spmdc/new/dir/f1.npy" && ok "same f1.npy" || fail "f1.npy differ"

# 5. Progress on a terminal (script(1) gives the build one), none without one or with -q.
if command -v script >/dev/null; then
  script -qec "\"$SPMDC\" build \"$F\" --target cpu -o \"$W/cm3\"" /dev/null >"$W/tty" 2>&1
  tr '\r' '\n' <"$W/tty" >"$W/tty.lines"
  for line in "spmdc: [1/3] checking $F" "spmdc: [2/3] emitted " "lines of C++ for 2 shmaps" \
              "spmdc: [3/3] compiling with "; do
    grep -qF -- "$line" "$W/tty.lines" || fail "progress: no '$line' in: $(cat "$W/tty.lines")"
  done
  grep -qE "^spmdc: \[3/3\] compiling with .*: done in [0-9]+\.[0-9] s" "$W/tty.lines" &&
    ok "progress on a terminal" || fail "progress: no compiler time in: $(cat "$W/tty.lines")"
  script -qec "\"$SPMDC\" build \"$F\" --target cpu -q -o \"$W/cm3\"" /dev/null >"$W/tty" 2>&1
  [[ ! -s "$W/tty" ]] && ok "-q: no progress" || fail "-q printed: $(cat "$W/tty")"
fi
"$SPMDC" build "$F" --target cpu -o "$W/cm3" 2>"$W/err"
[[ ! -s "$W/err" ]] && ok "no terminal: no progress" || fail "not a terminal, printed: $(cat "$W/err")"

# 6. The precompiled runtime headers (docs/backend.md, "Build latency"): `-include
#    <lib>/spmdc-pch/cpu_program.h` exactly when its .gch is there, its .key names this spmdc's
#    compiler and flags, no runtime header is newer, and the user adds no flags (a GCC PCH is
#    valid only with the flags it was made with). A prefix of links to the build tree's runtime
#    (SPMDC_RUNTIME_PREFIX) gives a PCH whose key and headers the test can change.
show() {  # show LOG ARGS...: the compiler command of `spmdc build --show-command ARGS`
  "$SPMDC" build "$S" --target cpu -q --show-command -o "$W/pch_exe" "${@:2}" 2>"$W/$1" ||
    fail "build $*: $(cat "$W/$1")"
  rm -rf "$(sed -n 's/^spmdc: source kept in \(.*\)\/program.cpp$/\1/p' "$W/$1")"
}
show pch0.err
lib=$(sed -n 's/^spmdc: runtime from build tree \(.*\)$/\1/p' "$W/pch0.err")/runtime
if [[ -f $lib/spmdc-pch/cpu_program.h.gch ]]; then
  grep -qF -- " -include $lib/spmdc-pch/cpu_program.h " "$W/pch0.err" && ok "PCH used" ||
    fail "PCH not used: $(cat "$W/pch0.err")"
  show pch1.err --cxxflags=-O2
  grep -qF -- "-include" "$W/pch1.err" && fail "PCH used with --cxxflags: $(cat "$W/pch1.err")" ||
    ok "no PCH with --cxxflags"
  SPMDC_CXXFLAGS=-DX show pch2.err
  grep -qF -- "-include" "$W/pch2.err" && fail "PCH used with SPMDC_CXXFLAGS" || ok "no PCH with SPMDC_CXXFLAGS"
  P=$W/prefix
  mkdir -p "$P/lib/spmdc-pch" "$P/include/spmdrt"
  for a in "$lib"/*.a; do ln -s "$a" "$P/lib/"; done
  cp -p "$ROOT"/runtime/include/spmdrt/* "$P/include/spmdrt/"
  cp -p "$lib/spmdc-pch/cpu_program.h" "$lib/spmdc-pch/cpu_program.key" "$P/lib/spmdc-pch/"
  ln -s "$lib/spmdc-pch/cpu_program.h.gch" "$P/lib/spmdc-pch/"
  SPMDC_RUNTIME_PREFIX=$P show pch3.err
  grep -qF -- " -include $P/lib/spmdc-pch/cpu_program.h " "$W/pch3.err" && ok "prefix: PCH used" ||
    fail "prefix: PCH not used: $(cat "$W/pch3.err")"
  echo "/usr/bin/other-c++ 1.0 -O3" >"$P/lib/spmdc-pch/cpu_program.key"
  SPMDC_RUNTIME_PREFIX=$P show pch4.err
  grep -qF -- "-include" "$W/pch4.err" && fail "PCH of other flags used" || ok "PCH of other flags refused"
  cp -p "$lib/spmdc-pch/cpu_program.key" "$P/lib/spmdc-pch/"
  touch "$P/include/spmdrt/tensor.h"
  SPMDC_RUNTIME_PREFIX=$P show pch5.err
  grep -qF -- "-include" "$W/pch5.err" && fail "stale PCH used" || ok "PCH older than a header refused"
else
  grep -qF -- "-include" "$W/pch0.err" && fail "-include without a PCH: $(cat "$W/pch0.err")" ||
    ok "no PCH built (not GCC, or SPMDC_HOST_PCH=OFF): none used"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
