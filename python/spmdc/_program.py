"""spmdc.compile, Program, CompileError and BuiltProgram (the package's API).

Programs are immutable: each transformation (grad, vjp, jvp, transpose, shard)
returns a new Program compiled from the source text the corresponding `spmdc`
command prints, so `prog.grad().source` is byte for byte `spmdc grad`'s output.
"""
from __future__ import annotations

import html
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _spmdc

version = _spmdc.version
_PACKAGE_DIR = Path(__file__).resolve().parent
_NUMPY_DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": np.float32, "i32": np.int32,
                 "bool": np.bool_}


class CompileError(Exception):
    """The program has errors. `diagnostics` holds them as `spmdc --diagnostics-format=json`
    writes them (dicts with severity, code, message, file, line, column, range, notes, help,
    fixits; docs/diagnostics.md); str() is the text the CLI prints, with the source line and a
    caret under the span; in a notebook they render as HTML."""

    def __init__(self, text: str, json_lines: str):
        self.text = text
        self.diagnostics = [json.loads(line) for line in json_lines.splitlines() if line.strip()]
        super().__init__(text.rstrip("\n"))

    @property
    def errors(self):
        return [d for d in self.diagnostics if d["severity"] in ("error", "internal error")]

    def __str__(self) -> str:
        return self.text.rstrip("\n")

    def _repr_html_(self) -> str:
        return _diagnostics_html(self.text)

    def _render_traceback_(self):  # IPython: the diagnostics, not a Python traceback
        return ["spmdc.CompileError:", *self.text.rstrip("\n").splitlines()]


def _diagnostics_html(text: str) -> str:
    """The CLI's rendering as HTML: one <pre>, severities coloured, carets in red."""
    rows = []
    for line in text.rstrip("\n").splitlines():
        escaped = html.escape(line)
        if ": error: " in line or ": internal error: " in line or line.startswith("error:"):
            escaped = f'<span style="color:#c00;font-weight:bold">{escaped}</span>'
        elif ": warning: " in line:
            escaped = f'<span style="color:#a60;font-weight:bold">{escaped}</span>'
        elif ": note: " in line or line.startswith("help:"):
            escaped = f'<span style="color:#06c">{escaped}</span>'
        elif line.lstrip(" ").startswith("|") and "^" in line:
            bar = escaped.index("|") + 1
            escaped = escaped[:bar] + f'<span style="color:#c00">{escaped[bar:]}</span>'
        rows.append(escaped)
    return ('<pre class="spmdc-diagnostics" style="background:#fff8f8;padding:6px">'
            + "\n".join(rows) + "</pre>")


def _raise_diagnostics(error: "_spmdc.DiagnosticsError"):
    text, json_lines = error.args
    raise CompileError(text, json_lines) from None


def _call(fn, *args):
    try:
        return fn(*args)
    except _spmdc.DiagnosticsError as e:
        _raise_diagnostics(e)


def _library_paths(extra: Sequence[str]) -> list:
    paths = [str(p) for p in extra]
    installed = _PACKAGE_DIR / "stdlib"
    if installed.is_dir():
        paths.append(str(installed))
    return paths


def compile(source_or_path: Union[str, os.PathLike], *, mesh=None,
            sizes: Optional[Mapping[str, int]] = None, name: Optional[str] = None,
            library_paths: Sequence[str] = (), unroll: int = 0,
            auto_pbroadcast: bool = True) -> "Program":
    """Compiles a program: a path to a .spmd file, or the program's text.

    mesh:  new axis sizes, as `spmdc --mesh` gives them: {"i": 4} for the program's only
           mesh, or {"M": {"i": 4}} to name one of several.
    sizes: the named dimensions of shmap signatures, as `--set n=128`: {"n": 128}.
    name:  the file name diagnostics and generated comments use (default: the path, or
           "<string>" for text).
    Raises CompileError when the program has errors; warnings are kept in `.warnings`.
    """
    text, path = _read(source_or_path)
    if name is not None:
        path = name
    meshes = []
    for key, value in (mesh or {}).items():
        if isinstance(value, Mapping):
            meshes.append((key, [(a, int(s)) for a, s in value.items()]))
        else:
            meshes.append(("", [(key, int(value))]))
    # One override for the program's only mesh, its axes together.
    only = [axes for m, axes in meshes if m == ""]
    meshes = [(m, axes) for m, axes in meshes if m != ""]
    if only:
        meshes.append(("", [a for axes in only for a in axes]))
    sizes = {k: int(v) for k, v in (sizes or {}).items()}
    compiled, diag_text, diag_json = _spmdc.compile(
        text, path, meshes, sizes, _library_paths(library_paths), int(unroll),
        bool(auto_pbroadcast))
    if compiled is None:
        raise CompileError(diag_text, diag_json)
    return Program(compiled, text, path, diag_text, diag_json)


def _read(source_or_path) -> tuple:
    if isinstance(source_or_path, os.PathLike):
        path = os.fspath(source_or_path)
        return Path(path).read_text(), path
    s = str(source_or_path)
    if "\n" not in s and s.endswith(".spmd"):
        return Path(s).read_text(), s
    return s, "<string>"


