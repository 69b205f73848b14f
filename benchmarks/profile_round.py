"""Profile: where the time of one FedAvg-GRPO round goes, K clients sequential and in lockstep (cProfile).

Builds the quick preset's run (embedded world and base, b = 8 × G = 8, T ≤ 20, μ = 2) with K clients, runs one
untimed round per mode (it creates the adapters), then profiles one more round per mode (every client's
``fit``: load the global adapter, τ local GRPO steps, the reply) and prints, per mode, the CPU seconds spent
in the parts of a local step and their share of the round. cProfile adds its own cost to every Python call,
so Python-heavy parts (adapter bookkeeping) look larger than they are; the shares of the tensor work
(generate, the forward passes, backward) are what to read. Writes ``benchmarks/results/profile_round.json``.

Run: ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/profile_round.py``
(``--uncached --out benchmarks/results/profile_round_uncached.json``: the bookkeeping as before its cache).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from _machine import save_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTS = {  # what we report: (file suffix, function name) → label
    ("rollout.py", "generate"): "generate (sampling, tokenise, decode)",
    ("rollout.py", "per_token_logps"): "forward passes of the GRPO step (log-probs)",
    ("torch/autograd/__init__.py", "backward"): "backward passes",
    ("grpo.py", "grpo_step"): "grpo_step (all of a sequential step's training)",
    ("batched.py", "grpo_step_lockstep"): "grpo_step_lockstep (all of a lockstep step's training)",
    ("adapters.py", "set_state"): "load the global adapter (set_state)",
    ("adapters.py", "get_state"): "read the adapter for the reply (get_state)",
    ("adapters.py", "activate"): "activate an adapter",
    ("client.py", "reward_scores"): "rewards",
}


def parts_of(stats: pstats.Stats) -> dict[str, float]:
    out = {}
    for (path, _, name), (_, _, _, cum, _) in stats.stats.items():
        for (suffix, fn), label in PARTS.items():
            if name == fn and path.endswith(suffix):
                out[label] = out.get(label, 0.0) + cum
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--local-steps", type=int, default=1)
    p.add_argument("--uncached", action="store_true",
                   help="adapter bookkeeping through peft's walks (adapters.USE_CACHE = False), as before the cache")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "profile_round.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    import transformers

    transformers.logging.set_verbosity_error()
    from fedrl_kit.config import preset
    from fedrl_kit.federation.lockstep import fit_lockstep
    from fedrl_kit.policy import adapters
    from fedrl_kit.runs import Run

    adapters.USE_CACHE = not args.uncached

    run = Run(preset("quick", num_clients=args.clients, rounds=1, local_steps=args.local_steps, eval_every=100),
              progress=False).build()
    clients = list(run.clients.values())
    payload = {"adapter": run.server.global_state}
    modes = {"sequential": lambda r: [c.on_fit(r, payload) for c in clients],
             "lockstep": lambda r: fit_lockstep(clients, r, [payload] * len(clients))}
    results = {}
    for mode, fit in modes.items():
        fit(0)  # warm-up
        prof = cProfile.Profile(timer=time.process_time)
        prof.enable()
        fit(1)
        prof.disable()
        stats = pstats.Stats(prof)
        total = stats.total_tt
        parts = parts_of(stats)
        results[mode] = dict(cpu_s=total, parts_cpu_s=parts, parts_share={k: v / total for k, v in parts.items()})
        print(f"{mode}: {total:.2f} CPU s under cProfile")
        for label, sec in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"  {sec:7.2f} s  {100 * sec / total:5.1f} %  {label}")
    save_result(args.out, "profile_round", argv, dict(vars(args), preset="quick", method="fedavg_grpo"),
                [], results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
