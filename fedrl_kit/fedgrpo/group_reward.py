"""FedGRPO's group-relative reward: from the experts' scalar scores to one advantage per candidate.
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.aggregate import trimmed_mean_array

__all__ = [
    "group_relative_rewards",
    "candidate_advantages",
    "official_advantages",
    "default_scale_rewards",
    "robust_aggregate",
    "malicious_rewards",
    "ADVANTAGE_VARIANTS",
    "SHARED_VARIANTS",
    "AGGREGATIONS",
    "MALICIOUS_KINDS",
]

ADVANTAGE_VARIANTS = ("paper", "pooled", "per_expert", "official")
"""How per-expert scores become advantages (``fedgrpo.group_reward``); docs/fedgrpo.md, "Module notes", 2–3 and 9.
The first three score the same ``G`` candidates by every expert (:func:`candidate_advantages`);
"official" is the official code's protocol, each expert its own block (:func:`official_advantages`)."""

SHARED_VARIANTS = ("paper", "pooled", "per_expert")
"""The variants in which every expert scores the same ``G`` candidates (the paper's protocol)."""

AGGREGATIONS = ("mean", "median", "trimmed_mean")
"""Aggregations ``A(·)`` of eq. 4 over the ``M`` experts; the last two resist malicious experts."""

MALICIOUS_KINDS = ("flip", "random")
"""What a malicious expert returns: ``1 − r`` (flip) or uniform noise in [0, 1] (random)."""

_DEFAULT_EPS = {"paper": 1e-6, "per_expert": 1e-6, "pooled": 1e-4, "official": 1e-4}


def default_scale_rewards(variant: str, scale_rewards: bool | None = None) -> bool:
    """``scale_rewards`` as given, or the variant's own when ``None``: False for "official" (the official
    scripts' ``--scale_rewards False``), True (eq. 9's σ) for the others."""
    if scale_rewards is not None:
        return bool(scale_rewards)
    return variant != "official"


