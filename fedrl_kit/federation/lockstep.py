"""Lockstep clients: the in-process runtime answers a broadcast's messages in one batched pass.

``RunConfig.client_batching = "lockstep"`` gives the run a :class:`LockstepRuntime`. A broadcast of a message kind
it has a :class:`LockstepHandler` for goes, for the clients the handler can take, to that handler as one call,
which does for all of them at once what each one's ``on_<kind>`` does alone, calling the same client methods for
everything but the model passes; the other kinds, and the other clients, are answered one by one as in the
sequential runtime. :data:`FIT` is built in; a method adds or replaces handlers in its ``MethodSpec.lockstep``:

=====================================  ======================  ==========================================================
method (client class)                  message                 batched handler: one pass for all clients
=====================================  ======================  ==========================================================
FedAvg-/FedProx-GRPO                   ``fit``                 :func:`fit_lockstep`: per local step, one ``generate``
(:class:`~fedrl_kit.federation.                                over all clients' b·G rows and one GRPO step (τ steps)
client.GRPOClient`)
PubSwap                                ``private_step``        one ``generate`` + one GRPO step (:func:`local_step_lockstep`)
(:class:`~fedrl_kit.pubswap.method.    ``public_generate``     one ``generate``, each client its own stream
PubSwapClient`)                        ``public_step``         one GRPO step, each client on its own swapped groups
FedMOA                                 ``fit``                 per local step, one ``generate`` and one GRPO step on each
(:class:`~fedrl_kit.fedmoa.client.                             client's r_w; g_k (eq. 8) per client
MOAClient`)
FedGRPO                                ``competence``,         every receiving expert's evaluator passes in one batch,
(:class:`~fedrl_kit.fedgrpo.client.    ``score``               the gate, the reply and a malicious client's lie per
FedGRPOClient`)                                                client (:mod:`fedrl_kit.fedgrpo.lockstep`)
=====================================  ======================  ==========================================================

Each row carries its client's adapter (:mod:`fedrl_kit.speed.batched`). Every client keeps its own batches, its own
sampling stream (the sequential mode's seeds), its own rewards, its own gradient clipping and its own optimiser; the
replies have the sequential format and pass the same checks (keys, adapter names and shapes, finite values). Other
messages (PubSwap's ``fit_begin``/``fit_end``, ``properties``, evaluation) and the other methods (the FedGRPO
baselines, FedGRPO's server step, Central-GRPO) run as before; the config refuses ``"lockstep"`` for methods without
a handler (:data:`fedrl_kit.config.LOCKSTEP_METHODS`). A handler takes clients of exactly its class: a subclass may
answer the message otherwise, so it runs sequentially. The Flower runtime and the serialising runtime stay
sequential (one client per message).

What differs from sequential mode, exactly:

- the numbers: each client's completions are drawn from the same random stream as in sequential mode, but
  from next-token probabilities computed in a batch of K·b·G rows instead of b·G; these agree to the last few
  bits, not bit for bit, so a draw very close to a boundary between two tokens may pick the other one, and
  from then on the two modes' runs are different samples of the same distribution. Each mode is
  bit-reproducible on its own (tested). (FedGRPO's probabilities likewise agree to float tolerance:
  :mod:`fedrl_kit.fedgrpo.lockstep`.)
- failure isolation, for every handler: clients with an injected fault for the message, or still busy with an
  abandoned one, are run sequentially as before. The batched group is contained as one call: if it raises (or
  returns another number of replies than it has clients), every client in it is dropped for the round with that
  error (reason ``"raised"``), and its deadline is ``client_timeout`` × the number of clients in it (reason
  ``"timeout"`` for all of them). The replies pass the same format checks as sequential ones (reason
  ``"bad_reply"`` per client).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message, _Call, copy_payload
from fedrl_kit.speed.batched import generate_lockstep, grpo_step_lockstep


@dataclass(frozen=True)
class LockstepHandler:
    """How the clients of one message kind answer together.

    ``can(client)``: whether this client can answer in the group (else it answers alone, as in sequential mode);
    ``answer(clients, round, payloads)``: the reply payloads of ``clients`` to their ``payloads``, in order — what
    each client's ``on_<kind>(round, payload)`` returns when they run one after another, up to batching's float
    effects.
    """

    can: Callable[[object], bool]
    answer: Callable[[list, int, list[dict]], list[dict]]


def exactly(client_cls: type) -> Callable[[object], bool]:
    """``can`` for a handler written for ``client_cls``: clients of exactly that class (a subclass may answer the
    message otherwise, so it runs sequentially)."""
    return lambda client: type(client) is client_cls


def shared_setup(clients: list[GRPOClient]):
    """(policy, local settings, GRPO settings) that lockstep ``clients`` share; ValueError if they do not."""
    first = clients[0]
    policy, local, grpo = first.policy, first.local, first.grpo
    if any(c.policy is not policy or c.local != local or c.grpo != grpo for c in clients):
        raise ValueError("lockstep clients must share one policy and the same local and GRPO settings")
    return policy, local, grpo


def grad_catchers(clients: list[GRPOClient]) -> list:
    """Each client's drift-probe gradient callback (None without a probe), as its sequential step passes it."""
    return [c.probe.grad_catcher(c.cid) if c.probe else None for c in clients]


