#!/usr/bin/env python3
"""grade.py EXERCISE_DIR STUDENT.spmd — grade a solution of an exercise in exercises/.

  scripts/grade.py exercises/01-replicate my.spmd [--spmdc PATH] [--seeds 0,1,2]

An exercise folder holds task.md (the statement), starter.spmd (the program
with holes written `???`), solution.spmd (the reference answer) and
grade.json:
  {"fn": "name of the shmap",
   "rtol": 1e-4, "atol": 1e-5,          # value tolerance (optional)
   "forbid": ["all_gather", ...],       # collectives the task rules out (optional)
   "comm": "optimal" | "any"}           # compare bytes moved with the reference (default optimal)

The grader checks, in the student's terms, stopping at the first failing step:
  1. no hole `???` is left;
  2. the program type-checks (spmdc check's own diagnostics are shown);
  3. the shmap keeps the signature of the task (names, global types, specs, mesh);
  4. it uses none of the forbidden collectives;
  5. its outputs equal the reference's on random inputs (several seeds; spmdc
     run, every value checked for replication) — the first wrong element is
     shown, with a hint when it is off by a mesh axis size;
  6. it moves no more bytes per device than the reference (spmdc print
     --stats), naming the collectives that differ.
Exit status 0 when every check passes, 1 otherwise, 2 when the grader itself
cannot run (no spmdc, a broken exercise).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Fail(Exception):
    pass


def find_spmdc(explicit):
    for candidate in (explicit, os.environ.get("SPMDC"),
                      os.path.join(HERE, "..", "build", "compiler", "spmdc"), shutil.which("spmdc")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("grade: cannot find spmdc (use --spmdc PATH or set SPMDC)")


def run(spmdc, *args):
    return subprocess.run([spmdc, *args], capture_output=True, text=True, timeout=300)


def signature(spmdc, path, fn):
    r = run(spmdc, "print", path)
    m = re.search(r"^shmap " + re.escape(fn) + r"\(.*$", r.stdout, re.M)
    if not m:
        return None
    mesh = re.search(r" on (\w+) \{$", m.group(0))
    text = m.group(0)[:-2]
    if mesh:
        decl = re.search(r"^mesh " + mesh.group(1) + r" = .*$", r.stdout, re.M)
        text += "   (" + (decl.group(0) if decl else "") + ")"
    return text


def stats(spmdc, path, fn):
    """{op: (count, moved bytes)} and the total, from spmdc print --stats."""
    r = run(spmdc, "print", "--stats", path)
    ops, current, total = {}, None, 0.0
    for line in r.stdout.splitlines():
        m = re.match(r"^(\w+) \(mesh", line)
        if m:
            current = m.group(1)
            continue
        if current != fn:
            continue
        m = re.match(r"^\s+(\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", line)
        if m:
            ops[m.group(1)] = (int(m.group(2)), float(m.group(4)))
        m = re.match(r"^\s+total\s+([\d.]+)$", line)
        if m:
            total = float(m.group(1))
    return ops, total


def axis_sizes(sig):
    m = re.search(r"\(mesh \w+ = \((.*)\)\)$", sig or "")
    return {a.strip().split(":")[0]: int(a.split(":")[1]) for a in m.group(1).split(",")} if m else {}


def describe_ops(ops):
    moving = [f"{n} x {op}" for op, (n, moved) in sorted(ops.items()) if moved > 0]
    return ", ".join(moving) if moving else "no communication"


def grade(spmdc, exercise, student, seeds):
    with open(os.path.join(exercise, "grade.json")) as f:
        spec = json.load(f)
    fn = spec["fn"]
    reference = os.path.join(exercise, "solution.spmd")
    text = open(student).read()

    # 1. Holes.
    holes = [k + 1 for k, line in enumerate(text.split("\n")) if "???" in line]
    if holes:
        raise Fail("fill in the holes marked ??? first (line" + ("s " if len(holes) > 1 else " ") +
                   ", ".join(map(str, holes)) + ")")

    # 2. Types.
    r = run(spmdc, "check", student)
    if r.returncode != 0:
        raise Fail("your program does not type-check:\n" + r.stderr.rstrip())

    # 3. Signature.
    want, got = signature(spmdc, reference, fn), signature(spmdc, student, fn)
    if got is None:
        raise Fail(f"your program has no shmap `{fn}`; the task asks for one with this "
                   f"signature:\n  {want}")
    if re.sub(r"\s", "", want) != re.sub(r"\s", "", got):
        raise Fail(f"keep the signature of `{fn}` as the task gives it:\n  expected {want}\n"
                   f"  yours    {got}")

    # 4. Forbidden collectives.
    ops, total = stats(spmdc, student, fn)
    used = [op for op in spec.get("forbid", []) if op in ops]
    if used:
        raise Fail(f"this exercise asks you not to use {', '.join(used)}")

    # 5. Values.
    sizes = axis_sizes(want)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            outs = {}
            for who, path in (("reference", reference), ("student", student)):
                d = os.path.join(tmp, f"{who}{seed}")
                os.mkdir(d)
                r = run(spmdc, "run", path, "--fn", fn, "--random", str(seed), "--out-dir", d,
                        "--check-replication", "-q")
                if r.returncode != 0:
                    if who == "reference":
                        print(r.stderr, file=sys.stderr)
                        sys.exit(2)
                    raise Fail(f"your program fails when it runs (random inputs, seed {seed}):\n"
                               + r.stderr.rstrip())
                outs[who] = d
            for name in sorted(os.listdir(outs["reference"])):
                exp = np.load(os.path.join(outs["reference"], name))
                act = np.load(os.path.join(outs["student"], name))
                out = name[:-4]
                if exp.shape != act.shape:
                    raise Fail(f"output `{out}` has shape {act.shape}, expected {exp.shape}")
                bad = ~np.isclose(act, exp, rtol=spec.get("rtol", 1e-4), atol=spec.get("atol", 1e-5))
                if bad.any():
                    idx = tuple(int(i) for i in np.argwhere(bad)[0])
                    e, a = float(exp[idx]), float(act[idx])
                    msg = (f"output `{out}` is wrong on random inputs (seed {seed}): "
                           f"{int(bad.sum())} of {bad.size} elements differ; at index "
                           f"{list(idx)} expected {e:.6g}, got {a:.6g}")
                    ratio = a / e if e != 0 else None
                    for axis, n in sizes.items():
                        if ratio is not None and n > 1 and np.isclose(ratio, n, rtol=1e-3):
                            msg += (f" — {n} times too large, the size of axis `{axis}`: "
                                    f"something is summed over `{axis}` that should not be "
                                    f"(or should be averaged)")
                        elif ratio is not None and n > 1 and np.isclose(ratio, 1 / n, rtol=1e-3):
                            msg += (f" — {n} times too small, the size of axis `{axis}`: "
                                    f"a sum over `{axis}` is missing")
                    raise Fail(msg)

    # 6. Communication.
    if spec.get("comm", "optimal") == "optimal":
        ref_ops, ref_total = stats(spmdc, reference, fn)
        if total > ref_total * (1 + 1e-9) + 1e-9:
            raise Fail(f"the values are right, but your program moves {total:.0f} bytes per device "
                       f"({describe_ops(ops)}); it can be done with {ref_total:.0f} "
                       f"({describe_ops(ref_ops)})")
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("exercise")
    ap.add_argument("student")
    ap.add_argument("--spmdc")
    ap.add_argument("--seeds", default="0,1,2", help="random input seeds (comma-separated)")
    args = ap.parse_args()
    spmdc = find_spmdc(args.spmdc)
    if not os.path.exists(os.path.join(args.exercise, "grade.json")):
        sys.exit(f"grade: {args.exercise} is not an exercise folder (no grade.json)")
    name = os.path.basename(os.path.normpath(args.exercise))
    try:
        moved = grade(spmdc, args.exercise, args.student, [int(s) for s in args.seeds.split(",")])
    except Fail as e:
        print(f"{name}: NOT YET: {e}")
        return 1
    print(f"{name}: PASS (types, values on random inputs, {moved:.0f} bytes moved per device: "
          f"as good as the reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
