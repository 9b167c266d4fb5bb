#!/bin/sh
# tests/notebooks/run_notebooks.sh HAVE_MODULE PYTHON NOTEBOOK_DIR OUT_DIR
# Skips (77) when the Python module spmdc._spmdc was not built (no pybind11).
[ "$1" = 1 ] || { echo "SKIPPED: the Python module was not built (apt install pybind11-dev)"; exit 77; }
exec "$2" -Xfrozen_modules=off "$(dirname "$0")/run_notebooks.py" "$3" "$4"
