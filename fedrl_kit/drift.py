"""Client drift, heterogeneity and group-variance measures for federated LoRA GRPO.
Details: docs/pubswap.md, "Module notes".
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = [
    "effective_delta",
    "adapter_distance",
    "pairwise_drift",
    "mean_pairwise_drift",
    "distance_to_global",
    "within_group_reward_stats",
    "pairwise_gradient_dissimilarity",
    "gradient_dissimilarity",
]

SPACES = ("effective", "factors")
"""the two spaces in which adapter distances are measured"""

Adapter = Mapping[str, tuple]
"""module name -> (A [r, d], B [m, r]) LoRA factors, numpy arrays or torch tensors"""


def _to_numpy(x, name: str) -> np.ndarray:
    """float64 numpy copy of a numpy array, torch tensor or nested list."""
    if hasattr(x, "detach"):  # torch tensor, without importing torch
        x = x.detach().cpu().double().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array or tensor, got {type(x).__name__}") from err


def _check_scaling(scaling: float) -> float:
    is_number = isinstance(scaling, (int, float, np.floating, np.integer)) and not isinstance(scaling, bool)
    if not is_number or not np.isfinite(scaling):
        raise ValueError(f"scaling must be a finite number, got {scaling!r}")
    return float(scaling)


def _check_space(space: str) -> None:
    if space not in SPACES:
        raise ValueError(f"space must be one of {SPACES}, got {space!r}")


def _factors(adapter: Adapter, name: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Validates an adapter and returns its factors as float64 numpy, module by module."""
    if not isinstance(adapter, Mapping) or len(adapter) == 0:
        raise ValueError(f"{name} must be a non-empty dict module name -> (A, B), got {adapter!r:.80}")
    out = {}
    for module, pair in adapter.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"{name}[{module!r}] must be a pair (A [r, d], B [m, r])")
        a = _to_numpy(pair[0], f"{name}[{module!r}] A")  # [r, d]
        b = _to_numpy(pair[1], f"{name}[{module!r}] B")  # [m, r]
        if a.ndim != 2 or b.ndim != 2 or b.shape[1] != a.shape[0]:
            raise ValueError(
                f"{name}[{module!r}] must be (A [r, d], B [m, r]) with matching rank r, "
                f"got A {a.shape}, B {b.shape}"
            )
        out[module] = (a, b)
    return out


def _module_vector(a: np.ndarray, b: np.ndarray, space: str, scaling: float) -> np.ndarray:
    """One module of one adapter as a flat vector in the chosen space."""
    if space == "effective":
        return (scaling * (b @ a)).ravel()  # [m·d]
    return np.concatenate([a.ravel(), b.ravel()])  # [r·d + m·r]


def _aligned(adapters: Sequence[Adapter], names: Sequence[str]) -> list[dict]:
    """Validates several adapters and checks they share module names and factor shapes."""
    factors = [_factors(ad, nm) for ad, nm in zip(adapters, names)]
    ref, ref_name = factors[0], names[0]
    for f, nm in zip(factors[1:], names[1:]):
        if set(f) != set(ref):
            raise ValueError(
                f"{nm} must have the same modules as {ref_name}; "
                f"differ in {sorted(set(f) ^ set(ref))}"
            )
        for module in ref:
            shapes = tuple(x.shape for x in f[module])
            ref_shapes = tuple(x.shape for x in ref[module])
            if shapes != ref_shapes:
                raise ValueError(
                    f"{nm}[{module!r}] must have factor shapes {ref_shapes} as {ref_name}, got {shapes}"
                )
    return factors


def effective_delta(adapter: Adapter, scaling: float = 1.0) -> dict[str, np.ndarray]:
    """The weight change each LoRA module applies, eq. 3: ``ΔW = s · B A``.

    Args:
        adapter: module name -> ``(A [r, d], B [m, r])``.
        scaling: the LoRA scaling ``s`` (peft: ``lora_alpha / r``; the paper's runs use ``64 / 32 = 2``). Default 1.

    Returns:
        module name -> ``ΔW [m, d]`` float64.
    """
    scaling = _check_scaling(scaling)
    return {module: scaling * (b @ a) for module, (a, b) in _factors(adapter, "adapter").items()}


