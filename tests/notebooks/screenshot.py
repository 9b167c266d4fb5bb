"""tests/notebooks/screenshot.py EXECUTED_NOTEBOOK OUT_DIR — does a rendered notebook show its pictures?

Renders the notebook the notebooks/execute test executed to HTML (nbconvert),
takes a screenshot of the page in headless Chromium, and reads the PNG back
(a small reader below: zlib and the five PNG filters) to check what a reader
would see: the page is not blank, it has text, and the sharding picture is
there — pixels of every device colour the notebook's SVG uses for its blocks
(an HTML converter that strips the SVG's elements leaves a blank box there,
which fails). Exit 77 (skipped) without Chromium, nbconvert or the executed
notebook; the screenshot stays in OUT_DIR for a look.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

notebook, out_dir = sys.argv[1], sys.argv[2]


def skip(why):
    print("SKIPPED:", why)
    sys.exit(77)


chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
if not chromium:
    skip("no Chromium (apt install chromium)")
try:
    import nbformat
    from nbconvert import HTMLExporter
except ImportError as e:
    skip(f"nbconvert is not installed ({e}; apt install python3-nbconvert)")
if not os.path.exists(notebook):
    skip(f"{notebook} was not executed (run the notebooks/execute test first)")


def read_png(path):
    """(width, height, channels, rows of bytes) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, channels, rows


start = time.time()
nb = nbformat.read(notebook, as_version=4)
# The device colours of the pictures the notebook shows (rect.block fills).
svgs = [output["data"]["image/svg+xml"] for cell in nb.cells for output in cell.get("outputs", [])
        if "image/svg+xml" in output.get("data", {})]
colors = sorted({c for svg in svgs for c in re.findall(r'class="block"[^>]*fill="#([0-9a-f]{6})"', svg)})
if not colors:
    print(f"FAIL {notebook} shows no sharding picture")
    sys.exit(1)
html, _ = HTMLExporter().from_notebook_node(nb)
os.makedirs(out_dir, exist_ok=True)
page = os.path.join(out_dir, os.path.basename(notebook).replace(".ipynb", ".html"))
shot = page.replace(".html", ".png")
with open(page, "w") as f:
    f.write(html)
if os.path.exists(shot):
    os.remove(shot)
cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
       "--force-device-scale-factor=1", "--window-size=1100,1400", f"--screenshot={shot}",
       "file://" + os.path.abspath(page)]
proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
if not os.path.exists(shot):
    print("FAIL Chromium wrote no screenshot:\n" + proc.stderr[-2000:])
    sys.exit(1)
rendered = time.time()
width, height, channels, rows = read_png(shot)
white = dark = 0
found = {c: 0 for c in colors}
wanted = {tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)): c for c in colors}
for line in rows:
    for x in range(0, width * channels, channels):
        rgb = (line[x], line[x + 1], line[x + 2])
        if rgb[0] > 245 and rgb[1] > 245 and rgb[2] > 245:
            white += 1
        elif rgb[0] + rgb[1] + rgb[2] < 200:
            dark += 1
        if rgb in wanted:
            found[wanted[rgb]] += 1
total = width * height
print(f"{shot}: {width}x{height}, {100 * (total - white) / total:.1f}% not white, "
      f"{100 * dark / total:.2f}% dark (text), device colours {found}")
print(f"render + screenshot {rendered - start:.1f} s, PNG check {time.time() - rendered:.1f} s")
problems = []
if total - white < total // 50:
    problems.append("the page is (nearly) blank")
if dark < total // 500:
    problems.append("the page shows (almost) no text")
missing = [c for c, n in found.items() if n < 500]
if missing:
    problems.append("the sharding picture is missing or broken: no blocks of colour "
                    + ", ".join("#" + c for c in missing))
for p in problems:
    print("FAIL", p)
sys.exit(1 if problems else 0)
