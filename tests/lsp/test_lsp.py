#!/usr/bin/env python3
"""Drives `spmdc lsp` with scripted LSP messages (usage: test_lsp.py SPMDC ROOT).

Every expected position is computed here from the document text (the line
and UTF-16 column of a token found with str.index), every expected type by
hand from the program: local shape = global shape / the mesh axes of the
spec, variance = the axes the value is split or computed along."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from lspclient import LspClient  # noqa: E402

SPMDC, ROOT = sys.argv[1], Path(sys.argv[2])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def position(text, needle, nth=1, delta=0):
    """LSP position of the nth occurrence of `needle` (+ delta characters)."""
    at = -1
    for _ in range(nth):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    start = text.rfind("\n", 0, at) + 1
    return {"line": line, "character": len(text[start:at].encode("utf-16-le")) // 2}


def token_range(text, needle, nth=1):
    start = position(text, needle, nth)
    end = dict(start, character=start["character"] + len(needle.encode("utf-16-le")) // 2)
    return {"start": start, "end": end}


GOOD = """\
import std.nn

mesh M = (batch: 4, model: 2)

def scale(x: f32[n, 4]) -> f32[n, 4] {
  return 2.0 * x
}

shmap layer(x: f32[32, 4] @ P(batch), w: f32[4, 8] @ P(None, model)) -> f32[32, 8] @ P(batch, model) on M {
  h = scale(x)
  y = h @ w
  r = nn.relu(y)
  return r
}

shmap total(x: f32[32, 4] @ P(batch)) -> f32[] @ P() on M {
  acc = sum(x)
  for k in range(3) {
    acc = acc + sum(x)
  }
  return psum(acc, batch)
}
"""

# `s` varies along `i` (each device sums its own block) but the result is
# unmapped (P()): spmdc check reports it at the return statement, with a note
# at the out_spec that leaves `i` out.
BROKEN = """\
mesh M = (i: 8)

shmap f(x: f32[32] @ P(i)) -> f32[] @ P() on M {
  s = sum(x)
  return s
}
"""

UNFORMATTED = """\
mesh M = (i: 8)
shmap f(x: f32[8] @ P(i)) -> f32[8] @ P(i) on M {
    y=x*2.0   # double
    return y
}
"""
# By hand: one blank line between declarations, two-space indentation, one
# space around binary operators and `=`, comments kept two spaces after code.
FORMATTED = """\
mesh M = (i: 8)

