#!/usr/bin/env bash
# tests/backend/profile.sh — `spmdc profile` measures the simulated mesh and writes a
# profile file that `spmdc cost --profile` reads: the file is checked (keys, positive
# figures), and the communication time `spmdc cost` reports with it is recomputed here
# from the file's alpha and beta and the bytes `spmdc cost --json` counts, the compute
# time of thin products from its matmul rates, of other ops from its memory rates. With
# --devices-per-node the link inside a node and the one between nodes are fitted
# apart. Given SPMDC_PROFILE (spmdc-profile) and MPIRUN, the same over MPI processes.
# Usage: profile.sh SPMDC [SPMDC_PROFILE MPIRUN]
set -u
SPMDC=$1
SPMDC_PROFILE=${2:-}
MPIRUN=${3:-}
PY=${PYTHON:-/usr/bin/python3}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }

if ! "$SPMDC" profile --devices 4 --max-bytes 262144 --repeats 1 --name here -o "$W/p.json" \
    2>"$W/table"; then
  fail "spmdc profile exited $?"; cat "$W/table"
fi
grep -q '^fit inside a node: alpha' "$W/table" || fail "no fit line in the table"
grep -q '^  all_to_all     alpha' "$W/table" || fail "no per-kind fit lines in the table"
# 4 collectives x sizes 32 B .. 256 KiB (8x apart: 32, 64, 512, 4K, 32K, 256K) = 24 rows.
rows=$(grep -cE '^(psum|all_gather|psum_scatter|all_to_all) ' "$W/table")
[[ $rows == 24 ]] || fail "expected 24 measured rows, got $rows"

cat >"$W/g.spmd" <<'SPMD'
mesh M = (i: 4)
shmap g(a: f32[64, 8] @ P(), b: f32[8, 64] @ P(), c: f32[64, 16] @ P(), d: f32[16, 64] @ P())
    -> (s: f32[64, 64] @ P(), t: f32[64, 64] @ P()) on M {
  return a @ b, c @ d
}
SPMD
grep -qE '^thin contractions \(smallest dimension: flop/s\): 8: [0-9.e+]+ 32: ' "$W/table" ||
  fail "no thin contractions line in the table"
# One line per gemm layout (nn, tn, nt, tt) and thinnest dimension (m, n, k).
[[ $(grep -cE '^  layout (nn|tn|nt|tt)/[mnk]: 8: [0-9.e+]+ 32: [0-9.e+]+ 128: ' "$W/table") == 12 ]] ||
  fail "expected 12 layout lines in the table"
