#!/usr/bin/env python3
"""random_keys.py — the language's random numbers against a NumPy Threefry, JAX and itself.

1. A NumPy reimplementation of Threefry-2x32 (20 rounds) and of the draws as
   docs/language.md states them (split, fold_in, random_bits, uniform, normal,
   randint) must equal `spmdc run`'s output bit for bit.
2. When JAX is importable (/work/venv-jax/bin/python, or $SPMDC_JAX_PYTHON;
   skipped otherwise), JAX with jax_threefry_partitionable=True must give the
   same keys, bits, uniforms on [0, 1) and randints bit for bit; uniforms on
   [lo, hi) to 1 ulp (XLA contracts the multiply-add into an FMA) and normals
   to 8 ulp (XLA's erf_inv runs in f32 with its own log; ours in f64).
3. Layouts: a `sharded` function drawing uniform(key, (16, 8)), normal and
   split keys, sharded by `spmdc shard` with several written specs and with
   --auto, must print the same arrays as the unsharded run; so must the CPU
   executable of a sharded program, alone and under `mpirun -np 4`.
4. Statistics: the mean and variance of 2^16 uniforms and normals within 5
   standard errors of the exact ones; std.nn's dropout keeps the elements
   whose uniform is below 1 - rate, and its gradient is mask / (1 - rate).

Usage: random_keys.py --spmdc BUILD/compiler/spmdc
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def rotl(x, r):
    return ((x << np.uint32(r)) | (x >> np.uint32(32 - r))).astype(np.uint32)


def threefry(k0, k1, c0, c1):
    """Threefry-2x32-20 of arrays of uint32 (Salmon et al. 2011, Random123)."""
    with np.errstate(over="ignore"):
        k0, k1 = np.uint32(k0), np.uint32(k1)
        ks = [k0, k1, np.uint32(0x1BD11BDA) ^ k0 ^ k1]
        rot = [13, 15, 26, 6, 17, 29, 16, 24]
        x0 = (np.asarray(c0, np.uint32) + ks[0]).astype(np.uint32)
        x1 = (np.asarray(c1, np.uint32) + ks[1]).astype(np.uint32)
        for r in range(20):
            x0 = (x0 + x1).astype(np.uint32)
            x1 = rotl(x1, rot[r % 8]) ^ x0
            if r % 4 == 3:
                s = r // 4 + 1
                x0 = (x0 + ks[s % 3]).astype(np.uint32)
                x1 = (x1 + ks[(s + 1) % 3] + np.uint32(s)).astype(np.uint32)
        return x0, x1


def pairs(key, n):
    i = np.arange(n, dtype=np.uint64)
    return threefry(key[0], key[1], (i >> np.uint64(32)).astype(np.uint32), (i & M32).astype(np.uint32))


def key_of(seed):
    return (np.uint32(0), np.uint32(seed & 0xFFFFFFFF))


def fold_in(key, d):
    a, b = threefry(key[0], key[1], np.uint32(0), np.uint32(d & 0xFFFFFFFF))
    return (np.uint32(a), np.uint32(b))


def split(key, n):
    a, b = pairs(key, n)
    return np.stack([a, b], axis=-1)


def bits(key, n):
    a, b = pairs(key, n)
    return a ^ b


def uniform(key, n, lo=0.0, hi=1.0):
    f = ((bits(key, n) >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    lo, hi = np.float32(lo), np.float32(hi)
    return np.maximum(lo, f * (hi - lo) + lo)


def log_unit(x):
    """spmdrt/random.h's log: frexp, then 2 atanh(s) summed to s^23."""
    m, e = np.frexp(x)
    small = m < 0.70710678118654752
    m = np.where(small, m * 2.0, m)
    e = np.where(small, e - 1, e).astype(np.float64)
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    acc = np.full_like(s, 1.0 / 23.0)
    for k in range(21, 0, -2):
        acc = acc * s2 + 1.0 / k
    return e * 0.69314718055994530942 + (2.0 * s) * acc


