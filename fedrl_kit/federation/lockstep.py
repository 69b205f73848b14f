"""Lockstep clients: the in-process runtime runs a broadcast's handlers together, their model passes batched.
Details: docs/performance.md, "Module notes".
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

from fedrl_kit.federation.client import Passes
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message, _Call
from fedrl_kit.speed.batched import generate_lockstep, grpo_step_lockstep, sequence_logprob_lockstep


# -- the batched passes ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batched:
    """How parked calls of one pass kind run together: ``key(call)`` (calls with equal keys share a pass) and
    ``run(calls)`` → each call's answer, in order (what the plain :class:`~fedrl_kit.federation.client.Passes`
    call returns for it, up to batching's float effects)."""

    key: Callable[[dict], tuple]
    run: Callable[[list[dict]], list]


def _rollouts(calls: list[dict]) -> list:
    first = calls[0]
    out = generate_lockstep(first["policy"], {c["adapter"]: c["prompts"] for c in calls}, first["num_generations"],
                            {c["adapter"]: c["seed"] for c in calls}, temperature=first["temperature"])
    return [out[c["adapter"]] for c in calls]


def _grpo_steps(calls: list[dict]) -> list[dict]:
    policy = calls[0]["policy"]
    return grpo_step_lockstep(
        policy.model, [c["adapter"] for c in calls], [c["optimizer"] for c in calls], [c["rollouts"] for c in calls],
        [c["rewards"] for c in calls], calls[0]["settings"], policy.tokenizer.pad_token_id,
        ref_model_ctx=policy.reference, extra_losses=[c["extra_loss"] for c in calls],
        on_first_grads=[c["on_first_grad"] for c in calls])


def _logprobs(calls: list[dict]) -> list:
    out = sequence_logprob_lockstep(calls[0]["policy"], {c["adapter"]: (c["prompts"], c["completions"]) for c in calls})
    return [out[c["adapter"]] for c in calls]


BATCHED: dict[str, Batched] = {
    "rollout": Batched(lambda c: (id(c["policy"]), c["num_generations"],
                                  c["policy"].temperature if c["temperature"] is None else c["temperature"]),
                       _rollouts),
    "grpo_step": Batched(lambda c: (id(c["policy"]), c["settings"]), _grpo_steps),
    "sequence_logprob": Batched(lambda c: (id(c["policy"]),), _logprobs),
}
"""pass kind (a method of :class:`~fedrl_kit.federation.client.Passes`) → how its parked calls run as one"""


def batches(asked: list[tuple[int, str, dict]]) -> list[tuple[str, list[tuple[int, dict]]]]:
    """The batched passes for the parked calls ``asked`` ((member, kind, call), in member order): calls of one kind
    with equal keys and distinct adapters share a pass; passes in the order of their first member."""
    out: list[tuple[str, tuple, list]] = []
    for k, kind, call in asked:
        key = BATCHED[kind].key(call)
        for pass_kind, pass_key, members in out:
            if pass_kind == kind and pass_key == key and all(c["adapter"] != call["adapter"] for _, c in members):
                members.append((k, call))
                break
        else:
            out.append((kind, key, [(k, call)]))
    return [(kind, members) for kind, _, members in out]


# -- a group of handlers -----------------------------------------------------------------------------------------------


