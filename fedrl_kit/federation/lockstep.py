"""Lockstep clients: the in-process runtime answers a broadcast's messages in one batched pass.

``RunConfig.client_batching = "lockstep"`` gives the run a :class:`LockstepRuntime`. A broadcast of a kind it has
a :class:`LockstepHandler` for goes, for the clients the handler can take, to that handler as one call; the other
kinds, and the other clients, are answered one by one as in the sequential runtime. The handlers:

- ``fit`` (FedAvg-/FedProx-GRPO, :data:`FIT`): :func:`fit_lockstep`, below;
- ``competence`` and ``score`` (FedGRPO, its ``MethodSpec.lockstep``): every receiving expert's evaluator passes
  in one batch, each row with its own expert's adapter, with the gate, the reply and a malicious client's lie
  per client as in sequential mode (:mod:`fedrl_kit.fedgrpo.lockstep`).

Nothing else runs in lockstep (PubSwap, FedMOA, the FedGRPO baselines, FedGRPO's server step); the config
refuses ``"lockstep"`` for methods without a handler (:data:`fedrl_kit.config.LOCKSTEP_METHODS`).

``fit``: the runtime's ``broadcast("fit", …)`` hands the clients that can step together to
:func:`fit_lockstep`, which does for all of them at once what
:meth:`~fedrl_kit.federation.client.GRPOClient.on_fit` does for one: load the global adapter, then for each
of the τ local steps one ``generate`` over all clients' b·G rows and one GRPO step whose forward/backward
covers every client's rows, each row with its client's adapter (:mod:`fedrl_kit.policy.batched`), then each
client's reply. Every client keeps its own batches, its own sampling stream (the sequential mode's seeds),
its own rewards, its own gradient clipping and its own optimiser; the replies have the sequential format and
pass the same checks (keys, adapter names and shapes, finite values). The Flower runtime and the serialising
runtime stay sequential (one client per message).

What differs from sequential mode, exactly:

- the numbers: each client's completions are drawn from the same random stream as in sequential mode, but
  from next-token probabilities computed in a batch of K·b·G rows instead of b·G; these agree to the last few
  bits, not bit for bit, so a draw very close to a boundary between two tokens may pick the other one, and
  from then on the two modes' runs are different samples of the same distribution. Each mode is
  bit-reproducible on its own (tested). (FedGRPO's probabilities likewise agree to float tolerance:
  :mod:`fedrl_kit.fedgrpo.lockstep`.)
- failure isolation, for every handler: clients with an injected fault for the message, or still busy with an
  abandoned one, are run sequentially as before. The batched group is contained as one call: if it raises,
  every client in it is dropped for the round with that error (reason ``"raised"``), and its deadline is
  ``client_timeout`` × the number of clients in it (reason ``"timeout"`` for all of them). The replies pass
  the same format checks as sequential ones (reason ``"bad_reply"`` per client).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message, _Call, copy_payload
from fedrl_kit.policy.batched import generate_lockstep, grpo_step_lockstep

def fit_lockstep(clients: list[GRPOClient], round: int, payloads: list[dict]) -> list[dict]:
    """The ``fit`` replies of ``clients`` (sharing one policy and settings), computed in lockstep.

    Each reply equals, up to the float effects of batching (module docstring), what ``client.on_fit(round,
    payload)`` returns when the clients run one after another.
    """
    first = clients[0]
    policy, local, grpo = first.policy, first.local, first.grpo
    if any(c.policy is not policy or c.local != local or c.grpo != grpo for c in clients):
        raise ValueError("lockstep clients must share one policy and the same local and GRPO settings")
    names = [c.cid for c in clients]
    started = [c.begin_fit(p) for c, p in zip(clients, payloads)]  # (params, FedProx term) per client
    for params, _ in started:  # activating one adapter froze the others: every client trains in this pass
        for p in params:
            p.requires_grad_(True)
    steps: list[list[dict]] = [[] for _ in clients]
    for s in range(local.local_steps):
        batches = [c.sample_batch(round, s) for c in clients]
        rollouts = generate_lockstep(policy, {c.cid: b["prompt"] for c, b in zip(clients, batches)},
                                     local.num_generations, {c.cid: c.rollout_seed(round, s) for c in clients})
        rewarded = [c.step_rewards(rollouts[c.cid], b) for c, b in zip(clients, batches)]  # (scores, rewards)
        diags = grpo_step_lockstep(
            policy.model, names, [c._optimizer(params, round, s) for c, (params, _) in zip(clients, started)],
            [rollouts[n] for n in names], [rw for _, rw in rewarded], grpo, policy.tokenizer.pad_token_id,
            ref_model_ctx=policy.reference, extra_losses=[extra for _, extra in started],
            on_first_grads=[c.probe.grad_catcher(c.cid) if c.probe else None for c in clients])
        for k, c in enumerate(clients):
            steps[k].append(c.step_done(s, rewarded[k][0], diags[k]))
    return [c.end_fit(params, st) for c, (params, _), st in zip(clients, started, steps)]


def can_lockstep(client) -> bool:
    """A plain GRPO client (its ``fit`` is :meth:`GRPOClient.on_fit`, its step :meth:`GRPOClient.local_step`)."""
    return isinstance(client, GRPOClient) and type(client).on_fit is GRPOClient.on_fit and \
        type(client).local_step is GRPOClient.local_step


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


FIT = LockstepHandler(can_lockstep, fit_lockstep)
"""``fit`` of plain GRPO clients (FedAvg-/FedProx-GRPO): :func:`fit_lockstep`"""


class LockstepRuntime(InProcessRuntime):
    """The in-process runtime, with each broadcast of a kind it has a handler for run in lockstep (module docstring).

    Args:
        handlers: message kind → :class:`LockstepHandler`, added to :data:`FIT` (a method's
            ``MethodSpec.lockstep``: FedGRPO's ``competence`` and ``score``); other arguments as
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
        together = [m.receiver for m in group]
        call = _Call(lambda: handler.answer([self._clients[m.receiver] for m in group], round,
                                            [copy_payload(m.payload) for m in group]),
                     name=f"lockstep {kind} r{round} ({len(group)} clients)")
        t0 = time.time()
        finished = call.wait(self.timeout * len(group) if self.timeout else None)
        replies = dict(zip(together, call.result)) if finished and call.error is None else {}
        if not finished:  # each client of the group is busy until the abandoned call stops
            self._abandoned.update({m.receiver: (m, call) for m in group})
        out: dict[str, Message | ClientFailure] = {}
        for m in messages:
            if m.receiver not in together:
                out[m.receiver] = self.send(m)
                continue
            self._log(m)
            if progress is not None:
                progress(m.receiver, (time.time() - t0) / len(group))
            if not finished:
                out[m.receiver] = self._fail(m, "timeout", f"ClientTimeout: the lockstep group of {len(group)} "
                                             f"clients did not answer {kind!r} within {self.timeout * len(group):g} s")
            elif call.error is not None:
                out[m.receiver] = self._fail(m, "raised", call.error)
            else:
                out[m.receiver] = self._accept(m, Message(f"{kind}_result", m.receiver, m.sender, round,
                                                          copy_payload(replies[m.receiver])))
        return out
