#!/usr/bin/env python3
"""fuzz_lsp.py — random sessions of `spmdc lsp` (issue 30).

Each session starts a server and sends it a random run of messages: requests
and notifications with ids of every JSON type, every method and unknown ones,
positions of the wrong types, documents (mutated samples, random sharded
functions on large meshes, imports of a FIFO, garbage, now and then one over
the 16 MiB source limit), JSON nested up to 300,000 levels deep in `params` or
`id`, invalid JSON, and framing faults (bad or missing Content-Length, a header
line of a megabyte, a stream cut inside a message). It ends the session with
shutdown and exit unless a framing fault ended it already. Per session: no
crash, no internal error (no -32603 answer, exit status 0 or 1), at most
--max-seconds and --max-rss MiB, and every request with a valid id sent before
the session ended gets exactly one answer. Exit status 1 when any failed.

Usage: fuzz_lsp.py SPMDC ROOT [--count SESSIONS] [--seed S] [--max-seconds T] [--max-rss MIB]
"""
import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_sharding import sharded_program  # noqa: E402
from surfaces import Tally, run  # noqa: E402

METHODS = ["initialize", "shutdown", "textDocument/hover", "textDocument/definition",
           "textDocument/formatting", "textDocument/didOpen", "textDocument/didChange",
           "textDocument/didClose", "initialized", "$/cancelRequest", "workspace/symbol",
           "textDocument/completion", "spmdc/x", "exit"]


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def deep(depth, rng):
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    return opener * depth + "1" + closer * depth


class Session:
    def __init__(self, rng, root, workdir):
        self.rng = rng
        self.samples = sorted((root / "samples").rglob("*.spmd"))
        self.workdir = workdir
        self.data = bytearray()
        self.valid_ids = []  # ids that must be answered (sent before the stream ended)
        self.next_id = 1
        self.broken = False
        self.uris = []

    def random_id(self):
        r = self.rng.random()
        if r < 0.75:
            self.next_id += 1
            return self.next_id, True
        if r < 0.85:
            self.next_id += 1
            return "s%d" % self.next_id, True
        return self.rng.choice([1.5, {}, {"a": 1}, [], [1], True, None, -0.0, 2 ** 70]), False

    def random_position(self):
        r = self.rng.random()
        if r < 0.6:
            return {"line": self.rng.randrange(0, 40), "character": self.rng.randrange(0, 80)}
        return self.rng.choice([{"line": "1", "character": 2}, {"line": 1.5, "character": 0},
                                {"line": -1, "character": 0}, {"line": 2 ** 80, "character": 1},
                                {"line": 1}, [], "x", None, {"line": True, "character": 1}])

    def random_text(self):
        r = self.rng.random()
        if r < 0.4 and self.samples:
            text = self.rng.choice(self.samples).read_text()
            for _ in range(self.rng.randrange(0, 4)):  # a few mutations
                at = self.rng.randrange(len(text) + 1)
                text = text[:at] + self.rng.choice(["(", "}", "@", "auto", "\n", "", "[[", "x"]) + \
                    text[at + self.rng.randrange(0, 5):]
            return text
        if r < 0.7:
            return sharded_program(self.rng)
        if r < 0.8:
            return 'import "fifo.spmd"\nmesh M = (i: 2)\n'
        if r < 0.97:
            return "".join(chr(self.rng.randrange(1, 0x2FF)) for _ in range(self.rng.randrange(200)))
        return "x" * ((16 << 20) + self.rng.randrange(1, 4096))  # over the source limit

    def params_for(self, method):
        uri = self.rng.choice(self.uris) if self.uris and self.rng.random() < 0.8 else \
            (Path(self.workdir) / ("d%d.spmd" % self.rng.randrange(5))).as_uri()
        if method in ("textDocument/hover", "textDocument/definition"):
            return {"textDocument": {"uri": uri}, "position": self.random_position()}
        if method == "textDocument/formatting":
            return {"textDocument": {"uri": uri}, "options": {}}
        if method == "textDocument/didOpen":
            self.uris.append(uri)
            return {"textDocument": {"uri": uri, "languageId": "spmd", "version": 1,
                                     "text": self.random_text()}}
        if method == "textDocument/didChange":
            return {"textDocument": {"uri": uri, "version": 2},
                    "contentChanges": [{"text": self.random_text()}]}
        if method == "textDocument/didClose":
            return {"textDocument": {"uri": uri}}
        return self.rng.choice([{}, [], None, 1, {"x": [1, 2]}])

    def message(self):
        """Appends one random message to the stream."""
        r = self.rng.random()
        if r < 0.7:
            method = self.rng.choice(METHODS)
            notify = method.startswith("textDocument/did") or method in ("initialized", "exit")
            if method == "exit" and self.rng.random() < 0.7:
                method = "textDocument/hover"  # exit ends the session: rarely
            msg = {"jsonrpc": "2.0", "method": method, "params": self.params_for(method)}
            if not notify or self.rng.random() < 0.1:
                ident, valid = self.random_id()
                msg["id"] = ident
                if valid and method != "exit":  # exit is never answered
                    self.valid_ids.append(ident)
            if method == "exit":
                self.broken = True  # the server stops reading
            self.data += frame(json.dumps(msg).encode())
        elif r < 0.8:  # deep nesting in params or id
            depth = self.rng.choice([100, 300, 5000, 100000, 300000])
            where = self.rng.choice(["params", "id"])
            self.next_id += 1
            body = '{"jsonrpc": "2.0", "id": %s, "method": "textDocument/hover", "params": %s}' % (
                deep(depth, self.rng) if where == "id" else str(self.next_id),
                deep(depth, self.rng) if where == "params" else "{}")
            self.data += frame(body.encode())
        elif r < 0.9:  # not JSON, or not a request
            body = self.rng.choice([b"{not json", b"[1, 2]", b"", b"null", b'"x"', b"\xff\xfe",
                                    b'{"jsonrpc": "2.0"}', b'{"method": 5, "id": 999999999}',
                                    bytes(self.rng.randrange(256) for _ in range(64))])
            self.data += frame(body)
        else:  # framing faults: most end the session
            fault = self.rng.randrange(7)
            if fault == 0:
                self.data += b"Content-Length: abc\r\n\r\n{}"
            elif fault == 1:
                self.data += b"X-Header: " + b"y" * (1 << 20) + b"\r\n\r\n"
            elif fault == 2:
                self.data += b"Content-Type: x\r\n\r\n{}"
            elif fault == 3:
                self.data += b"Content-Length: 100\r\n\r\n{}"  # the stream ends inside
            elif fault == 4:
                self.data += b"content-length: 2\r\n\r\n{}"  # lower case: fine
                return
            elif fault == 5:
                self.data += b"\r\n\r\n" + frame(b'{"jsonrpc":"2.0","method":"initialized"}')
                return
            else:
                self.data += b"Content-Length: %d\r\n\r\n" % (1 << 40)
            self.broken = True

    def build(self):
        if self.rng.random() < 0.9:
            self.valid_ids.append(1)
            self.data += frame(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                           "params": {}}).encode())
        for _ in range(self.rng.randrange(1, 25)):
            self.message()
            if self.broken:
                return bytes(self.data)
        self.next_id += 1
        self.valid_ids.append(self.next_id)
        self.data += frame(json.dumps({"jsonrpc": "2.0", "id": self.next_id,
                                       "method": "shutdown"}).encode())
        self.data += frame(b'{"jsonrpc": "2.0", "method": "exit"}')
        return bytes(self.data)


