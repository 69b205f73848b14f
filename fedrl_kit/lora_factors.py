"""What averaging LoRA factors separately misses, against averaging the clients' updates (the quickstart's factor
gap, round by round). Analysis only: a run never imports it."""

from __future__ import annotations

import numpy as np

from fedrl_kit.aggregate import State, _check


def factor_gap(states: list[State], weights) -> float:
    """How far averaging LoRA factors separately lands from averaging the clients' updates:
    ‖Σ_k w_k U_k D_k − Ū D̄‖ / ‖Σ_k w_k U_k D_k‖, with Ū = Σ_k w_k U_k and D̄ = Σ_k w_k D_k (``weights`` normalised to
    sum to 1), Frobenius norms taken over every adapted weight together. D is PEFT's ``lora_A`` (r × d_in), U its
    ``lora_B`` (d_out × r); the constant scale lora_alpha / r cancels. 0 when all clients hold the same factors;
    nan when the average product is 0 (e.g. every U still 0)."""
    _check(states)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(states),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be {len(states)} non-negative numbers with a positive sum, got {weights}")
    w = w / w.sum()
    downs = sorted(k for k in states[0] if "lora_A" in k)
    if not downs or any(k.replace("lora_A", "lora_B") not in states[0] for k in downs):
        raise ValueError("states must hold LoRA factor pairs (names with lora_A and the matching lora_B)")
    gap = total = 0.0
    for kd in downs:
        ku = kd.replace("lora_A", "lora_B")
        mean_product = sum(wk * (s[ku].astype(np.float64) @ s[kd].astype(np.float64)) for wk, s in zip(w, states))
        product_of_means = (sum(wk * s[ku].astype(np.float64) for wk, s in zip(w, states))
                            @ sum(wk * s[kd].astype(np.float64) for wk, s in zip(w, states)))
        gap += float(np.sum((mean_product - product_of_means) ** 2))
        total += float(np.sum(mean_product ** 2))
    return float(np.sqrt(gap / total)) if total > 0 else float("nan")


def factor_round(start: State, states: list[State], weights) -> dict[str, float]:
    """One round of factor averaging measured against where the clients started (``start``, the adapter the server
    sent): Frobenius norms over every adapted weight together, in units of U·D (the scale lora_alpha / r left out).

    Returns:
        ``gap``: ‖Σ_k w_k U_k D_k − Ū D̄‖, what averaging factors misses (:func:`factor_gap`'s numerator);
        ``adapter``: ‖Σ_k w_k U_k D_k‖, the whole adapter so far (its denominator);
        ``update``: ‖Σ_k w_k (U_k D_k − U_0 D_0)‖, the clients' mean update this round;
        ``agreement``: ``update`` / Σ_k w_k ‖U_k D_k − U_0 D_0‖: 1 when every client moved ΔW the same way, smaller
        as their updates point apart and cancel in the average (nan when no client moved).
    """
    _check([start, *states])
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(states),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be {len(states)} non-negative numbers with a positive sum, got {weights}")
    w = w / w.sum()
    downs = sorted(k for k in start if "lora_A" in k)
    if not downs or any(k.replace("lora_A", "lora_B") not in start for k in downs):
        raise ValueError("states must hold LoRA factor pairs (names with lora_A and the matching lora_B)")
    gap = adapter = update = 0.0
    own = np.zeros(len(states))  # Σ over weights of ‖U_k D_k − U_0 D_0‖², per client
    for kd in downs:
        ku = kd.replace("lora_A", "lora_B")
        base = start[ku].astype(np.float64) @ start[kd].astype(np.float64)
        products = [s[ku].astype(np.float64) @ s[kd].astype(np.float64) for s in states]
        mean_product = sum(wk * p for wk, p in zip(w, products))
        product_of_means = (sum(wk * s[ku].astype(np.float64) for wk, s in zip(w, states))
                            @ sum(wk * s[kd].astype(np.float64) for wk, s in zip(w, states)))
        gap += float(np.sum((mean_product - product_of_means) ** 2))
        adapter += float(np.sum(mean_product ** 2))
        update += float(np.sum((mean_product - base) ** 2))
        own += np.array([float(np.sum((p - base) ** 2)) for p in products])
    spread = float(w @ np.sqrt(own))
    return {"gap": float(np.sqrt(gap)), "adapter": float(np.sqrt(adapter)), "update": float(np.sqrt(update)),
            "agreement": float(np.sqrt(update)) / spread if spread > 0 else float("nan")}
