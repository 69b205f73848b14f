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

    trace_off_policy: bool = False
    """Balanced only, simulation-side: before each public step every client measures appendix A.2's ω_n, its bound
    (1/b) Σ_x M_n(x) β_n(x), max_x β_n(x) and its on-policy public gradient's norm at its current θ (recorded per step
    as ``omega@s``, ``omega_bound@s``, ``beta_max@s``, ``public_grad@s``, ``alpha@s``); M + 1 extra gradients per
    prompt, nothing it trains changes"""

    def check_own(self) -> None:
        self.need(isinstance(self.trace_off_policy, bool), "trace_off_policy", "true or false")
        self.need(self.period >= 2, "period", "an integer >= 2 (every tau_swap-th local step is a public step)")

    def check(self, config) -> None:
        self.need(not self.trace_off_policy or config.method == "pubswap_balanced", "trace_off_policy",
                  f"false unless method is pubswap_balanced (appendix A.2's ω is Balanced's; the method is "
                  f"{config.method!r})")
        self.need(2 <= self.period <= config.local_steps, "period",
                  f"an integer in [2, local_steps = {config.local_steps}] (tau_swap <= tau)")
        if str(getattr(config, "preset", "")).startswith("pubswap-"):  # a paper preset claims the paper's setting
            self.need(self.period < config.local_steps, "period",
                      f"below local_steps = {config.local_steps} under the paper preset {config.preset!r} (the "
                      "paper's periods 2, 4, 8 all lie below its tau; tau_swap = tau leaves one public step, the "
                      "round's last)")
