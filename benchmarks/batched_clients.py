"""Benchmark: one round of K clients, lockstep (one batched pass) against sequential (one by one).

Both modes run the same round of the same run: by default FedAvg-GRPO on the embedded world and base
(``data/base``), the quick preset's b = 8 prompts × G = 8 completions, T ≤ 20 new tokens, LoRA r = 8 on the seven
projections, μ = 2 gradient epochs, ``--local-steps`` τ local GRPO steps per client, for K = 1, 2, 4, 8, 16
clients; ``--method`` takes any method with a lockstep path (``pubswap_balanced``, ``fedmoa``: its quick preset's
families world and base; ``fedgrpo``: the server's steps with the experts' scoring batched) at its quick preset.
One policy serves both runs of a K (the same frozen base and the clients' adapters); every measurement is round 1
of a freshly built run (built untimed), so each repetition does the same work: the same batches and sampling
seeds in both modes (lockstep keeps the sequential mode's per-client sampling streams; ``same_rewards`` in the
JSON says whether every client's reward and accuracy metrics agree in both modes to 1e-5, i.e. it sampled the
same completions). What is timed is the method's ``run_round`` — broadcast, every client's work, the replies'
checks, aggregation — the same code path a run takes.

Per K: one untimed warm-up round per mode (it creates the clients' adapters), then ``--repetitions``
measurements alternating the order of the two modes; we report medians and ``speedup = sequential /
lockstep`` (none, and exit status 1, when any client's reply failed in any round of either mode: the runtime
carries a round past a client that raised, and such a round skipped its work), in wall time and in the
process's CPU time (``time.process_time``: on a machine that other jobs share, the CPU time a round used is
steadier than its wall time), and the minor page faults a round took.

A lockstep run on a CPU keeps freed memory in the process (:mod:`fedrl_kit.speed.allocator`): from the first
lockstep run built on, for both modes, since the setting is the process's. ``--system-malloc`` leaves glibc's
malloc as it is, to measure what that saves (``freed_memory_kept`` in the JSON says which).

Run (single-threaded, as the numbers in docs/performance.md were taken)::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/batched_clients.py
"""

from __future__ import annotations

import argparse
import math
import os
import resource
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
    p.add_argument("--method", default="fedavg_grpo", help="a method with a lockstep path (its MethodSpec.lockstep)")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="the K values")
    p.add_argument("--local-steps", type=int, default=None,
                   help="τ, local steps per client in the round (default 1; PubSwap: its period, one private and one "
                        "public step)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="further RunConfig fields for both modes (e.g. fedmoa.setting=homo+homo)")
    p.add_argument("--repetitions", type=int, default=3, help="timed rounds per mode and K")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--system-malloc", action="store_true",
                   help="leave glibc's malloc as it is: do not keep freed memory for lockstep runs "
                        "(fedrl_kit.speed.allocator), to measure what keeping it saves")
    p.add_argument("--out", default=None, help="default benchmarks/results/batched_clients.json (FedAvg-GRPO), "
                                               "batched_clients_<method>.json for another method")
    args = p.parse_args(argv)
    if args.out is None:
        name = "batched_clients" + ("" if args.method == "fedavg_grpo" else f"_{args.method}")
        args.out = str(ROOT / "benchmarks" / "results" / f"{name}.json")
    return args


