"""Typed messages, a ledger of every message, and the in-process runtime that delivers them.

A method talks to its clients only through a runtime, with payloads of plain data (numpy
arrays, scalars, strings, and lists/dicts of them). That keeps the same method code runnable
in-process, in notebooks, and — later — on Flower's engine, where a payload maps onto a
``RecordDict`` (arrays → ``ArrayRecord``, scalars → ``MetricRecord``/``ConfigRecord``).

Failure isolation: a client whose handler raises is *dropped for that round*. The runtime
returns a :class:`ClientFailure` in place of its reply and records it; the round goes on.
"""

from __future__ import annotations

import io
import json
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

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
    """Stands in for the reply of a client that raised; the client is dropped for the round."""

    client: str
    round: int
    kind: str
    error: str


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

    The server side reaches clients only through :meth:`send` and :meth:`broadcast`: the client
    objects are private to the runtime (no attribute hands them out).

    Args:
        clients: client id → client object.
        keep_messages: also keep the full messages (payloads included) — used by tests that check
            what crossed the wire; off by default to save memory.
        faults: fault injection for demos and tests: client id → the round in which that client's
            handler raises instead of answering (``RunConfig.fail_client``).
    """

    def __init__(self, clients: dict[str, Client], keep_messages: bool = False, faults: dict[str, int] | None = None):
        self._clients = dict(clients)
        self.faults = dict(faults or {})
        self.ledger = Ledger()
        self.failures: list[ClientFailure] = []
        self.keep_messages = keep_messages
        self.messages: list[Message] = []

    @property
    def client_ids(self) -> list[str]:
        return list(self._clients)

    def _deliver(self, message: Message) -> Message:
        """Hand ``message`` to its client and return the reply (a subclass may send it through bytes)."""
        if self.faults.get(message.receiver) == message.round:
            raise RuntimeError(f"injected failure of {message.receiver} in round {message.round}")
        return self._clients[message.receiver].handle(message)

    def _log(self, m: Message) -> None:
        self.ledger.record(m)
        if self.keep_messages:
            self.messages.append(m)

    def send(self, message: Message) -> Message | ClientFailure:
        """Deliver one server → client message and return the client's reply (or its failure)."""
        if message.receiver not in self._clients:
            raise ValueError(f"unknown client {message.receiver!r}; known: {self.client_ids}")
        self._log(message)
        try:
            reply = self._deliver(message)
        except Exception as e:  # noqa: BLE001 - any client error drops that client for the round
            failure = ClientFailure(message.receiver, message.round, message.kind,
                                    f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
            self.failures.append(failure)
            return failure
        self._log(reply)
        return reply

    def broadcast(self, kind: str, round: int, payloads: dict[str, dict] | dict, receivers=None,
                  progress=None) -> dict[str, Message | ClientFailure]:
        """Send ``kind`` to each receiver; ``payloads`` is one shared payload or one per client id."""
        receivers = self.client_ids if receivers is None else list(receivers)
        per_client = all(r in payloads for r in receivers) and len(receivers) > 0 and isinstance(
            payloads.get(receivers[0]), dict) and set(payloads) <= set(self._clients)
        replies = {}
        for cid in receivers:
            t0 = time.time()
            payload = payloads[cid] if per_client else payloads
            replies[cid] = self.send(Message(kind, SERVER, cid, round, payload))
            if progress is not None:
                progress(cid, time.time() - t0)
        return replies


# -- the wire: payloads as bytes ---------------------------------------------------------------------------
_ARRAY, _BYTES, _TUPLE = "__array__", "__bytes__", "__tuple__"


def encode_payload(payload: Any) -> bytes:
    """A plain-data payload as bytes: a JSON header (structure, scalars, strings) and an ``.npz`` of its arrays.

    What survives the trip exactly: arrays (dtype, shape, values), str, bool, int, float (NaN and ±inf
    too), None, bytes, lists, tuples, dicts with string keys. NumPy scalars become Python numbers.
    Anything else raises TypeError naming its type — the same contract as :func:`payload_nbytes`.
    """
    header, arrays = split_payload(payload)
    buf = io.BytesIO()
    np.savez(buf, *arrays)
    head = header.encode("utf-8")
    return len(head).to_bytes(8, "little") + head + buf.getvalue()


def split_payload(payload: Any) -> tuple[str, list[np.ndarray]]:
    """A plain-data payload as (a JSON header of its structure, scalars and strings; its arrays in order).

    :func:`encode_payload` packs both into bytes; the Flower runtime sends the arrays as an ``ArrayRecord``
    and the header as a ``ConfigRecord`` value. :func:`join_payload` is the inverse.
    """
    arrays: list[np.ndarray] = []

    def enc(o):
        if o is None or isinstance(o, (bool, str)):
            return o
        if isinstance(o, np.ndarray):
            arrays.append(o)
            return {_ARRAY: len(arrays) - 1}
        if isinstance(o, (bytes, bytearray)):
            return {_BYTES: bytes(o).hex()}
        if isinstance(o, np.bool_):
            return bool(o)
        if isinstance(o, (int, np.integer)):
            return int(o)
        if isinstance(o, (float, np.floating)):
            return float(o)
        if isinstance(o, dict):
            if not all(isinstance(k, str) for k in o):
                raise TypeError(f"payload dict keys must be strings, got {sorted(map(repr, o))[:3]}")
            if {_ARRAY, _BYTES, _TUPLE} & set(o):
                raise TypeError(f"payload dict keys must not be {_ARRAY}, {_BYTES} or {_TUPLE}")
            return {k: enc(v) for k, v in o.items()}
        if isinstance(o, tuple):
            return {_TUPLE: [enc(v) for v in o]}
        if isinstance(o, list):
            return [enc(v) for v in o]
        raise TypeError(f"payload must be plain data (arrays, scalars, strings, lists, dicts); got {type(o).__name__}")

    return json.dumps(enc(payload), allow_nan=True), arrays


def decode_payload(data: bytes) -> Any:
    """The inverse of :func:`encode_payload` (arrays are loaded without pickle)."""
    n = int.from_bytes(data[:8], "little")
    with np.load(io.BytesIO(data[8 + n:]), allow_pickle=False) as z:
        arrays = [z[f"arr_{i}"] for i in range(len(z.files))]
    return join_payload(data[8:8 + n].decode("utf-8"), arrays)


def join_payload(header: str, arrays: list[np.ndarray]) -> Any:
    """The inverse of :func:`split_payload`."""
    header = json.loads(header)

    def dec(o):
        if isinstance(o, dict):
            if set(o) == {_ARRAY}:
                return arrays[o[_ARRAY]]
            if set(o) == {_BYTES}:
                return bytes.fromhex(o[_BYTES])
            if set(o) == {_TUPLE}:
                return tuple(dec(v) for v in o[_TUPLE])
            return {k: dec(v) for k, v in o.items()}
        if isinstance(o, list):
            return [dec(v) for v in o]
        return o

    return dec(header)


class SerialisingRuntime(InProcessRuntime):
    """The in-process runtime with a wire: every payload, both ways, goes through bytes and back.

    The clients live in a closure the server side cannot reach (the runtime keeps only their ids), and
    what a client receives is a fresh decoded copy, never an object the server holds — as on a real
    federation. A method that runs the same here as in :class:`InProcessRuntime` exchanges plain data only.
    """

    def __init__(self, clients: dict[str, Client], keep_messages: bool = False, faults: dict[str, int] | None = None):
        super().__init__({cid: None for cid in clients}, keep_messages, faults)
        held = dict(clients)
        self.wire_bytes = 0

        def remote(kind: str, sender: str, receiver: str, round: int, wire: bytes) -> tuple[str, bytes]:
            reply = held[receiver].handle(Message(kind, sender, receiver, round, decode_payload(wire)))
            return reply.kind, encode_payload(reply.payload)

        self._remote = remote

    def _deliver(self, message: Message) -> Message:
        if self.faults.get(message.receiver) == message.round:
            raise RuntimeError(f"injected failure of {message.receiver} in round {message.round}")
        wire = encode_payload(message.payload)
        kind, answer = self._remote(message.kind, message.sender, message.receiver, message.round, wire)
        self.wire_bytes += len(wire) + len(answer)
        return Message(kind, message.receiver, message.sender, message.round, decode_payload(answer))
