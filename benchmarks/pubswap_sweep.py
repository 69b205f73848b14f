"""PubSwap's experiments in the embedded world: Tables 1, 4 and 5 on a fixed budget of local steps.

    .venv/bin/python benchmarks/pubswap_sweep.py                      # seed 0, every table (quick scale)
    .venv/bin/python benchmarks/pubswap_sweep.py --seeds 0 1 2        # Tables 1, 4, 5 on 3 seeds
    .venv/bin/python benchmarks/pubswap_sweep.py --scale quick_large_tau --tables table1 --seeds 0 1 2 \
        --methods fedavg_grpo pubswap_balanced pubswap_random fedprox_grpo_mu0.001 fedprox_grpo_mu0.01 \
        fedprox_grpo_mu0.1                                            # the larger-τ grid (τ up to 48)
    .venv/bin/python benchmarks/pubswap_sweep.py --scale quick_tau64 --tables table1 --seeds 0 1 2   # τ up to 64

On a GPU, ``--preset pubswap-qwen2.5-math-1.5b-math`` (or another ``pubswap-*`` preset) runs the full scale, the
paper's budget; the generic ``full`` preset is refused there (8 clients, b = 32: not the paper's N, b, K).

``--setting paper`` (the default) is the paper's: FedIT aggregation (eq. 4) for every arm, AdamW with weight
decay 0.01 (Tables 9–12), equal-size clients. ``--setting fedavg_examples`` is the setting of the first stored
sweep (FedAvg by examples, plain Adam, unequal Dirichlet clients in Tables 1 and 5).

Runs go to ``runs/pubswap/<setting>/<scale>/<table>/<method>/tau<τ>/seed<s>`` (resumable: rerunning the command
continues an interrupted sweep). Each run adds one summary row:

- setting ``paper``: to ``benchmarks/results/pubswap_paper_<scale>.json``;
- setting ``fedavg_examples`` at the quick scale: to ``benchmarks/results/pubswap_sweep.json`` (the first stored
  sweep's file), other scales as for ``paper``.

A row holds the run's settings, its summary numbers, its curves (every global evaluation and every public step's
replacement fraction: what notebook 02 plots) and the SHA-256 of its records (``records_digest``): the records
themselves stay in the run folder, and ``benchmarks/reproduce_stored.py`` re-runs rows and compares digests.

Rows are merged with earlier rows of the same file (a rerun replaces its own row; the file is re-read under a lock
before each write, so sweeps of other seeds or methods can run side by side) and record the aggregator,
weight decay and client sizes that ran; notebook 02 reads them.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.sweep import (PUBSWAP_SCALES, SETTINGS, parse_name, pubswap_grid, result_path,  # noqa: E402
                               run_grid, summary_row)
from fedrl_kit.runs import recorded_cpu_model, recorded_kernels  # noqa: E402

OUT = ROOT / "benchmarks" / "results"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="quick", help="config preset of every run (quick, full or a paper preset)")
    ap.add_argument("--scale", default=None, choices=tuple(PUBSWAP_SCALES),
                    help="budget and τ grid (default: quick for the quick preset, else full)")
    ap.add_argument("--setting", default="paper", choices=tuple(SETTINGS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--tables", nargs="+", default=["table1", "table4", "table5"])
    ap.add_argument("--taus", type=int, nargs="*", default=None, help="only these τ (default: all of the scale)")
    ap.add_argument("--methods", nargs="*", default=None, help="only these method names of the grid")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config field of every run (e.g. a smaller check: --set n_test=28)")
    ap.add_argument("--runs", default=None, help="runs folder (default runs/pubswap/<setting>/<scale>)")
    ap.add_argument("--out", default=None, help="summary JSON (default: see the module docstring)")
    args = ap.parse_args(argv)

    from fedrl_kit.set_syntax import parse_set

    scale = args.scale or ("quick" if args.preset == "quick" else "full")
    grid = pubswap_grid(args.preset, seeds=tuple(args.seeds), tables=tuple(args.tables), setting=args.setting,
                        scale=scale, **parse_set(args.set))
    keep = {k: v for k, v in grid.items()
            if (args.taus is None or parse_name(k)["tau"] in args.taus)
            and (args.methods is None or parse_name(k)["method"] in args.methods)}
    print(f"{len(keep)} runs: " + ", ".join(keep), flush=True)
    summary_path = result_path(args.setting, scale, OUT)
    if args.out:
        summary_path = Path(args.out)
    runs = Path(args.runs) if args.runs else ROOT / "runs" / "pubswap" / args.setting / scale
    for name, cfg in keep.items():
        t0 = time.time()
        records = run_grid({name: cfg}, runs, progress=False)[name]
        row = {**summary_row(name, cfg, records, preset=args.preset, scale=scale, setting=args.setting),
               "cpu_kernels": recorded_kernels(runs / name),  # a folder read back keeps its own
               "cpu_model": recorded_cpu_model(runs / name)}
        merge_row(summary_path, row, runs)
        print(f"{name}: final {row['pass@1_final']:.3f} best {row['pass@1_best']:.3f} (round {row['best_round']}) "
              f"drift {row.get('drift_end_pairwise_effective', float('nan')):.3f} ({time.time() - t0:.0f} s)",
              flush=True)


def merge_row(summary_path: Path, row: dict, runs: Path) -> None:
    """Put ``row`` into the summary file, replacing the row of its name: read, merged and written under a lock
    (``runs/.summary.lock``), so sweeps run side by side (other seeds or methods, one per core) keep each other's
    rows; written to a temporary file first, so an interrupted write leaves the old file whole."""
    runs.mkdir(parents=True, exist_ok=True)
    with open(runs / ".summary.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = json.loads(summary_path.read_text()) if summary_path.exists() else []
        rows = [r for r in rows if r["name"] != row["name"]] + [row]
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = summary_path.with_name(summary_path.name + ".tmp")
        tmp.write_text(json.dumps(rows, indent=1))
        tmp.replace(summary_path)


if __name__ == "__main__":
    main()
