#!/usr/bin/env bash
# scripts/sanitize.sh — spmdc and its executables under AddressSanitizer and UBSan.
#
# Builds a sanitized configuration (-DSPMDC_SANITIZE=address,undefined, so the
# compiler, the runtime, the tests and every executable `spmdc build` links
# carry the sanitizers) in BUILD_DIR, then runs under it:
#   1. the unit tests;
#   2. every golden test (tests/golden/) and the fault scripts (tests/faults/);
#   3. the corpus: every .spmd under samples/, stdlib/ and tests/ through
#      check, run --random 0 --check-replication (each shmap), grad, vjp, jvp
#      and transpose — a user error is fine, a sanitizer report is not;
#   4. every sample built as a sanitized CPU executable, run against `spmdc run`;
#   5. the fuzzer (FUZZ_COUNT mutants, FUZZ_HOSTILE hostile programs);
#   6. the newer surfaces directly: `spmdc lsp` (the LSP session tests and the
#      LSP fuzzer), `spmdc reshard` and `spmdc shard --auto` on the issue-30
#      reproducers (up to 16 mesh axes, partial sums, tiny time limits), and
#      the sharding and MPI fuzzers (SURFACE_COUNT inputs).
# Any sanitizer report fails the run (exit status 99 from the sanitizers,
# never confused with spmdc's 1 and 2). The last clean run is recorded in
# docs/limits.md ("Sanitizers").
#
# Usage: scripts/sanitize.sh [BUILD_DIR]   (default build-sanitize)
#   FUZZ_COUNT=3000 FUZZ_HOSTILE=400 JOBS=2 scripts/sanitize.sh
#   STEPS="unit goldens" scripts/sanitize.sh   runs only those steps (of: unit
#   goldens corpus executables fuzz surfaces; default all), to spread a run over
#   several sittings on a busy machine; the build is reused.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${1:-$ROOT/build-sanitize}")
JOBS=${JOBS:-2}
FUZZ_COUNT=${FUZZ_COUNT:-3000}
FUZZ_HOSTILE=${FUZZ_HOSTILE:-400}
SURFACE_COUNT=${SURFACE_COUNT:-300}
STEPS=" ${STEPS:-unit goldens corpus executables fuzz surfaces} "
wanted() { [[ $STEPS == *" $1 "* ]]; }
export ASAN_OPTIONS=exitcode=99:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=exitcode=99:print_stacktrace=1:halt_on_error=1
start=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - start )) s)"; }
failures=0
bad() { echo "SANITIZER FAILURE: $*"; failures=$((failures + 1)); }

step "configure and build $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSPMDC_SANITIZE=address,undefined -DSPMDC_ENABLE_CUDA=OFF -DSPMDC_BUILD_BENCH=OFF >/dev/null \
  || exit 1
# Only what the steps run: spmdc, and the unit tests and the fuzzer for their steps.
targets=(spmdc)
wanted unit && targets+=(spmdc_unit_tests)
wanted fuzz && targets+=(fuzz_parser)
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" || exit 1
SPMDC=$BUILD/compiler/spmdc
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# Runs a command; a sanitizer report (exit 99, or one in stderr) is a failure.
checked() {
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [[ $rc -eq 99 || $rc -ge 128 ]] || grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$W/err"; then
    bad "exit $rc: $*"; head -40 "$W/err"
  fi
  return $rc
}

if wanted unit; then
step "unit tests"
checked "$BUILD/tests/spmdc_unit_tests"
fi

if wanted goldens; then
step "golden tests and fault scripts"
# As tests/golden/CMakeLists.txt: goldens under sharding/cbc/ need CBC, those
# under sharding/nocbc/ a build without it.
if "$SPMDC" --version | grep -q '^  CBC: on'; then skip='*/nocbc/*'; else skip='*/sharding/cbc/*'; fi
mapfile -t goldens < <(find "$ROOT/tests/golden" -name '*.spmd' -not -path '*/modules/*' \
  -not -path "$skip" | sort)
for g in "${goldens[@]}"; do
  python3 "$ROOT/tests/golden/golden.py" --spmdc "$SPMDC" --root "$ROOT" "$g" >"$W/g" 2>&1 \
    || { grep -qE 'Sanitizer|runtime error' "$W/g" && { bad "golden $g"; head -30 "$W/g"; } \
         || echo "golden mismatch (not a sanitizer report): ${g#$ROOT/}"; }
done
for s in "$ROOT"/tests/faults/*.sh; do checked "$s" "$SPMDC" "$ROOT" || echo "fault script failed: $s"; done
fi

if wanted corpus; then
step "corpus: check, run, grad, vjp, jvp, transpose"
mapfile -t corpus < <(find "$ROOT/samples" "$ROOT/stdlib" "$ROOT/tests" -name '*.spmd' | sort)
commands=0
for f in "${corpus[@]}"; do
  commands=$((commands + 1))
  checked "$SPMDC" check "$f" || continue
  for fn in $("$SPMDC" print "$f" 2>/dev/null | sed -n 's/^shmap \([A-Za-z_0-9]*\).*/\1/p'); do
    checked "$SPMDC" run "$f" --fn "$fn" --random 0 --check-replication -q
    for d in grad vjp jvp transpose; do checked "$SPMDC" "$d" "$f" --fn "$fn"; done
    commands=$((commands + 5))
  done