def answers(stdout: bytes):
    """The server's messages (a trailing partial one ignored)."""
    out, at = [], 0
    while True:
        head = stdout.find(b"\r\n\r\n", at)
        if head < 0:
            return out
        length = int(stdout[at:head].split(b":")[1])
        body = stdout[head + 4:head + 4 + length]
        out.append(json.loads(body))
        at = head + 4 + length


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spmdc")
    ap.add_argument("root")
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=60)
    ap.add_argument("--max-rss", type=int, default=1024, help="MiB")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tally = Tally("fuzz_lsp", a.max_seconds, a.max_rss)
    messages = 0
    with tempfile.TemporaryDirectory() as workdir:
        os.mkfifo(os.path.join(workdir, "fifo.spmd"))  # no writer: must not block an import
        for i in range(a.count):
            s = Session(rng, Path(a.root), workdir)
            data = s.build()
            messages += data.count(b"Content-Length") + data.count(b"content-length")
            out = run([a.spmdc, "lsp"], stdin=data, timeout=a.max_seconds * 2)
            what = "session %d (seed %d), %d bytes" % (i, a.seed, len(data))
            if not tally.check(what, out, allowed=(0, 1)):
                continue
            try:
                got = answers(out.stdout)
            except (ValueError, IndexError) as e:
                tally.fail(what, "unreadable output: %s" % e)
                continue
            ids = [m.get("id") for m in got if "method" not in m]
            for m in got:
                if m.get("error", {}).get("code") == -32603:
                    tally.fail(what, "internal error answer: %r" % m)
            for ident in s.valid_ids:
                if ids.count(ident) != 1:
                    tally.fail(what, "id %r answered %d times" % (ident, ids.count(ident)))
                    break
    print("fuzz_lsp: %d messages in %d sessions" % (messages, a.count))
    sys.exit(tally.summary())


if __name__ == "__main__":
    main()
