#!/usr/bin/env python3
"""accurate_reductions.py — f32 sums and means against NumPy in float64.

spmdc sums floating-point values in f64 lanes and rounds once (spmdrt/kernels.h,
kSumLanes), so an f32 reduction of 10^6 elements stays within an f32 rounding
of the exact value; a sequential f32 sum loses about four digits there. This
runs one program with `spmdc run` and as a built CPU executable on the same
inputs and checks every output against the float64 reduction of the same f32
values (NumPy, math.fsum for the whole-array mean):
- sum over rows, over columns and over everything of an f32[1000, 1000];
- mean and var of 10^6 elements (target: 1e-6 relative, for every output; one
  f32 rounding is 6e-8; before accurate sums the mean was 3e-6 off, var 4e-4);
- the global mean of an array sharded over two devices (local sums, then psum);
- a bf16 sum, rounded once from the exact sum (at most half a bf16 ulp away);
- the executable's outputs bit-identical to `spmdc run`'s.

Usage: accurate_reductions.py --spmdc BUILD/compiler/spmdc [--seed N]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

PROGRAM = """
mesh M = (i: 2)

shmap reductions(x: f32[1000, 1000] @ P(), s: f32[2000, 500] @ P(i), b: bf16[4096] @ P())
    -> (rows: f32[1000] @ P(), cols: f32[1000] @ P(), total: f32[] @ P(), m: f32[] @ P(),
        v: f32[] @ P(), gm: f32[] @ P(), bs: bf16[] @ P()) on M {
  rows = sum(x, axes=1)
  cols = sum(x, axes=0)
  total = sum(x)
  m = mean(x)
  v = var(x)
  gm = psum(sum(s), i) / 1000000.0
  bs = sum(b)
  return rows, cols, total, m, v, gm, bs
}
"""


def bf16_round(values):
    """float64 -> f32 -> bf16 (nearest even), as a float64 array."""
    f = np.atleast_1d(np.asarray(values, dtype=np.float64)).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmdc", required=True)
    ap.add_argument("--seed", type=int, default=32)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    # Positive values with a large mean: no cancellation, so the relative error
    # of a sum is the accumulation's own.
    x = rng.uniform(0.5, 1.5, size=(1000, 1000)).astype(np.float32)
    s = rng.uniform(1.0, 2.0, size=(2000, 500)).astype(np.float32)
    b_bits = (rng.uniform(0.5, 1.0, size=4096).astype(np.float32).view(np.uint32) >> 16) << 16
    b64 = b_bits.astype(np.uint32).view(np.float32).astype(np.float64)
    xd = x.astype(np.float64)
    expected = dict(
        rows=xd.sum(axis=1), cols=xd.sum(axis=0), total=np.array(math.fsum(xd.ravel())),
        m=np.array(math.fsum(xd.ravel()) / xd.size), v=np.array(xd.var()),
        gm=np.array(math.fsum(s.astype(np.float64).ravel()) / 1e6),
        bs=np.array(math.fsum(b64)))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="spmdc-reductions-") as work:
        prog = os.path.join(work, "reductions.spmd")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        ins = []
        for name, arr in (("x", x), ("s", s)):
            path = os.path.join(work, name + ".npy")
            np.save(path, arr)
            ins += ["--in", f"{name}={path}"]
        # NumPy has no bf16: b's values are bf16-exact, passed as f32.
        bpath = os.path.join(work, "b.npy")
        np.save(bpath, b64.astype(np.float32))
        ins += ["--in", f"b={bpath}"]
        run_dir = os.path.join(work, "run")
        exe_dir = os.path.join(work, "exe")
        os.makedirs(run_dir)
        os.makedirs(exe_dir)
        proc = subprocess.run([a.spmdc, "run", prog, "-q", "--out-dir", run_dir] + ins,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print("spmdc run failed:\n" + proc.stderr)
            return 1
        exe = os.path.join(work, "reductions")
        proc = subprocess.run([a.spmdc, "build", prog, "--target", "cpu", "-o", exe],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print("spmdc build failed:\n" + proc.stderr)
            return 1
        proc = subprocess.run([exe, "-q", "--out-dir", exe_dir] + ins, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            print("executable failed:\n" + proc.stderr)
            return 1
        for name, want in expected.items():
            got = np.load(os.path.join(run_dir, name + ".npy"))
            from_exe = np.load(os.path.join(exe_dir, name + ".npy"))
            if got.dtype != from_exe.dtype or got.tobytes() != from_exe.tobytes():
                failures += 1
                print(f"{name}: the executable's bits differ from spmdc run's")
            got64 = got.astype(np.float64)
            if name == "bs":
                # One rounding of the exact sum to bf16.
                ok = bool(got64 == bf16_round(want)[0])
                err = abs(got64 - want) / abs(want)
            else:
                err = np.max(np.abs(got64 - want) / np.abs(want))
                ok = err <= 1e-6
            print(f"{name}: max relative error {float(np.max(err)):.2e}")
            if not ok:
                failures += 1
                print(f"{name}: too far from the float64 reduction")
    print(f"{len(expected) - failures} of {len(expected)} outputs within bounds")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
