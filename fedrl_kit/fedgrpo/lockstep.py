"""FedGRPO's experts in lockstep: the ``competence`` and ``score`` broadcasts answered as one group.

With ``RunConfig.client_batching = "lockstep"`` the runtime (:class:`~fedrl_kit.federation.lockstep.LockstepRuntime`)
runs the receivers' own :meth:`~fedrl_kit.fedgrpo.client.FedGRPOClient.on_competence` /
:meth:`~fedrl_kit.fedgrpo.client.FedGRPOClient.on_score` together. Each reads the request, decides and logs its gate
λ_k, and asks its evaluator θ_k through the pass functions of :mod:`fedrl_kit.federation.client`; the experts'
evaluator passes run as one batch, each row with its own expert's adapter ``eval_<cid>``
(:func:`~fedrl_kit.speed.batched.per_row_adapters`); each handler then builds its reply (the AE checks, the ME scores, a malicious client's lie) as sequentially. An expert
whose gate needs nothing of θ_k finishes without waiting. What the batch computes, per kind of evaluator work:

- probabilities of (question, answer) pairs, SFT evaluator: ``sequence_logprob`` of every expert's pairs in one
  forward (:func:`~fedrl_kit.speed.batched.sequence_logprob_lockstep`, chunks of 256 rows as sequentially); the
  probabilities equal each expert's own to float tolerance (other padding, other matmul blocks);
- probabilities, GRPO evaluator: the ``evaluator.samples`` sampled answers of every expert's questions in one
  ``generate`` (:func:`~fedrl_kit.speed.batched.generate_lockstep`), each expert drawing from its own generator
  seeded with the seed it uses sequentially (:meth:`~fedrl_kit.fedgrpo.client.DomainModelClient.sampling_plan`);
  the draws are the same, so the samples are too as long as the next-token probabilities agree to the bit that
  decides a draw (a draw within float tolerance of the boundary between two tokens can pick the neighbour; then
  that expert's share for that question differs by one sample);
- greedy answers (``competence="greedy"``, ``me_score="agreement"``): one greedy ``generate``; the same answers
  unless two tokens tie to float tolerance.

An expert's evaluator is trained (once, deterministically) in its own turn, before its first pass, in message
order. Failure isolation is the runtime's (:mod:`fedrl_kit.federation.lockstep`).
"""

from __future__ import annotations

from fedrl_kit.federation.lockstep import GROUPED

LOCKSTEP = {"competence": GROUPED, "score": GROUPED}
"""FedGRPO's ``MethodSpec.lockstep``"""
