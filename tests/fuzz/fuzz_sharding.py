#!/usr/bin/env python3
"""fuzz_sharding.py — random meshes, layouts and sharded functions (issue 30).

Three kinds of input, from one seed:
  reshard  a random mesh of 1 to 16 axes, a random array type (bool included)
           and two random layouts, partial sums included (sometimes malformed,
           sometimes not fitting) through `spmdc reshard`; a plan must end in
           the layout asked for, and `--program` must print a shmap that
           `spmdc check` accepts.
  check    a random `sharded` function (matmuls, elementwise ops, sums,
           constrains, short loops, written and `auto` specs) through `spmdc
           check` and `spmdc shard`, whose shmap must check again.
  auto     the same functions through `spmdc shard --auto` with a tiny
           --time-limit (0.01 to 1 s): a plan or a located error.
Every input: no crash, no internal error, at most --max-seconds (wall) and
--max-rss MiB (see surfaces.py). Exit status 1 when any input failed.

Usage: fuzz_sharding.py SPMDC [--count N] [--seed S] [--max-seconds T] [--max-rss MIB]
                            [--kinds reshard,check,auto]
"""
import argparse
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surfaces import Tally, run  # noqa: E402

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"]
DTYPES = ["f32", "f32", "f64", "bf16", "i32", "bool"]


def random_mesh(rng):
    """[(name, size)] with at most 65,536 devices; many axes now and then."""
    n = rng.choice([1, 2, 2, 3, 3, 4, 5, 6, 8, 12, 16])
    axes, devices = [], 1
    for k in range(n):
        size = rng.choice([1, 2, 2, 2, 3, 4]) if n <= 8 else rng.choice([1, 2, 2])
        while devices * size > 65536:
            size = 1
        devices *= size
        axes.append((NAMES[k], size))
    return axes


def mesh_text(axes, spaced=True):
    sep = ": " if spaced else ":"
    return "(" + ", ".join("%s%s%d" % (n, sep, s) for n, s in axes) + ")"


def random_layout(rng, axes, rank, partial_ok=True):
    """A layout: per dimension a list of axis names (major first), and partial axes."""
    names = [n for n, _ in axes]
    rng.shuffle(names)
    dims = [[] for _ in range(rank)]
    partial = []
    for n in names:
        r = rng.random()
        if rank and r < 0.55:
            dims[rng.randrange(rank)].append(n)
        elif partial_ok and r < 0.7:
            partial.append(n)
    return dims, sorted(partial, key=lambda n: NAMES.index(n))


def layout_text(dims, partial, canonical=False):
    """`P(a, (b, c), None, partial=d)`: trailing Nones dropped when canonical."""
    entries = []
    for axes in dims:
        if not axes:
            entries.append("None")
        elif len(axes) == 1:
            entries.append(axes[0])
        else:
            entries.append("(" + ", ".join(axes) + ")")
    if canonical:
        while entries and entries[-1] == "None":
            entries.pop()
    if partial:
        entries.append("partial=" + (partial[0] if len(partial) == 1 else
                                     "(" + ", ".join(partial) + ")"))
    return "P(" + ", ".join(entries) + ")"


def fitting_shape(rng, axes, layouts, rank):
    """Dimensions divisible by every layout's axes on them (now and then one that is not)."""
    size = dict(axes)
    shape = []
    for d in range(rank):
        need = 1
        for dims, _ in layouts:
            p = 1
            for a in dims[d]:
                p *= size[a]
            need = need * p // __import__("math").gcd(need, p)
        shape.append(need * rng.choice([1, 1, 2, 3, 8, 64]))
        if rng.random() < 0.05:
            shape[-1] += 1
    if rng.random() < 0.02:
        shape = [rng.choice([4294967296, 1 << 40]) for _ in range(max(rank, 2))]
    return shape


def reshard_input(rng):
    axes = random_mesh(rng)
    rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 4])
    src = random_layout(rng, axes, rank)
    dst = random_layout(rng, axes, rank, partial_ok=rng.random() < 0.5)
    if rng.random() < 0.5:  # a reachable target: partial only where the source is
        dst = (dst[0], [a for a in dst[1] if a in src[1]])
    shape = fitting_shape(rng, axes, [src, dst], rank)
    dtype = rng.choice(DTYPES)
    args = ["--mesh", mesh_text(axes, rng.random() < 0.5),
            "--type", "%s[%s]" % (dtype, ", ".join(map(str, shape))),
            "--from", layout_text(*src), "--to", layout_text(*dst)]
    if rng.random() < 0.05:  # malformed text
        k = rng.randrange(1, len(args), 2)
        cut = rng.randrange(len(args[k]) + 1)
        args[k] = args[k][:cut] + rng.choice(["(", ")", ",", "x", "partial=", "", "P("])
    return args, layout_text(*dst, canonical=True), shape


