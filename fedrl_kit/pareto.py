"""Pareto fronts of reward components, as in FedMOA's Figure 3.

Figure 3 of the FedMOA paper plots checkpoints in the plane of two reward
components (format vs. accuracy, tag count vs. accuracy, tag count vs.
format) and draws the Pareto frontier through them. :func:`non_dominated`
finds the frontier's points and :func:`pareto_front_order` orders them so a
line plot of them reads left to right.

Dominance is strict: point j dominates point i when j is at least as good in
every objective and strictly better in at least one. Two identical points do
not dominate each other, so duplicates on the front are all kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_CHUNK = 512
"""candidate points compared at once; bounds memory at O(_CHUNK · n · d)"""


def non_dominated(points, maximise: bool | Sequence[bool] = True) -> np.ndarray:
    """Mask of the points that no other point dominates.

    Args:
        points: the objective values, shape ``[n, d]`` (n checkpoints, d reward
            components), finite.
        maximise: ``True`` if larger is better in every objective, ``False`` if
            smaller is, or one bool per objective, shape ``[d]``.

    Returns:
        Boolean mask, shape ``[n]``; ``True`` for points on the Pareto front.

    Raises:
        ValueError: if ``points`` is not a finite ``[n, d]`` array or ``maximise``
            has the wrong length.
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] == 0:
        raise ValueError(f"points must have shape [n, d] with d >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("points must be finite (no NaN or inf)")
    mx = np.asarray(maximise, dtype=bool)
    if mx.ndim == 0:
        mx = np.full(p.shape[1], bool(mx))
    if mx.shape != (p.shape[1],):
        raise ValueError(
            f"maximise must be a bool or have one entry per objective ({p.shape[1]}), got {maximise!r}"
        )
    q = np.where(mx, p, -p)  # [n, d], larger is better everywhere
    dominated = np.zeros(p.shape[0], dtype=bool)  # [n]
    for start in range(0, p.shape[0], _CHUNK):  # chunks bound the [chunk, n, d] comparison
        qi = q[start : start + _CHUNK]  # [c, d] candidates
        ge = np.all(q[None, :, :] >= qi[:, None, :], axis=2)  # [c, n] j >= i everywhere
        gt = np.any(q[None, :, :] > qi[:, None, :], axis=2)  # [c, n] j > i somewhere
        dominated[start : start + _CHUNK] = np.any(ge & gt, axis=1)
    return ~dominated


def pareto_front_order(points, mask) -> np.ndarray:
    """Indices of the front's points, sorted along the first objective.

    Ties in the first objective are broken by the remaining objectives, then
    by index, so the order is deterministic. Plot with
    ``points[order, 0], points[order, 1]``.

    Args:
        points: shape ``[n, d]``.
        mask: shape ``[n]``, e.g. from :func:`non_dominated`.

    Returns:
        Integer indices into ``points``, shape ``[mask.sum()]``, ascending in
        the first objective.

    Raises:
        ValueError: if the shapes of ``points`` and ``mask`` disagree.
    """
    p = np.asarray(points, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    if p.ndim != 2:
        raise ValueError(f"points must have shape [n, d], got {p.shape}")
    if m.shape != (p.shape[0],):
        raise ValueError(f"mask must have shape [{p.shape[0]}], got {m.shape}")
    idx = np.nonzero(m)[0]  # [n_front]
    keys = [idx] + [p[idx, k] for k in range(p.shape[1] - 1, -1, -1)]  # last key is primary
    return idx[np.lexsort(keys)]
