#!/usr/bin/env python3
"""stdlib_generic.py — std.nn on every rank and dtype, against NumPy.

The standard library's functions are generic (`def relu[T](x: T[...])`,
`def softmax[T](x: T[..., m])`): this runs each of them with `spmdc run` on
arrays of rank 1, 2 and 3 in f64, f32, bf16 and i32 (where the math allows)
on a two-device mesh and compares every output with the same formula written
in NumPy on the global arrays (f64 to 1e-12, f32 to 1e-5; the bf16 result is
compared with NumPy on the bf16-rounded input, rounded again). Sharded
outputs are computed on each device's block of the leading dimension, which
these row-wise functions do not mix; the means are pmean'd into global means.

Usage: stdlib_generic.py --spmdc BUILD/compiler/spmdc [--seed N]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import spmd_numpy as sn  # noqa: E402

PROGRAM = """
import std.nn

mesh M = (i: 2)

shmap stdlib(x3: f64[4, 3, 5] @ P(i), w: f64[5, 2] @ P(), b: f64[2] @ P(), x1: f64[5] @ P(),
             x2: f32[4, 5] @ P(i), t2: f32[4, 5] @ P(i), v: f32[6] @ P(i), n: i32[6] @ P(i),
             scale: f64[5] @ P(), bias: f64[5] @ P())
    -> (relu3: f64[4, 3, 5] @ P(i), gelu1: f64[5] @ P(), softmax3: f64[4, 3, 5] @ P(i),
        log_softmax1: f64[5] @ P(), mse3: f64[] @ P(), ce2: f32[] @ P(),
        layer_norm3: f64[4, 3, 5] @ P(i), dense3: f64[4, 3, 2] @ P(i), dense1: f64[2] @ P(),
        relu_i32: i32[6] @ P(i), relu_bf16: f32[6] @ P(i), softmax2: f32[4, 5] @ P(i),
        gelu0: f64[] @ P()) on M {
  relu3 = relu(x3)
  gelu1 = gelu(x1)
  softmax3 = softmax(x3)
  log_softmax1 = log_softmax(x1)
  mse3 = pmean(mse(x3, 2.0 * x3), i)
  ce2 = pmean(cross_entropy(x2, softmax(t2)), i)
  layer_norm3 = layer_norm(x3, scale, bias)
  dense3 = dense(x3, w, b)
  dense1 = nn.dense(x1, w, b)
  relu_i32 = relu(n)
  relu_bf16 = cast(relu(cast(v, bf16)), f32)
  softmax2 = nn.softmax(x2)
  gelu0 = gelu(x1[0] * 0.0 + 1.5)
  return relu3, gelu1, softmax3, log_softmax1, mse3, ce2, layer_norm3, dense3, dense1, relu_i32, relu_bf16, softmax2, gelu0
}
"""


def bf16_round(x):
    """-> f32 -> bf16 (nearest even) -> f32, as spmdc's cast does."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmdc", required=True)
    ap.add_argument("--seed", type=int, default=16)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    x3 = rng.standard_normal((4, 3, 5))
    w, b, x1 = rng.standard_normal((5, 2)), rng.standard_normal(2), rng.standard_normal(5)
    x2 = rng.standard_normal((4, 5)).astype(np.float32)
    t2 = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal(6).astype(np.float32)
    n = rng.integers(-9, 10, size=6).astype(np.int32)
    scale, bias = rng.uniform(0.5, 2, 5), rng.standard_normal(5)
    inputs = dict(x3=x3, w=w, b=b, x1=x1, x2=x2, t2=t2, v=v, n=n, scale=scale, bias=bias)

    x2d = x2.astype(np.float64)
    expected = dict(
        relu3=np.maximum(x3, 0.0), gelu1=sn.gelu(x1), softmax3=softmax(x3),
        log_softmax1=log_softmax(x1), mse3=np.mean((x3 - 2.0 * x3) ** 2),
        ce2=-np.mean(np.sum(softmax(t2.astype(np.float64)) * log_softmax(x2d), axis=-1)),
        layer_norm3=sn.layer_norm(x3, scale, bias), dense3=x3 @ w + b,
        dense1=x1 @ w + b, relu_i32=np.maximum(n, 0), relu_bf16=np.maximum(bf16_round(v), 0),
        softmax2=softmax(x2d), gelu0=sn.gelu(np.float64(1.5)),
    )
    with tempfile.TemporaryDirectory(prefix="spmdc-stdlib-") as work:
        prog = os.path.join(work, "stdlib.spmd")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        try:
            outputs = sn.run(a.spmdc, prog, inputs)
        except RuntimeError as e:
            print(e)
            return 1
    failures = 0
    for name, want in expected.items():
        got = outputs[name]
        want = np.asarray(want)
        ok = got.shape == want.shape
        if ok and (got.dtype.kind == "i" or name == "relu_bf16"):
            ok = np.array_equal(got, want.astype(got.dtype))
        elif ok:
            tol = 1e-5 if got.dtype == np.float32 else 1e-12
            ok = np.allclose(got, want, rtol=tol, atol=tol)
        if not ok:
            failures += 1
            print(f"{name}: spmdc {got.dtype}{list(got.shape)}\n{got}\nNumPy\n{want}")
    print(f"{len(expected) - failures} of {len(expected)} std.nn outputs match NumPy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
