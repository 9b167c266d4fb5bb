#!/usr/bin/env python3
"""test_neovim.py --root SRC --spmdc SPMDC — docs/lsp.md's Neovim setup, in a real Neovim.

The Lua block of docs/lsp.md's "Neovim" section is run, as written, as the
init.lua of a headless Neovim (Debian 12's is 0.7.2, the oldest the docs
promise) with editors/vim on its runtimepath and this build's spmdc first on
PATH. It opens a file whose `return w` leaves a varying value through P():
the server must attach and publish exactly the diagnostic `spmdc check`
reports (same line, message), and a second buffer must share the client.
Exit 77 (skip) when nvim is not installed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PROGRAM = """mesh M = (i: 8)

shmap f(x: f32[32, 3] @ P(i)) -> f32[] @ P() on M {
  w = sum(2.0 * x)
  return w
}
"""

PROBE = r"""
local out = vim.g.spmd_out
local deadline = vim.loop.now() + 20000
local function done()
  return #vim.diagnostic.get(0) > 0 or vim.loop.now() > deadline
end
vim.wait(20000, done, 50)
local result = { filetype = vim.bo.filetype, clients = {}, diagnostics = {} }
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(result.diagnostics, { lnum = d.lnum, message = d.message })
end
vim.cmd('edit ' .. vim.fn.fnameescape(vim.g.spmd_second))
vim.wait(5000, function() return #vim.lsp.get_active_clients() > 0 and
  #vim.lsp.buf_get_clients(0) > 0 end, 50)
for _, c in pairs(vim.lsp.get_active_clients()) do table.insert(result.clients, c.name) end
result.second_attached = #vim.tbl_keys(vim.lsp.buf_get_clients(0))
result.version = vim.version().major .. '.' .. vim.version().minor
local f = io.open(out, 'w')
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd('qall!')
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--spmdc", required=True)
    args = ap.parse_args()
    args.root = os.path.abspath(args.root)
    nvim = shutil.which("nvim")
    if not nvim:
        print("nvim is not installed: skipped (apt install neovim)")
        return 77
    doc = open(os.path.join(args.root, "docs", "lsp.md"), encoding="utf-8").read()
    section = doc[doc.index("## Neovim"):doc.index("## Other editors")]
    blocks = re.findall(r"```lua\n(.*?)```", section, re.S)
    if len(blocks) != 1:
        print(f"FAIL: expected one lua block in docs/lsp.md's Neovim section, found {len(blocks)}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        os.symlink(os.path.abspath(args.spmdc), os.path.join(bindir, "spmdc"))
        init = os.path.join(tmp, "init.lua")
        with open(init, "w") as f:
            f.write("vim.opt.runtimepath:prepend(%s)\nvim.cmd('filetype plugin on')\n"
                    % json.dumps(os.path.join(args.root, "editors", "vim")) + blocks[0])
        first, second = os.path.join(tmp, "bad.spmd"), os.path.join(tmp, "second.spmd")
        open(first, "w").write(PROGRAM)
        open(second, "w").write(PROGRAM.replace("return w", "return psum(w, i)"))
        probe = os.path.join(tmp, "probe.lua")
        open(probe, "w").write(PROBE)
        out = os.path.join(tmp, "out.json")
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                   XDG_CONFIG_HOME=os.path.join(tmp, "config"), XDG_DATA_HOME=os.path.join(tmp, "data"),
                   XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        r = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", init,
                            "--cmd", f"let g:spmd_out = {json.dumps(out)} | let g:spmd_second = {json.dumps(second)}",
                            first, "-c", f"luafile {probe}"],
                           capture_output=True, text=True, timeout=60, env=env, cwd=tmp)
        if not os.path.exists(out):
            print(f"FAIL: Neovim wrote nothing (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
            return 1
        result = json.load(open(out))
        check = subprocess.run([args.spmdc, "check", first, "--diagnostics-format=json"],
                               capture_output=True, text=True)
        want = [json.loads(line) for line in check.stderr.splitlines() if line.strip()]
    failures = []
    print(f"Neovim {result['version']}: {result}")
    if result["filetype"] != "spmd":
        failures.append(f"filetype {result['filetype']!r}, expected spmd")
    # The server adds the help line to the message (docs/lsp.md).
    got = [(d["lnum"] + 1, d["message"].split("\nhelp: ")[0]) for d in result["diagnostics"]]
    expected = [(d["line"], d["message"]) for d in want if d["severity"] == "error"]
    if not expected or any(e not in got for e in expected):
        failures.append(f"diagnostics {got}, expected {expected} (what spmdc check reports)")
    if result["clients"] != ["spmdc"]:
        failures.append(f"clients {result['clients']}, expected one `spmdc` for both buffers")
    if result["second_attached"] != 1:
        failures.append("the second .spmd buffer is not attached to the client")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
