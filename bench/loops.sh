#!/usr/bin/env bash
# bench/loops.sh — loops stay loops: what a loop's trip count costs, and what
# a long loop's gradient costs stacked (default) or recomputed (--remat).
#
# 1. Compile: the same body in `for t in range(N)`, N = 10, 1,000, 100,000:
#    spmdc time (best of REPS) to check the program, to derive its gradient
#    (`spmdc grad`, check + derive + print), the derived program's lines, and
#    the emitted C++ lines of the program and of its gradient
#    (`spmdc build --emit-source`). Target: independent of N (within 20%).
# 2. Run: the gradient of a loop of LONG iterations (default 20,000) over a
#    state of WIDTH floats per device (default 512) on 2 devices, with
#    `spmdc run --random 1 -q`: wall time (best of REPS) and peak resident
#    memory (/usr/bin/time), stacked and with --remat, next to the forward
#    program alone; and the bytes each saves per device for its backward pass.
# 3. HOST=1 (off by default: minutes of g++ on a loaded machine): host
#    compile time of the gradient executable for each N, and the
#    executable's per-iteration time (--iters, median) of the rolled loop
#    against the same loop unrolled (--unroll) at 10 iterations.
#
# Usage: bench/loops.sh SPMDC      (env: REPS=3 LONG=20000 WIDTH=512 HOST=0)
set -euo pipefail
SPMDC=${1:?usage: loops.sh SPMDC}
REPS=${REPS:-3}
LONG=${LONG:-20000}
WIDTH=${WIDTH:-512}
HOST=${HOST:-0}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

program() {  # program N WIDTH [ATTR]: one step of a small recurrent cell, N times
  cat <<EOF
mesh M = (i: 2)
shmap f(s0: f32[$(($2 * 2))] @ P(i), w: f32[$(($2 * 2))] @ P(i)) -> f32[] @ P() on M {
  s = s0
  ${3:-}for t in range($1) {
    h = tanh(s * w + 0.001 * cast(t, f32))
    g = sigmoid(h * w)
    s = s * 0.9 + 0.1 * h * g + 0.01 * ppermute(g, i, shift=1)
  }
  return psum(sum(s * s), i) / 1000.0
}
EOF
}

best_ms() {  # best wall time in ms of REPS runs of "$@"
  local b=999999999
  for _ in $(seq "$REPS"); do
    local t0=$EPOCHREALTIME
    "$@" >/dev/null
    local t1=$EPOCHREALTIME
    local ms
    ms=$(echo "($t1 - $t0) * 1000" | bc -l)
    (($(echo "$ms < $b" | bc -l))) && b=$ms
  done
  printf '%.1f' "$b"
}

peak_mb() {  # peak resident memory of one run of "$@", in MiB
  /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.0f", $1 / 1024}'
}

echo "== 1. compile cost against trip count (body: tanh, sigmoid, ppermute on f32[64]/device)"
printf '%-8s %10s %10s %12s %12s %12s\n' N "check ms" "grad ms" "grad lines" "C++ lines" "grad C++"
for n in 10 1000 100000; do
  program "$n" 64 >"$W/f$n.spmd"
  check=$(best_ms "$SPMDC" check "$W/f$n.spmd")
  grad=$(best_ms "$SPMDC" grad "$W/f$n.spmd" -o "$W/g$n.spmd")
  "$SPMDC" build "$W/f$n.spmd" --target cpu --emit-source "$W/f$n.cpp"
  "$SPMDC" build "$W/g$n.spmd" --target cpu --emit-source "$W/g$n.cpp"
  printf '%-8s %10s %10s %12s %12s %12s\n' "$n" "$check" "$grad" "$(wc -l <"$W/g$n.spmd")" \
    "$(wc -l <"$W/f$n.cpp")" "$(wc -l <"$W/g$n.cpp")"
done

echo
echo "== 2. gradient of a $LONG-iteration loop, f32[$WIDTH] state per device, 2 devices"
program "$LONG" "$WIDTH" >"$W/long.spmd"
program "$LONG" "$WIDTH" "[[remat]] " >"$W/long_remat_attr.spmd"
"$SPMDC" grad "$W/long.spmd" -o "$W/long_grad.spmd"
"$SPMDC" grad "$W/long.spmd" --remat -o "$W/long_remat.spmd"
# The attribute and the flag give the same program.
"$SPMDC" grad "$W/long_remat_attr.spmd" -o "$W/long_remat_attr_grad.spmd"
strip() { grep -v '^#\|\[\[remat\]\]' "$1"; }
if ! diff -q <(strip "$W/long_remat.spmd") <(strip "$W/long_remat_attr_grad.spmd") >/dev/null; then
  echo "warning: [[remat]] and --remat derived different programs" >&2
fi
printf '%-22s %10s %10s %10s %26s\n' program "run ms" "peak MiB" "stacks" "saved bytes/device"
row_bytes=$((WIDTH * 4))
for v in long long_grad long_remat; do
  ms=$(best_ms "$SPMDC" run "$W/$v.spmd" --random 1 -q)
  mb=$(peak_mb "$SPMDC" run "$W/$v.spmd" --random 1 -q)
  ns=$(grep -c '_stack_[0-9]* = dynamic_update_slice' "$W/$v.spmd" || true)
  printf '%-22s %10s %10s %10s %26s\n' "$v" "$ms" "$mb" "$ns" "$((ns * LONG * row_bytes))"
done

if [[ "$HOST" == 1 ]]; then
  echo
  echo "== 3. host compile time (g++) and per-iteration time of the executable"
  printf '%-8s %16s\n' N "grad build s"
  for n in 10 1000 100000; do
    t0=$EPOCHREALTIME
    "$SPMDC" build "$W/g$n.spmd" --target cpu -o "$W/g$n"
    t1=$EPOCHREALTIME
    printf '%-8s %16.1f\n' "$n" "$(echo "$t1 - $t0" | bc -l)"
  done
  program 10 1024 >"$W/r10.spmd"
  "$SPMDC" build "$W/r10.spmd" --target cpu -o "$W/rolled"
  "$SPMDC" build "$W/r10.spmd" --target cpu --unroll 10 -o "$W/unrolled"
  for v in rolled unrolled; do
    it=$("$W/$v" --random 1 -q --iters 200 --warmup 20 2>&1 | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    printf '%-10s 10 iterations: median %s ms per run\n' "$v" "$it"
  done
fi