def minor_faults() -> int:
    """The process's minor page faults so far (first touches of memory the system handed out afresh)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def same_outcome(a: dict, b: dict, rel: float = 1e-5) -> bool:
    """Whether two rounds' per-client metrics agree on every reward and accuracy metric, to ``rel`` (relative).

    A client that sampled the same completions in both modes has equal rewards (a reward is a mean of 0/1 or
    graded scores, so one other completion moves it by far more than ``rel``); FedGRPO's expert scores are an
    evaluator's probabilities, which batching changes in the last float bits (docs/performance.md), hence the
    tolerance rather than equality.
    """
    if sorted(a) != sorted(b):
        return False
    def close(x: float, y: float) -> bool:
        return math.isclose(x, y, rel_tol=rel, abs_tol=1e-12) or (x != x and y != y)  # NaN on both sides agrees

    return all(close(a[c][k], b[c][k]) for c in a for k in a[c] if k in b[c] and ("reward" in k or "accuracy" in k))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.system_malloc:
        os.environ["FEDRL_KIT_KEEP_FREED_MEMORY"] = "0"
    torch.set_num_threads(args.threads)
    import transformers

    transformers.logging.set_verbosity_error()
    from fedrl_kit.config import lockstep_methods, preset
    from fedrl_kit.speed.allocator import freed_memory_kept
    from fedrl_kit.runs import Run

    if args.method not in lockstep_methods():
        raise SystemExit(f"--method must be one of {', '.join(lockstep_methods())} (a method with a lockstep path), "
                         f"got {args.method!r}")
    from fedrl_kit.set_syntax import parse_set

    extra = parse_set(args.set)
    if args.local_steps is None:
        quick = preset("quick", method=args.method, **extra)
        args.local_steps = quick.pubswap.period if args.method.startswith("pubswap") else 1

    def config_of(K: int) -> dict:
        return dict(method=args.method, num_clients=K, rounds=1, local_steps=args.local_steps, eval_every=100,
                    n_train=max(2000, 40 * K), **extra)

    for K in args.clients:  # every K's config is valid before anything runs (a ValueError names the field)
        preset("quick", client_batching="lockstep", **config_of(K))
    policy = None
    runs = []
    modes = ("sequential", "lockstep")
    for K in args.clients:
        cfg = config_of(K)

        def one_round(mode: str) -> tuple[float, float, int, dict]:
            nonlocal policy
            run = Run(preset("quick", client_batching=mode, **cfg), progress=False, policy=policy).build()
            policy = run.policy
            t0, c0, f0 = time.perf_counter(), time.process_time(), minor_faults()
            out = run.spec.run_round(run.server, 1)
            return time.perf_counter() - t0, time.process_time() - c0, minor_faults() - f0, out

        replies = {m: one_round(m)[3] for m in modes}  # warm-up: adapters created, caches filled
        failed = {m: list(replies[m]["failed"]) for m in modes}  # every round's failed clients, warm-up included
        times, cpu, faults = {m: [] for m in modes}, {m: [] for m in modes}, {m: [] for m in modes}
        for rep in range(args.repetitions):
            for mode in (list(modes) if rep % 2 == 0 else list(modes)[::-1]):
                wall, used, faulted, out = one_round(mode)
                failed[mode] += out["failed"]
                times[mode].append(wall)
                cpu[mode].append(used)
                faults[mode].append(faulted)
            print(f"K={K:>2} rep {rep + 1}/{args.repetitions}: "
                  + "  ".join(f"{m} {times[m][-1]:.2f} s (cpu {cpu[m][-1]:.2f} s, {faults[m][-1]} page faults)"
                              for m in modes), flush=True)
        med = {m: statistics.median(t) for m, t in times.items()}
        med_cpu = {m: statistics.median(t) for m, t in cpu.items()}
        same = same_outcome(replies["sequential"]["clients"], replies["lockstep"]["clients"])
        # a round whose clients failed did less work than one whose clients did not: no speedup is claimed from it
        ok = not any(failed.values())
        runs.append(dict(clients=K, seconds=times, median_s=med,
                         speedup=med["sequential"] / med["lockstep"] if ok else None,
                         cpu_seconds=cpu, median_cpu_s=med_cpu,
                         cpu_speedup=med_cpu["sequential"] / med_cpu["lockstep"] if ok else None, page_faults=faults,
                         median_page_faults={m: statistics.median(f) for m, f in faults.items()},
                         client_steps_per_s={m: K * args.local_steps / med[m] for m in modes},
                         same_rewards=same, failed=failed))
        if ok:
            print(f"K={K:>2}: sequential {med['sequential']:.2f} s, lockstep {med['lockstep']:.2f} s, "
                  f"speedup {runs[-1]['speedup']:.2f}x (cpu time {runs[-1]['cpu_speedup']:.2f}x), same rewards: {same}",
                  flush=True)
        else:
            first = next(f for m in modes for f in failed[m])
            print(f"K={K:>2}: FAILED, no speedup: " + ", ".join(f"{len(failed[m])} {m} client replies failed"
                                                          for m in modes) + f"; first: {first['error']}", flush=True)

    quick = preset("quick", **config_of(args.clients[0]))
    settings = dict(vars(args), preset="quick", base=quick.base, world=quick.world,
                    prompts_per_step=quick.prompts_per_step, num_generations=quick.num_generations,
                    max_new_tokens=quick.max_new_tokens, num_iterations=quick.num_iterations,
                    lora_rank=quick.lora_rank, torch_threads=torch.get_num_threads(), loadavg_1min=os.getloadavg()[0],
                    freed_memory_kept=freed_memory_kept())
    summary = {f"K={r['clients']}": dict(sequential_s=round(r["median_s"]["sequential"], 3),
                                          lockstep_s=round(r["median_s"]["lockstep"], 3),
                                          speedup=r["speedup"] and round(r["speedup"], 3),
                                          cpu_speedup=r["cpu_speedup"] and round(r["cpu_speedup"], 3),
                                          page_faults=r["median_page_faults"],
                                          same_rewards=r["same_rewards"],
                                          failed_replies={m: len(f) for m, f in r["failed"].items()})
               for r in runs}
    save_result(args.out, "batched_clients", argv, settings, runs, summary)
    return 1 if any(r["speedup"] is None for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
