"""``fedrl pretrain``: warm-start the tiny policy into a weak but not hopeless base checkpoint."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch

from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer
from fedrl_kit.world.tasks import DEFAULT_TOPICS, DIFFICULTIES, TOPICS, format_completion
from fedrl_kit.world.world import is_heldout

DEFAULT_BASE_DIR = Path(__file__).resolve().parents[2] / "data" / "base"


def noisy_answer(answer: str, rng: random.Random) -> str:
    """A near miss: the answer ± 1–3 (never negative, never the answer itself)."""
    a = int(answer)
    wrong = a + rng.choice([-3, -2, -1, 1, 2, 3])
    return str(wrong if wrong >= 0 else a + rng.randint(1, 3))


def sft_pairs(n: int, seed: int, format_rate: float, answer_noise: float = 0.0, topics=DEFAULT_TOPICS,
              difficulties=DIFFICULTIES) -> list[tuple[str, str]]:
    """``n`` (prompt, target) pairs; a fraction ``format_rate`` of targets use the tags and a
    fraction ``answer_noise`` carry a near-miss wrong answer (the noisy teacher)."""
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n:  # with replacement: small topics (1-digit mul) have few distinct problems
        topic = topics[len(pairs) % len(topics)]
        prompt, answer, reasoning = TOPICS[topic].make(rng, rng.choice(tuple(difficulties)))
        if is_heldout(prompt):  # never teach a problem the test, public or auxiliary splits may hold
            continue
        answer = noisy_answer(answer, rng) if rng.random() < answer_noise else answer
        target = format_completion(answer, reasoning) if rng.random() < format_rate else answer
        pairs.append((prompt, target))
    return pairs


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
    steps: int = 1400,
    batch_size: int = 64,
    lr: float = 2e-3,
    n_examples: int = 20000,
    format_rate: float = 0.5,
    answer_noise: float = 0.3,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Supervised warm start of the tiny policy; saves model + tokenizer to ``out_dir``.

    Args:
        out_dir: where ``save_pretrained`` writes the checkpoint.
        steps, batch_size, lr: optimiser steps (how weak the base is), sequences per step, AdamW peak rate.
        n_examples: distinct training problems (non-held-out region).
        format_rate, answer_noise: fractions of targets in the ``<think>…<answer>`` format and with a near miss.
        seed, progress: seeds initialisation and data order; show a tqdm bar.

    Returns:
        A dict of the settings and the final training loss (also written to ``pretrain.json``).
    """
    check_settings(steps, batch_size, format_rate, answer_noise)
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    model = build_tiny_model(tokenizer, seed=seed)
    pairs = sft_pairs(n_examples, seed, format_rate, answer_noise)
    info = dict(steps=steps, batch_size=batch_size, lr=lr, n_examples=n_examples, format_rate=format_rate,
                answer_noise=answer_noise, seed=seed)
    return train_and_save(model, tokenizer, pairs, random.Random(seed), out_dir, steps, batch_size, lr, info,
                          "pretrain", progress)


def check_settings(steps: int, batch_size: int, format_rate: float, answer_noise: float) -> None:
    """ValueError naming a warm-start setting out of range."""
    for name, v in (("format_rate", format_rate), ("answer_noise", answer_noise)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v}")
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")


def train_and_save(model, tokenizer, pairs: list[tuple[str, str]], rng: random.Random, out_dir, steps: int,
                   batch_size: int, lr: float, info: dict, desc: str, progress: bool) -> dict:
    """The supervised loop every warm start shares, then ``save_pretrained`` and ``pretrain.json``."""
    from tqdm.auto import tqdm

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + torch.cos(torch.tensor(s / steps * 3.14159)).item())
    )
    model.train()
    t0, losses = time.time(), []
    for _ in tqdm(range(steps), desc=desc, disable=not progress):
        ids, mask, labels = _batch(tokenizer, rng.sample(pairs, batch_size))  # [B, L] each
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
    info = dict(info, final_loss=sum(losses[-20:]) / len(losses[-20:]), seconds=round(time.time() - t0, 1),
                n_params=sum(p.numel() for p in model.parameters()))
    (out / "pretrain.json").write_text(json.dumps(info, indent=2))
    return info
