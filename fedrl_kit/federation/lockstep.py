"""Lockstep clients: the in-process runtime runs the step messages of a round as one batched pass.

``RunConfig.client_batching = "lockstep"`` (FedAvg-/FedProx-GRPO, PubSwap, FedMOA) gives the run a
:class:`LockstepRuntime`. A broadcast of a message kind that the receivers' client class has a batched handler
for (:func:`batched`) hands the clients that can step together to that handler, which does for all of them at
once what each one's ``on_<kind>`` does alone, calling the same client methods for everything but the model
passes. The handlers:

=====================================  ==================  ==========================================================
client class                           message             batched handler: one pass for all clients
=====================================  ==================  ==========================================================
:class:`~fedrl_kit.federation.client.  ``fit``             :func:`fit_lockstep`: per local step, one ``generate`` over
GRPOClient` (FedAvg/FedProx-GRPO)                          all clients' b·G rows and one GRPO step (τ steps)
:class:`~fedrl_kit.pubswap.method.     ``private_step``    one ``generate`` + one GRPO step (:func:`local_step_lockstep`)
PubSwapClient`                         ``public_generate`` one ``generate``, each client its own stream
                                       ``public_step``     one GRPO step, each client on its own swapped groups
:class:`~fedrl_kit.fedmoa.client.      ``fit``             per local step, one ``generate`` and one GRPO step on each
MOAClient`                                                 client's r_w; g_k (eq. 8) per client
=====================================  ==================  ==========================================================

Each row carries its client's adapter (:mod:`fedrl_kit.policy.batched`). Every client keeps its own batches,
its own sampling stream (the sequential mode's seeds), its own rewards, its own gradient clipping and its own
optimiser; the replies have the sequential format and pass the same checks (keys, adapter names and shapes,
finite values). Other messages (PubSwap's ``fit_begin``/``fit_end``, ``properties``, evaluation) go one client
after the other as before. A handler serves clients of exactly its class: a subclass may answer the message
otherwise, so it runs sequentially. The Flower runtime and the serialising runtime stay sequential (one client
per message).

What differs from sequential mode, exactly:

- the numbers: each client's completions are drawn from the same random stream as in sequential mode, but
  from next-token probabilities computed in a batch of K·b·G rows instead of b·G; these agree to the last few
  bits, not bit for bit, so a draw very close to a boundary between two tokens may pick the other one, and
  from then on the two modes' runs are different samples of the same distribution. Each mode is
  bit-reproducible on its own (tested).
- failure isolation: clients with an injected fault for the message, or still busy with an abandoned one,
  are run sequentially as before. A batched group is contained as one call: if it raises, every client in
  it is dropped for the round with that error (reason ``"raised"``), and its deadline is ``client_timeout``
  × the number of clients in it (reason ``"timeout"`` for all of them).
"""

from __future__ import annotations

import time
from typing import Callable

from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message, _Call, copy_payload
from fedrl_kit.policy.batched import generate_lockstep, grpo_step_lockstep

Handler = Callable[[list, int, list], list]
"""``handler(clients, round, payloads) -> replies``: one reply payload per client, in order"""

_BATCHED: dict[tuple[type, str], Handler] = {}  # (client class, message kind) → its batched handler


def batched(client_cls: type, kind: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the lockstep handler of ``kind`` messages to ``client_cls`` clients.

    Only clients of exactly ``client_cls`` are served (a subclass may answer ``kind`` otherwise).
    """
    def register(fn: Handler) -> Handler:
        _BATCHED[(client_cls, kind)] = fn
        return fn
    return register


def lockstep_handler(client, kind: str) -> Handler | None:
    """The batched handler of ``kind`` messages for ``client``, or None when it answers them on its own."""
    return _BATCHED.get((type(client), kind))


def can_lockstep(client, kind: str = "fit") -> bool:
    """Whether ``client``'s ``kind`` messages can run in lockstep (its exact class registered a handler)."""
    return lockstep_handler(client, kind) is not None


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


@batched(GRPOClient, "fit")
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


class LockstepRuntime(InProcessRuntime):
    """The in-process runtime, with each broadcast of a batched message kind run in lockstep (module docstring).

    The ledger holds the same messages in the same order as the sequential runtime's: each message, then its
    reply, client after client.
    """

    def broadcast(self, kind: str, round: int, payloads, receivers=None, progress=None):
        messages = self.outgoing(kind, round, payloads, receivers)
        groups: dict[Handler, list[Message]] = {}  # batched handler → the messages it answers together
        for m in messages:
            handler = lockstep_handler(self._clients[m.receiver], kind)
            if handler is not None and self._fault(m) is None and m.receiver not in self._abandoned:
                groups.setdefault(handler, []).append(m)
        if not groups:
            return super().broadcast(kind, round, payloads, receivers, progress)
        outcome = {}  # receiver → ("ok", its reply payload) or (failure reason, error), and seconds per client
        for handler, group in groups.items():
            outcome.update(self._run_group(handler, kind, round, group))
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

    def _run_group(self, handler: Handler, kind: str, round: int, group: list[Message]) -> dict:
        """One contained call of ``handler`` for ``group``: receiver → (outcome, reply payload or error, seconds)."""
        call = _Call(lambda: handler([self._clients[m.receiver] for m in group], round,
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
