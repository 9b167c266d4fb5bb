#!/usr/bin/env bash
# tests/backend/profile.sh — `spmdc profile` measures the simulated mesh and writes a
# profile file that `spmdc cost --profile` reads: the file is checked (keys, positive
# figures), and the communication time `spmdc cost` reports with it is recomputed here
# from the file's alpha and beta and the bytes `spmdc cost --json` counts.
# Usage: profile.sh SPMDC
set -u
SPMDC=$1
PY=${PYTHON:-/usr/bin/python3}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }

if ! "$SPMDC" profile --devices 4 --max-bytes 262144 --repeats 1 --name here -o "$W/p.json" \
    2>"$W/table"; then
  fail "spmdc profile exited $?"; cat "$W/table"
fi
grep -q '^fit: alpha' "$W/table" || fail "no fit line in the table"
# 4 collectives x sizes 32 B .. 256 KiB (8x apart: 32, 64, 512, 4K, 32K, 256K) = 24 rows.
rows=$(grep -cE '^(psum|all_gather|psum_scatter|all_to_all) ' "$W/table")
[[ $rows == 24 ]] || fail "expected 24 measured rows, got $rows"

cat >"$W/f.spmd" <<'SPMD'
mesh M = (i: 4)
shmap f(x: f32[1024] @ P(i)) -> (s: f32[] @ P(), g: f32[1024] @ P()) on M {
  return psum(sum(x), i), all_gather_invariant(x, i)
}
SPMD
"$SPMDC" cost "$W/f.spmd" --profile "$W/p.json" --json >"$W/cost.json" || fail "spmdc cost"
"$PY" - "$W/p.json" "$W/cost.json" <<'PYEOF' || fails=$((fails+1))
import json, sys
p = json.load(open(sys.argv[1]))
assert p["name"] == "here", p
assert set(p) <= {"name", "description", "flops_per_s", "memory_bw_bytes_per_s", "intra_node"}, p
alpha, beta = p["intra_node"]["latency_s"], p["intra_node"]["bw_bytes_per_s"]
assert p["flops_per_s"] > 0 and p["memory_bw_bytes_per_s"] > 0 and alpha >= 0 and beta > 0, p
prog = json.load(open(sys.argv[2]))["programs"][0]
# psum of an f32[] over 4: 2 * 3/4 * 4 B; the gather of f32[1024]: 3/4 * 4 KiB.
moved = 2 * 0.75 * 4 + 0.75 * 4096
want = 2 * alpha + moved / beta
got = prog["comm_s"]
assert abs(got - want) <= 1e-9 * max(want, 1e-12) + 1e-15, (got, want)
# The two ops that compute (sum of f32[256] -> f32[]: 256 flops, 1028 bytes) cost
# the slower of flops and bytes.
want_c = max(256 / p["flops_per_s"], 1028 / p["memory_bw_bytes_per_s"])
assert abs(prog["compute_s"] - want_c) <= 1e-9 * want_c, (prog["compute_s"], want_c)
print(f"ok   alpha {alpha * 1e6:.1f} us, beta {beta / 1e9:.2f} GB/s, "
      f"flops {p['flops_per_s'] / 1e9:.1f} GFLOP/s; cost of 2 collectives {got * 1e6:.1f} us")
PYEOF
# Bad arguments are errors, not hangs.
"$SPMDC" profile --devices 1 -q >/dev/null 2>&1 && fail "--devices 1 accepted"
"$SPMDC" profile --max-bytes 0 -q >/dev/null 2>&1 && fail "--max-bytes 0 accepted"
[[ $fails == 0 ]] && echo PASS || echo "$fails failure(s)"
exit $((fails > 0))
