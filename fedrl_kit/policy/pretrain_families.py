"""Derived base for FedMOA: continue the warm start of ``data/base`` on all three task families."""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

import torch

from fedrl_kit.policy.hub import load_pretrained
from fedrl_kit.policy.pretrain import check_settings, noisy_answer, train_and_save
from fedrl_kit.world.families import FAMILIES, _check_families, all_topics, is_code, program_for
from fedrl_kit.world.tasks import DIFFICULTIES, format_completion
from fedrl_kit.world.world import is_heldout

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = REPO / "data" / "base"
DEFAULT_OUT = REPO / "data" / "base_moa"
MISSING_MESSAGE = ("the FedMOA base {path} is missing: build it (a few CPU minutes) with\n"
                   "    OMP_NUM_THREADS=1 python -m fedrl_kit.policy.pretrain_families --out data/base_moa")


def family_sft_rows(n: int, seed: int, families=tuple(FAMILIES), difficulties=DIFFICULTIES,
                    mix=None) -> list[dict]:
    """``n`` warm-start rows (with reasoning) from the non-held-out region, round-robin over families
    and their topics, drawn *with* replacement (as :func:`fedrl_kit.policy.pretrain.sft_pairs` does).
    """
    families = _check_families(families)
    mix = (1,) * len(families) if mix is None else tuple(mix)
    if len(mix) != len(families) or any(not isinstance(k, int) or k < 1 for k in mix):
        raise ValueError(f"mix must hold one integer >= 1 per family {families}, got {mix!r}")
    cycle = [f for f, k in zip(families, mix) for _ in range(k)]  # e.g. [math, gsm, gsm, code]
    topics = all_topics()
    rng = random.Random(seed)
    rows: list[dict] = []
    counters = {f: 0 for f in families}
    while len(rows) < n:
        fam = cycle[len(rows) % len(cycle)]
        topic = FAMILIES[fam][counters[fam] % len(FAMILIES[fam])]
        d = rng.choice(tuple(difficulties))
        prompt, answer, reasoning = topics[topic].make(rng, d)
        if is_heldout(prompt):  # never teach a problem a test split may hold
            continue
        counters[fam] += 1
        rows.append({"prompt": prompt, "answer": answer, "topic": topic, "difficulty": d, "family": fam,
                     "reasoning": reasoning})
    return rows


def noisy_program(reasoning: str, rng: random.Random) -> str:
    """A near-miss program body: one integer constant of ``reasoning`` moved by ± 1–3 (kept >= 1)."""
    numbers = list(re.finditer(r"\d+", reasoning))
    if not numbers:
        return reasoning
    m = rng.choice(numbers)
    v = int(m.group())
    wrong = v + rng.choice([-3, -2, -1, 1, 2, 3])
    wrong = wrong if wrong >= 1 else v + rng.randint(1, 3)
    return reasoning[: m.start()] + str(wrong) + reasoning[m.end():]


def family_target(row: dict, rng: random.Random, format_rate: float, answer_noise: float) -> str:
    """The noisy teacher's target for one row: maybe a near miss, maybe without the tags."""
    reasoning = row["reasoning"]
    if is_code(row["topic"]):
        body = noisy_program(reasoning, rng) if rng.random() < answer_noise else reasoning
        answer, reasoning = program_for(body), body
    else:
        answer = noisy_answer(row["answer"], rng) if rng.random() < answer_noise else row["answer"]
    return format_completion(answer, reasoning) if rng.random() < format_rate else answer


def pretrain_families(
    out_dir: str | Path = DEFAULT_OUT,
    source: str | Path = DEFAULT_SOURCE,
    steps: int = 800,
    batch_size: int = 64,
    lr: float = 1e-3,
    n_examples: int = 24000,
    format_rate: float = 0.5,
    answer_noise: float = 0.3,
    families=tuple(FAMILIES),
    mix=(1, 2, 1),
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Continue the supervised warm start of ``source`` on the three families; save to ``out_dir``.

    Args:
        out_dir, source: where the derived base is written, and the base it continues from (``data/base``).
        steps, batch_size, lr: optimiser steps, sequences per step, AdamW peak rate (5 % warm-up, cosine decay).
        n_examples: warm-start rows (with replacement, non-held-out region, round-robin over families).
        format_rate, answer_noise: fractions of targets in the think/answer format and with a near-miss answer.
        families: names from :data:`fedrl_kit.world.families.FAMILIES`.
        mix: slots per family in each cycle: ``(1, 2, 1)`` teaches word problems twice as often (None: one each).
        seed, progress: seeds data and order; show a tqdm bar.

    Returns:
        The settings and the final training loss (also written to ``pretrain.json``).
    """
    check_settings(steps, batch_size, format_rate, answer_noise)
    if not Path(source).is_dir():
        raise FileNotFoundError(f"source base {source} is missing: build it with `fedrl pretrain`")
    torch.manual_seed(seed)
    model, tokenizer = load_pretrained(str(source), dtype=torch.float32, device="cpu")
    rng = random.Random(seed)
    rows = family_sft_rows(n_examples, seed, families, mix=mix)
    pairs = [(r["prompt"], family_target(r, rng, format_rate, answer_noise)) for r in rows]
    info = dict(source=str(Path(source).resolve().relative_to(REPO)) if Path(source).resolve().is_relative_to(REPO)
                else str(source), steps=steps, batch_size=batch_size, lr=lr, n_examples=n_examples,
                format_rate=format_rate, answer_noise=answer_noise, families=list(families),
                mix=list(mix) if mix is not None else [1] * len(families), seed=seed)
    return train_and_save(model, tokenizer, pairs, rng, out_dir, steps, batch_size, lr, info, "pretrain_families",
                          progress)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--source", default=str(DEFAULT_SOURCE))
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--mix", type=int, nargs=3, default=[1, 2, 1], metavar=("MATH", "GSM", "CODE"),
                    help="slots per family in each cycle of the warm-start rows (default 1 2 1)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(json.dumps(pretrain_families(args.out, args.source, steps=args.steps, mix=args.mix, seed=args.seed),
                     indent=2))


if __name__ == "__main__":
    main()
