#!/usr/bin/env python3
"""test_train_samples.py SPMDC SOURCE_DIR — the training-step samples of
samples/global/ (train_dp, train_fsdp, train_tp, train_dp_tp, train_ep) are
sharded by `spmdc shard --auto` into the strategy their header names, and the
emitted step trains exactly like the unsharded one.

For each sample, with the flags its header gives:
- the weights' specs in the emitted program are the strategy's (DP: whole;
  FSDP: w1 split over the data axis, w2 whole; Megatron TP: w1 by columns, w2 by rows; EP:
  the experts' weights by expert, the router whole);
- its collectives (`spmdc print --stats`: count and bytes moved per device)
  are the strategy's, by the hand formulas below (for a local block of B
  bytes over a group of n devices: psum moves 2 (n-1)/n B, all_gather and
  psum_scatter (n-1)/n of the gathered array, all_to_all (n-1)/n B);
- it re-checks with `spmdc check --strict` (no sharding conflict; it carries
  [[no_auto_pbroadcast]], so every pbroadcast is written out);
- 10 steps of it, each fed the weights the previous one returned (the
  results are declared `like(w)`, so they come back in the weights' layout),
  give the losses and weights of 10 steps of the global-view function run
  unsharded (`spmdc run`), up to float reassociation, and the loss falls over
  them. The first loss is also
  checked against NumPy's forward pass over the global arrays, so the
  reference itself is tied to something outside spmdc.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import spmd_numpy as sn  # noqa: E402
from spmd_numpy import gelu  # noqa: E402

spmdc, src = sys.argv[1], sys.argv[2]
failures = []
tmpdir = tempfile.TemporaryDirectory(prefix="spmdc_train_samples_")
tmp = tmpdir.name
F32 = 4
STEPS = 10
rng = np.random.default_rng(28)


def gathered(n, elems):  # all_gather / psum_scatter: (n-1)/n of the whole array
    return (n - 1) / n * elems * F32


def reduced(n, elems):  # psum: 2 (n-1)/n of its operand
    return 2 * (n - 1) / n * elems * F32


def exchanged(n, elems):  # all_to_all: (n-1)/n of its operand
    return (n - 1) / n * elems * F32


def run(*args):
    r = subprocess.run([spmdc, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"spmdc {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r


def stats(path):
    """{collective: (count, moved bytes per device)}, without the ones that move nothing."""
    ops = {}
    for line in run("print", "--stats", path).stdout.splitlines():
        m = re.match(r"^\s+(\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", line)
        if m and float(m.group(4)) > 0:
            ops[m.group(1)] = (int(m.group(2)), float(m.group(4)))
    return ops


def emitted_specs(path):
    """The parameters' specs from the emitted program's header (`#   w1: P(...) (chosen)`)."""
    specs = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^#   (\w+): (P\(.*?\))(?: \(chosen\))?$", line)
            if m:
                specs.setdefault(m.group(1), m.group(2))
    return specs


def uniform(*shape, scale=1.0):
    return (scale * rng.uniform(-1, 1, shape)).astype(np.float32)


def mlp_inputs(b, e, m):
    # Weights about 1/sqrt(fan-in), as an initialiser would make them.
    return dict(x=uniform(b, e), y=uniform(b, e), w1=uniform(e, m, scale=e ** -0.5),
                w2=uniform(m, e, scale=m ** -0.5))


def mlp_loss(i):
    pred = gelu(i["x"].astype(np.float64) @ i["w1"]) @ i["w2"]
    return ((pred - i["y"]) ** 2).mean()


def softmax(z):
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def moe_loss(i):
    x = i["x"].astype(np.float64)
    slots = x.reshape(4, 4, 2, 8)  # [source, expert, slot, d]
    u = np.einsum("sekd,edh->sekh", slots, i["w1"])
    out = np.einsum("sekh,ehd->sekd", gelu(u), i["w2"])
    probs = softmax(x @ i["wg"]).reshape(4, 4, 2, 4)
    gate = np.stack([probs[:, e, :, e] for e in range(4)], axis=1)[..., None]  # expert e's column
    return ((((out * gate).reshape(32, 8)) - i["y"]) ** 2).mean()


def moe_inputs():
    return dict(x=uniform(32, 8), y=uniform(32, 8), w1=uniform(4, 8, 16, scale=8 ** -0.5),
                w2=uniform(4, 16, 8, scale=16 ** -0.5), wg=uniform(8, 4, scale=8 ** -0.5))


# name, --auto flags, inputs, NumPy loss, {weight: accepted specs}, {collective: (count, bytes)}
SAMPLES = [
    # DP on (data: 8): the loss and the two [16, 64] gradients all-reduced.
    ("train_dp", [], lambda: mlp_inputs(32768, 16, 64), mlp_loss,
     {"w1": {"P()"}, "w2": {"P()"}},
     {"psum": (3, reduced(8, 1 + 2 * 16 * 64))}),
    # FSDP for w1 on (data: 8): stored split over `data` (rows or columns
    # cost the same), all_gathered before use, its gradient psum_scatter'd;
    # w2 whole, its gradient psum'd, and the loss psum'd. Both split needs
    # more memory (samples/global/train_fsdp.spmd).
    ("train_fsdp", ["--memory-per-device", "1.85MiB"], lambda: mlp_inputs(1024, 256, 256), mlp_loss,
     {"w1": {"P(data)", "P(None, data)"}, "w2": {"P()"}},
     {"all_gather": (1, gathered(8, 256 * 256)), "psum_scatter": (1, gathered(8, 256 * 256)),
      "psum": (2, reduced(8, 1) + reduced(8, 256 * 256))}),
    # Megatron on (model: 4): one psum of the [64, 256] output of h @ w2; the
    # batch is replicated, so the gradients need no reduction.
    ("train_tp", ["--memory-per-device", "2MiB"], lambda: mlp_inputs(64, 256, 1024), mlp_loss,
     {"w1": {"P(None, model)"}, "w2": {"P(model)"}},
     {"psum": (1, reduced(4, 64 * 256))}),
    # DP x TP on (data: 2, model: 4): the [128, 512] local output of h @ w2
    # over `model`, the loss over all 8 devices, and each weight's gradient
    # block (a quarter: [512, 128] or [128, 512]) over `data`.
    ("train_dp_tp", ["--memory-per-device", "2.5MiB"], lambda: mlp_inputs(256, 512, 512), mlp_loss,
     {"w1": {"P(None, model)"}, "w2": {"P(model)"}},
     {"psum": (4, reduced(4, 128 * 512) + reduced(8, 1) + 2 * reduced(2, 512 * 128))}),
    # EP on (expert: 4): the slots to their expert and the expert outputs
    # back (a local [1, 4, 2, 8] block each way), the gate to the experts
    # ([1, 4, 2, 1]), the output's cotangent to the experts: 4 all_to_alls;
    # psums of the loss and of the replicated [8, 4] router's gradient.
    ("train_ep", ["--memory-per-device", "7.5KiB"], moe_inputs, moe_loss,
     {"w1": {"P(expert)"}, "w2": {"P(expert)"}, "wg": {"P()"}},
     {"all_to_all": (3, 3 * exchanged(4, 64)),
      "psum": (2, reduced(4, 1) + reduced(4, 8 * 4))}),
]


def train(path, inputs, weights):
    """STEPS steps of `step` in path, each on the weights the previous returned."""
    state, losses = dict(inputs), []
    for _ in range(STEPS):
        out = sn.run(spmdc, path, state)
        losses.append(float(out["l"]))
        for w in weights:
            state[w] = out[w]
    return np.array(losses), {w: state[w] for w in weights}


def check(name, flags, make_inputs, numpy_loss, want_specs, want_comm):
    sample = os.path.join(src, "samples", "global", name + ".spmd")
    emitted = os.path.join(tmp, name + "_shmap.spmd")
    run("shard", sample, "--auto", *flags, "-o", emitted)
    specs = emitted_specs(emitted)
    for w, accepted in want_specs.items():
        if specs.get(w) not in accepted:
            failures.append(f"{name}: {w} is {specs.get(w)}, expected one of {sorted(accepted)}")
    got = {k: (c, round(b, 6)) for k, (c, b) in stats(emitted).items()}
    want = {k: (c, round(b, 6)) for k, (c, b) in want_comm.items()}
    if got != want:
        failures.append(f"{name}: collectives {got}, expected {want}")
    r = subprocess.run([spmdc, "check", "--strict", emitted], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout or r.stderr:
        failures.append(f"{name}: the emitted step does not re-check strictly:\n{r.stderr}")

    inputs = make_inputs()
    weights = list(want_specs)
    ref_losses, ref_w = train(sample, inputs, weights)
    got_losses, got_w = train(emitted, inputs, weights)
    want0 = numpy_loss(inputs)
    if not np.isclose(ref_losses[0], want0, rtol=1e-5):
        failures.append(f"{name}: first loss {ref_losses[0]}, NumPy {want0}")
    # Gradient descent with a small step: the loss falls.
    if not ref_losses[-1] < ref_losses[0]:
        failures.append(f"{name}: the unsharded loss does not fall: {ref_losses}")
    # f32 sums in another order: relative differences of a few ulps per
    # step, growing slowly over 10 steps.
    if not np.allclose(got_losses, ref_losses, rtol=1e-5, atol=0):
        failures.append(f"{name}: losses {got_losses} vs unsharded {ref_losses}")
    for w in weights:
        scale = np.abs(ref_w[w]).max()
        err = np.abs(got_w[w] - ref_w[w]).max()
        if not err <= 1e-5 * scale:
            failures.append(f"{name}: {w} after {STEPS} steps differs by {err:.3g} (max |w| {scale:.3g})")
    print(f"{name}: {specs}, losses {ref_losses[0]:.6f} -> {ref_losses[-1]:.6f}, "
          f"largest loss difference {np.abs(got_losses - ref_losses).max():.3g}")


for sample_args in SAMPLES:
    try:
        check(*sample_args)
    except Exception as e:  # a crash of one sample should not hide the others
        failures.append(f"{sample_args[0]}: {type(e).__name__}: {e}")

for f in failures:
    print("FAIL:", f)
tmpdir.cleanup()
print(f"training-step samples: {len(failures)} failures")
sys.exit(1 if failures else 0)
