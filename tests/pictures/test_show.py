#!/usr/bin/env python3
"""test_show.py SPMDC SOURCE_DIR — `spmdc show` draws the right blocks.

For every array of tests/pictures/layouts.spmd (P(x), P(None, x), P() on a
1-D mesh; P(x, y), P((x, y)), P(None, x), P(y, x), P() and a 3-D array on a
2-D mesh) the expected picture is computed here, independently of spmdc,
from the definitions: devices are numbered row-major over the mesh axes; a
dimension split over axes (a, b) is cut into size(a) * size(b) blocks and a
device holds block coord(a) * size(b) + coord(b); a device holds all of a
dimension its spec leaves out. The SVG is parsed with a real XML parser
(xml.etree) and each drawn block (rect.block: data-devices, data-rows,
data-cols) must be exactly the expected one; the text picture must show the
same grid. The communication rows name each collective with its axes and the
bytes it moves (all_gather of n elements over G devices: (G-1)/G * 4n;
psum: 2 (G-1)/G * 4n). Every sample must draw as well-formed SVG.
"""
import glob
import itertools
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

spmdc, src = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
fixture = os.path.join(here, "layouts.spmd")
failures = []
NS = "{http://www.w3.org/2000/svg}"


def show(*args):
    r = subprocess.run([spmdc, "show", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def coords(mesh, d):
    out = []
    for name, size in reversed(mesh):
        out.append(d % size)
        d //= size
    return dict(zip([n for n, _ in reversed(mesh)], out))


def expected(mesh, shape, spec, row_dim, col_dim):
    """{(rows, cols): devices} for the drawn dimensions."""
    sizes = dict(mesh)
    ndev = 1
    for _, s in mesh:
        ndev *= s
    cells = {}
    for d in range(ndev):
        c = coords(mesh, d)
        start, local = [], []
        for dim, n in enumerate(shape):
            axes = spec[dim] if dim < len(spec) else ()
            parts, index = 1, 0
            for a in axes:
                index = index * sizes[a] + c[a]
                parts *= sizes[a]
            local.append(n // parts)
            start.append(index * (n // parts))
        key = tuple(f"[{start[k]}:{start[k] + local[k]}]" if k is not None and k >= 0 else ""
                    for k in (row_dim, col_dim))
        cells.setdefault(key, []).append(d)
    return {k: " ".join(map(str, sorted(v))) for k, v in cells.items()}


M1 = [("x", 4)]
M2 = [("x", 2), ("y", 3)]
CASES = {  # shmap -> [(name, mesh, shape, spec per dim, row_dim, col_dim)]
    "one_d": [("a", M1, [8], [("x",)], -1, 0),
              ("b", M1, [4, 8], [(), ("x",)], 0, 1),
              ("c", M1, [8, 4], [], 0, 1),
              ("one_d", M1, [], [], -1, -1)],
    "two_d": [("a", M2, [4, 6], [("x",), ("y",)], 0, 1),
              ("b", M2, [12], [("x", "y")], -1, 0),
              ("c", M2, [6, 4], [(), ("x",)], 0, 1),
              ("d", M2, [6, 6], [("y",), ("x",)], 0, 1),
              ("e", M2, [4], [], -1, 0),
              ("f", M2, [2, 3, 4], [(), ("y",)], -1, 1),
              ("two_d", M2, [4, 6], [("x",), ("y",)], 0, 1)],
}

rc, svg, err = show(fixture, "--format", "svg")
if rc != 0:
    sys.exit(f"FAIL: spmdc show --format svg: {rc} {err}")
root = ET.fromstring(svg)
if root.tag != NS + "svg":
    failures.append(f"root element is {root.tag}")
for shmap, arrays in CASES.items():
    g = next((e for e in root.iter(NS + "g") if e.get("class") == "shmap" and e.get("data-name") == shmap), None)
    if g is None:
        failures.append(f"svg: no group for shmap {shmap}")
        continue
    drawn = {e.get("data-name"): e for e in g.iter(NS + "g") if e.get("class") == "array"}
    for name, mesh, shape, spec, row_dim, col_dim in arrays:
        e = drawn.get(name)
        if e is None:
            failures.append(f"svg: {shmap}: no picture of {name}")
            continue
        got = {(r.get("data-rows"), r.get("data-cols")): r.get("data-devices")
               for r in e.iter(NS + "rect") if r.get("class") == "block"}
        want = expected(mesh, shape, spec, row_dim, col_dim)
        if got != want:
            failures.append(f"svg: {shmap}.{name}: blocks {got}, expected {want}")
        if (int(e.get("data-row-dim")), int(e.get("data-col-dim"))) != (row_dim, col_dim):
            failures.append(f"svg: {shmap}.{name}: draws dims {e.get('data-row-dim')}, {e.get('data-col-dim')}")

# The collectives of two_d: all_gather of f32[2] over 6 devices -> f32[12] (48 bytes),
# then psum of an f32[] over 6 devices, then the pbroadcast spmdc inserts to add
# that invariant sum to the varying `a` (it moves nothing).
g = next(e for e in root.iter(NS + "g") if e.get("data-name") == "two_d")
rows = [(e.get("data-op"), e.get("data-axes"), float(e.get("data-moved-bytes")))
        for e in g.iter(NS + "g") if e.get("class") == "collective"]
want = [("all_gather", "(x, y)", 5 / 6 * 48), ("psum", "(x, y)", 2 * 5 / 6 * 4), ("pbroadcast", "(x, y)", 0)]
if len(rows) != len(want) or any(a[:2] != b[:2] or abs(a[2] - b[2]) > 1e-3 for a, b in zip(rows, want)):
    failures.append(f"svg: two_d collectives {rows}, expected {want}")

# Text: the same grids.
rc, text, err = show(fixture, "--fn", "two_d")
if rc != 0:
    failures.append(f"spmdc show --fn two_d: {rc} {err}")
for line in ["parameter a: f32[4, 6] @ P(x, y)",
             "local f32[2, 2] on each of 6 devices; 6 blocks, one device each",
             "[0:2] | dev 0 | dev 1 | dev 2 |",
             "[2:4] | dev 3 | dev 4 | dev 5 |",
             "parameter d: f32[6, 6] @ P(y, x)",
             "[0:2] | dev 0 | dev 3 |",
             "parameter e: f32[4] @ P()",
             "| dev 0-5 |",
             "parameter c: f32[6, 4] @ P(None, x)",
             "[0:6] | dev 0-2 | dev 3-5 |",
             "devices:  0 = (x 0, y 0)",
             "all_gather           over (x, y)   f32[2]{x, y}",
             "moves 40 B"]:
    if line not in text:
        failures.append(f"text: no line with `{line}`")
if "shmap one_d" in text:
    failures.append("text: --fn two_d also shows one_d")
rc, _, err = show(fixture, "--fn", "nope")
if rc != 1 or "nope" not in err:
    failures.append(f"--fn nope: exit {rc}, {err.strip()}")

# Every sample draws as well-formed SVG with one block per drawn cell. A
# global-view sample (samples/global/) has no shmap of its own: the one
# `spmdc shard --auto` emits for it is drawn instead.
samples = sorted(glob.glob(os.path.join(src, "samples/**/*.spmd"), recursive=True))
for path in samples:
    text = open(path).read()
    # samples/gpt sizes its training loop with `--set steps=N`: a small N here.
    sizes = ["--set", "steps=4"] if "range(steps)" in text else []
    if os.sep + "global" + os.sep in path or not re.search(r"^shmap ", text, re.M):
        emitted = os.path.join(tempfile.mkdtemp(), os.path.basename(path))
        r = subprocess.run([spmdc, "shard", "--auto", path, *sizes, "-o", emitted],
                           capture_output=True, text=True)
        sizes = []
        if r.returncode != 0:
            failures.append(f"{os.path.relpath(path, src)}: shard exit {r.returncode}: "
                            f"{r.stderr[:300]}")
            continue
        path = emitted
    rc, out, err = show(path, "--format", "svg", *sizes)
    if rc != 0:
        failures.append(f"{os.path.relpath(path, src)}: exit {rc}: {err[:300]}")
        continue
    try:
        ET.fromstring(out)
    except ET.ParseError as e:
        failures.append(f"{os.path.relpath(path, src)}: not well-formed: {e}")

for f in failures:
    print("FAIL:", f)
print(f"show: {len(samples)} samples drawn, {len(failures)} failures")
sys.exit(1 if failures else 0)
