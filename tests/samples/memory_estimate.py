#!/usr/bin/env python3
"""The memory model against measurement (issue 28 item 2).

For each global-view sample (samples/global/*.spmd, and the training step of
tests/golden/sharding/train_step_mlp_auto.spmd), the plan `spmdc shard --auto`
finds alone and, where the sample's header gives one (`--memory-per-device
LIMIT` in its usage lines), the plan it finds under that memory limit:
`spmdc shard --auto --explain` gives the plan's estimated peak bytes per
device, by kind; the shmap `spmdc shard --auto` emits is built for the CPU
and run with `--report-memory`, which counts every tensor a device holds.
The estimate must be within +-15% of the executable's largest per-device
peak, and under a limit within the limit (--explain never shows the plan
"(over the limit)": --memory-per-device bounds the estimate). The
interpreter's peaks (`spmdc run`, fused, and op by op with
--check-replication) are printed beside it for comparison.

Usage: memory_estimate.py SPMDC REPO [--table]   (exit 0 when every sample is within)
"""
import pathlib
import re
import subprocess
import sys
import tempfile

TOLERANCE = 0.15
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


def parse_bytes(text):
    number, unit = text.split()
    return float(number) * UNITS[unit]


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: exit {r.returncode}\n{r.stderr}")
    return r


def header_limit(path):
    """The `--memory-per-device LIMIT` of the sample's usage lines, or None."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = re.search(r"--memory-per-device (\S+)", line)
        if m:
            return m.group(1)
    return None


def estimate(spmdc, path, limit_args):
    out = run(spmdc, "shard", path, "--auto", *limit_args, "--explain").stdout
    # --memory-per-device bounds the estimate: the plan --auto answers is
    # never shown over the limit.
    for line in out.splitlines():
        if line.startswith("  this plan") and "(over the limit)" in line:
            raise RuntimeError(f"{path} {' '.join(limit_args)}: the plan is over the limit:\n{line}")
    section = out.split("memory per device at this plan's peak", 1)[1]
    kinds = {}
    for line in section.splitlines()[1:]:
        m = re.match(r"  (\S.*?)\s{2,}(\S+ \S+)$", line)
        if m:
            kinds[m.group(1)] = parse_bytes(m.group(2))
    return kinds


def measured(output):
    m = re.search(r"largest (\d+) bytes", output)
    if not m:
        raise RuntimeError("no --report-memory report in:\n" + output)
    return int(m.group(1))


def main():
    spmdc, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    samples = sorted((root / "samples" / "global").glob("*.spmd"))
    samples.append(root / "tests" / "golden" / "sharding" / "train_step_mlp_auto.spmd")
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        plans = []
        for path in samples:
            plans.append((path, None))
            if header_limit(path):
                plans.append((path, header_limit(path)))
        for path, limit in plans:
            name = path.stem + (f" under {limit}" if limit else "")
            limit_args = ["--memory-per-device", limit] if limit else []
            kinds = estimate(spmdc, path, limit_args)
            stem = path.stem + ("_limited" if limit else "")
            shmap, exe = tmp / f"{stem}.spmd", tmp / stem
            run(spmdc, "shard", path, "--auto", *limit_args, "-o", shmap)
            run(spmdc, "build", shmap, "--target", "cpu", "-q", "-o", exe)
            built = measured(run(exe, "--random", "1", "-q", "--report-memory").stderr)
            fused = measured(run(spmdc, "run", shmap, "--random", "1", "-q",
                                 "--report-memory").stderr)
            op_by_op = measured(run(spmdc, "run", shmap, "--random", "1", "-q", "--report-memory",
                                    "--check-replication").stderr)
            total = kinds["total"]
            ratio = total / built
            rows.append((name, total, built, ratio, fused, op_by_op, kinds))
            if abs(ratio - 1) > TOLERANCE:
                failures.append(f"{name}: estimate {total:.0f} bytes, measured {built} "
                                f"(ratio {ratio:.3f}, outside +-{TOLERANCE:.0%})")
    print(f"{'sample':34} {'estimate':>10} {'executable':>10} {'ratio':>6} "
          f"{'run':>10} {'op by op':>10}  breakdown of the estimate")
    for name, total, built, ratio, fused, op_by_op, kinds in rows:
        parts = ", ".join(f"{k} {v:.0f}" for k, v in kinds.items() if k != "total" and v)
        print(f"{name:34} {total:10.0f} {built:10d} {ratio:6.3f} {fused:10d} {op_by_op:10d}  {parts}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
