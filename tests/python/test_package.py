"""tests/python/test_package.py SOURCE_DIR SPMDC — the installed `spmdc` package.

Run by pip_install.sh with the venv's Python after `pip install ./` (and usable
with PYTHONPATH=build/python): compile().run() against NumPy, derived and
sharded programs equal to the CLI's output byte for byte, errors as
CompileError with spans and the CLI's text, cost, show and build.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import spmdc

src, spmdc_exe = sys.argv[1], sys.argv[2]
os.chdir(src)  # relative paths, as a student types them
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def cli(*args):
    return subprocess.run([spmdc_exe, *args], capture_output=True, text=True)


print("spmdc", spmdc.version, "from", os.path.dirname(spmdc.__file__))
check("site-packages" in spmdc.__file__ or "build" in spmdc.__file__, "imported the installed package")

# compile().run() against NumPy: f1(x) = psum(sum(2x)) over 8 simulated devices.
prog = spmdc.compile("samples/seed/example1.spmd")
x = np.random.default_rng(0).uniform(-1, 1, (32, 3)).astype(np.float32)
(y,) = prog.run(x=x)
check(y.shape == () and abs(float(y) - 2 * x.astype(np.float64).sum()) < 1e-4,
      f"example1 run: {float(y):.6f} vs NumPy {2 * x.sum():.6f}")
(y2,) = prog(x)
check(float(y2) == float(y), "prog(x) runs the only shmap")
# A resized mesh (--mesh) and the types (spmdc print --types).
(y4,) = spmdc.compile("samples/seed/example1.spmd", mesh={"i": 4}).run(x=x)
check(abs(float(y4) - float(y)) < 1e-4, "mesh={'i': 4} runs on 4 devices")
check(prog.types("f1") in cli("print", "--types", "samples/seed/example1.spmd").stdout,
      "types(fn) is a block of `spmdc print --types`")
check("f32[]{i}" in prog.types("f1"), "types show the variance")

# dp_loss and its gradient: run against NumPy; the source equals `spmdc grad`'s.
dp = spmdc.compile("samples/dp_loss.spmd")
g = dp.grad(wrt="params")
check(g.source == cli("grad", "samples/dp_loss.spmd", "--wrt", "params").stdout,
      "grad source == `spmdc grad --wrt params` byte for byte")
for kind in ("vjp", "jvp"):
    check(getattr(dp, kind)().source == cli(kind, "samples/dp_loss.spmd").stdout,
          f"{kind} source == `spmdc {kind}`")
check(prog.transpose().source == cli("transpose", "samples/seed/example1.spmd").stdout,
      "transpose source == `spmdc transpose`")
rng = np.random.default_rng(1)
params = rng.standard_normal((16, 4)).astype(np.float32) * 0.3
inputs = rng.standard_normal((64, 16)).astype(np.float32)
targets = rng.standard_normal((64, 4)).astype(np.float32)
loss, dparams = g.run(params=params, inputs=inputs, targets=targets)
p64, i64, t64 = (a.astype(np.float64) for a in (params, inputs, targets))
pred = np.tanh(i64 @ p64)
ref_loss = np.mean(np.sum((pred - t64) ** 2, axis=1))
ref_grad = i64.T @ (2 * (pred - t64) * (1 - pred ** 2)) / 64
check(abs(float(loss) - ref_loss) < 1e-4, f"grad run: loss {float(loss):.6f} vs NumPy {ref_loss:.6f}")
check(np.allclose(dparams, ref_grad, atol=1e-4), "grad run: gradient matches NumPy")

# shard(auto=True) equals `spmdc shard --auto`, and runs like the sharded function.
mlp = spmdc.compile("samples/global/tp_mlp.spmd")
sharded = mlp.shard(auto=True)
check(sharded.source == cli("shard", "--auto", "samples/global/tp_mlp.spmd").stdout,
      "shard(auto=True) source == `spmdc shard --auto`")
sig = mlp.signature()
args = [rng.standard_normal(shape).astype(np.float32) for _n, _d, shape in sig["params"]]
ref = mlp.run(*args)
got = sharded.run(*args)
check(all(np.allclose(a, b, atol=1e-4) for a, b in zip(ref, got)),
      "the sharded program computes what the global one does")

# Errors: CompileError with the CLI's text and the JSON diagnostics' spans.
bad = "mesh M = (i: 4)\nshmap f(x: f32[8] @ P(i)) -> f32[8] @ P() on M {\n  return x\n}\n"
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "bad.spmd")
    with open(path, "w") as f:
        f.write(bad)
    try:
        spmdc.compile(path)
        check(False, "a bad program raises CompileError")
    except spmdc.CompileError as e:
        d = e.diagnostics[0]
        check((d["severity"], d["code"], d["line"], d["column"]) ==
              ("error", "return-type-mismatch", 3, 3), f"diagnostic with its span: {d['code']} "
              f"at {d['line']}:{d['column']}")
        check(d["range"]["end"]["column"] == 11 and d["notes"][0]["line"] == 2,
              "range and secondary span")
        check(str(e) + "\n" == cli("check", path).stderr, "str(CompileError) is the CLI's text")
        check("^~~~~~~~" in str(e) and "<pre" in e._repr_html_(), "caret, and HTML for notebooks")
        json_cli = cli("check", path, "--diagnostics-format=json").stderr
        check([d] == [__import__("json").loads(l) for l in json_cli.splitlines()][:1],
              "diagnostics == --diagnostics-format=json")
try:
    spmdc.compile(bad)
except spmdc.CompileError as e:
    check(e.diagnostics[0]["file"] == "<string>", "source text is named <string>")
try:
    dp.grad(wrt="nope")
    check(False, "a bad --wrt raises")
except spmdc.CompileError as e:
    check(e.diagnostics[0]["severity"] == "error", f"grad(wrt='nope'): {e.diagnostics[0]['code']}")

# cost and show return data and SVG.
cost = dp.cost(grad=True)
check(len(cost) == 2 and cost[0]["flops"] > 0 if "flops" in cost[0] else len(cost) == 2,
      "cost(grad=True): forward and gradient")
svg = str(dp.show())
check(svg.startswith("<svg") or "<svg" in svg[:200], "show() is SVG")
check(svg == cli("show", "samples/dp_loss.spmd", "--format", "svg").stdout, "show() == `spmdc show --format svg`")

# build(): a callable backed by the executable (run as a subprocess).
t = time.time()
exe = prog.build()
(yb,) = exe(x=x)
check(abs(float(yb) - float(y)) < 1e-5, f"build() executable agrees with run ({time.time() - t:.1f} s)")

if failures:
    print(f"{len(failures)} FAILED")
    sys.exit(1)
print("all passed")
