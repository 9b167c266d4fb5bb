#!/usr/bin/env bash
# bench/build_latency.sh — how long `spmdc build --target cpu` takes, per program.
#
# Builds every sample (samples/*.spmd, samples/gpt/gpt_shmap.spmd with --set steps=10)
# and the transformer block of bench/jax at the size of issue 32, and prints, per
# program, the emitted lines and the wall and CPU (user + sys, the host compiler
# included) seconds of the whole `spmdc build`, best of REPS builds (default 3).
# With a second spmdc (BASE, e.g. main's), both are timed, interleaved build by
# build, so that load changes hit both alike, with the ratio base / new.
# The 1-minute load average is printed per row: the machine is shared, and a
# build's wall time follows the load.
#   Usage: bench/build_latency.sh SPMDC [BASE_SPMDC]   (env: REPS, PROGRAMS="a.spmd b.spmd")
set -euo pipefail
SPMDC=${1:?usage: build_latency.sh SPMDC [BASE_SPMDC]}
BASE=${2:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-3}
[[ -x /usr/bin/time ]] || { echo "build_latency.sh: needs /usr/bin/time (Debian: apt install time)" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# name|file|extra arguments
rows=()
if [[ -n ${PROGRAMS:-} ]]; then
  for f in $PROGRAMS; do rows+=("$(basename "$f" .spmd)|$f|"); done
else
  for f in "$ROOT"/samples/*.spmd; do rows+=("$(basename "$f" .spmd)|$f|"); done
  rows+=("gpt_shmap (steps=10)|$ROOT/samples/gpt/gpt_shmap.spmd|--set steps=10")
  rows+=("transformer_block|$ROOT/bench/jax/transformer_block.spmd|--fn block --set s=128 --set d=256 --set h=8 --set e=32 --set f=1024")
fi

# build SPMDC FILE ARGS -> "wall cpu" of the best (by wall) of REPS builds
measure() {  # one build: prints "wall cpu"
  local spmdc=$1 file=$2 args=$3
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %U %S' -o "$W/t" "$spmdc" build --target cpu -q "$file" $args -o "$W/exe" \
    >/dev/null 2>"$W/err" || { echo "build failed: $spmdc $file $args" >&2; cat "$W/err" >&2; exit 1; }
  awk '{printf "%.2f %.2f\n", $1, $2 + $3}' "$W/t"
}
better() {  # keeps the faster of "wall cpu" pairs
  awk -v a="$1" -v b="$2" 'BEGIN{split(a,x," "); split(b,y," "); print (a=="" || y[1]<x[1]) ? b : a}'
}

echo "# spmdc build --target cpu latency, best of $REPS; $(nproc) cores; $(uname -m); $(date -u +%FT%TZ)"
echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $BASE ]]; then
  echo "| program | lines | base wall s | base CPU s | new wall s | new CPU s | wall base/new | load |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
else
  echo "| program | lines | wall s | CPU s | load |"
  echo "|---|---:|---:|---:|---:|"
fi
for row in "${rows[@]}"; do
  IFS='|' read -r name file args <<<"$row"
  # shellcheck disable=SC2086
  lines=$("$SPMDC" build --target cpu -q "$file" $args --emit-source "$W/src.cpp" >/dev/null && wc -l <"$W/src.cpp")
  new="" old=""
  for _ in $(seq "$REPS"); do
    [[ -n $BASE ]] && old=$(better "$old" "$(measure "$BASE" "$file" "$args")")
    new=$(better "$new" "$(measure "$SPMDC" "$file" "$args")")
  done
  load=$(cut -d' ' -f1 /proc/loadavg)
  read -r nw nc <<<"$new"
  if [[ -n $BASE ]]; then
    read -r ow oc <<<"$old"
    printf '| %s | %s | %s | %s | %s | %s | %.2fx | %s |\n' "$name" "$lines" "$ow" "$oc" "$nw" "$nc" \
      "$(echo "$ow / $nw" | bc -l)" "$load"
  else
    printf '| %s | %s | %s | %s | %s |\n' "$name" "$lines" "$nw" "$nc" "$load"
  fi
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
