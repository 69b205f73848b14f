"""Benchmark: does the value of a FedGRPO expert's score tell the server that the expert owns the question?

The gate λ_k (AE where a client holds the question with its label, ME elsewhere) is decided on the client and
never sent (docs/fedgrpo.md, deviation 4). But the AE check scores exactly 0 or 1, and the probability ME score
(``fedgrpo.me_score = "probability"``, the stored runs' score, an SFT evaluator's exp(log-probability) of the candidate's answer) lies
strictly between them wherever the candidate has an answer. A curious server that reads "every score of this
(question, expert) row is exactly 0 or 1 ⇒ this expert owns the question" then learns which questions are in which
client's private data. :func:`fedrl_kit.fedgrpo.diagnostics.ownership_leak` scores that rule against the
simulator's truth (who owns each D_s question) on every (question, expert) score row the server received.

Arms, each with the default paper variant and with_gt, one round of τ = 2 server steps:

- ``probability``: ``me_score = "probability"``, ``ae_holders = "owner"`` (the stored runs' setting);
- ``agreement``: ``me_score = "agreement"`` (the package default; 0/1: the candidate's answer equals the expert's greedy answer);
- ``probability_all_hold``: ``me_score = "probability"``, ``ae_holders = "all"`` (every client holds every label,
  so every score is an exact check, as in the official trainer).

Settings: the quick preset at a small size (K = 4 clients, Dirichlet β = 0.1, 400 training questions, b = 4, so
Q = 16 questions per step, M = 2 experts each), seeds 0 and 1; a few minutes of CPU.

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedgrpo_ownership_leak.py

writes ``benchmarks/results/fedgrpo_ownership_leak.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

from fedrl_kit.config import REFERENCE_PATH, preset  # noqa: E402
from fedrl_kit.fedgrpo.diagnostics import ownership_leak, scored_pairs  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

SETTINGS = dict(num_clients=4, dirichlet_alpha=0.1, n_train=400, prompts_per_step=4, local_steps=2,
                eval_samples=1, **REFERENCE_PATH)
"""Small and quick: K = 4, β = 0.1, 400 training questions, b = 4 (Q = b·K = 16 per step), τ = 2."""

ARMS = {
    "probability": {"me_score": "probability", "ae_holders": "owner"},
    "agreement": {"me_score": "agreement", "ae_holders": "owner"},
    "probability_all_hold": {"me_score": "probability", "ae_holders": "all"},
}
"""``config.fedgrpo`` of each arm (everything else: the defaults)."""

KEYS = ("identified", "false_positive_rate", "precision", "base_rate", "advantage")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fedgrpo_ownership_leak.json"))
    args = ap.parse_args(argv)
    rows, policy = [], None
    for seed in args.seeds:
        for arm in args.arms:
            cfg = preset("quick", method="fedgrpo", seed=seed, rounds=args.rounds, eval_every=args.rounds,
                         fedgrpo=dict(ARMS[arm]), **SETTINGS)
            t0 = time.time()
            run = Run(cfg, progress=False, policy=policy).build()
            policy = run.policy  # one model for every run; each run's adapters are its own
            traces = []
            for rnd in range(1, args.rounds + 1):
                traces += run.spec.run_round(run.server, rnd)["trace"]
            owner = run.truth.fact("queries").owner
            scores, owns = scored_pairs(traces, owner)
            values = np.concatenate([np.asarray(r, dtype=np.float64).ravel() for r in scores])
            ae = np.concatenate([r for r, o in zip(scores, owns) if o]) if any(owns) else np.zeros(0)
            me = np.concatenate([r for r, o in zip(scores, owns) if not o]) if not all(owns) else np.zeros(0)
            row = dict(arm=arm, seed=seed, **ownership_leak(scores, owns),
                       share_of_values_in_0_1=float(np.isin(values, (0.0, 1.0)).mean()),
                       owner_values_in_0_1=float(np.isin(ae, (0.0, 1.0)).mean()) if ae.size else float("nan"),
                       other_values_in_0_1=float(np.isin(me, (0.0, 1.0)).mean()) if me.size else float("nan"),
                       seconds=round(time.time() - t0, 1))
            rows.append(row)
            print(row, flush=True)
    summary = {}
    for arm in args.arms:
        mine = [r for r in rows if r["arm"] == arm]
        summary[arm] = {"owners_flagged": f"{sum(r['owners_flagged'] for r in mine)} of "
                                          f"{sum(r['owner_pairs'] for r in mine)}",
                        "others_flagged": f"{sum(r['others_flagged'] for r in mine)} of "
                                          f"{sum(r['pairs'] - r['owner_pairs'] for r in mine)}",
                        **{f"{k}_mean": float(np.mean([r[k] for r in mine])) for k in KEYS}}
    settings = dict(SETTINGS, rounds=args.rounds, seeds=args.seeds, arms={a: ARMS[a] for a in args.arms})
    return save_result(args.out, "fedgrpo_ownership_leak", argv, settings, rows, summary)


if __name__ == "__main__":
    main()
