"""Supervised fine-tuning of a LoRA adapter on (prompt, completion) pairs, loss on completion tokens only."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.rollout import LOGITS_BYTES, row_chunks  # noqa: F401 - LOGITS_BYTES: the budget, patchable here
from fedrl_kit.rollout import render_prompts


def sft_batch(tokenizer, prompts: list[str], completions: list[str], chat: bool = False):
    """Right-padded ``prompt + completion + eos`` with labels only on completion tokens.

    Returns:
        (input_ids [B, L], attention_mask [B, L], labels [B, L]) long tensors.
    """
    if len(prompts) != len(completions) or not prompts:
        raise ValueError(f"prompts and completions must be non-empty and aligned, got {len(prompts)} and "
                         f"{len(completions)}")
    seqs, labels = [], []
    for p, c in zip(render_prompts(tokenizer, list(prompts), chat), completions):
        p_ids = tokenizer(p, add_special_tokens=False)["input_ids"]
        c_ids = tokenizer(c, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        seqs.append(p_ids + c_ids)
        labels.append([-100] * len(p_ids) + c_ids)
    L = max(map(len, seqs))
    ids = torch.full((len(seqs), L), tokenizer.pad_token_id, dtype=torch.long)  # [B, L]
    lab = torch.full((len(seqs), L), -100, dtype=torch.long)  # [B, L]
    mask = torch.zeros((len(seqs), L), dtype=torch.long)  # [B, L]
    for i, (s, lb) in enumerate(zip(seqs, labels)):
        ids[i, :len(s)], lab[i, :len(lb)], mask[i, :len(s)] = torch.tensor(s), torch.tensor(lb), 1
    return ids, mask, lab


def _vocab(model) -> int:
    return int(model.get_output_embeddings().weight.shape[0])


def sft_step(policy, adapter: str, optimizer, prompts: list[str], completions: list[str],
             max_grad_norm: float = 1.0) -> float:
    """One optimiser step of supervised fine-tuning of ``adapter``; returns the loss (completion tokens only)."""
    params = policy.trainable(adapter)
    device = next(policy.model.parameters()).device
    ids, mask, lab = (t.to(device) for t in sft_batch(policy.tokenizer, prompts, completions, policy.chat))
    policy.model.train()
    optimizer.zero_grad()
    chunks = row_chunks(len(ids), ids.shape[1], _vocab(policy.model), LOGITS_BYTES)
    if len(chunks) == 1:
        loss = policy.model(input_ids=ids, attention_mask=mask, labels=lab).loss
        loss.backward()
    else:
        tokens = (lab[:, 1:] != -100).sum().clamp(min=1)
        loss = 0.0
        for r in chunks:
            logits = policy.model(input_ids=ids[r], attention_mask=mask[r]).logits[:, :-1].float()  # [c, L-1, V]
            part = torch.nn.functional.cross_entropy(logits.flatten(0, 1), lab[r, 1:].flatten(), ignore_index=-100,
                                                     reduction="sum") / tokens
            part.backward()
            loss = loss + part.detach()
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    optimizer.step()
    return float(loss.item())


def train_sft(policy, adapter: str, prompts: list[str], completions: list[str], steps: int, batch_size: int,
              learning_rate: float, seed: int, key: int = 0, optimizer=None) -> dict:
    """``steps`` SFT steps on minibatches drawn (seeded by ``(seed, key, step)``) from the pairs.

    Args:
        policy, adapter: the shared :class:`~fedrl_kit.policy.engine.Policy` and the LoRA adapter it trains.
        prompts, completions: the training pairs.
        steps, batch_size: optimiser steps (0 returns at once); pairs per step (without replacement).
        learning_rate: Adam learning rate (when ``optimizer`` is None).
        seed, key: key the minibatch draws (e.g. key = round·1000 + client index).
        optimizer: an optimiser over the adapter's parameters; a fresh Adam if None.

    Returns:
        ``{"sft_loss": mean loss of the last min(steps, 5) steps, "sft_steps": steps}``.
    """
    if steps < 0 or batch_size < 1:
        raise ValueError(f"steps must be >= 0 and batch_size >= 1, got {steps}, {batch_size}")
    if steps == 0:
        return {"sft_loss": float("nan"), "sft_steps": 0.0}
    params = policy.trainable(adapter)
    opt = optimizer if optimizer is not None else torch.optim.Adam(params, lr=learning_rate)
    losses = []
    for s in range(steps):
        rng = seeding.rng("sft/batch", seed, key, s)
        idx = rng.choice(len(prompts), size=min(batch_size, len(prompts)), replace=False)
        losses.append(sft_step(policy, adapter, opt, [prompts[i] for i in idx], [completions[i] for i in idx]))
    for p in params:
        p.grad = None
    return {"sft_loss": float(np.mean(losses[-5:])), "sft_steps": float(steps)}


@torch.no_grad()
def sequence_logprob(policy, adapter: str, prompts: list[str], completions: list[str],
                     batch_size: int = 256) -> np.ndarray:
    """log π_adapter(completion + eos | prompt) summed over the completion tokens.  -> [B] float64"""
    policy.trainable(adapter)  # activates it (scoring only: no gradient is taken)
    return completion_logprob(policy, prompts, completions, batch_size)


@torch.no_grad()
def completion_logprob(policy, prompts: list[str], completions: list[str], batch_size: int = 256,
                       rows=None) -> np.ndarray:
    """log π(completion + eos | prompt) summed over the completion tokens, with the adapter(s) the model applies.

    Args:
        policy: the :class:`~fedrl_kit.policy.engine.Policy`; its active adapter scores every row unless ``rows``.
        prompts, completions: the pairs, scored in right-padded chunks of ``batch_size`` (smaller row chunks when
            the logits would exceed :data:`LOGITS_BYTES`, :func:`row_chunks`).
        rows: None, or ``rows(start, stop)`` → a context manager for that chunk's forward pass (per-row adapters).

    Returns:
        [B] float64.
    """
    policy.model.eval()
    device = next(policy.model.parameters()).device
    out = []
    vocab = _vocab(policy.model)
    for s in range(0, len(prompts), batch_size):
        chunk_ids, chunk_mask, chunk_lab = (t.to(device) for t in sft_batch(
            policy.tokenizer, prompts[s:s + batch_size], completions[s:s + batch_size], policy.chat))
        for r in row_chunks(len(chunk_ids), chunk_ids.shape[1], vocab, LOGITS_BYTES):  # one, unless it would not fit
            ids, mask, lab = chunk_ids[r], chunk_mask[r], chunk_lab[r]
            with nullcontext() if rows is None else rows(s + r.start, s + r.stop):
                logits = policy.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()  # [b, L-1, V]
            target = lab[:, 1:]  # [b, L-1]
            logp = torch.log_softmax(logits, dim=-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            out.append(((logp * (target != -100)).sum(dim=1)).double().cpu().numpy())  # [b]
    policy.model.train()
    return np.concatenate(out)
