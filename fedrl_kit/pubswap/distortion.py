"""Appendix A.2's off-policy distortion of one client's Balanced public step, from the client's side."""

from __future__ import annotations

import numpy as np
import torch

from fedrl_kit.grpo import group_advantages, grpo_loss
from fedrl_kit.rollout import per_token_logps


def distortion_terms(client, batch: dict, own: list[list[str]], swapped: list[list[str]],
                     replaced: list[list[int]]) -> dict:
    """:func:`off_policy_terms` from a client's side: its own responses ``own`` [b][K], its group after the swap
    ``swapped`` [b][K], and per prompt the slots ``replaced`` (every other slot holds its own response of that
    slot). The client must still hold its ``public_generate`` rollouts (before its public step); what a run's
    public step measures with ``pubswap.trace_off_policy`` (:meth:`~fedrl_kit.pubswap.method.PubSwapClient.off_policy_terms`).
    """
    b, K = len(own), len(own[0]) if own else 0
    grads, M = [], []  # per prompt: the gradients along its chain; its number of replacements
    for x in range(b):
        chain = []
        for s in range(len(replaced[x]) + 1):
            texts = [list(t) for t in own]
            index = [list(range(K)) for _ in own]
            for k in replaced[x][:s]:  # Y^(s): the first s replacements, in slot order
                texts[x][k], index[x][k] = swapped[x][k], -1
            chain.append(_group_gradient(client, batch, texts, index, x))
        grads.append(chain)
        M.append(len(replaced[x]))
    e = sum(chain[-1] - chain[0] for chain in grads) / b
    beta = np.array([max((np.linalg.norm(c[s] - c[s - 1]) for s in range(1, len(c))), default=0.0) for c in grads])
    M = np.array(M)
    return {"omega": float(np.linalg.norm(e)), "beta": beta, "bound": float(np.mean(M * beta)),
            "on_policy": float(np.linalg.norm(sum(c[0] for c in grads) / b)), "M": M, "alpha": M / K}


def _group_gradient(client, batch: dict, texts: list[list[str]], own_index: list[list[int]], x: int) -> np.ndarray:
    """G(x, Y): the gradient of the client's GRPO loss on prompt x's group (rows as its public step builds them)."""
    K = client.local.num_generations
    rollouts = client.swapped_rollouts(texts, own_index).select(range(x * K, (x + 1) * K))  # [K rows]
    scores = client.reward_scores(rollouts, {k: [v[x]] for k, v in batch.items()})  # [K, n_rewards]
    rewards = torch.as_tensor(np.nan_to_num(scores) @ np.asarray(client.reward_set.weights), dtype=torch.float32)
    s, policy = client.grpo, client.policy
    params = policy.trainable(client.cid)
    logps = per_token_logps(policy.model, rollouts, s.temperature)  # [K, T]
    ref = None
    if s.beta > 0:
        with torch.no_grad(), policy.reference():
            ref = per_token_logps(policy.model, rollouts, s.temperature)
    loss, _ = grpo_loss(logps, logps.detach(), group_advantages(rewards, K, s.scale_rewards),
                        rollouts.completion_mask, s.epsilon, s.epsilon_high, s.beta, ref, s.loss_type)
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return np.concatenate([(g if g is not None else torch.zeros_like(p)).detach().double().cpu().numpy().ravel()
                           for g, p in zip(grads, params)])
