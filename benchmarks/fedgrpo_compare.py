"""Benchmark: FedGRPO vs Central-GRPO vs Fedpetuning+GRPO (= fedavg_grpo) in the embedded world.

The FedGRPO paper's headline claims (Table 1): FedGRPO comes close to Central-GRPO and is above
the federated baselines. This script runs each method on the same federation, seeds and budget
(the quick preset with K = 8 clients, Dirichlet β = 0.1 over topics, τ local steps of b prompts ×
G = 8 completions; FedGRPO's server takes τ steps of b·K questions, see
``fedrl_kit.fedgrpo.algorithm``) and records final pass@1 on the held-out test split, FedGRPO's
expert-selection hit rate against random selection, bytes on the wire and wall time.

Every method trains on the same questions: the training pool the partition spreads over the
clients (FedGRPO's ``D_s`` since ``fedgrpo.queries="train"``; each question's owner holds its label,
``fedgrpo.gt_fraction = 1``). ``--set fedgrpo.queries=public --set fedgrpo.gt_fraction=0.5`` gives
the earlier setting of the stored ``benchmarks/results/fedgrpo_compare.json`` (D_s = world.public).

``--no-gt`` runs the paper's Table 2 setting (§4.3, no ground truth): FedGRPO with
``fedgrpo.mode=no_gt`` (D_s = the pool's unlabelled share; ``gt_fraction`` = 0.667 of it, the
official code's reward-model split, trains the clients' evaluators only), GRPO-trained client
evaluators (``evaluator.training=grpo``) and ME alone. Central-GRPO stays the labelled upper bound,
as in the paper; Fedpetuning (``fedavg_grpo``, ``fedpetuning_sft``) and DPSDA-FL (``dpsda_*``) need the
answers of the questions they train on and are reported as inapplicable, not run.

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedgrpo_compare.py
    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedgrpo_compare.py --no-gt

writes ``benchmarks/results/fedgrpo_compare_pool.json`` (``fedgrpo_compare_nogt.json`` with ``--no-gt``;
``--out`` to change). ``--methods``,
``--seeds``, ``--rounds`` narrow or widen it; ``--set section.field=value`` (as ``fedrl run --set``)
changes a setting of every run that uses that section, ``--set field=value`` one of every run (the IID
row: ``--set partition=iid --out benchmarks/results/fedgrpo_compare_iid.json``). ``--resume`` keeps the
runs already in the result file (same settings only) and adds the missing (method, seed) pairs; the file
is rewritten after every run, so an interrupted grid resumes with the same command plus ``--resume``.
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

from experiments.fedgrpo_claims import METHOD_NAMES  # noqa: E402  - the paper's names, as the tables print them
from fedrl_kit.config import REFERENCE_PATH, preset  # noqa: E402
from fedrl_kit.methods import method_spec  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402
from fedrl_kit.set_syntax import parse_set  # noqa: E402

SETTINGS = dict(num_clients=8, dirichlet_alpha=0.1, prompts_per_step=4, local_steps=2, eval_samples=4, **REFERENCE_PATH)
"""the comparison's setting; REFERENCE_PATH: the sampling and scoring path its stored results were made on"""
"""Shared by every method: K = 8, β = 0.1, b = 4, τ = 2 (quick preset otherwise: G = 8, lr 2e-3, …)."""

STORED_ME = "probability"
"""the ME score the stored FedGRPO runs were made with (the default before ``agreement``; ``--set`` overrides it)"""
STORED_ME_SCORE = [f"fedgrpo.me_score={STORED_ME}"]

NO_GT = ["fedgrpo.mode=no_gt", "fedgrpo.gt_fraction=0.667", "evaluator.training=grpo"]
"""``--no-gt``: FedGRPO's settings for Table 2 (given before ``--set``, which can override them)."""

