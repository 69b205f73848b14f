"""Central-GRPO: the upper bound — all clients' private data pooled on one trainer.

One "client" holds the union of the K private datasets and, per round, runs τ GRPO steps with
b·K prompts each: the same number of rollouts per round as the federation and the same number
of optimiser steps as each client. Its round is FedAvg-GRPO's with a single client, so it
reuses :func:`fedrl_kit.methods.fedavg_grpo.run_round` (aggregating one adapter is the identity).
"""

from fedrl_kit.methods.fedavg_grpo import run_round  # noqa: F401  (same round, one client)
