"""math-verify in a worker process with a hard deadline, so the math reward is bounded on any thread."""

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time

TIMEOUT_S = 2
"""math-verify's own limit per parse or comparison, inside the worker"""
DEADLINE_S = 3.0
"""hard limit per answer; the worker is killed past it"""
STARTUP_S = 120.0
"""how long the worker may take to import math-verify"""
MEMORY_MB = 2048
"""the worker's address-space limit"""
_GROUP_BYTES = 32 * 1024
"""most bytes of requests written at once (a pipe holds 64 KiB)"""

_MATH_DELIMITERS = ("$", "\\(", "\\[", "\\boxed")


def _match(parse, verify, gold: str, prediction: str, tagged: bool):
    def read(text, bare):
        # A bare answer (gold, or the content of answer tags) is read as one LaTeX expression:
        # undelimited, math-verify reads "3\sqrt{2}" as 3 and "(1, 2)" as 2. Prose is not.
        if bare and not any(d in text for d in _MATH_DELIMITERS):
            parsed = parse(f"${text}$", parsing_timeout=TIMEOUT_S)
            if parsed:
                return parsed
        return parse(text, parsing_timeout=TIMEOUT_S)

    gold_parsed = read(gold, True)
    if not gold_parsed:
        return None
    # Gold first: verify is not symmetric (assignments and intervals are read from gold).
    return float(verify(gold_parsed, read(prediction, tagged), timeout_seconds=TIMEOUT_S))


def serve() -> None:
    """The worker's loop (runs in the worker process)."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_MB * 2**20, MEMORY_MB * 2**20))
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything math-verify prints goes where stderr goes (nowhere)
    from math_verify import parse, verify
    _match(parse, verify, "\\frac{1}{2}", "0.5", True)  # math-verify's first parse loads its grammar: not on a deadline
    replies.write("ready\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            value = _match(parse, verify, request["gold"], request["prediction"], request["tagged"])
        except BaseException:  # math-verify's TimeoutException, MemoryError, anything
            value = None
        replies.write(json.dumps(value) + "\n")
        replies.flush()


class MathVerifier:
    """The trainer's handle on the worker."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._owner = None
        self._pending = b""

    def _worker(self) -> subprocess.Popen | None:
        if self._proc is not None and self._owner == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc, self._owner = None, os.getpid()
        with open(__file__) as f:
            source = f.read() + "\nserve()\n"
        proc = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self._pending = b""
        try:
            ready = self._readline(proc, time.monotonic() + STARTUP_S) == b"ready"
        except OSError:
            ready = False
        if not ready:
            self._kill(proc)
            return None
        self._proc = proc
        atexit.register(self._close_at_exit, proc, os.getpid())
        return proc

    def _close_at_exit(self, proc: subprocess.Popen, owner: int) -> None:
        if os.getpid() == owner and proc.poll() is None:
            self._kill(proc)

    def _readline(self, proc: subprocess.Popen, deadline: float) -> bytes | None:
        """The worker's next line, or None if it does not come before ``deadline``; OSError if the worker died."""
        fd = proc.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise OSError("the math-verify worker ended")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()

    def check_many(self, items: list, budget_s: float) -> list:
        """math-verify's verdicts on ``(gold, prediction, tagged)`` items: 1.0, 0.0 or None."""
        results = [None] * len(items)
        lines = [json.dumps({"gold": g, "prediction": p, "tagged": t}).encode() + b"\n" for g, p, t in items]
        with self._lock:
            i, budget_end = 0, None
            while i < len(items):
                proc = self._worker()
                if budget_end is None:
                    budget_end = time.monotonic() + budget_s
                if proc is None or time.monotonic() >= budget_end:
                    break
                end, size = i, 0
                while end < len(items) and (end == i or size + len(lines[end]) <= _GROUP_BYTES):
                    size += len(lines[end])
                    end += 1
                i = self._answer_group(proc, lines, results, i, end, budget_end)
        return results

    def _answer_group(self, proc, lines, results, start: int, end: int, budget_end: float) -> int:
        """Send items start..end-1 and read their answers; returns the index to continue from."""
        try:
            proc.stdin.write(b"".join(lines[start:end]))
            proc.stdin.flush()
        except OSError:  # the worker died: a fresh one takes the group
            self._discard(proc)
            return start
        for j in range(start, end):
            try:
                line = self._readline(proc, min(time.monotonic() + DEADLINE_S, budget_end))
                if line is None:
                    raise TimeoutError
                value = json.loads(line)
            except (OSError, ValueError, TimeoutError):  # past the deadline, or the worker died on item j
                self._discard(proc)
                return j + 1
            results[j] = value if value in (0.0, 1.0) else None
        return end

    def _discard(self, proc: subprocess.Popen) -> None:
        self._kill(proc)
        self._proc = None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._kill(self._proc)
                self._proc = None
