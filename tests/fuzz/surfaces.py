"""surfaces.py — what the fuzzers of the newer surfaces share (issue 30).

Each fuzzer runs spmdc as a process per input and asserts, for every input:
no crash (no signal, no sanitizer report), no internal error (exit status 2 or
"internal error" in the output), bounded time (a wall-clock watchdog) and
bounded memory (the child's peak RSS, from wait4). It ends with one summary
line: inputs, crashes, internal errors, time-outs, memory overruns.
"""
import os
import re
import signal
import subprocess
import threading
import time

SANITIZER = re.compile(rb"ERROR: (Address|Leak)Sanitizer|runtime error:")


class Outcome:
    def __init__(self, status, stdout, stderr, seconds, max_rss_kib, timed_out):
        self.status = status  # exit status, or -SIGNAL
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.max_rss_kib = max_rss_kib
        self.timed_out = timed_out


def run(argv, stdin=b"", timeout=30.0, env=None):
    """Runs argv with `stdin` as input; kills it (and its group) after `timeout` s."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env=env)
    killed = []

    def kill():
        killed.append(True)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    out, err = [], []

    def pump(stream, into):
        into.append(stream.read())

    readers = [threading.Thread(target=pump, args=(proc.stdout, out)),
               threading.Thread(target=pump, args=(proc.stderr, err))]
    for r in readers:
        r.start()
    try:
        if stdin:
            proc.stdin.write(stdin)
        proc.stdin.close()
    except (BrokenPipeError, ValueError):
        pass
    _, wstatus, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(wstatus)
    return Outcome(proc.returncode, out[0], err[0], time.monotonic() - start,
                   usage.ru_maxrss, bool(killed))


class Tally:
    """Counts inputs and failures; prints each failure with what reproduces it."""

    def __init__(self, name, max_seconds, max_rss_mib, quiet=False):
        self.name = name
        self.max_seconds = max_seconds
        self.max_rss_kib = max_rss_mib * 1024
        self.inputs = self.crashes = self.internal = self.timeouts = self.memory = 0
        self.failures = []
        self.quiet = quiet
        self.slowest = (0.0, None)
        self.largest = (0, None)

    def check(self, what, outcome, allowed=(0, 1)):
        """Records one input's outcome; False when it failed an assertion."""
        self.inputs += 1
        if outcome.seconds > self.slowest[0]:
            self.slowest = (outcome.seconds, what)
        if outcome.max_rss_kib > self.largest[0]:
            self.largest = (outcome.max_rss_kib, what)
        text = outcome.stdout + outcome.stderr
        problem = None
        if outcome.timed_out or outcome.seconds > self.max_seconds:
            self.timeouts += 1
            problem = "took %.1f s (bound %.0f s)" % (outcome.seconds, self.max_seconds)
        elif outcome.status < 0 or outcome.status >= 128 or outcome.status == 99 or \
                SANITIZER.search(text):
            self.crashes += 1
            problem = "crashed: exit %d" % outcome.status
        elif outcome.status == 2 or b"internal error" in text:
            self.internal += 1
            problem = "internal error (exit %d)" % outcome.status
        elif outcome.max_rss_kib > self.max_rss_kib:
            self.memory += 1
            problem = "peak RSS %d MiB (bound %d MiB)" % (outcome.max_rss_kib // 1024,
                                                         self.max_rss_kib // 1024)
        elif outcome.status not in allowed:
            problem = "exit %d (expected one of %s)" % (outcome.status, allowed)
        if problem:
            self.failures.append((what, problem))
            print("FAIL %s: %s\n  %s\n  stderr: %s" % (self.name, problem, what,
                                                      outcome.stderr[-600:].decode(errors="replace")))
            return False
        return True

    def fail(self, what, problem):
        self.failures.append((what, problem))
        print("FAIL %s: %s\n  %s" % (self.name, problem, what))

    def summary(self):
        print("%s: %d inputs, %d crashes, %d internal errors, %d time-outs, %d over memory, "
              "%d failures; slowest %.2f s, largest %d MiB" %
              (self.name, self.inputs, self.crashes, self.internal, self.timeouts, self.memory,
               len(self.failures), self.slowest[0], self.largest[0] // 1024))
        if self.slowest[1]:
            print("  slowest: %s" % self.slowest[1])
        return 1 if self.failures else 0
