"""FedMOA's typed arguments (``config.fedmoa``); the paper-to-code map is in :mod:`fedrl_kit.fedmoa`."""

from __future__ import annotations

from dataclasses import dataclass

from fedrl_kit.args import Args

SETTINGS = ("homo+homo", "homo+heter", "heter+heter")
FAMILY_NAMES = ("math", "gsm", "code")  # fedrl_kit.world.families.FAMILIES (a test checks they agree)


@dataclass
class FedMOAArgs(Args):
    """FedMOA (papers/fedmoa.md): hypergradient reward weights and accuracy-aware aggregation."""

    SECTION = "fedmoa"

    setting: str = "heter+heter"
    """data x reward heterogeneity (section 4.1): homo+homo, homo+heter or heter+heter; the run's world holds
    the setting's families: "families" for heter+heter, "families:<homo_family>" for the homo settings"""
    homo_family: str = "math"
    """the task family of the homo settings (math, gsm or code)"""
    lam: float = 0.01
    """lambda, hypergradient step size of eq. 10 (section 4.1)"""
    normalise: bool = False
    """Delta_k as the cosine of consecutive gradients (ours; the paper's eq. 9 is unnormalised)"""
    hyper_layer: int | None = None
    """decoder layer whose output is h in eq. 8 (null = the middle layer)"""
    reset_weights: bool = True
    """reward weights back to uniform at each round start (paper Fig. 5)"""
    lambda_on: bool = True
    """adaptive weights (Table 2's lambda); false freezes them"""
    alpha_on: bool = True
    """accuracy-aware aggregation (Table 2's alpha); false = FedAvg by data size"""
    eps: float = 1e-6
    """epsilon of eq. 11 (section 4.1)"""
    softmax_temperature: float = 1.0
    """eq. 11's softmax temperature (the paper has none, i.e. 1)"""
    cluster_key: str = "accuracy"
    """accuracy: cluster clients by the name of r_0; names: by identical reward tuples"""
    eval_every: int = 1
    """evaluate the global model per family every this many rounds (and after the last)"""
    eval_local: bool | str = True
    """also evaluate each client's local model then (Table 1's parentheses): true, false or "last" (last round only)"""

    def check(self, config) -> None:
        self.need(self.setting in SETTINGS, "setting", f"one of {SETTINGS}")
        self.need(self.homo_family in FAMILY_NAMES, "homo_family", f"one of {FAMILY_NAMES}")
        self.need(self.lam >= 0, "lam", "a finite number >= 0")
        self.need(self.eps > 0, "eps", "a number > 0")
        self.need(self.softmax_temperature > 0, "softmax_temperature", "a number > 0")
        self.need(self.cluster_key in ("accuracy", "names"), "cluster_key", '"accuracy" or "names"')
        self.need(self.eval_every >= 1, "eval_every", "an integer >= 1")
        self.need(isinstance(self.eval_local, bool) or self.eval_local == "last", "eval_local",
                  'true, false or "last"')
        if self.setting == "heter+heter" and config.num_clients < len(FAMILY_NAMES):
            raise ValueError(f"num_clients must be >= {len(FAMILY_NAMES)} for fedmoa.setting = 'heter+heter' "
                             f"(one client per family at least), got {config.num_clients}")

    def label(self) -> str:
        """How tables name a run: FedMOA, FedAvg-GRPO (both switches off), or an ablation."""
        if self.lambda_on and self.alpha_on:
            return "FedMOA"
        if not self.lambda_on and not self.alpha_on:
            return "FedAvg-GRPO"
        return "FedMOA (λ off)" if not self.lambda_on else "FedMOA (α off)"