def erfinv32(xf):
    x = xf.astype(np.float64)
    w = -log_unit((1.0 - x) * (1.0 + x))
    lo_c = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
    hi_c = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
            -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]
    wl = w - 2.5
    wh = np.sqrt(np.maximum(w, 0.0)) - 3.0
    pl = np.full_like(x, lo_c[0])
    ph = np.full_like(x, hi_c[0])
    for c in lo_c[1:]:
        pl = c + pl * wl
    for c in hi_c[1:]:
        ph = c + ph * wh
    return (np.where(w < 5.0, pl, ph) * x).astype(np.float32)


def normal(key, n):
    u = uniform(key, n, np.float32(-0.99999994), 1.0)
    return np.float32(1.41421356) * erfinv32(u)


def randint(key, n, lo, hi):
    with np.errstate(over="ignore"):
        k = split(key, 2)
        high, low = bits(tuple(k[0]), n), bits(tuple(k[1]), n)
        span = np.uint32(1 if hi <= lo else (hi - lo) & 0xFFFFFFFF)
        mult = np.uint32(65536 % int(span))
        mult = np.uint32((int(mult) * int(mult)) % (1 << 32) % int(span))
        off = ((high % span) * mult + (low % span)).astype(np.uint32) % span
        return (np.uint32(lo & 0xFFFFFFFF) + off).astype(np.uint32).view(np.int32)


DRAWS = """
mesh M = (i: 2)

shmap draws(seed: i32[] @ P()) -> (keys: i32[5, 2] @ P(), folded: i32[2] @ P(), bits: i32[7] @ P(),
    u: f32[1000] @ P(), u2: f32[9] @ P(), n: f32[1000] @ P(), r: i32[11] @ P(),
    dev: i32[2] @ P(i)) on M {
  k = key(seed)
  ks = split(k, 5)
  k7 = fold_in(k, 7)
  per_device = fold_in(k, axis_index(i))
  return key_data(ks), key_data(k7), random_bits(k7, (7,)), uniform(k, (1000,)),
         uniform(ks[2], (9,), -2.0, 3.0), normal(k, (1000,)), randint(k, (11,), -5, 100),
         reshape(key_data(per_device)[0:1], (1,))
}
"""

JAX_SCRIPT = """
import sys, numpy as np, jax
jax.config.update('jax_threefry_partitionable', True)
seed = int(sys.argv[1]); out = sys.argv[2]
k = jax.random.PRNGKey(seed)
ks = jax.random.split(k, 5)
k7 = jax.random.fold_in(k, 7)
np.savez(out, keys=np.asarray(ks).view(np.int32), folded=np.asarray(k7).view(np.int32),
         bits=np.asarray(jax.random.bits(k7, (7,))).view(np.int32),
         u=np.asarray(jax.random.uniform(k, (1000,))),
         u2=np.asarray(jax.random.uniform(ks[2], (9,), minval=-2.0, maxval=3.0)),
         n=np.asarray(jax.random.normal(k, (1000,))),
         r=np.asarray(jax.random.randint(k, (11,), -5, 100)))
"""

