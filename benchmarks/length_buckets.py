"""One local GRPO step with its rows scored in k = 1, 2, 3, 4 passes of similar completion length, side by side.

The workload is ``grpo_step_vs_trl.py``'s fedrl_kit side with the default path's other options (the embedded
base, B = 8 prompts × G = 8, up to 24 tokens, LoRA r = 8, ``prompt_pass="shared"``, ``generation_loop="compact"``):
every measurement is the same batch from the same adapter, so every k samples the same completions; the k values
rotate through ``--repetitions`` measurements after one untimed warm-up each, one thread. Reports, per k and μ, the
median wall seconds, the speedup over k = 1, and the completion token positions the step's scoring computes
(rows × the longest completion of each pass; ``fedrl_kit.rollout.length_buckets_of``). Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/length_buckets.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import save_result  # noqa: E402  (first: the CPU kernel pin)
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--buckets", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--mu", type=int, nargs="+", default=[2, 1], help="num_iterations values to measure")
    ap.add_argument("--repetitions", type=int, default=9)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "length_buckets.json"))
    args = ap.parse_args(argv)
    if args.repetitions < 1 or min(args.buckets) < 1 or min(args.mu) < 1 or 1 not in args.buckets:
        raise SystemExit("--repetitions, --buckets and --mu must be >= 1, and --buckets must include 1")
    torch.set_num_threads(1)
    import grpo_step_vs_trl as bench

    from fedrl_kit.speed.buckets import length_buckets_of
    from fedrl_kit.world.world import make_world

    b = bench.Args()
    data = make_world(seed=b.seed, n_train=b.prompts, n_test=1, n_public=0, n_aux=0).train
    side = bench.FedrlSide(b, data, prompt_pass="shared", generation_loop="compact", length_buckets=1)
    from fedrl_kit.federation.client import Passes  # the client's one seam to the model passes

    masks, real_grpo_step = [], Passes.grpo_step  # every step's completion mask, to count positions

    def recording_grpo_step(self, policy, adapter, optimizer, rollouts, *a, **kw):
        masks.append(rollouts.completion_mask)
        return real_grpo_step(self, policy, adapter, optimizer, rollouts, *a, **kw)

    Passes.grpo_step = recording_grpo_step
    rows = []
    try:
        for mu in args.mu:
            seconds = {k: [] for k in args.buckets}
            for k in args.buckets:  # untimed warm-up
                side.length_buckets = k
                side.step(mu)
            for rep in range(args.repetitions):
                for k in args.buckets[rep % len(args.buckets):] + args.buckets[:rep % len(args.buckets)]:
                    side.length_buckets = k
                    seconds[k].append(round(side.step(mu)[0], 4))
                print(f"μ={mu} rep {rep + 1}/{args.repetitions}: "
                      + "  ".join(f"k={k} {seconds[k][-1]:.3f} s" for k in args.buckets), flush=True)
            mask = masks[-1]
            for k in args.buckets:
                runs = length_buckets_of(mask, k)
                rows.append(dict(num_iterations=mu, length_buckets=k, seconds=seconds[k],
                                 median_s=statistics.median(seconds[k]), passes=len(runs),
                                 completion_positions=sum(len(i) * t for i, t in runs)))
    finally:
        Passes.grpo_step = real_grpo_step
    base = {r["num_iterations"]: r["median_s"] for r in rows if r["length_buckets"] == 1}
    for r in rows:
        r["speedup"] = round(base[r["num_iterations"]] / r["median_s"], 3)
    summary = dict(speedup={f"mu={r['num_iterations']} k={r['length_buckets']}": r["speedup"] for r in rows},
                   completion_positions={f"k={r['length_buckets']}": r["completion_positions"]
                                         for r in rows if r["num_iterations"] == args.mu[0]},
                   real_completion_tokens=int(masks[-1].sum()), same_completions=all(
                       torch.equal(m, masks[0]) for m in masks))
    return save_result(args.out, "length_buckets", argv,
                       dict(prompts=b.prompts, num_generations=b.num_generations, max_new_tokens=b.max_new_tokens,
                            prompt_pass="shared", generation_loop="compact", repetitions=args.repetitions,
                            threads=1), rows, summary)


if __name__ == "__main__":
    main()