shmap f(x: f32[8] @ P(i)) -> f32[8] @ P(i) on M {
  y = x * 2.0  # double
  return y
}
"""

SYNTAX_ERROR = "mesh M = (i: 8)\nshmap f(x: f32[8] @ P(i)) -> f32[8] @ P(i) on M {\n  y = x +\n}\n"

tmp = Path(tempfile.mkdtemp(prefix="spmdc-lsp-"))
docs = {}
for name, text in [("good", GOOD), ("broken", BROKEN), ("unformatted", UNFORMATTED),
                   ("syntax", SYNTAX_ERROR)]:
    path = tmp / (name + ".spmd")
    path.write_text(text)
    docs[name] = (path.resolve().as_uri(), text)

client = LspClient([SPMDC, "lsp"])

# Before initialize, requests are refused with ServerNotInitialized.
r = client.request("textDocument/hover", {})
check(r.get("error", {}).get("code") == -32002, "request before initialize: %r" % r)

r = client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
caps = r["result"]["capabilities"]
check(caps.get("hoverProvider") is True, "hover capability")
check(caps.get("definitionProvider") is True, "definition capability")
check(caps.get("documentFormattingProvider") is True, "formatting capability")
check(caps.get("textDocumentSync", {}).get("change") == 1, "full document sync")
check(caps.get("positionEncoding") == "utf-16", "UTF-16 positions")
client.notify("initialized", {})


def open_doc(name, version=1):
    uri, text = docs[name]
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "spmd", "version": version, "text": text}})
    return uri


def hover(uri, pos):
    r = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": pos})
    return r["result"]["contents"]["value"] if r.get("result") else None


def definition(uri, pos):
    r = client.request("textDocument/definition",
                       {"textDocument": {"uri": uri}, "position": pos})
    return r["result"]


# ---- diagnostics: the broken program has exactly check's error, at `s` in `return s`.
uri = open_doc("broken")
published = client.diagnostics(uri)
diags = published["diagnostics"]
check(published.get("version") == 1, "diagnostics carry the document version")
check(len(diags) == 1, "one diagnostic on the broken program: %r" % diags)
if diags:
    d = diags[0]
    check(d["code"] == "unmapped-output-varies", "code: %r" % d["code"])
    check(d["severity"] == 1, "severity error")
    check(d["range"] == token_range(BROKEN, "return s"), "range of `return s`: %r" % d["range"])
    related = d.get("relatedInformation", [])
    check(any(r["message"] == "the out_spec leaves out `i` here"
              and r["location"] == {"uri": uri, "range": token_range(BROKEN, "f32[] @ P()")}
              for r in related), "the note at the out_spec: %r" % related)
    check("\nhelp: reduce it with `psum(..., i)`" in d["message"], "the help line: %r" % d["message"])
    check(d["source"] == "spmdc", "source")
# The same diagnostic as `spmdc check --diagnostics-format=json` on the file.
out = subprocess.run([SPMDC, "check", "--diagnostics-format=json", str(tmp / "broken.spmd")],
                     capture_output=True, text=True)
import json  # noqa: E402
cli = [json.loads(line) for line in out.stderr.splitlines()]
check([c["code"] for c in cli] == [d["code"] for d in diags], "same codes as spmdc check")
check(all(c["message"] in d["message"] for c, d in zip(cli, diags)), "same messages as check")
if cli and diags:
    check(cli[0]["line"] - 1 == diags[0]["range"]["start"]["line"]
          and cli[0]["column"] - 1 == diags[0]["range"]["start"]["character"],
          "check's 1-based line:column is the LSP 0-based position")

# Fixing it (full-text didChange) clears the diagnostics.
fixed = BROKEN.replace("return s", "return psum(s, i)")
client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                         "contentChanges": [{"text": fixed}]})
published = client.diagnostics(uri)
check(published["diagnostics"] == [] and published.get("version") == 2,
      "no diagnostics after the fix: %r" % published)
client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
published = client.diagnostics(uri)
check(published["diagnostics"] == [], "closing clears the diagnostics")

# ---- a document that does not parse: a syntax error, no crash, nothing to format.
uri = open_doc("syntax")
diags = client.diagnostics(uri)["diagnostics"]
check(diags and diags[0]["code"] == "syntax-error", "syntax error reported: %r" % diags)
check(diags and diags[0]["range"]["start"]["line"] == 3, "at the `}` on line 4: %r" % diags)
r = client.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
check(r.get("result") == [], "no edits for a document that does not parse: %r" % r)
r = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                          "position": position(SYNTAX_ERROR, "y =")})
check("result" in r, "hover on a document that does not parse answers: %r" % r)

# ---- hover on the well-typed program.
uri = open_doc("good")
check(client.diagnostics(uri)["diagnostics"] == [], "the good program has no diagnostics")
G = GOOD
cases = [
    # x: global [32, 4] split 4 ways along batch -> [8, 4], varies along batch.
    (position(G, "x: f32[32, 4] @ P(batch), w"), "x: f32[8, 4]{batch}", "global `f32[32, 4] @ P(batch)`"),
    # w: global [4, 8], dim 1 split 2 ways along model -> [4, 4]{model}.
    (position(G, "w: f32[4, 8]"), "w: f32[4, 4]{model}", "global `f32[4, 8] @ P(None, model)`"),
    # h = scale(x): same as x.
    (position(G, "h = scale"), "h: f32[8, 4]{batch}", None),
    # y = h @ w: [8, 4] @ [4, 4] -> [8, 4], varies along batch and model.
    (position(G, "h @ w", delta=4), "w: f32[4, 4]{model}", None),
    (position(G, "y = h"), "y: f32[8, 4]{batch, model}", None),
    (position(G, "return r"), None, None),
    (position(G, "return r", delta=7), "r: f32[8, 4]{batch, model}", None),
    # The result: global [32, 8] @ P(batch, model) -> local [8, 4].
    (position(G, "f32[32, 8] @ P(batch, model)"), "layer: f32[8, 4]{batch, model}",
     "global `f32[32, 8] @ P(batch, model)`"),
    # Inside the def, x is the instance's parameter: scale was called with x: f32[8, 4]{batch}.
    (position(G, "2.0 * x", delta=6), "x: f32[8, 4]{batch}", None),
    # acc = sum(x): a scalar that varies along batch; the loop keeps it so.
    (position(G, "acc = sum"), "acc: f32[]{batch}", None),
    (position(G, "psum(acc", delta=5), "acc: f32[]{batch}", None),
    # The mesh and an axis.
    (position(G, "on M", delta=3), "mesh M = (batch: 4, model: 2)", "8 devices"),
    (position(G, "P(batch)", delta=2), "axis batch: 4", None),
]
for pos, code, note in cases:
    text = hover(uri, pos)
    if code is None:
        check(text is None, "no hover on a keyword at %r: %r" % (pos, text))
        continue
    check(text is not None and "```spmd\n" + code + "\n```" in text,
          "hover at %r shows %r: %r" % (pos, code, text))
    if note:
        check(text is not None and note in text, "hover at %r mentions %r: %r" % (pos, note, text))
# A shmap's name: its global signature (as written) and its local one.
text = hover(uri, position(G, "layer"))
check(text == "```spmd\n"
      "shmap layer on M (batch: 4, model: 2)\n"
      "  x: f32[32, 4] @ P(batch)\n"
      "  w: f32[4, 8] @ P(None, model)\n"
      "  -> layer: f32[32, 8] @ P(batch, model)\n"
      "local: (x: f32[8, 4]{batch}, w: f32[4, 4]{model}) -> f32[8, 4]{batch, model}\n"
      "```", "hover on a shmap's name: %r" % text)
# A def called once: its declaration and the instance's local signature.
text = hover(uri, position(G, "scale(x)"))
check(text == "```spmd\ndef scale(x: f32[n, 4]) -> f32[n, 4]\n"
      "local: (x: f32[8, 4]{batch}) -> f32[8, 4]{batch}\n```", "hover on a def call: %r" % text)

# ---- go-to-definition.
def at(text, needle, nth=1):
    return {"uri": uri, "range": token_range(text, needle, nth)}


check(definition(uri, position(G, "h @ w")) == [at(G, "h", G.count("h", 0, G.index("h = scale")) + 1)],
      "h's use -> its assignment")
check(definition(uri, position(G, "scale(x)")) == [at(G, "scale")], "a call -> the def")
check(definition(uri, position(G, "on M", delta=3)) == [at(G, "M")], "`on M` -> the mesh")
check(definition(uri, position(G, "P(batch)", delta=2)) == [at(G, "batch")],
      "an axis in a spec -> the mesh's axis")
acc_defs = definition(uri, position(G, "psum(acc", delta=5))
check(sorted(acc_defs, key=lambda l: l["range"]["start"]["line"]) ==
      [at(G, "acc = sum"[:3]), at(G, "acc = acc"[:3], G.count("acc", 0, G.index("acc = acc")) + 1)],
      "after a loop, both assignments of acc: %r" % acc_defs)
relu = definition(uri, position(G, "nn.relu", delta=3))
nn = (ROOT / "stdlib" / "std" / "nn.spmd").read_text()
check(len(relu) == 1 and relu[0]["uri"] == (ROOT / "stdlib" / "std" / "nn.spmd").resolve().as_uri()
      and relu[0]["range"] == token_range(nn, "relu", nth=nn.count("relu", 0, nn.index("def relu")) + 1),
      "nn.relu -> std/nn.spmd: %r" % relu)
check(definition(uri, position(G, "return r")) == [], "nothing to define on a keyword")

# ---- formatting: one edit replacing the whole document by `spmdc fmt`'s text.
uri = open_doc("unformatted")
r = client.request("textDocument/formatting",
                   {"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": True}})
edits = r["result"]
check(len(edits) == 1, "one edit: %r" % edits)
if edits:
    lines = UNFORMATTED.split("\n")
    check(edits[0]["range"] == {"start": {"line": 0, "character": 0},
                                "end": {"line": len(lines) - 1, "character": len(lines[-1])}},
          "the edit covers the document: %r" % edits[0]["range"])
    check(edits[0]["newText"] == FORMATTED, "formatted text: %r" % edits[0]["newText"])
fmt = subprocess.run([SPMDC, "fmt", str(tmp / "unformatted.spmd")], capture_output=True, text=True)
check(fmt.stdout == FORMATTED, "spmdc fmt agrees")
uri = open_doc("good")
r = client.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
check(r["result"] == [] or r["result"][0]["newText"] == subprocess.run(
    [SPMDC, "fmt", str(tmp / "good.spmd")], capture_output=True, text=True).stdout,
    "formatting a document agrees with spmdc fmt")

# ---- every sample: no diagnostics (they all check), and hover and definition
# answer without an error at the start of every word.
import re  # noqa: E402
samples = sorted((ROOT / "samples").rglob("*.spmd"))
check(len(samples) >= 10, "samples found")
hovers = 0
for sample in samples:
    text = sample.read_text()
    suri = sample.resolve().as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": suri, "languageId": "spmd", "version": 1, "text": text}})
    cli = subprocess.run([SPMDC, "check", "--diagnostics-format=json", str(sample)],
                         capture_output=True, text=True)
    expected = [json.loads(line)["code"] for line in cli.stderr.splitlines()]
    got = [d.get("code") for d in client.diagnostics(suri)["diagnostics"]]
    check(got == expected, "%s: diagnostics %r, spmdc check %r" % (sample.name, got, expected))
    for m in re.finditer(r"\b[A-Za-z_]", text):
        pos = position(text, text[m.start():], delta=0)
        for method in ("textDocument/hover", "textDocument/definition"):
            r = client.request(method, {"textDocument": {"uri": suri}, "position": pos})
            check("error" not in r, "%s %s at %r: %r" % (sample.name, method, pos, r))
        hovers += 1
    client.notify("textDocument/didClose", {"textDocument": {"uri": suri}})
print("samples: %d files, %d positions" % (len(samples), hovers))

# ---- bad input never ends the session.
client.send_raw(b"{not json")
r = client.response(None)
check(r.get("error", {}).get("code") == -32700 and r.get("id") is None, "parse error: %r" % r)
client.send_raw(b"[1, 2]")
r = client.response(None)
check(r.get("error", {}).get("code") == -32600, "invalid request: %r" % r)
r = client.request("workspace/noSuchMethod", {})
check(r.get("error", {}).get("code") == -32601, "unknown request -> MethodNotFound: %r" % r)
client.notify("$/noSuchNotification", {"x": 1})  # ignored: no answer at all
r = client.request("textDocument/hover", {"textDocument": {"uri": docs["good"][0]}})
check(r.get("error", {}).get("code") == -32602, "missing position -> InvalidParams: %r" % r)
r = client.request("textDocument/hover", {"textDocument": {"uri": "file:///nowhere.spmd"},
                                          "position": {"line": 0, "character": 0}})
check(r.get("error", {}).get("code") == -32602, "a document never opened: %r" % r)
# A position past the end of the document is clamped, not a crash.
check(hover(docs["good"][0], {"line": 999, "character": 999}) is None, "hover past the end")

# ---- clean shutdown: shutdown answers null, exit ends with status 0.
r = client.request("shutdown")
check("result" in r and r["result"] is None, "shutdown result: %r" % r)
r = client.request("textDocument/hover", {})
check(r.get("error", {}).get("code") == -32600, "requests after shutdown are refused")
client.notify("exit")
status = client.wait()
check(status == 0, "exit status after shutdown: %r" % status)
check(client.read() is None, "nothing after exit")

# exit without shutdown: status 1; the end of the input: status 1.
c2 = LspClient([SPMDC, "lsp"])
c2.notify("exit")
check(c2.wait() == 1, "exit without shutdown")
c3 = LspClient([SPMDC, "lsp"])
c3.proc.stdin.close()
check(c3.wait() == 1, "end of input without exit")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("lsp: all checks passed")
