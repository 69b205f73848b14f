"""FedGRPO's expert scoring in lockstep: the ``competence`` and ``score`` broadcasts of a step in one batched pass.

With ``RunConfig.client_batching = "lockstep"`` the runtime (:class:`~fedrl_kit.federation.lockstep.LockstepRuntime`)
hands the receivers of a ``competence`` or ``score`` broadcast to :data:`COMPETENCE` / :data:`SCORE`. Each client's
handler is split around its evaluator θ_k (:class:`~fedrl_kit.fedgrpo.client.ReplyPlan`):

1. per client, as in sequential mode: :meth:`~fedrl_kit.fedgrpo.client.FedGRPOClient.competence_plan` /
   :meth:`~fedrl_kit.fedgrpo.client.FedGRPOClient.score_plan` read the request, decide the gate λ_k and log it,
   and say what θ_k must compute (an :class:`~fedrl_kit.fedgrpo.client.EvaluatorQuery`);
2. for all clients at once: :func:`evaluate_lockstep` — one batched pass over every client's rows, each row with
   its own client's adapter ``eval_<cid>`` (:func:`~fedrl_kit.speed.batched.per_row_adapters`);
3. per client, as in sequential mode: the plan's ``finish`` builds the reply (the AE checks, the ME scores, a
   malicious client's lie), which the runtime checks against the reply format.

Sequential mode runs the same plans with :meth:`~fedrl_kit.fedgrpo.client.DomainModelClient.evaluate`, one client
alone, so the client logic exists once. What the batched pass computes, per kind of evaluator work:

- probabilities of (question, answer) pairs, SFT evaluator: ``sequence_logprob`` of every client's pairs in one
  forward (:func:`~fedrl_kit.speed.batched.sequence_logprob_lockstep`, chunks of 256 rows as sequentially); the
  probabilities equal each client's own to float tolerance (other padding, other matmul blocks);
- probabilities, GRPO evaluator: the ``evaluator.samples`` sampled answers of every client's questions in one
  ``generate`` (:func:`~fedrl_kit.speed.batched.generate_lockstep`), each client drawing from its own generator
  seeded with the seed it uses sequentially (:meth:`~fedrl_kit.fedgrpo.client.DomainModelClient.sampling_plan`);
  the draws are the same, so the samples are too as long as the next-token probabilities agree to the bit that
  decides a draw (a draw within float tolerance of the boundary between two tokens can pick the neighbour; then
  that client's share for that question differs by one sample);
- greedy answers (``competence="greedy"``, ``me_score="agreement"``): one greedy ``generate``; the same answers
  unless two tokens tie to float tolerance.

Each client's evaluator is trained (once, deterministically) before the pass, in message order. Failure isolation
is the runtime's: a client with an injected fault or still busy runs sequentially; if the batched call raises, every
client of the group is dropped for the round with that error.
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.fedgrpo.client import DomainModelClient, EvaluatorQuery, FedGRPOClient, _answers
from fedrl_kit.federation.lockstep import LockstepHandler
from fedrl_kit.speed.batched import generate_lockstep, sequence_logprob_lockstep

_SPLIT = ("on_competence", "on_score", "competence_plan", "score_plan", "me_plan", "evaluate", "answer",
          "answer_probabilities", "sampling_plan", "sampled_shares", "greedy_answers", "ensure_evaluator")
"""the methods whose FedGRPOClient versions the lockstep path stands in for"""


def can_lockstep(client) -> bool:
    """A FedGRPO client whose handlers and evaluator are :class:`FedGRPOClient`'s own (none replaced)."""
    return isinstance(client, FedGRPOClient) and not set(_SPLIT) & set(vars(client)) and \
        all(getattr(type(client), name) is getattr(FedGRPOClient, name) for name in _SPLIT)


def evaluate_lockstep(clients: list[DomainModelClient], queries: list[EvaluatorQuery | None]) -> list:
    """What ``client.evaluate(query)`` returns for each client, the evaluator passes of all in one batch per kind.

    Args:
        clients: the clients, sharing one policy and one ``evaluator`` setting.
        queries: each client's :class:`EvaluatorQuery`, or None (it needs nothing of θ_k).

    Returns:
        Per client: None, its greedy answers (a list) or its probabilities ([n]), as
        :meth:`~fedrl_kit.fedgrpo.client.DomainModelClient.evaluate` (module docstring: what may differ).
    """
    policy, ev = clients[0].policy, clients[0].evaluator
    if any(c.policy is not policy or c.evaluator != ev for c in clients):
        raise ValueError("lockstep experts must share one policy and the same evaluator settings")
    for c, q in zip(clients, queries):
        if q is not None:
            c.ensure_evaluator()  # as evaluate() does, before anything is asked of θ_k
    out: list = [None if q is None else [] if q.answers is None else np.zeros(0) for q in queries]
    asked = [(k, c, q) for k, (c, q) in enumerate(zip(clients, queries)) if q is not None and q.questions]
    greedy = [(k, c, q) for k, c, q in asked if q.answers is None]
    if greedy:  # greedy_answers: temperature 0, one completion per question
        rolled = generate_lockstep(policy, {c.adapter: list(q.questions) for _, c, q in greedy}, 1, None,
                                   temperature=0.0)
        for k, c, _ in greedy:
            out[k] = _answers(rolled[c.adapter].completions)
    scored = [(k, c, q) for k, c, q in asked if q.answers is not None]
    if scored and ev.training == "sft":  # answer_probabilities of an SFT evaluator: π_θk(a + eos | x)
        logp = sequence_logprob_lockstep(policy, {c.adapter: (list(q.questions), list(q.answers))
                                                  for _, c, q in scored})
        for k, c, _ in scored:
            out[k] = np.exp(logp[c.adapter])  # [n_k]
    elif scored:  # of a GRPO evaluator: the share of its sampled answers, each client with its own seed
        plans = {c.adapter: c.sampling_plan(q.questions) for _, c, q in scored}
        rolled = generate_lockstep(policy, {a: distinct for a, (distinct, _) in plans.items()}, ev.samples,
                                   {a: seed for a, (_, seed) in plans.items()})
        for k, c, q in scored:
            out[k] = c.sampled_shares(q.questions, q.answers, plans[c.adapter][0], rolled[c.adapter].completions)
    return out


def _answer_together(kind: str):
    """The lockstep answer to ``kind``: each client's ``<kind>_plan``, one batched evaluation, each plan finished."""

    def answer(clients: list[FedGRPOClient], round: int, payloads: list[dict]) -> list[dict]:
        plans = [getattr(c, f"{kind}_plan")(round, p) for c, p in zip(clients, payloads)]
        results = evaluate_lockstep(clients, [p.query for p in plans])
        return [p.finish(r) for p, r in zip(plans, results)]

    return answer


COMPETENCE = LockstepHandler(can_lockstep, _answer_together("competence"))
"""Algorithm 1 line 8 for every receiver of a ``competence`` broadcast at once"""
SCORE = LockstepHandler(can_lockstep, _answer_together("score"))
"""Algorithm 1 lines 13–16 for every expert of a ``score`` broadcast at once"""
LOCKSTEP = {"competence": COMPETENCE, "score": SCORE}
"""FedGRPO's ``MethodSpec.lockstep``"""
