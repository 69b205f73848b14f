"""PubSwap's typed arguments (``config.pubswap``)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrl_kit.args import Args

PAPER_SETTING = {"aggregator": "fedit", "weight_decay": 0.01}
"""the PubSwap paper's aggregation and optimiser (Tables 9–12: FedIT, eq. 4; AdamW with weight decay 0.01): every
preset gives them to the PubSwap methods, and the PubSwap grid to its baselines too (``experiments.sweep``)"""


@dataclass
class PubSwapArgs(Args):
    """FedAvg-PubSwap (Nayak et al.): public steps with Random or Balanced response swapping."""

    SECTION = "pubswap"

    period: int = 2
    """tau_swap: every tau_swap-th local step is a public step (2 <= tau_swap <= local_steps)"""

    def check_own(self) -> None:
        self.need(self.period >= 2, "period", "an integer >= 2 (every tau_swap-th local step is a public step)")

    def check(self, config) -> None:
        self.need(2 <= self.period <= config.local_steps, "period",
                  f"an integer in [2, local_steps = {config.local_steps}] (tau_swap <= tau)")
        if str(getattr(config, "preset", "")).startswith("pubswap-"):  # a paper preset claims the paper's setting
            self.need(self.period < config.local_steps, "period",
                      f"below local_steps = {config.local_steps} under the paper preset {config.preset!r} (the "
                      "paper's periods 2, 4, 8 all lie below its tau; tau_swap = tau leaves one public step, the "
                      "round's last)")
