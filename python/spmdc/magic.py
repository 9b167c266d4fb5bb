"""`%load_ext spmdc`: the `%%spmd` cell magic for IPython and Jupyter.

    %%spmd prog --types --grad params --show --run
    mesh M = (batch: 8)
    shmap loss(...) -> f32[] @ P() on M { ... }

checks the cell (errors shown with the caret under the source, as the CLI
prints them), binds the Program to the Python name given (`prog`), and on
request shows the types, derived programs (bound as `prog_grad`, ...), the
sharding picture, the cost, and runs the function with the arrays of the same
names from the notebook, binding its results to their names.
"""
import html
import shlex

from ._program import CompileError, _diagnostics_html, compile

_DERIVED = ("grad", "vjp", "jvp", "transpose")


def _parse(line: str):
    import argparse

    p = argparse.ArgumentParser(prog="%%spmd")
    p.add_argument("name", nargs="?", default="",
                   help="bind the Program (and NAME_grad, ...) to this Python name")
    p.add_argument("--fn", default="", help="the shmap (default: the only one)")
    p.add_argument("--types", action="store_true", help="show every value's type and variance")
    p.add_argument("--grad", nargs="?", const="", default=None, metavar="WRT",
                   help="show (and bind NAME_grad) the gradient, wrt comma-separated names")
    p.add_argument("--vjp", action="store_true")
    p.add_argument("--jvp", action="store_true")
    p.add_argument("--transpose", action="store_true")
    p.add_argument("--shard", action="store_true", help="shard a sharded function (NAME_shard)")
    p.add_argument("--auto", action="store_true", help="with --shard: search (`shard --auto`)")
    p.add_argument("--show", action="store_true", help="draw the shardings and collectives")
    p.add_argument("--cost", action="store_true", help="show the cost estimate")
    p.add_argument("--run", action="store_true",
                   help="run it on the notebook's arrays of the parameters' names and bind "
                        "the results to their names")
    p.add_argument("--mesh", action="append", default=[], metavar="AXIS=SIZE")
    p.add_argument("--set", action="append", default=[], metavar="NAME=SIZE", dest="sizes")
    return p.parse_args(shlex.split(line))


def _sizes(items):
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key.strip()] = int(value)
    return out


def _source_html(title: str, text: str) -> str:
    return (f"<details open><summary><b>{html.escape(title)}</b></summary>"
            f'<pre class="spmdc-source">{html.escape(text)}</pre></details>')


def spmd(line: str, cell: str, ns=None):
    """The %%spmd cell magic (the IPython shell passes its user namespace as ns)."""
    from IPython.display import HTML, display

    try:
        args = _parse(line)
    except SystemExit:  # --help printed, or a bad option reported by argparse
        return None
    ns = ns if ns is not None else {}
    name = args.name or "<cell>"
    try:
        prog = compile(cell, mesh=_sizes(args.mesh), sizes=_sizes(args.sizes),
                       name=f"{args.name}.spmd" if args.name else "<cell>")
        if prog.warnings:
            display(HTML(_diagnostics_html(prog._warning_text)))
        if args.name:
            ns[args.name] = prog
        if args.types:
            display(HTML(_source_html("types", prog.types(args.fn))))
        for kind in _DERIVED:
            wanted = getattr(args, kind)
            if wanted is None or wanted is False:
                continue
            if kind in ("grad",):
                derived = prog.grad(args.fn, wrt=[w for w in wanted.split(",") if w])
            else:
                derived = getattr(prog, kind)(args.fn)
            if args.name:
                ns[f"{args.name}_{kind}"] = derived
            display(HTML(_source_html(f"spmdc {kind}", derived.source)))
        if args.shard:
            sharded = prog.shard(args.fn, auto=args.auto)
            if args.name:
                ns[f"{args.name}_shard"] = sharded
            display(HTML(_source_html("spmdc shard" + (" --auto" if args.auto else ""),
                                      sharded.source)))
            prog_for_pictures = sharded
        else:
            prog_for_pictures = prog
        if args.show:
            display(prog_for_pictures.show(args.fn if not args.shard else ""))
        if args.cost:
            rows = prog.cost(args.fn)
            display(HTML("<pre>" + html.escape("\n".join(
                f"{r['function']}: {r['flops']:.0f} flops, {r['comm_bytes']:.0f} bytes "
                "communicated per device" for r in rows)) + "</pre>"))
        if args.run:
            sig = prog.signature(args.fn)
            missing = [p[0] for p in sig["params"] if p[0] not in ns]
            if missing:
                raise NameError("%%spmd --run: define " + ", ".join(missing) +
                                " in the notebook first (the parameters of `" + sig["name"] + "`)")
            results = prog.run(args.fn, **{p[0]: ns[p[0]] for p in sig["params"]})
            for result, value in zip(sig["results"], results):
                ns[result] = value
            display(HTML("<pre>" + html.escape("\n".join(
                f"{r} = {v!r}" for r, v in zip(sig["results"], results))) + "</pre>"))
    except CompileError as e:  # shown with the caret; kept as `spmd_error` for the next cell
        ns["spmd_error"] = e
        display(HTML(e._repr_html_()))
        return None
    return None


def load(ipython):
    def cell_magic(line, cell):
        return spmd(line, cell, ipython.user_ns)

    cell_magic.__doc__ = __doc__
    ipython.register_magic_function(cell_magic, magic_kind="cell", magic_name="spmd")
