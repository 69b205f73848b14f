"""Typed arguments of the shared baselines (``config.fedprox``)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrl_kit.args import Args


@dataclass
class FedProxArgs(Args):
    """FedProx-GRPO: FedAvg-GRPO with the proximal term (mu/2)||theta - theta^(t)||^2 (PubSwap eq. 5)."""

    SECTION = "fedprox"

    mu: float = 0.01
    """FedProx mu (the PubSwap paper tunes it over {0.001, 0.01, 0.1})"""

    def check_own(self) -> None:
        self.need(0 <= self.mu <= 100, "mu", "a number in [0, 100]")
