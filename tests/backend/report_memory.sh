#!/usr/bin/env bash
# tests/backend/report_memory.sh — `--report-memory` of `spmdc run` and of built executables:
# each device's peak bytes of tensors, checked against figures worked out by hand below.
# Usage: report_memory.sh SPMDC
set -u
SPMDC=$1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
ok() { echo "ok   $*"; }

# Per device of (i: 2): x's block f32[4, 16] = 256 bytes, w f32[16, 32] = 2048, v f32[32, 8] =
# 1024 (the inputs are held for the whole run: 3328); h f32[4, 32] = 512 while the second
# product f32[4, 8] = 128 is made: 3328 + 512 + 128 = 3968. (pbroadcast moves no data: the
# varying w and v are the same buffers.)
cat >"$W/two.spmd" <<'SPMD'
mesh M = (i: 2)
shmap f(x: f32[8, 16] @ P(i), w: f32[16, 32] @ P(), v: f32[32, 8] @ P()) -> f32[8, 8] @ P(i) on M {
  h = x @ w
  return h @ v
}
SPMD
want_f="peak memory of \`f\` per device (its tensors, inputs included):
  device 0 (i: 0): 3968 bytes
  device 1 (i: 1): 3968 bytes
  largest 3968 bytes (3.9 KiB); estimated before running"

# One device (a sharded function runs unsharded): x f32[8, 16] = 512, w 2048, v 1024 held;
# h f32[8, 32] = 1024 and the result f32[8, 8] = 256: 4864.
cat >"$W/global.spmd" <<'SPMD'
mesh M = (d: 2)
sharded g(x: f32[8, 16] @ P(d), w: f32[16, 32] @ auto, v: f32[32, 8] @ auto) -> f32[8, 8] @ P(d) on M {
  h = x @ w
  return h @ v
}
SPMD
want_g="peak memory of \`g\` per device (its tensors, inputs included):
  device 0 (device: 0): 4864 bytes
  largest 4864 bytes (4.8 KiB); estimated before running"

check() {  # NAME WANT FILE
  if [[ "$(head -4 "$3")" == *"$2"* ]]; then ok "$1"; else fail "$1: want
$2
got
$(cat "$3")"; fi
}

"$SPMDC" run "$W/two.spmd" --random 1 -q --report-memory 2>"$W/err" || fail "spmdc run: $(cat "$W/err")"
check "spmdc run, two devices" "spmdc run: $want_f" "$W/err"
"$SPMDC" run "$W/global.spmd" --random 1 -q --report-memory 2>"$W/err" || fail "spmdc run g: $(cat "$W/err")"
check "spmdc run, a sharded function on one device" "spmdc run: $want_g" "$W/err"
"$SPMDC" run "$W/two.spmd" --random 1 -q 2>"$W/err"
[[ -s "$W/err" ]] && fail "without --report-memory: $(cat "$W/err")" || ok "nothing without the flag"
# Timed iterations run the body again while the first run's result (f32[4, 8], 128 bytes)
# is kept: 4096.
"$SPMDC" run "$W/two.spmd" --random 1 -q --report-memory --iters 2 2>"$W/err"
grep -v iterations "$W/err" >"$W/err2"
want_i=${want_f//3968/4096}
check "spmdc run --iters 2" "spmdc run: ${want_i//3.9 KiB/4.0 KiB}" "$W/err2"

if "$SPMDC" build "$W/two.spmd" --target cpu -q -o "$W/two" 2>"$W/err"; then
  "$W/two" --random 1 -q --report-memory 2>"$W/err" || fail "executable: $(cat "$W/err")"
  check "executable, two devices" "two: $want_f" "$W/err"
  "$W/two" --help | grep -q -- "--report-memory" && ok "--help lists --report-memory" ||
    fail "--help has no --report-memory"
  # Under MPI each process measures its device; rank 0 prints them all.
  if command -v mpirun >/dev/null && "$W/two" --executor mpi --help >/dev/null 2>&1; then
    MPI=(mpirun --oversubscribe -np 2); [[ $(id -u) -eq 0 ]] && MPI+=(--allow-run-as-root)
    timeout 120 "${MPI[@]}" "$W/two" --random 1 -q --report-memory 2>"$W/err" ||
      fail "mpirun: $(cat "$W/err")"
    check "executable under mpirun -np 2" "two: $want_f" "$W/err"
  else
    echo "skip mpirun (no mpirun, or built without MPI)"
  fi
else
  fail "spmdc build: $(cat "$W/err")"
fi

# A large psum (4 x 16 KiB: two-phase) counts the same on every device every run: x's block
# f32[4, 1024] = 16384 bytes, x * 2 (16384) and the sum (16384): 49152. The buffer the members
# reduce into is the fabric's (counted on no device, not on whichever arrives first), and x * 2
# is released before any member leaves the psum.
cat >"$W/big.spmd" <<'SPMD'
mesh M = (i: 4)
shmap f(x: f32[16, 1024] @ P(i)) -> f32[4, 1024] @ P() on M {
  return psum(x * 2.0, i)
}
SPMD
if "$SPMDC" build "$W/big.spmd" --target cpu -q -o "$W/big" 2>"$W/err"; then
  before=$fails
  for run in 1 2 3 4 5; do
    "$W/big" --random 1 -q --report-memory 2>"$W/err" || fail "big: $(cat "$W/err")"
    n=$(grep -c "): 49152 bytes" "$W/err")
    [[ $n -eq 4 ]] || fail "two-phase psum, run $run: want 49152 bytes on all 4 devices, got
$(cat "$W/err")"
  done
  [[ $fails -eq $before ]] && ok "two-phase psum: 49152 bytes on every device, 5 runs"
else
  fail "spmdc build big: $(cat "$W/err")"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
