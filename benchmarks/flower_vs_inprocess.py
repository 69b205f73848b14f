"""The quickstart run (FedAvg-GRPO, 4 clients, 10 rounds, τ = 2) in-process and on Flower's simulation engine.

Run::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/flower_vs_inprocess.py [--rounds 10] [--lockstep]

writes ``benchmarks/results/flower_vs_inprocess.json``: wall time of each (Flower's includes starting
Ray and building the client side in its ClientApp actor), client-steps per second (clients × τ × rounds over
the wall time), whether the metric records are identical, our payload bytes and Flower's record bytes.
``--lockstep`` adds the same run in-process with ``client_batching="lockstep"`` (all clients of a local step in
one batched pass; its records agree with the others to float tolerance, not bit for bit, so only its final
pass@1 is compared).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.flower import run_on_flower  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402


def _final_pass_at_1(records) -> float:
    return [r for r in records if r["kind"] == "global"][-1]["pass@1"]


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--lockstep", action="store_true", help="also the in-process run with client_batching=lockstep")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "flower_vs_inprocess.json"))
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
    final = {"inprocess": _final_pass_at_1(inproc)}
    if args.lockstep:
        t0 = time.time()
        batched = Run(dataclasses.replace(cfg, client_batching="lockstep"), progress=False)
        final["inprocess-lockstep"] = _final_pass_at_1(batched.run())
        rows.append({"runtime": "inprocess-lockstep", "seconds": round(time.time() - t0, 1),
                     "payload_bytes": batched.runtime.ledger.total_bytes()})
    client_steps = args.clients * cfg.local_steps * args.rounds
    for r in rows:
        r["client_steps_per_second"] = round(client_steps / r["seconds"], 3)
    summary = {"identical_records": _strip(inproc) == _strip(flower["records"]),
               "flower_over_inprocess_time": round(t_fl / t_in, 2),
               "client_steps": client_steps,
               "client_steps_per_second": {r["runtime"]: r["client_steps_per_second"] for r in rows},
               "final_pass_at_1": final["inprocess"],
               "final_pass_at_1_by_runtime": final}
    return save_result(args.out, "flower_vs_inprocess", argv,
                       {"method": "fedavg_grpo", "num_clients": args.clients, "rounds": args.rounds, "local_steps": 2},
                       rows, summary)


if __name__ == "__main__":
    main()
