#!/usr/bin/env python3
"""gather_embedding.py — take and scatter_add (the embedding lookup and its
gradient) against NumPy, per device, in global view and sharded.

1. A shmap on (data: 2): a replicated table looked up by each device's block
   of token ids (repeats included), the lookup's values and the table's
   gradient (grad of a def: the table is invariant, so its gradient is summed
   over data by the derivative itself) against NumPy's t[ids] and
   np.add.at; `take(..., axis=1)` and `mode="fill"` beside it. The program is
   printed by `spmdc print`, and the printed text run again: the same values.
   std.nn's cross_entropy_labels and its gradient (softmax - one_hot).
2. The global view on (data: 2, model: 2): the table split by rows over model
   (Megatron's vocabulary-parallel embedding) and the ids by batch over data.
   `spmdc shard` must look up shifted ids with mode="fill" and complete the
   partial sums with one psum over model; the sharded program's lookup and
   gradient equal NumPy's.
   Data-parallel beside it: the table replicated, the ids split over data.
   The gradient's scatter_add is split along the ids (each device adds its
   own updates into a table kept on data index 0 only) and completed by one
   psum over data: no updates gathered, no all_gather at all.
3. An id out of range stops `spmdc run` with the id, the size and the line.

Usage: gather_embedding.py --spmdc BUILD/compiler/spmdc
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import spmd_numpy as sn  # noqa: E402

V, D, B, T = 1024, 4, 8, 6

SHMAP = f"""
mesh M = (data: 2)

