"""The quickstart run (FedAvg-GRPO, 4 clients, 10 rounds, τ = 2) on the reference path and on the default one.

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/run_options.py [--repetitions 2]

By default four in-process, sequential runs of the same configuration and seed: the reference path
(``RunConfig.reference()``: HF ``generate``, every row its own prompt, one scoring pass); ``prompt_pass="shared"``
on it (each prompt once for its G rows); that with ``generation_loop="compact"`` (fedrl_kit's own sampling loop);
and the default, which adds ``length_buckets=2`` (the GRPO step scores its rows in two passes of similar completion
length). ``--variants`` also takes ``lockstep`` (the clients in one batched pass, with the default options lockstep
takes: the length buckets alone, as its rows carry several adapters, which the compact loop cannot fold) and
``lockstep-reference`` (lockstep on the reference path). Each repetition runs the variants in a rotated order.
Writes ``benchmarks/results/run_options.json`` (``--out``): wall seconds of every run, the median per variant,
``speedup`` = the reference's median / the variant's, client-steps per second, and each variant's final pass@1. The
options compute the reference's numbers only to float tolerance, so a sampled token can flip and the runs' metrics
drift apart; ``first_round_rewards_equal`` says whether the first round's client rewards (sampled before any update)
are still the reference's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

OPTIONS = ("prompt_pass", "generation_loop", "length_buckets", "client_batching")
DEFAULT_VARIANTS = ("reference", "shared", "shared+compact", "default")
VARIANTS = DEFAULT_VARIANTS + ("lockstep-reference", "lockstep")


def variants(base: dict) -> dict:
    """The configs; "reference" is ``RunConfig.reference()``, what ``fedrl run --reference-path`` runs; the lockstep
    ones step the clients in one batched pass, "lockstep" with the default options lockstep takes (the length
    buckets)."""
    cfg = preset("quick", **base)
    ref = cfg.reference()
    lockstep = cfg.replace(client_batching="lockstep")
    cfgs = {"reference": ref, "shared": ref.replace(prompt_pass="shared"),
            "shared+compact": ref.replace(prompt_pass="shared", generation_loop="compact"), "default": cfg,
            "lockstep-reference": lockstep.reference(), "lockstep": lockstep}
    assert tuple(cfgs) == VARIANTS
    return cfgs


def _first_round_rewards(records) -> list[float]:
    return [r["reward_mean"] for r in records if r["kind"] == "client" and r["round"] == 1]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--n-test", type=int, default=None, help="test problems scored each round (default: the preset's)")
    ap.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS),
                    choices=list(VARIANTS),
                    help="which configs to run (default: the four sequential ones); 'reference' is always run")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "run_options.json"))
    args = ap.parse_args(argv)
    if args.repetitions < 1 or args.rounds < 1 or args.clients < 1:
        raise SystemExit("--repetitions, --rounds and --clients must be >= 1")
    base = dict(method="fedavg_grpo", num_clients=args.clients, rounds=args.rounds, local_steps=2, seed=0)
    if args.n_test is not None:
        base["n_test"] = args.n_test
    every = variants(base)
    cfgs = {n: every[n] for n in every if n == "reference" or n in args.variants}  # the speedups' reference first
    names = list(cfgs)
    seconds, final, first = {n: [] for n in names}, {}, {}
    for rep in range(args.repetitions):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            t0 = time.perf_counter()
            records = Run(cfgs[name], progress=False).run()
            seconds[name].append(round(time.perf_counter() - t0, 2))
            final[name] = [r for r in records if r["kind"] == "global"][-1]["pass@1"]
            first[name] = _first_round_rewards(records)
            print(f"repetition {rep + 1}: {name} {seconds[name][-1]:.1f} s, final pass@1 {final[name]:.3f}",
                  flush=True)
    client_steps = args.clients * 2 * args.rounds
    median = {n: statistics.median(v) for n, v in seconds.items()}
    path = {n: {**c.speed_path(), "client_batching": c.client_batching} for n, c in cfgs.items()}
    options = {n: {k: path[n][k] for k in OPTIONS if path[n][k] != path["reference"][k]} for n in cfgs}
    rows = [dict(variant=n, options=options[n], seconds=seconds[n], median_s=median[n],
                 speedup=median["reference"] / median[n], client_steps_per_second=client_steps / median[n],
                 final_pass_at_1=final[n]) for n in names]
    summary = dict(speedup={n: round(median["reference"] / median[n], 3) for n in names},
                   final_pass_at_1=final, client_steps=client_steps,
                   first_round_rewards_equal={n: first[n] == first["reference"] for n in names})
    return save_result(args.out, "run_options", argv, dict(preset="quick", **base, repetitions=args.repetitions),
                       rows, summary)


if __name__ == "__main__":
    main()
