#!/usr/bin/env python3
"""test_grader.py SPMDC SOURCE_DIR — scripts/grade.py on every exercise.

For each exercises/NN-*/ (task, starter and grade.json only: no answers in a
folder handed to students): the reference solution in solutions/NN-*.spmd
passes; the starter (with its holes) does not, and says where the holes are;
every wrong solution in tests/exercises/NN-*/ fails with the message its first
line promises (`# EXPECT: text`). Without --solutions the reference cannot be
graded: status 2 and one line saying so. Every way the grader cannot run
(a missing file, a folder that is no exercise, no NumPy, no spmdc, a bad
command line) is status 2 with a one-line reason. The reference of exercise 08 (a backward written by
hand) is also checked against `spmdc vjp` of the forward in its header, on
the same random inputs: the compiler's derivative is an independent answer;
the references of exercises 09-12 are checked against NumPy programs over
the global arrays.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

spmdc, src = sys.argv[1], sys.argv[2]
grader = os.path.join(src, "scripts", "grade.py")
failures = []


solutions = os.path.join(src, "solutions")


def grade(exercise, student, *extra, python=(sys.executable,), solutions_dir=solutions, env=None):
    args = [*python, grader, exercise, *([student] if student else []), "--spmdc", spmdc,
            "--seeds", "0,1", *extra]
    if solutions_dir:
        args += ["--solutions", solutions_dir]
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout + r.stderr


def reference(ex):
    return os.path.join(solutions, os.path.basename(ex) + ".spmd")


def expect_cannot_grade(what, result, text):
    rc, out = result
    lines = out.strip().splitlines()
    if rc != 2 or len(lines) != 1 or not lines[0].startswith("grade: cannot grade: ") \
            or text not in lines[0]:
        failures.append(f"{what}: expected exit 2 and one line with `{text}`, got exit {rc}: {out}")


exercises = sorted(glob.glob(os.path.join(src, "exercises", "[0-9][0-9]-*")))
if len(exercises) < 12:
    failures.append(f"only {len(exercises)} exercises")
if not any("forbid" in open(os.path.join(e, "grade.json")).read() for e in exercises):
    failures.append("no exercise uses `forbid`: the grader's check of it is untested")
wrong_count = 0
for ex in exercises:
    name = os.path.basename(ex)
    if sorted(os.listdir(ex)) != ["grade.json", "starter.spmd", "task.md"]:
        failures.append(f"{name}: holds {sorted(os.listdir(ex))}, expected grade.json, starter.spmd, "
                        f"task.md (students get this folder: no answers in it)")
    if not os.path.exists(reference(ex)):
        failures.append(f"{name}: no solutions/{name}.spmd")
    rc, out = grade(ex, reference(ex))
    if rc != 0 or "PASS" not in out:
        failures.append(f"{name}: the reference does not pass: {out}")
    rc, out = grade(ex, os.path.join(ex, "starter.spmd"))
    if rc != 1 or "fill in the holes marked ???" not in out:
        failures.append(f"{name}: the starter: {out}")

    wrong = sorted(glob.glob(os.path.join(src, "tests", "exercises", name, "*.spmd")))
    if len(wrong) < 2:
        failures.append(f"{name}: fewer than two wrong solutions in tests/exercises/{name}")
    for w in wrong:
        wrong_count += 1
        expect = re.match(r"# EXPECT: (.*)", open(w).readline())
        rc, out = grade(ex, w)
        if rc != 1 or "NOT YET" not in out or not expect or expect.group(1) not in out:
            failures.append(f"{name}/{os.path.basename(w)}: exit {rc}, expected "
                            f"`{expect.group(1) if expect else '?'}`, got: {out.strip()}")

# The student file defaults to the folder's starter.spmd (what `spmdc exercises init` copies).
ex1 = exercises[0]
rc, out = grade(ex1, None)
if rc != 1 or "fill in the holes marked ???" not in out:
    failures.append(f"{os.path.basename(ex1)}: the default student file: {out}")

# The grader cannot grade: exit 2 with a one-line reason, whatever the cause.
expect_cannot_grade("no reference solutions", grade(ex1, reference(ex1), solutions_dir=None),
                    "cannot be graded without the reference solutions")
expect_cannot_grade("a solutions folder without this exercise",
                    grade(ex1, reference(ex1), solutions_dir=os.path.join(src, "exercises")),
                    "has no 01-replicate.spmd")
expect_cannot_grade("a missing student file", grade(ex1, "/nonexistent/my.spmd"),
                    "no file `/nonexistent/my.spmd`")
expect_cannot_grade("a folder that is no exercise", grade(os.path.join(src, "samples"), reference(ex1)),
                    "is not an exercise folder (no grade.json)")
expect_cannot_grade("an unknown exercise name", grade("99-nothing", reference(ex1)),
                    "no exercise folder `99-nothing`")
expect_cannot_grade("a bad command line", grade(ex1, reference(ex1), "--no-such-option"),
                    "unrecognized arguments: --no-such-option")
# python3 -S: no site-packages, so no NumPy (Debian's is in dist-packages).
no_numpy = subprocess.run([sys.executable, "-S", "-c", "import numpy"], capture_output=True)
if no_numpy.returncode != 0:
    expect_cannot_grade("a python3 without NumPy",
                        grade(ex1, reference(ex1), python=(sys.executable, "-S")), "needs NumPy")
else:
    print("note: NumPy is importable without site-packages here; the no-NumPy case is not tested")
env = dict(os.environ, PATH="/nonexistent")
env.pop("SPMDC", None)
r = subprocess.run([sys.executable, grader, ex1, reference(ex1), "--solutions", solutions],
                   capture_output=True, text=True, env=env, cwd="/")
# The source tree's build/compiler/spmdc is found beside scripts/ when it exists.
if not os.path.exists(os.path.join(src, "build", "compiler", "spmdc")):
    expect_cannot_grade("no spmdc", (r.returncode, r.stdout + r.stderr), "cannot find spmdc")
# A broken exercise: grade.json is not JSON.
with tempfile.TemporaryDirectory() as tmp:
    broken = os.path.join(tmp, "01-replicate")
    os.mkdir(broken)
    open(os.path.join(broken, "grade.json"), "w").write("{not json")
    expect_cannot_grade("a broken grade.json", grade(broken, reference(ex1)), "broken exercise")

# Exercise 08's reference against spmdc vjp of its forward.
ex8 = next((e for e in exercises if os.path.basename(e).startswith("08-")), None)
if ex8:
    header = open(os.path.join(ex8, "starter.spmd")).read()
    fwd = "mesh M = (i: 4)\n\n" + "\n".join(
        line[4:] for line in header.splitlines() if line.startswith("#   ")) + "\n"
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        fwd_path = os.path.join(tmp, "fwd.spmd")
        open(fwd_path, "w").write(fwd)
        vjp_path = os.path.join(tmp, "vjp.spmd")
        r = subprocess.run([spmdc, "vjp", fwd_path, "--wrt", "x", "-o", vjp_path], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"spmdc vjp of exercise 08's forward: {r.stderr}")
        else:
            arrays = {"x": (16, 8), "w1": (8, 32), "w2": (32, 8), "dy": (16, 8)}
            for name, shape in arrays.items():
                np.save(os.path.join(tmp, name + ".npy"), rng.uniform(-1, 1, shape).astype(np.float32))
            ins = lambda names: sum((["--in", f"{k}={os.path.join(tmp, v + '.npy')}"] for k, v in names), [])
            subprocess.run([spmdc, "run", vjp_path, "--out-dir", tmp, "-q"] +
                           ins([("x", "x"), ("w1", "w1"), ("w2", "w2"), ("sp_fwd_bar", "dy")]), check=True)
            ref_dir = os.path.join(tmp, "ref")
            os.mkdir(ref_dir)
            subprocess.run([spmdc, "run", reference(ex8), "--out-dir", ref_dir, "-q"] +
                           ins([("w1", "w1"), ("w2", "w2"), ("dy", "dy")]), check=True)
            want = np.load(os.path.join(tmp, "x_bar.npy"))
            got = np.load(os.path.join(ref_dir, "sp_bwd.npy"))
            if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                failures.append(f"exercise 08's reference differs from spmdc vjp: max error "
                                f"{np.abs(got - want).max()}")

# The references of exercises 09-12 against NumPy over the global arrays.
sys.path.insert(0, os.path.join(src, "tests", "support"))
import spmd_numpy as sn  # noqa: E402

rng = np.random.default_rng(9)
rand = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)


def check_reference(prefix, inputs, want):
    ex = next((e for e in exercises if os.path.basename(e).startswith(prefix)), None)
    if ex is None:
        failures.append(f"no exercise {prefix}")
        return
    got = sn.run(spmdc, reference(ex), inputs)
    for name, w in want.items():
        if not np.allclose(got[name], w, rtol=1e-4, atol=1e-5):
            failures.append(f"{os.path.basename(ex)}'s reference: `{name}` differs from NumPy by "
                            f"{np.abs(got[name] - w).max():.3g}")


# 09: a ZeRO-2 step of y ~ x @ w, mean squared error, SGD with momentum 0.9.
w, m, x, y, lr = rand(16, 8), rand(16, 8), rand(64, 16), rand(64, 8), np.float32(0.05)
g = x.T @ (2 * (x @ w - y) / y.size)
check_reference("09-", dict(w=w, m=m, x=x, y=y, lr=lr),
                {"loss": ((x @ w - y) ** 2).mean(), "m": 0.9 * m + g, "w": w - lr * (0.9 * m + g)})
# 10: attention, 4 heads of dimension 4.
q, k, v = rand(16, 4, 4), rand(16, 4, 4), rand(16, 4, 4)
check_reference("10-", dict(q=q, k=k, v=v), {"attention": sn.attention(q, k, v)})
# 11: a matmul.
a, b = rand(6, 9), rand(9, 3)
check_reference("11-", dict(a=a, b=b), {"summa": a @ b})
# 12: x + mlp(layer_norm(x)).
x, w1, w2 = rand(16, 8), rand(8, 32), rand(32, 8)
check_reference("12-", dict(x=x, w1=w1, w2=w2),
                {"block": x + sn.gelu(sn.layer_norm(x, 1, 0) @ w1) @ w2})

for f in failures:
    print("FAIL:", f)
print(f"exercises: {len(exercises)} exercises, {wrong_count} wrong solutions, {len(failures)} failures")
sys.exit(1 if failures else 0)
