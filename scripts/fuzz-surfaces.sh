#!/usr/bin/env bash
# scripts/fuzz-surfaces.sh — a long run of the fuzzers of the newer surfaces (issue 30).
#
# Runs tests/fuzz/fuzz_lsp.py, fuzz_sharding.py and fuzz_mpi.py (CI runs each
# at a small count) with larger counts and a seed of your choice, and prints
# each one's summary: inputs, crashes, internal errors, time-outs, memory
# overruns. Each asserts per input: no crash, no internal error, at most
# MAX_SECONDS of wall time and MAX_RSS MiB of peak RSS.
#
# Usage: scripts/fuzz-surfaces.sh [SPMDC]   (default build/compiler/spmdc)
#   LSP_COUNT=300 SHARDING_COUNT=3000 MPI_COUNT=40 SEED=7 scripts/fuzz-surfaces.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPMDC=$(realpath "${1:-$ROOT/build/compiler/spmdc}")
SEED=${SEED:-$(date +%s)}
MAX_SECONDS=${MAX_SECONDS:-30}
MAX_RSS=${MAX_RSS:-1024}
status=0
echo "seed $SEED"
python3 "$ROOT/tests/fuzz/fuzz_lsp.py" "$SPMDC" "$ROOT" --count "${LSP_COUNT:-200}" --seed "$SEED" \
  --max-seconds "$MAX_SECONDS" --max-rss "$MAX_RSS" || status=1
python3 "$ROOT/tests/fuzz/fuzz_sharding.py" "$SPMDC" --count "${SHARDING_COUNT:-2000}" \
  --seed "$SEED" --max-seconds "$MAX_SECONDS" --max-rss "$MAX_RSS" || status=1
if command -v mpirun >/dev/null; then
  python3 "$ROOT/tests/fuzz/fuzz_mpi.py" "$SPMDC" mpirun "$ROOT" --count "${MPI_COUNT:-30}" \
    --seed "$SEED" --max-seconds 120 --max-rss "$MAX_RSS" || status=1
fi
exit $status
