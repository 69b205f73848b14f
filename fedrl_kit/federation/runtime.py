"""Typed messages, a ledger of every message, and the in-process runtime that delivers them."""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fedrl_kit.federation.replies import REPLIES, BadReply, Check, Context, check_plain, check_reply

SERVER = "server"


def payload_nbytes(obj: Any) -> int:
    """Size of a plain-data payload on the wire: arrays by their buffers, strings as UTF-8,
    scalars as 8 bytes, containers as the sum of their parts (dict keys included)."""
    if obj is None:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (bytes, bytearray)):
        return len(obj)
    if isinstance(obj, str):
        return len(obj.encode("utf-8"))
    if isinstance(obj, (bool, int, float, np.integer, np.floating, np.bool_)):
        return 8
    if isinstance(obj, dict):
        return sum(payload_nbytes(k) + payload_nbytes(v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return sum(payload_nbytes(v) for v in obj)
    raise TypeError(f"payload must be plain data (arrays, scalars, strings, lists, dicts); got {type(obj).__name__}")


@dataclass
class Message:
    """One message between the server and a client."""

    kind: str  # e.g. "fit", "fit_result", "evaluate", "competence", "score"
    sender: str
    receiver: str
    round: int
    payload: dict = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return payload_nbytes(self.payload)

    @property
    def direction(self) -> str:
        """``"down"`` (server → client) or ``"up"`` (client → server)."""
        return "down" if self.sender == SERVER else "up"


@dataclass
class ClientFailure:
    """Stands in for the reply of a dropped client; the client is dropped for the round."""

    client: str
    round: int
    kind: str
    error: str
    reason: str = "raised"


class ClientAbandoned(BaseException):
    """Raised inside an abandoned client's thread to stop it (a BaseException: ``except Exception`` won't eat it)."""


def copy_payload(obj: Any) -> Any:
    """A deep copy of plain data (arrays copied, containers rebuilt): what one side holds, the other cannot change."""
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, dict):
        return {k: copy_payload(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy_payload(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(copy_payload(v) for v in obj)
    return obj


class _Worker:
    """A daemon thread that runs calls one after another, reused by every :meth:`_Call.wait` while it is free."""

    _lock = threading.Lock()
    _idle: list["_Worker"] = []

    def __init__(self):
        import queue

        self.jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        self.retired = False
        self.thread = threading.Thread(target=self._loop, name="fedrl-client-worker", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        try:
            while not self.retired:
                self.jobs.get()()
        except ClientAbandoned:  # a stop meant for an abandoned call that arrived after the call had ended
            pass

    @classmethod
    def take(cls) -> "_Worker":
        with cls._lock:
            return cls._idle.pop() if cls._idle else cls()

    def give_back(self) -> None:
        with self._lock:
            self._idle.append(self)


class _Call:
    """One message handled in a daemon worker thread; the caller waits for it with a deadline."""

    def __init__(self, fn, name: str):
        self.fn, self.done = fn, threading.Event()
        self.result, self.error, self.abandoned = None, None, False
        # grad mode, CUDA device and OpenMP's thread count are per thread: the client gets the caller's (a new
        # thread would otherwise use OpenMP's default count, not the one the process set, and sum floats in
        # another order than the same client on Flower, which sets the count for each message)
        torch = sys.modules.get("torch")
        grad = torch.is_grad_enabled() if torch is not None else None
        threads = torch.get_num_threads() if torch is not None else None
        cuda = torch.cuda.current_device() if torch is not None and torch.cuda.is_initialized() else None
        self._args = (grad, cuda, threads)
        # a thread of its own, for callers that start it themselves (a lockstep group's members run side by side);
        # wait() runs the call on a reusable _Worker instead
        self.thread = threading.Thread(target=self._run, args=self._args, name=name, daemon=True)

    def _run(self, grad, cuda, threads=None) -> None:
        try:
            if threads is not None:
                sys.modules["torch"].set_num_threads(threads)
            if grad is not None:
                sys.modules["torch"].set_grad_enabled(grad)
            if cuda is not None:
                sys.modules["torch"].cuda.set_device(cuda)
            result = self.fn()
            if not self.abandoned:
                self.result = result
        except BaseException as e:  # noqa: BLE001 - SystemExit too: a client must not end the run
            if not self.abandoned:
                self.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        finally:
            self.done.set()

    def wait(self, timeout: float | None) -> bool:
        """Run on a free :class:`_Worker` and wait up to ``timeout`` seconds (None: no limit); True if it finished in
        time."""
        worker = _Worker.take()
        self.thread = worker.thread  # the thread abandon() stops
        worker.jobs.put(lambda: self._run(*self._args))
        try:
            finished = self.done.wait(timeout)
        except BaseException:  # a real Ctrl-C in the main thread: stop the client, then stop the run
            worker.retired = True
            self.abandon()
            raise
        if not finished:
            worker.retired = True
            self.abandon()
        else:
            worker.give_back()
        return finished

    def abandon(self) -> None:
        """Never read this call's result; stop its thread at its next Python instruction."""
        self.abandoned = True
        if self.thread.ident is not None and not self.done.is_set():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread.ident),
                                                       ctypes.py_object(ClientAbandoned))


class Client(Protocol):
    """Anything with ``handle(message) -> Message`` can be a client."""

    def handle(self, message: Message) -> Message: ...


class Ledger:
    """Every message the runtime delivered, with its size and direction."""

    def __init__(self):
        self.records: list[dict] = []

    def record(self, m: Message) -> None:
        self.records.append(dict(kind=m.kind, sender=m.sender, receiver=m.receiver, round=m.round,
                                 direction=m.direction, nbytes=m.nbytes, keys=sorted(m.payload)))

    def bytes_by_kind(self) -> dict[tuple[str, str], int]:
        """Total bytes per (message kind, direction)."""
        out: dict[tuple[str, str], int] = defaultdict(int)
        for r in self.records:
            out[(r["kind"], r["direction"])] += r["nbytes"]
        return dict(out)

    def total_bytes(self, direction: str | None = None) -> int:
        return sum(r["nbytes"] for r in self.records if direction in (None, r["direction"]))

    def bytes_per_round(self) -> dict[int, dict[str, int]]:
        """{round: {"down": bytes, "up": bytes}}."""
        out: dict[int, dict[str, int]] = defaultdict(lambda: {"down": 0, "up": 0})
        for r in self.records:
            out[r["round"]][r["direction"]] += r["nbytes"]
        return {k: dict(v) for k, v in sorted(out.items())}

    def to_rows(self) -> list[dict]:
        return [dict(r) for r in self.records]


class InProcessRuntime:
    """Delivers messages to client objects in this process, in a fixed order, keeping a ledger.

    Args:
        clients: client id → client object.
        keep_messages: also keep whole messages (tests that check what crossed the wire).
        faults: client id → ``(round, kind)`` fault(s) (``RunConfig.fail_client``; round None: every round): kind
            ``"raise"``, ``"exit"``, ``"hang"``, ``"nan"`` or ``"shape"``; a plain int means ``(round, "raise")``.
        timeout: seconds a client may take to answer one message (None or 0: no limit).
        replies: request kind → its reply's declared format (default :data:`~fedrl_kit.federation.replies.REPLIES`).
        expect: run-wide facts the formats compare with (``"adapter"``, ``"num_generations"``, ``"num_examples"``).
    """

    def __init__(self, clients: dict[str, Client], keep_messages: bool = False, faults: dict | None = None,
                 timeout: float | None = None, replies: dict[str, Check] | None = None, expect: dict | None = None):
        self._clients = dict(clients)
        self.faults = {cid: _faults(f) for cid, f in (faults or {}).items()}
        self.timeout = timeout or None
        self.replies = dict(REPLIES if replies is None else replies)
        self.expect = dict(expect or {})
        self.ledger = Ledger()
        self.failures: list[ClientFailure] = []
        self.keep_messages = keep_messages
        self.messages: list[Message] = []
        self._abandoned: dict[str, tuple[Message, _Call]] = {}  # client id → (message it was dropped for, its call)

    @property
    def client_ids(self) -> list[str]:
        return list(self._clients)

    def _fault(self, message: Message) -> str | None:
        return next((kind for r, kind in self.faults.get(message.receiver, ())
                     if r is None or r == message.round), None)

    def _deliver(self, message: Message) -> tuple[Message, int]:
        """Hand ``message`` to its client; (the reply, bytes that crossed a wire). Runs in the worker thread."""
        fault = self._fault(message)
        _inject_before(fault, message)
        mine = Message(message.kind, message.sender, message.receiver, message.round, copy_payload(message.payload))
        reply = self._clients[message.receiver].handle(mine)
        if not isinstance(reply, Message):
            raise BadReply(f"the client answered with a {type(reply).__name__}, not a Message")
        check_plain(reply.payload)  # before the copy walks it: nothing too deep to copy, nothing but plain data
        return _inject_after(fault, Message(reply.kind, message.receiver, message.sender, message.round,
                                            copy_payload(reply.payload))), 0

    def _log(self, m: Message) -> None:
        self.ledger.record(m)
        if self.keep_messages:
            self.messages.append(m)

    def _fail(self, message: Message, reason: str, error: str) -> ClientFailure:
        failure = ClientFailure(message.receiver, message.round, message.kind, error, reason)
        self.failures.append(failure)
        return failure

    def send(self, message: Message) -> Message | ClientFailure:
        """Deliver one server → client message and return the client's reply (or its failure)."""
        cid = message.receiver
        if cid not in self._clients:
            raise ValueError(f"unknown client {cid!r}; known: {self.client_ids}")
        self._log(message)
        if cid in self._abandoned:
            late_message, late = self._abandoned[cid]
            if not late.done.is_set():
                return self._fail(message, "busy", f"ClientBusy: {cid} is still running the {late_message.kind!r} "
                                  f"message of round {late_message.round} it was dropped for")
            del self._abandoned[cid]
        call = _Call(lambda: self._deliver(message), name=f"client {cid} {message.kind} r{message.round}")
        if not call.wait(self.timeout):
            self._abandoned[cid] = (message, call)
            return self._fail(message, "timeout", f"ClientTimeout: {cid} did not answer {message.kind!r} within "
                              f"{self.timeout:g} s; dropped for the round, its late reply is discarded")
        if call.error is not None:
            reason = "bad_reply" if call.error.startswith("BadReply") else "raised"
            return self._fail(message, reason, call.error)
        reply, wire = call.result
        self._count_wire(wire)
        return self._accept(message, reply)

    def _accept(self, message: Message, reply: Message) -> Message | ClientFailure:
        """Check ``reply`` against its declared format; log and return it, or drop the client for it."""
        expected = f"{message.kind}_result"
        try:
            if message.kind in self.replies and reply.kind != expected:
                raise BadReply(f"a {message.kind!r} message is answered by {expected!r}, got {reply.kind!r}")
            # plain data, bounded depth, the declared format; total: whatever the payload, BadReply or nothing
            check_reply(message.kind, reply.payload, Context(message.payload, self.expect, message.receiver),
                        self.replies)
        except BadReply as e:
            return self._fail(message, "bad_reply", f"BadReply: {e}")
        self._log(reply)
        return reply

    def _count_wire(self, nbytes: int) -> None:
        """Bytes a wire carried for one message and its reply (none in-process)."""

    def broadcast(self, kind: str, round: int, payloads: dict[str, dict] | dict, receivers=None,
                  progress=None) -> dict[str, Message | ClientFailure]:
        """Send ``kind`` to each receiver; ``payloads`` is one shared payload or one per client id."""
        replies = {}
        for message in self.outgoing(kind, round, payloads, receivers):
            t0 = time.time()
            replies[message.receiver] = self.send(message)
            if progress is not None:
                progress(message.receiver, time.time() - t0)
        return replies

    def outgoing(self, kind: str, round: int, payloads: dict, receivers=None) -> list[Message]:
        """The messages of a broadcast: ``payloads`` is one shared payload or one per client id."""
        receivers = self.client_ids if receivers is None else list(receivers)
        per_client = all(r in payloads for r in receivers) and len(receivers) > 0 and isinstance(
            payloads.get(receivers[0]), dict) and set(payloads) <= set(self._clients)
        return [Message(kind, SERVER, cid, round, payloads[cid] if per_client else payloads) for cid in receivers]


# -- fault injection (demos, tests, the fault-injection benchmark) ---------------------------------------------
FAULT_KINDS = ("raise", "exit", "hang", "nan", "shape")
"""what ``RunConfig.fail_client`` can make a client do"""


def parse_faults(text: str) -> dict[str, list[tuple[int | None, str]]]:
    """``RunConfig.fail_client`` → ``{client id: [(round or None, kind)]}``."""
    out: dict[str, list[tuple[int | None, str]]] = {}
    for item in (x.strip() for x in text.split(",") if x.strip()):
        cid, _, rest = item.partition("@")
        r, _, kind = rest.partition(":")
        kind = kind or "raise"
        if not cid or not (r == "*" or r.isdigit()) or kind not in FAULT_KINDS:
            raise ValueError(f"fail_client must be comma-separated client_id@round[:kind] items (round a number or *, "
                             f"kind one of {FAULT_KINDS}), got {item!r}")
        out.setdefault(cid, []).append((None if r == "*" else int(r), kind))
    return out


def _faults(spec) -> list[tuple[int | None, str]]:
    """A client's faults as ``[(round or None, kind)]`` from an int round, one ``(round, kind)`` or a list."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        return [(spec, "raise")]
    items = [spec] if isinstance(spec, tuple) else list(spec)
    for r, kind in items:
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {FAULT_KINDS}, got {kind!r}")
    return [(r, kind) for r, kind in items]


def _inject_before(fault: str | None, message: Message) -> None:
    where = f"{message.receiver} in round {message.round}"
    if fault == "raise":
        raise RuntimeError(f"injected failure of {where}")
    if fault == "exit":
        raise SystemExit(f"injected SystemExit of {where}")
    if fault == "hang":
        while True:  # short sleeps: the runtime's stop reaches the thread between two of them
            time.sleep(0.05)


def _inject_after(fault: str | None, reply: Message) -> Message:
    """The reply as a faulty client would send it: every adapter value NaN, or each tensor missing a row."""
    adapter = reply.payload.get("adapter") if isinstance(reply.payload, dict) else None
    if fault in ("nan", "shape") and isinstance(adapter, dict):
        bad = {k: np.full_like(a, np.nan) if fault == "nan" else a[:-1] for k, a in adapter.items()}
        reply = Message(reply.kind, reply.sender, reply.receiver, reply.round, {**reply.payload, "adapter": bad})
    return reply