class Group:
    """Zero-argument functions (client handlers) run as one lockstep group (docs/performance.md, "Module notes").

    ``clients[k]``, when given, is the client whose handler ``fns[k]`` runs: while the group runs, its ``passes``
    are the group's (:class:`GroupPasses`). ``passes`` logs each batched pass: (kind, member indices).
    """

    def __init__(self, fns: list[Callable[[], object]], names: list[str] | None = None, clients: list | None = None):
        names = names or [f"lockstep member {k}" for k in range(len(fns))]
        self.clients = list({id(c): c for c in clients or () if c is not None}.values())
        self.calls = [_Call(partial(self._member, k, fn), name) for k, (fn, name) in enumerate(zip(fns, names))]
        self._member_index = threading.local()  # in a member's thread: its index
        self.passes: list[tuple[str, list[int]]] = []
        self._cond = threading.Condition()
        self._turn: int | None = None  # the member allowed to run; None: the group's own thread
        self._asked: dict[int, tuple[str, dict]] = {}
        self._answers: dict[int, tuple[bool, object]] = {}
        self._finished: set[int] = set()

    def _wait_for(self, ready: Callable[[], bool]) -> None:
        """Wait (holding the condition) until ``ready()``; in short waits, so an abandoned thread stops."""
        while not ready():
            self._cond.wait(0.05)

    def _member(self, k: int, fn: Callable[[], object]):
        with self._cond:
            self._wait_for(lambda: self._turn == k)
        self._member_index.k = k
        try:
            return fn()
        finally:
            with self._cond:
                self._finished.add(k)
                self._turn = None
                self._cond.notify_all()

    def meet(self, kind: str, call: dict):
        """The calling member parks on a pass; returns its answer once the group has run it (or raises its error)."""
        k = self._member_index.k
        with self._cond:
            self._asked[k] = (kind, call)
            self._turn = None
            self._cond.notify_all()
            self._wait_for(lambda: self._turn == k)
            ok, value = self._answers.pop(k)
        if not ok:
            raise RuntimeError(f"the batched {kind} of this client's lockstep group failed: {value}") from value
        return value

    def _resume(self, k: int) -> None:
        with self._cond:
            self._turn = k
            self._cond.notify_all()
            self._wait_for(lambda: self._turn is None)

    def run(self) -> list[_Call]:
        """Run the group to its end; each member's finished :class:`~fedrl_kit.federation.runtime._Call` (its
        ``result`` or ``error``), in order."""
        own = [c.__dict__.get("passes") for c in self.clients]  # any passes of their own come back at the end
        for c in self.clients:
            c.passes = GroupPasses(self)
        for call in self.calls:
            call.thread.start()
        ended = False
        try:
            while True:
                for k in range(len(self.calls)):
                    if k not in self._finished:
                        self._resume(k)  # it runs until it parks on a pass or finishes
                asked = sorted((k, kind, call) for k, (kind, call) in self._asked.items())
                if not asked:
                    break
                self._asked.clear()
                for kind, members in batches(asked):
                    self.passes.append((kind, [k for k, _ in members]))
                    try:
                        answers = [(True, a) for a in BATCHED[kind].run([c for _, c in members])]
                    except Exception as e:  # noqa: BLE001 - raised in each member's handler (meet)
                        answers = [(False, e)] * len(members)
                    self._answers.update({k: a for (k, _), a in zip(members, answers)})
            ended = True
        finally:  # abandoned (timeout, Ctrl-C): stop the members too; end only when they have
            for call in self.calls:
                if not ended and not call.done.is_set():
                    call.abandon()
            for call in self.calls:
                call.done.wait()
            for c, passes in zip(self.clients, own):
                if passes is None:
                    del c.passes
                else:
                    c.passes = passes
        return self.calls


class GroupPasses(Passes):
    """The passes of a group's clients: each call parks the calling member's thread until the group has run it,
    batched with the other members' calls (:data:`BATCHED`), and returns that member's answer."""

    def __init__(self, group: Group):
        self.group = group

    def meet(self, kind: str, **call):
        return self.group.meet(kind, call)

    def rollout(self, policy, adapter, prompts, num_generations, seed, temperature=None):
        return self.meet("rollout", policy=policy, adapter=adapter, prompts=prompts, num_generations=num_generations,
                         seed=seed, temperature=temperature)

    def grpo_step(self, policy, adapter, optimizer, rollouts, rewards, settings, extra_loss=None, on_first_grad=None):
        return self.meet("grpo_step", policy=policy, adapter=adapter, optimizer=optimizer, rollouts=rollouts,
                         rewards=rewards, settings=settings, extra_loss=extra_loss, on_first_grad=on_first_grad)

    def sequence_logprob(self, policy, adapter, prompts, completions):
        return self.meet("sequence_logprob", policy=policy, adapter=adapter, prompts=prompts, completions=completions)


