"""``fedrl pretrain``: warm-start the tiny policy into a weak but not hopeless base checkpoint.

A short supervised run on problems from the non-held-out region (see
:mod:`fedrl_kit.world.world`). Only part of the targets use the answer format
(``format_rate``); the rest are the bare answer. So the base:

- solves some problems (pass@1 between 15 % and 60 % on held-out problems),
- uses ``<think>…</think><answer>…</answer>`` only part of the time,

and accuracy, format and tag-count rewards all have room to grow under RL (FedMOA needs that).
The run is deterministic (seeded, single-threaded data order) and takes a few CPU minutes;
``data/base/`` holds its result, ``data/base/pretrain.json`` the command's settings and metrics.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch

from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer
from fedrl_kit.world.tasks import DEFAULT_TOPICS
from fedrl_kit.world.tasks import format_completion
from fedrl_kit.world.world import draw

DEFAULT_BASE_DIR = Path(__file__).resolve().parents[2] / "data" / "base"


def sft_pairs(n: int, seed: int, format_rate: float, topics=DEFAULT_TOPICS) -> list[tuple[str, str]]:
    """``n`` (prompt, target) pairs; a fraction ``format_rate`` of targets use the tags."""
    rng = random.Random(seed)
    rows = draw(n, seed, heldout=False, topics=topics, difficulties=(1, 2, 3), with_reasoning=True)
    return [
        (r["prompt"], format_completion(r["answer"], r["reasoning"]) if rng.random() < format_rate else r["answer"])
        for r in rows
    ]


def _batch(tokenizer, pairs):
    """Right-padded prompt+target+eos with labels only on target tokens.  -> ids, mask, labels [B, L]"""
    seqs, labels = [], []
    for prompt, target in pairs:
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        t = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        seqs.append(p + t)
        labels.append([-100] * len(p) + t)
    L = max(map(len, seqs))
    ids = torch.full((len(seqs), L), tokenizer.pad_token_id)  # [B, L]
    lab = torch.full((len(seqs), L), -100)  # [B, L]
    mask = torch.zeros((len(seqs), L), dtype=torch.long)  # [B, L]
    for i, (s, l) in enumerate(zip(seqs, labels)):
        ids[i, : len(s)], lab[i, : len(l)], mask[i, : len(s)] = torch.tensor(s), torch.tensor(l), 1
    return ids, mask, lab


def pretrain(
    out_dir: str | Path = DEFAULT_BASE_DIR,
    steps: int = 700,
    batch_size: int = 64,
    lr: float = 2e-3,
    n_examples: int = 20000,
    format_rate: float = 0.5,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Supervised warm start of the tiny policy; saves model + tokenizer to ``out_dir``.

    Args:
        out_dir: where ``save_pretrained`` writes the checkpoint.
        steps: optimiser steps (the knob that sets how weak the base is).
        batch_size: sequences per step.
        lr: AdamW peak learning rate (linear warm-up over 5 % of steps, then cosine decay).
        n_examples: distinct training problems (difficulty 1–3, non-held-out region).
        format_rate: fraction of targets written in the ``<think>…<answer>`` format.
        seed: seeds initialisation and data order.
        progress: show a tqdm bar.

    Returns:
        A dict of the settings and the final training loss (also written to ``pretrain.json``).
    """
    from tqdm.auto import tqdm

    if not 0.0 <= format_rate <= 1.0:
        raise ValueError(f"format_rate must be in [0, 1], got {format_rate}")
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    model = build_tiny_model(tokenizer, seed=seed)
    pairs = sft_pairs(n_examples, seed, format_rate)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + torch.cos(torch.tensor(s / steps * 3.14159)).item())
    )
    rng = random.Random(seed)
    model.train()
    t0, losses = time.time(), []
    for step in tqdm(range(steps), desc="pretrain", disable=not progress):
        ids, mask, labels = _batch(tokenizer, rng.sample(pairs, batch_size))
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    info = dict(steps=steps, batch_size=batch_size, lr=lr, n_examples=n_examples, format_rate=format_rate, seed=seed,
                final_loss=sum(losses[-20:]) / len(losses[-20:]), seconds=round(time.time() - t0, 1),
                n_params=sum(p.numel() for p in model.parameters()))
    (out / "pretrain.json").write_text(json.dumps(info, indent=2))
    return info
