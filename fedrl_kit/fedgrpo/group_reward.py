"""FedGRPO's group-relative reward: from the experts' scalar scores to one advantage per candidate.

Paper: FedGRPO (Zhu et al., AAAI 2026), §3.2 "Group Relative Policy Optimization", Algorithm 1
lines 18–21, eqs. 8–9, Remarks 1–2, Appendix A. The ``M`` experts ``C(x_s)`` each return a
private score ``r_k^s`` for the server's candidate answers ``ŷ``; the server standardises them,

    μ_r = (1/M) Σ_{k∈C} r_k^s,   σ_r = sqrt((1/M) Σ_{k∈C} (r_k^s − μ_r)²)     (eq. 8)
    R_k = (r_k^s − μ_r) / (σ_r + ε)                                          (eq. 9)

and takes a policy-gradient step ``θ_g ← θ_g + η R_k ∇ log π_θg(ŷ | x_s)``. (Algorithm 1 line 19
prints the ``μ_r, σ_r`` definition with the label (7); the text labels the same formula (8). We
cite the text: eq. 8 for ``μ_r, σ_r``, eq. 9 for ``R_k``.)

Here the ``G`` candidates of one question (the paper samples ``G = 8``) are scored by all ``M``
experts, so the scores form a matrix ``r[k, g]``, ``[M, G]``.

Paper → code:

- eqs. 8–9 taken literally, per candidate over the ``M`` experts → :func:`group_relative_rewards`
- the per-candidate advantage that the GRPO loss consumes when every expert scores the same ``G``
  candidates → :func:`candidate_advantages` (``variant="paper"``, ``"pooled"`` or ``"per_expert"``)
- the official code's protocol (each expert scores its own block of ``G`` of ``G·M`` candidates,
  one pooled group) → :func:`official_advantages` (``fedgrpo.group_reward="official"``)
- the aggregation ``A(·)`` of eq. 4, made robust to malicious experts → :func:`robust_aggregate`
- what a malicious expert sends (beyond the paper's honest-but-curious threat model)
  → :func:`malicious_rewards`

Ambiguities in the paper, and what we chose (the tests pin each choice):

1. **Eq. 9 alone carries no learning signal.** Per candidate, ``Σ_{k∈C} R_k = 0`` by
   construction, so summing the update over the experts gives ``η (Σ_k R_k) ∇ log π(ŷ|x_s) = 0``:
   standardising across experts only measures how much the experts *disagree* about a candidate,
   not how good it is. (With ``M = 2`` and a split vote, ``R = (+1, −1)``.) Remark 2 says the
   group "corresponds to the ensemble of candidate policies in GRPO" and that ``ŷ`` "could
   represent a collection of policies", so the comparison that drives learning must be *between
   candidates*. :func:`group_relative_rewards` implements eqs. 8–9 literally (useful as a
   disagreement diagnostic); :func:`candidate_advantages` builds the advantage.
2. **``variant="paper"`` (our reading of eqs. 8–9 + Remark 2).** For each candidate ``g``:
   (a) the expert consensus ``μ_g`` — eq. 8's ``μ_r`` over the ``M`` experts, i.e. the
   aggregation ``A(·)`` of eq. 4 (``how="median"``/``"trimmed_mean"`` swaps in a robust one);
   (b) the combined reward ``s_g = group_coef · μ_g + format_coef · f_g`` (Remark 1's format
   reward ``f_g``, Appendix A's coefficients 8 and 1); (c) GRPO's group normalisation across the
   ``G`` candidates (Shao et al. 2024) with eq. 8's conventions:
   ``A_g = (s_g − mean_g s) / (std_g s + ε)``, population std, ``ε = 1e-6``.
3. **``variant="official"`` — the official code's protocol** (``utils/trainer.py`` and
   ``FedGRPO.py`` of Liar-Mask/FedGRPO). Each question gets ``M`` experts drawn uniformly at random
   (``random.sample(range(num_clients), num_group)``, once per sample), the trainer generates
   ``G·M`` completions per prompt, and expert ``j`` scores only its own block of ``G``; every
   completion's reward is TRL's weighted sum ``x = 8·accuracy + 1·format`` (``--reward_weights
   8 1``) and all ``G·M`` rewards of the prompt form one group: ``A = x − mean x``, divided by
   ``std x + 1e-4`` (torch's unbiased std) only with ``scale_rewards`` — which the official
   scripts switch off (``--scale_rewards False``). :func:`official_advantages` computes that
   group from the ``[M, G]`` block scores; the server's protocol (random experts, ``G·M``
   candidates, block-wise scoring) is in :mod:`fedrl_kit.fedgrpo.algorithm`.
   **``variant="pooled"``** is *not* the official protocol but its normalisation transplanted to
   the paper's protocol (every expert scores the *same* ``G`` candidates): the ``M·G`` weighted
   rewards ``x[k, g] = group_coef·r[k, g] + format_coef·f_g`` are normalised together the same way
   (``ddof = 1``, ``ε = 1e-4``), then each candidate's ``M`` entries are averaged. Algebraically
   ``A_g = (mean_k x[k, g] − mean x) / (std_pooled + ε)``: the same numerator as "paper", but the
   pooled std also counts expert disagreement, which shrinks the step when experts disagree.
   (Until this version the "pooled" variant was called "official".)
4. **Scaling by the std.** Eq. 9 divides by ``σ_r``; the official training scripts pass
   ``--scale_rewards False`` (advantage = reward − mean). ``scale_rewards`` (TRL's name) selects
   either; ``fedgrpo.scale_rewards = None`` (the default) takes each variant's own: ``True`` (eq. 9)
   for paper, pooled and per_expert, ``False`` for official (:func:`default_scale_rewards`).
5. **Population or sample std.** Eq. 8 writes ``1/M`` (population std): "paper" and
   :func:`group_relative_rewards` use it. The official code uses ``torch.std`` (``1/(n−1)``):
   "official" and "pooled" use that.
6. **ε.** Unspecified in the paper; we use ``1e-6`` (paper, per_expert) and the official
   code's ``1e-4`` (official, pooled), unless ``eps`` is given.
7. **The coefficients 8 and 1 (Appendix A).** "The coefficient for the group-relative reward is
   set to 8, while the coefficient for the format reward is set to 1": in the official scripts
   these are TRL reward weights on the raw accuracy and format rewards *before* normalisation,
   and we apply them the same way. When the std is divided out, a common factor cancels: only
   the ratio 8 : 1 matters.
8. **Who computes the format reward.** Remark 1 adds a format reward "following Shao et al.";
   it needs only the completion text, so the server computes it (``format_rewards``, ``[G]``) —
   no private data is involved. (In the official code each client computes it; same numbers.)
9. **Scale discrepancies between AE and ME.** The paper motivates eq. 9 by "eliminat[ing]
   scale discrepancies across evaluation modes" (binary AE vs real-valued ME). Standardising
   across experts per candidate does not do that (a 0–10 ME scale still dominates a mean).
   ``variant="per_expert"`` is the reading that does: each expert's row is standardised across
   the ``G`` candidates (GRPO per expert), then averaged over experts. It is our extension,
   not the paper's formula; it is offered for comparison.
10. **Degenerate groups.** ``M = 1`` or ``σ = 0`` (all equal) give zeros, never nan; the same
    for ``G = 1`` or equal combined rewards across candidates in the advantages.
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
"""How per-expert scores become advantages (``fedgrpo.group_reward``); see the module docstring, 2–3 and 9.
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
    """``(x − mean) / (std + ε)`` along ``axis``; zero wherever the values along ``axis`` are all equal.

    All-equal slices (including a single value) are set to exactly zero rather than computed, so
    floating-point residue of ``x − mean`` never leaks through ``/ ε`` and no ``ddof`` nan appears.

    This is deliberately not :func:`fedrl_kit.grpo.group_advantages` (the engine's GRPO
    normalisation, TRL's formula): that one works on float32 torch tensors, always uses the
    unbiased std and ε = 1e-4, and computes all-equal groups as ``0 / (0 + ε)``; here the paper's
    eqs. 8–9 need the population std and ε = 1e-6 (points 5–6), in float64, along either axis of
    the ``[M, G]`` score matrix, with exact zeros for all-equal slices (point 10). Calling one for
    the other would change the advantages.
    """
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

    For every candidate ``g``: ``μ_r = mean_k r_k^s``, ``σ_r`` the population std over the
    experts (eq. 8's ``1/M``), and ``R_k = (r_k^s − μ_r) / (σ_r + ε)`` (eq. 9). Each column sums
    to zero, so on its own this measures expert disagreement, not candidate quality (module
    docstring, point 1); :func:`candidate_advantages` turns scores into advantages.

    Args:
        rewards: private scores ``r_k^s`` of the ``M`` experts on the ``G`` candidates, ``[M, G]``.
        eps: ``ε ≥ 0`` in eq. 9's denominator.

    Returns:
        float64 ``[M, G]``: ``R_k`` per expert and candidate. A column with ``σ_r = 0`` (all experts
        agree, which includes ``M = 1``) is all zeros, never nan.

    Raises:
        ValueError: if ``rewards`` is not a finite ``[M, G]`` array or ``eps < 0``.
    """
    r = _rewards_matrix(rewards)  # [M, G]
    eps = _check_eps(eps)
    return _standardise(r, axis=0, eps=eps, ddof=0, scale=True)  # [M, G]


def robust_aggregate(rewards, how: str = "mean", trim: float = 0.2) -> np.ndarray:
    """Aggregates the ``M`` experts' scores of each candidate: ``A(·)`` of eq. 4.

    ``"mean"`` is eq. 8's ``μ_r``. ``"median"`` and ``"trimmed_mean"`` bound the pull of a
    minority of malicious experts: with ``M = 5`` and one liar, the median and the 20%-trimmed
    mean ignore its score entirely when it is extreme.

    Args:
        rewards: private scores ``r_k^s``, ``[M, G]``.
        how: one of :data:`AGGREGATIONS`.
        trim: for ``"trimmed_mean"``, the fraction cut from *each* end, ``0 ≤ trim < 0.5``;
            ``⌊trim·M⌋`` scores are dropped at each end (none when ``trim·M < 1``).

    Returns:
        float64 ``[G]``: the aggregated score per candidate.

    Raises:
        ValueError: on a bad ``rewards``, an unknown ``how``, or ``trim`` outside ``[0, 0.5)``.
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

    ``variant`` (see the module docstring for why each is defined this way):

    - ``"paper"``: ``μ_g = A_k(r[k, g])`` (eq. 8's mean, or ``how``), ``s_g = group_coef·μ_g +
      format_coef·f_g``, then ``A_g = (s_g − mean s) / (std s + ε)`` over the ``G`` candidates,
      population std, ``ε = 1e-6``.
    - ``"pooled"``: ``x[k, g] = group_coef·r[k, g] + format_coef·f_g``, all ``M·G`` entries
      normalised together (unbiased std, ``ε = 1e-4``), then averaged over the experts per
      candidate (the official code's normalisation on the paper's shared candidates).
    - ``"per_expert"``: ``x[k, g]`` as above, each expert's row standardised across the ``G``
      candidates (population std, ``ε = 1e-6``), then averaged over experts (our extension).

    Args:
        rewards: private scores ``r_k^s`` of the ``M`` experts on the ``G`` candidates, ``[M, G]``.
        variant: one of :data:`SHARED_VARIANTS` ("official" scores disjoint blocks: use
            :func:`official_advantages`).
        group_coef: weight of the experts' reward, ``≥ 0`` (Appendix A: 8).
        format_rewards: the format reward ``f_g`` of each candidate (Remark 1), ``[G]``, or ``None``
            for none.
        format_coef: weight of the format reward, ``≥ 0`` (Appendix A: 1).
        how: the expert aggregation for ``"paper"`` (:data:`AGGREGATIONS`); must stay ``"mean"``
            for the other variants, which average by construction.
        trim: passed to :func:`robust_aggregate` when ``how="trimmed_mean"``.
        scale_rewards: divide by the std (eq. 9, TRL's ``scale_rewards=True``) or only centre
            (the official scripts' ``--scale_rewards False``).
        eps: ``ε ≥ 0``; ``None`` uses the variant's default (1e-6, or 1e-4 for "pooled").

    Returns:
        float64 ``[G]``: the advantage of each candidate; zeros when every candidate's combined
        reward is equal (including ``G = 1``).

    Raises:
        ValueError: on bad shapes, non-finite values, negative coefficients, an unknown
            ``variant``/``how``, or ``how != "mean"`` outside ``variant="paper"``.
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

    Row ``j`` of ``block_rewards`` is expert ``j``'s scores of completions ``j·G … j·G + G − 1`` of the
    prompt's ``G·M``. Every completion's reward is ``x = group_coef·r + format_coef·f`` and the ``M·G``
    rewards form one group (``utils/trainer.py``: ``rewards.view(-1, G·M)``):
    ``A = x − mean x``, divided by ``std x + ε`` (unbiased std) only with ``scale_rewards`` (the
    official scripts pass ``--scale_rewards False``). A group whose rewards are all equal gets zeros.

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

    The paper assumes honest-but-curious clients (§3.1) and lists malicious ones as a limitation;
    these two attacks let the notebook test :func:`robust_aggregate` against them.

    Args:
        rewards: the honest scores ``r_k^s``, any shape, finite; for ``"flip"`` in ``[0, 1]``.
        kind: ``"flip"`` returns ``1 − r`` (rewards wrong answers, punishes right ones);
            ``"random"`` returns i.i.d. uniform scores in ``[0, 1)`` of the same shape.
        rng: a ``np.random.Generator`` or int seed; required for ``"random"``, unused for ``"flip"``.

    Returns:
        float64 array with the shape of ``rewards``.

    Raises:
        ValueError: on an unknown ``kind``, a flip of scores outside ``[0, 1]``, or a missing ``rng``.
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
