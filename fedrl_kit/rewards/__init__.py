"""Verifiable rewards with TRL's signature, and named multi-objective reward sets.

Every reward is ``f(prompts, completions, **columns) -> list[float | None]``: ``completions`` one per row, a string
or a list of chat messages; ``answer`` (where a reward reads it) the dataset column aligned with them; other columns
ignored; None where a row has nothing to score. The rewards' Args list only what they add to this.
"""

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from fedrl_kit.rewards.accuracy import accuracy_reward
from fedrl_kit.rewards.code import (
    char_repetition_penalty_reward,
    code_accuracy_reward,
    code_format_reward,
    defines_function,
    family_accuracy_reward,
    real_family_accuracy_reward,
    short_length_reward,
)
from fedrl_kit.rewards.format import format_reward, is_well_formatted, tag_count_reward
from fedrl_kit.rewards.parsing import (
    completion_text,
    extract_answer,
    extract_tagged_answer,
    normalise_answer,
)
from fedrl_kit.rewards.shaping import (
    length_reward,
    make_length_reward,
    make_repetition_penalty_reward,
    repetition_penalty_reward,
)


class RewardRegistry(Mapping):
    """Reward name → reward function; an entry given as ``"module:function"`` (the real datasets' rewards:
    math-verify, HumanEval, multiple choice) is imported on first use, so a run that names none of them never
    loads them."""

    def __init__(self, entries: dict):
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> Callable:
        entry = self._entries[name]
        if isinstance(entry, str):
            module, attr = entry.split(":")
            entry = self._entries[name] = getattr(importlib.import_module(module), attr)
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


REWARDS: Mapping[str, Callable] = RewardRegistry({
    "accuracy": accuracy_reward,
    "math_accuracy": "fedrl_kit.rewards.math_accuracy:math_accuracy_reward",
    "format": format_reward,
    "tag_count": tag_count_reward,
    "length": length_reward,
    "repetition": repetition_penalty_reward,
    # FedMOA's MBPP-like family (Table 3) and short completions (fedrl_kit.rewards.code)
    "code_accuracy": code_accuracy_reward,
    "code_format": code_format_reward,
    "length_short": short_length_reward,
    "char_repetition": char_repetition_penalty_reward,
    # a world with rows of several kinds (FedMOA's families): code rows run their tests, others exact match
    "family_accuracy": family_accuracy_reward,
    "real_family_accuracy": real_family_accuracy_reward,
    # real worlds (fedrl_kit.world.registry): HumanEval's tests with the prompt's imports, MedQA's option letter
    "humaneval_accuracy": "fedrl_kit.rewards.humaneval:humaneval_accuracy_reward",
    "mcq_accuracy": "fedrl_kit.rewards.mcq:mcq_accuracy_reward",
})
"""the rewards a config can name, each with its default knobs"""


@dataclass(frozen=True)
class RewardSet:
    """K named reward components and their weights w_k (non-negative, summing to 1)."""

    names: tuple
    """the components' names in ``REWARDS``; by FedMOA's convention ``names[0]`` is accuracy"""
    funcs: tuple
    """the reward functions, aligned with ``names``"""
    weights: tuple
    """w_k, aligned with ``names``"""

    def scores(self, prompts, completions, **columns) -> np.ndarray:
        """Evaluates every component on every completion.

        Args:
            prompts, completions: aligned; completions string or conversational.
            **columns: dataset columns (``answer``, ...), passed to every component.

        Returns:
            Float array [n_completions, K]; NaN where a component returned None.
        """
        n = len(completions)
        scores = np.full((n, len(self.funcs)), np.nan)  # [n_completions, K]
        for k, (name, func) in enumerate(zip(self.names, self.funcs)):
            values = func(prompts, completions, **columns)
            if len(values) != n:
                raise ValueError(
                    f"reward {name!r} returned {len(values)} values for {n} completions"
                )
            scores[:, k] = [np.nan if v is None else v for v in values]
        return scores

    def scalarise(self, prompts, completions, **columns) -> np.ndarray:
        """FedMOA's scalarised reward r_w = Σ_k w_k r_k, with a not-applicable r_k counted as 0.

        Returns:
            Float array [n_completions].
        """
        scores = np.nan_to_num(self.scores(prompts, completions, **columns), nan=0.0)  # [n, K]
        return scores @ np.asarray(self.weights)  # [n]


def make_reward_set(names: Sequence[str], weights: Sequence[float] | None = None) -> RewardSet:
    """Builds a ``RewardSet`` from reward names and optional weights.

    Args:
        names: K >= 1 names from ``REWARDS``, accuracy first by FedMOA's convention.
        weights: K non-negative finite numbers, not all zero, normalised to sum to 1; None for 1/K each.

    Returns:
        The reward set.
    """
    names = (names,) if isinstance(names, str) else tuple(names)
    if not names:
        raise ValueError("names must list at least one reward")
    unknown = [name for name in names if name not in REWARDS]
    if unknown:
        raise ValueError(f"unknown reward name(s) {unknown}; known names: {sorted(REWARDS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"names must not repeat a reward, got {list(names)}")
    if weights is None:
        weights = [1.0] * len(names)
    try:
        w = np.asarray(weights, dtype=float)  # [K]
    except (TypeError, ValueError):
        raise ValueError(f"weights must be numbers, got {weights!r}") from None
    if w.shape != (len(names),):
        raise ValueError(
            f"weights must have one entry per name ({len(names)}), got {list(weights)}"
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {list(weights)}")
    w = w / w.sum()
    return RewardSet(
        names=names,
        funcs=tuple(REWARDS[name] for name in names),
        weights=tuple(float(x) for x in w),
    )


def __getattr__(name: str):
    """The rewards :data:`REWARDS` imports on first use, also by their function names."""
    lazy = {"math_accuracy_reward": "math_accuracy", "humaneval_accuracy_reward": "humaneval_accuracy",
            "mcq_accuracy_reward": "mcq_accuracy"}
    if name in lazy:
        return REWARDS[lazy[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "REWARDS",
    "RewardRegistry",
    "RewardSet",
    "accuracy_reward",
    "char_repetition_penalty_reward",
    "code_accuracy_reward",
    "code_format_reward",
    "defines_function",
    "family_accuracy_reward",
    "real_family_accuracy_reward",
    "completion_text",
    "extract_answer",
    "extract_tagged_answer",
    "format_reward",
    "humaneval_accuracy_reward",
    "is_well_formatted",
    "length_reward",
    "make_length_reward",
    "make_repetition_penalty_reward",
    "make_reward_set",
    "math_accuracy_reward",
    "mcq_accuracy_reward",
    "normalise_answer",
    "repetition_penalty_reward",
    "short_length_reward",
    "tag_count_reward",
]
