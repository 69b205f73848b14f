"""FedMOA's pure building blocks: objective weights, advantages and aggregation weights.
Details: docs/fedmoa.md, "Module notes".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

_SIMPLEX_ATOL = 1e-6
"""tolerance when checking that a weight vector lies on the simplex (eq. 1)"""

_GROUP_STD_EPS = 1e-4
"""added to the group standard deviation, as TRL's GRPOTrainer does"""


# ---------------------------------------------------------------------------
# eq. 1: the probability simplex
# ---------------------------------------------------------------------------


def project_to_simplex(v) -> np.ndarray:
    """Euclidean projection onto the probability simplex (eq. 1).

    ``argmin_w ||w − v||²`` s.t. ``w_k >= 0, Σ_k w_k = 1``: ``w_k = max(v_k − θ, 0)`` (the sort-based algorithm, Duchi
    et al. 2008).

    Args:
        v: vector to project, shape ``[K]``, finite.

    Returns:
        w: float64 array, shape ``[K]``, non-negative, summing to 1.
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"v must be a non-empty 1-D vector, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("v must be finite (no NaN or inf)")
    u = np.sort(v)[::-1]  # [K] descending
    cssv = np.cumsum(u) - 1.0  # [K]
    ks = np.arange(1, v.size + 1)  # [K]
    rho = np.nonzero(u - cssv / ks > 0)[0][-1]  # last index still in the support
    theta = cssv[rho] / (rho + 1)
    w = np.maximum(v - theta, 0.0)  # [K]
    # Rounding can leave the sum a few ulps away from 1; rescaling keeps w >= 0.
    return w / w.sum()


def _check_simplex(w, name: str) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if np.any(w < -_SIMPLEX_ATOL) or abs(w.sum() - 1.0) > _SIMPLEX_ATOL:
        raise ValueError(
            f"{name} must lie on the probability simplex (w_k >= 0, Σ w_k = 1, eq. 1), "
            f"got {w.tolist()}"
        )
    return w


# ---------------------------------------------------------------------------
# eq. 8–10: hypergradient update of the objective weights
# ---------------------------------------------------------------------------


def hypergradient_step(
    w,
    grads_now,
    grads_prev=None,
    lr: float = 0.01,
    normalise: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """One hypergradient update of the objective weights w_k (eq. 9–10).

    ``Δ_k = g_k^(t)ᵀ g_k^(t−1)`` (eq. 9), ``w_k ← w_k + λ Δ_k`` (eq. 10), then ``w ← Proj_simplex(w)``.

    Args:
        w: current weights w^(t−1), ``[K]``, on the simplex.
        grads_now: g_k^(t) flattened per objective, ``[K, d]`` (eq. 8).
        grads_prev: g_k^(t−1), ``[K, d]``, or ``None`` on the first step (w unchanged, Δ = 0).
        lr: the step size λ >= 0 (paper: 0.01; 0 is Table 2's "λ OFF").
        normalise: divide each Δ_k by ``||g_k^(t)|| ||g_k^(t−1)||`` (0 where a gradient is zero).

    Returns:
        (w_new ``[K]`` on the simplex, delta: the signals Δ^(t) ``[K]``).
    """
    w = _check_simplex(w, "w")
    n_obj = w.size
    if not np.isfinite(lr) or lr < 0:
        raise ValueError(f"lr (λ) must be a finite number >= 0, got {lr}")
    g_now = np.asarray(grads_now, dtype=np.float64)
    if g_now.ndim != 2 or g_now.shape[0] != n_obj:
        raise ValueError(f"grads_now must have shape [K={n_obj}, d], got {g_now.shape}")
    if not np.all(np.isfinite(g_now)):
        raise ValueError("grads_now must be finite (no NaN or inf)")
    if grads_prev is None:
        return w.copy(), np.zeros(n_obj)
    g_prev = np.asarray(grads_prev, dtype=np.float64)
    if g_prev.shape != g_now.shape:
        raise ValueError(
            f"grads_prev must have the shape of grads_now {g_now.shape}, got {g_prev.shape}"
        )
    if not np.all(np.isfinite(g_prev)):
        raise ValueError("grads_prev must be finite (no NaN or inf)")
    delta = np.einsum("kd,kd->k", g_now, g_prev)  # [K] eq. 9
    if normalise:
        norms = np.linalg.norm(g_now, axis=1) * np.linalg.norm(g_prev, axis=1)  # [K]
        delta = np.divide(delta, norms, out=np.zeros_like(delta), where=norms > 0)
    w_new = project_to_simplex(w + lr * delta)  # [K] eq. 10 + projection
    return w_new, delta


# ---------------------------------------------------------------------------
# eq. 8: the per-objective advantages that define L_k
# ---------------------------------------------------------------------------


def _group_normalise(r: np.ndarray, scale_rewards: str) -> np.ndarray:
    """Group-relative advantage of ``r`` [B, G, ...] over the group axis 1."""
    adv = r - r.mean(axis=1, keepdims=True)  # [B, G, ...]
    if scale_rewards == "none":
        return adv
    if scale_rewards == "group":
        std = r.std(axis=1, ddof=1, keepdims=True)  # [B, 1, ...]
    else:  # "batch": one std over all B·G rewards (per objective)
        flat = r.reshape(-1, *r.shape[2:])  # [B·G, ...]
        std = flat.std(axis=0, ddof=1)[None, None]  # [1, 1, ...]
    return adv / (std + _GROUP_STD_EPS)


def _check_rewards(rewards, scale_rewards: str) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 3:
        raise ValueError(f"rewards must have shape [B, G, K], got {r.shape}")
    if r.shape[1] < 2:
        raise ValueError(f"rewards needs a group of G >= 2 completions per prompt, got G={r.shape[1]}")
    if r.shape[0] == 0 or r.shape[2] == 0:
        raise ValueError(f"rewards must have B >= 1 and K >= 1, got {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards must be finite (no NaN or inf)")
    if scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}")
    return r


def per_objective_advantages(rewards, scale_rewards: str = "group") -> np.ndarray:
    """Group-relative advantage of each reward component r_k separately.

    Args:
        rewards: r_k for each completion, shape ``[B, G, K]`` (B prompts, G completions per prompt, K objectives).
        scale_rewards: TRL's option: "group" divides by the group std, "batch" by the std over the batch, "none" only
            centres.

    Returns:
        A_k, shape ``[B, G, K]``, float64; zero for a group whose r_k is constant.
    """
    r = _check_rewards(rewards, scale_rewards)  # [B, G, K]
    return _group_normalise(r, scale_rewards)  # [B, G, K]


# ---------------------------------------------------------------------------
# §3.3: task clusters
# ---------------------------------------------------------------------------


def cluster_by_reward_names(
    client_reward_names: Sequence[Sequence[str]], key: str = "names"
) -> list[list[int]]:
    """Group clients into task clusters S_c by their reward names (§3.3).

    Args:
        client_reward_names: for each client m, the names of its reward components in order, accuracy first (r_0^(m)),
            e.g. ``("accuracy", "format", "tag_count")``.
        key: "names" puts clients with identical ordered name tuples together; "accuracy" groups by the accuracy
            reward's name r_0 only.

    Returns:
        The clusters as lists of client indices, ordered by their first client index (and increasing inside a cluster),
        so the result is deterministic.
    """
    if key not in ("names", "accuracy"):
        raise ValueError(f"key must be 'names' or 'accuracy', got {key!r}")
    clusters: dict[tuple[str, ...], list[int]] = {}  # insertion order = first client
    for m, names in enumerate(client_reward_names):
        if isinstance(names, str):
            raise ValueError(
                f"client_reward_names[{m}] must be a tuple of names, got the string {names!r}"
            )
        names = tuple(names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(
                f"client_reward_names[{m}] must be a non-empty tuple of non-empty strings, got {names!r}"
            )
        clusters.setdefault(names if key == "names" else names[:1], []).append(m)
    return list(clusters.values())


# ---------------------------------------------------------------------------
# eq. 11–12: accuracy-aware aggregation weights and shared reward weights
# ---------------------------------------------------------------------------


def accuracy_aware_weights(w0, eps: float = 1e-6, temperature: float = 1.0) -> np.ndarray:
    """Aggregation weights α_m of the clients in one cluster (eq. 11).

    ``s_m = 1 / (w_0^(m) + ε)``, ``α = softmax(s / temperature)``: a client whose accuracy weight is small counts more.

    Args:
        w0: accuracy weights w_0^(m) of the cluster's clients, shape ``[|S_c|]``, each in [0, 1].
        eps: the ε of eq. 11 (paper: 1e-6), > 0.
        temperature: softmax temperature, > 0; the paper uses none (= 1.0).

    Returns:
        α, shape ``[|S_c|]``, float64, non-negative, summing to 1.
    """
    w0 = np.asarray(w0, dtype=np.float64)
    if w0.ndim != 1 or w0.size == 0:
        raise ValueError(f"w0 must be a non-empty 1-D vector, got shape {w0.shape}")
    if not np.all(np.isfinite(w0)) or np.any(w0 < 0) or np.any(w0 > 1 + _SIMPLEX_ATOL):
        raise ValueError(f"w0 must hold accuracy weights in [0, 1], got {w0.tolist()}")
    if not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps (ε) must be > 0, got {eps}")
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    s = 1.0 / (w0 + eps)  # [|S_c|] eq. 11
    z = s / temperature
    e = np.exp(z - z.max())  # stable softmax: s can reach 1/ε
    return e / e.sum()


def _check_alpha(alpha, n: int, name: str = "alpha") -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape [{n}] (one weight per client), got {a.shape}")
    return _check_simplex(a, name)


def aggregate_shared_weights(
    weight_dicts: Sequence[Mapping[str, float]],
    alpha,
    shared_names: Sequence[str] | None = None,
) -> list[dict[str, float]]:
    """Aggregate the shared reward weights of one cluster (eq. 12, right).

    ``w_k^(c) = Σ_m α_m w_k^(m)`` for each shared k; each client keeps its own other components, renormalised (eq. 1).

    Args:
        weight_dicts: for each client m in S_c, ``{reward name: w_k^(m)}``.
        alpha: α_m, shape ``[len(weight_dicts)]``, on the simplex.
        shared_names: the components to aggregate; ``None`` takes the names
            common to all clients, in the first client's order.

    Returns:
        One dict per client, in input order, with that client's names.
    """
    if len(weight_dicts) == 0:
        raise ValueError("weight_dicts must hold at least one client's weights")
    a = _check_alpha(alpha, len(weight_dicts))
    for m, wd in enumerate(weight_dicts):
        vals = np.asarray(list(wd.values()), dtype=np.float64)
        if vals.size == 0 or not np.all(np.isfinite(vals)) or np.any(vals < 0):
            raise ValueError(
                f"weight_dicts[{m}] must hold at least one finite weight >= 0, got {dict(wd)}"
            )
    if shared_names is None:
        shared = [k for k in weight_dicts[0] if all(k in wd for wd in weight_dicts)]
    else:
        shared = list(shared_names)
        for m, wd in enumerate(weight_dicts):
            missing = [k for k in shared if k not in wd]
            if missing:
                raise ValueError(f"shared_names {missing} are missing from weight_dicts[{m}]")
    # Σ_m α_m w_k^(m) on Python floats in client order (aggregate.weighted_sum is the same sum for adapters,
    # arrays in and float32 out; these weights stay float64 on the simplex)
    agg = {k: float(sum(a[m] * float(wd[k]) for m, wd in enumerate(weight_dicts))) for k in shared}
    out: list[dict[str, float]] = []
    for wd in weight_dicts:
        merged = {k: (agg[k] if k in agg else float(v)) for k, v in wd.items()}
        total = sum(merged.values())
        if total > 0:
            merged = {k: v / total for k, v in merged.items()}
        else:  # no mass anywhere: fall back to uniform weights over this client's objectives
            merged = {k: 1.0 / len(merged) for k in merged}
        out.append(merged)
    return out
