"""What a client may answer: the declared format of every reply, checked before the server reads it."""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

ADAPTER_MAX_ABS = 1e4
"""Largest |value| accepted in a returned LoRA factor: trained factors stay far below it (docs/reliability.md); a
value beyond it is a diverged or hostile client, whose adapter averaged in would make every later rollout NaN."""


def adam_step_bound(t: int, betas: tuple[float, float] = (0.9, 0.999)) -> float:
    """The most Adam's t-th step (1-based) can move one parameter, in units of the learning rate."""
    b1, b2 = betas
    rho = b1 * b1 / b2
    if not (0 <= b1 < 1 and 0 <= b2 < 1 and rho < 1):
        raise ValueError(f"adam_step_bound needs 0 ≤ β₁ < 1, 0 ≤ β₂ < 1 and β₁² < β₂, got {betas}")
    t = max(int(t), 1)
    return (1 - b1) / (1 - b1 ** t) * math.sqrt((1 - b2 ** t) / (1 - b2)) * math.sqrt((1 - rho ** t) / (1 - rho))


@dataclass(frozen=True)
class UpdateBound:
    """How far an honest client's Adam(W) can move any one LoRA value from the adapter it was sent, in one round.

    With ``steps`` optimiser steps at a rate of at most ``learning_rate`` (c(t) = :func:`adam_step_bound`)::

        |θ_i − θ_i^(t)| ≤ lr · Σ_t c(t) + steps · lr · wd · (max |θ^(t)| + lr · Σ_t c(t))

    whatever the gradients; :func:`adapter` refuses a reply beyond it (docs/reliability.md).
    """

    learning_rate: float
    steps: int  # optimiser steps a client takes a round: τ · num_iterations
    weight_decay: float = 0.0
    fresh_optimizer: bool = True  # reset_optimizer: Adam's step count restarts each round
    betas: tuple[float, float] = (0.9, 0.999)  # torch.optim.Adam(W)'s defaults, which the clients use

    def limit(self, start_max_abs: float) -> float:
        """The largest |θ_i − θ_i^(t)| an honest reply can have, given max |θ^(t)| of the tensor it was sent."""
        steps = max(int(self.steps), 1)
        if self.fresh_optimizer:
            c = sum(adam_step_bound(t, self.betas) for t in range(1, steps + 1))
        else:
            c = steps * adam_step_bound(10 ** 9, self.betas)
        move = self.learning_rate * c
        decay = steps * self.learning_rate * self.weight_decay * (start_max_abs + move)
        bound = move + decay
        return bound * (1 + 1e-3) + 4 * steps * float(np.finfo(np.float32).eps) * (start_max_abs + bound)


MAX_REPLY_DEPTH = 32
"""Deepest nesting of containers (dicts, lists, tuples) accepted in a reply. The deepest honest reply is 3 levels
(FedGRPO's ``scores``, PubSwap's ``texts``: a list of rows in a mapping); a reply nested thousands deep would make
the server's recursive walks (copying, counting bytes, encoding) raise RecursionError."""

MAX_REPLY_ITEMS = 1_000_000
"""Most entries (a container's members, counted over the whole reply; an array counts once) a reply may hold. The
largest honest replies hold thousands (DPSDA-FL's synthetic questions, FedGRPO's score rows); the count is checked
from each container's length before its members are walked, so a reply of 2 M metric names is refused at once."""

MAX_REPLY_BYTES = 64 * 1024 ** 2
"""Fewest bytes a serialised reply may always take (:class:`~fedrl_kit.federation.wire.SerialisingRuntime`: the
limit is the larger of this and 4 × the request's bytes, since a ``fit`` reply carries an adapter of the size the
request did); checked before the reply is decoded, so a 300 MB reply costs its bytes, not 2 GB of decoding."""

MAX_METRICS = 256
"""Most names a reply's ``metrics`` may hold. Honest clients send at most 29 (FedMOA's ``fit``: its per-reward
diagnostics; FedAvg-GRPO 13); every name becomes a field of a line of ``metrics.jsonl``, so 2 M names would make one
line of 87 MB and cost the server 1.3 GB of memory."""

