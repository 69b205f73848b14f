"""Benchmark: FedAvg-GRPO vs FedMOA (and the λ/α ablations) over the paper's three settings, one command.

The FedMOA paper (Table 1, Table 2) claims that FedMOA raises the global model's accuracy and the aggregated
multi-objective reward over its baseline (plain GRPO + FedAvg, which the paper calls "FedGRPO" and this toolkit
FedAvg-GRPO), most of all in Heter+Heter, and that both λ (adaptive weights) and α (accuracy-aware aggregation)
help. This script runs the grid — settings × variants × seeds — at one scale of
:mod:`experiments.fedmoa_presets` (``quick``, ``cpu`` or ``paper``), each run in its own resumable run directory,
and writes one JSON with every run's summary (last round and best round by validation), Table 1 and Table 2
(mean ± std over seeds) and the claims paired by seed.

The grid on a CPU, in two steps. First the tuning grid (Heter+Heter at seed 10: FedMOA over λ ∈ LAM_GRID with a
fixed λ, FedAvg-GRPO over the same number of learning rates, each chosen by validation accuracy alone;
``benchmarks/results/fedmoa_tuning_cpu.json``), then the grid the verdicts read, with the chosen values (the
learning rate to every variant, as the paper keeps hyperparameters identical between its arms; λ to the variants
with λ on; 3 seeds; with three runs sharing a 2-core CPU, one thread each, a FedAvg-GRPO run took about 14 min and
a FedMOA run about 28)::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_compare.py --scale cpu \\
        --settings heter+heter --tune
    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_compare.py --scale cpu \\
        --settings heter+heter --ablations --tuned benchmarks/results/fedmoa_tuning_cpu.json

(``--settings homo+homo homo+heter --homo-family math gsm code`` adds Table 1's Homo settings on every family;
``--more-seeds 3 4 --more-variants FedAvg-GRPO FedMOA "FedMOA, uniform w_0"`` adds seeds to those Heter+Heter
variants only, for the verdicts that sit at their interval's edge; ``--homo-heter-ablation code`` adds "λ off, α on"
to Homo+Heter on the code family, to tell α from λ where FedMOA's clients' own models were ahead.)
On a GPU the paper's (``--scale paper``; needs the MATH, GSM8K, MBPP datasets and Qwen2.5-1.5B-Instruct).
An interrupted grid resumes where it stopped (same command; finished runs are read back, not re-run; a finished run
made with another config is refused). Each row of the result file keeps its run's per-round records
(``history``: the global model's evaluations, each client's α, weights and training accuracy per round), so the
figures of notebook 03 are drawn from the file. Run directories go under ``runs/fedmoa_compare/``.

``benchmarks/results/fedmoa_compare_cpu_scale_rule.json`` holds the grid made before the tuned λ (λ from a scale
rule, the per-sequence g_k, the reference sampling path; no per-round records), and
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

from experiments.fedmoa_analysis import (  # noqa: E402
    paired_claims, round_history, select_by_validation, setting_label, summary, summary_row_fields)
from experiments.fedmoa_presets import (  # noqa: E402
    LAM_GRID, LR_GRID, SCALES, TABLE2, TUNE_SEED, VARIANTS, setting_config, tuned_fields)
from fedrl_kit.config import RunConfig  # noqa: E402
from fedrl_kit.fedmoa.args import FAMILY_NAMES, SETTINGS  # noqa: E402
from fedrl_kit.runs import Run, check_kernels, load_records, recorded_kernels  # noqa: E402

# -- the faithful grid -----------------------------------------------------------------------------------------


def run_dir_of(root: Path, scale: str, setting: str, variant: str, seed: int, family: str = "math",
               tag: str = "") -> Path:
    """Where one run of the grid lives: ``<root>/<scale>/<setting>[-<family>]/<variant>[/<tag>]/seed<seed>`` (the
    Homo settings name their family unless it is the MATH-like one, the first grids' only family; ``tag`` names
    tuned hyperparameters, e.g. ``lam=100``)."""
    slug = variant.replace("λ", "lambda").replace("α", "alpha").replace(", ", "_").replace(" ", "-")
    where = setting if setting == "heter+heter" or family == "math" else f"{setting}-{family}"
    return root / scale / where / slug / tag / f"seed{seed}" if tag else root / scale / where / slug / f"seed{seed}"


def finished(cfg, run_dir: Path) -> bool:
    """Whether ``run_dir`` holds all of ``cfg.rounds`` (its checkpoint says so). A finished run made with another
    config is refused (naming the fields), never read back as this one."""
    done = run_dir / "checkpoint" / "state.json"
    if not (done.exists() and json.loads(done.read_text())["round"] == cfg.rounds):
        return False
    saved = RunConfig.from_dict(json.loads((run_dir / "config.json").read_text())).to_dict()
    mine = cfg.to_dict()
    diff = sorted(k for k in mine if mine[k] != saved.get(k))
    if diff:
        raise SystemExit(f"{run_dir} holds a finished run with another config (fields {diff}): move it away, or "
                         "use another --run-root")
    return True


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


def stored_runs(paths) -> dict[tuple[str, str, str, int], list[dict]]:
    """(setting, family, variant, seed) → the runs' rows, from stored result files of this script (``--add-runs``;
    rows without ``homo_family`` are the MATH-like family's, the first grids' only one).

    A file made in another environment (package versions or torch CPU kernels) is refused with the reason, since
    its runs would be paired with runs made here. Each row keeps its numbers and records where it came from
    (``read_back``: the file's name); :func:`stored_cell` picks the one made with a cell's setup.
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
            key = (r["setting"], r.get("homo_family") or "math", r["variant"], int(r["seed"]))
            out.setdefault(key, []).append({**r, "read_back": Path(path).name})
    return out


def stored_cell(stored: dict, cfg, setting: str, family: str, variant: str, seed: int) -> dict | None:
    """The first stored row of this cell made with ``cfg``'s setup (:func:`summary_row_fields`: λ's switches, rule
    and value, g_k's form, the initial weights, the learning rate), or None: a row of another setup (an earlier
    grid's λ rule) is never read back as this cell's."""
    want = summary_row_fields(cfg, [])
    want.pop("mean_w_move")
    for row in stored.get((setting, family, variant, seed), []):
        if all(row.get(k) == v for k, v in want.items() if k != "homo_family"):
            return row
    return None


def table(rows: list[dict], setting: str, variants, prefix: str = "", family: str | None = None) -> dict:
    """variant → mean and std over seeds of the summary metrics (``prefix="best/"``: best round by validation);
    ``family``: of a Homo setting, that family's runs only."""
    out = {}
    for v in variants:
        rs = [r for r in rows if r["setting"] == setting and r["variant"] == v
              and (family is None or r.get("homo_family", "math") == family)]
        if not rs:
            continue
        keys = [k for k in rs[0] if isinstance(rs[0][k], float) and k.startswith(prefix)
                and (prefix or not k.startswith("best")) and k not in ("seconds", "round_seconds", "mean_w_move")]
        out[v] = {k[len(prefix):]: float(np.mean([r[k] for r in rs])) for k in keys}
        out[v].update({f"std_{k[len(prefix):]}": float(np.std([r[k] for r in rs])) for k in
                       (prefix + "global_accuracy", prefix + "aggregated_reward") if k in rs[0]})
        out[v]["n_seeds"] = len(rs)
    return out


TABLE_COLUMNS = ("global_accuracy", "aggregated_reward", "local_accuracy", "local_reward", "math/pass@1",
                 "math/aggregated_reward", "gsm/pass@1", "code/pass@1", "mean_w_move")


def markdown(rows: list[dict]) -> str:
    """The grid's tables as markdown: per variant and setting, mean ± std over seeds (sample form); every run;
    the claims, last round and best round by validation."""
    out = ["| setting | variant | seeds | " + " | ".join(TABLE_COLUMNS) + " |", "|---|---|---|" + "---|" * len(TABLE_COLUMNS)]
    for (setting, variant) in dict.fromkeys((setting_label(r), r["variant"]) for r in rows):
        rs = [r for r in rows if setting_label(r) == setting and r["variant"] == variant]
        cell = []
        for c in TABLE_COLUMNS:
            x = np.array([np.nan if r.get(c) is None else r[c] for r in rs], float)
            if np.isnan(x).all():  # a family this setting does not test (the Homo settings hold one)
                cell.append("–")
                continue
            cell.append(f"{x.mean():.3f} ± {x.std(ddof=1):.3f}" if len(x) > 1 else f"{x.mean():.3f}")
        out.append(f"| {setting} | {variant} | {len(rs)} | " + " | ".join(cell) + " |")
    out += ["", "| setting | variant | seed | global acc | aggr. reward | local acc | best round | λ | lr | "
            "mean w move | round seconds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    out += [f"| {setting_label(r)} | {r['variant']} | {r['seed']} | {r['global_accuracy']:.4f} | {r['aggregated_reward']:.4f} | "
            f"{r['local_accuracy']:.4f} | {r.get('best_round', '–')} | {r.get('lam') if r.get('lambda_on') else '–'} | "
            f"{r.get('learning_rate', '–')} | "
            f"{'–' if r.get('mean_w_move') is None else format(r['mean_w_move'], '.4f')} | {r['round_seconds']} |"
            for r in rows]
    for prefix, what in (("", "last round"), ("best/", "best round by validation")):
        out += ["", f"| claim ({what}) | seeds | differences | mean | ±95% t | the paper | verdict |",
                "|---|---|---|---|---|---|---|"]
        for c in paired_claims(rows, prefix):
            if c["verdict"] == "not run":
                continue
            mean = "–" if c["mean_difference"] is None else f"{c['mean_difference']:+.4f}"
            half = "–" if c["half_width"] is None else f"{c['half_width']:.4f}"
            paper = "–" if c["paper"] is None else f"{c['paper']:+.4f}"
            diffs = ", ".join(f"{d:+.4f}" for d in c["differences"])
            verdict = c["verdict"].replace("|", "\\|")  # a bar inside a cell would end it
            out.append(f"| {c['claim']} | {len(c['seeds'])} | {diffs} | {mean} | {half} | {paper} | {verdict} |")
    return "\n".join(out)


def result_row(cfg, run_dir: Path, setting: str, variant: str, seed: int, family: str) -> dict:
    """Run (or read back) one cell and summarise it: Table 1/2's numbers, how it was set up, and its per-round
    records (``history``: the Fig. 3–5 analogues are drawn from these)."""
    recs, seconds, reused = run_one(cfg, run_dir)
    rounds_s = round(sum(r["seconds"] for r in recs if r["kind"] == "comm"), 1)
    return {"setting": setting, "variant": variant, "label": cfg.fedmoa.label(), "seed": seed, "seconds": seconds,
            "round_seconds": rounds_s, "read_back": reused, **summary_row_fields(cfg, recs), **summary(recs),
            "history": round_history(recs), "run_dir": shown(run_dir)}


def shown(path: Path) -> str:
    """A run folder as a result file names it: relative to the repository when it is inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def tune(args, extra: dict, fedmoa: dict) -> dict:
    """The tuning grid: FedMOA's λ (``LAM_GRID``, fixed λ) and FedAvg-GRPO's learning rate (``LR_GRID``), the same
    number of runs each, Heter+Heter at the tuning seed; each choice by validation accuracy only."""
    rows = []
    at = f",lr={extra['learning_rate']:g}" if "learning_rate" in extra else ""  # λ tuned at another learning rate
    # than the default gets folders of its own
    cells = [("FedMOA", {**fedmoa, "lam_rule": "fixed", "lam": lam}, {}, f"lam={lam:g}{at}") for lam in args.lam_grid]
    cells += [("FedAvg-GRPO", fedmoa, {"learning_rate": lr}, f"lr={lr:g}") for lr in args.lr_grid]
    for variant, moa, more, tag in cells:
        moa = {**moa, "eval_local": False}  # the choice reads validation only: no local models to score
        cfg = setting_config(args.scale, "heter+heter", variant, args.tune_seed, fedmoa=moa, **{**extra, **more})
        run_dir = run_dir_of(Path(args.run_root), args.scale, "heter+heter", variant, args.tune_seed, tag=tag)
        if args.collect_only and not finished(cfg, run_dir):
            print(f"not finished, left out: {run_dir}", flush=True)
            continue
        row = result_row(cfg, run_dir, "heter+heter", variant, args.tune_seed, "math")
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "history"}), flush=True)
    chosen = {}
    lam_rows = [r for r in rows if r["variant"] == "FedMOA"]
    lr_rows = [r for r in rows if r["variant"] == "FedAvg-GRPO"]
    if args.lam_grid and len(lam_rows) == len(args.lam_grid):
        chosen["lam"] = select_by_validation(lam_rows, "lam")
    if args.lr_grid and len(lr_rows) == len(args.lr_grid):
        chosen["learning_rate"] = select_by_validation(lr_rows, "learning_rate")
    return {"rows": rows, "selected": chosen}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", choices=SCALES, default="cpu")
    ap.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--ablations", action="store_true",
                    help=f"in Heter+Heter also the ablation rows: {', '.join(TABLE2[1:])}")
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=None,
                    help="of the variants the grid would run (Table 1's two; with --ablations in Heter+Heter "
                         "the ablation rows too), run only these; lets two processes share a grid without running "
                         "the same run directory")
    ap.add_argument("--more-seeds", type=int, nargs="+", default=[], metavar="SEED",
                    help="Heter+Heter only: these seeds too, for the variants of --more-variants (more seeds where a "
                         "verdict sits at its interval's edge, without running every ablation row again)")
    ap.add_argument("--more-variants", nargs="+", choices=list(VARIANTS), default=["FedAvg-GRPO", "FedMOA"],
                    help="the Heter+Heter variants --more-seeds adds seeds to")
    ap.add_argument("--homo-family", nargs="+", default=["math"], choices=FAMILY_NAMES,
                    help="the families the Homo settings run on, one grid each (the paper: all three)")
    ap.add_argument("--homo-heter-ablation", nargs="+", default=[], choices=FAMILY_NAMES, metavar="FAMILY",
                    help="in Homo+Heter on these families also \"λ off, α on\" (ours: which of α and λ makes a "
                         "difference there)")
    ap.add_argument("--normalise", action="store_true", help="cosine Δ_k with λ = --lam (ours) instead of eq. 9")
    ap.add_argument("--lam", type=float, default=0.1, help="λ with --normalise")
    ap.add_argument("--tune", action="store_true",
                    help="run the tuning grid instead (Heter+Heter at --tune-seed: FedMOA over --lam-grid, FedAvg-GRPO "
                         "over --lr-grid; each chosen by validation accuracy) and write it to --out")
    ap.add_argument("--lam-grid", type=float, nargs="+", default=list(LAM_GRID))
    ap.add_argument("--lr-grid", type=float, nargs="*", default=list(LR_GRID),
                    help="FedAvg-GRPO's learning rates in --tune (none: tune λ only, e.g. at --set learning_rate=…)")
    ap.add_argument("--tune-seed", type=int, default=TUNE_SEED)
    ap.add_argument("--tuned", default=None, metavar="FILE",
                    help="a tuning result file (--tune): every variant takes its learning rate (chosen on FedAvg-GRPO), "
                         "the variants with λ on its λ (fixed)")
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
    ap.add_argument("--out", default=None, help="default benchmarks/results/fedmoa_compare_<scale>.json "
                                                "(with --tune: fedmoa_tuning_<scale>.json)")
    args = ap.parse_args(argv)
    from fedrl_kit.set_syntax import parse_set

    extra = parse_set(args.set)
    fedmoa = dict(normalise=True, lam=args.lam, lam_rule="fixed") if args.normalise else {}
    fedmoa.update({k.split(".", 1)[1]: extra.pop(k) for k in list(extra) if k.startswith("fedmoa.")})
    root = Path(args.run_root)
    if args.add_runs and not args.collect_only:
        ap.error("--add-runs goes with --collect-only (it reads stored runs; it does not run the grid)")
    t_all = time.time()
    if args.tune:
        out = tune(args, extra, fedmoa)
        out["seconds_total"] = round(time.time() - t_all, 1)
        path = args.out or ROOT / "benchmarks" / "results" / f"fedmoa_tuning_{args.scale}.json"
        settings = {"heter+heter": setting_config(args.scale, "heter+heter", "FedMOA", args.tune_seed, fedmoa=fedmoa,
                                                  **extra).to_dict()}
        save_result(path, "fedmoa_compare", argv, settings, out.pop("rows"), {"tuning": True, **out})
        print(json.dumps(out["selected"]))
        return
    stored = stored_runs(args.add_runs)
    rows, not_finished = [], []
    for setting in args.settings:
        families = ["math"] if setting == "heter+heter" else args.homo_family
        more_seeds = args.more_seeds if setting == "heter+heter" else []
        for family in families:
            variants = list(TABLE2) if args.ablations and setting == "heter+heter" else ["FedAvg-GRPO", "FedMOA"]
            if setting == "homo+heter" and family in args.homo_heter_ablation:
                variants.insert(1, "λ off, α on")
            if args.variants:
                variants = [v for v in variants if v in args.variants]
            for seed in sorted(set(args.seeds) | set(more_seeds)):
                for variant in variants:
                    if seed not in args.seeds and variant not in args.more_variants:
                        continue  # --more-seeds: only the variants whose verdicts need them
                    moa, more, tag = tuned_fields(args.tuned, variant) if args.tuned else ({}, {}, "")
                    cfg = setting_config(args.scale, setting, variant, seed, family, fedmoa={**fedmoa, **moa},
                                         **{**extra, **more})
                    run_dir = run_dir_of(root, args.scale, setting, variant, seed, family, tag)
                    row = stored_cell(stored, cfg, setting, family, variant, seed) if stored else None
                    if args.collect_only and not finished(cfg, run_dir) and row is not None:
                        rows.append(row)
                        print(json.dumps({k: v for k, v in row.items() if k != "history"}), flush=True)
                        continue
                    if args.collect_only and not finished(cfg, run_dir):
                        not_finished.append(dict(setting=setting, homo_family=family, variant=variant, seed=seed))
                        print(f"not finished, left out: {run_dir}", flush=True)
                        continue
                    rows.append(result_row(cfg, run_dir, setting, variant, seed, family))
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "history"}), flush=True)
    moa, more, _ = tuned_fields(args.tuned, "FedMOA") if args.tuned else ({}, {}, "")  # what FedMOA's runs used
    settings = {s: {k: v for k, v in setting_config(args.scale, s, "FedMOA", 0, args.homo_family[0],
                                                   fedmoa={**fedmoa, **moa}, **{**extra, **more}).to_dict().items()
                    if k in ("world", "num_clients", "rounds", "local_steps", "prompts_per_step", "num_generations",
                             "max_new_tokens", "n_train", "n_test", "n_aux", "eval_samples", "base", "fedmoa",
                             "learning_rate", "lr_schedule", "prompt_pass", "generation_loop", "length_buckets")}
                for s in args.settings}
    if args.tuned:
        settings["tuned"] = {"file": str(args.tuned), **json.loads(Path(args.tuned).read_text())["summary"]["selected"]}
    homo = [(s, f) for s in args.settings if s != "heter+heter" for f in args.homo_family]
    out = {
        "scale": args.scale,
        "table1": {**{f"{s} ({f})": table(rows, s, ["FedAvg-GRPO", "FedMOA"], family=f) for s, f in homo},
                   **({"heter+heter": table(rows, "heter+heter", ["FedAvg-GRPO", "FedMOA"])}
                      if "heter+heter" in args.settings else {})},
        "table1_best_by_validation": {
            **{f"{s} ({f})": table(rows, s, ["FedAvg-GRPO", "FedMOA"], "best/", family=f) for s, f in homo},
            **({"heter+heter": table(rows, "heter+heter", ["FedAvg-GRPO", "FedMOA"], "best/")}
               if "heter+heter" in args.settings else {})},
        "table2": table(rows, "heter+heter", list(TABLE2)),
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
