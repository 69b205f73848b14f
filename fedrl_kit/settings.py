"""The settings of one run's local training and of one GRPO step: every default and allowed value, once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

SCALE_REWARDS = ("group", "batch", "none")
"""``scale_rewards``: what the advantage is divided by (eq. 1)"""
LOSS_TYPES = ("dapo", "grpo")
"""``loss_type``: how the per-token losses are aggregated (TRL's names; :mod:`fedrl_kit.grpo` has the formulas)"""
_VERL_LOSS_TYPES = {"token-mean": "dapo", "seq-mean-token-mean": "grpo"}
"""loss_type values of earlier versions (verl's names) → TRL's name of the same formula, for the error message"""


def check_choice(name: str, value: str) -> None:
    """Raise ValueError unless ``value`` is an allowed value of the knob ``name`` (scale_rewards or loss_type)."""
    allowed = {"scale_rewards": SCALE_REWARDS, "loss_type": LOSS_TYPES}[name]
    if value not in allowed:
        renamed = _VERL_LOSS_TYPES.get(value) if name == "loss_type" and isinstance(value, str) else None
        hint = f" ({value!r} is now {renamed!r}, TRL's name of the same formula)" if renamed else ""
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}{hint}")


@dataclass
class GRPOSettings:
    """The optimisation knobs of one GRPO step (TRL's names where the meaning is the same)."""

    num_iterations: int = 2  # gradient epochs per batch of rollouts
    epsilon: float = 0.2
    epsilon_high: float = 0.25
    beta: float = 0.0
    scale_rewards: str = "group"
    loss_type: str = "dapo"
    temperature: float = 1.0
    max_grad_norm: float = 1.0
    micro_batch_size: int = 256
    score: Callable | None = None  # how log-probs are computed (rollout.Score); None: rollout.per_token_logps


@dataclass
class LocalSettings:
    """What one round of local training does on a client."""

    local_steps: int = 2  # τ, GRPO steps per round
    prompts_per_step: int = 8  # b, prompts per GRPO step
    num_generations: int = 8  # G (K in PubSwap), completions per prompt
    learning_rate: float = 2e-3
    prox_mu: float = 0.0  # FedProx μ; 0 = plain FedAvg-GRPO
    reset_optimizer: bool = True  # fresh Adam state each round, as in PubSwap §4
    weight_decay: float = 0.0  # AdamW's decoupled weight decay; 0 = plain Adam (PubSwap's Tables 9–12: 0.01)
    lr_schedule: str = "constant"  # "constant", or "cosine": decay to 0 over the run's rounds × τ local steps
    rounds: int = 10  # R, the run's rounds (the cosine schedule's horizon is R·τ)