MAX_METRIC_NAME = 100
"""Longest metric name (characters) accepted in a reply's ``metrics``; honest names are at most 21."""

RESERVED_METRICS = ("kind", "round", "client")
"""Names a client's ``metrics`` may not use: the fields of the ``metrics.jsonl`` record its metrics are written into
(``{"kind": "client", "round": r, "client": cid, **metrics}``), which a client must not rewrite (a reply using one is
dropped as ``bad_reply``)."""


class BadReply(ValueError):
    """A reply that does not fit the declared format of its message kind."""


@dataclass
class Context:
    """What a check may compare a reply with.

    Args:
        request: the payload the client was sent (lengths of questions, candidates, …).
        expect: run-wide facts the runtime was given: ``"adapter"`` → ``{name: (shape, dtype)}`` of the global
            LoRA adapter, ``"num_generations"`` → G, ``"num_examples"`` → {client: the size the server knows}.
        client: who sent the reply.
    """

    request: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    client: str = ""


Check = Callable[[Any, Context, str], None]


_SCALARS = (str, int, float, bool, bytes, type(None))
_ARRAY_KINDS = "biufcSU"
"""dtype kinds a reply's arrays may have: bool, integers, floats, complex, bytes, text (not objects, which pickle)"""


def check_plain(payload) -> None:
    """Raise :class:`BadReply` unless ``payload`` is plain data nested at most :data:`MAX_REPLY_DEPTH` deep."""
    stack = [(payload, "the reply", 0)]
    items = 0
    while stack:
        v, path, depth = stack.pop()
        if type(v) in _SCALARS:
            continue
        if isinstance(v, np.generic) or type(v) is np.ndarray:
            if v.dtype.kind not in _ARRAY_KINDS:
                raise BadReply(f"{path} is a numpy {type(v).__name__} of dtype {v.dtype}, not numbers, bools or text")
            continue
        if type(v) in (dict, list, tuple):
            if depth >= MAX_REPLY_DEPTH:
                raise BadReply(f"{path} is nested more than {MAX_REPLY_DEPTH} containers deep")
            items += len(v)
            if items > MAX_REPLY_ITEMS:
                raise BadReply(f"the reply holds more than MAX_REPLY_ITEMS = {MAX_REPLY_ITEMS:,} entries ({path} "
                               f"alone {len(v):,})")
            if type(v) is dict:
                for k, x in v.items():
                    if type(k) is not str:
                        raise BadReply(f"{path} has a key of type {type(k).__name__} ({_short(k)}): keys must be "
                                       "strings")
                    stack.append((x, _child(path, repr(k[:40])), depth + 1))
            else:
                stack.extend((x, _child(path, str(i)), depth + 1) for i, x in enumerate(v))
            continue
        raise BadReply(f"{path} is a {type(v).__name__}, not plain data (arrays, numbers, strings, lists, dicts)")


def _child(path: str, key: str) -> str:
    """``path[key]``; past 80 characters the path stops growing and ends in ``[…]`` (a reply nested 1,000 deep)."""
    if len(path) > 80:
        return path if path.endswith("[…]") else f"{path}[…]"
    return f"{path}[{key}]"


def _short(v) -> str:
    """``repr(v)``, cut to 40 characters, or the type's name where repr itself fails (a hostile object's)."""
    try:
        return reprlib.repr(v)[:40]
    except Exception:  # noqa: BLE001 - a client's object may raise anything from __repr__
        return f"a {type(v).__name__}"


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def number(lo: float = -math.inf, hi: float = math.inf, finite: bool = True, integer: bool = False) -> Check:
    """A real number in [lo, hi]; finite unless ``finite=False`` (diagnostics may be NaN); an int if ``integer``."""
    def check(v, ctx, path):
        if not _is_number(v) or (integer and not isinstance(v, (int, np.integer))):
            raise BadReply(f"{path} must be {'an integer' if integer else 'a number'}, got {type(v).__name__}")
        try:
            x = float(v)
        except OverflowError:
            digits = int(int(v).bit_length() * math.log10(2)) + 1
            raise BadReply(f"{path} is an integer of about {digits} digits, beyond float range") from None
        if math.isnan(x) and not finite:
            return
        if finite and not math.isfinite(x):
            raise BadReply(f"{path} must be finite, got {x!r}")
        if not lo <= x <= hi:
            raise BadReply(f"{path} must be in [{lo}, {hi}], got {_short(v)}")
    return check


