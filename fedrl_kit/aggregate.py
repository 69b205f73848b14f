"""Server-side aggregators over plain-data adapters (``dict[name, ndarray]``).

- :func:`fedavg` — McMahan et al.: Σ_n (|D_n| / Σ|D|) θ_n; :func:`weighted_average`, :func:`weighted_sum` for
  other weights (FedMOA's α, eq. 12).
- :func:`fedit` — FedIT (PubSwap eq. 4): A and B averaged separately and uniformly; mean(B)·mean(A) ≠ mean(B·A).
- :func:`coordinate_median`, :func:`trimmed_mean` — robust, coordinate-wise.
"""

from __future__ import annotations

import numpy as np

State = dict[str, np.ndarray]


def _check(states: list[State]) -> None:
    if not states:
        raise ValueError("cannot aggregate zero adapters (every client failed this round?)")
    keys = set(states[0])
    for i, s in enumerate(states[1:], 1):
        if set(s) != keys:
            raise ValueError(f"adapter {i} has different tensors than adapter 0")


def _finite(states: list[State]) -> list[bool]:
    return [all(np.isfinite(v).all() for v in s.values()) for s in states]


def _robust_inputs(states: list[State]) -> list[State]:
    """The adapters a robust aggregator uses: every finite one (a NaN or ±inf adapter is an outlier, left out)."""
    _check(states)
    kept = [s for s, ok in zip(states, _finite(states)) if ok]
    if not kept:
        raise ValueError(f"all {len(states)} adapters hold non-finite values: nothing to aggregate")
    return kept


def weighted_sum(states: list[State], weights) -> State:
    """Σ_n w_n θ_n with weights that already sum to 1, used as given (float64 accumulation in client order,
    float32 out); e.g. FedMOA's θ^(c) = Σ_m α_m θ^(m) (eq. 12). Dividing such weights again by their
    rounded sum, as :func:`weighted_average` does, could move the last bits."""
    _check(states)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(states),) or not np.isfinite(w).all() or (w < 0).any() or abs(w.sum() - 1.0) > 1e-6:
        raise ValueError(f"weights must be {len(states)} non-negative numbers summing to 1, got {weights}")
    for i, s in enumerate(states[1:], 1):
        bad = [k for k in states[0] if np.shape(s[k]) != np.shape(states[0][k])]
        if bad:
            raise ValueError(f"adapter {i}'s {bad[0]!r} has shape {np.shape(s[bad[0]])}, adapter 0's "
                             f"{np.shape(states[0][bad[0]])}")
    bad = [i for i, ok in enumerate(_finite(states)) if not ok]
    if bad:
        raise ValueError(f"adapter(s) {bad} hold non-finite values: an average would be NaN everywhere")
    return {k: sum(wi * s[k].astype(np.float64) for wi, s in zip(w, states)).astype(np.float32) for k in states[0]}


def weighted_average(states: list[State], weights) -> State:
    """Σ_n w_n θ_n with w normalised to sum to 1 (float64 accumulation, float32 out)."""
    _check(states)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(states),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be {len(states)} non-negative numbers with a positive sum, got {weights}")
    return weighted_sum(states, w / w.sum())


def fedavg(states: list[State], num_examples) -> State:
    """FedAvg: average weighted by each client's number of examples."""
    return weighted_average(states, num_examples)


def fedit(states: list[State]) -> State:
    """FedIT (PubSwap eq. 4): uniform average of the LoRA factors A and B, each on its own."""
    return weighted_average(states, np.ones(len(states)))


def coordinate_median(states: list[State]) -> State:
    """Coordinate-wise median of the adapters (robust to a minority of outliers; non-finite adapters left out)."""
    states = _robust_inputs(states)
    return {k: np.median(np.stack([s[k] for s in states]), axis=0).astype(np.float32) for k in states[0]}


def trimmed_mean_array(x, trim: float, axis: int = 0) -> np.ndarray:
    """Mean along ``axis`` after dropping the ⌊trim·n⌋ largest and smallest values there (n = ``x.shape[axis]``)."""
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim!r}")
    x = np.asarray(x)
    n = x.shape[axis]
    cut = int(np.floor(trim * n))
    kept = [slice(None)] * x.ndim
    kept[axis] = slice(cut, n - cut)
    return np.sort(x, axis=axis)[tuple(kept)].mean(axis=axis)


def trimmed_mean(states: list[State], trim: float = 0.2) -> State:
    """Coordinate-wise mean after dropping the ``trim`` fraction of largest and smallest values (non-finite adapters
    left out first)."""
    states = _robust_inputs(states)
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim}")
    return {k: trimmed_mean_array(np.stack([s[k] for s in states]), trim).astype(np.float32)  # [n, ...] -> [...]
            for k in states[0]}


AGGREGATORS = ("fedavg", "fedit", "median", "trimmed_mean")


def aggregate(states: list[State], how: str, num_examples=None) -> State:
    """Dispatch by name: ``"fedavg"`` (needs num_examples), ``"fedit"``, ``"median"``, ``"trimmed_mean"``."""
    if how == "fedavg":
        return fedavg(states, num_examples)
    if how == "fedit":
        return fedit(states)
    if how == "median":
        return coordinate_median(states)
    if how == "trimmed_mean":
        return trimmed_mean(states)
    raise ValueError(f"aggregator must be one of {sorted(AGGREGATORS)}, got {how!r}")
