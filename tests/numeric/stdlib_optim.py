#!/usr/bin/env python3
"""stdlib_optim.py — std.optim's optimizers, clipping and schedule against NumPy.

Eight training steps of a toy problem (gradient g = d + 0.3 d^3 with d = w - target,
so the gradient changes as w moves) run three times in one shmap on a two-device
mesh: SGD with momentum, Adam and AdamW, each on a parameter split by rows (P(i))
and a replicated one (P()). Every step clips both gradients by their global norm
(the sharded one's sum of squares psum'd over i) and takes its learning rate from
warmup_cosine. The same arithmetic written out in NumPy (float64, global arrays,
PyTorch's/optax's formulas typed in from their documentation) must match to
1e-12; the clip factor must have both clipped and unclipped steps, and the
schedule must rise, peak and fall, so each branch is exercised.

Then the global view: a `sharded` training step (grad of a def, then adamw on
weights whose layout spmdc chooses), run unsharded by `spmdc run`, sharded by
`spmdc shard --auto` and run again: both must equal NumPy's step. Last,
samples/global/train_adamw.spmd (30 clipped, scheduled AdamW steps in global
view): its loss must fall tenfold, and its sharded program must print the same
losses (to f32 reassociation, 1e-4).

Usage: stdlib_optim.py --spmdc BUILD/compiler/spmdc [--seed N]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import spmd_numpy as sn  # noqa: E402

STEPS = 8
PEAK, WARMUP, FINAL, MAX_NORM = 0.1, 3.0, 0.01, 4.0
B1, B2, EPS, WD, MOMENTUM = 0.9, 0.999, 1e-8, 0.05, 0.8

PROGRAM = f"""
import std.optim

mesh M = (i: 2)

def grad_of(w: f64[...], target: f64[...]) -> f64[...] {{
  d = w - target
  return d + 0.3 * d * d * d
}}

shmap train(w: f64[6, 4] @ P(i), u: f64[4] @ P(), tw: f64[6, 4] @ P(i), tu: f64[4] @ P())
    -> (w_sgd: f64[6, 4] @ P(i), u_sgd: f64[4] @ P(), w_adam: f64[6, 4] @ P(i),
        u_adam: f64[4] @ P(), w_adamw: f64[6, 4] @ P(i), u_adamw: f64[4] @ P(),
        lrs: f64[{STEPS}] @ P(), clips: f64[{STEPS}] @ P()) on M {{
  w1 = w; u1 = u; w2 = w; u2 = u; w3 = w; u3 = u
  vw1 = 0.0 * w; vu1 = 0.0 * u
  mw2 = 0.0 * w; vw2 = 0.0 * w; mu2 = 0.0 * u; vu2 = 0.0 * u
  mw3 = 0.0 * w; vw3 = 0.0 * w; mu3 = 0.0 * u; vu3 = 0.0 * u
  lrs = zeros(({STEPS},), dtype=f64)
  clips = zeros(({STEPS},), dtype=f64)
  for k in range({STEPS}) {{
    step = cast(k, f64)
    lr = warmup_cosine(step, {PEAK}, {WARMUP}, {STEPS}.0, {FINAL})
    lrs = dynamic_update_slice(lrs, reshape(lr, (1,)), k)

    gw = grad_of(w1, tw); gu = grad_of(u1, tu)
    c = clip_factor(psum(sum_of_squares(gw), i) + sum_of_squares(gu), {MAX_NORM})
    clips = dynamic_update_slice(clips, reshape(c, (1,)), k)
    w1, vw1 = sgd_momentum(w1, c * gw, vw1, lr, {MOMENTUM})
    u1, vu1 = sgd_momentum(u1, c * gu, vu1, lr, {MOMENTUM})

    gw = grad_of(w2, tw); gu = grad_of(u2, tu)
    c = clip_factor(psum(sum_of_squares(gw), i) + sum_of_squares(gu), {MAX_NORM})
    w2, mw2, vw2 = adam(w2, c * gw, mw2, vw2, step + 1.0, lr, {B1}, {B2}, {EPS})
    u2, mu2, vu2 = adam(u2, c * gu, mu2, vu2, step + 1.0, lr, {B1}, {B2}, {EPS})

    gw = grad_of(w3, tw); gu = grad_of(u3, tu)
    c = clip_factor(psum(sum_of_squares(gw), i) + sum_of_squares(gu), {MAX_NORM})
    w3, mw3, vw3 = adamw(w3, c * gw, mw3, vw3, step + 1.0, lr, {B1}, {B2}, {EPS}, {WD})
    u3, mu3, vu3 = adamw(u3, c * gu, mu3, vu3, step + 1.0, lr, {B1}, {B2}, {EPS}, {WD})
  }}
  return w1, u1, w2, u2, w3, u3, lrs, clips
}}
"""

# The global view: one training step of a small regression model, written once;
# spmdc chooses the weights' layout.
SHARDED = """
import std.nn
import std.optim

