"""FedAvg-GRPO and FedProx-GRPO: local GRPO with τ steps, then adapter aggregation (PubSwap §3.3–3.4, eq. 5).

1. the server broadcasts the global LoRA factors (A_p, B_p)                  → ``fit`` messages
2. each client runs τ local GRPO steps on its private data (eqs. 1–2)        → ``GRPOClient.on_fit``
   (FedProx: + (μ/2)‖θ − θ^(t)‖² on the LoRA matrices, eq. 5)
3. clients send back their factors (A^(n), B^(n))                           → ``fit_result``
4. the server aggregates: FedAvg weighted by examples, or FedIT (eq. 4)      → ``aggregate``

A client that raises is dropped for the round; if every client fails, the global adapter is kept.
"""

from __future__ import annotations

from fedrl_kit.aggregate import aggregate
from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.methods import MethodSpec
from fedrl_kit.methods.args import FedProxArgs


def build_grpo_clients(run, client_cls=GRPOClient) -> dict:
    """One client per private partition: ``client_i`` holds partition i, the run's reward set and settings."""
    return {f"client_{i}": client_cls(f"client_{i}", i, part, run.policy, run.reward_set, run.local, run.grpo,
                                      run.config.seed) for i, part in enumerate(run.partitions)}


def local_rounds(server, round: int) -> tuple[dict, list]:
    """Broadcast (A_p, B_p) to the round's participants, who run τ local GRPO steps and return their factors:
    (the replies that came back, by client id; the failure records)."""
    replies = server.runtime.broadcast("fit", round, {"adapter": server.global_state},
                                       receivers=server.participants(round))
    return server.split_replies(replies)


def averaged(server, ok: dict) -> dict:
    """The clients' adapters aggregated by the run's aggregator (FedAvg by examples, or FedIT eq. 4)."""
    return aggregate([r.payload["adapter"] for r in ok.values()], server.config.aggregator, server.example_counts(ok))


def run_round(server, round: int) -> dict:
    """One FedAvg-GRPO (or FedProx-GRPO: clients carry μ) round; returns per-client metrics and failures."""
    ok, failed = local_rounds(server, round)  # 1–3. broadcast, τ local GRPO steps, replies
    if ok:  # 4. aggregate what came back
        server.global_state = averaged(server, ok)
    return {"clients": {cid: r.payload["metrics"] for cid, r in ok.items()}, "failed": failed}


FEDAVG_GRPO = MethodSpec("fedavg_grpo", "local GRPO (tau steps) on every client, FedAvg/FedIT of the LoRA adapters",
                         run_round, build_grpo_clients, lockstep=("fit",), deployable=True)
FEDPROX_GRPO = MethodSpec("fedprox_grpo", "FedAvg-GRPO with FedProx's proximal term (PubSwap eq. 5)",
                          run_round, build_grpo_clients, sections=(FedProxArgs,), lockstep=("fit",), deployable=True,
                          prox_mu=lambda config: config.fedprox.mu)
