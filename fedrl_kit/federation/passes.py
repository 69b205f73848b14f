"""The model passes a client's handlers make: sampling, a GRPO step, and scoring given texts.

A handler (``on_fit``, ``on_score``, …) calls these instead of the policy's own functions, and that is all it
does about speed. Alone (sequential mode, the serialising and Flower runtimes) each is exactly the plain call in
its first lines. In a lockstep group (``client_batching="lockstep"``, :mod:`fedrl_kit.federation.lockstep`) the
call waits until every other client of the group waits on a pass too; then one batched pass over all of them
(:mod:`fedrl_kit.speed.batched`) answers each one, and its handler goes on.
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np
import torch

from fedrl_kit.grpo import GRPOSettings
from fedrl_kit.grpo import grpo_step as plain_grpo_step
from fedrl_kit.rollout import Rollouts
from fedrl_kit.sft import sequence_logprob as plain_sequence_logprob

GROUP: ContextVar = ContextVar("fedrl_kit_lockstep_group", default=None)
"""in a lockstep group's client thread: its member, whose ``meet(kind, **call)`` returns the batched pass's
answer for this client (:class:`fedrl_kit.federation.lockstep.Group`); None elsewhere"""


def rollout(policy, adapter: str, prompts: list[str], num_generations: int, seed: int,
            temperature: float | None = None) -> Rollouts:
    """G completions per prompt sampled from ``adapter``: :meth:`~fedrl_kit.policy.engine.Policy.rollout`."""
    member = GROUP.get()
    if member is None:
        return policy.rollout(adapter, prompts, num_generations, seed=seed, temperature=temperature)
    return member.meet("rollout", policy=policy, adapter=adapter, prompts=prompts, num_generations=num_generations,
                       seed=seed, temperature=temperature)


def grpo_step(policy, adapter: str, optimizer: torch.optim.Optimizer, rollouts: Rollouts, rewards: torch.Tensor,
              settings: GRPOSettings, extra_loss=None, on_first_grad=None) -> dict:
    """One GRPO step of ``adapter`` (active, from ``policy.trainable(adapter)``; ``optimizer`` holds its
    parameters) on its rollouts and their [N] rewards: :func:`fedrl_kit.grpo.grpo_step` with π_ref the base."""
    member = GROUP.get()
    if member is None:
        return plain_grpo_step(policy.model, optimizer, rollouts, rewards, settings, ref_model_ctx=policy.reference,
                               extra_loss=extra_loss, on_first_grad=on_first_grad)
    return member.meet("grpo_step", policy=policy, adapter=adapter, optimizer=optimizer, rollouts=rollouts,
                       rewards=rewards, settings=settings, extra_loss=extra_loss, on_first_grad=on_first_grad)


def sequence_logprob(policy, adapter: str, prompts: list[str], completions: list[str]) -> np.ndarray:
    """log π(completion + eos | prompt) under ``adapter`` for each pair: :func:`fedrl_kit.sft.sequence_logprob`."""
    member = GROUP.get()
    if member is None:
        return plain_sequence_logprob(policy, adapter, prompts, completions)
    return member.meet("sequence_logprob", policy=policy, adapter=adapter, prompts=prompts, completions=completions)
