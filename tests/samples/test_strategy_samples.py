#!/usr/bin/env python3
"""test_strategy_samples.py SPMDC SOURCE_DIR — the strategy samples compute
what an unsharded NumPy program computes, and communicate what their header
and samples/README.md say.

Each sample runs with `spmdc run --check-replication` on random inputs
written here as .npy files; its outputs are compared with a reference
written in NumPy over the *global* arrays (no devices, no collectives), so
the reference shares no code with spmdc. Its communication (`spmdc print
--stats`: count and bytes moved per device of each collective, for the
forward program and for the backward program `spmdc vjp` / `spmdc grad`
emits) is compared with the formulas of the README, which are derived by
hand from the shapes: for a local block of B bytes over a group of n
devices, all_gather and psum_scatter move (n-1)/n of the gathered (summed)
array, psum 2 (n-1)/n of its operand, all_to_all (n-1)/n of its operand,
ppermute its operand.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import spmd_numpy as sn  # noqa: E402
from spmd_numpy import attention, gelu, layer_norm  # noqa: E402

spmdc, src = sys.argv[1], sys.argv[2]
failures = []
tmpdir = tempfile.TemporaryDirectory(prefix="spmdc_samples_")
tmp = tmpdir.name
F32 = 4


def sample(name):
    return os.path.join(src, "samples", name)


def run(path, inputs, fn=None):
    return sn.run(spmdc, path, inputs, fn)


def stats(path, fn=None):
    """{collective: (count, moved bytes per device)} from spmdc print --stats,
    without the ones that move nothing."""
    r = subprocess.run([spmdc, "print", "--stats", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    ops, current = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^(\w+) \(mesh", line)
        if m:
            current = m.group(1)
            continue
        m = re.match(r"^\s+(\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", line)
        if m and (fn is None or current == fn) and float(m.group(4)) > 0:
            ops[m.group(1)] = (int(m.group(2)), float(m.group(4)))
    return ops


def derived(kind, path, fn=None, extra=()):
    out = os.path.join(tmp, f"{os.path.basename(path)}.{kind}.spmd")
    args = [spmdc, kind, path, "-o", out, *extra] + (["--fn", fn] if fn else [])
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"spmdc {kind} {path}: {r.stderr}")
    return out


def expect_close(what, got, want, rtol=1e-4, atol=1e-5):
    if got.shape != want.shape:
        failures.append(f"{what}: shape {got.shape}, expected {want.shape}")
    elif not np.allclose(got, want, rtol=rtol, atol=atol):
        failures.append(f"{what}: max error {np.abs(got - want).max():.3g}")


def expect_comm(what, got, want):
    """want: {op: (count, bytes)}; bytes compared to 1e-6."""
    norm = lambda d: {k: (c, round(b, 6)) for k, (c, b) in d.items()}
    if norm(got) != norm(want):
        failures.append(f"{what}: communication {got}, expected {want}")


rng = np.random.default_rng(16)


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def gathered(n, elems):  # all_gather / psum_scatter: (n-1)/n of the whole array
    return (n - 1) / n * elems * F32


def reduced(n, elems):  # psum: 2 (n-1)/n of its operand
    return 2 * (n - 1) / n * elems * F32


def check(name, body):
    try:
        body()
    except Exception as e:  # a crash of one sample should not hide the others
        failures.append(f"{name}: {type(e).__name__}: {e}")


# --- Megatron sequence parallelism --------------------------------------
def megatron_sp():
    path = sample("megatron_sp.spmd")
    x, s, b = rand(16, 8), rand(8), rand(8)
    w1, b1, w2, b2 = rand(8, 32), rand(32), rand(32, 8), rand(8)
    out = run(path, dict(x=x, ln_scale=s, ln_bias=b, w1=w1, b1=b1, w2=w2, b2=b2))
    want = x + gelu(layer_norm(x, s, b) @ w1 + b1) @ w2 + b2
    expect_close("megatron_sp", out["mlp_block"], want)
    # Forward: all_gather of the 16x8 activations, psum_scatter of the 16x8
    # output: together exactly the psum of plain TP.
    expect_comm("megatron_sp forward", stats(path),
                {"all_gather": (1, gathered(4, 16 * 8)), "psum_scatter": (1, gathered(4, 16 * 8))})
    assert gathered(4, 16 * 8) * 2 == reduced(4, 16 * 8)
    # Backward (vjp w.r.t. every parameter): the forward's two again (the
    # residuals are recomputed) and their transposes (psum_scatter <- all_gather
    # and all_gather <- psum_scatter), each pair independent and so combined
    # into one collective of both (`full, partial_bar = all_gather((hn,
    # mlp_block_bar), model)`), and one combined psum of the gradients of the
    # replicated ln_scale, ln_bias, b2 (3 x 8 floats).
    expect_comm("megatron_sp backward", stats(derived("vjp", path)),
                {"all_gather": (1, 2 * gathered(4, 16 * 8)),
                 "psum_scatter": (1, 2 * gathered(4, 16 * 8)), "psum": (1, reduced(4, 3 * 8))})


# --- Ulysses --------------------------------------------------------------
def ulysses():
    path = sample("ulysses_attention.spmd")
    q, k, v = rand(16, 8, 4), rand(16, 8, 4), rand(16, 8, 4)
    out = run(path, dict(q=q, k=k, v=v))
    expect_close("ulysses", out["ulysses"], attention(q, k, v))
    # Four all_to_alls of a local f32[4, 8, 4] block: (n-1)/n of it each.
    a2a = 3 / 4 * 4 * 8 * 4 * F32
    expect_comm("ulysses forward", stats(path), {"all_to_all": (4, 4 * a2a)})
    # The transpose of an all_to_all is the all_to_all back: 4 to recompute
    # the forward, 4 for the cotangents of o, q, k, v... (o's is one of them).
    expect_comm("ulysses backward", stats(derived("vjp", path)), {"all_to_all": (8, 8 * a2a)})


# --- 2-D matmuls: Cannon and SUMMA -----------------------------------------
def matmul_2d(name, fn, comm, back):
    path = sample(name)
    a, b = rand(12, 9), rand(9, 6)
    out = run(path, dict(a=a, b=b))
    expect_close(name, out[fn], a @ b)
    expect_comm(f"{name} forward", stats(path), comm)
    expect_comm(f"{name} backward", stats(derived("vjp", path)), back)


A_BLOCK, B_BLOCK = 4 * 3, 3 * 2  # elements of a device's block of a and b on the 3 x 3 grid


def cannon():
    # Skew (one ppermute of each block over (x, y)) + 2 steps x 2 shifts: 3
    # moves of each block. The stats count the diagonal devices' moves to
    # themselves too, so the figure is the per-device maximum.
    one = (A_BLOCK + B_BLOCK) * F32
    matmul_2d("cannon_matmul.spmd", "cannon", {"ppermute": (6, 3 * one)},
              {"ppermute": (12, 6 * one)})


def summa():
    # 3 steps, each a psum-broadcast of an A block along y and a B block along x.
    step = reduced(3, A_BLOCK) + reduced(3, B_BLOCK)
    matmul_2d("summa_matmul.spmd", "summa", {"psum": (6, 3 * step)}, {"psum": (12, 6 * step)})


# --- 1F1B pipeline -----------------------------------------------------------
def pipeline_1f1b():
    path = sample("pipeline_1f1b.spmd")
    S, M = 4, 8
    inputs, targets, w = rand(M, 2, 8), rand(M, 2, 8), rand(S * 8, 8)
    out = run(path, dict(inputs=inputs, targets=targets, w=w))
    ws = [w[8 * s:8 * s + 8].astype(np.float64) for s in range(S)]

    def loss_and_grad(ws):
        loss, grads = 0.0, [np.zeros_like(v) for v in ws]
        for m in range(M):
            xs = [inputs[m].astype(np.float64)]
            for v in ws:
                xs.append(np.tanh(xs[-1] @ v))
            err = xs[-1] - targets[m]
            loss += 0.5 * (err ** 2).sum()
            dy = err
            for s in reversed(range(S)):  # backpropagation by hand
                dz = dy * (1 - xs[s + 1] ** 2)
                grads[s] += xs[s].T @ dz
                dy = dz @ ws[s].T
        return loss, grads

    loss, grads = loss_and_grad(ws)
    # The hand-written backward agrees with central differences of the loss.
    h, v = 1e-6, [rng.standard_normal(x.shape) for x in ws]
    fd = (loss_and_grad([a + h * b for a, b in zip(ws, v)])[0] -
          loss_and_grad([a - h * b for a, b in zip(ws, v)])[0]) / (2 * h)
    assert abs(fd - sum((g * b).sum() for g, b in zip(grads, v))) < 1e-6 * max(1, abs(fd))
    expect_close("1f1b loss", out["loss"], np.float32(loss), rtol=1e-4)
    expect_close("1f1b gradient", out["grad_w"], np.concatenate(grads).astype(np.float32), rtol=1e-3,
                 atol=1e-4)
    # The bubble: 2 (M + S - 1) ticks, each stage busy 2 M of them, so the
    # idle fraction is (S - 1) / (M + S - 1) = 3/11 on every stage.
    ticks = 2 * (M + S - 1)
    expect_close("1f1b busy ticks", out["busy"], np.full(S, 2.0 * M, np.float32))
    bubble = 1 - out["busy"] / ticks
    expect_close("1f1b bubble fraction", bubble, np.full(S, (S - 1) / (M + S - 1)))
    # Per tick one activation and one gradient ppermute of a [2, 8] block;
    # one psum of the loss scalar.
    expect_comm("1f1b forward", stats(path),
                {"ppermute": (2 * ticks, 2 * ticks * 2 * 8 * F32), "psum": (1, reduced(4, 1))})


# --- ZeRO-2 and ZeRO-3 --------------------------------------------------------
def zero():
    w1, w2, m1, m2 = rand(16, 32), rand(32, 8), rand(16, 32), rand(32, 8)
    x, y, lr = rand(64, 16), rand(64, 8), np.float32(0.1)
    # The unsharded step: the mean squared error over all 64 examples, its
    # gradient by hand, SGD with momentum 0.9.
    h = np.tanh(x @ w1)
    pred = h @ w2
    loss = ((pred - y) ** 2).mean()
    dpred = 2 * (pred - y) / pred.size
    g2 = h.T @ dpred
    g1 = x.T @ ((dpred @ w2.T) * (1 - h ** 2))
    n1, n2 = 0.9 * m1 + g1, 0.9 * m2 + g2
    want = [loss, w1 - lr * n1, w2 - lr * n2, n1, n2]
    inputs = dict(w1=w1, w2=w2, m1=m1, m2=m2, x=x, y=y, lr=lr)
    params = 16 * 32 + 32 * 8
    for name, fn, comm in [
        # ZeRO-2: each gradient reduce-scattered, each parameter's new rows
        # all-gathered: together the bytes of DP's psum of the gradients.
        ("zero2_step.spmd", "zero2_step",
         {"psum_scatter": (2, gathered(4, params)), "all_gather_invariant": (2, gathered(4, params)),
          "psum": (1, reduced(4, 1))}),
        # ZeRO-3: both parameters gathered for the forward by one combined
        # all_gather, both gradients reduce-scattered by one combined
        # psum_scatter in the derived backward; nothing after the update.
        ("zero3_step.spmd", "zero3_step",
         {"all_gather": (1, gathered(4, params)), "psum_scatter": (1, gathered(4, params)),
          "psum": (1, reduced(4, 1))})]:
        out = run(sample(name), inputs)
        for k, w in zip(["loss", "w1", "w2", "m1", "m2"], want):
            expect_close(f"{name} result {k}", out[k], np.asarray(w, np.float32))
        expect_comm(f"{name} communication", stats(sample(name), fn), comm)
    assert gathered(4, params) * 2 == reduced(4, params)


for name, body in [("megatron_sp", megatron_sp), ("ulysses", ulysses), ("cannon", cannon),
                   ("summa", summa), ("1f1b", pipeline_1f1b),
                   ("zero", zero)]:
    check(name, body)

for f in failures:
    print("FAIL:", f)
tmpdir.cleanup()
print(f"strategy samples: {len(failures)} failures")
sys.exit(1 if failures else 0)