cat >"$W/f.spmd" <<'SPMD'
mesh M = (i: 4)
shmap f(x: f32[1024] @ P(i)) -> (s: f32[] @ P(), g: f32[1024] @ P()) on M {
  return psum(sum(x), i), all_gather_invariant(x, i)
}
SPMD
# check PROFILE NAME LEVELS: the file's keys and figures, and `spmdc cost` with it
# priced from them (LEVELS 2: nodes of 2 devices, so axis i (4 devices) crosses nodes).
check() {
  "$SPMDC" cost "$W/f.spmd" --profile "$1" --json >"$W/cost.json" || { fail "spmdc cost $1"; return; }
  "$SPMDC" cost "$W/g.spmd" --profile "$1" --json >"$W/cost_g.json" || { fail "spmdc cost g $1"; return; }
  "$PY" - "$1" "$W/cost.json" "$2" "$3" "$W/cost_g.json" <<'PYEOF' || fails=$((fails+1))
import json, sys
p = json.load(open(sys.argv[1]))
name, levels = sys.argv[3], int(sys.argv[4])
assert p["name"] == name, p
keys = {"name", "description", "flops_per_s", "memory_bw_bytes_per_s", "intra_node"}
# Memory rates, the tanh rate and thin products' rates unless --no-memory-rates and
# --no-matmul-rates (the run named "nodes").
if name != "nodes":
    keys |= {"memory_rates", "transcendental_rate", "matmul_rates", "matmul_layout_rates"}
    assert p["transcendental_rate"] > 0, p
if levels == 2:
    keys |= {"devices_per_node", "inter_node"}
# The products' fixed costs, each written only when measured above 0.
assert keys <= set(p) <= keys | ({"matmul_op_s", "matmul_gemm_s"} if name != "nodes" else set()), p
link = p["intra_node"] if levels == 1 else p["inter_node"]
if levels == 2:
    assert p["devices_per_node"] == 2, p
    assert p["inter_node"]["bw_bytes_per_s"] > 0 and p["inter_node"]["latency_s"] >= 0, p
# Each measured kind has its own fit on each link; ppermute is not measured.
kinds = ("psum", "all_gather", "psum_scatter", "all_to_all")
for l in [p["intra_node"]] + ([p["inter_node"]] if levels == 2 else []):
    assert set(l) == {"latency_s", "bw_bytes_per_s", "collectives"}, l
    assert set(l["collectives"]) == set(kinds), l
    for f in [l] + list(l["collectives"].values()):
        assert f["latency_s"] >= 0 and f["bw_bytes_per_s"] > 0, l
assert p["flops_per_s"] > 0 and p["memory_bw_bytes_per_s"] > 0, p
# Memory bandwidth by the bytes an op touches: adds of 192 KiB, 3 MiB and 48 MiB,
# the last one's being memory_bw_bytes_per_s.
mr = p.get("memory_rates") or [{"bytes": b, "bw_bytes_per_s": p["memory_bw_bytes_per_s"]}
                               for b in (196608, 3145728, 50331648)]
assert [r["bytes"] for r in mr] == [196608, 3145728, 50331648], mr
assert all(r["bw_bytes_per_s"] > 0 for r in mr), mr
assert mr[-1]["bw_bytes_per_s"] == p["memory_bw_bytes_per_s"], mr
import math
def bandwidth(b):  # interpolated on a log scale of the bytes, clamped at the ends
    if b <= mr[0]["bytes"]:
        return mr[0]["bw_bytes_per_s"]
    for lo, hi in zip(mr, mr[1:]):
        if b <= hi["bytes"]:
            t = math.log(b / lo["bytes"]) / math.log(hi["bytes"] / lo["bytes"])
            return lo["bw_bytes_per_s"] + t * (hi["bw_bytes_per_s"] - lo["bw_bytes_per_s"])
    return mr[-1]["bw_bytes_per_s"]
prog = json.load(open(sys.argv[2]))["programs"][0]
# psum of an f32[] over 4: 2 * 3/4 * 4 B at psum's figures; the gather of f32[1024]:
# 3/4 * 4 KiB at all_gather's. Over nodes of 2 devices the axis of 4 crosses nodes:
# the inter-node link prices both.
ps, ag = link["collectives"]["psum"], link["collectives"]["all_gather"]
alpha, beta = ps["latency_s"], ps["bw_bytes_per_s"]
want = ps["latency_s"] + 2 * 0.75 * 4 / ps["bw_bytes_per_s"] + ag["latency_s"] + \
    0.75 * 4096 / ag["bw_bytes_per_s"]
got = prog["comm_s"]
assert abs(got - want) <= 1e-9 * max(want, 1e-12) + 1e-15, (got, want)
# The two ops that compute (sum of f32[256] -> f32[]: 256 flops, 1028 bytes) cost
# the slower of flops and bytes.
want_c = max(256 / p["flops_per_s"], 1028 / bandwidth(1028))
assert abs(prog["compute_s"] - want_c) <= 1e-9 * want_c, (prog["compute_s"], want_c)
# Thin products: rates at smallest dimension 8, 32, 128 and the square 512 (the peak);
# without them every product runs at flops_per_s.
rates = p.get("matmul_rates") or [{"smallest_dim": d, "flops_per_s": p["flops_per_s"]}
                                  for d in (8, 32, 128, 512)]
assert [r["smallest_dim"] for r in rates] == [8, 32, 128, 512], rates
assert all(r["flops_per_s"] > 0 for r in rates), rates
assert rates[-1]["flops_per_s"] == p["flops_per_s"], rates
# By layout: nn, tn, nt, tt times m, n, k, each at 8, 32, 128.
layouts = p.get("matmul_layout_rates", {})
if name != "nodes":
    assert set(layouts) == {a + b + "/" + t for a in "nt" for b in "nt" for t in "mnk"}, layouts
    for key, lr in layouts.items():
        assert [r["smallest_dim"] for r in lr] == [8, 32, 128], (key, lr)
        assert all(r["flops_per_s"] > 0 for r in lr), (key, lr)
# g: f32[64, 8] @ f32[8, 64] (a plain gemm thinnest in its contracted length 8:
# 65,536 flops at the nn/k rate for 8; 5,120 elements read and written) and
# f32[64, 16] @ f32[16, 64] (16: halfway between 8 and 32 on a log scale; 6,144
# elements); without layout rates, matmul_rates'.
by = layouts.get("nn/k", rates)
r8, r32 = by[0]["flops_per_s"], by[1]["flops_per_s"]
# Each product also costs matmul_op_s and one gemm's matmul_gemm_s.
fixed = p.get("matmul_op_s", 0) + p.get("matmul_gemm_s", 0)
want_g = max(65536 / r8 + fixed, 4 * 5120 / bandwidth(4 * 5120)) + \
    max(131072 / ((r8 + r32) / 2) + fixed, 4 * 6144 / bandwidth(4 * 6144))
got_g = json.load(open(sys.argv[5]))["programs"][0]["compute_s"]
assert abs(got_g - want_g) <= 1e-9 * want_g, (got_g, want_g)
print(f"ok   {name}: psum alpha {alpha * 1e6:.1f} us, beta {beta / 1e9:.2f} GB/s, "
      f"flops {p['flops_per_s'] / 1e9:.1f} GFLOP/s; cost of 2 collectives {got * 1e6:.1f} us")
PYEOF
}
check "$W/p.json" here 1

