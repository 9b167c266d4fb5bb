#!/usr/bin/env bash
# tests/backend/pool_threads.sh — results do not depend on the worker pool's size (issue 32).
#
# The transformer block of bench/jax at s = 512 (layer norms, softmax, batched einsums, BLAS products
# big enough to be tiled, fused elementwise loops split over the pool, row sums) on one
# device and on a 2-device mesh, and dp_loss's narrow products: `spmdc run` and the CPU
# executable with --threads 1, 2 and 5 (and SPMDRT_THREADS=3) must write byte-identical
# .npy files, the executable's the same bytes as `spmdc run`'s; the 1-device block's
# output is checked against NumPy in float64 (when NumPy is there), so the figures
# compared are right, not merely alike.
# Usage: pool_threads.sh SPMDC SOURCE_DIR
set -u
SPMDC=$1
SRC=$2
PY=${PYTHON:-python3}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
ok() { echo "ok   $*"; }

BLOCK="$SRC/bench/jax/transformer_block.spmd"
SIZES=(--set s=512 --set d=128 --set h=4 --set e=32 --set f=256)

# compare NAME PROGRAM ARGS...: runs and builds PROGRAM with ARGS, then every thread count.
compare() {
  local name=$1 prog=$2; shift 2
  local exe="$W/$name.exe"
  if ! "$SPMDC" build "$prog" "$@" --target cpu -o "$exe" -q 2>"$W/err"; then
    fail "$name: build: $(cat "$W/err")"; return
  fi
  local runs=()
  for t in 1 2 5; do
    "$SPMDC" run "$prog" "$@" --random 7 -q --threads "$t" --out-dir "$W/$name.run$t" 2>"$W/err" \
      || fail "$name: spmdc run --threads $t: $(cat "$W/err")"
    "$exe" --random 7 -q --threads "$t" --out-dir "$W/$name.exe$t" 2>"$W/err" \
      || fail "$name: executable --threads $t: $(cat "$W/err")"
    runs+=("run$t" "exe$t")
  done
  SPMDRT_THREADS=3 "$exe" --random 7 -q --out-dir "$W/$name.exeenv3" 2>"$W/err" \
    || fail "$name: executable SPMDRT_THREADS=3: $(cat "$W/err")"
  runs+=(exeenv3)
  local files
  files=$(cd "$W/$name.run1" && ls)
  [ -n "$files" ] || { fail "$name: no outputs"; return; }
  for r in "${runs[@]}"; do
    for f in $files; do
      if ! cmp -s "$W/$name.run1/$f" "$W/$name.$r/$f"; then
        fail "$name: $f of $r differs from spmdc run --threads 1"
        return
      fi
    done
  done
  ok "$name: spmdc run and the executable at 1, 2, 5 threads (and SPMDRT_THREADS=3): same bytes"
}

compare block1 "$BLOCK" --fn block --mesh "(model: 1)" "${SIZES[@]}"
compare block2 "$BLOCK" --fn block --mesh "(model: 2)" "${SIZES[@]}"
compare dp_loss "$SRC/bench/jax/dp_loss.spmd" --mesh "(batch: 1)" --set b=1024 --set d=256 --set k=16

# The one-device block against NumPy (float64), on inputs made here.
if "$PY" -c "import numpy" 2>/dev/null; then
  "$PY" - "$W" <<'PY' || fail "inputs for the NumPy check"
import sys, numpy as np
w = sys.argv[1]
r = np.random.default_rng(3)
s, d, h, e, f = 512, 128, 4, 32, 256
shapes = dict(x=(s, d), ln1_scale=(d,), ln1_bias=(d,), wq=(d, h, e), wk=(d, h, e), wv=(d, h, e),
              wo=(h, e, d), ln2_scale=(d,), ln2_bias=(d,), w1=(d, f), w2=(f, d))
for name, shape in shapes.items():
    scale = 1.0 if name.startswith(("x", "ln")) else 1.0 / np.sqrt(shape[0])
    np.save(f"{w}/{name}.npy", (r.standard_normal(shape) * scale).astype(np.float32))
PY
  ins=()
  for n in x ln1_scale ln1_bias wq wk wv wo ln2_scale ln2_bias w1 w2; do ins+=(--in "$n=$W/$n.npy"); done
  "$W/block1.exe" "${ins[@]}" -q --threads 2 --out-dir "$W/y2" 2>"$W/err" || fail "block1 with inputs: $(cat "$W/err")"
  "$W/block1.exe" "${ins[@]}" -q --threads 1 --out-dir "$W/y1" 2>"$W/err" || fail "block1 with inputs: $(cat "$W/err")"
  diff -r "$W/y1" "$W/y2" >/dev/null || fail "block1 with inputs: --threads 1 and 2 differ"
  if "$PY" - "$W" <<'PY'; then ok "block1: matches NumPy float64 (rel. 1e-4)"; else fail "block1 vs NumPy"; fi
import sys, numpy as np
w = sys.argv[1]
L = {n: np.load(f"{w}/{n}.npy").astype(np.float64) for n in
     "x ln1_scale ln1_bias wq wk wv wo ln2_scale ln2_bias w1 w2".split()}
def ln(x, g, b):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 0.00001) * g + b
def softmax(z):
    z = z - z.max(-1, keepdims=True); p = np.exp(z); return p / p.sum(-1, keepdims=True)
gelu = lambda t: 0.5 * t * (1 + np.tanh(0.7978845608 * (t + 0.044715 * t ** 3)))  # std.nn
x = L["x"]; e = L["wq"].shape[2]
a = ln(x, L["ln1_scale"], L["ln1_bias"])
q, k, v = (np.einsum("sd,dhe->hse", a, L[n]) for n in ("wq", "wk", "wv"))
p = softmax(np.einsum("hqe,hke->hqk", q, k) / np.sqrt(e))
x1 = x + np.einsum("hse,hed->sd", np.einsum("hqk,hke->hqe", p, v), L["wo"])
b = ln(x1, L["ln2_scale"], L["ln2_bias"])
y = x1 + gelu(b @ L["w1"]) @ L["w2"]
import glob
got = np.load(glob.glob(f"{w}/y1/*.npy")[0]).astype(np.float64)
err = np.abs(got - y).max() / np.abs(y).max()
print(f"max error relative to the largest |y|: {err:.2e}")
sys.exit(0 if err < 1e-4 else 1)
PY
else
  echo "skip NumPy check (no numpy)"
fi
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
