"""FedMOA's typed arguments (``config.fedmoa``); the paper-to-code map is in :mod:`fedrl_kit.fedmoa`."""

from __future__ import annotations

from dataclasses import dataclass

from fedrl_kit.args import Args

SETTINGS = ("homo+homo", "homo+heter", "heter+heter")
FAMILY_NAMES = ("math", "gsm", "code")  # fedrl_kit.world.families.FAMILIES (a test checks they agree)
ROUND_STARTS = ("broadcast", "initial", "uniform")
INIT_WEIGHTS = ("plan", "uniform")
HYPER_GRADS = ("sequence", "shared", "lora")
LAM_RULES = ("target", "fixed")
MIN_CLIENTS = {"homo+homo": 1, "homo+heter": 2, "heter+heter": 6}
"""the fewest clients with which a setting is what its name says: homo+heter needs two reward configs,
heter+heter two clients per family, so that each task cluster holds two reward sets (eq. 11 then chooses
between differently configured clients); fewer run, with a warning (the first experiments used 3)"""


@dataclass
class FedMOAArgs(Args):
    """FedMOA (Wang et al., *FedMOA: Federated GRPO for Personalized Reasoning LLMs under Heterogeneous
    Rewards*): hypergradient reward weights and accuracy-aware aggregation."""

    SECTION = "fedmoa"

    @classmethod
    def migrate(cls, section: dict) -> dict:
        """reset_weights became round_start; later fields keep their old behaviour (:func:`migrate_section`)."""
        return migrate_section(section)

    setting: str = "heter+heter"
    """data x reward heterogeneity (section 4.1): homo+homo, homo+heter or heter+heter; the run's world holds
    the setting's families: "families" for heter+heter, "families:<homo_family>" for the homo settings"""
    homo_family: str = "math"
    """the task family of the homo settings (math, gsm or code)"""
    init_weights: str = "plan"
    """each client's weights at round 1: plan (the plan spreads w_0 over a family's clients in the
    reward-heterogeneous settings, uniform in homo+homo) or uniform (1/K_m each)"""
    round_start: str = "broadcast"
    """the weights a client starts each round from: broadcast (its cluster's w^(c) of eq. 12, sent with the global
    model; round 1 the initial weights), initial (its initial weights every round) or uniform (1/K_m every round)"""
    lam: float = 0.01
    """lambda, hypergradient step size of eq. 10 when lam_rule = fixed (the paper's 0.01, section 4.1)"""
    lam_rule: str = "target"
    """how lambda is set: target (at each round's first local step, lambda = lam_target / mean_k |g_k|^2, so that a
    step whose consecutive gradients agree exactly moves w_k by about lam_target) or fixed (lambda = lam)"""
    lam_target: float = 0.05
    """the target weight step of lam_rule = target"""
    normalise: bool = False
    """Delta_k as the cosine of consecutive gradients (ours; the paper's eq. 9 is unnormalised); with normalise,
    lambda = lam (a cosine has no scale to calibrate)"""
    hyper_grad: str = "lora"
    """g_k of eq. 8, taken at layer hyper_layer: lora (gradient w.r.t. the layer's own LoRA factors, a fixed-shape
    vector summed over the batch: batch-order invariant, and each coordinate is the same parameter at every step,
    so eq. 9 compares like with like), sequence (gradient w.r.t. one shift of layer h per sequence, a [B*G, H]
    tensor: no cancellation between sequences, but eq. 9 pairs row i of one batch with row i of the next, i.e.
    different prompts, so Delta depends on the batch order; the default until the cpu grid with tuned lambda) or
    shared (one shift for every position of every sequence, [H]: batch-order invariant, but sums, and cancels,
    over tokens; the first implementation)"""
    hyper_layer: int | None = None
    """decoder layer whose output is h in eq. 8 (null = the middle layer)"""
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
    validate: bool = True
    """also score the global model on the validation split (the world's aux rows, n_aux) at each evaluation, so
    that the best round by validation accuracy can be reported beside the last (section 4.1)"""

    def check_own(self) -> None:
        self.need(self.setting in SETTINGS, "setting", f"one of {SETTINGS}")
        self.need(self.homo_family in FAMILY_NAMES, "homo_family", f"one of {FAMILY_NAMES}")
        self.need(self.init_weights in INIT_WEIGHTS, "init_weights", f"one of {INIT_WEIGHTS}")
        self.need(self.round_start in ROUND_STARTS, "round_start", f"one of {ROUND_STARTS}")
        self.need(self.lam >= 0, "lam", "a finite number >= 0")
        self.need(self.lam_rule in LAM_RULES, "lam_rule", f"one of {LAM_RULES}")
        self.need(self.lam_target >= 0, "lam_target", "a finite number >= 0")
        self.need(self.hyper_grad in HYPER_GRADS, "hyper_grad", f"one of {HYPER_GRADS}")
        self.need(self.eps > 0, "eps", "a number > 0")
        self.need(self.softmax_temperature > 0, "softmax_temperature", "a number > 0")
        self.need(self.cluster_key in ("accuracy", "names"), "cluster_key", '"accuracy" or "names"')
        self.need(self.eval_every >= 1, "eval_every", "an integer >= 1")
        self.need(isinstance(self.eval_local, bool) or self.eval_local == "last", "eval_local",
                  'true, false or "last"')

    def check(self, config) -> None:
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


LEGACY = dict(init_weights="uniform", lam_rule="fixed", hyper_grad="shared", validate=False)
"""what the fields added after the first FedMOA experiments were then (a config.json with ``reset_weights``)"""


def migrate_section(section: dict) -> dict:
    """An earlier ``config.fedmoa`` (it had ``reset_weights``) in today's form, with the behaviour it had then."""
    section = dict(section)
    if "reset_weights" in section:
        reset = section.pop("reset_weights")
        if not isinstance(reset, bool):
            raise ValueError(f"fedmoa.reset_weights must be true or false, got {reset!r} (it is now fedmoa.round_start)")
        section.setdefault("round_start", "uniform" if reset else "broadcast")
        for k, v in LEGACY.items():
            section.setdefault(k, v)
    return section