mesh M = (d: 2)

def loss(w: f64[4, 6], x: f64[8, 4], y: f64[8, 6]) -> f64[] {
  return mse(tanh(x @ w), y)
}

sharded step(x: f64[8, 4] @ P(d), y: f64[8, 6] @ P(d), w: f64[4, 6] @ auto,
             m: f64[4, 6] @ auto, v: f64[4, 6] @ auto)
    -> (l: f64[] @ P(), w: f64[4, 6] @ like(w), m: f64[4, 6] @ like(m),
        v: f64[4, 6] @ like(v)) on M {
  l, g = grad(loss, wrt=w)(w, x, y)
  w, m, v = adamw(w, g, m, v, 3.0, 0.05, 0.9, 0.999, 0.00000001, 0.01)
  return l, w, m, v
}
"""


def warmup_cosine(step, peak, warmup, total, final):
    """optax.warmup_cosine_decay_schedule(0, peak, warmup, total, final) at `step`."""
    if step < warmup:
        return peak * step / warmup
    progress = min((step - warmup) / (total - warmup), 1.0)
    return final + (peak - final) * 0.5 * (1 + math.cos(math.pi * progress))


def clip_factor(grads, max_norm):
    """optax.clip_by_global_norm's scale: 1, or max_norm / ||grads||."""
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    return 1.0 if norm <= max_norm else max_norm / norm


def reference(w, u, tw, tu):
    def grad_of(p, t):
        d = p - t
        return d + 0.3 * d ** 3

    out, lrs, clips = {}, [], []
    # SGD with momentum (torch.optim.SGD: buf = momentum * buf + g; p -= lr * buf)
    ps, bufs = [w.copy(), u.copy()], [np.zeros_like(w), np.zeros_like(u)]
    for k in range(STEPS):
        lr = warmup_cosine(k, PEAK, WARMUP, STEPS, FINAL)
        lrs.append(lr)
        gs = [grad_of(p, t) for p, t in zip(ps, (tw, tu))]
        c = clip_factor(gs, MAX_NORM)
        clips.append(c)
        for j in range(2):
            bufs[j] = MOMENTUM * bufs[j] + c * gs[j]
            ps[j] = ps[j] - lr * bufs[j]
    out["w_sgd"], out["u_sgd"] = ps
    # Adam and AdamW (bias-corrected moments; AdamW's decay is decoupled: lr * wd * p)
    for name, wd in (("adam", 0.0), ("adamw", WD)):
        ps = [w.copy(), u.copy()]
        ms = [np.zeros_like(w), np.zeros_like(u)]
        vs = [np.zeros_like(w), np.zeros_like(u)]
        for k in range(STEPS):
            lr = lrs[k]
            gs = [grad_of(p, t) for p, t in zip(ps, (tw, tu))]
            c = clip_factor(gs, MAX_NORM)
            t = k + 1
            for j in range(2):
                g = c * gs[j]
                ms[j] = B1 * ms[j] + (1 - B1) * g
                vs[j] = B2 * vs[j] + (1 - B2) * g * g
                m_hat = ms[j] / (1 - B1 ** t)
                v_hat = vs[j] / (1 - B2 ** t)
                ps[j] = ps[j] - lr * (m_hat / (np.sqrt(v_hat) + EPS) + wd * ps[j])
        out["w_" + name], out["u_" + name] = ps
    out["lrs"], out["clips"] = np.array(lrs), np.array(clips)
    return out