SHARDED = """
mesh M = (data: 2, model: 2)

sharded draw(seed: i32[] @ P()) -> (u: f32[16, 8] @ {spec}, n: f32[16, 8] @ {spec},
    b: i32[16, 8] @ {spec}) on M {{
  k = key(seed)
  ks = split(k, (16, 8))
  u = uniform(k, (16, 8), -1.0, 1.0)
  n = normal(fold_in(k, 3), (16, 8))
  b = key_data(ks)[:, :, 1]
  return u, n, b
}}
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(spmdc, source, tmp, name, extra=()):
    path = os.path.join(tmp, name + ".spmd")
    with open(path, "w") as f:
        f.write(source)
    outdir = os.path.join(tmp, name + "_out")
    subprocess.run([spmdc, "run", path, "-q", "--out-dir", outdir, *extra], check=True)
    return {n[:-4]: np.load(os.path.join(outdir, n)) for n in os.listdir(outdir)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spmdc", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        seed = 1234
        np.save(os.path.join(tmp, "seed.npy"), np.array(seed, np.int32))
        got = run(args.spmdc, DRAWS, tmp, "draws", ["--in", "seed=" + os.path.join(tmp, "seed.npy")])
        key = key_of(seed)
        want = {
            "keys": split(key, 5).view(np.int32),
            "folded": np.array(fold_in(key, 7), np.uint32).view(np.int32),
            "bits": bits(fold_in(key, 7), 7).view(np.int32),
            "u": uniform(key, 1000),
            "u2": uniform(tuple(split(key, 5)[2]), 9, -2.0, 3.0),
            "n": normal(key, 1000),
            "r": randint(key, 11, -5, 100),
            "dev": np.array([fold_in(key, 0)[0], fold_in(key, 1)[0]], np.uint32).view(np.int32),
        }
        for name, w in want.items():
            check(got[name].dtype == w.dtype and np.array_equal(got[name].view(np.uint8), w.view(np.uint8)),
                  f"spmdc run `{name}` differs from NumPy's Threefry: {got[name][:4]} vs {w[:4]}")

        jax_python = os.environ.get("SPMDC_JAX_PYTHON", "/work/venv-jax/bin/python")
        if os.path.exists(jax_python):
            script = os.path.join(tmp, "jax_draws.py")
            with open(script, "w") as f:
                f.write(JAX_SCRIPT)
            out = os.path.join(tmp, "jax.npz")
            r = subprocess.run([jax_python, script, str(seed), out], capture_output=True, text=True,
                               env={**os.environ, "JAX_PLATFORMS": "cpu"})
            if r.returncode != 0 and "No module named 'jax'" in r.stderr:
                print("JAX not importable: skipping the comparison with JAX")
            else:
                check(r.returncode == 0, "the JAX script failed: " + r.stderr[-500:])
                if r.returncode == 0:
                    j = np.load(out)
                    for name in ["keys", "folded", "bits", "u", "r"]:
                        check(np.array_equal(got[name], j[name]), f"`{name}` differs from JAX's")

                    def ulps(name):
                        return np.abs(got[name].view(np.int32).astype(np.int64) - j[name].view(np.int32)).max()
                    # XLA on CPU contracts u * (hi - lo) + lo into an FMA: 1 ulp apart at most.
                    check(ulps("u2") <= 1, f"uniform(lo, hi) differs from JAX's by {ulps('u2')} ulp")
                    # XLA's erf_inv runs in f32 with its own log: a few ulp apart.
                    check(ulps("n") <= 8, f"normal differs from JAX's by {ulps('n')} ulp")
                    print(f"JAX: keys, split, fold_in, bits, uniform on [0, 1), randint equal; "
                          f"uniform(lo, hi) within {ulps('u2')} ulp, normal within {ulps('n')} ulp")
        else:
            print("no JAX interpreter: skipping the comparison with JAX")

        # Statistics of large draws: within 5 standard errors.
        n = 1 << 16
        stats = run(args.spmdc, """
mesh M = (i: 1)
shmap s(seed: i32[] @ P()) -> (u: f32[65536] @ P(), n: f32[65536] @ P()) on M {
  k = key(seed)
  return uniform(k, (65536,)), normal(fold_in(k, 1), (65536,))
}
""", tmp, "stats", ["--in", "seed=" + os.path.join(tmp, "seed.npy")])
        u, z = stats["u"].astype(np.float64), stats["n"].astype(np.float64)
        check(abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n), f"uniform mean {u.mean()}")
        check(abs(u.var() - 1 / 12) < 5 * np.sqrt(1 / 180 / n), f"uniform variance {u.var()}")
        check(abs(z.mean()) < 5 / np.sqrt(n), f"normal mean {z.mean()}")
        check(abs(z.var() - 1) < 5 * np.sqrt(2 / n), f"normal variance {z.var()}")
        check(u.min() >= 0 and u.max() < 1, "uniform outside [0, 1)")

        # std.nn's dropout: the mask is uniform(key, shape) < 1 - rate, and its
        # gradient is mask / (1 - rate).
        drop = run(args.spmdc, """
