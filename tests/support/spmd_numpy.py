"""spmd_numpy — running spmdc programs on NumPy arrays, and the NumPy
references the Python tests compare them with (global arrays, no devices).

  import spmd_numpy as sn   # with tests/support on sys.path
  out = sn.run(spmdc, "samples/megatron_sp.spmd", {"x": x, ...})
"""
import math
import os
import subprocess
import tempfile

import numpy as np


def run(spmdc, path, inputs, fn=None):
    """`spmdc run --check-replication` on the given global inputs (name ->
    array, saved as .npy); returns {output name: array}."""
    with tempfile.TemporaryDirectory(prefix="spmd_numpy_") as d:
        out = os.path.join(d, "out")
        args = [spmdc, "run", path, "--out-dir", out, "--check-replication", "-q"]
        if fn:
            args += ["--fn", fn]
        for k, v in inputs.items():
            p = os.path.join(d, k + ".npy")
            np.save(p, v)
            args += ["--in", f"{k}={p}"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"spmdc run {os.path.basename(path)} failed:\n{r.stderr}")
        return {f[:-4]: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}


def gelu(x):
    """std.nn's gelu: the tanh approximation."""
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def layer_norm(x, scale, bias):
    """std.nn's layer_norm over the last dimension (eps 1e-5, biased variance)."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * scale + bias


def attention(q, k, v):
    """Softmax attention per head; q, k, v are [positions, heads, head dim]."""
    s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    return np.einsum("hqk,khd->qhd", p, v)
