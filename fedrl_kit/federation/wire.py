"""The wire: payloads as bytes and back, and the in-process runtime that sends every payload through them
(``Run(..., runtime="serialising")``; the Flower runtime's records use the same split)."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from fedrl_kit.federation.replies import MAX_REPLY_BYTES, BadReply, Check, check_plain
from fedrl_kit.federation.runtime import Client, InProcessRuntime, Message, _inject_after, _inject_before

_ARRAY, _BYTES, _TUPLE = "__array__", "__bytes__", "__tuple__"


def encode_payload(payload: Any) -> bytes:
    """A plain-data payload as bytes: a JSON header (structure, scalars, strings) and an ``.npz`` of its arrays."""
    header, arrays = split_payload(payload)
    buf = io.BytesIO()
    np.savez(buf, *arrays)
    head = header.encode("utf-8")
    return len(head).to_bytes(8, "little") + head + buf.getvalue()


def split_payload(payload: Any) -> tuple[str, list[np.ndarray]]:
    """A plain-data payload as (a JSON header of its structure, scalars and strings; its arrays in order)."""
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
    """The in-process runtime with a wire: every payload, both ways, goes through bytes and back."""

    def __init__(self, clients: dict[str, Client], keep_messages: bool = False, faults: dict | None = None,
                 timeout: float | None = None, replies: dict[str, Check] | None = None, expect: dict | None = None):
        super().__init__({cid: None for cid in clients}, keep_messages, faults, timeout, replies, expect)
        held = dict(clients)
        self.wire_bytes = 0

        def remote(kind: str, sender: str, receiver: str, round: int, wire: bytes) -> tuple[str, bytes]:
            reply = held[receiver].handle(Message(kind, sender, receiver, round, decode_payload(wire)))
            if not isinstance(reply, Message):
                raise BadReply(f"the client answered with a {type(reply).__name__}, not a Message")
            check_plain(reply.payload)
            try:
                return str(reply.kind), encode_payload(reply.payload)
            except (TypeError, ValueError, OverflowError, RecursionError) as e:  # e.g. an int of 5,000 digits
                raise BadReply(f"the reply cannot be encoded ({type(e).__name__}: {str(e)[:200]})") from None

        self._remote = remote

    def _deliver(self, message: Message) -> tuple[Message, int]:
        fault = self._fault(message)
        _inject_before(fault, message)
        wire = encode_payload(message.payload)
        kind, answer = self._remote(message.kind, message.sender, message.receiver, message.round, wire)
        limit = max(MAX_REPLY_BYTES, 4 * len(wire))
        if len(answer) > limit:  # before decoding: a huge reply costs its bytes, not their decoded copies
            raise BadReply(f"the reply is {len(answer):,} bytes, more than {limit:,} (the larger of MAX_REPLY_BYTES "
                           "and 4 × the request's)")
        try:
            payload = decode_payload(answer)
        except Exception as e:  # noqa: BLE001 - whatever bytes came back, the client is dropped, not the run
            raise BadReply(f"the reply's bytes do not decode ({type(e).__name__}: {str(e)[:200]})") from None
        reply = Message(kind, message.receiver, message.sender, message.round, payload)
        return _inject_after(fault, reply), len(wire) + len(answer)

    def _count_wire(self, nbytes: int) -> None:
        self.wire_bytes += nbytes
