"""spmdc from Python: compile, check, run, differentiate, shard and build SPMD programs.

    import numpy as np, spmdc
    prog = spmdc.compile("samples/seed/example1.spmd")
    (y,) = prog.run(x=np.ones((32, 3), np.float32))
    print(prog.grad(wrt="x").source)        # the text `spmdc grad` prints

Every method calls the compiler library the `spmdc` command line uses (through the
extension module spmdc._spmdc); docs/python.md is the guide. In IPython and
Jupyter, `%load_ext spmdc` adds the `%%spmd` cell magic (spmdc.magic).
"""
from ._program import BuiltProgram, CompileError, Program, compile, version

__all__ = ["compile", "Program", "BuiltProgram", "CompileError", "version"]


def load_ipython_extension(ipython):
    """`%load_ext spmdc`: registers the %%spmd cell magic (spmdc.magic)."""
    from . import magic

    magic.load(ipython)
