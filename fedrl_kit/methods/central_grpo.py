"""Central-GRPO: the upper bound — all clients' private data pooled on one trainer."""

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
