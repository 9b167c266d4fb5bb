#!/usr/bin/env bash
# bench/pool_bench.sh — what the runtime's pool of threads buys (issue 32, item 4).
#
# Builds bench/jax/transformer_block.spmd (--fn block) on 1 and on 4 devices and times each
# executable with --threads 1 and with --threads T (default 2), interleaved round by
# round so that a drift in the machine's load hits both; each figure is the executable's
# own median over --iters iterations (the whole mesh, first device's start to last
# device's finish). Prints one row per round and the median of the per-round ratios
# (time at 1 thread / time at T threads: above 1 means the pool is faster), with the
# machine's load. Usage: bench/pool_bench.sh [SPMDC] [T] [ROUNDS] [SIZES...]
#   SIZES default: s=512 d=512 h=8 e=64 f=2048 (bench/vs_jax.py's larger transformer).
set -eu
SPMDC=${1:-build/compiler/spmdc}
T=${2:-2}
ROUNDS=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(s=512 d=512 h=8 e=64 f=2048)
SETS=(); for s in "${SIZES[@]}"; do SETS+=(--set "$s"); done
HERE=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
ITERS=${ITERS:-10}

median_ms() {  # EXE THREADS: the executable's median iteration time in ms
  "$1" --random 1 -q --iters "$ITERS" --warmup 2 --threads "$2" 2>&1 >/dev/null |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}

echo "machine: $(nproc) hardware threads; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "sizes: ${SIZES[*]}; $ITERS iterations a figure; threads 1 vs $T"
for devices in 1 4; do
  exe="$W/block$devices"
  "$SPMDC" build "$HERE/bench/jax/transformer_block.spmd" --fn block --mesh "(model: $devices)" \
    "${SETS[@]}" --target cpu -o "$exe" -q
  ratios=()
  for r in $(seq "$ROUNDS"); do
    a=$(median_ms "$exe" 1)
    b=$(median_ms "$exe" "$T")
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$ratio")
    printf '%d device(s) round %d: --threads 1 %8.2f ms  --threads %d %8.2f ms  ratio %s  load %s\n' \
      "$devices" "$r" "$a" "$T" "$b" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
  done
  printf '%d device(s): median ratio (threads 1 / threads %d) %s\n' "$devices" "$T" \
    "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
done
