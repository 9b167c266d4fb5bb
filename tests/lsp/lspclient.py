"""A minimal LSP client for tests: starts `spmdc lsp`, frames JSON-RPC
messages with Content-Length headers, and reads the server's messages,
keeping notifications (publishDiagnostics) apart from responses."""
import json
import subprocess
import threading


class LspClient:
    def __init__(self, argv, timeout=60):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.next_id = 1
        self.notifications = []
        # A hung server must fail the test, not hang it.
        self.watchdog = threading.Timer(timeout, self.proc.kill)
        self.watchdog.start()

    def send_raw(self, body: bytes):
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message):
        self.send_raw(json.dumps(message).encode())

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def read(self):
        """The next message from the server (None at the end of its output)."""
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        assert length is not None, "a message without Content-Length"
        return json.loads(self.proc.stdout.read(length))

    def response(self, request_id):
        """Reads until the response to `request_id`, keeping notifications."""
        while True:
            message = self.read()
            assert message is not None, "the server ended before answering %r" % request_id
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") == request_id:
                return message
            else:
                raise AssertionError("unexpected message %r" % message)

    def request(self, method, params=None):
        request_id = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(request_id)

    def diagnostics(self, uri):
        """The latest diagnostics published for `uri`, after a round trip
        that makes sure the server handled every earlier notification."""
        self.request("spmdc/unknown-request-used-as-a-barrier")
        for message in reversed(self.notifications):
            if (message["method"] == "textDocument/publishDiagnostics"
                    and message["params"]["uri"] == uri):
                return message["params"]
        raise AssertionError("no diagnostics were published for " + uri)

    def wait(self):
        try:
            status = self.proc.wait(timeout=30)
        finally:
            self.watchdog.cancel()
        return status
