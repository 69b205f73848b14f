"""Re-run stored experiments and compare them with what was stored.

The stored results under ``benchmarks/results/`` were produced by earlier versions of the engine.
This script re-runs one representative run of each experiment with today's code and reports, for
each, whether the metric records (every field but wall-clock ``seconds``) are bit-identical:

- PubSwap sweep: ``table1/fedavg_grpo/tau8/seed0`` and ``table1/pubswap_balanced/tau8/seed0`` of
  ``pubswap_sweep.json``: the SHA-256 of their whole records, drift records included (``records_digest``), against
  the row's ``records_sha256``; on a difference, the first differing global evaluation of the row's curves;
- FedGRPO comparison: FedGRPO, seed 0 (the stored summary row of ``fedgrpo_compare.json``);
- FedMOA comparison: no longer re-run. Its stored rows (``fedmoa_compare.json``) reproduced bit for bit up to
  commit b037576 (``reproduce_stored.json`` of then says so); the faithful FedMOA setting then changed the
  GSM8K-like family and rebuilt ``data/base_moa``, so those runs can be re-run only from that commit
  (``git checkout b037576``; ``docs/fedmoa.md``).

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/reproduce_stored.py

writes ``benchmarks/results/reproduce_stored.json``. Bytes on the wire are compared separately: since
runs open with a round-0 ``properties`` message (what each client tells the server about itself), the
ledger's totals grow by that message and nothing else.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

from experiments.sweep import curves, pubswap_grid, records_digest  # noqa: E402
from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def _first_difference(now: list[dict], row: dict) -> str:
    """Where today's records differ from a stored summary row: its digest, then the first global evaluation."""
    if records_digest(now) == row["records_sha256"]:
        return ""
    for x, y in zip(curves(now)["global"], row["curves"]["global"]):  # [round, pass@1, format]
        if x != y:
            return f"records differ; first at the global evaluation of round {x[0]}: {x} now, {y} stored"
    return "records differ (the global evaluations agree)"


def pubswap_runs() -> list[dict]:
    # the stored sweep's own setting (FedAvg by examples, plain Adam, unequal clients), not today's default
    grid = pubswap_grid("quick", seeds=(0,), tables=("table1",), setting="fedavg_examples")
    rows = {r["name"]: r for r in json.loads((RESULTS / "pubswap_sweep.json").read_text())}
    out = []
    for name in ("table1/fedavg_grpo/tau8/seed0", "table1/pubswap_balanced/tau8/seed0"):
        t0 = time.time()
        now = Run(grid[name], progress=False).run()
        diff = _first_difference(now, rows[name])
        out.append({"experiment": f"pubswap_sweep {name}", "identical": not diff, "difference": diff,
                    "records": len(now), "seconds": round(time.time() - t0, 1)})
        print(out[-1], flush=True)
    return out


def fedgrpo_run() -> dict:
    from fedgrpo_compare import SETTINGS, STORED_ME

    stored = next(r for r in json.loads((RESULTS / "fedgrpo_compare.json").read_text())["runs"]
                  if r["method"] == "fedgrpo" and r["seed"] == 0)
    # the stored runs' setting: D_s = world.public, half of it held with its answer by a client
    cfg = preset("quick", method="fedgrpo", seed=0, rounds=5, eval_every=5, **SETTINGS,
                 fedgrpo={"queries": "public", "gt_fraction": 0.5, "me_score": STORED_ME})
    t0 = time.time()
    run = Run(cfg, progress=False)
    recs = run.run()
    g = [r for r in recs if r["kind"] == "global"]
    server = [r for r in recs if r["kind"] == "client" and r["client"] == "server"]
    now = {"base_pass_at_1": g[0]["pass@1"], "final_pass_at_1": g[-1]["pass@1"], "final_format": g[-1]["format"]}
    for k in ("expert_hit_rate", "random_hit_rate", "expert_hit_rate_major", "random_hit_rate_major", "ae_share",
              "reward_gap"):
        vals = [r[k] for r in server if k in r]
        now[k] = sum(vals) / len(vals)
    same = {k: now[k] == stored[k] for k in now}
    props = sum(r["nbytes"] for r in run.runtime.ledger.records if r["kind"].startswith("properties"))
    return {"experiment": "fedgrpo_compare fedgrpo seed 0", "identical": all(same.values()),
            "difference": [k for k, v in same.items() if not v], "now": now,
            "bytes_up": [run.runtime.ledger.total_bytes("up"), stored["bytes_up"]],
            "bytes_down": [run.runtime.ledger.total_bytes("down"), stored["bytes_down"]],
            "properties_bytes": props, "seconds": round(time.time() - t0, 1)}


def main(argv=None) -> dict:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(RESULTS / "reproduce_stored.json"))
    args = ap.parse_args(argv)
    checks = pubswap_runs()
    checks.append(fedgrpo_run())
    print(checks[-1], flush=True)
    summary = {"all_identical": all(c["identical"] for c in checks),
               "identical": {c["experiment"]: c["identical"] for c in checks}}
    return save_result(args.out, "reproduce_stored", argv, {}, checks, summary)


if __name__ == "__main__":
    main()