def private_rollouts_lockstep(clients: list[GRPOClient], round: int, step: int) -> tuple[list[dict], list]:
    """Each client's private batch of (round, step) and its G completions per prompt, all from one ``generate``.

    Returns:
        (the clients' batches, their :class:`~fedrl_kit.rollout.Rollouts`), in the clients' order; each client
        samples from its sequential stream (:meth:`GRPOClient.rollout_seed`).
    """
    policy, local, _ = shared_setup(clients)
    batches = [c.sample_batch(round, step) for c in clients]
    rollouts = generate_lockstep(policy, {c.cid: b["prompt"] for c, b in zip(clients, batches)},
                                 local.num_generations, {c.cid: c.rollout_seed(round, step) for c in clients})
    return batches, [rollouts[c.cid] for c in clients]


def local_step_lockstep(clients: list[GRPOClient], round: int, step: int, params: list[list],
                        extra_losses: list | None = None) -> list[dict]:
    """:meth:`GRPOClient.local_step` of every client at once: one ``generate``, one GRPO step.

    Args:
        clients: clients sharing one policy and settings.
        round, step: the round (1-based) and local step (0-based).
        params: each client's trainable parameters (its optimiser's).
        extra_losses: per client, None or its FedProx term.

    Returns:
        Per client, the step's diagnostics (after :meth:`GRPOClient.step_done`).
    """
    policy, _, grpo = shared_setup(clients)
    batches, rollouts = private_rollouts_lockstep(clients, round, step)
    rewarded = [c.step_rewards(r, b) for c, r, b in zip(clients, rollouts, batches)]  # (scores, rewards)
    diags = grpo_step_lockstep(
        policy.model, [c.cid for c in clients], [c._optimizer(p, round, step) for c, p in zip(clients, params)],
        rollouts, [rw for _, rw in rewarded], grpo, policy.tokenizer.pad_token_id,
        ref_model_ctx=policy.reference, extra_losses=extra_losses, on_first_grads=grad_catchers(clients))
    return [c.step_done(step, scores, d) for c, (scores, _), d in zip(clients, rewarded, diags)]


def fit_lockstep(clients: list[GRPOClient], round: int, payloads: list[dict]) -> list[dict]:
    """The ``fit`` replies of ``clients`` (sharing one policy and settings), computed in lockstep.

    Each reply equals, up to the float effects of batching (module docstring), what ``client.on_fit(round,
    payload)`` returns when the clients run one after another.
    """
    _, local, _ = shared_setup(clients)
    started = [c.begin_fit(p) for c, p in zip(clients, payloads)]  # (params, FedProx term) per client
    params = [ps for ps, _ in started]
    steps: list[list[dict]] = [[] for _ in clients]
    for s in range(local.local_steps):
        for k, diag in enumerate(local_step_lockstep(clients, round, s, params, [extra for _, extra in started])):
            steps[k].append(diag)
    return [c.end_fit(ps, st) for c, ps, st in zip(clients, params, steps)]


