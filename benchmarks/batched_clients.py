"""Benchmark: one FedAvg-GRPO round of K clients, lockstep (one batched pass) against sequential (one by one).

Both modes run the same round of the same run: the embedded world and base (``data/base``), the quick
preset's b = 8 prompts × G = 8 completions, T ≤ 20 new tokens, LoRA r = 8 on the seven projections, μ = 2
gradient epochs, ``--local-steps`` τ local GRPO steps per client, for K = 1, 2, 4, 8, 16 clients. One policy
serves both runs of a K (the same frozen base and the clients' adapters), every measurement starts from the
same global adapter at the same round, so each repetition does the same work: the same batches and sampling
seeds in both modes (lockstep keeps the sequential mode's per-client sampling streams;
``same_rewards`` in the JSON says whether every client got the same reward mean in both modes, i.e. sampled
the same completions). What is timed is ``run_round`` — broadcast, every client's τ steps, the replies'
checks, aggregation — the same code path a run takes.

Per K: one untimed warm-up round per mode (it creates the clients' adapters), then ``--repetitions``
measurements alternating the order of the two modes; we report medians and ``speedup = sequential /
lockstep``, in wall time and in the process's CPU time (``time.process_time``: on a machine that other jobs
share, the CPU time a round used is steadier than its wall time).

Run (single-threaded, as the numbers in docs/performance.md were taken)::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/batched_clients.py
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
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see grpo_step_vs_trl.py: spinning OpenMP waiters on a shared CPU

import torch  # noqa: E402
from _machine import save_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="the K values")
    p.add_argument("--local-steps", type=int, default=1, help="τ, local GRPO steps per client in the round")
    p.add_argument("--repetitions", type=int, default=3, help="timed rounds per mode and K")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "batched_clients.json"))
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    import transformers

    transformers.logging.set_verbosity_error()
    from fedrl_kit.config import preset
    from fedrl_kit.methods.fedavg_grpo import run_round
    from fedrl_kit.runs import Run

    policy = None
    runs = []
    for K in args.clients:
        cfg = dict(method="fedavg_grpo", num_clients=K, rounds=1, local_steps=args.local_steps, eval_every=100,
                   n_train=max(2000, 40 * K))
        modes = {}
        for mode in ("sequential", "lockstep"):
            run = Run(preset("quick", client_batching=mode, **cfg), progress=False, policy=policy).build()
            policy = run.policy
            modes[mode] = run
        start = {k: v.copy() for k, v in modes["sequential"].server.global_state.items()}

        def one_round(mode: str) -> tuple[float, float, dict]:
            server = modes[mode].server
            server.global_state = {k: v.copy() for k, v in start.items()}
            t0, c0 = time.perf_counter(), time.process_time()
            out = run_round(server, 1)
            return time.perf_counter() - t0, time.process_time() - c0, out

        replies = {m: one_round(m)[2] for m in modes}  # warm-up: adapters created, caches filled
        times, cpu = {m: [] for m in modes}, {m: [] for m in modes}
        for rep in range(args.repetitions):
            for mode in (list(modes) if rep % 2 == 0 else list(modes)[::-1]):
                wall, used, _ = one_round(mode)
                times[mode].append(wall)
                cpu[mode].append(used)
            print(f"K={K:>2} rep {rep + 1}/{args.repetitions}: "
                  + "  ".join(f"{m} {times[m][-1]:.2f} s (cpu {cpu[m][-1]:.2f} s)" for m in modes), flush=True)
        med = {m: statistics.median(t) for m, t in times.items()}
        med_cpu = {m: statistics.median(t) for m, t in cpu.items()}
        seq_c, lock_c = replies["sequential"]["clients"], replies["lockstep"]["clients"]
        same = sorted(seq_c) == sorted(lock_c) and all(seq_c[c]["reward_mean"] == lock_c[c]["reward_mean"]
                                                      for c in seq_c)
        runs.append(dict(clients=K, seconds=times, median_s=med, speedup=med["sequential"] / med["lockstep"],
                         cpu_seconds=cpu, median_cpu_s=med_cpu,
                         cpu_speedup=med_cpu["sequential"] / med_cpu["lockstep"],
                         client_steps_per_s={m: K * args.local_steps / med[m] for m in modes},
                         same_rewards=same, failed={m: replies[m]["failed"] for m in modes}))
        print(f"K={K:>2}: sequential {med['sequential']:.2f} s, lockstep {med['lockstep']:.2f} s, "
              f"speedup {runs[-1]['speedup']:.2f}x (cpu time {runs[-1]['cpu_speedup']:.2f}x), same rewards: {same}",
              flush=True)

    settings = dict(vars(args), method="fedavg_grpo", preset="quick", base="data/base", prompts_per_step=8,
                    num_generations=8, max_new_tokens=20, num_iterations=2, lora_rank=8,
                    torch_threads=torch.get_num_threads(), loadavg_1min=os.getloadavg()[0])
    summary = {f"K={r['clients']}": dict(sequential_s=round(r["median_s"]["sequential"], 3),
                                          lockstep_s=round(r["median_s"]["lockstep"], 3),
                                          speedup=round(r["speedup"], 3), cpu_speedup=round(r["cpu_speedup"], 3),
                                          same_rewards=r["same_rewards"])
               for r in runs}
    save_result(args.out, "batched_clients", argv, settings, runs, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
