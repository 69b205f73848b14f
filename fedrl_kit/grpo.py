"""GRPO core: group-relative advantages, the clipped surrogate, k3 KL, and one optimisation step.

PubSwap's notation (eqs. 1–2), TRL's names for the knobs, TRL's formulas::

    Â_i = (r_i − mean(r_1..r_G)) / (std(r_1..r_G) + 1e-4)          eq. 1, scale_rewards="group" (unbiased std)
    ρ_t = π_θ(o_t|q,o_<t) / π_old(o_t|q,o_<t)
    ℓ_t = −min(ρ_t Â, clip(ρ_t, 1 − epsilon, 1 + epsilon_high) Â) + beta · KL_t          eq. 2 (DAPO's clip-higher)
    KL_t = exp(ref_t − logp_t) − (ref_t − logp_t) − 1              k3; the reference is the base (adapter off)
    dapo:  Σ_{i,t} ℓ_{i,t} / Σ_i |o_i|                              every completion token of the batch weighs the same
    grpo:  (1/N) Σ_i (1/|o_i|) Σ_t ℓ_{i,t}                          per completion, then over completions

:func:`grpo_step` runs ``num_iterations`` epochs over one batch, one optimiser step each (micro-batches only bound
memory); log-probs come from ``GRPOSettings.score`` (:func:`fedrl_kit.rollout.per_token_logps` by default).
"""

from __future__ import annotations

import torch

from fedrl_kit.rollout import Rollouts, per_token_logps
from fedrl_kit.settings import LOSS_TYPES, SCALE_REWARDS, GRPOSettings, check_choice  # noqa: F401 - re-exported


def group_advantages(rewards: torch.Tensor, num_generations: int, scale_rewards: str = "group") -> torch.Tensor:
    """Group-relative advantages (PubSwap eq. 1; TRL's formula).

    Args:
        rewards: [N] scalar rewards, N = B·G, prompt-major (each prompt's G rewards contiguous).
        num_generations, scale_rewards: G; ``"group"`` | ``"batch"`` | ``"none"``.

    Returns:
        [N] advantages.
    """
    check_choice("scale_rewards", scale_rewards)
    if rewards.ndim != 1 or rewards.numel() % num_generations:
        raise ValueError(f"rewards must be 1-D with a multiple of num_generations={num_generations} entries, "
                         f"got shape {tuple(rewards.shape)}")
    grouped = rewards.view(-1, num_generations)  # [B, G]
    mean = grouped.mean(dim=1).repeat_interleave(num_generations)  # [N]
    adv = rewards - mean  # [N]
    if scale_rewards == "group":
        std = grouped.std(dim=1).repeat_interleave(num_generations) if num_generations > 1 else torch.zeros_like(rewards)
        adv = adv / (std + 1e-4)
    elif scale_rewards == "batch":
        std = rewards.std() if rewards.numel() > 1 else torch.zeros(())
        adv = adv / (std + 1e-4)
    return adv


def zero_variance_fraction(rewards: torch.Tensor, num_generations: int) -> float:
    """Fraction of groups whose G rewards are all equal (their advantages vanish)."""
    grouped = rewards.view(-1, num_generations)  # [B, G]
    return (grouped.max(dim=1).values == grouped.min(dim=1).values).float().mean().item()


def grpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    beta: float = 0.0,
    ref_logps: torch.Tensor | None = None,
    loss_type: str = "dapo",
) -> tuple[torch.Tensor, dict]:
    """The clipped surrogate of PubSwap eq. 2 with optional k3 KL; returns the loss and diagnostics.

    Args:
        logps: [N, T] log π_θ of the completion tokens (with grad).
        old_logps: [N, T] log π_old (the policy that sampled; no grad).
        advantages: [N] one advantage per completion, broadcast over its tokens.
        mask: [N, T] 1 on completion tokens.
        epsilon, epsilon_high: clip range (1 − epsilon, 1 + epsilon_high); epsilon_high defaults to epsilon.
        beta: KL coefficient; 0 disables the KL term.
        ref_logps: [N, T] log π_ref, needed when beta > 0.
        loss_type: ``"dapo"`` or ``"grpo"`` (TRL's names; the module docstring has both formulas).

    Returns:
        (scalar loss, dict of floats: clip_fraction, kl, ratio_mean).
    """
    check_choice("loss_type", loss_type)
    if beta > 0 and ref_logps is None:
        raise ValueError("ref_logps is required when beta > 0")
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    mask = mask.to(logps.dtype)  # [N, T]
    adv = advantages.to(logps.device).unsqueeze(1)  # [N, 1]; rewards are computed on the CPU
    ratio = torch.exp(logps - old_logps)  # [N, T]
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high)  # [N, T]
    per_token = -torch.min(ratio * adv, clipped * adv)  # [N, T]
    kl = torch.zeros_like(logps)
    if beta > 0:
        diff = ref_logps - logps  # [N, T]
        kl = torch.exp(diff) - diff - 1  # [N, T] k3 estimator
        per_token = per_token + beta * kl
    if loss_type == "dapo":
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1)
    else:
        loss = ((per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)).mean()
    with torch.no_grad():
        is_clipped = ((ratio < 1 - epsilon) & (adv < 0)) | ((ratio > 1 + epsilon_high) & (adv > 0))  # [N, T]
        n_tok = mask.sum().clamp(min=1)
        diag = dict(
            clip_fraction=((is_clipped.to(mask.dtype) * mask).sum() / n_tok).item(),
            kl=((kl * mask).sum() / n_tok).item(),
            ratio_mean=((ratio * mask).sum() / n_tok).item(),
        )
    return loss, diag