done
echo "$commands commands on ${#corpus[@]} files"
fi

if wanted executables; then
step "sanitized executables of the samples"
built=0
for f in "$ROOT"/samples/*.spmd "$ROOT"/samples/seed/*.spmd; do
  for fn in $("$SPMDC" print "$f" 2>/dev/null | sed -n 's/^shmap \([A-Za-z_0-9]*\).*/\1/p'); do
    checked "$SPMDC" build "$f" --fn "$fn" --target cpu -o "$W/exe" || continue
    "$SPMDC" run "$f" --fn "$fn" --random 1 > "$W/expected" 2>/dev/null
    checked "$W/exe" --random 1
    cmp -s "$W/out" "$W/expected" || bad "executable of $f --fn $fn differs from spmdc run"
    built=$((built + 1))
  done
done
echo "$built sanitized executables"
fi

if wanted fuzz; then
step "fuzzer"
checked "$BUILD/tests/fuzz/fuzz_parser" --count "$FUZZ_COUNT" --hostile "$FUZZ_HOSTILE" --too-slow 60
tail -1 "$W/out"
fi

if wanted surfaces; then
step "lsp, reshard, shard --auto and the fuzzers of the newer surfaces"
# The fuzzers check each input's exit status and output for sanitizer
# reports themselves (tests/fuzz/surfaces.py); sanitized runs are slower and
# larger, so their bounds are wider here.
checked python3 "$ROOT/tests/lsp/test_lsp.py" "$SPMDC" "$ROOT" || bad "lsp session"
checked python3 "$ROOT/tests/lsp/test_lsp_hostile.py" "$SPMDC" || bad "lsp hostile"
M8="(a:2,b:2,c:2,d:2,e:2,f:2,g:2,h:2)"
M16="(a:2,b:2,c:2,d:2,e:2,f:2,g:2,h:2,i:2,j:2,k:2,l:2,m:2,n:2,o:2,p:2)"
checked "$SPMDC" reshard --mesh "$M8" --type "f32[4096, 4096]" \
  --from "P((a, b, c, d), (e, f, g, h))" --to "P((h, g, f, e), (d, c, b, a))"
checked "$SPMDC" reshard --mesh "$M16" --type "f32[65536, 65536]" \
  --from "P((a, b, c, d, e, f, g, h), (i, j, k, l, m, n, o, p))" \
  --to "P((p, o, n, m, l, k, j, i), (h, g, f, e, d, c, b, a))"
checked "$SPMDC" reshard --mesh "$M16" --type "f32[4096, 4096]" \
  --from "P((a, b, c, d), (e, f, g, h), partial=(i, j, k, l, m, n, o, p))" --to "P((i, j), (k, l, m))"
for g in "$ROOT"/tests/golden/hostile/*.spmd; do
  python3 "$ROOT/tests/golden/golden.py" --spmdc "$SPMDC" --root "$ROOT" "$g" >"$W/g" 2>&1 \
    || { grep -qE 'Sanitizer|runtime error' "$W/g" && { bad "golden $g"; head -30 "$W/g"; } \
         || echo "golden mismatch (not a sanitizer report): ${g#$ROOT/}"; }
done
for t in 0.01 0.1 1; do
  checked "$SPMDC" shard --auto --time-limit "$t" "$ROOT/tests/golden/hostile/shard_auto_many_axes.spmd"
done
python3 "$ROOT/tests/fuzz/fuzz_lsp.py" "$SPMDC" "$ROOT" --count "$((SURFACE_COUNT / 10))" \
  --max-seconds 120 --max-rss 4096 || bad "fuzz_lsp"
python3 "$ROOT/tests/fuzz/fuzz_sharding.py" "$SPMDC" --count "$SURFACE_COUNT" \
  --max-seconds 120 --max-rss 4096 || bad "fuzz_sharding"
if command -v mpirun >/dev/null; then
  # Address and undefined-behaviour errors are still fatal under mpirun, but not
  # leaks: Open MPI's plugins (dlopen'd, unloaded by MPI_Finalize, so LeakSanitizer
  # sees "<unknown module>" and no suppression can name them) leave ~120 KB of
  # strdup'd strings per process at exit (the 718a9aa run's only report).
  ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0} \
    python3 "$ROOT/tests/fuzz/fuzz_mpi.py" "$SPMDC" mpirun "$ROOT" --count 6 --max-seconds 120 \
      --max-rss 4096 || bad "fuzz_mpi"
fi
fi

step "done"
echo "sanitize.sh: $failures sanitizer failure(s) in $(( $(date +%s) - start )) s"
[[ $failures -eq 0 ]]
