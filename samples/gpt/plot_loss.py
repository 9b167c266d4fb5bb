#!/usr/bin/python3
"""The loss curve of a run as an SVG picture, from the run's log (standard library only).

    spmdc run samples/gpt/gpt.spmd ... | tee run.log
    /usr/bin/python3 samples/gpt/plot_loss.py run.log loss.svg

Reads the lines `step N loss L` that the program prints; draws the loss against
the step, with ln(96) (a uniform guess over the vocabulary) as a dashed line.
"""
import math
import re
import sys

W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 60, 20, 20, 50


def main(log_path, svg_path):
    points = [(int(s), float(l)) for s, l in
              re.findall(r"^step (\d+) loss (\S+)$", open(log_path).read(), re.M)]
    if not points:
        sys.exit(f"plot_loss.py: no `step N loss L` lines in {log_path}")
    last = max(s for s, _ in points) or 1
    top = math.ceil(max(max(l for _, l in points), math.log(96)))
    bottom = math.floor(min(l for _, l in points))
    x = lambda s: LEFT + (W - LEFT - RIGHT) * s / last
    y = lambda l: TOP + (H - TOP - BOTTOM) * (top - l) / (top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    for v in range(bottom, top + 1):
        out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{W - RIGHT}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    tick = next(t * 10**k for k in range(10) for t in (1, 2, 5) if last / (t * 10**k) <= 6)
    for s in range(0, last + 1, tick):
        out.append(f'<text x="{x(s):.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 10}" text-anchor="middle">step</text>')
    out.append(f'<text x="16" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})">training loss (nats)</text>')
    ln = y(math.log(96))
    out.append(f'<line x1="{LEFT}" y1="{ln:.1f}" x2="{W - RIGHT}" y2="{ln:.1f}" stroke="#c33" '
               f'stroke-dasharray="6 4"/>')
    out.append(f'<text x="{W - RIGHT - 4}" y="{ln - 6:.1f}" text-anchor="end" fill="#c33">'
               f'ln 96 = {math.log(96):.2f}</text>')
    path = " ".join(f"{x(s):.1f},{y(l):.1f}" for s, l in points)
    out.append(f'<polyline points="{path}" fill="none" stroke="#1f5fa8" stroke-width="1.5"/>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" '
               f'fill="none" stroke="#333"/>')
    out.append("</svg>")
    with open(svg_path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