def grpo_step(model, optimizer, rollouts: Rollouts, rewards: torch.Tensor, settings: GRPOSettings,
              advantages: torch.Tensor | None = None, ref_model_ctx=None, extra_loss=None,
              old_logps: torch.Tensor | None = None, on_first_grad=None) -> dict:
    """One GRPO step on a batch of rollouts: advantages, π_old, π_ref, then ``num_iterations`` epochs.

    Args:
        model, optimizer: the policy (its active adapter is trained) and the optimiser over that adapter.
        rollouts: N = B·G completions.
        rewards: [N] scalar rewards (unused for the advantage when ``advantages`` is given).
        settings: :class:`GRPOSettings`.
        advantages: [N] precomputed advantages (FedGRPO, FedMOA build their own).
        ref_model_ctx: zero-argument callable → context manager under which the model is π_ref (beta > 0).
        extra_loss: optional zero-argument callable added to the loss (FedProx's proximal term).
        old_logps: [N, T] π_old for rows another policy sampled (PubSwap's swapped-in responses); default: the
            current policy's scores in the first epoch.
        on_first_grad: optional callable given the parameters after the first epoch's backward (drift probe).

    Returns:
        Diagnostics: loss, clip_fraction, kl, reward_mean, reward_std, frac_zero_std, completion_length.
    """
    G = rollouts.num_generations
    mask = rollouts.completion_mask  # [N, T]
    if advantages is None:
        advantages = group_advantages(rewards, G, settings.scale_rewards)  # [N]
    mb = settings.micro_batch_size
    score = settings.score or per_token_logps
    # π_old = the policy that sampled. Unless given (off-policy rows), it is the current policy before
    # the first update, so the first epoch's own log-probs serve (detached): exact, one forward pass fewer.
    reuse_first_epoch = old_logps is None
    if reuse_first_epoch:
        old_logps = torch.zeros_like(mask, dtype=torch.float32)  # [N, T] filled during epoch 0
    with torch.no_grad():
        ref_logps = None
        if settings.beta > 0:
            if ref_model_ctx is None:
                raise ValueError("beta > 0 needs ref_model_ctx (the policy with its adapter disabled)")
            with ref_model_ctx():
                ref_logps = score(model, rollouts, settings.temperature, mb)  # [N, T]
    model.train()
    diags = []
    n = len(rollouts)
    n_tok_total = mask.sum().clamp(min=1)
    for epoch in range(settings.num_iterations):
        optimizer.zero_grad()
        for s in range(0, n, mb):
            rows = range(s, min(n, s + mb))
            part = rollouts.select(rows) if mb < n else rollouts
            logps = score(model, part, settings.temperature)  # [b, T]
            sl = slice(s, s + mb)
            if reuse_first_epoch and epoch == 0:
                old_logps[sl] = logps.detach()
            loss, diag = grpo_loss(logps, old_logps[sl], advantages[sl], mask[sl], settings.epsilon,
                                   settings.epsilon_high, settings.beta,
                                   None if ref_logps is None else ref_logps[sl], settings.loss_type)
            # micro-batches add up to the full-batch loss: weight by their share of tokens/sequences
            share = (mask[sl].sum() / n_tok_total) if settings.loss_type == "dapo" else (len(rows) / n)
            (loss * share).backward()
            diag["loss"] = loss.item()
            diags.append(diag)
        if extra_loss is not None:
            extra_loss().backward()
        params = [p for g in optimizer.param_groups for p in g["params"]]
        if epoch == 0 and on_first_grad is not None:
            on_first_grad(params)
        torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
        optimizer.step()
    return step_summary(diags, rewards, G, mask)


def step_summary(diags: list[dict], rewards: torch.Tensor, num_generations: int, mask: torch.Tensor) -> dict:
    """A GRPO step's diagnostics: the mean of its micro-batches' loss diagnostics and the batch's reward stats."""
    out = {k: sum(d[k] for d in diags) / len(diags) for k in diags[0]}
    out.update(
        reward_mean=rewards.mean().item(),
        reward_std=rewards.std().item() if rewards.numel() > 1 else 0.0,
        frac_zero_std=zero_variance_fraction(rewards, num_generations),
        completion_length=mask.sum(dim=1).float().mean().item(),
    )
    return out
