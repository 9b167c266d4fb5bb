#!/usr/bin/env python3
"""numpy_habits.py — the NumPy habits of the language against NumPy itself.

Runs one program with `spmdc run` on a two-device mesh (every op works along
unsharded dimensions, so the global results must equal NumPy's on the global
arrays) and compares each output with the same expression evaluated by NumPy:
`%` and `//` on negative and positive integers and floats (f32 and f64,
including exact multiples, whose remainder has the sign of the divisor),
erf, log1p, expm1 (also of tiny arguments), cbrt (of negative ones too), argmax/argmin with ties, flip and negative slice steps, None
subscripts, .T, stack, squeeze, expand_dims, clip, var (ddof 0 and 1),
zeros_like/ones_like/full_like, every cast among bf16/f32/f64/i32/bool, and
batched matmul with broadcast batch dimensions.

Usage: numpy_habits.py --spmdc BUILD/compiler/spmdc [--seed N]
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

shmap habits(ai: i32[4, 6] @ P(i), bi: i32[4, 6] @ P(i), af: f32[4, 6] @ P(i),
             bf: f32[4, 6] @ P(i), ad: f64[4, 6] @ P(i), bd: f64[4, 6] @ P(i),
             ba: f32[2, 1, 3, 4] @ P(i), bb: f32[5, 4, 2] @ P())
    -> (mod_i: i32[4, 6] @ P(i), div_i: i32[4, 6] @ P(i), mod_f: f32[4, 6] @ P(i),
        div_f: f32[4, 6] @ P(i), mod_d: f64[4, 6] @ P(i), div_d: f64[4, 6] @ P(i),
        erf_d: f64[4, 6] @ P(i), log1p_d: f64[4, 6] @ P(i), expm1_d: f64[4, 6] @ P(i),
        expm1_f: f32[4, 6] @ P(i), cbrt_d: f64[4, 6] @ P(i), amax: i32[4] @ P(i),
        amin: i32[4] @ P(i), amax_all: i32[] @ P(), flipped: f32[4, 6] @ P(i),
        backwards: f32[4, 3] @ P(i), middle: f32[4, 2] @ P(i), newaxis: f32[4, 1, 6] @ P(i),
        tr: f32[6, 4] @ P(None, i), stacked: f32[4, 2, 6] @ P(i), squeezed: f32[4, 6] @ P(i),
        clipped: f32[4, 6] @ P(i), var0: f64[4] @ P(i), var1: f64[4, 1] @ P(i),
        likes: f32[4, 6] @ P(i), casts: f64[4, 6] @ P(i), bmm: f32[2, 5, 3, 2] @ P(i)) on M {
  mod_i = ai % bi
  div_i = ai // bi
  mod_f = af % bf
  div_f = af // bf
  mod_d = ad % bd
  div_d = ad // bd
  erf_d = erf(ad)
  log1p_d = log1p(ad * ad)
  expm1_d = expm1(ad * 1e-9) + expm1(ad)
  expm1_f = expm1(af)
  cbrt_d = cbrt(ad)
  amax = argmax(ai, axes=1)
  amin = argmin(ai, axes=-1)
  amax_all = argmax(pmax(reshape(cast(ai, f32), (2, 6)), i))
  flipped = flip(af, axes=1)
  backwards = af[:, ::-2]
  middle = af[:, 4:1:-2]
  newaxis = af[:, None]
  tr = af.T
  stacked = stack((af, bf), axis=1)
  squeezed = squeeze(expand_dims(af, (0, 2)))
  clipped = clip(af, -0.5, max=0.25)
  var0 = var(ad, axes=1)
  var1 = var(ad, axes=1, keepdims=true, ddof=1)
  likes = zeros_like(af) + ones_like(bf) * 2.0 + full_like(af, 0.5)
  casts = cast(cast(ad, bf16), f64) + cast(cast(ad, f32), f64) + cast(cast(ad * 3.0, i32), f64) + cast(cast(ai, bool), f64) + cast(af, f64).astype(f64)
  bmm = ba @ bb
  return mod_i, div_i, mod_f, div_f, mod_d, div_d, erf_d, log1p_d, expm1_d, expm1_f, cbrt_d, amax, amin, amax_all, flipped, backwards, middle, newaxis, tr, stacked, squeezed, clipped, var0, var1, likes, casts, bmm
}
"""


