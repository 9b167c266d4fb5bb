#!/usr/bin/env bash
# tests/backend/flush_denormals.sh — `--flush-denormals` on `spmdc run` and executables:
# without it subnormal f32 results are kept (IEEE); with it they become 0 — results
# (FTZ) and operands (DAZ, here a BLAS product and a sum that read subnormals) — on
# every thread that runs ops: `spmdc run` and the executable write the same bytes at
# 1 and 3 threads of the pool. Expected values from NumPy (float32 arithmetic for the
# kept subnormals; zeros when flushed).
# Usage: flush_denormals.sh SPMDC
set -u
SPMDC=$1
PY=${PYTHON:-/usr/bin/python3}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }

cat >"$W/sub.spmd" <<'SPMD'
mesh M = (d: 2)
shmap f(x: f32[64, 32] @ P(d), w: f32[32, 48] @ P()) -> (t: f32[64, 32] @ P(d), p: f32[64, 48] @ P(d), s: f32[] @ P()) on M {
  t = x * 1.0e-20 * 1.0e-20
  return t, (t * 1.0e30) @ w + t @ w, psum(sum(t), d)
}
SPMD
"$PY" - "$W" <<'PYEOF' || fail "writing inputs"
import sys, numpy as np
rng = np.random.default_rng(7)
np.save(sys.argv[1] + "/x.npy", rng.uniform(0.5, 1.5, (64, 32)).astype(np.float32))
np.save(sys.argv[1] + "/w.npy", rng.uniform(-1, 1, (32, 48)).astype(np.float32))
PYEOF
IN=(--in "x=$W/x.npy" --in "w=$W/w.npy")
"$SPMDC" build "$W/sub.spmd" --target cpu -o "$W/exe" || fail "spmdc build"
for mode in keep flush; do
  flag=(); [[ $mode == flush ]] && flag=(--flush-denormals)
  for t in 1 3; do
    "$SPMDC" run "$W/sub.spmd" "${IN[@]}" "${flag[@]}" --threads $t -q --out-dir "$W/run_${mode}_$t" ||
      fail "spmdc run $mode --threads $t"
    "$W/exe" "${IN[@]}" "${flag[@]}" --threads $t -q --out-dir "$W/exe_${mode}_$t" ||
      fail "exe $mode --threads $t"
  done
  for o in t p s; do
    for d in run_${mode}_3 exe_${mode}_1 exe_${mode}_3; do
      cmp -s "$W/run_${mode}_1/$o.npy" "$W/$d/$o.npy" || fail "$mode: $o differs in $d"
    done
  done
done
"$PY" - "$W" <<'PYEOF' || fails=$((fails+1))
import sys, numpy as np
w_dir = sys.argv[1]
x, w = np.load(w_dir + "/x.npy"), np.load(w_dir + "/w.npy")
f32 = np.float32
t = x * f32(1e-20) * f32(1e-20)            # subnormal (about 1e-40)
assert np.all(t != 0) and np.all(np.abs(t) < np.finfo(np.float32).tiny)
keep = {o: np.load(f"{w_dir}/run_keep_1/{o}.npy") for o in "tps"}
flush = {o: np.load(f"{w_dir}/run_flush_1/{o}.npy") for o in "tps"}
assert np.array_equal(keep["t"], t), "kept subnormals"
# (t * 1e30) @ w is normal either way when t is kept; t @ w is subnormal-sized.
want_p = (t.astype(np.float64) * 1e30) @ w.astype(np.float64)
err = np.abs(keep["p"] - want_p).max() / np.abs(want_p).max()
assert err < 1e-5, f"product of kept subnormals: {err}"
want_s = t.astype(np.float64).sum()    # about 2e-37: a normal float adding subnormals
assert abs(keep["s"] - want_s) <= 1e-5 * want_s, (keep["s"], want_s)
# Flushed: t is 0, so are the product (its operand reads as 0) and the sum.
assert np.all(flush["t"] == 0), flush["t"]
assert np.all(flush["p"] == 0), flush["p"]
assert flush["s"] == 0, flush["s"]
print("PASS values: kept subnormals as NumPy computes them, flushed ones 0")
PYEOF
# Executables document the flag.
"$W/exe" --help 2>&1 | grep -q -- '--flush-denormals' || fail "--help does not name --flush-denormals"
[[ $fails == 0 ]] && echo PASS || echo "$fails failure(s)"
exit $((fails > 0))
