"""The quickstart run (FedAvg-GRPO, 4 clients, 10 rounds, τ = 2) in-process and on Flower's simulation engine.

Run::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/flower_vs_inprocess.py [--rounds 10]

writes ``benchmarks/results/flower_vs_inprocess.json``: wall time of each (Flower's includes starting
Ray and building the client side in its ClientApp actor), whether the metric records are identical, our
payload bytes and Flower's record bytes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.federation.flower import run_on_flower  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    args = ap.parse_args(argv)
    cfg = preset("quick", method="fedavg_grpo", num_clients=args.clients, rounds=args.rounds, local_steps=2, seed=0)
    t0 = time.time()
    run = Run(cfg, progress=False)
    inproc = run.run()
    t_in = time.time() - t0
    t0 = time.time()
    flower = run_on_flower(cfg, progress=False)
    t_fl = time.time() - t0
    rows = [{"runtime": "inprocess", "seconds": round(t_in, 1), "payload_bytes": run.runtime.ledger.total_bytes()},
            {"runtime": "flower-simulation", "seconds": round(t_fl, 1),
             "payload_bytes": sum(r["nbytes"] for r in flower["ledger"]),
             "flower_record_bytes": flower["flower_bytes"]}]
    summary = {"identical_records": _strip(inproc) == _strip(flower["records"]),
               "flower_over_inprocess_time": round(t_fl / t_in, 2),
               "final_pass_at_1": [r for r in inproc if r["kind"] == "global"][-1]["pass@1"]}
    return save_result(ROOT / "benchmarks" / "results" / "flower_vs_inprocess.json", "flower_vs_inprocess", argv,
                       {"method": "fedavg_grpo", "num_clients": args.clients, "rounds": args.rounds, "local_steps": 2},
                       rows, summary)


if __name__ == "__main__":
    main()
