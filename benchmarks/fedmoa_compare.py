"""Benchmark: FedAvg-GRPO vs FedMOA (and the λ/α ablations) in the Heter+Heter setting, quick scale.

The FedMOA paper (Table 1, Heter+Heter; Table 2) claims that FedMOA raises the global model's
accuracy and the aggregated multi-objective reward over its baseline (plain GRPO + FedAvg, which the
paper calls "FedGRPO" and this toolkit FedAvg-GRPO). This script runs both — and, with ``--ablations``,
λ on/α off and λ off/α on — on the embedded world's three task families (MATH-, GSM8K-, MBPP-like),
one client per family, with the same settings as the quick preset of notebooks/03_fedmoa_pareto.ipynb,
for several seeds, and writes ``benchmarks/results/fedmoa_compare.json``.

Every variant is the method ``fedmoa`` with switches in ``config.fedmoa`` (named by ``FedMOAArgs.label()``);
FedAvg-GRPO is ``lambda_on=False, alpha_on=False`` (same clients, data, reward sets; fixed uniform weights;
FedAvg). The quick preset gives ``fedmoa`` its world (``families``: the heter+heter setting's three families).

Run (from the repo root)::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_compare.py --seeds 0 1 2 --ablations

Needs ``data/base_moa`` (``python -m fedrl_kit.policy.pretrain_families``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from _machine import cpu_model  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.fedmoa.analysis import summary  # noqa: E402
from fedrl_kit.fedmoa.args import FedMOAArgs  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

QUICK = dict(method="fedmoa", base=str(ROOT / "data" / "base_moa"), num_clients=3, rounds=4, local_steps=2,
             prompts_per_step=4, num_generations=8, max_new_tokens=32, n_train=600, n_test=60, eval_samples=2,
             eval_every=4)
"""the quick preset of notebooks/03_fedmoa_pareto.ipynb"""

VARIANTS = {
    "FedAvg-GRPO": dict(lambda_on=False, alpha_on=False),
    "FedMOA": dict(lambda_on=True, alpha_on=True),
    "λ off, α on": dict(lambda_on=False, alpha_on=True),
    "λ on, α off": dict(lambda_on=True, alpha_on=False),
}
"""the table rows (stored results use these names; ``FedMOAArgs.label()`` gives each run's method label)"""


def build_config(name: str, seed: int, lam: float = 0.1, normalise: bool = True):
    """The RunConfig of one table row (``VARIANTS[name]``) and seed; λ and normalise apply when λ is on."""
    hyper = dict(lam=lam, normalise=normalise) if VARIANTS[name]["lambda_on"] else {}
    return preset("quick", **QUICK, seed=seed, fedmoa=FedMOAArgs(setting="heter+heter", **VARIANTS[name], **hyper))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--ablations", action="store_true", help="also run λ on/α off and λ off/α on")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--no-normalise", action="store_true", help="the paper's unnormalised Δ_k")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fedmoa_compare.json"))
    args = ap.parse_args()
    if not (ROOT / "data" / "base_moa" / "model.safetensors").exists():
        raise SystemExit("data/base_moa is missing: python -m fedrl_kit.policy.pretrain_families --out data/base_moa")
    names = list(VARIANTS) if args.ablations else ["FedAvg-GRPO", "FedMOA"]
    hyper = dict(lam=args.lam, normalise=not args.no_normalise)
    rows = []
    t_all = time.time()
    for seed in args.seeds:
        for name in names:
            cfg = build_config(name, seed, **hyper)
            t0 = time.time()
            recs = Run(cfg, progress=False).run()
            row = {"method": name, "label": cfg.fedmoa.label(), "seed": seed, "seconds": round(time.time() - t0, 1),
                   **summary(recs)}
            rows.append(row)
            print(json.dumps(row), flush=True)

    def table(method_names):
        out = {}
        for n in method_names:
            rs = [r for r in rows if r["method"] == n]
            out[n] = {k: float(np.mean([r[k] for r in rs])) for k in rs[0]
                      if k not in ("method", "label", "seed", "seconds")}
            out[n]["std_global_accuracy"] = float(np.std([r["global_accuracy"] for r in rs]))
            out[n]["std_aggregated_reward"] = float(np.std([r["aggregated_reward"] for r in rs]))
            out[n]["n_seeds"] = len(rs)
        return out

    result = {
        "command": "OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_compare.py "
                   + " ".join(sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
        "note": "timings measured while other jobs shared the 2 cores (pessimistic)",
        "config": {**{k: v for k, v in QUICK.items() if k != "base"}, "base": "data/base_moa", **hyper},
        "runs": rows,
        "table1": table(["FedAvg-GRPO", "FedMOA"]),
        "table2": table(names),
        "seconds_total": round(time.time() - t_all, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result["table2"], indent=2))


if __name__ == "__main__":
    main()