def _rewards_matrix(rewards, name: str = "rewards") -> np.ndarray:
    """Returns ``rewards`` as a finite float64 ``[M, G]`` array with ``M, G ≥ 1``."""
    arr = np.asarray(rewards, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(
            f"{name} must be a [M, G] array with M >= 1 experts and G >= 1 candidates, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no nan or inf)")
    return arr


def _check_eps(eps: float) -> float:
    if not (np.isfinite(eps) and eps >= 0.0):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    return float(eps)


def _standardise(x: np.ndarray, axis, eps: float, ddof: int, scale: bool) -> np.ndarray:
    """``(x − mean) / (std + ε)`` along ``axis``; zero wherever the values along ``axis`` are all equal."""
    flat = np.ptp(x, axis=axis, keepdims=True) == 0.0  # all equal along axis
    centred = x - x.mean(axis=axis, keepdims=True)
    n = x.size if axis is None else x.shape[axis]
    # n <= ddof only for a single value, which is flat and zeroed below anyway.
    if scale and n > ddof:
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 only in flat slices (eps = 0)
            centred = centred / (x.std(axis=axis, keepdims=True, ddof=ddof) + eps)
    return np.where(flat, 0.0, centred)


def group_relative_rewards(rewards, eps: float = 1e-6) -> np.ndarray:
    """Eqs. 8–9 literally: each candidate's scores standardised across the ``M`` experts.

    Args:
        rewards: private scores ``r_k^s`` of the ``M`` experts on the ``G`` candidates, ``[M, G]``.
        eps: ``ε ≥ 0`` in eq. 9's denominator.

    Returns:
        float64 ``[M, G]``: ``R_k`` per expert and candidate. A column with ``σ_r = 0`` (all experts
        agree, which includes ``M = 1``) is all zeros, never nan.
    """
    r = _rewards_matrix(rewards)  # [M, G]
    eps = _check_eps(eps)
    return _standardise(r, axis=0, eps=eps, ddof=0, scale=True)  # [M, G]


def robust_aggregate(rewards, how: str = "mean", trim: float = 0.2) -> np.ndarray:
    """Aggregates the ``M`` experts' scores of each candidate: ``A(·)`` of eq. 4.

    Args:
        rewards: private scores ``r_k^s``, ``[M, G]``.
        how: one of :data:`AGGREGATIONS`.
        trim: for ``"trimmed_mean"``, the fraction cut from *each* end, ``0 ≤ trim < 0.5``;
            ``⌊trim·M⌋`` scores are dropped at each end (none when ``trim·M < 1``).

    Returns:
        float64 ``[G]``: the aggregated score per candidate.
    """
    r = _rewards_matrix(rewards)  # [M, G]
    if how not in AGGREGATIONS:
        raise ValueError(f"how must be one of {AGGREGATIONS}, got {how!r}")
    if how == "mean":
        return r.mean(axis=0)  # [G]
    if how == "median":
        return np.median(r, axis=0)  # [G]
    # ⌊trim·M⌋ dropped at each end (M − 2·cut ≥ 1 since trim < 0.5), the engine's coordinate-wise trimmed mean
    return trimmed_mean_array(r, trim, axis=0)  # [G]


def candidate_advantages(
    rewards,
    variant: str = "paper",
    group_coef: float = 8.0,
    format_rewards=None,
    format_coef: float = 1.0,
    *,
    how: str = "mean",
    trim: float = 0.2,
    scale_rewards: bool = True,
    eps: float | None = None,
) -> np.ndarray:
    """One GRPO advantage per candidate answer from the experts' scores (eqs. 8–9, Remark 2).

    ``"paper"``: ``s_g = group_coef·A_k(r[k, g]) + format_coef·f_g``, normalised over the G candidates (population
    std, ε = 1e-6). ``"pooled"``: ``x[k, g] = group_coef·r[k, g] + format_coef·f_g`` normalised over all M·G entries
    (unbiased std, ε = 1e-4), then averaged per candidate. ``"per_expert"``: each expert's row of ``x`` standardised
    over the G candidates, then averaged (ours).

    Args:
        rewards: private scores ``r_k^s`` of the ``M`` experts on the ``G`` candidates, ``[M, G]``.
        variant: one of :data:`SHARED_VARIANTS` (for "official" use :func:`official_advantages`).
        group_coef, format_coef: weights of the experts' and the format reward, ``≥ 0`` (Appendix A: 8 and 1).
        format_rewards: the format reward ``f_g`` of each candidate (Remark 1), ``[G]``, or ``None``.
        how: the expert aggregation for ``"paper"`` (:data:`AGGREGATIONS`); ``"mean"`` for the other variants.
        trim: passed to :func:`robust_aggregate` when ``how="trimmed_mean"``.
        scale_rewards: divide by the std (eq. 9) or only centre (the official scripts' ``--scale_rewards False``).
        eps: ``ε ≥ 0``; ``None`` uses the variant's default (1e-6, or 1e-4 for "pooled").

    Returns:
        float64 ``[G]``; zeros when every candidate's combined reward is equal (including ``G = 1``).
    """
    r = _rewards_matrix(rewards)  # [M, G]
    n_candidates = r.shape[1]
    if variant == "official":
        raise ValueError("variant='official' is the official code's protocol, in which each expert scores its own "
                         "block of candidates: use official_advantages (variant='pooled' is its normalisation "
                         "on shared candidates)")
    if variant not in SHARED_VARIANTS:
        raise ValueError(f"variant must be one of {SHARED_VARIANTS}, got {variant!r}")
    if how != "mean" and variant != "paper":
        raise ValueError(f"how={how!r} applies to variant='paper' only; variant={variant!r} needs how='mean'")
    for name, coef in (("group_coef", group_coef), ("format_coef", format_coef)):
        if not (np.isfinite(coef) and coef >= 0.0):
            raise ValueError(f"{name} must be a finite number >= 0, got {coef!r}")
    eps = _check_eps(_DEFAULT_EPS[variant] if eps is None else eps)
    if format_rewards is None:
        fmt = np.zeros(n_candidates)  # [G]
    else:
        fmt = np.asarray(format_rewards, dtype=np.float64)  # [G]
        if fmt.shape != (n_candidates,) or not np.all(np.isfinite(fmt)):
            raise ValueError(f"format_rewards must be a finite [G] array with G={n_candidates}, got shape {fmt.shape}")

    if variant == "paper":
        consensus = robust_aggregate(r, how=how, trim=trim)  # [G] μ_g (eq. 8) or a robust A(·)
        combined = group_coef * consensus + format_coef * fmt  # [G] s_g
        return _standardise(combined, axis=0, eps=eps, ddof=0, scale=scale_rewards)  # [G]

    weighted = group_coef * r + format_coef * fmt[None, :]  # [M, G] x[k, g]
    if variant == "pooled":
        pooled = _standardise(weighted, axis=None, eps=eps, ddof=1, scale=scale_rewards)  # [M, G]
        return pooled.mean(axis=0)  # [G]
    per_expert = _standardise(weighted, axis=1, eps=eps, ddof=0, scale=scale_rewards)  # [M, G]
    return per_expert.mean(axis=0)  # [G]


def official_advantages(
    block_rewards,
    group_coef: float = 8.0,
    format_rewards=None,
    format_coef: float = 1.0,
    *,
    scale_rewards: bool = False,
    eps: float = 1e-4,
) -> np.ndarray:
    """The official code's advantages for one prompt: ``M`` experts, each scoring its own block of ``G``.

    Args:
        block_rewards: ``[M, G]``, expert ``j``'s scores of its own block.
        group_coef, format_coef: the weights 8 and 1 (``--reward_weights 8 1``), ``≥ 0``.
        format_rewards: ``[M, G]`` (the same layout) or ``None`` for none.
        scale_rewards: divide by the group's std.
        eps: ``ε ≥ 0`` (the official code's 1e-4).

    Returns:
        float64 ``[M, G]``: the advantage of each completion, in block layout (``.reshape(-1)`` is the
        prompt's ``G·M`` completions in generation order).
    """
    r = _rewards_matrix(block_rewards, "block_rewards")  # [M, G]
    for name, coef in (("group_coef", group_coef), ("format_coef", format_coef)):
        if not (np.isfinite(coef) and coef >= 0.0):
            raise ValueError(f"{name} must be a finite number >= 0, got {coef!r}")
    eps = _check_eps(eps)
    fmt = np.zeros_like(r) if format_rewards is None else np.asarray(format_rewards, dtype=np.float64)
    if fmt.shape != r.shape or not np.all(np.isfinite(fmt)):
        raise ValueError(f"format_rewards must be a finite array of the blocks' shape {r.shape}, got {fmt.shape}")
    x = group_coef * r + format_coef * fmt  # [M, G]
    return _standardise(x, axis=None, eps=eps, ddof=1, scale=scale_rewards)  # [M, G]


def malicious_rewards(rewards, kind: str = "flip", rng=None) -> np.ndarray:
    """What a malicious expert returns instead of its honest scores.

    Args:
        rewards: the honest scores ``r_k^s``, any shape, finite; for ``"flip"`` in ``[0, 1]``.
        kind: ``"flip"`` returns ``1 − r`` (rewards wrong answers, punishes right ones);
            ``"random"`` returns i.i.d. uniform scores in ``[0, 1)`` of the same shape.
        rng: a ``np.random.Generator`` or int seed; required for ``"random"``, unused for ``"flip"``.

    Returns:
        float64 array with the shape of ``rewards``.
    """
    if kind not in MALICIOUS_KINDS:
        raise ValueError(f"kind must be one of {MALICIOUS_KINDS}, got {kind!r}")
    r = np.asarray(rewards, dtype=np.float64)
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards must be finite (no nan or inf)")
    if kind == "flip":
        if not np.all((r >= 0.0) & (r <= 1.0)):
            raise ValueError("kind='flip' needs rewards in [0, 1] (1 − r is a flip only for such scores)")
        return 1.0 - r
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"kind='random' needs rng, a numpy Generator or an int seed, got {type(rng).__name__}")
    return rng.uniform(0.0, 1.0, size=r.shape)
