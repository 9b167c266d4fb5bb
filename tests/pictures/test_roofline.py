#!/usr/bin/env python3
"""`spmdc cost --plot` (usage: test_roofline.py SPMDC ROOT).

Parses the SVG with xml.etree and maps its pixels back to values through the
plot box it declares; the expected values are computed here by hand: the
ridge at peak / bandwidth of the profile (docs/cli.md's table), each point at
(flops / bytes communicated, flops / (flops / peak + alpha + bytes / bw))."""
import math
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SPMDC, ROOT = sys.argv[1], Path(sys.argv[2])
NS = {"svg": "http://www.w3.org/2000/svg"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, rel=2e-3):
    return abs(a - b) <= rel * abs(b)


def plot(path, *args):
    out = Path(tempfile.mkdtemp(prefix="spmdc-roof-")) / "r.svg"
    r = subprocess.run([SPMDC, "cost", str(path), "--plot", str(out), *args],
                       capture_output=True, text=True)
    check(r.returncode == 0, "cost --plot %s %s: %s" % (path, args, r.stderr))
    root = ET.parse(out).getroot()  # well-formed XML, or this raises
    check(root.tag == "{http://www.w3.org/2000/svg}svg", "an svg document")
    return root, r.stdout


class Box:
    """Pixel <-> value through the plot box's declared decades."""

    def __init__(self, root):
        g = root.find(".//svg:g[@class='plot']", NS)
        f = {k: float(v) for k, v in g.attrib.items() if k != "class"}
        self.left, self.top = f["data-left"], f["data-top"]
        self.width, self.height = f["data-width"], f["data-height"]
        self.x0, self.x1 = math.log10(f["data-x-min"]), math.log10(f["data-x-max"])
        self.y0, self.y1 = math.log10(f["data-y-min"]), math.log10(f["data-y-max"])

    def x(self, px):
        return 10 ** (self.x0 + (px - self.left) / self.width * (self.x1 - self.x0))

    def y(self, py):
        return 10 ** (self.y0 + (self.top + self.height - py) / self.height * (self.y1 - self.y0))


def roof(root):
    pts = root.find(".//svg:polyline[@class='roof']", NS).get("points").split()
    return [tuple(float(c) for c in p.split(",")) for p in pts]


tmp = Path(tempfile.mkdtemp(prefix="spmdc-roof-src-"))
# Per device (mesh of 4): y = x @ w is [4, 8] @ [8, 8] -> 2*4*8*8 = 512 flops;
# sum(y) adds 32 elements -> 32 flops; psum of one f32 over 4 devices moves
# 2*(4-1)/4 * 4 bytes = 6 bytes.
small = tmp / "small.spmd"
small.write_text("""mesh M = (i: 4)

shmap f(x: f32[16, 8] @ P(i), w: f32[8, 8] @ P()) -> f32[] @ P() on M {
  y = x @ w
  return psum(sum(y), i)
}
""")
FLOPS, BYTES = 512 + 32, 6.0
PEAK, BW, ALPHA = 989e12, 370e9, 5e-6  # the h100 profile (docs/cli.md)

root, table = plot(small)
box = Box(root)
r = roof(root)
check(len(r) == 3, "the roof has three vertices: %r" % r)
knee = r[1]
check(close(box.x(knee[0]), PEAK / BW), "ridge at peak/bandwidth = %.4g: %.4g" % (PEAK / BW, box.x(knee[0])))
check(close(box.y(knee[1]), PEAK), "the flat roof at the peak: %.4g" % box.y(knee[1]))
check(abs(r[2][1] - knee[1]) < 0.01 and r[2][0] > knee[0], "flat right of the ridge")
# Left of the ridge the roof is intensity * bandwidth.
check(close(box.y(r[0][1]), box.x(r[0][0]) * BW), "sloped roof = x * bandwidth")
points = root.findall(".//svg:circle[@class='point']", NS)
check(len(points) == 1, "one point (the forward program): %d" % len(points))
intensity = FLOPS / BYTES
rate = FLOPS / (FLOPS / PEAK + ALPHA + BYTES / BW)
if points:
    p = points[0]
    check(close(box.x(float(p.get("cx"))), intensity), "point x = %.4g: %.4g" % (intensity, box.x(float(p.get("cx")))))
    check(close(box.y(float(p.get("cy"))), rate), "point y = %.4g: %.4g" % (rate, box.y(float(p.get("cy")))))
    check(p.get("data-label") == "forward: f", "label: %r" % p.get("data-label"))
    check(close(float(p.get("data-intensity")), intensity), "data-intensity")
check("forward: f" in table, "the table is still printed")

# Another profile: ridge at 1e12 / 1e10 = 100 flop/B.
root, _ = plot(small, "--flops-per-s", "1e12", "--bw-bytes-per-s", "1e10", "--latency-s", "0")
box = Box(root)
check(close(box.x(roof(root)[1][0]), 100), "ridge at 100 flop/B with the overridden profile")
p = root.find(".//svg:circle[@class='point']", NS)
# No alpha: y = flops / (compute + communication time), below the roof
# min(peak, x * bw) since the model does not overlap them.
check(close(box.y(float(p.get("cy"))), FLOPS / (FLOPS / 1e12 + BYTES / 1e10)), "point without alpha")
check(box.y(float(p.get("cy"))) <= min(1e12, intensity * 1e10), "... below the roof")

# No communication: infinite intensity, drawn at the right edge at the peak.
local = tmp / "local.spmd"
local.write_text("""mesh M = (i: 4)

shmap g(x: f32[16, 8] @ P(i)) -> f32[16, 8] @ P(i) on M {
  return x * x
}
""")
root, _ = plot(local)
box = Box(root)
p = root.find(".//svg:circle[@class='point']", NS)
check(p.get("data-intensity") == "inf", "no communication: %r" % p.get("data-intensity"))
check(abs(float(p.get("cx")) - (box.left + box.width)) < 0.01, "at the right edge")
check(close(box.y(float(p.get("cy"))), PEAK), "at the peak (4*8 flops, no communication)")

# --grad: the gradient program is a second point.
root, _ = plot(small, "--grad")
points = root.findall(".//svg:circle[@class='point']", NS)
labels = [p.get("data-label") for p in points]
check(len(labels) == 2 and labels[0] == "forward: f" and labels[1].startswith("gradient: "),
      "forward and gradient: %r" % labels)

# Every sample plots: well-formed, a point for each program that computes
# (per `cost --json`), the others listed as not drawn.
import json  # noqa: E402
for sample in sorted((ROOT / "samples").glob("*.spmd")):
    r = subprocess.run([SPMDC, "cost", str(sample), "--plot", "-"], capture_output=True, text=True)
    if r.returncode != 0:
        # Files with several entry shmaps need --fn; cost says so.
        check("--fn" in r.stderr, "%s: %s" % (sample.name, r.stderr))
        continue
    programs = json.loads(subprocess.run([SPMDC, "cost", str(sample), "--json"],
                                         capture_output=True, text=True).stdout)["programs"]
    root = ET.fromstring(r.stdout)
    drawn = len(root.findall(".//svg:circle[@class='point']", NS))
    check(drawn == sum(p["flops"] > 0 for p in programs), "%s: %d points" % (sample.name, drawn))
    check(r.stdout.count("not drawn") == sum(p["flops"] == 0 for p in programs), sample.name)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("roofline: all checks passed")