class Program:
    """A checked program. `.source` is its text as given; `.text(types=...)` as `spmdc print`
    prints it. Derived programs (grad, vjp, jvp, transpose, shard) are Programs too."""

    def __init__(self, compiled, source: str, path: str, diag_text: str = "",
                 diag_json: str = ""):
        self._c = compiled
        self.source = source
        self.path = path
        self.warnings = CompileError(diag_text, diag_json).diagnostics if diag_json else []
        self._warning_text = diag_text

    # -- what it is ------------------------------------------------------------------
    @property
    def functions(self) -> list:
        """Names of the shmaps and sharded functions (entries: not called by another)."""
        return [name for name, _kind, entry in self._c.functions() if entry]

    def signature(self, fn: str = "") -> dict:
        """{name, kind, params: [(name, dtype, global shape)], results: [names], devices}."""
        return self._c.signature(fn)

    def text(self, types: bool = False) -> str:
        """The program as `spmdc print [--types]` prints it."""
        return self._c.print(bool(types))

    def types(self, fn: str = "") -> str:
        """`spmdc print --types`: every value's type and variance (one function with fn)."""
        text = self._c.print(True)
        if not fn:
            return text
        return _function_block(text, fn)

    def __repr__(self) -> str:
        return f"<spmdc.Program {self.path} functions={self.functions}>"

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(self.source) + "</pre>"

    # -- derived programs -------------------------------------------------------------
    def _derive(self, kind, fn, wrt, of, remat):
        text = _call(self._c.derive, kind, fn, _names(wrt), _names(of), bool(remat), False)
        return compile(text, name=self.path)

    def grad(self, fn: str = "", *, wrt=(), of=(), remat: bool = False) -> "Program":
        """`spmdc grad [--fn fn] [--wrt ...] [--of ...]`: f_grad(x) -> (y, gradients)."""
        return self._derive("grad", fn, wrt, of, remat)

    def vjp(self, fn: str = "", *, wrt=(), of=(), remat: bool = False) -> "Program":
        """`spmdc vjp`: f_vjp(x, ybar) -> (y, xbar)."""
        return self._derive("vjp", fn, wrt, of, remat)

    def jvp(self, fn: str = "", *, wrt=()) -> "Program":
        """`spmdc jvp`: f_jvp(x, dx) -> (y, dy)."""
        return self._derive("jvp", fn, wrt, (), False)

    def transpose(self, fn: str = "", *, wrt=()) -> "Program":
        """`spmdc transpose`: the transpose of a linear shmap."""
        return self._derive("transpose", fn, wrt, (), False)

    def shard(self, fn: str = "", *, auto: bool = False, memory_per_device: Optional[float] = None,
              time_limit: float = 10.0, gap: float = 1.0, strict: bool = False,
              profile: str = "h100") -> "Program":
        """`spmdc shard [--auto]`: a sharded function as an explicit shmap program.
        memory_per_device is in bytes (--memory-per-device), gap in percent."""
        text, note = _call(self._c.shard, fn, bool(auto),
                           None if memory_per_device is None else float(memory_per_device),
                           float(time_limit), float(gap), bool(strict), profile, False)
        prog = compile(text, name=self.path)
        prog.search_note = note
        return prog

    # -- running -----------------------------------------------------------------------
    def run(self, fn: Optional[str] = None, *args, check_replication: bool = False, **arrays):
        """Runs a shmap on the simulated mesh (or a sharded function unsharded), as
        `spmdc run`: arrays by position or by parameter name, global shapes; returns
        the results as NumPy arrays, a tuple (one array per result)."""
        if fn is not None and not isinstance(fn, str):  # prog.run(x, y): no function name
            args, fn = (fn, *args), ""
        fn = fn or ""
        sig = self._c.signature(fn)
        inputs = _bind(sig, args, arrays)
        try:
            results = self._c.run(fn, inputs, bool(check_replication))
        except _spmdc.DiagnosticsError as e:
            _raise_diagnostics(e)
        return tuple(results)

    def __call__(self, *args, **arrays):
        """prog(x, y) runs the only entry function: prog.run("", x, y)."""
        return self.run("", *args, **arrays)

    # -- analysis ------------------------------------------------------------------------
    def cost(self, fn: str = "", *, grad: bool = False, wrt=(), profile: str = "h100") -> list:
        """`spmdc cost --json`: per device flops, collectives, bytes and the alpha-beta
        time of the function (and of its gradient with grad=True), as dicts."""
        return json.loads(_call(self._c.cost, fn, bool(grad), _names(wrt), profile))

    def show(self, fn: str = "", *, format: str = "svg") -> "Picture":
        """`spmdc show --format svg|txt`: which block each device holds, and every collective;
        displays inline in a notebook."""
        if format not in ("svg", "txt"):
            raise ValueError("format is 'svg' or 'txt'")
        return Picture(_call(self._c.show, fn, format), format)

    # -- building ------------------------------------------------------------------------
    def build(self, fn: str = "", *, target: str = "cpu", output: Optional[str] = None,
              cxxflags: Sequence[str] = ()) -> "BuiltProgram":
        """`spmdc build --target cpu`: emits C++, compiles it against the runtime into an
        executable, and returns a callable that runs that executable as a subprocess
        (arrays pass through .npy files in a temporary folder). The executable stays at
        `.executable` and runs without Python (`--help`, mpirun)."""
        if target != "cpu":
            raise ValueError("Program.build supports target='cpu' (use the spmdc command line "
                             "for --target cuda)")
        workdir = Path(tempfile.mkdtemp(prefix="spmdc-build-"))
        exe = Path(output) if output else workdir / "program"
        runtime = _PACKAGE_DIR / "runtime"
        if (runtime / "lib" / "libspmdrt.a").exists() and not os.environ.get("SPMDC_RUNTIME_PREFIX"):
            os.environ["SPMDC_RUNTIME_PREFIX"] = str(runtime)
        _call(self._c.build, fn, str(workdir / "program.cpp"), str(exe), list(cxxflags))
        return BuiltProgram(str(exe), self._c.signature(fn))