def sharded_reference(x, y, w, m, v):
    h = np.tanh(x @ w)
    r = h - y
    loss = (r ** 2).mean()
    g = x.T @ ((2 * r / r.size) * (1 - h ** 2))
    m1 = 0.9 * m + 0.1 * g
    v1 = 0.999 * v + 0.001 * g * g
    m_hat, v_hat = m1 / (1 - 0.9 ** 3), v1 / (1 - 0.999 ** 3)
    w1 = w - 0.05 * (m_hat / (np.sqrt(v_hat) + 1e-8) + 0.01 * w)
    return {"l": np.array(loss), "w": w1, "m": m1, "v": v1}


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run_random(spmdc, path, d):
    """`spmdc run PATH --random 1`'s outputs (the inputs drawn by name, so a sharded
    program gets the same global arrays as its global-view source)."""
    out = os.path.join(d, "out_" + os.path.basename(path))
    subprocess.run([spmdc, "run", path, "--random", "1", "--out-dir", out, "-q"], check=True)
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def compare(got, want, what, tol):
    bad = 0
    for k, ref in want.items():
        err = np.max(np.abs(got[k] - ref) / (1 + np.abs(ref)))
        ok = err <= tol
        print(f"{what} {k}: max relative error {err:.2e} {'ok' if ok else 'FAIL'}")
        bad += not ok
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmdc", required=True)
    ap.add_argument("--seed", type=int, default=28)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    inputs = {"w": rng.uniform(-1, 1, (6, 4)), "u": rng.uniform(-1, 1, 4),
              "tw": rng.uniform(-1, 1, (6, 4)), "tu": rng.uniform(-1, 1, 4)}
    failures = 0
    with tempfile.TemporaryDirectory(prefix="stdlib_optim_") as d:
        path = os.path.join(d, "optim.spmd")
        with open(path, "w") as f:
            f.write(PROGRAM)
        got = sn.run(a.spmdc, path, inputs)
        want = reference(**inputs)
        failures += compare(got, want, "shmap", 1e-12)
        clips, lrs = want["clips"], want["lrs"]
        if not (np.any(clips < 1) and np.any(clips == 1)):
            print(f"FAIL: the clip factors {clips} do not exercise both branches")
            failures += 1
        if not (lrs[0] == 0 and np.argmax(lrs) == WARMUP and lrs[-1] < lrs[int(WARMUP)]):
            print(f"FAIL: the schedule {lrs} does not rise, peak at the warmup's end and fall")
            failures += 1

        # Global view: unsharded, then as spmdc shard --auto writes it.
        sharded_in = {"x": rng.uniform(-1, 1, (8, 4)), "y": rng.uniform(-1, 1, (8, 6)),
                      "w": rng.uniform(-1, 1, (4, 6)), "m": rng.uniform(-0.1, 0.1, (4, 6)),
                      "v": rng.uniform(0, 0.01, (4, 6))}
        want = sharded_reference(**sharded_in)
        step = os.path.join(d, "step.spmd")
        with open(step, "w") as f:
            f.write(SHARDED)
        failures += compare(sn.run(a.spmdc, step, sharded_in), want, "sharded, unsharded run", 1e-12)
        split = os.path.join(d, "step_split.spmd")
        r = subprocess.run([a.spmdc, "shard", "--auto", step, "-o", split],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: spmdc shard --auto:\n{r.stderr}")
            return 1
        failures += compare(sn.run(a.spmdc, split, sharded_in), want, "sharded, split run", 1e-12)
        # `like(w)` results keep their parameter's chosen layout, so the emitted
        # step iterates as it is: 10 steps of it equal 10 steps of NumPy's.
        with open(split) as f:
            header = f.read()
        for name in ("w", "m", "v"):
            chosen = re.search(rf"^#   {name}: (\S+) \(chosen\)$", header, re.M)
            kept = re.search(rf"^#   {name} \(result\): (\S+) \(like {name}\)$", header, re.M)
            if not chosen or not kept or chosen.group(1) != kept.group(1):
                print(f"FAIL: result {name} does not keep parameter {name}'s layout:\n{header[:800]}")
                failures += 1
        state, ref = dict(sharded_in), dict(sharded_in)
        for _ in range(10):
            out = sn.run(a.spmdc, split, state)
            state.update({k: out[k] for k in ("w", "m", "v")})
            r10 = sharded_reference(**ref)
            ref.update({k: r10[k] for k in ("w", "m", "v")})
        failures += compare({k: state[k] for k in ("w", "m", "v")},
                            {k: ref[k] for k in ("w", "m", "v")}, "sharded, 10 steps", 1e-10)

        # The sample: a 30-step AdamW loop in global view, unsharded and sharded.
        sample = os.path.join(ROOT, "samples", "global", "train_adamw.spmd")
        split = os.path.join(d, "train_split.spmd")
        r = subprocess.run([a.spmdc, "shard", "--auto", sample, "-o", split],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: spmdc shard --auto {sample}:\n{r.stderr}")
            return 1
        with open(split) as f:
            emitted = f.read()
        if "for k in range(0, 30)" not in emitted:
            print("FAIL: the sharded sample's training loop is not a loop")
            failures += 1
        losses = [run_random(a.spmdc, p, d)["losses"] for p in (sample, split)]
        err = np.max(np.abs(losses[1] - losses[0]) / np.abs(losses[0]))
        falls = losses[0][-1] < losses[0][0] / 10
        print(f"train_adamw: loss {losses[0][0]:.4f} -> {losses[0][-1]:.4f}; sharded vs "
              f"unsharded max relative difference {err:.1e}")
        if err > 1e-4 or not falls:
            print("FAIL: the sample's sharded losses differ or its loss does not fall tenfold")
            failures += 1
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
