"""math-verify in a worker process with a hard deadline, so the math reward is bounded on any thread.

math-verify bounds its own parsing and comparison with ``signal.alarm``, which works only on the
main thread; a Flower client or a thread pool computes rewards elsewhere, and there math-verify
has no bound at all (a pathological answer ran for minutes). Time and memory spent inside a
library cannot be bounded from the same process, so every comparison runs here instead:

* one worker process per trainer process (started on first use, shared by all threads under a
  lock), running ``python -c <this file>`` with its own ``RLIMIT_AS`` (``MEMORY_MB``) and its
  stderr discarded (math-verify logs a warning per failed parse);
* in the worker, on its main thread, math-verify's own timeouts (``TIMEOUT_S``) apply;
* in the trainer, each answer has a hard deadline (``DEADLINE_S``): past it the worker is
  killed (and restarted on the next call) and the caller falls back to exact match.

The worker reads one JSON line ``{"gold", "prediction", "tagged"}`` per request and answers
``1.0``, ``0.0`` or ``null`` (math-verify could not parse the gold answer, raised, or timed
out). Only the standard library and math-verify are imported here.
"""

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

    def _worker(self) -> subprocess.Popen | None:
        if self._proc is not None and self._owner == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc, self._owner = None, os.getpid()
        source = open(__file__).read() + "\nserve()\n"
        proc = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        if not self._readable(proc, time.monotonic() + STARTUP_S) or proc.stdout.readline() != "ready\n":
            self._kill(proc)
            return None
        self._proc = proc
        return proc

    @staticmethod
    def _readable(proc: subprocess.Popen, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        return remaining > 0 and bool(select.select([proc.stdout], [], [], remaining)[0])

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        proc.kill()
        proc.wait()

    def check(self, gold: str, prediction: str, tagged: bool, deadline_s: float = DEADLINE_S) -> float | None:
        """1.0 / 0.0 if math-verify decides within ``deadline_s`` seconds, else None."""
        with self._lock:
            proc = self._worker()
            if proc is None:
                return None
            deadline = time.monotonic() + deadline_s
            try:
                proc.stdin.write(json.dumps({"gold": gold, "prediction": prediction, "tagged": tagged}) + "\n")
                proc.stdin.flush()
                if self._readable(proc, deadline):
                    value = json.loads(proc.stdout.readline())
                    return value if value in (0.0, 1.0) else None
            except (OSError, ValueError):
                pass
            self._kill(proc)  # past the deadline, or the worker died: start afresh next time
            self._proc = None
            return None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._kill(self._proc)
                self._proc = None