def bf16_round(x):
    """f64 -> f32 -> bf16 (nearest even) -> f64, as spmdc's cast does."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmdc", required=True)
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    ai = rng.integers(-20, 21, size=(4, 6)).astype(np.int32)
    ai[0, :3] = [7, 7, -3]  # ties for argmax / argmin
    bi = rng.integers(1, 7, size=(4, 6)).astype(np.int32) * rng.choice([-1, 1], size=(4, 6)).astype(np.int32)
    af = rng.uniform(-3, 3, size=(4, 6)).astype(np.float32)
    bf = rng.uniform(0.5, 2, size=(4, 6)).astype(np.float32) * rng.choice([-1, 1], size=(4, 6)).astype(np.float32)
    af[1, :4] = [3.0, -3.0, 3.0, -3.0]  # exact multiples: remainder +-0 with the divisor's sign
    bf[1, :4] = [1.5, 1.5, -1.5, -1.5]
    ad, bd = af.astype(np.float64) * 1.37, bf.astype(np.float64)
    ad[1, :4] = [3.0, -3.0, 3.0, -3.0]
    ba = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
    bb = rng.standard_normal((5, 4, 2)).astype(np.float32)
    inputs = dict(ai=ai, bi=bi, af=af, bf=bf, ad=ad, bd=bd, ba=ba, bb=bb)

    # argmax of pmax over the two devices' (2, 6) blocks, flattened.
    amax_global = np.argmax(np.maximum(ai[:2], ai[2:]))
    expected = dict(
        mod_i=ai % bi, div_i=ai // bi, mod_f=af % bf, div_f=af // bf, mod_d=ad % bd,
        div_d=ad // bd, erf_d=np.vectorize(math.erf)(ad), log1p_d=np.log1p(ad * ad),
        expm1_d=np.expm1(ad * 1e-9) + np.expm1(ad), expm1_f=np.expm1(af), cbrt_d=np.cbrt(ad),
        amax=np.argmax(ai, axis=1), amin=np.argmin(ai, axis=-1),
        amax_all=np.array(amax_global), flipped=np.flip(af, axis=1),
        backwards=af[:, ::-2], middle=af[:, 4:1:-2], newaxis=af[:, None], tr=af.T,
        stacked=np.stack((af, bf), axis=1), squeezed=af, clipped=np.clip(af, -0.5, 0.25),
        var0=np.var(ad, axis=1), var1=np.var(ad, axis=1, keepdims=True, ddof=1),
        likes=np.full_like(af, 2.5),
        casts=bf16_round(ad) + ad.astype(np.float32).astype(np.float64)
        + np.trunc(ad * 3.0) + (ai != 0) + af.astype(np.float64),
        bmm=np.matmul(ba, bb),
    )
    exact = {"mod_i", "div_i", "amax", "amin", "amax_all", "flipped", "backwards", "middle",
             "newaxis", "tr", "stacked", "squeezed", "clipped", "likes", "mod_f", "div_f",
             "mod_d", "div_d"}
    failures = 0
    with tempfile.TemporaryDirectory(prefix="spmdc-numpy-") as work:
        prog = os.path.join(work, "habits.spmd")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        cmd = [a.spmdc, "run", prog, "-q", "--out-dir", work]
        for name, arr in inputs.items():
            path = os.path.join(work, "in_" + name + ".npy")
            np.save(path, arr)
            cmd += ["--in", f"{name}={path}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print("spmdc run failed:\n" + proc.stderr)
            return 1
        for name, want in expected.items():
            got = np.load(os.path.join(work, name + ".npy"))
            want = np.asarray(want)
            ok = got.shape == want.shape
            if ok and name in exact:
                # Bit-exact, signs of zeros included.
                ok = np.array_equal(got, want.astype(got.dtype)) and np.array_equal(
                    np.signbit(got), np.signbit(want.astype(got.dtype)))
            elif ok:
                tol = 1e-5 if got.dtype == np.float32 else 1e-12
                ok = np.allclose(got, want, rtol=tol, atol=tol)
            if not ok:
                failures += 1
                print(f"{name}: spmdc\n{got}\nNumPy\n{want}")
    print(f"{len(expected) - failures} of {len(expected)} outputs match NumPy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
