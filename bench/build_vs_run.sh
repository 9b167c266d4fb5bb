#!/usr/bin/env bash
# bench/build_vs_run.sh — CPU executable from `spmdc build` vs `spmdc run`, same program.
#
# For each program: builds it with --target cpu, then times whole processes
# (best of REPS runs, /usr/bin/time-free: bash's EPOCHREALTIME) of
#   spmdc run FILE --random 1 -q      and      ./exe --random 1 -q
# and prints both and the ratio (run / exe; > 1 means the executable is faster).
# The executable's in-process per-iteration time (--iters/--warmup, median) is
# printed too. Usage: bench/build_vs_run.sh SPMDC [FILE.spmd ...]
# (default: bench/programs/*.spmd and samples/dp_loss.spmd).
set -euo pipefail
SPMDC=${1:?usage: build_vs_run.sh SPMDC [FILE.spmd ...]}; shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILES=("$@"); [[ ${#FILES[@]} -eq 0 ]] && FILES=("$ROOT"/bench/programs/*.spmd "$ROOT/samples/dp_loss.spmd")
REPS=${REPS:-5}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
best() {  # best wall time in ms of REPS runs of "$@"
  local b=999999999
  for _ in $(seq "$REPS"); do
    local t0=$EPOCHREALTIME; "$@" >/dev/null; local t1=$EPOCHREALTIME
    local ms=$(echo "($t1 - $t0) * 1000" | bc -l); (( $(echo "$ms < $b" | bc -l) )) && b=$ms
  done
  printf '%.1f' "$b"
}
printf '%-28s %12s %12s %8s %16s\n' program "run (ms)" "exe (ms)" ratio "exe iter (ms)"
for f in "${FILES[@]}"; do
  name=$(basename "$f" .spmd)
  "$SPMDC" build "$f" --target cpu -o "$W/$name"
  r=$(best "$SPMDC" run "$f" --random 1 -q)
  e=$(best "$W/$name" --random 1 -q)
  it=$("$W/$name" --random 1 -q --iters 10 --warmup 2 2>&1 | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  printf '%-28s %12s %12s %8.2f %16s\n' "$name" "$r" "$e" "$(echo "$r / $e" | bc -l)" "$it"
done