def _pairwise_squared(factors: list[dict], space: str, scaling: float) -> np.ndarray:
    """``[N, N]`` squared distances, accumulated module by module to keep memory at one module."""
    n_adapters = len(factors)
    d2 = np.zeros((n_adapters, n_adapters))  # [N, N]
    for module in factors[0]:
        vecs = np.stack([_module_vector(*f[module], space, scaling) for f in factors])  # [N, P]
        for i in range(n_adapters):
            diff = vecs[i + 1 :] - vecs[i]  # [N − i − 1, P]
            d2[i, i + 1 :] += np.einsum("ij,ij->i", diff, diff)
    return d2 + d2.T  # [N, N] symmetric, zero diagonal


def adapter_distance(
    a1: Adapter, a2: Adapter, space: str = "effective", scaling: float = 1.0
) -> float:
    """Frobenius distance between two adapters over all their modules.

    ``effective``: ``sqrt(Σ ‖s B_1 A_1 − s B_2 A_2‖_F²)``; ``factors``: ``sqrt(Σ ‖A_1 − A_2‖_F² + ‖B_1 − B_2‖_F²)``.

    Args:
        a1: module name -> ``(A [r, d], B [m, r])``.
        a2: same modules and shapes as ``a1``.
        space: ``"effective"`` or ``"factors"`` (docs/pubswap.md, "Module notes").
        scaling: LoRA scaling ``s``; used in the effective space only.

    Returns:
        The distance, a non-negative float.
    """
    _check_space(space)
    scaling = _check_scaling(scaling)
    factors = _aligned([a1, a2], ["a1", "a2"])
    return float(np.sqrt(_pairwise_squared(factors, space, scaling)[0, 1]))


def pairwise_drift(
    adapters: Sequence[Adapter], space: str = "effective", scaling: float = 1.0
) -> np.ndarray:
    """``‖Δ‖`` for every pair (n, n') of client adapters.

    Args:
        adapters: N >= 1 adapters with the same modules and shapes.
        space, scaling: as :func:`adapter_distance`.

    Returns:
        float64 ``[N, N]``, symmetric, zero diagonal.
    """
    _check_space(space)
    scaling = _check_scaling(scaling)
    if isinstance(adapters, Mapping) or len(adapters) < 1:
        raise ValueError("adapters must be a non-empty list of adapters (dicts name -> (A, B))")
    factors = _aligned(adapters, [f"adapters[{i}]" for i in range(len(adapters))])
    return np.sqrt(_pairwise_squared(factors, space, scaling))  # [N, N]


def mean_pairwise_drift(
    adapters: Sequence[Adapter], space: str = "effective", scaling: float = 1.0
) -> float:
    """Mean distance over the ``N(N−1)/2`` unordered pairs of client adapters.

    Args:
        adapters: N >= 2 adapters with the same modules and shapes.
        space, scaling: as :func:`adapter_distance`.

    Returns:
        The mean pairwise distance.
    """
    if isinstance(adapters, Mapping) or len(adapters) < 2:
        raise ValueError("adapters must be a list of at least 2 adapters to have a pair")
    dist = pairwise_drift(adapters, space, scaling)  # [N, N]
    upper = np.triu_indices(len(adapters), k=1)
    return float(dist[upper].mean())


def distance_to_global(
    adapters: Sequence[Adapter],
    global_adapter: Adapter,
    space: str = "effective",
    scaling: float = 1.0,
) -> np.ndarray:
    """Each client's distance from a reference adapter, e.g. the round's broadcast ``(A_p, B_p)``.

    Args:
        adapters, global_adapter: N >= 1 client adapters; the reference, with the same modules and shapes.
        space, scaling: as :func:`adapter_distance`.

    Returns:
        float64 ``[N]``.
    """
    _check_space(space)
    scaling = _check_scaling(scaling)
    if isinstance(adapters, Mapping) or len(adapters) < 1:
        raise ValueError("adapters must be a non-empty list of adapters (dicts name -> (A, B))")
    names = ["global_adapter"] + [f"adapters[{i}]" for i in range(len(adapters))]
    factors = _aligned([global_adapter, *adapters], names)
    return np.sqrt(_pairwise_squared(factors, space, scaling)[0, 1:])  # [N]


