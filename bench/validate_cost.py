#!/usr/bin/env python3
"""validate_cost.py — the cost model against measured runs (issue 28 item 4).

One training step (forward, gradient, SGD update) of an MLP (`--model mlp`) or
of a transformer block (`--model block`: attention, MLP, residuals, a softmax;
sizes --b batch, --s sequence, --h model width, --f MLP width) is written once
in global view and split by seven plans on the mesh (data: 2, model: 4): DP,
FSDP, TP, SP, DP x TP, FSDP x TP (specs written, `spmdc shard` propagates
them) and the plan `spmdc shard --auto` picks. For each plan the script

  * estimates the step: `spmdc cost --json` of the emitted shmap under a
    profile (`spmdc profile` measured on this machine, unless --profile);
  * measures it: the CPU executable (`spmdc build`), median of --iters timed
    steps (`--iters/--warmup`: first device's start to last device's finish),
    the median over --rounds rounds; and checks its outputs equal the
    unsharded `spmdc run` of the global-view step;

then prints estimated vs measured, their ratio, and the Spearman rank
correlation of the two rankings.

With --mpi the executables run as 8 MPI processes (`mpirun -np 8`, one per
mesh position, the MPI fabric's collectives), and the profile is measured the
same way (`mpirun -np 8 spmdc-profile`, the program beside spmdc).

Usage: bench/validate_cost.py --spmdc BUILD/compiler/spmdc [--profile FILE]
         [--model mlp|block] [--mpi [--mpirun mpirun]] [--b B] [--s S] [--h H]
         [--f F] [--iters 10] [--rounds 3] [--keep DIR]
(defaults: mlp b=512 h=256 f=1024; block b=16 s=64 h=128 f=512)
"""
import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

STEP = """mesh M = (data: 2, model: 4)
import std.nn

def loss(w1: f32[{h}, {f}], w2: f32[{f}, {h}], x: f32[{b}, {h}], y: f32[{b}, {h}]) -> f32[] {{
  return mse(gelu(x @ w1) @ w2, y)
}}

sharded step(x: f32[{b}, {h}] @ {xs}, y: f32[{b}, {h}] @ {xs},
             w1: f32[{h}, {f}] @ {w1}, w2: f32[{f}, {h}] @ {w2})
    -> (l: f32[] @ P(), w1: f32[{h}, {f}] @ like(w1), w2: f32[{f}, {h}] @ like(w2)) on M {{
  l, g1, g2 = grad(loss, wrt=(w1, w2))(w1, w2, x, y)
  return l, w1 - 0.01 * g1, w2 - 0.01 * g2
}}
"""

ALL = "(data, model)"
# name: (batch spec of x and y, w1's spec, w2's spec, automatic search)
PLANS = {
    "DP": (f"P({ALL})", "P()", "P()", False),
    "FSDP": (f"P({ALL})", f"P({ALL})", f"P({ALL})", False),
    "TP": ("P()", f"P(None, {ALL})", f"P({ALL})", False),
    "SP": (f"P({ALL})", f"P(None, {ALL})", f"P({ALL})", False),
    "DP x TP": ("P(data)", "P(None, model)", "P(model)", False),
    "FSDP x TP": ("P(data)", "P(data, model)", "P(model, data)", False),
    "auto": (f"P({ALL})", "auto", "auto", True),
}


# The transformer block of tests/unit/sharding/test_shard.cpp's MaxText sweep:
# single-head attention (q, k, v, the output projection wo), a residual, an MLP
# with a residual, mean squared error against y.
BLOCK = """mesh M = (data: 2, model: 4)
import std.nn

def block(wq: f32[{h}, {h}], wk: f32[{h}, {h}], wv: f32[{h}, {h}], wo: f32[{h}, {h}],
          w1: f32[{h}, {f}], w2: f32[{f}, {h}], x: f32[{b}, {s}, {h}], y: f32[{b}, {s}, {h}]) -> f32[] {{
  q = einsum("bsd,de->bse", x, wq)
  k = einsum("bsd,de->bse", x, wk)
  v = einsum("bsd,de->bse", x, wv)
  a = softmax(einsum("bse,bte->bst", q, k) * 0.125)
  h = x + einsum("bse,ed->bsd", einsum("bst,bte->bse", a, v), wo)
  return mse(h + einsum("bsf,fd->bsd", gelu(einsum("bsd,df->bsf", h, w1)), w2), y)
}}

sharded step(x: f32[{b}, {s}, {h}] @ {xs}, y: f32[{b}, {s}, {h}] @ {xs},
             wq: f32[{h}, {h}] @ {wa}, wk: f32[{h}, {h}] @ {wa}, wv: f32[{h}, {h}] @ {wa},
             wo: f32[{h}, {h}] @ {wa}, w1: f32[{h}, {f}] @ {w1}, w2: f32[{f}, {h}] @ {w2})
    -> (l: f32[] @ P(), wq: f32[{h}, {h}] @ like(wq), wk: f32[{h}, {h}] @ like(wk),
        wv: f32[{h}, {h}] @ like(wv), wo: f32[{h}, {h}] @ like(wo),
        w1: f32[{h}, {f}] @ like(w1), w2: f32[{f}, {h}] @ like(w2)) on M {{
  l, gq, gk, gv, go, g1, g2 = grad(block, wrt=(wq, wk, wv, wo, w1, w2))(wq, wk, wv, wo, w1, w2, x, y)
  return l, wq - 0.01 * gq, wk - 0.01 * gk, wv - 0.01 * gv, wo - 0.01 * go, w1 - 0.01 * g1, w2 - 0.01 * g2
}}
"""