NEEDS_LABELS = ("fedavg_grpo", "fedpetuning_sft", "dpsda_grpo", "dpsda_sft")
"""Baselines that train on the answers of their questions: inapplicable without ground truth (paper §4.3)."""


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["fedgrpo", "central_grpo", "fedavg_grpo"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--set", nargs="+", action="extend", default=[], metavar="SECTION.FIELD=VALUE",
                    help="a method setting for every run that reads its section, e.g. fedgrpo.gt_fraction=0.5")
    ap.add_argument("--no-gt", action="store_true",
                    help="the no-ground-truth setting (Table 2): FedGRPO with ME only and GRPO-trained evaluators")
    ap.add_argument("--out", default=None, help="result file (default: fedgrpo_compare_pool.json, "
                                                "fedgrpo_compare_nogt.json with --no-gt)")
    ap.add_argument("--eval-every", type=int, default=None,
                    help="evaluate the global model every N rounds (default: only at the end); each row then "
                         "carries its pass@1 curve, to see whether training has flattened")
    ap.add_argument("--allow-mixed-environment", action="store_true",
                    help="with --resume: extend a file whose runs were made with other package versions")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in --out (its settings must match) and run only the missing ones")
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = str(ROOT / "benchmarks" / "results" / f"fedgrpo_compare_{'nogt' if args.no_gt else 'pool'}.json")
    extra = parse_set(STORED_ME_SCORE + (NO_GT if args.no_gt else []) + args.set)
    eval_every = args.eval_every or args.rounds
    settings = dict(SETTINGS, rounds=args.rounds, eval_every=eval_every, no_gt=args.no_gt,
                    me_score=extra["fedgrpo.me_score"],
                    set=(NO_GT if args.no_gt else []) + args.set)  # files made before me_score was recorded resume
    rows, inapplicable, commands = [], {}, []
    if args.resume and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        mismatch = {k: (old["settings"].get(k), v) for k, v in settings.items() if old["settings"].get(k, v) != v}
        if mismatch:
            raise SystemExit(f"--resume: {args.out} was made with other settings "
                             + ", ".join(f"{k}={a!r} (now {b!r})" for k, (a, b) in mismatch.items()))
        check_resume_environment(old, args.out, args.allow_mixed_environment)
        rows = list(old["runs"])
        commands = old.get("commands", [old["command"]])
    done = {(r["method"], r["seed"]) for r in rows}

    def summarise() -> dict:
        summary = {m: dict(inapplicable=why) for m, why in inapplicable.items()}
        for method in dict.fromkeys(r["method"] for r in rows):
            finals = [r["final_pass_at_1"] for r in rows if r["method"] == method]
            summary[method] = dict(final_pass_at_1_mean=float(np.mean(finals)),
                                   final_pass_at_1_std=float(np.std(finals)), seeds=len(finals),
                                   base_pass_at_1=float(np.mean([r["base_pass_at_1"] for r in rows
                                                                 if r["method"] == method])))
            for key in ("expert_hit_rate", "random_hit_rate", "expert_hit_rate_major", "random_hit_rate_major"):
                vals = [r[key] for r in rows if r["method"] == method and key in r]
                if vals:
                    summary[method][key] = float(np.mean(vals))
        return summary

    def save(final: bool):
        out = save_result(args.out, "fedgrpo_compare", argv, dict(settings, seeds=sorted({r["seed"] for r in rows})),
                          rows, summarise(), quiet=not final)
        if commands:  # the earlier invocations whose runs this file keeps
            out["commands"] = commands + [out["command"]]
            Path(args.out).write_text(json.dumps(out, indent=2))
        return out

    for seed in args.seeds:
        for method in args.methods:
            if args.no_gt and method in NEEDS_LABELS:
                inapplicable[method] = f"{METHOD_NAMES[method]} trains on the answers, which no client holds"
                continue
            if (method, seed) in done:
                continue
            # a run-level field (no section: partition=iid, dirichlet_alpha=…) applies to every method; a
            # section's field only to the methods that read that section
            sections = {cls.SECTION for cls in method_spec(method).sections}
            mine = {k: v for k, v in extra.items() if "." not in k or k.split(".", 1)[0] in sections}
            cfg = preset("quick", method=method, seed=seed, rounds=args.rounds, eval_every=eval_every,
                         **{**SETTINGS, **mine})
            t0 = time.time()
            run = Run(cfg, progress=False)
            recs = run.run()
            glob = [r for r in recs if r["kind"] == "global"]
            server = [r for r in recs if r["kind"] == "client" and r["client"] == "server"]
            row = dict(method=method, seed=seed, base_pass_at_1=glob[0]["pass@1"], final_pass_at_1=glob[-1]["pass@1"],
                       final_format=glob[-1]["format"], seconds=round(time.time() - t0, 1),
                       bytes_up=run.runtime.ledger.total_bytes("up"), bytes_down=run.runtime.ledger.total_bytes("down"))
            if len(glob) > 2:
                row["curve"] = [[g["round"], g["pass@1"]] for g in glob]
                if server:  # what the server's training signal did round by round (why a curve bends)
                    row["server_curve"] = server_curve(server)
            for key in ("expert_hit_rate", "random_hit_rate", "expert_hit_rate_major", "random_hit_rate_major",
                        "ae_share", "reward_gap"):
                vals = [r[key] for r in server if key in r]
                if vals:
                    row[key] = float(np.mean(vals))
            for key in ("evaluator_sft_loss", "evaluator_grpo_reward_first", "evaluator_grpo_reward_last"):
                vals = [r[key] for r in recs if r["kind"] == "client" and key in r]  # the clients' θ_k, round 1
                if vals:
                    row[key] = float(np.mean(vals))
            rows.append(row)
            print(json.dumps(row), flush=True)
            save(final=False)
    return save(final=True)


SERVER_CURVE_KEYS = ("reward_mean", "candidate_accuracy", "reward_gap", "ae_share", "format", "kl",
                     "completion_length", "frac_zero_adv", "expert_hit_rate_major")
"""Server diagnostics kept per round in a row's ``server_curve`` (see :mod:`fedrl_kit.fedgrpo`, Metrics)."""


def server_curve(server: list[dict]) -> list[dict]:
    """Per round, the mean of each of ``SERVER_CURVE_KEYS`` over the round's server-step records."""
    out = []
    for rnd in sorted({r["round"] for r in server}):
        recs = [r for r in server if r["round"] == rnd]
        out.append({"round": rnd} | {k: float(np.mean([r[k] for r in recs if k in r]))
                                     for k in SERVER_CURVE_KEYS if any(k in r for r in recs)})
    return out


if __name__ == "__main__":
    main()