def within_group_reward_stats(rewards, ddof: int = 0) -> dict[str, float]:
    """Reward spread inside each prompt's group of responses.

    Args:
        rewards: ``[B, G]``, B prompts (the paper's b) by G responses each (the paper's K);
            numpy array or torch tensor, all finite.
        ddof: delta degrees of freedom of the standard deviation; 0 is the population ``σ(x)``
            of eq. 1, 1 matches ``torch.std`` as TRL uses it.

    Returns:
        ``mean_std``: mean over prompts of the within-group standard deviation;
        ``frac_zero_variance``: fraction of prompts whose G rewards are all equal.
    """
    r = _to_numpy(rewards, "rewards")  # [B, G]
    if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1:
        raise ValueError(f"rewards must have shape [B, G] with B, G >= 1, got {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards must be finite (map TRL's None to a number before calling)")
    if ddof not in (0, 1) or r.shape[1] <= ddof:
        raise ValueError(f"ddof must be 0 or 1 and less than G = {r.shape[1]}, got {ddof!r}")
    std = r.std(axis=1, ddof=ddof)  # [B]
    zero = r.max(axis=1) == r.min(axis=1)  # [B]
    return {"mean_std": float(std.mean()), "frac_zero_variance": float(zero.mean())}


def _stack_grads(grads: Sequence) -> np.ndarray:
    if len(grads) < 1:
        raise ValueError("grads must be a non-empty list of flat gradient vectors")
    vecs = [_to_numpy(g, f"grads[{i}]") for i, g in enumerate(grads)]
    for i, v in enumerate(vecs):
        if v.ndim != 1 or v.shape != vecs[0].shape:
            raise ValueError(
                f"grads[{i}] must be a flat vector of length {vecs[0].shape} as grads[0], got {v.shape}"
            )
    g = np.stack(vecs)  # [N, P]
    if not np.all(np.isfinite(g)):
        raise ValueError("grads must be finite")
    return g


def pairwise_gradient_dissimilarity(grads: Sequence) -> np.ndarray:
    """The appendix's ``ζ_{n,n'} = ‖g_n − g_{n'}‖`` for every pair of clients.

    Args:
        grads: N flat gradient vectors ``[P]`` (numpy or torch), e.g. each client's
            ``g_n^priv(θ)`` estimated on a private minibatch at a common θ.

    Returns:
        float64 ``[N, N]``, symmetric, zero diagonal.
    """
    g = _stack_grads(grads)  # [N, P]
    zeta2 = np.zeros((g.shape[0], g.shape[0]))  # [N, N]; one row at a time keeps memory at [N, P]
    for n in range(g.shape[0]):
        diff = g - g[n]  # [N, P]
        zeta2[n] = np.einsum("ip,ip->i", diff, diff)
    return np.sqrt(zeta2)  # [N, N]


def gradient_dissimilarity(grads: Sequence) -> float:
    """Normalised client-gradient dissimilarity ``(1/N) Σ_n ‖g_n − ḡ‖² / ‖ḡ‖²`` (A.1's ζ in one number).

    Args:
        grads: N >= 1 flat gradient vectors ``[P]`` (numpy or torch).

    Returns:
        The dissimilarity, a non-negative float: 0 when every client pulls the same way.
    """
    g = _stack_grads(grads)  # [N, P]
    g_bar = g.mean(axis=0)  # [P]
    denom = float(g_bar @ g_bar)
    if denom == 0.0:
        raise ValueError("grads have a zero mean gradient; the normalised dissimilarity is undefined")
    spread = ((g - g_bar) ** 2).sum(axis=1).mean()  # (1/N) Σ_n ‖g_n − ḡ‖²
    return float(spread / denom)