def together(fns: list[Callable[[], object]], clients: list) -> list:
    """Run ``fns`` (e.g. ``functools.partial(client.on_fit, round, payload)``), the handlers of ``clients``, as one
    lockstep group; their results in order. Raises RuntimeError with the first member's error if any raised."""
    calls = Group(fns, clients=clients).run()
    failed = next((c.error for c in calls if c.error is not None), None)
    if failed is not None:
        raise RuntimeError(failed)
    return [c.result for c in calls]


# -- the runtime -------------------------------------------------------------------------------------------------------


class LockstepRuntime(InProcessRuntime):
    """The in-process runtime, with each broadcast of a kind in ``handlers`` run as a :class:`Group` (docs/performance.md).

    Args:
        kinds: the message kinds whose receivers answer as one group (a method's ``MethodSpec.lockstep``); other
            arguments as :class:`~fedrl_kit.federation.runtime.InProcessRuntime`.

    The ledger holds the same messages in the same order as the sequential runtime's: each message, then its
    reply, client after client. ``passes`` logs every batched pass: (message kind, round, pass kind, client ids).
    """

    def __init__(self, clients, *args, kinds: tuple[str, ...] = (), **kwargs):
        super().__init__(clients, *args, **kwargs)
        self.kinds = set(kinds)
        self.passes: list[tuple[str, int, str, list[str]]] = []

    def broadcast(self, kind: str, round: int, payloads, receivers=None, progress=None):
        messages = self.outgoing(kind, round, payloads, receivers)
        group = [m for m in messages if kind in self.kinds and self._fault(m) is None
                 and m.receiver not in self._abandoned]
        if not group:
            return super().broadcast(kind, round, payloads, receivers, progress)
        outcome = self._run_group(kind, round, group)
        out: dict[str, Message | ClientFailure] = {}
        for m in messages:
            if m.receiver not in outcome:
                out[m.receiver] = self.send(m)
                continue
            how, value, seconds = outcome[m.receiver]
            self._log(m)
            if progress is not None:
                progress(m.receiver, seconds)
            out[m.receiver] = self._fail(m, how, value) if how != "ok" else self._accept(m, value)
        return out

    def _run_group(self, kind: str, round: int, group: list[Message]) -> dict:
        """``group``'s handlers as one contained :class:`Group`: receiver → (outcome, reply or error, seconds)."""
        members = Group([partial(lambda m: self._deliver(m)[0], m) for m in group],
                        [f"client {m.receiver} {kind} r{round} (lockstep)" for m in group],
                        clients=[self._clients[m.receiver] for m in group])
        call = _Call(members.run, name=f"lockstep {kind} r{round} ({len(group)} clients)")
        t0 = time.time()
        limit = self.timeout * len(group) if self.timeout else None
        finished = call.wait(limit)
        seconds = (time.time() - t0) / len(group)
        if not finished:  # each client of the group is busy until the abandoned group stops
            self._abandoned.update({m.receiver: (m, call) for m in group})
            error = (f"ClientTimeout: the lockstep group of {len(group)} clients did not answer {kind!r} within "
                     f"{limit:g} s")
            return {m.receiver: ("timeout", error, seconds) for m in group}
        if call.error is not None:  # the group's own machinery failed: every client in it
            return {m.receiver: ("raised", call.error, seconds) for m in group}
        self.passes.extend((kind, round, pass_kind, [group[k].receiver for k in ks]) for pass_kind, ks in members.passes)
        out = {}
        for m, c in zip(group, call.result):
            if c.error is not None:
                out[m.receiver] = ("bad_reply" if c.error.startswith("BadReply") else "raised", c.error, seconds)
            else:
                out[m.receiver] = ("ok", c.result, seconds)
        return out
