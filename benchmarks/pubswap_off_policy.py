"""Appendix A.2's off-policy distortion of Balanced, measured at every public step of whole runs, over seeds.

PubSwap's appendix bounds the extra drift a Balanced public step adds by ω_n = ‖e_n‖, the norm of the Balanced
gradient minus the on-policy one, and bounds ω_n by (1/b) Σ_x M_n(x) β_n(x): few replacements (small α) and a small
change per replacement (small β) keep it small. This driver reruns the stored sweep's Balanced arm (Table 1's,
``experiments.sweep.pubswap_grid``, the paper setting, τ_swap = 2) with ``pubswap.trace_off_policy``: before every
public step, each client measures, at its current θ, ω_n, the bound, max_x β_n(x), the norm of its on-policy public
gradient ‖ĝ_n‖, and α_n (``fedrl_kit.pubswap.public_step.distortion_terms``). Tracing changes nothing the run
trains, so each run's final pass@1 and drift are the stored row's (checked and recorded).

Per seed it reports, over that seed's client-steps: the share of client-steps with a replacement; over those, the
mean of ω/‖ĝ‖ (the distortion relative to the gradient it distorts) and of ω/bound (how much of the bound the
replacements use), and the correlation of ω/‖ĝ‖ with α. Across seeds: mean ± Student-t half-width (n − 1 df).

Run (one thread, about 2–3 min a run): ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pubswap_off_policy.py
--taus 8 --seeds 0 1 2``. ``--scale quick_large_tau --taus 32 48`` traces the larger-τ grid (96 local steps, where
the swap carries the drift reduction; about four times a quick run). Output:
``benchmarks/results/pubswap_off_policy.json``; runs of other scales, τ or seeds already in it are kept (the summary
covers them all: key ``τ`` at the quick scale, ``τ (scale)`` at another), with the command that made each.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from _machine import cpu_model, package_versions  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
SCALES = ("quick", "quick_large_tau", "quick_tau64")
"""the scales of :data:`experiments.sweep.PUBSWAP_SCALES` this traces on the embedded world"""


def summary_key(scale: str, tau: int) -> str:
    """The summary's key of a scale's τ: ``"8"`` at the quick scale (the file's first key form), ``"32 (scale)"``
    at another, whose τ = 8 is a different run (another budget)."""
    return str(tau) if scale == "quick" else f"{tau} ({scale})"


def points(records: list[dict]) -> list[dict]:
    """One row per (round, client, public step) from a traced run's client records."""
    from fedrl_kit.pubswap.method import TRACED

    rows = []
    for r in records:
        if r["kind"] != "client":
            continue
        steps = sorted({int(k.split("@")[1]) for k in r if k.split("@")[0] in TRACED})
        rows += [{"round": r["round"], "client": r["client"], "step": s,
                  **{name: r[f"{name}@{s}"] for name in TRACED}} for s in steps]
    return rows


def per_seed(rows: list[dict]) -> dict:
    """The seed's summary over its client-steps (the ratios over those with a replacement)."""
    swapped = [p for p in rows if p["alpha"] > 0]
    rel = np.array([p["omega"] / p["public_grad"] for p in swapped if p["public_grad"] > 0])
    used = np.array([p["omega"] / p["omega_bound"] for p in swapped if p["omega_bound"] > 0])
    alpha = np.array([p["alpha"] for p in swapped if p["public_grad"] > 0])
    corr = float(np.corrcoef(alpha, rel)[0, 1]) if len(rel) > 2 and alpha.std() > 0 and rel.std() > 0 else None
    return {"client_steps": len(rows), "share_with_replacement": len(swapped) / max(1, len(rows)),
            "alpha_mean_when_swapped": float(alpha.mean()) if len(alpha) else None,
            "omega_over_grad_mean": float(rel.mean()) if len(rel) else None,
            "omega_over_bound_mean": float(used.mean()) if len(used) else None,
            "corr_alpha_omega_over_grad": corr}


def main(argv=None) -> int:
    from experiments.stats import t_interval
    from experiments.sweep import pubswap_grid
    from fedrl_kit.runs import Run

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", default="quick", choices=SCALES, help="the sweep's budget and τ grid")
    ap.add_argument("--taus", type=int, nargs="+", default=[8])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pubswap_off_policy.json"))
    args = ap.parse_args(argv)
    from experiments.sweep import PUBSWAP_SCALES, result_path

    taus = PUBSWAP_SCALES[args.scale]["taus"]
    bad = sorted(set(args.taus) - set(taus))
    if bad:
        ap.error(f"--taus {bad} not in the {args.scale} scale's grid {list(taus)}")
    grid = pubswap_grid("quick", seeds=args.seeds, tables=("table1",), scale=args.scale)
    stored_path = result_path("paper", args.scale, RESULTS)
    stored = {(r["method"], r["tau"], r["seed"]): r for r in json.loads(stored_path.read_text())
              if r.get("table") == "table1"} if stored_path.exists() else {}
    t0, runs = time.perf_counter(), []
    for tau in args.taus:
        for seed in args.seeds:
            cfg = grid[f"table1/pubswap_balanced/tau{tau}/seed{seed}"]
            cfg = cfg.replace(**{"pubswap.trace_off_policy": True})
            t1 = time.perf_counter()
            records = Run(cfg, progress=False).run()
            rows = points(records)
            final = [r for r in records if r["kind"] == "global"][-1]["pass@1"]
            old = stored.get(("pubswap_balanced", tau, seed))
            runs.append({"scale": args.scale, "tau": tau, "seed": seed, "seconds": round(time.perf_counter() - t1, 1),
                         "pass@1_final": final, "stored_pass@1_final": old and old.get("pass@1_final"),
                         "summary": per_seed(rows), "points": rows})
            print(f"τ = {tau}, seed {seed}: {json.dumps(runs[-1]['summary'])} (pass@1 {final:.3f}, stored "
                  f"{old and old.get('pass@1_final')})", flush=True)
    out = Path(args.out)
    done = {(args.scale, r["tau"], r["seed"]) for r in runs}
    commands = ["OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pubswap_off_policy.py "
                + " ".join(argv if argv is not None else sys.argv[1:])]
    if out.exists():  # runs of other τ or seeds stay, each with the command that made it
        old = json.loads(out.read_text())
        kept = [dict(r, scale=r.get("scale", "quick")) for r in old["runs"]]  # rows from before scales: quick
        runs = [r for r in kept if (r["scale"], r["tau"], r["seed"]) not in done] + runs
        earlier = old.get("commands", [old["command"]] if "command" in old else [])
        commands = [c for c in earlier if c not in commands] + commands
    runs.sort(key=lambda r: (SCALES.index(r["scale"]), r["tau"], r["seed"]))
    summary = {}
    for scale, tau in dict.fromkeys((r["scale"], r["tau"]) for r in runs):
        here = [r for r in runs if (r["scale"], r["tau"]) == (scale, tau)]
        mine, key_ = [r["summary"] for r in here], summary_key(scale, tau)
        summary[key_] = {"seeds": [r["seed"] for r in here]}
        for key in ("share_with_replacement", "alpha_mean_when_swapped", "omega_over_grad_mean",
                    "omega_over_bound_mean", "corr_alpha_omega_over_grad"):
            vals = [m[key] for m in mine if m[key] is not None]
            mean, half, n = t_interval(vals)
            summary[key_][key] = {"mean": mean, "half_width": half, "n": n}
            print(f"τ = {key_}: {key} = {mean:.4f} ± {half:.4f} (n = {n})")
    out.write_text(json.dumps({
        "benchmark": "pubswap_off_policy", "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commands": commands,
        "machine": {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "packages": package_versions(),
                    "omp_num_threads": os.environ.get("OMP_NUM_THREADS")},
        "interval": "mean ± Student-t half-width over seeds, 95 %, n − 1 degrees of freedom",
        "summary": summary, "runs": runs, "seconds": round(time.perf_counter() - t0, 1)}, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
