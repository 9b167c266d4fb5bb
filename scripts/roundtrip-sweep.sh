#!/usr/bin/env bash
# Nightly-style sweep of issue 10's round-trip property: every printed and
# derived program is valid, equivalent source. Runs the property test
# (tests/numeric/roundtrip_property.cpp) on COUNT generated programs of each
# flavor (general, differentiable, linear), starting at SEED, plus the whole
# sample/test corpus, and prints how many programs of each kind it exercised.
# CI runs the same test with 200 programs per flavor. The figures of the last
# run are in docs/transposition.md ("The 10,000-program sweep").
#
# Usage: scripts/roundtrip-sweep.sh [--count N] [--seed S] [--build DIR]
#   defaults: --count 10000 --seed 1 --build build
set -euo pipefail
count=10000
seed=1
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "roundtrip-sweep: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
cmake --build "$build" --target numeric_roundtrip_property
exec "$build/tests/numeric/numeric_roundtrip_property" --programs "$count" --seed "$seed"