# name: (batch spec of x and y, the attention weights' spec, w1's, w2's, automatic
# search). Tensor parallelism splits the MLP (Megatron: w1 by columns, w2 by rows);
# single-head attention has no heads to split, so its weights follow DP or FSDP.
BLOCK_PLANS = {
    "DP": (f"P({ALL})", "P()", "P()", "P()", False),
    "FSDP": (f"P({ALL})", f"P({ALL})", f"P({ALL})", f"P({ALL})", False),
    "TP": ("P()", "P()", f"P(None, {ALL})", f"P({ALL})", False),
    "SP": (f"P(None, {ALL})", "P()", "P()", "P()", False),
    "DP x TP": ("P(data)", "P()", "P(None, model)", "P(model)", False),
    "FSDP x TP": ("P(data)", "P(data)", "P(data, model)", "P(model, data)", False),
    "auto": (f"P({ALL})", "auto", "auto", "auto", True),
}

def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def must(r, what):
    if r.returncode != 0:
        sys.exit(f"{what} failed ({r.returncode}):\n{r.stderr}")
    return r


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    for pos, i in enumerate(order):
        r[i] = pos + 1.0
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    d2 = sum((x - y) ** 2 for x, y in zip(ra, rb))
    return 1 - 6 * d2 / (n * (n * n - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmdc", required=True)
    ap.add_argument("--profile", help="a profile file (default: measure one with spmdc profile)")
    ap.add_argument("--model", choices=("mlp", "block"), default="mlp")
    ap.add_argument("--b", type=int, help="batch (mlp 512, block 16)")
    ap.add_argument("--s", type=int, default=64, help="sequence (block only)")
    ap.add_argument("--h", type=int, help="model width (mlp 256, block 128)")
    ap.add_argument("--f", type=int, help="MLP width (mlp 1024, block 512)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mpi", action="store_true",
                    help="run the executables and measure the profile as 8 MPI processes")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the programs, executables and profile into DIR and keep them")
    a = ap.parse_args()
    defaults = {"mlp": (512, 256, 1024), "block": (16, 128, 512)}[a.model]
    a.b, a.h, a.f = (v if v is not None else dv for v, dv in zip((a.b, a.h, a.f), defaults))
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    launch = []  # what starts an executable (and spmdc-profile) as 8 processes
    if a.mpi:
        # Open MPI as root (CI containers), and no process_vm_readv where
        # containers refuse it (as tests/mpi/CMakeLists.txt sets). 8 processes on
        # fewer cores: a process waiting in a collective yields its core instead of
        # spinning (at load 14 without it, DP's step measured 3.7 s against 83 ms
        # with it at load 4).
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none",
                   OMPI_MCA_mpi_yield_when_idle="1")
        launch = [a.mpirun, "--oversubscribe", "-np", "8"]
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    with (contextlib.nullcontext(a.keep) if a.keep
          else tempfile.TemporaryDirectory(prefix="validate_cost_")) as d:
        profile = a.profile
        if not profile:
            profile = os.path.join(d, "here.json")
            if a.mpi:
                tool = os.path.join(os.path.dirname(os.path.abspath(a.spmdc)), "spmdc-profile")
                must(run([*launch, tool, "-q", "-o", profile], env=env), "spmdc-profile")
            else:
                must(run([a.spmdc, "profile", "-q", "-o", profile], env=env), "spmdc profile")
        with open(profile) as fh:
            p = json.load(fh)
        print(f"profile {p['name']}: {p['flops_per_s'] / 1e9:.1f} GFLOP/s per device, alpha "
              f"{p['intra_node']['latency_s'] * 1e6:.1f} us, beta "
              f"{p['intra_node']['bw_bytes_per_s'] / 1e9:.2f} GB/s")
        where = (f"on (data: 2, model: 4), "
                 f"{'8 MPI processes' if a.mpi else 'one process, 8 threads'}; load "
                 f"{os.getloadavg()[0]:.1f}")
        rng = np.random.default_rng(0)

        def uniform(shape, fan_in=1):
            return (rng.uniform(-1, 1, shape) / np.sqrt(fan_in)).astype(np.float32)

        if a.model == "mlp":
            print(f"MLP training step b={a.b} h={a.h} f={a.f} {where}")
            inputs = {"x": uniform((a.b, a.h)), "y": uniform((a.b, a.h)),
                      "w1": uniform((a.h, a.f), a.h), "w2": uniform((a.f, a.h), a.f)}
            plans = {name: dict(xs=xs, w1=w1, w2=w2, auto=auto)
                     for name, (xs, w1, w2, auto) in PLANS.items()}
            template, weights = STEP, ("w1", "w2")
        else:
            print(f"transformer block training step b={a.b} s={a.s} h={a.h} f={a.f} {where}")
            inputs = {"x": uniform((a.b, a.s, a.h)), "y": uniform((a.b, a.s, a.h)),
                      **{w: uniform((a.h, a.h), a.h) for w in ("wq", "wk", "wv", "wo")},
                      "w1": uniform((a.h, a.f), a.h), "w2": uniform((a.f, a.h), a.f)}
            plans = {name: dict(xs=xs, wa=wa, w1=w1, w2=w2, auto=auto)
                     for name, (xs, wa, w1, w2, auto) in BLOCK_PLANS.items()}
            template, weights = BLOCK, ("wq", "wk", "wv", "wo", "w1", "w2")
        flags = []
        for k, v in inputs.items():
            path = os.path.join(d, f"{k}.npy")
            np.save(path, v)
            flags += ["--in", f"{k}={path}"]
        reference = None
        built = []
        for name, plan in plans.items():
            auto = plan.pop("auto")
            tag = name.replace(" ", "")
            src = os.path.join(d, f"{tag}.spmd")
            with open(src, "w") as fh:
                fh.write(template.format(b=a.b, s=a.s, h=a.h, f=a.f, **plan))
            if reference is None:  # the unsharded step (the same for every plan)
                out = os.path.join(d, "ref")
                must(run([a.spmdc, "run", src, *flags, "-q", "--out-dir", out], env=env),
                     "spmdc run (unsharded)")
                reference = {k: np.load(os.path.join(out, f"{k}.npy")) for k in ("l", *weights)}
            shmap = os.path.join(d, f"{tag}_shmap.spmd")
            must(run([a.spmdc, "shard", src, *(["--auto", "--profile", profile] if auto else []),
                      "-o", shmap], env=env), f"spmdc shard ({name})")
            with open(shmap) as fh:
                header = fh.read()
            chosen = " ".join(m.group(1) + "=" + m.group(2) for m in
                              re.finditer(r"^#   (w\w+): (.*) \(chosen\)$", header, re.M)) if auto else ""
            cost = json.loads(must(run([a.spmdc, "cost", shmap, "--profile", profile, "--json"],
                                       env=env), f"spmdc cost ({name})").stdout)["programs"][0]
            est_ms = (cost["compute_s"] + cost["comm_s"]) * 1e3
            exe = os.path.join(d, tag)
            must(run([a.spmdc, "build", shmap, "--target", "cpu", "-o", exe], env=env),
                 f"spmdc build ({name})")
            out = os.path.join(d, f"out_{tag}")
            must(run([*launch, exe, *flags, "-q", "--out-dir", out], env=env),
                 f"executable ({name})")
            err = 0.0
            for k, ref in reference.items():
                got = np.load(os.path.join(out, f"{k}.npy"))
                scale = max(1.0, float(np.max(np.abs(ref))))
                err = max(err, float(np.max(np.abs(got - ref))) / scale)
            built.append((name + (f" ({chosen})" if chosen else ""), est_ms,
                          cost["compute_s"] * 1e3, cost["comm_s"] * 1e3, exe, err))
        # The timed runs, interleaved: every plan once a round, so that a machine
        # that slows down or speeds up during the runs moves every plan alike.
        times = [[] for _ in built]
        for _ in range(a.rounds):
            for i, (name, _, _, _, exe, _) in enumerate(built):
                t = must(run([*launch, exe, *flags, "-q", "--iters", str(a.iters), "--warmup",
                              "2"], env=env), f"timed executable ({name})")
                times[i].append(float(re.search(r"median ([0-9.]+) ms", t.stderr).group(1)))
        rows = [(name, est, comp, comm, statistics.median(ts), err)
                for (name, est, comp, comm, _, err), ts in zip(built, times)]
        wide = max(42, *(len(r[0]) for r in rows))
        print(f"{'plan':<{wide}} {'estimate':>10} {'compute':>9} {'comm':>9} {'measured':>10} "
              f"{'est/meas':>9} {'vs unsharded':>13}")
        for name, est, comp, comm, meas, err in rows:
            print(f"{name:<{wide}} {est:>8.2f}ms {comp:>7.2f}ms {comm:>7.2f}ms {meas:>8.2f}ms "
                  f"{est / meas:>9.2f} {err:>13.1e}")
        rho = spearman([r[1] for r in rows], [r[4] for r in rows])
        within = sum(1 for r in rows if 0.7 <= r[1] / r[4] <= 1.3)
        print(f"rank correlation (Spearman) {rho:.2f}; {within} of {len(rows)} estimates "
              f"within +-30%")
        bad = [r[0] for r in rows if r[5] > 1e-4]
        if bad:
            print("FAIL: outputs differ from the unsharded step: " + ", ".join(bad))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