def can_lockstep(client) -> bool:
    """A plain GRPO client (its ``fit`` is :meth:`GRPOClient.on_fit`, its step :meth:`GRPOClient.local_step`)."""
    return isinstance(client, GRPOClient) and type(client).on_fit is GRPOClient.on_fit and \
        type(client).local_step is GRPOClient.local_step


FIT = LockstepHandler(can_lockstep, fit_lockstep)
"""``fit`` of plain GRPO clients (FedAvg-/FedProx-GRPO): :func:`fit_lockstep`"""


class LockstepRuntime(InProcessRuntime):
    """The in-process runtime, with each broadcast of a kind it has a handler for run in lockstep (module docstring).

    Args:
        handlers: message kind → :class:`LockstepHandler`, added to (or, for ``fit``, replacing) :data:`FIT`: a
            method's ``MethodSpec.lockstep``; other arguments as
            :class:`~fedrl_kit.federation.runtime.InProcessRuntime`.

    The ledger holds the same messages in the same order as the sequential runtime's: each message, then its
    reply, client after client.
    """

    def __init__(self, clients, *args, handlers: dict[str, LockstepHandler] | None = None, **kwargs):
        super().__init__(clients, *args, **kwargs)
        self.handlers = {"fit": FIT, **(handlers or {})}

    def broadcast(self, kind: str, round: int, payloads, receivers=None, progress=None):
        messages = self.outgoing(kind, round, payloads, receivers)
        handler = self.handlers.get(kind)
        group = [m for m in messages if handler is not None and handler.can(self._clients[m.receiver])
                 and self._fault(m) is None and m.receiver not in self._abandoned]
        if not group:
            return super().broadcast(kind, round, payloads, receivers, progress)
        outcome = self._run_group(handler, kind, round, group)
        out: dict[str, Message | ClientFailure] = {}
        for m in messages:
            if m.receiver not in outcome:
                out[m.receiver] = self.send(m)
                continue
            how, value, seconds = outcome[m.receiver]
            self._log(m)
            if progress is not None:
                progress(m.receiver, seconds)
            out[m.receiver] = self._fail(m, how, value) if how != "ok" else \
                self._accept(m, Message(f"{kind}_result", m.receiver, m.sender, round, copy_payload(value)))
        return out

    def _run_group(self, handler: LockstepHandler, kind: str, round: int, group: list[Message]) -> dict:
        """One contained call of ``handler`` for ``group``: receiver → (outcome, reply payload or error, seconds)."""
        call = _Call(lambda: handler.answer([self._clients[m.receiver] for m in group], round,
                                            [copy_payload(m.payload) for m in group]),
                     name=f"lockstep {kind} r{round} ({len(group)} clients)")
        t0 = time.time()
        limit = self.timeout * len(group) if self.timeout else None
        finished = call.wait(limit)
        seconds = (time.time() - t0) / len(group)
        if not finished:  # each client of the group is busy until the abandoned call stops
            self._abandoned.update({m.receiver: (m, call) for m in group})
            error = (f"ClientTimeout: the lockstep group of {len(group)} clients did not answer {kind!r} within "
                     f"{limit:g} s")
            return {m.receiver: ("timeout", error, seconds) for m in group}
        error = call.error
        if error is None and len(call.result) != len(group):
            error = f"the lockstep handler of {kind!r} gave {len(call.result)} replies for {len(group)} clients"
        if error is not None:
            return {m.receiver: ("raised", error, seconds) for m in group}
        return {m.receiver: ("ok", reply, seconds) for m, reply in zip(group, call.result)}
