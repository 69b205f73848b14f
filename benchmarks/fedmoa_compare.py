"""Benchmark: FedAvg-GRPO vs FedMOA (and the λ/α ablations) over the paper's three settings, one command.

The FedMOA paper (Table 1, Table 2) claims that FedMOA raises the global model's accuracy and the aggregated
multi-objective reward over its baseline (plain GRPO + FedAvg, which the paper calls "FedGRPO" and this toolkit
FedAvg-GRPO), most of all in Heter+Heter, and that both λ (adaptive weights) and α (accuracy-aware aggregation)
help. This script runs the grid — settings × variants × seeds — at one scale of
:mod:`experiments.fedmoa_presets` (``quick``, ``cpu`` or ``paper``), each run in its own resumable run directory,
and writes one JSON with every run's summary (last round and best round by validation), Table 1 and Table 2
(mean ± std over seeds) and the claims paired by seed.

The faithful grid on a CPU (18 runs; Table 2 adds 6 more with ``--ablations``; Heter+Heter took 19 min per
FedAvg-GRPO run and 34 min per FedMOA run, one thread each, several runs sharing a 2-core CPU)::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_compare.py --scale cpu \\
        --settings homo+homo homo+heter heter+heter --seeds 0 1 2 --ablations

and on a GPU the paper's (``--scale paper``; needs the MATH, GSM8K, MBPP datasets and Qwen2.5-1.5B-Instruct).
An interrupted grid resumes where it stopped (same command; finished runs are read back, not re-run).
Writes ``benchmarks/results/fedmoa_compare_<scale>.json``; run directories go under ``runs/fedmoa_compare/``.

``benchmarks/results/fedmoa_compare.json`` holds the first experiments (3 clients, one reward set per family,
uniform weights reset every round, shared-δ hypergradient, the first GSM8K-like family and base): they were
made by this script as of commit b037576 and re-run only from there (``docs/fedmoa.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import resume_environment_problem, save_result  # noqa: E402

from experiments.fedmoa_analysis import paired_claims, summary  # noqa: E402
from experiments.fedmoa_presets import SCALES, VARIANTS, setting_config  # noqa: E402
from fedrl_kit.fedmoa.args import SETTINGS  # noqa: E402
from fedrl_kit.runs import Run, check_kernels, load_records, recorded_kernels  # noqa: E402

# -- the faithful grid -----------------------------------------------------------------------------------------


def run_dir_of(root: Path, scale: str, setting: str, variant: str, seed: int) -> Path:
    slug = variant.replace("λ", "lambda").replace("α", "alpha").replace(", ", "_").replace(" ", "-")
    return root / scale / setting / slug / f"seed{seed}"


def finished(cfg, run_dir: Path) -> bool:
    """Whether ``run_dir`` holds all of ``cfg.rounds`` (its checkpoint says so)."""
    done = run_dir / "checkpoint" / "state.json"
    return done.exists() and json.loads(done.read_text())["round"] == cfg.rounds


def run_one(cfg, run_dir: Path) -> tuple[list[dict], float, bool]:
    """(records, wall seconds now, read back) of one run; a finished run directory is read back (0 s now; its
    rounds' own seconds stay in its records, ``round_seconds`` in the table) if it was computed with this
    process's torch CPU kernels."""
    if finished(cfg, run_dir):
        check_kernels(run_dir, recorded_kernels(run_dir))
        return load_records(run_dir), 0.0, True
    t0 = time.time()
    records = Run(cfg, run_dir, progress=False).run()
    return records, round(time.time() - t0, 1), False


def stored_runs(paths) -> dict[tuple[str, str, int], dict]:
    """(setting, variant, seed) → the run's row, from stored result files of this script (``--add-runs``).

    A file made in another environment (package versions or torch CPU kernels) is refused with the reason, since
    its runs would be paired with runs made here; the first file holding a cell wins. Each row keeps its numbers
    and records where it came from (``read_back``: the file's name).
    """
    out = {}
    for path in paths:
        old = json.loads(Path(path).read_text())
        if old.get("benchmark") != "fedmoa_compare":
            raise SystemExit(f"--add-runs: {path} is not a fedmoa_compare result file")
        why = resume_environment_problem(old, path)
        if why:
            raise SystemExit(f"--add-runs: {why}")
        for r in old["runs"]:
            out.setdefault((r["setting"], r["variant"], int(r["seed"])), {**r, "read_back": Path(path).name})
    return out


def table(rows: list[dict], setting: str, variants, prefix: str = "") -> dict:
    """variant → mean and std over seeds of the summary metrics (``prefix="best/"``: best round by validation)."""
    out = {}
    for v in variants:
        rs = [r for r in rows if r["setting"] == setting and r["variant"] == v]
        if not rs:
            continue
        keys = [k for k in rs[0] if isinstance(rs[0][k], float) and k.startswith(prefix)
                and (prefix or not k.startswith("best")) and k not in ("seconds", "round_seconds")]
        out[v] = {k[len(prefix):]: float(np.mean([r[k] for r in rs])) for k in keys}
        out[v].update({f"std_{k[len(prefix):]}": float(np.std([r[k] for r in rs])) for k in
                       (prefix + "global_accuracy", prefix + "aggregated_reward") if k in rs[0]})
        out[v]["n_seeds"] = len(rs)
    return out


TABLE_COLUMNS = ("global_accuracy", "aggregated_reward", "local_accuracy", "local_reward", "length", "math/pass@1",
                 "gsm/pass@1", "code/pass@1")


def markdown(rows: list[dict]) -> str:
    """The grid's tables as markdown: per variant and setting, mean ± std over seeds (sample form); every run;
    the claims, last round and best round by validation."""
    out = ["| setting | variant | seeds | " + " | ".join(TABLE_COLUMNS) + " |", "|---|---|---|" + "---|" * len(TABLE_COLUMNS)]
    for (setting, variant) in dict.fromkeys((r["setting"], r["variant"]) for r in rows):
        rs = [r for r in rows if r["setting"] == setting and r["variant"] == variant]
        cell = []
        for c in TABLE_COLUMNS:
            x = np.array([r.get(c, np.nan) for r in rs], float)
            if np.isnan(x).all():  # a family this setting does not test (the Homo settings hold one)
                cell.append("–")
                continue
            cell.append(f"{x.mean():.3f} ± {x.std(ddof=1):.3f}" if len(x) > 1 else f"{x.mean():.3f}")
        out.append(f"| {setting} | {variant} | {len(rs)} | " + " | ".join(cell) + " |")
    out += ["", "| setting | variant | seed | global acc | aggr. reward | local acc | best round | round seconds |",
            "|---|---|---|---|---|---|---|---|"]
    out += [f"| {r['setting']} | {r['variant']} | {r['seed']} | {r['global_accuracy']:.4f} | {r['aggregated_reward']:.4f} | "
            f"{r['local_accuracy']:.4f} | {r.get('best_round', '–')} | {r['round_seconds']} |" for r in rows]
    for prefix, what in (("", "last round"), ("best/", "best round by validation")):
        out += ["", f"| claim ({what}) | seeds | differences | mean | SE | ±95% t | verdict |",
                "|---|---|---|---|---|---|---|"]
        for c in paired_claims(rows, prefix):
            mean = "–" if c["mean_difference"] is None else f"{c['mean_difference']:+.4f}"
            se = "–" if c["se"] is None else f"{c['se']:.4f}"
            half = "–" if c["half_width"] is None else f"{c['half_width']:.4f}"
            diffs = ", ".join(f"{d:+.4f}" for d in c["differences"])
            verdict = c["verdict"].replace("|", "\\|")  # a bar inside a cell would end it
            out.append(f"| {c['claim']} | {len(c['seeds'])} | {diffs} | {mean} | {se} | {half} | {verdict} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", choices=SCALES, default="cpu")
    ap.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--ablations", action="store_true", help="also λ on/α off and λ off/α on (Heter+Heter only)")
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=None,
                    help="of the variants the grid would run (Table 1's two; all four in Heter+Heter with "
                         "--ablations), run only these; lets two processes share a grid without running the same "
                         "run directory")
    ap.add_argument("--homo-family", default="math", choices=("math", "gsm", "code"))
    ap.add_argument("--normalise", action="store_true", help="cosine Δ_k with λ = --lam (ours) instead of eq. 9")
    ap.add_argument("--lam", type=float, default=0.1, help="λ with --normalise")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="further RunConfig fields for every run (e.g. rounds=1 local_steps=2)")
    ap.add_argument("--run-root", default=str(ROOT / "runs" / "fedmoa_compare"))
    ap.add_argument("--collect-only", action="store_true",
                    help="run nothing: summarise the finished runs of the grid and list the others as not finished "
                         "(an interrupted run resumes later with the same command without this flag)")
    ap.add_argument("--markdown", action="store_true", help="also print the tables and claims as markdown")
    ap.add_argument("--add-runs", nargs="+", default=[], metavar="FILE",
                    help="with --collect-only: take a grid cell that has no finished run folder here from these "
                         "stored result files (their 'runs'), if they were made in this environment (packages and "
                         "CPU kernels); lets a grid whose run folders were made on another machine be completed")
    ap.add_argument("--out", default=None, help="default benchmarks/results/fedmoa_compare_<scale>.json")
    args = ap.parse_args(argv)
    from fedrl_kit.config import parse_set

    extra = parse_set(args.set)
    fedmoa = dict(normalise=True, lam=args.lam, lam_rule="fixed") if args.normalise else {}
    fedmoa.update({k.split(".", 1)[1]: extra.pop(k) for k in list(extra) if k.startswith("fedmoa.")})
    root = Path(args.run_root)
    if args.add_runs and not args.collect_only:
        ap.error("--add-runs goes with --collect-only (it reads stored runs; it does not run the grid)")
    stored = stored_runs(args.add_runs)
    rows, not_finished = [], []
    t_all = time.time()
    for setting in args.settings:
        variants = list(VARIANTS) if args.ablations and setting == "heter+heter" else ["FedAvg-GRPO", "FedMOA"]
        if args.variants:
            variants = [v for v in variants if v in args.variants]
        for seed in args.seeds:
            for variant in variants:
                cfg = setting_config(args.scale, setting, variant, seed, args.homo_family, fedmoa=fedmoa, **extra)
                run_dir = run_dir_of(root, args.scale, setting, variant, seed)
                if args.collect_only and not finished(cfg, run_dir) and (setting, variant, seed) in stored:
                    rows.append(stored[setting, variant, seed])
                    print(json.dumps(rows[-1]), flush=True)
                    continue
                if args.collect_only and not finished(cfg, run_dir):
                    not_finished.append(dict(setting=setting, variant=variant, seed=seed))
                    print(f"not finished, left out: {run_dir}", flush=True)
                    continue
                recs, seconds, reused = run_one(cfg, run_dir)
                rounds_s = round(sum(r["seconds"] for r in recs if r["kind"] == "comm"), 1)
                row = {"setting": setting, "variant": variant, "label": cfg.fedmoa.label(), "seed": seed,
                       "seconds": seconds, "round_seconds": rounds_s, "read_back": reused, **summary(recs)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    settings = {s: {k: v for k, v in setting_config(args.scale, s, "FedMOA", 0, args.homo_family, fedmoa=fedmoa,
                                                   **extra).to_dict().items()
                    if k in ("world", "num_clients", "rounds", "local_steps", "prompts_per_step", "num_generations",
                             "max_new_tokens", "n_train", "n_test", "n_aux", "eval_samples", "base", "fedmoa")}
                for s in args.settings}
    out = {
        "scale": args.scale,
        "table1": {s: table(rows, s, ["FedAvg-GRPO", "FedMOA"]) for s in args.settings},
        "table1_best_by_validation": {s: table(rows, s, ["FedAvg-GRPO", "FedMOA"], "best/") for s in args.settings},
        "table2": table(rows, "heter+heter", list(VARIANTS)),
        "claims": paired_claims(rows),
        "claims_best_by_validation": paired_claims(rows, "best/"),
        "seconds_total": round(time.time() - t_all, 1),
        "not_finished": not_finished,
    }
    path = args.out or ROOT / "benchmarks" / "results" / f"fedmoa_compare_{args.scale}.json"
    save_result(path, "fedmoa_compare", argv, settings, rows, out)
    if args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()
