"""PubSwap's experiments in the embedded world: Tables 1, 4 and 5 on a fixed budget of local steps.

    .venv/bin/python benchmarks/pubswap_sweep.py                      # seed 0, every table (quick scale)
    .venv/bin/python benchmarks/pubswap_sweep.py --seeds 1 2 --tables table1 --taus 8 \
        --methods fedavg_grpo pubswap_balanced pubswap_random fedprox_grpo_mu0.01

Runs go to ``runs/pubswap_sweep/<table>/<method>/tau<τ>/seed<s>`` (resumable: rerunning the command
continues an interrupted sweep). Each run's metric records are copied to
``benchmarks/results/pubswap_sweep/…/metrics.jsonl`` and one summary row per run is written to
``benchmarks/results/pubswap_sweep.json`` (merged with earlier rows), which notebook 02 reads.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedrl_kit.pubswap.sweep import parse_name, pubswap_grid, run_grid, summarise  # noqa: E402

OUT = ROOT / "benchmarks" / "results"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="quick", choices=("quick", "full"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--tables", nargs="+", default=["table1", "table4", "table5"])
    ap.add_argument("--taus", type=int, nargs="*", default=None, help="only these τ (default: all of the scale)")
    ap.add_argument("--methods", nargs="*", default=None, help="only these method names of the grid")
    ap.add_argument("--runs", default=str(ROOT / "runs" / "pubswap_sweep"))
    args = ap.parse_args(argv)

    grid = pubswap_grid(args.preset, seeds=tuple(args.seeds), tables=tuple(args.tables))
    keep = {k: v for k, v in grid.items()
            if (args.taus is None or parse_name(k)["tau"] in args.taus)
            and (args.methods is None or parse_name(k)["method"] in args.methods)}
    print(f"{len(keep)} runs: " + ", ".join(keep), flush=True)
    summary_path = OUT / "pubswap_sweep.json"
    rows = json.loads(summary_path.read_text()) if summary_path.exists() else []
    for name, cfg in keep.items():
        t0 = time.time()
        records = run_grid({name: cfg}, args.runs, progress=False)[name]
        dest = OUT / "pubswap_sweep" / name
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(args.runs) / name / "metrics.jsonl", dest / "metrics.jsonl")
        row = {"name": name, **parse_name(name), "preset": args.preset, "local_steps": cfg.local_steps,
               "rounds": cfg.rounds, "pubswap_period": cfg.pubswap.period, "dirichlet_alpha": cfg.dirichlet_alpha,
               "equal_size": cfg.equal_size, **summarise(records),
               "seconds": round(sum(r["seconds"] for r in records if r["kind"] == "comm"), 1)}
        rows = [r for r in rows if r["name"] != name] + [row]
        summary_path.write_text(json.dumps(rows, indent=1))
        print(f"{name}: final {row['pass@1_final']:.3f} best {row['pass@1_best']:.3f} "
              f"drift {row.get('drift_end_pairwise_effective', float('nan')):.3f} ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
