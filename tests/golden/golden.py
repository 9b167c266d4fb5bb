#!/usr/bin/env python3
"""golden.py — file tests for spmdc: the expected output lives in the test file.

Each test is a .spmd file under tests/golden/. Its first lines name the
command to run, with %s standing for the file itself:

    # RUN: spmdc print --types %s

or a pipeline of spmdc commands, where `-` reads the previous one's output:

    # RUN: spmdc grad %s --wrt w | spmdc check --no-auto-pbroadcast -

and its last lines hold the expected exit status, stdout and stderr:

    # CHECK:EXIT: 0
    # CHECK:STDOUT: mesh M = (i: 8)
    # CHECK:STDERR: ...

The command runs from the repository root with the file's path relative to
it, so outputs are the same on every machine (absolute paths into the checkout print as
$ROOT). A file named fail_*.spmd must
exit non-zero; any other file must exit 0 (a pipeline's status is that of its
last failing command, as with `set -o pipefail`; stderr collects every command's). On a mismatch the runner prints a
diff and writes <file>.actual (the file as it would be with the real
output); `--update` rewrites the expected block in place instead. Review
updates with `git diff`.

Usage: golden.py --spmdc BUILD/compiler/spmdc --root REPO [--update] FILE...
"""
import argparse
import difflib
import os
import subprocess
import sys

CHECK_PREFIX = "# CHECK:"


def split_test(text):
    """Returns (program lines, run command) — the program without the CHECK block."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    while lines and lines[-1].startswith(CHECK_PREFIX):
        lines.pop()
    run = None
    for line in lines:
        if line.startswith("# RUN:"):
            run = line[len("# RUN:"):].strip()
            break
    return lines, run


def render(program_lines, exit_code, stdout, stderr):
    out = list(program_lines)
    out.append(f"{CHECK_PREFIX}EXIT: {exit_code}")
    for stream, text in (("STDOUT", stdout), ("STDERR", stderr)):
        if text.endswith("\n"):
            text = text[:-1]
        if text == "":
            continue
        for line in text.split("\n"):
            out.append(f"{CHECK_PREFIX}{stream}:" + (" " + line if line else ""))
    return "\n".join(out) + "\n"


def run_one(path, spmdc, root, update):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    program, run = split_test(text)
    if run is None:
        print(f"{rel}: no '# RUN:' line")
        return False
    stdin, stderr, returncode = b"", b"", 0
    for stage in run.split(" | "):
        argv = stage.split()
        if not argv or argv[0] != "spmdc":
            print(f"{rel}: every command of the RUN line must start with 'spmdc'")
            return False
        argv = [spmdc] + [rel if a == "%s" else a for a in argv[1:]]
        proc = subprocess.run(argv, cwd=root, input=stdin, capture_output=True, timeout=120)
        stdin, stderr = proc.stdout, stderr + proc.stderr
        if proc.returncode != 0:
            returncode = proc.returncode
        if proc.returncode < 0 or proc.returncode > 2:
            print(f"{rel}: spmdc ended with status {proc.returncode} (a crash or signal)")
            return False
    # Absolute paths into the checkout differ between machines.
    stdout = stdin.decode("utf-8", errors="replace").replace(root, "$ROOT")
    stderr = stderr.decode("utf-8", errors="replace").replace(root, "$ROOT")
    actual = render(program, returncode, stdout, stderr)
    ok = True
    base = os.path.basename(path)
    if base.startswith("fail_") != (returncode != 0):
        print(f"{rel}: exit status {returncode} does not fit the name "
              f"(fail_* files must fail, others must succeed)")
        ok = False
    if actual != text:
        if update:
            with open(path, "w", encoding="utf-8") as f:
                f.write(actual)
            print(f"{rel}: updated")
        else:
            with open(path + ".actual", "w", encoding="utf-8") as f:
                f.write(actual)
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), actual.splitlines(True),
                fromfile=rel, tofile=rel + ".actual"))
            ok = False
    elif os.path.exists(path + ".actual"):
        os.remove(path + ".actual")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spmdc", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--update", action="store_true")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    failures = 0
    for path in args.files:
        if not run_one(os.path.abspath(path), os.path.abspath(args.spmdc),
                       os.path.abspath(args.root), args.update):
            failures += 1
    if failures:
        print(f"{failures} of {len(args.files)} golden tests failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