def loss(t: f64[{V}, {D}], ids: i32[{B // 2}, {T}], w: f64[{D}]) -> f64[] {{
  return sum(tanh(take(t, ids)) @ w)
}}

shmap f(t: f64[{V}, {D}] @ P(), ids: i32[{B}, {T}] @ P(data), w: f64[{D}] @ P(),
        x: f64[3, {V}] @ P())
    -> (e: f64[{B}, {T}, {D}] @ P(data), g: f64[{V}, {D}] @ P(), c: f64[3, {B}, {T}] @ P(None, data),
        z: f64[{B}, {T}, {D}] @ P(data)) on M {{
  l, g = grad(loss, wrt=t)(t, ids, w)
  return take(t, ids), g, take(x, ids, axis=1), take(t, ids - 6, mode="fill")
}}
"""

CROSS_ENTROPY = f"""
import std.nn

mesh M = (data: 2)

def ce_loss(lg: f64[{B // 2}, {T}, 5], labels: i32[{B // 2}, {T}]) -> f64[] {{
  return cross_entropy_labels(lg, labels)
}}

shmap ce(lg: f64[{B}, {T}, 5] @ P(data), ids: i32[{B}, {T}] @ P(data))
    -> (l: f64[] @ P(), g: f64[{B}, {T}, 5] @ P(data)) on M {{
  l, g = grad(ce_loss, wrt=lg)(lg, ids % 5)
  return pmean(l, data), g
}}
"""

SHARDED = f"""
mesh M = (data: 2, model: 2)

def loss(t: f64[{V}, {D}], ids: i32[{B}, {T}], w: f64[{D}]) -> f64[] {{
  return sum(tanh(take(t, ids)) @ w)
}}

sharded f(t: f64[{V}, {D}] @ P(model), ids: i32[{B}, {T}] @ P(data), w: f64[{D}] @ P())
    -> (e: f64[{B}, {T}, {D}] @ P(data), g: f64[{V}, {D}] @ P(model)) on M {{
  l, g = grad(loss, wrt=t)(t, ids, w)
  return take(t, ids), g
}}
"""

DATA_PARALLEL = f"""
mesh M = (data: 2, model: 2)

def loss(t: f64[{V}, {D}], ids: i32[{B}, {T}], w: f64[{D}]) -> f64[] {{
  return sum(tanh(take(t, ids)) @ w)
}}

sharded f(t: f64[{V}, {D}] @ P(), ids: i32[{B}, {T}] @ P(data), w: f64[{D}] @ P())
    -> (e: f64[{B}, {T}, {D}] @ P(data), g: f64[{V}, {D}] @ P()) on M {{
  l, g = grad(loss, wrt=t)(t, ids, w)
  return take(t, ids), g
}}
"""

OUT_OF_RANGE = f"""
mesh M = (data: 2)

shmap f(t: f64[{V}, {D}] @ P(), ids: i32[{B}, {T}] @ P(data)) -> f64[{B}, {T}, {D}] @ P(data) on M {{
  return take(t, ids + {V - 1})
}}
"""


def embedding_grad(t, ids, w):
    """d/dt of sum(tanh(t[ids]) @ w): each id's row gets (1 - tanh^2) * w."""
    g = np.zeros_like(t)
    np.add.at(g, ids.reshape(-1), ((1 - np.tanh(t[ids]) ** 2) * w).reshape(-1, t.shape[1]))
    return g


def compare(got, want, what):
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    if got.shape != want.shape or not err <= 1e-12:
        print(f"FAIL: {what}: shape {got.shape} vs {want.shape}, max error {err:.3g}")
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spmdc", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    t = rng.uniform(-1, 1, (V, D))
    ids = rng.integers(0, V, (B, T)).astype(np.int32)
    ids[0, :3] = 5  # repeated ids accumulate
    w = rng.uniform(-1, 1, D)
    x = rng.uniform(-1, 1, (3, V))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gather_") as d:
        # 1. shmap, and its printed form.
        src = os.path.join(d, "shmap.spmd")
        open(src, "w").write(SHMAP)
        filled = np.where(((ids - 6) >= 0)[..., None], t[np.clip(ids - 6, 0, V - 1)], 0.0)
        want = {"e": t[ids], "g": embedding_grad(t, ids, w), "c": x[:, ids], "z": filled}
        printed = os.path.join(d, "printed.spmd")
        with open(printed, "w") as f:
            subprocess.run([a.spmdc, "print", src], stdout=f, check=True)
        for path, what in ((src, "shmap"), (printed, "printed shmap")):
            got = sn.run(a.spmdc, path, {"t": t, "ids": ids, "w": w, "x": x})
            for k in want:
                failures += compare(got[k], want[k], f"{what} {k}")
        if 'mode="fill"' not in open(printed).read():
            print("FAIL: the printed program lost mode=\"fill\"")
            failures += 1

        # std.nn's cross_entropy_labels and its gradient, softmax - one_hot.
        src = os.path.join(d, "ce.spmd")
        open(src, "w").write(CROSS_ENTROPY)
        lg = rng.uniform(-2, 2, (B, T, 5))
        labels = ids % 5
        logp = lg - lg.max(-1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
        onehot = np.eye(5)[labels]
        got = sn.run(a.spmdc, src, {"lg": lg, "ids": ids})
        failures += compare(got["l"], np.array(-(logp * onehot).sum(-1).mean()), "cross_entropy_labels")
        failures += compare(got["g"], (np.exp(logp) - onehot) / (B // 2 * T),
                            "cross_entropy_labels' gradient")

        # 2. vocabulary-parallel global view, unsharded and sharded.
        src = os.path.join(d, "sharded.spmd")
        open(src, "w").write(SHARDED)
        want = {"e": t[ids], "g": embedding_grad(t, ids, w)}
        got = sn.run(a.spmdc, src, {"t": t, "ids": ids, "w": w})
        for k in want:
            failures += compare(got[k], want[k], f"global view {k}")
        split = os.path.join(d, "split.spmd")
        r = subprocess.run([a.spmdc, "shard", src, "-o", split], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: spmdc shard:\n{r.stderr}")
            return 1
        text = open(split).read()
        fills = len(re.findall(r'(take|scatter_add)\([^\n]*mode="fill"', text))
        psums = len(re.findall(r"psum\([^\n]*\bmodel\b", text))
        if fills < 1 or psums < 1:
            print(f"FAIL: expected shifted lookups (mode=\"fill\") and a psum over model:\n{text}")
            failures += 1
        got = sn.run(a.spmdc, split, {"t": t, "ids": ids, "w": w})
        for k in want:
            failures += compare(got[k], want[k], f"sharded {k}")
        print(f"vocabulary-parallel: {fills} shifted gathers, {psums} psum(s) over model")

        # 2b. data-parallel: the gradient's scatter_add split along the ids.
        src = os.path.join(d, "dp.spmd")
        open(src, "w").write(DATA_PARALLEL)
        r = subprocess.run([a.spmdc, "shard", src, "-o", split], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: spmdc shard (data-parallel):\n{r.stderr}")
            return 1
        text = open(split).read()
        gathers = len(re.findall(r"all_gather", text))
        psums = len(re.findall(r"psum\([^\n]*\bdata\b", text))
        masked = len(re.findall(r"where\(", text))
        if gathers or psums != 1 or masked != 1:
            print(f"FAIL: expected the table gradient's updates kept split (no all_gather), "
                  f"the table on data index 0 only (one where) and one psum over data:\n{text}")
            failures += 1
        got = sn.run(a.spmdc, split, {"t": t, "ids": ids, "w": w})
        for k in want:
            failures += compare(got[k], want[k], f"data-parallel sharded {k}")
        print(f"data-parallel: {gathers} all_gathers, {psums} psum(s) over data")

        # 3. out of range.
        src = os.path.join(d, "bad.spmd")
        open(src, "w").write(OUT_OF_RANGE)
        try:
            sn.run(a.spmdc, src, {"t": t, "ids": ids})
            print("FAIL: an id out of range ran")
            failures += 1
        except RuntimeError as e:
            msg = str(e)
            if not re.search(rf"bad\.spmd:5:\d+: error: .*take: index \d+ is out of range for "
                             rf"axis 0 of size {V}", msg):
                print(f"FAIL: the out-of-range error does not name the id and the line:\n{msg}")
                failures += 1
    print("gather_embedding:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
