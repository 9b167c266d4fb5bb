#!/usr/bin/env python3
"""fuzz_mpi.py — executables under mpirun with the ranks' arguments mismatched (issue 30).

Builds tests/mpi/programs/divide.spmd (a mesh of 4) as a CPU executable, then
starts it with `mpirun -np 4` as an MPMD launch whose four app contexts get
random command lines (of `spin`; `divide` only on mismatched ranks, as a random
input may divide by zero): --iters, --warmup, --random seeds, --fn, -q, --out-dir,
--deterministic, on some ranks and not others (about a third of the launches
give every rank the same line). Every launch: no crash, no internal error, no
hang (--max-seconds), and exactly the expected verdict: the same arguments run
(exit 0), different ones fail on every rank with one message naming the first
rank that differs (exit 1). Exit 77 without mpirun.

Usage: fuzz_mpi.py SPMDC MPIRUN ROOT [--count N] [--seed S] [--max-seconds T]
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surfaces import Tally, run  # noqa: E402


def random_args(rng, out_dir, other_fn=False):
    # `divide` may divide by a random 0: only where the launch is refused anyway.
    args = ["--fn", rng.choice(["divide", "spin"]) if other_fn else "spin"]
    args += ["--random", str(rng.choice([0, 1, 2, 7]))]
    if rng.random() < 0.5:
        args += ["--iters", str(rng.choice([1, 2, 3]))]
    if rng.random() < 0.3:
        args += ["--warmup", str(rng.choice([0, 1]))]
    if rng.random() < 0.5:
        args.append("-q")
    if rng.random() < 0.2:
        args.append("--deterministic")
    if rng.random() < 0.2:
        args += ["--out-dir", out_dir]
    return args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spmdc")
    ap.add_argument("mpirun")
    ap.add_argument("root")
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=60)
    ap.add_argument("--max-rss", type=int, default=1024, help="MiB")
    a = ap.parse_args()
    if not shutil.which(a.mpirun):
        print("%s not found: skipped" % a.mpirun)
        sys.exit(77)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    rng = random.Random(a.seed)
    tally = Tally("fuzz_mpi", a.max_seconds, a.max_rss)
    with tempfile.TemporaryDirectory() as w:
        exe = os.path.join(w, "divide")
        built = subprocess.run([a.spmdc, "build", os.path.join(a.root, "tests/mpi/programs/divide.spmd"),
                                "--fn", "divide", "--target", "cpu", "-q", "-o", exe],
                               capture_output=True)
        if built.returncode != 0:
            print("FAIL: cannot build: " + built.stderr.decode())
            sys.exit(1)
        out_dir = os.path.join(w, "o")
        for i in range(a.count):
            base = random_args(rng, out_dir)
            lines = [list(base) for _ in range(4)]
            if rng.random() < 0.67:  # mismatch one or more ranks
                for r in rng.sample(range(4), rng.randrange(1, 4)):
                    other = random_args(rng, out_dir, other_fn=True)
                    lines[r] = other if other != base else base + ["--iters", "9"]
            argv = [a.mpirun, "--oversubscribe"]
            for k, line in enumerate(lines):
                argv += (["-np", "1", exe] + line) + ([":"] if k < 3 else [])
            same = all(line == lines[0] for line in lines)
            what = " ".join(argv[2:])
            out = run(argv, timeout=a.max_seconds * 2, env=env)
            if not tally.check(what, out, allowed=(0,) if same else (1,)):
                continue
            said = out.stderr.count(b"were started with different arguments")
            if not same:
                first = next(r for r in range(1, 4) if lines[r] != lines[0])
                if said != 1 or (b"rank %d with" % first) not in out.stderr:
                    tally.fail(what, "the mismatch was reported %d times (want once, naming "
                               "rank %d): %s" % (said, first, out.stderr.decode()[-500:]))
            elif said:
                tally.fail(what, "a mismatch reported for equal arguments")
            shutil.rmtree(out_dir, ignore_errors=True)
    sys.exit(tally.summary())


if __name__ == "__main__":
    main()
