"""Benchmark: a federation with four faulty clients out of eight completes, and learns as if they were absent.

Eight FedAvg-GRPO clients on the embedded world for five rounds, in three variants:

- ``faulty`` — client_1 answers every round with a NaN adapter, client_3 with an adapter of the wrong shape,
  client_5 hangs, client_7 raises (``fail_client``); the runtime drops each of them every round (the first
  two by the reply check, the third at ``client_timeout``, the fourth when it raises) and records why;
- ``absent`` — the same four clients raise before doing any work, every round: the federation of the
  other four, on the same partitions of the same data (what the faulty run should equal);
- ``clean`` — all eight clients healthy (what the four faulty clients' data would have added).

The quick preset, scaled down to fit about three minutes per variant on one CPU thread: τ = 1 local step
of b = 4 prompts (quick: 2 and 8), 2 samples per test problem (quick: 4), a 15 s client timeout.

Run (from the repo root), one variant per call or all at once::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fault_injection.py --variants faulty absent clean

writes (and, variant by variant, updates) ``benchmarks/results/fault_injection.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from _machine import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedrl_kit.config import REFERENCE_PATH, preset  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "fault_injection.json"
SETTINGS = dict(method="fedavg_grpo", num_clients=8, rounds=5, local_steps=1, prompts_per_step=4, eval_samples=2,
                client_timeout=15.0, **REFERENCE_PATH)  # REFERENCE_PATH: the path the stored result was made on
"""the quick preset with these changes (see the module docstring)"""
FAULTS = {"client_1": "nan", "client_3": "shape", "client_5": "hang", "client_7": "raise"}
VARIANTS = {
    "faulty": ",".join(f"{cid}@*:{kind}" for cid, kind in FAULTS.items()),
    "absent": ",".join(f"{cid}@*:raise" for cid in FAULTS),
    "clean": "",
}
"""variant → its ``fail_client``"""


def run_variant(name: str, seed: int) -> dict:
    """One run; its pass@1 curve, its drops by (client, reason), round wall times and a digest of its final adapter."""
    import torch

    torch.set_num_threads(1)
    cfg = preset("quick", seed=seed, fail_client=VARIANTS[name], **SETTINGS)
    t0 = time.time()
    run = Run(cfg, progress=False)
    records = run.run()
    digest = hashlib.sha256(b"".join(v.tobytes() for _, v in sorted(run.server.global_state.items()))).hexdigest()
    drops = Counter((r["client"], r["reason"]) for r in records if r["kind"] == "failure")
    return dict(variant=name, seed=seed, fail_client=VARIANTS[name],
                pass_at_1=[r["pass@1"] for r in records if r["kind"] == "global"],
                drops={f"{c} {why}": n for (c, why), n in sorted(drops.items())},
                drop_errors=sorted({f"{r['client']}: {r['error'][:140]}" for r in records if r["kind"] == "failure"}),
                round_seconds=[r["seconds"] for r in records if r["kind"] == "comm"],
                trained_clients_per_round=[len({x["client"] for x in records if x["kind"] == "client" and x["round"] == k})
                                           for k in range(1, cfg.rounds + 1)],
                final_adapter_sha256=digest, wall_seconds=round(time.time() - t0, 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    old = json.loads(RESULT.read_text())["runs"] if RESULT.exists() else []
    runs = {(r["variant"], r["seed"]): r for r in old}
    for name in args.variants:
        runs[(name, args.seed)] = run_variant(name, args.seed)
        print(json.dumps(runs[(name, args.seed)], indent=1), flush=True)
    runs = [runs[k] for k in sorted(runs)]
    by = {(r["variant"], r["seed"]): r for r in runs}
    summary = {}
    for (name, seed), r in sorted(by.items()):
        summary[f"{name} seed {seed}: final pass@1"] = r["pass_at_1"][-1]
    for seed in sorted({s for _, s in by}):
        if ("faulty", seed) in by and ("absent", seed) in by:
            f, a = by[("faulty", seed)], by[("absent", seed)]
            summary[f"seed {seed}: faulty equals absent bit for bit"] = (
                f["final_adapter_sha256"] == a["final_adapter_sha256"] and f["pass_at_1"] == a["pass_at_1"])
    return save_result(RESULT, "fault_injection", ["--variants", *VARIANTS], dict(preset="quick", **SETTINGS,
                       faults=FAULTS), runs, summary)


if __name__ == "__main__":
    main()
