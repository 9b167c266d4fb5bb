#!/usr/bin/env python3
"""Hostile input to `spmdc lsp` (issue 30; usage: test_lsp_hostile.py SPMDC).

Each case is what an attacker or a broken editor plugin sends: JSON nested
100,000 levels in `params` or `id` (a stack overflow before), an object id,
positions as strings, floats or negative numbers, a document over the 16 MiB
source limit, a header line of a megabyte, a document that imports a FIFO no
one writes (a hang before), and one whose sharded function runs on an 8-axis
mesh (a runaway search before). The server must answer each as the protocol
says and keep serving; the expected answers are the JSON-RPC codes of
docs/lsp.md."""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from lspclient import LspClient  # noqa: E402

SPMDC = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("ok  ", what)


def error_code(r):
    return r.get("error", {}).get("code")


def alive(client, what):
    r = client.request("spmdc/noSuchRequest")
    check(error_code(r) == -32601, "still serving after " + what)


tmp = Path(tempfile.mkdtemp())
client = LspClient([SPMDC, "lsp"], timeout=120)
check("result" in client.request("initialize", {"capabilities": {}}), "initialize")

# ---- deep nesting: refused before parsing (copying it recursed per level).
for where in ("params", "id"):
    deep = "[" * 100000 + "]" * 100000
    body = '{"jsonrpc": "2.0", "id": %s, "method": "textDocument/hover", "params": %s}' % (
        deep if where == "id" else "7", deep if where == "params" else "{}")
    client.send_raw(body.encode())
    r = client.response(None)
    check(error_code(r) == -32700 and "nests" in r["error"]["message"],
          "100,000 nested arrays in %s -> ParseError: %r" % (where, r.get("error")))
    alive(client, "nesting in " + where)
# 200 levels are fine (an ordinary if odd message): answered by the method.
client.send_raw(('{"jsonrpc": "2.0", "id": 8, "method": "spmdc/x", "params": %s}' %
                 ("[" * 200 + "]" * 200)).encode())
check(error_code(client.response(8)) == -32601, "200 nested arrays: an ordinary answer")

# ---- ids: integers and strings only.
for bad in ({"a": 1}, [1], 1.5, True):
    client.send({"jsonrpc": "2.0", "id": bad, "method": "spmdc/x"})
    r = client.response(None)
    check(error_code(r) == -32600, "id %r -> InvalidRequest with id null: %r" % (bad, r))
client.send({"jsonrpc": "2.0", "id": "abc", "method": "spmdc/x"})
check(error_code(client.response("abc")) == -32601, "a string id is answered under it")

# ---- positions of the wrong type: InvalidParams, not a null answer.
text = "mesh M = (i: 2)\n\nshmap f(x: f32[4] @ P(i)) -> f32[4] @ P(i) on M {\n  return x\n}\n"
uri = (tmp / "doc.spmd").as_uri()
client.notify("textDocument/didOpen", {"textDocument": {
    "uri": uri, "languageId": "spmd", "version": 1, "text": text}})
check(client.diagnostics(uri)["diagnostics"] == [], "a good document has no diagnostics")
for pos in ({"line": "3", "character": 2}, {"line": 3.5, "character": 2},
            {"line": 3, "character": "x"}, {"line": -1, "character": 0}, {"line": 3}, "3:2"):
    r = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": pos})
    check(error_code(r) == -32602, "position %r -> InvalidParams: %r" % (pos, r))
r = client.request("textDocument/hover",
                   {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 9}})
check("result" in r and r["result"] is not None, "a good position still answers: %r" % r)

# ---- a document over the 16 MiB source limit: refused with a diagnostic.
big_uri = (tmp / "big.spmd").as_uri()
client.notify("textDocument/didOpen", {"textDocument": {
    "uri": big_uri, "languageId": "spmd", "version": 3, "text": "#" * (17 << 20)}})
d = client.diagnostics(big_uri)
check(d["version"] == 3 and len(d["diagnostics"]) == 1 and d["diagnostics"][0]["code"] ==
      "io-error" and "16 MiB" in d["diagnostics"][0]["message"],
      "a 17 MiB document -> one io-error diagnostic: %r" % d["diagnostics"][:1])
r = client.request("textDocument/hover",
                   {"textDocument": {"uri": big_uri}, "position": {"line": 0, "character": 0}})
check(error_code(r) == -32602, "the refused document is not open: %r" % r)

# ---- an import of a FIFO without a writer: an error at once, not a hang.
os.mkfifo(tmp / "fifo.spmd")
fifo_uri = (tmp / "main.spmd").as_uri()
start = time.monotonic()
client.notify("textDocument/didOpen", {"textDocument": {
    "uri": fifo_uri, "languageId": "spmd", "version": 1,
    "text": 'import "fifo.spmd"\nmesh M = (i: 2)\n'}})
d = client.diagnostics(fifo_uri)["diagnostics"]
check(len(d) == 1 and d[0]["code"] == "unknown-module" and "FIFO" in d[0]["message"] and
      time.monotonic() - start < 30, "import of a FIFO -> unknown-module: %r" % d)

# ---- a sharded matmul on an 8-axis mesh: checked, not a runaway search.
axes = ", ".join("%s: 2" % a for a in "abcdefgh")
sharded = ("mesh M = (%s)\n\nsharded f(x: f32[256, 256] @ P((a, b), (c, d)), "
           "w: f32[256, 256] @ P((e, f), (g, h))) -> f32[256, 256] @ P((a, b)) on M {\n"
           "  return x @ w\n}\n" % axes)
s_uri = (tmp / "sharded.spmd").as_uri()
start = time.monotonic()
client.notify("textDocument/didOpen", {"textDocument": {
    "uri": s_uri, "languageId": "spmd", "version": 1, "text": sharded}})
d = client.diagnostics(s_uri)["diagnostics"]
cli = subprocess.run([SPMDC, "check", "-"], input=sharded, capture_output=True, text=True)
check(time.monotonic() - start < 30 and all(x["code"] == "sharding-conflict" for x in d) and
      cli.returncode == 0, "8-axis sharded matmul: diagnostics %r" % [x["code"] for x in d])

r = client.request("shutdown")
client.notify("exit")
check(client.wait() == 0, "clean exit after all of it")

# ---- a header line of a megabyte ends the session (status 1), no crash.
c2 = LspClient([SPMDC, "lsp"])
try:  # the server stops reading after 1024 bytes of the line
    c2.proc.stdin.write(b"X-Long: " + b"y" * (1 << 20) + b"\r\n\r\n{}")
    c2.proc.stdin.close()
except BrokenPipeError:
    pass
status = c2.wait()
err = c2.proc.stderr.read().decode()
check(status == 1 and "header line longer than" in err,
      "a 1 MiB header line -> exit 1: %r %r" % (status, err))

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("lsp hostile: all checks passed")