# Two levels on the simulated mesh: 24 rows inside nodes, 24 between.
if ! "$SPMDC" profile --devices 4 --devices-per-node 2 --max-bytes 262144 --repeats 1 \
    --no-memory-rates --no-matmul-rates --name nodes -o "$W/p2.json" 2>"$W/table2"; then
  fail "spmdc profile --devices-per-node 2 exited $?"; cat "$W/table2"
fi
[[ $(grep -cE '^(psum|all_gather|psum_scatter|all_to_all) +intra ' "$W/table2") == 24 ]] ||
  fail "expected 24 intra-node rows"; 
[[ $(grep -cE '^(psum|all_gather|psum_scatter|all_to_all) +inter ' "$W/table2") == 24 ]] ||
  fail "expected 24 inter-node rows"
grep -q '^fit between nodes (2 devices each): alpha' "$W/table2" || fail "no inter-node fit line"
check "$W/p2.json" nodes 2

# Over MPI: spmdc-profile under mpirun, one process per device.
if [[ -n $SPMDC_PROFILE && -n $MPIRUN ]]; then
  MPI=("$MPIRUN" --oversubscribe)
  if ! "${MPI[@]}" -np 4 "$SPMDC_PROFILE" --max-bytes 262144 --repeats 1 --name mpi \
      -o "$W/pm.json" 2>"$W/tablem"; then
    fail "mpirun spmdc-profile exited $?"; cat "$W/tablem"
  fi
  [[ $(grep -cE '^(psum|all_gather|psum_scatter|all_to_all) +intra ' "$W/tablem") == 24 ]] ||
    fail "expected 24 rows from spmdc-profile"
  grep -q '"description": "measured by `spmdc-profile` over 4 MPI processes' "$W/pm.json" ||
    fail "spmdc-profile's description"
  check "$W/pm.json" mpi 1
  if ! "${MPI[@]}" -np 4 "$SPMDC_PROFILE" --devices-per-node 2 --max-bytes 262144 --repeats 1 \
      --name mpinodes -o "$W/pm2.json" 2>"$W/tablem2"; then
    fail "mpirun spmdc-profile --devices-per-node 2 exited $?"; cat "$W/tablem2"
  fi
  check "$W/pm2.json" mpinodes 2
  # Errors, not hangs: without mpirun; --devices other than the job's processes.
  "$SPMDC_PROFILE" -q >/dev/null 2>"$W/err" && fail "spmdc-profile without mpirun accepted"
  grep -q 'start it with mpirun' "$W/err" || fail "spmdc-profile without mpirun: $(cat "$W/err")"
  timeout 120 "${MPI[@]}" -np 2 "$SPMDC_PROFILE" --devices 4 -q >/dev/null 2>"$W/err" &&
    fail "spmdc-profile --devices 4 on 2 processes accepted"
  grep -q 'but the job has 2 processes' "$W/err" || fail "--devices mismatch: $(cat "$W/err")"
fi
# Bad arguments are errors, not hangs.
"$SPMDC" profile --devices 1 -q >/dev/null 2>&1 && fail "--devices 1 accepted"
"$SPMDC" profile --max-bytes 0 -q >/dev/null 2>&1 && fail "--max-bytes 0 accepted"
for k in 1 3 4; do
  "$SPMDC" profile --devices 4 --devices-per-node $k -q >/dev/null 2>&1 &&
    fail "--devices-per-node $k of 4 accepted"
done
[[ $fails == 0 ]] && echo PASS || echo "$fails failure(s)"
exit $((fails > 0))
