"""Benchmark: FedGRPO's ablations over the experts per question M and the number of clients K.

The FedGRPO paper reports that M = 2 of 8 clients is best (Appendix C, Fig. 4) and that accuracy
grows with the number of clients from 4 to 20 (§4.5, Fig. 3). This script runs FedGRPO in the
embedded world with the settings of ``benchmarks/fedgrpo_compare.py`` (quick preset, Dirichlet
β = 0.1, b = 4, τ = 2, G = 8, 5 rounds) for M ∈ {1, 2, 4, 6, 8} at K = 8 and K ∈ {4, 8, 12, 20} at
M = 2, over seeds 0–2, and records final pass@1 and the expert hit rates.

K and M are varied *alone*: every point takes the same Q = ``--questions`` questions per server step
(``fedgrpo.questions_per_step``; default 32 = b·8, the K = 8 budget) and G candidates each, so the
rollouts and optimiser steps per round do not change with K (before, the server batch was b·K and
K = 12 saw 3× the questions per step of K = 4). D_s is the training pool, of the same size at every
K; K changes how it is spread over the clients and who can be an expert.

Within a seed the runs share one loaded policy, so the clients' domain models (deterministic SFT)
are trained once per partition and reused; every run starts from the base's global adapter.

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedgrpo_ablation.py

writes ``benchmarks/results/fedgrpo_ablation_pool.json`` (the stored ``fedgrpo_ablation.json`` was made
before, with D_s = world.public and Q = b·K). ``--eval-every N`` scores the global model every N rounds and keeps
each run's pass@1 curve (for plateau claims on long runs); ``--set section.field=value`` changes a setting of every
run (every label held: ``--set fedgrpo.ae_holders=all``), except the ones the grid varies or fixes (K, M, Q).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import check_resume_environment, save_result  # noqa: E402
from fedgrpo_compare import SETTINGS, STORED_ME  # noqa: E402
import torch  # noqa: E402  (after _machine, which imports fedrl_kit first: the CPU kernel pin)

from fedrl_kit.config import REFERENCE_PATH, preset  # noqa: E402
from fedrl_kit.policy.adapters import GLOBAL  # noqa: E402
from fedrl_kit.policy.engine import Policy  # noqa: E402
from fedrl_kit.runs import Run, resolve_base  # noqa: E402
from fedrl_kit.set_syntax import parse_set  # noqa: E402

GRID_FIELDS = ("num_clients", "fedgrpo.num_experts", "fedgrpo.questions_per_step")
"""what the grid sets at each point, so ``--set`` may not"""


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--M", nargs="+", type=int, default=[1, 2, 4, 6, 8])
    ap.add_argument("--K", nargs="+", type=int, default=[4, 8, 12, 20])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--questions", type=int, default=SETTINGS["prompts_per_step"] * 8,
                    help="questions per server step at every point (fedgrpo.questions_per_step)")
    ap.add_argument("--eval-every", type=int, default=None,
                    help="score the global model every N rounds (default: at the end only); a run scored more than "
                         "twice keeps its pass@1 curve")
    ap.add_argument("--set", nargs="+", action="extend", default=[], metavar="SECTION.FIELD=VALUE",
                    help="a setting of every run, as fedrl run --set (not K, M or Q, which the grid sets)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fedgrpo_ablation_pool.json"))
    ap.add_argument("--allow-mixed-environment", action="store_true",
                    help="with --resume: extend a file whose runs were made with other package versions")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in --out (its settings must match) and run only the missing ones, "
                         "so a grid can grow (e.g. --K 20 added to an existing K ablation)")
    args = ap.parse_args(argv)
    extra = parse_set(args.set)
    if clash := [k for k in GRID_FIELDS if k in extra]:
        raise SystemExit(f"--set {', '.join(clash)}: the grid sets {'these' if len(clash) > 1 else 'this'} at each "
                         "point (use --K, --M, --questions)")
    args.eval_every = args.eval_every or args.rounds
    points = [("M", m, 8, m) for m in args.M] + [("K", k, k, 2) for k in args.K if not (k == 8 and 2 in args.M)]
    rows, args.commands = [], []
    if args.resume and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        want = dict(SETTINGS, rounds=args.rounds, questions_per_step=args.questions, eval_every=args.eval_every,
                    set=args.set)
        # files without the path's keys were made on the reference path, those without eval_every or set before the
        # options existed (scored at the end, no --set)
        stored = {**REFERENCE_PATH, "eval_every": old["settings"]["rounds"], "set": [], **old["settings"]}
        mismatch = {k: (stored.get(k), v) for k, v in want.items() if stored.get(k) != v}
        if mismatch:
            raise SystemExit(f"--resume: {args.out} was made with other settings: "
                             + ", ".join(f"{k}={a!r} (now {b!r})" for k, (a, b) in mismatch.items()))
        check_resume_environment(old, args.out, args.allow_mixed_environment)
        rows = list(old["runs"])
        args.commands = old.get("commands", [old["command"]])
        old_points = {(r["axis"], r["value"], r["K"], r["M"]) for r in rows}
        points = sorted(old_points | set(points), key=lambda p: (p[0] != "M", p[1]))
    done = {(r["K"], r["M"], r["seed"]) for r in rows}
    for seed in args.seeds:
        if all((K, M, seed) in done for _, _, K, M in points):
            continue
        base_cfg = preset("quick", method="fedgrpo", seed=seed)
        policy = Policy.load(resolve_base(base_cfg.base), base_cfg.lora_rank, base_cfg.lora_alpha, seed,
                             base_cfg.chat, base_cfg.max_new_tokens, base_cfg.temperature, base_cfg.device,
                             getattr(torch, base_cfg.dtype))
        init = policy.get_state(GLOBAL)
        for axis, value, K, M in points:
            if (K, M, seed) in done:
                continue
            settings = dict(SETTINGS, num_clients=K)
            cfg = preset("quick", method="fedgrpo", seed=seed, rounds=args.rounds, eval_every=args.eval_every,
                         fedgrpo={"me_score": STORED_ME, "num_experts": M, "questions_per_step": args.questions},
                         **{**settings, **extra})  # --set wins: its section.field items come after the section
            policy.set_state(GLOBAL, init)
            t0 = time.time()
            run = Run(cfg, progress=False, policy=policy)
            recs = run.run()
            glob = [r for r in recs if r["kind"] == "global"]
            server = [r for r in recs if r["kind"] == "client" and r["client"] == "server"]
            row = dict(axis=axis, value=value, K=K, M=M, seed=seed, base_pass_at_1=glob[0]["pass@1"],
                       final_pass_at_1=glob[-1]["pass@1"], seconds=round(time.time() - t0, 1))
            if len(glob) > 2:
                row["curve"] = [[g["round"], g["pass@1"]] for g in glob]
            for key in ("expert_hit_rate_major", "random_hit_rate_major", "reward_gap", "ae_share"):
                row[key] = float(np.mean([r[key] for r in server if key in r]))
            rows.append(row)
            print(json.dumps(row), flush=True)
            save(args, argv, points, rows, quiet=True)  # after every run: an interrupted grid keeps what finished
    return save(args, argv, points, rows)


def save(args, argv, points, rows, quiet=False) -> dict:
    summary = {}
    for axis, value, K, M in points:
        sel = [r for r in rows if r["K"] == K and r["M"] == M]
        if sel:
            summary[f"K={K},M={M}"] = dict(
                final_pass_at_1_mean=float(np.mean([r["final_pass_at_1"] for r in sel])),
                final_pass_at_1_std=float(np.std([r["final_pass_at_1"] for r in sel])), seeds=len(sel),
                hit_rate_major=float(np.mean([r["expert_hit_rate_major"] for r in sel])))
    seeds = sorted({r["seed"] for r in rows} | set(args.seeds))
    out = save_result(args.out, "fedgrpo_ablation", argv,
                      dict(SETTINGS, rounds=args.rounds, seeds=seeds, questions_per_step=args.questions,
                           eval_every=args.eval_every, set=args.set), rows,
                      summary, quiet=quiet)
    if args.commands:  # the earlier invocations whose runs this file keeps
        out["commands"] = args.commands + [out["command"]]
        Path(args.out).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
