#!/usr/bin/env python3
"""grade.py EXERCISE [STUDENT.spmd] — grade a solution of an exercise in exercises/.

  scripts/grade.py exercises/01-replicate my.spmd --solutions solutions   (source tree)
  spmdc-grade ~/course/01-replicate --solutions /path/to/solutions       (installed)

EXERCISE is an exercise folder (or the name of an installed one, `01-replicate`)
holding task.md (the statement), starter.spmd (the program with holes written
`???`) and grade.json; STUDENT.spmd defaults to the folder's starter.spmd, the
file `spmdc exercises init` gives each student to fill in. The reference
answers are not in the exercise folders: an instructor keeps them in a folder
of their own (`solutions/` of the source tree) and points the grader at it with
--solutions DIR (or $SPMDC_SOLUTIONS); it reads DIR/EXERCISE.spmd or
DIR/EXERCISE/solution.spmd. grade.json:
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
Without a reference only steps 1, 2 and 4 can run; what they find is reported
as usual, and when they pass the grader stops there with status 2.
Exit status: 0 every check passes, 1 not yet (the reason follows), 2 the grader
could not grade (no spmdc, no NumPy, a missing file, no reference solution, a
broken exercise), with a one-line reason on stderr.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
np = None  # NumPy, imported by main() so that its absence is a one-line exit 2


class Fail(Exception):
    """The student's program does not pass yet (exit 1)."""


class CannotGrade(Exception):
    """The grader cannot grade (exit 2); the message is the one-line reason."""


def find_spmdc(explicit):
    # --spmdc, $SPMDC, an installed spmdc beside this script (PREFIX/bin/spmdc-grade),
    # the source tree's build, then PATH.
    for candidate in (explicit, os.environ.get("SPMDC"), os.path.join(HERE, "spmdc"),
                      os.path.join(HERE, "..", "build", "compiler", "spmdc"), shutil.which("spmdc")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise CannotGrade("cannot find spmdc (use --spmdc PATH or set SPMDC)")


def find_exercise(arg):
    """An exercise folder: the path given, or an installed/source exercise of that name."""
    if os.path.isdir(arg):
        folder = arg
    else:
        folder = None
        if os.sep not in arg:
            for root in (os.path.join(HERE, "..", "share", "spmdc", "exercises"),
                         os.path.join(HERE, "..", "exercises")):
                if os.path.isdir(os.path.join(root, arg)):
                    folder = os.path.join(root, arg)
                    break
        if folder is None:
            raise CannotGrade(f"no exercise folder `{arg}`")
    if not os.path.isfile(os.path.join(folder, "grade.json")):
        raise CannotGrade(f"`{arg}` is not an exercise folder (no grade.json)")
    return folder


def find_reference(solutions, name):
    if not solutions:
        return None
    if not os.path.isdir(solutions):
        raise CannotGrade(f"--solutions `{solutions}` is not a folder")
    for path in (os.path.join(solutions, name + ".spmd"),
                 os.path.join(solutions, name, "solution.spmd")):
        if os.path.isfile(path):
            return path
    raise CannotGrade(f"the solutions folder `{solutions}` has no {name}.spmd")


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


def grade(spmdc, exercise, student, reference, seeds):
    try:
        with open(os.path.join(exercise, "grade.json")) as f:
            spec = json.load(f)
        fn = spec["fn"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CannotGrade(f"broken exercise: {os.path.join(exercise, 'grade.json')}: {e}")
    try:
        with open(student, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise CannotGrade(f"cannot read `{student}`: {e.strerror}")

    # 1. Holes.
    holes = [k + 1 for k, line in enumerate(text.split("\n")) if "???" in line]
    if holes:
        raise Fail("fill in the holes marked ??? first (line" + ("s " if len(holes) > 1 else " ") +
                   ", ".join(map(str, holes)) + ")")

    # 2. Types.
    r = run(spmdc, "check", student)
    if r.returncode != 0:
        raise Fail("your program does not type-check:\n" + r.stderr.rstrip())

    # 3. Signature (against the reference's).
    got = signature(spmdc, student, fn)
    want = signature(spmdc, reference, fn) if reference else None
    if reference and want is None:
        raise CannotGrade(f"the reference `{reference}` has no shmap `{fn}`")
    if got is None:
        raise Fail(f"your program has no shmap `{fn}`" +
                   (f"; the task asks for one with this signature:\n  {want}" if want else ""))
    if want and re.sub(r"\s", "", want) != re.sub(r"\s", "", got):
        raise Fail(f"keep the signature of `{fn}` as the task gives it:\n  expected {want}\n"
                   f"  yours    {got}")

    # 4. Forbidden collectives.
    ops, total = stats(spmdc, student, fn)
    used = [op for op in spec.get("forbid", []) if op in ops]
    if used:
        raise Fail(f"this exercise asks you not to use {', '.join(used)}")

    if reference is None:
        raise CannotGrade("it type-checks, but its values cannot be graded without the reference "
                          "solutions: an instructor grades with --solutions DIR")

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
                        first = (r.stderr.strip().splitlines() or ["(no message)"])[0]
                        raise CannotGrade(f"the reference `{reference}` fails to run: {first}")
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


class Parser(argparse.ArgumentParser):
    def error(self, message):  # a bad command line is "could not run": status 2, one line
        usage = " ".join(self.format_usage().split())  # one line
        raise CannotGrade(f"{message} ({usage})")


def main():
    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("exercise", help="exercise folder, or the name of an installed exercise")
    ap.add_argument("student", nargs="?", help="the program to grade (default: EXERCISE/starter.spmd)")
    ap.add_argument("--spmdc", help="the compiler (default: $SPMDC, beside the grader, on PATH)")
    ap.add_argument("--solutions", default=os.environ.get("SPMDC_SOLUTIONS"),
                    help="folder of reference solutions, DIR/EXERCISE.spmd (default $SPMDC_SOLUTIONS)")
    ap.add_argument("--seeds", default="0,1,2", help="random input seeds (comma-separated)")
    global np
    try:
        args = ap.parse_args()
        try:
            seeds = [int(s) for s in args.seeds.split(",")]
        except ValueError:
            raise CannotGrade(f"--seeds: expected comma-separated integers, got `{args.seeds}`")
        try:
            import numpy
            np = numpy
        except ImportError:
            raise CannotGrade(f"needs NumPy, which {sys.executable} cannot import "
                              "(apt install python3-numpy, or pip install numpy)")
        spmdc = find_spmdc(args.spmdc)
        exercise = find_exercise(args.exercise)
        name = os.path.basename(os.path.normpath(exercise))
        student = args.student or os.path.join(exercise, "starter.spmd")
        if not os.path.isfile(student):
            raise CannotGrade(f"no file `{student}`")
        reference = find_reference(args.solutions, name)
        moved = grade(spmdc, exercise, student, reference, seeds)
    except Fail as e:
        print(f"{name}: NOT YET: {e}")
        return 1
    except CannotGrade as e:
        print(f"grade: cannot grade: {e}", file=sys.stderr)
        return 2
    except (OSError, subprocess.SubprocessError) as e:
        print(f"grade: cannot grade: {e}", file=sys.stderr)
        return 2
    print(f"{name}: PASS (types, values on random inputs, {moved:.0f} bytes moved per device: "
          f"as good as the reference)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("grade: cannot grade: interrupted", file=sys.stderr)
        sys.exit(2)
