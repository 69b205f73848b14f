"""Benchmark: does the quickstart's low client agreement come from the non-IID split or from batch noise?

At the quickstart notebook's (00) quick preset, FedAvg-GRPO runs at Dirichlet α ∈ {0.1, 0.5, 100} (few topics per
client → nearly IID) and Central-GRPO once per seed (it pools the data, so α does not change it). Per run it keeps
the per-round agreement of the clients' updates (the notebook's own measure, :func:`fedrl_kit.notebook.round_factor_gaps`,
from :func:`fedrl_kit.lora_factors.factor_round`), the final sampled pass@1 of the global model on the test split, and
each client's mean ``frac_zero_std``. Batch noise alone predicts a ≈ 1/√K at every α; heterogeneity predicts a rising
with α. Each run writes its own folder under ``runs/quickstart_alpha/``.

Run: ``OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/quickstart_alpha.py --seeds 0 1 2 3`` (the stored file)
(about a minute a run on one core).
Output: ``benchmarks/results/quickstart_alpha.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import time
from pathlib import Path

from _machine import cpu_model, env_prefix, package_versions  # noqa: E402  (benchmarks/ is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "quickstart_alpha.json"
ALPHAS = (0.1, 0.5, 100.0)


def one_run(method: str, seed: int, alpha: float | None) -> dict:
    """One run at the quick preset; its agreement per round, final pass@1 and clients' frac_zero_std."""
    import pandas as pd

    from fedrl_kit.config import preset
    from fedrl_kit.notebook import round_factor_gaps
    from fedrl_kit.runs import Run

    overrides = {"method": method, "seed": seed, **({"dirichlet_alpha": alpha} if alpha is not None else {})}
    cfg = preset("quick", **overrides)
    folder = ROOT / "runs" / "quickstart_alpha" / f"{method}_a{alpha}_s{seed}"
    shutil.rmtree(folder, ignore_errors=True)  # a finished folder would resume with no round left to measure
    start = time.perf_counter()
    run = Run(cfg, folder, progress=False).build()
    run.runtime.keep_messages = True
    records = run.run()
    wall = time.perf_counter() - start
    final = max((r for r in records if r["kind"] == "global"), key=lambda r: r["round"])
    clients = pd.DataFrame([r for r in records if r["kind"] == "client"])
    out = {"method": method, "seed": seed, "dirichlet_alpha": cfg.dirichlet_alpha if method != "central_grpo" else None,
           "num_clients": cfg.num_clients, "rounds": cfg.rounds, "run_dir": str(folder.relative_to(ROOT)),
           "final pass@1": final["pass@1"], "base pass@1": next(r["pass@1"] for r in records
                                                                if r["kind"] == "global" and r["round"] == 0),
           "frac_zero_std per client": clients.groupby("client").frac_zero_std.mean().round(4).to_dict(),
           "wall_s": round(wall, 1)}
    if method != "central_grpo":
        gaps = round_factor_gaps(run)
        out["agreement per round"] = {int(k): float(v) for k, v in gaps["agreement of updates"].items()}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = p.parse_args()
    runs: list[dict] = []
    for seed in args.seeds:
        for method, alpha in (("central_grpo", None), *(("fedavg_grpo", a) for a in ALPHAS)):
            runs.append(one_run(method, seed, alpha))
            a = runs[-1].get("agreement per round", {})
            print(json.dumps({k: runs[-1][k] for k in ("method", "seed", "dirichlet_alpha", "final pass@1", "wall_s")}
                             | ({"mean agreement": sum(a.values()) / len(a)} if a else {})), flush=True)
            write(args, runs)  # after every run: an interrupted sweep keeps what it ran
    return 0


def write(args, runs: list[dict]) -> None:
    """The result file with the runs so far."""
    out = {"benchmark": "quickstart_alpha",
           "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "command": f"{env_prefix()}nice -n 10 .venv/bin/python benchmarks/quickstart_alpha.py --seeds "
                      + " ".join(map(str, args.seeds)),
           "machine": {"cpu_model": cpu_model(), "packages": package_versions()},
           "preset": "quick", "seeds": sorted({r["seed"] for r in runs}), "alphas": list(ALPHAS), "runs": runs}
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