def text() -> Check:
    """A string."""
    def check(v, ctx, path):
        if not isinstance(v, str):
            raise BadReply(f"{path} must be a string, got {type(v).__name__}")
    return check


def list_of(item: Check, length: Callable[[Context], int] | None = None) -> Check:
    """A list (or tuple, or 1-D array) of ``item``; of ``length(ctx)`` items when given."""
    def check(v, ctx, path):
        if isinstance(v, np.ndarray):
            v = list(v)
        if not isinstance(v, (list, tuple)):
            raise BadReply(f"{path} must be a list, got {type(v).__name__}")
        if length is not None and len(v) != length(ctx):
            raise BadReply(f"{path} must have {length(ctx)} items, got {len(v)}")
        for i, x in enumerate(v):
            item(x, ctx, f"{path}[{i}]")
    return check


def record(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    """A dict with exactly the ``required`` keys and any of the ``optional`` ones, each fitting its check."""
    optional = optional or {}

    def check(v, ctx, path):
        if not isinstance(v, dict):
            raise BadReply(f"{path} must be a mapping, got {type(v).__name__}")
        missing = sorted(set(required) - set(v))
        unknown = sorted(set(v) - set(required) - set(optional), key=str)
        if missing:
            raise BadReply(f"{path} lacks {missing}")
        if unknown:
            raise BadReply(f"{path} has unexpected key(s) {unknown[:5]}")
        for k, c in {**required, **optional}.items():
            if k in v:
                c(v[k], ctx, f"{path}[{k!r}]" if path else k)
    return check


def metrics() -> Check:
    """A client's diagnostics: names → numbers (NaN allowed: a metric may be undefined for a round)."""
    value = number(finite=False)

    def check(v, ctx, path):
        if not isinstance(v, dict):
            raise BadReply(f"{path} must be a mapping, got {type(v).__name__}")
        if len(v) > MAX_METRICS:
            raise BadReply(f"{path} holds {len(v)} names, more than MAX_METRICS = {MAX_METRICS}")
        for k, x in v.items():
            if not isinstance(k, str):
                raise BadReply(f"{path} keys must be strings, got {_short(k)}")
            if len(k) > MAX_METRIC_NAME:
                raise BadReply(f"{path} has a name of {len(k)} characters ({k[:40]!r}…), more than "
                               f"MAX_METRIC_NAME = {MAX_METRIC_NAME}")
            if k in RESERVED_METRICS:
                raise BadReply(f"{path} uses the name {k!r}, a field of its metrics.jsonl record "
                               f"({', '.join(RESERVED_METRICS)} are the run's, not the client's)")
            value(x, ctx, f"{path}[{k!r}]")
    return check


def adapter() -> Check:
    """LoRA factors with the global adapter's names, shapes and dtypes, finite and below :data:`ADAPTER_MAX_ABS`,
    and — where the run gives an :class:`UpdateBound` (``ctx.expect["update_bound"]``) — no value further from the
    adapter the client was sent than that bound allows.
    """
    def check(v, ctx, path):
        if not isinstance(v, dict):
            raise BadReply(f"{path} must be a mapping of arrays, got {type(v).__name__}")
        ref = ctx.expect.get("adapter")
        if ref is None and isinstance(ctx.request.get("adapter"), dict):
            ref = {k: (np.shape(a), str(np.asarray(a).dtype)) for k, a in ctx.request["adapter"].items()}
        if ref is not None and set(v) != set(ref):
            missing, unknown = sorted(set(ref) - set(v)), sorted(set(v) - set(ref), key=str)
            raise BadReply(f"{path} has different tensors than the global adapter "
                           f"(missing {missing[:3]}, unexpected {unknown[:3]})")
        for k, a in v.items():
            where = f"{path}[{k!r}]"
            if not isinstance(a, np.ndarray):
                raise BadReply(f"{where} must be an array, got {type(a).__name__}")
            if ref is not None and (a.shape != tuple(ref[k][0]) or str(a.dtype) != ref[k][1]):
                raise BadReply(f"{where} is {a.dtype}{list(a.shape)}, the global adapter's is "
                               f"{ref[k][1]}{list(ref[k][0])}")
            if a.dtype.kind != "f":
                raise BadReply(f"{where} must hold floats, got {a.dtype}")
            if not np.isfinite(a).all():
                raise BadReply(f"{where} holds {int((~np.isfinite(a)).sum())} non-finite value(s)")
            if a.size and float(np.abs(a).max()) > ADAPTER_MAX_ABS:
                raise BadReply(f"{where} holds |value| {float(np.abs(a).max()):.3g} > {ADAPTER_MAX_ABS:g}")
        bound, sent = ctx.expect.get("update_bound"), ctx.request.get("adapter")
        sent = sent if isinstance(sent, dict) else ctx.expect.get("broadcast")
        if bound is None or sent is None:
            return
        for k, a in v.items():
            start = np.asarray(sent[k], dtype=np.float64) if k in sent else None
            if start is None or start.shape != a.shape or not a.size:
                continue
            moved, limit = float(np.abs(a.astype(np.float64) - start).max()), bound.limit(float(np.abs(start).max()))
            if moved > limit:
                raise BadReply(f"{path}[{k!r}] moved {moved:.3g} from the adapter it was sent; {bound.steps} Adam "
                               f"step(s) at lr {bound.learning_rate:g} move a value at most {limit:.3g} (UpdateBound)")
    return check


def adapter_spec(state: dict) -> dict:
    """``{name: (shape, dtype)}`` of an adapter: what :func:`adapter` compares replies with (``expect["adapter"]``)."""
    return {k: (tuple(np.shape(a)), str(np.asarray(a).dtype)) for k, a in state.items()}


def check_reply(kind: str, payload, ctx: Context, formats: dict[str, Check]) -> None:
    """Raise :class:`BadReply` unless ``payload`` fits the declared reply format of request ``kind``."""
    if not isinstance(payload, dict):
        raise BadReply(f"the reply payload must be a mapping, got {type(payload).__name__}")
    check_plain(payload)
    if kind in formats:
        try:
            formats[kind](payload, ctx, "")
        except BadReply:
            raise
        except Exception as e:  # noqa: BLE001 - a format that fails on a value refuses it: the run goes on
            raise BadReply(f"the {kind!r} reply could not be checked ({type(e).__name__}: {str(e)[:200]})") from None


def examples() -> Check:
    """A client's example count |D_n|: an integer ≥ 1 and, where the run gives the sizes the server knows
    (``ctx.expect["num_examples"]``: the plan in simulation, else the round-0 properties), the sender's known size.
    """
    count = number(lo=1, integer=True)

    def check(v, ctx, path):
        count(v, ctx, path)
        known = ctx.expect.get("num_examples")
        if known is None:
            return
        if ctx.client not in known:
            raise BadReply(f"{path}: the server does not know {ctx.client}'s size (it did not answer the round-0 "
                           "properties message), so its reply cannot be weighed")
        if int(v) != known[ctx.client]:
            raise BadReply(f"{path} claims {int(v)} examples, but the server knows {ctx.client} holds "
                           f"{known[ctx.client]}")
    return check


EXAMPLES = examples()
"""a client's example count: FedAvg's weight, so at least 1 (0 would make the weights sum to zero), and the size the
server knows"""

FIT = record({"adapter": adapter(), "num_examples": EXAMPLES, "metrics": metrics()})
"""the reply to ``fit`` of every adapter-averaging method: its adapter after τ local steps, |D_n|, diagnostics"""

REPLIES: dict[str, Check] = {
    "properties": record({"num_examples": EXAMPLES}, {"reward_names": list_of(text()), "family": text()}),
    "fit": FIT,
}
"""request kind → format of its reply, for the messages every method shares"""
