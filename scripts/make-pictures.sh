#!/usr/bin/env bash
# make-pictures.sh [SPMDC] [OUT_DIR] — regenerates the pictures of docs/pictures/
# (the tutorial shows them) with `spmdc show --format svg` and `spmdc cost --plot`. The test
# pictures/current (tests/pictures/CMakeLists.txt) runs it into a temporary
# directory and fails when a committed picture is out of date.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
spmdc=${1:-$root/build/compiler/spmdc}
out=${2:-$root/docs/pictures}
mkdir -p "$out"
for sample in collectives101 shard_local dp_tp moe; do
  (cd "$root" && "$spmdc" show "samples/$sample.spmd" --format svg -o "$out/$sample.svg")
done
(cd "$root" && "$spmdc" cost samples/dp_mlp.spmd --grad --wrt w1,b1,w2,b2 \
  --plot "$out/dp_mlp_roofline.svg" >/dev/null)
