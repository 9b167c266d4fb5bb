#!/usr/bin/env python3
"""check_docs.py — the docs' example sessions still say what spmdc says.

Every fenced code block of README.md and docs/*.md that holds lines starting
with `$ ` is a terminal session: each `$ ` line (with `\\` continuation lines)
is a command, and the lines under it, up to the next command or the end of the
block, are its expected output (stdout then stderr). A line that is just
`...` (indented or not) matches any run of lines (none included), `...` inside a line any text
(a timing, a commit); trailing spaces are ignored.
Commands run through `sh` in a scratch directory per document (so a file that
one command writes with -o is there for the next), in which the repository's
top-level folders appear as symlinks, with `spmdc` on PATH being the build's
and `python3` the interpreter running this checker.
A block preceded by `<!-- docs-test: skip REASON -->` is not run (REASON is
required: say why it cannot run, e.g. a machine-specific output); a block
preceded by `<!-- docs-test: file NAME -->` is written to NAME in the scratch
directory (a script or program that later commands use).

Usage: check_docs.py --spmdc BUILD/compiler/spmdc --root REPO [--update] [FILE.md...]
(--update rewrites the outputs that have no `...` line; review the prose around them.)
Exit status 0 when every session matches; else each mismatch is printed.
"""
import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s+(\S.*?)\s*-->")
FILE = re.compile(r"<!--\s*docs-test:\s*file\s+([\w.-]+)\s*-->")


def sessions(text):
    """Yields, in order, ("file", name, content) for each block marked as a file, and
    ("session", line number of the block, [(command, [expected lines], index of the
    first expected line in the file's lines)]) for each session block."""
    lines = text.split("\n")
    i, skip_next, file_next = 0, False, None
    while i < len(lines):
        line = lines[i]
        if SKIP.search(line):
            skip_next = True
        if FILE.search(line):
            file_next = FILE.search(line).group(1)
        fence = re.match(r"^(\s*)(```+|~~~+)", line)
        if not fence:
            i += 1
            continue
        indent, marker = fence.group(1), fence.group(2)
        start, body, body_at = i + 1, [], i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(marker):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if file_next:
            yield "file", file_next, "\n".join(body) + "\n"
            file_next = None
            continue
        if not any(b.startswith("$ ") for b in body):
            skip_next = False
            continue
        if skip_next:
            skip_next = False
            continue
        cmds, k = [], 0
        while k < len(body) and not body[k].startswith("$ "):
            k += 1  # lines before the first command are not checked
        while k < len(body):
            cmd = body[k][2:]
            while cmd.endswith("\\") and k + 1 < len(body):
                k += 1
                cmd = cmd[:-1] + " " + body[k].strip()
            k += 1
            expected, at = [], body_at + k
            while k < len(body) and not body[k].startswith("$ "):
                expected.append(body[k])
                k += 1
            cmds.append((cmd, expected, at))
        yield "session", start, cmds


def line_matches(expected, actual):
    """Equal, where `...` inside a line stands for any text (a timing, a commit)."""
    if "..." not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def matches(expected, actual):
    """True when `actual` lines match `expected`, where a `...` line matches any run of lines."""
    expected = [e.rstrip() for e in expected]
    actual = [a.rstrip() for a in actual]
    while expected and expected[-1] == "":
        expected.pop()
    while actual and actual[-1] == "":
        actual.pop()
    memo = {}

    def m(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            r = j == len(actual)
        elif expected[i].strip() == "...":
            r = any(m(i + 1, jj) for jj in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and line_matches(expected[i], actual[j]) and m(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return m(0, 0)


def check_file(path, root, bindir, update):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    failures = 0
    replacements = []  # (first line index, number of lines, new lines) for --update
    work = tempfile.mkdtemp(prefix="spmdc-docs-")
    try:
        for entry in os.listdir(root):
            if not entry.startswith(".") and entry != "build":
                os.symlink(os.path.join(root, entry), os.path.join(work, entry))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        for kind, line, cmds in sessions(text):
            if kind == "file":
                with open(os.path.join(work, line), "w", encoding="utf-8") as f:
                    f.write(cmds)
                continue
            for cmd, expected, at in cmds:
                p = subprocess.run(["sh", "-c", cmd], cwd=work, env=env, capture_output=True,
                                   text=True, timeout=120)
                actual = (p.stdout + p.stderr).split("\n")
                if not matches(expected, actual):
                    failures += 1
                    print(f"{rel}:{line}: `$ {cmd}` (exit {p.returncode}) differs from the docs"
                          " (- docs, + actual; a `...` line matches any run of lines):")
                    sys.stdout.writelines(difflib.unified_diff(
                        [e.rstrip() + "\n" for e in expected],
                        [a.rstrip() + "\n" for a in actual], "docs", "actual", n=2))
                    if update and "..." not in [e.rstrip() for e in expected]:
                        while actual and actual[-1].strip() == "":
                            actual.pop()
                        n = len(expected)
                        while n and expected[n - 1].strip() == "":
                            n -= 1
                        replacements.append((at, n, [a.rstrip() for a in actual]))
    finally:
        shutil.rmtree(work)
    if replacements:
        lines = text.split("\n")
        for at, n, new in sorted(replacements, reverse=True):
            lines[at:at + n] = new
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        print(f"{rel}: updated {len(replacements)} output(s); review with git diff")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spmdc", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--update", action="store_true",
                    help="replace each mismatching output that has no `...` line with the actual "
                         "one (review the prose around it!)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    files = a.files or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    bindir = tempfile.mkdtemp(prefix="spmdc-bin-")
    try:
        os.symlink(os.path.abspath(a.spmdc), os.path.join(bindir, "spmdc"))
        # Sessions that run `python3` get this interpreter (the one CMake chose,
        # which has NumPy), not whatever python3 comes first on PATH.
        os.symlink(sys.executable, os.path.join(bindir, "python3"))
        failures = sum(check_file(f, root, bindir, a.update) for f in files)
    finally:
        shutil.rmtree(bindir)
    print(f"{failures} session command(s) do not match" if failures else "docs sessions match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
