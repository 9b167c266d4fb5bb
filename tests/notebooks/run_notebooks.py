"""tests/notebooks/run_notebooks.py NOTEBOOK_DIR OUT_DIR [NAME ...] — docs/notebooks/ in a real kernel.

Executes every notebook top to bottom with nbclient and an IPython kernel (the
`spmdc` package importable: the test sets PYTHONPATH to the build's python/),
in the notebooks' folder, as a student opening it in Jupyter would. Fails on
any cell error, on an assert that no longer holds (the notebooks assert what
their text says), and on a %%spmd cell that shows a compile error unless the
cell is tagged `expect-error`. Writes the executed notebooks to OUT_DIR (the
screenshot test renders one). Exit 77 (skipped) when Jupyter is missing.
"""
import os
import sys
import time

try:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    import ipykernel  # noqa: F401  (the kernel nbclient starts)
except ImportError as e:
    print(f"SKIPPED: Jupyter is not installed ({e}; apt install python3-nbclient python3-ipykernel)")
    sys.exit(77)

notebook_dir, out_dir = sys.argv[1], sys.argv[2]
names = sys.argv[3:] or sorted(n for n in os.listdir(notebook_dir) if n.endswith(".ipynb"))
os.makedirs(out_dir, exist_ok=True)
failures = []
total = time.time()
for name in names:
    path = os.path.join(notebook_dir, name)
    nb = nbformat.read(path, as_version=4)
    start = time.time()
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": notebook_dir}})
    try:
        client.execute()
    except CellExecutionError as e:
        failures.append(name)
        print(f"FAIL {name}: a cell raised\n{e}")
        continue
    finally:
        nbformat.write(nb, os.path.join(out_dir, name))
    shown_errors = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "expect-error" in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            if "spmdc-diagnostics" in html and ": error: " in html:
                shown_errors.append(index)
    if shown_errors:
        failures.append(name)
        print(f"FAIL {name}: cells {shown_errors} show a compile error (tag them expect-error "
              "if that is the lesson)")
        continue
    print(f"ok   {name} ({len(nb.cells)} cells, {time.time() - start:.1f} s)")
print(f"{len(names)} notebooks in {time.time() - total:.1f} s")
sys.exit(1 if failures else 0)
