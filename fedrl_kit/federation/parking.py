"""Idle clients hold nothing live: what parking a client between rounds needs (partial participation)."""

from __future__ import annotations

import numpy as np
import torch


def park_idle(clients: dict, participants) -> None:
    """Park (:meth:`GRPOClient.park`) every client of ``clients`` (cid → client) not in ``participants``."""
    taking_part = set(participants)
    for cid, client in clients.items():
        if cid not in taking_part and hasattr(client, "park"):
            client.park()


def as_numpy(obj):
    """A state dict with its tensors as numpy copies (off the model and its device)."""
    if torch.is_tensor(obj):
        return obj.detach().cpu().numpy().copy()
    if isinstance(obj, dict):
        return {k: as_numpy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_numpy(v) for v in obj]
    return obj


def as_torch(obj):
    """The inverse of :func:`as_numpy` (tensors pass through)."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(obj.copy())
    if isinstance(obj, dict):
        return {k: as_torch(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_torch(v) for v in obj]
    return obj