class Picture:
    """An SVG (or text) picture; shows itself in a notebook."""

    def __init__(self, data: str, format: str):
        self.data = data
        self.format = format

    def __str__(self) -> str:
        return self.data

    def _repr_svg_(self):
        # From <svg on (no XML declaration), as IPython.display.SVG does.
        return self.data[self.data.find("<svg"):] if self.format == "svg" else None

    def _repr_html_(self):
        # An <img> of the SVG as a data URI: its <style> stays inside it, and
        # HTML converters that strip inline SVG's elements (Debian 12's
        # nbconvert 6.5 cleans image/svg+xml outputs with lxml, leaving a blank
        # box) show it whole; notebooks and nbconvert prefer text/html.
        if self.format != "svg":
            return None
        import base64

        data = base64.b64encode(self.data.encode()).decode()
        return f'<img class="spmdc-picture" alt="spmdc show" src="data:image/svg+xml;base64,{data}">'

    def _repr_pretty_(self, p, cycle):
        p.text(self.data)


class BuiltProgram:
    """A compiled executable, called like a function: runs it as a subprocess with the
    arrays written to .npy files and reads its .npy outputs back."""

    def __init__(self, executable: str, signature: dict):
        self.executable = executable
        self._sig = signature

    def __call__(self, *args, **arrays):
        inputs = _bind(self._sig, args, arrays)
        with tempfile.TemporaryDirectory(prefix="spmdc-run-") as tmp:
            cmd = [self.executable, "--fn", self._sig["name"], "--quiet", "--out-dir", tmp]
            for (name, _dt, _shape), a in zip(self._sig["params"], inputs):
                path = os.path.join(tmp, f"in_{name}.npy")
                np.save(path, a)
                cmd += ["--in", f"{name}={path}"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{self.executable} failed (exit status {proc.returncode}):\n"
                                   + proc.stderr)
            return tuple(np.load(os.path.join(tmp, f"{r}.npy")) for r in self._sig["results"])

    def __repr__(self) -> str:
        return f"<spmdc.BuiltProgram {self.executable}>"


def _names(value) -> list:
    if isinstance(value, (str, int)):
        return [str(value)]
    return [str(v) for v in value]


def _bind(sig: dict, args: Sequence, arrays: Mapping) -> list:
    """The arrays of sig's parameters, in order, as C-contiguous arrays of their dtypes."""
    params = sig["params"]
    if len(args) > len(params):
        raise TypeError(f"`{sig['name']}` takes {len(params)} arrays, {len(args)} given")
    given = dict(zip((p[0] for p in params), args))
    for key, value in arrays.items():
        if key in given:
            raise TypeError(f"`{key}` given twice")
        if key not in (p[0] for p in params):
            raise TypeError(f"`{sig['name']}` has no parameter `{key}` (its parameters: "
                            + ", ".join(p[0] for p in params) + ")")
        given[key] = value
    missing = [p[0] for p in params if p[0] not in given]
    if missing:
        raise TypeError(f"`{sig['name']}` is missing " + ", ".join(f"`{m}`" for m in missing))
    out = []
    for name, dtype, shape in params:
        a = np.asarray(given[name])
        want = np.dtype(_NUMPY_DTYPES[dtype])
        if a.dtype != want:
            if not np.can_cast(a.dtype, want, casting="same_kind") and a.dtype.kind != "b":
                raise TypeError(f"`{name}` is {dtype}, not {a.dtype}")
            a = a.astype(want)
        out.append(a if a.flags.c_contiguous else np.array(a, order="C"))  # 0-d stays 0-d
    return out


def _function_block(text: str, fn: str) -> str:
    """The lines of one function (from its header to its closing brace) in printed source."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        words = line.split("(", 1)[0].split()
        if len(words) >= 2 and words[-1] == fn and words[0] in ("shmap", "def", "sharded"):
            j = i
            while j < len(lines) and lines[j].rstrip("\n") != "}":
                j += 1
            return "".join(lines[i:j + 1])
    raise ValueError(f"no function named `{fn}`")