import std.nn
mesh M = (i: 1)
def loss(x: f32[64, 32], k: key[]) -> f32[] {
  return sum(dropout(k, x, 0.25) * 2.0)
}
shmap f(x: f32[64, 32] @ P(), seed: i32[] @ P()) -> (d: f32[64, 32] @ P(), g: f32[64, 32] @ P()) on M {
  k = key(seed)
  l, g = grad(loss, wrt=x)(x, k)
  return dropout(k, x, 0.25), g
}
""", tmp, "dropout", ["--in", "seed=" + os.path.join(tmp, "seed.npy"), "--random", "3"])
        keep = uniform(key, 64 * 32).reshape(64, 32) < np.float32(0.75)
        check(np.array_equal(drop["d"] != 0, keep), "dropout's mask is not uniform(key, shape) < 1 - rate")
        check(np.allclose(drop["g"], 2.0 * keep / 0.75, rtol=1e-6), "dropout's gradient is not mask / (1 - rate)")
        check(abs(keep.mean() - 0.75) < 5 * np.sqrt(0.75 * 0.25 / keep.size), f"dropout keeps {keep.mean()}")

        # Layouts: the sharded program equals the unsharded draw.
        seed_arg = ["--in", "seed=" + os.path.join(tmp, "seed.npy")]
        ref = run(args.spmdc, SHARDED.format(spec="P()"), tmp, "ref", seed_arg)
        check(np.array_equal(ref["u"], uniform(key, 128, -1.0, 1.0).reshape(16, 8)),
              "sharded function's uniform differs from NumPy's")
        check(np.array_equal(ref["b"], split(key, 128)[:, 1].view(np.int32).reshape(16, 8)),
              "sharded function's split differs from NumPy's")
        for k, spec in enumerate(["P(data)", "P(None, model)", "P(data, model)", "P((data, model))",
                                  "P(model, data)", "auto"]):
            src = os.path.join(tmp, f"sh{k}.spmd")
            with open(src, "w") as f:
                f.write(SHARDED.format(spec=spec))
            shmap = os.path.join(tmp, f"sh{k}_shmap.spmd")
            cmd = [args.spmdc, "shard", src, "-o", shmap] + (["--auto"] if spec == "auto" else [])
            subprocess.run(cmd, check=True)
            with open(shmap) as f:
                got_sh = run(args.spmdc, f.read(), tmp, f"sh{k}_run", seed_arg)
            for name in ["u", "n", "b"]:
                check(np.array_equal(got_sh[name], ref[name]),
                      f"`{name}` sharded as {spec} differs from the unsharded draw")
            if spec == "P(data, model)":
                exe = os.path.join(tmp, "sh_exe")
                b = subprocess.run([args.spmdc, "build", shmap, "-o", exe], capture_output=True, text=True)
                check(b.returncode == 0, "spmdc build failed: " + b.stderr[-800:])
                if b.returncode == 0:
                    outdir = os.path.join(tmp, "exe_out")
                    subprocess.run([exe, "--in", "seed=" + os.path.join(tmp, "seed.npy"), "-q",
                                    "--out-dir", outdir], check=True)
                    for name in ["u", "n", "b"]:
                        check(np.array_equal(np.load(os.path.join(outdir, name + ".npy")), ref[name]),
                              f"the CPU executable's `{name}` differs from spmdc run")
                    mpirun = shutil.which("mpirun")
                    if mpirun:  # one process per device of the (data: 2, model: 2) mesh
                        outdir = os.path.join(tmp, "mpi_out")
                        env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                               "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
                        m = subprocess.run([mpirun, "--oversubscribe", "-np", "4", exe, "--in",
                                            "seed=" + os.path.join(tmp, "seed.npy"), "-q",
                                            "--out-dir", outdir], env=env, capture_output=True,
                                           text=True)
                        check(m.returncode == 0, "the executable under mpirun failed: " + m.stderr[-800:])
                        print("mpirun -np 4: ran the sharded executable")
                        if m.returncode == 0:
                            for name in ["u", "n", "b"]:
                                check(np.array_equal(np.load(os.path.join(outdir, name + ".npy")),
                                                     ref[name]),
                                      f"`{name}` under mpirun -np 4 differs from spmdc run")
                    else:
                        print("no mpirun: skipping the MPI run")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("random_keys: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
