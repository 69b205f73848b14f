"""Central-GRPO: the upper bound — all clients' private data pooled on one trainer.

One "client" holds the union of the K private datasets and, per round, runs τ GRPO steps with
b·K prompts each: the same number of rollouts per round as the federation and the same number
of optimiser steps as each client. Its round is FedAvg-GRPO's with a single client, so it
reuses :func:`fedrl_kit.methods.fedavg_grpo.run_round` (aggregating one adapter is the identity).
"""

import dataclasses

import datasets

from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.methods import MethodSpec
from fedrl_kit.methods.fedavg_grpo import run_round


def build_central_client(run) -> dict:
    """One trainer with every partition's data and b·K prompts per step."""
    pooled = datasets.concatenate_datasets(run.partitions)
    local = dataclasses.replace(run.local, prompts_per_step=run.local.prompts_per_step * run.config.num_clients)
    return {"central": GRPOClient("central", 0, pooled, run.policy, run.reward_set, local, run.grpo, run.config.seed)}


CENTRAL_GRPO = MethodSpec("central_grpo", "all private data pooled on one GRPO trainer (the upper bound)",
                          run_round, build_central_client)
