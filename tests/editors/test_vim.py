#!/usr/bin/env python3
"""test_vim.py --root SRC — editors/vim against every sample, in a real Vim.

Vim loads editors/vim (ftdetect, syntax) headless and reports the syntax
group under every character of every sample (samples/, stdlib/, exercises/)
and of tests/editors/tokens.spmd. Checks:
 1. `.spmd` files get filetype spmd; no sample has a character in spmdError;
 2. every group the syntax file defines appears in some sample or the fixture;
 3. hand-checked tokens get the group a reader expects.
Exit 77 (skip) when vim is not installed.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

DUMP = r"""
set nocompatible
let &runtimepath = g:spmd_rt . ',' . &runtimepath
filetype plugin on
syntax on
let out = []
for f in g:spmd_files
  execute 'silent edit ' . fnameescape(f)
  call add(out, 'FILE ' . &filetype)
  for l in range(1, line('$'))
    let text = getline(l)
    let names = []
    for c in range(1, len(text))
      call add(names, text[c-1] =~ '\s' ? '-' : synIDattr(synID(l, c, 1), 'name'))
    endfor
    call add(out, join(names, ' '))
  endfor
endfor
call writefile(out, g:spmd_out)
qall!
"""


def vim_groups(root, files):
    """{file: [[group per character] per line]} and {file: filetype}."""
    with tempfile.TemporaryDirectory() as tmp:
        script, out = os.path.join(tmp, "dump.vim"), os.path.join(tmp, "out.txt")
        with open(script, "w") as f:
            f.write(DUMP)
        listed = "[" + ",".join("'" + p.replace("'", "''") + "'" for p in files) + "]"
        subprocess.run(["vim", "-u", "NONE", "-i", "NONE", "-N", "-es",
                        "--cmd", f"let g:spmd_rt='{os.path.join(root, 'editors/vim')}'",
                        "--cmd", f"let g:spmd_files={listed}", "--cmd", f"let g:spmd_out='{out}'",
                        "-S", script], check=True, timeout=120, stdin=subprocess.DEVNULL)
        lines = open(out).read().split("\n")
    result, filetypes, current = {}, {}, None
    k = 0
    for line in lines:
        if line.startswith("FILE "):
            current = files[k]
            k += 1
            filetypes[current] = line[5:]
            result[current] = []
        elif current is not None:
            result[current].append(line.split(" ") if line else [])
    return result, filetypes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    root = os.path.abspath(ap.parse_args().root)
    if not shutil.which("vim"):
        print("SKIP: vim is not installed")
        return 77
    fixture = os.path.join(root, "tests/editors/tokens.spmd")
    samples = sorted(glob.glob(os.path.join(root, "samples/**/*.spmd"), recursive=True) +
                     glob.glob(os.path.join(root, "stdlib/**/*.spmd"), recursive=True) +
                     glob.glob(os.path.join(root, "exercises/**/*.spmd"), recursive=True) +
                     glob.glob(os.path.join(root, "solutions/*.spmd")))
    groups, filetypes = vim_groups(root, samples + [fixture])
    failures = []
    seen = set()
    for path in samples + [fixture]:
        rel = os.path.relpath(path, root)
        if filetypes.get(path) != "spmd":
            failures.append(f"{rel}: filetype is `{filetypes.get(path)}`, not spmd")
        text = open(path).read().split("\n")
        for ln, row in enumerate(groups[path]):
            seen |= set(row)
            for col, g in enumerate(row):
                if g == "spmdError" and path != fixture:
                    failures.append(f"{rel}:{ln + 1}:{col + 1}: `{text[ln][col]}` is spmdError")

    syntax = open(os.path.join(root, "editors/vim/syntax/spmd.vim")).read()
    defined = set(re.findall(r"^syn \w+\s+(spmd\w+)", syntax, re.M)) | \
        set(re.findall(r"matchgroup=(spmd\w+)", syntax))
    # spmdVariance only holds its braces and axes, which have groups of their own.
    if missing := sorted(defined - seen - {"spmdVariance"}):
        failures.append(f"groups no sample or fixture shows: {missing}")

    def expect(path, cases):
        text = open(path).read().split("\n")
        for fragment, token, group in cases:
            ln = next((i for i, l in enumerate(text) if fragment in l and
                       (not l.startswith("#") or fragment.startswith("#"))), None)
            m = ln is not None and re.search(
                (r"(?<!\w)" if token[0].isalnum() else "") + re.escape(token), text[ln])
            got = groups[path][ln][m.start()] if m else None
            if got != group:
                failures.append(f"{os.path.relpath(path, root)}: `{token}` in `{fragment}` is {got}, "
                                f"expected {group}")

    expect(os.path.join(root, "samples/seed/example1.spmd"), [
        ("# Example 1", "#", "spmdComment"), ("mesh M", "mesh", "spmdMesh"),
        ("mesh M", "M", "spmdMeshName"), ("mesh M", "8", "spmdNumber"),
        ("def g", "def", "spmdDeclaration"), ("def g", "g", "spmdFunctionName"),
        ("def g", "f32", "spmdDType"), ("def g", "->", "spmdOperator"),
        ("sum(2.0", "sum", "spmdCall"), ("sum(2.0", "2.0", "spmdFloat"),
        ("shmap f1", "P", "spmdSpec"), ("shmap f1", "on", "spmdOn"),
        ("psum(w", "return", "spmdControl"), ("psum(w", "psum", "spmdCollective"),
        ("w = g(x)", "w", ""),
    ])
    expect(os.path.join(root, "exercises/01-replicate/starter.spmd"), [("return ???", "???", "spmdHole")])
    expect(fixture, [
        ("[[no_auto", "no_auto_pbroadcast", "spmdAttribute"), ("einsum(", "\\n", "spmdEscape"),
        ("axis=0", "axis", "spmdKeywordArg"), ("x: f32[4]{i}", "i}", "spmdAxis"),
        ("import std.nn", "std.nn", "spmdModule"), ("if ", "and", "spmdLogical"),
        ("1.5e-3", "1.5e-3", "spmdFloat"), ("sharded", "sharded", "spmdDeclaration"),
        ("7 // 2", "//", "spmdOperator"), ("7 // 2", "%", "spmdOperator"),
        ("@ auto", "auto", "spmdAuto"), ("P(None", "None", "spmdConstant"), ("$", "$", "spmdError"),
        ("# NOTE", "NOTE", "spmdTodo"),
    ])
    for f in failures:
        print("FAIL:", f)
    print(f"vim: {len(samples)} files, {len(seen & defined)} of {len(defined)} groups seen, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