def fuzz_reshard(spmdc, rng, tally, bounds):
    args, target, shape = reshard_input(rng)
    program = rng.random() < 0.3
    argv = [spmdc, "reshard"] + args + (["--program"] if program else [])
    what = " ".join("'%s'" % a if " " in a or "(" in a else a for a in argv[1:])
    out = run(argv, timeout=bounds)
    if not tally.check(what, out):
        return
    if out.status != 0:
        return
    text = out.stdout.decode()
    if program:
        checked = run([spmdc, "check", "--no-auto-pbroadcast", "-"], stdin=out.stdout,
                      timeout=bounds)
        if tally.check("check of: " + what, checked, allowed=(0,)) is False:
            print(text[:2000])
        return
    steps = [line for line in text.splitlines() if line.startswith("  ") and ". " in line]
    if steps:
        last = steps[-1].split("   ")[2].strip()
        if last != target:
            tally.fail(what, "the plan ends in %s, not %s" % (last, target))
    elif "nothing to do" not in text:
        tally.fail(what, "no steps and not `nothing to do`")


def sharded_program(rng):
    """A random sharded function over a random mesh; returns its source."""
    axes = random_mesh(rng)
    size = dict(axes)
    names = [n for n, _ in axes]

    def spec(rank, allow_auto=True):
        if allow_auto and rng.random() < 0.3:
            return "auto"
        dims, _ = random_layout(rng, axes, rank, partial_ok=False)
        return layout_text(dims, [], canonical=True)

    def dim_for(axes_used):
        p = 1
        for a in axes_used:
            p *= size[a]
        return p

    base = 1
    for n in names:
        base *= size[n]
    base = min(base, 4096)
    b, k, n = (base * rng.choice([1, 2]) for _ in range(3))
    if rng.random() < 0.1:
        k += 1  # a dimension most layouts do not divide
    lines = ["mesh M = " + mesh_text(axes), ""]
    result_spec = spec(2)
    lines.append("sharded f(x: f32[%d, %d] @ %s, w: f32[%d, %d] @ %s) -> f32[%d, %d] @ %s on M {"
                 % (b, k, spec(2, allow_auto=rng.random() < 0.3), k, n, spec(2), b, n,
                    result_spec))
    lines.append("  h = x @ w")
    for _ in range(rng.randrange(0, 5)):
        op = rng.choice(["tanh", "add", "mul", "constrain", "loop", "sum", "exp"])
        if op == "tanh":
            lines.append("  h = tanh(h)")
        elif op == "exp":
            lines.append("  h = exp(h) - 1.0")
        elif op == "add":
            lines.append("  h = h + h")
        elif op == "mul":
            lines.append("  h = h * 0.5")
        elif op == "constrain":
            lines.append("  h = constrain(h, %s)" % spec(2, allow_auto=False))
        elif op == "sum":
            lines.append("  s = sum(h)")
            lines.append("  h = h - s")
        elif op == "loop":
            lines.append("  for i in range(%d) {" % rng.choice([1, 2, 3, 5]))
            lines.append("    h = tanh(h) * 0.5")
            lines.append("  }")
    lines.append("  return h")
    lines.append("}")
    return "\n".join(lines) + "\n"


def fuzz_function(spmdc, rng, tally, bounds, kind, workdir, index):
    source = sharded_program(rng)
    path = os.path.join(workdir, "f%d.spmd" % index)
    with open(path, "w") as f:
        f.write(source)
    what = "%s of\n%s" % (kind, source)
    if kind == "check":
        out = run([spmdc, "check", path], timeout=bounds)
        if not tally.check(what, out):
            return
        out = run([spmdc, "shard", path], timeout=bounds)
        if not tally.check("shard " + what, out) or out.status != 0:
            return
        again = run([spmdc, "check", "--no-auto-pbroadcast", "-"], stdin=out.stdout,
                    timeout=bounds)
        tally.check("check of the shmap of " + what, again, allowed=(0,))
    else:
        limit = rng.choice(["0.01", "0.05", "0.2", "1"])
        out = run([spmdc, "shard", "--auto", "--time-limit", limit, path], timeout=bounds)
        if tally.check("--time-limit %s %s" % (limit, what), out) and out.status == 0:
            again = run([spmdc, "check", "--no-auto-pbroadcast", "-"], stdin=out.stdout,
                        timeout=bounds)
            tally.check("check of the --auto shmap of " + what, again, allowed=(0,))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spmdc")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=30)
    ap.add_argument("--max-rss", type=int, default=1024, help="MiB")
    ap.add_argument("--kinds", default="reshard,check,auto")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    kinds = a.kinds.split(",")
    tally = Tally("fuzz_sharding", a.max_seconds, a.max_rss)
    with tempfile.TemporaryDirectory() as workdir:
        for i in range(a.count):
            kind = kinds[i % len(kinds)]
            if kind == "reshard":
                fuzz_reshard(a.spmdc, rng, tally, a.max_seconds * 2)
            else:
                fuzz_function(a.spmdc, rng, tally, a.max_seconds * 2, kind, workdir, i)
    sys.exit(tally.summary())


if __name__ == "__main__":
    main()
