"""Benchmark: one client claiming 10⁹ examples, within the update bound, against FedAvg-GRPO (the default aggregator).

Four FedAvg-GRPO clients on the embedded world (the quick preset), in two variants:

- ``liar`` — client_1 trains honestly (its adapter is inside the update bound) but every ``fit`` reply claims
  ``--claim`` examples (default 10⁹). When FedAvg weighed a client by its claim, its adapter was the global one.
  The server now weighs by the sizes it knows (the plan) and drops a reply whose claim differs;
- ``honest`` — the same run with no liar.

Run (from the repo root)::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/size_claim.py --rounds 20

writes ``benchmarks/results/size_claim.json`` (with ``--out``, another file: e.g. the same command on an older
checkout of the toolkit, for the before/after of docs/reliability.md).
"""

from __future__ import annotations

import argparse
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

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.federation.client import MessageClient  # noqa: E402
from fedrl_kit.federation.runtime import Message  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "size_claim.json"
LIAR = "client_1"


def claiming(claim: int):
    """``MessageClient.handle`` as a client that answers honestly but, as :data:`LIAR`, claims ``claim`` examples."""
    honest = MessageClient.handle

    def handle(self, message):
        reply = honest(self, message)
        if self.cid == LIAR and message.kind == "fit":
            reply = Message(reply.kind, reply.sender, reply.receiver, reply.round,
                            {**reply.payload, "num_examples": claim})
        return reply

    return honest, handle


def run_variant(name: str, rounds: int, seed: int, claim: int) -> dict:
    cfg = preset("quick", method="fedavg_grpo", num_clients=4, rounds=rounds, seed=seed)
    honest, lying = claiming(claim)
    MessageClient.handle = lying if name == "liar" else honest
    try:
        t0 = time.time()
        records = Run(cfg, progress=False).run()
    finally:
        MessageClient.handle = honest
    drops = Counter((r["client"], r["reason"]) for r in records if r["kind"] == "failure")
    return dict(variant=name, seed=seed, rounds=rounds, claim=claim if name == "liar" else None,
                aggregator=cfg.aggregator, pass_at_1=[r["pass@1"] for r in records if r["kind"] == "global"],
                drops={f"{c} {why}": n for (c, why), n in sorted(drops.items())},
                drop_error=next((r["error"] for r in records if r["kind"] == "failure"), None),
                wall_seconds=round(time.time() - t0, 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", nargs="+", default=["honest", "liar"], choices=["honest", "liar"])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--claim", type=int, default=10**9)
    ap.add_argument("--out", default=str(RESULT))
    args = ap.parse_args(argv)
    runs = []
    for name in args.variants:
        runs.append(run_variant(name, args.rounds, args.seed, args.claim))
        print(runs[-1], flush=True)
    summary = {f"{r['variant']}: final pass@1": r["pass_at_1"][-1] for r in runs}
    return save_result(Path(args.out), "size_claim", sys.argv[1:] if argv is None else argv,
                       dict(preset="quick", method="fedavg_grpo", num_clients=4, liar=LIAR), runs, summary)


if __name__ == "__main__":
    main()
