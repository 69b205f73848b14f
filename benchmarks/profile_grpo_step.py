"""Where one local GRPO step's time goes: generation, the training forwards, the backwards, the rest.

The workload is ``grpo_step_vs_trl.py``'s (the embedded base, B = 8 prompts × G = 8, up to 24 tokens, LoRA r = 8,
μ = 2 by default; per-row prompts and HF ``generate`` unless ``--prompt-pass shared`` or ``--generation-loop
compact``; ``--length-buckets 2`` adds the default path's scoring): one untimed step, then ``--steps`` steps
under cProfile, one thread. The shares are cProfile's cumulative times of the client's ``rollout`` pass
(:meth:`fedrl_kit.federation.client.Passes.rollout`), the step's ``Score``
(``per_token_logps`` or a :mod:`fedrl_kit.speed` one) and ``Tensor.backward`` over the steps' total (profiling
overhead included, so they are shares, not speeds). Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/profile_grpo_step.py
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _machine  # noqa: E402,F401  (first: the CPU kernel pin)
import torch  # noqa: E402

PARTS = {"generation (the client's rollout)": [("federation/client.py", "rollout")],
         "training forwards (the step's Score)": [("rollout.py", "per_token_logps"),
                                                 ("shared_prompt.py", "shared_prompt_logps"),
                                                 ("buckets.py", "bucketed_logps")],
         "backwards (Tensor.backward)": [("_tensor.py", "backward")]}
"""each part's entry points (file suffix, function): the largest cumulative time among them (the scoring has one
entry per implementation, and the shared pass calls the bucketed one's helpers, never its entry)"""


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--mu", type=int, default=2, help="num_iterations, gradient epochs per batch")
    ap.add_argument("--prompt-pass", default="per_row", choices=["per_row", "shared"])
    ap.add_argument("--generation-loop", default="hf", choices=["hf", "compact"])
    ap.add_argument("--length-buckets", type=int, default=1, help="k > 1: the step's scoring in k passes by length")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    import grpo_step_vs_trl as bench
    from fedrl_kit.world.world import make_world

    b = bench.Args()
    data = make_world(seed=b.seed, n_train=b.prompts, n_test=1, n_public=0, n_aux=0).train
    side = bench.FedrlSide(b, data, prompt_pass=args.prompt_pass, generation_loop=args.generation_loop,
                           length_buckets=args.length_buckets)
    side.step(args.mu)  # warm-up
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.steps):
        side.step(args.mu)
    prof.disable()
    stats = pstats.Stats(prof).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    total = max(ct for (f, _, name), (_, _, _, ct, _) in stats.items() if name == "local_step")
    shares = {}
    for label, entries in PARTS.items():
        shares[label] = max(sum(ct for (f, _, name), (_, _, _, ct, _) in stats.items()
                                if name == func and f.endswith(file)) for file, func in entries) / total
    shares["the rest (rewards, advantages, optimiser, bookkeeping)"] = 1.0 - sum(shares.values())
    print(f"one local GRPO step, μ = {args.mu}, prompt_pass {args.prompt_pass}, generation_loop "
          f"{args.generation_loop}, length_buckets {args.length_buckets}: {total / args.steps:.3f} s under cProfile, "
          f"one thread")
    for label, share in shares.items():
        print(f"  {share:6.1%}  {label}")
    return shares


if __name__ == "__main__":
    main()
