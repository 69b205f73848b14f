"""Drift instrumentation: how far apart the clients' adapters move at every local step of a round.
Details: docs/pubswap.md, "Module notes".
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from fedrl_kit.drift import distance_to_global, gradient_dissimilarity, mean_pairwise_drift, \
    pairwise_gradient_dissimilarity


def as_factors(state: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A peft adapter state (``…lora_A.weight``, ``…lora_B.weight`` keys) as module → (A, B)."""
    out = {}
    for key, a in state.items():
        if ".lora_A." in key:
            module = key.split(".lora_A.")[0]
            b_key = key.replace(".lora_A.", ".lora_B.")
            if b_key not in state:
                raise ValueError(f"adapter state has {key!r} but no matching {b_key!r}")
            out[module] = (a, state[b_key])
    if not out:
        raise ValueError("adapter state holds no LoRA factors (no '.lora_A.' keys)")
    return out


def _hashes(key: str, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Bucket in [0, k) and sign ±1 of each of n coordinates, fixed by ``key`` (the same for every client)."""
    rng = np.random.default_rng([zlib.crc32(key.encode()), n, k])
    return rng.integers(0, k, n), rng.integers(0, 2, n).astype(np.float64) * 2 - 1  # [n], [n]


def count_sketch(x, key: str, k: int) -> np.ndarray:
    """CountSketch of a flat vector: ``S x`` with ``E‖S x‖² = ‖x‖²``; linear in x, hashed by ``key``.  -> [k]"""
    x = np.asarray(x, dtype=np.float64).ravel()  # [n]
    bucket, sign = _hashes(key, x.size, k)
    return np.bincount(bucket, weights=sign * x, minlength=k)  # [k]


def tensor_sketch(a, b, key: str, k: int, scaling: float = 1.0) -> np.ndarray:
    """TensorSketch (Pham & Pagh 2013) of ``vec(s · B A)`` from the factors, without forming the m×d product.

    Args:
        a: ``A [r, d]``; b: ``B [m, r]``; key: names the module (its hash functions); k: sketch size.

    Returns:
        ``[k]`` float64.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)  # [r, d], [m, r]
    r = a.shape[0]
    h_row, s_row = _hashes(key + "/rows", b.shape[0], k)
    h_col, s_col = _hashes(key + "/cols", a.shape[1], k)
    offsets = k * np.arange(r)[:, None]  # [r, 1]: one bucket row per rank-one term
    cs_b = np.bincount((h_row[None, :] + offsets).ravel(), weights=(s_row[None, :] * b.T).ravel(),
                       minlength=r * k).reshape(r, k)  # [r, k]
    cs_a = np.bincount((h_col[None, :] + offsets).ravel(), weights=(s_col[None, :] * a).ravel(),
                       minlength=r * k).reshape(r, k)  # [r, k]
    spectrum = (np.fft.rfft(cs_b, axis=1) * np.fft.rfft(cs_a, axis=1)).sum(axis=0)  # [k/2 + 1]
    return scaling * np.fft.irfft(spectrum, n=k)  # [k]


def effective_distance_sq(a, b, a0, b0, scaling: float = 1.0) -> float:
    """``‖s B A − s B0 A0‖_F²`` through r×r Gram matrices (exact; never forms an m×d matrix)."""
    a, b, a0, b0 = (np.asarray(x, np.float64) for x in (a, b, a0, b0))  # [r, d], [m, r], [r0, d], [m, r0]
    gram = lambda bx, ax, by, ay: float(np.sum((bx.T @ by) * (ax @ ay.T)))  # noqa: E731  tr((B_xᵀB_y)(A_y A_xᵀ))
    return scaling ** 2 * max(0.0, gram(b, a, b, a) - 2 * gram(b, a, b0, a0) + gram(b0, a0, b0, a0))


class DriftProbe:
    """Collects per-step measurements from the clients of one run (what it measures: docs/pubswap.md, "Module notes").

    Args:
        scaling: the LoRA scaling ``s = lora_alpha / r`` used for the effective ΔW.
        gradients: also measure each step's first-epoch gradient (for ζ and the dissimilarity).
        sketch_dim: entries of each sketch when the adapter is too large to keep (docs/pubswap.md, "Module notes").
        exact_max: adapters with at most this many factor entries are kept whole and measured exactly.
        tensors_dir: where to stream every client-step's full factors and gradient (None: nowhere).
    """

    def __init__(self, scaling: float, gradients: bool = True, sketch_dim: int = 8192, exact_max: int = 2 ** 18,
                 tensors_dir: str | Path | None = None):
        if not scaling > 0:
            raise ValueError(f"scaling must be > 0, got {scaling!r}")
        if not (isinstance(sketch_dim, int) and sketch_dim >= 16):
            raise ValueError(f"sketch_dim must be an integer >= 16, got {sketch_dim!r}")
        if not (isinstance(exact_max, int) and exact_max >= 0):
            raise ValueError(f"exact_max must be an integer >= 0, got {exact_max!r}")
        self.scaling, self.gradients = float(scaling), gradients
        self.sketch_dim, self.exact_max = sketch_dim, exact_max
        self.tensors_dir = None if tensors_dir is None else Path(tensors_dir)
        self.exact = True
        self._global = None
        self._round_dir: Path | None = None
        self._steps: dict[int, dict[str, dict]] = defaultdict(dict)  # step → cid → measurement
        self._pending: dict[str, np.ndarray] = {}

    def start_round(self, global_state: dict[str, np.ndarray], round: int = 0) -> None:
        """Remember the round's broadcast adapter and forget the previous round's measurements."""
        self._global = as_factors(global_state)
        self.exact = sum(a.size + b.size for a, b in self._global.values()) <= self.exact_max
        self._steps.clear()
        self._pending.clear()
        self._round_dir = None
        if self.tensors_dir is not None:
            self._round_dir = self.tensors_dir / f"round{int(round):04d}"
            self._round_dir.mkdir(parents=True, exist_ok=True)
            np.savez(self._round_dir / "global.npz", **global_state)

    def grad_catcher(self, cid: str):
        """A callback for ``grpo_step(on_first_grad=…)`` measuring ``cid``'s gradient; None if off."""
        if not self.gradients:
            return None

        def grads(params):  # one parameter at a time, as float32 numpy on the host  -> [numel] each
            for p in params:
                g = p.grad.detach() if p.grad is not None else torch.zeros(p.numel(), device=p.device)
                yield g.reshape(-1).to("cpu", torch.float32).numpy()

        def catch(params: list[torch.Tensor]) -> None:
            if self.exact or self._round_dir is not None:  # kept whole (exact) or until written (tensors_dir)
                self._pending[cid] = np.concatenate(list(grads(params)))  # [P]
            if not self.exact:
                self._pending[cid + "/sketch"] = sum(count_sketch(g, f"grad/{i}", self.sketch_dim)
                                                     for i, g in enumerate(grads(params)))  # [k]
        return catch

    def _measure(self, factors: dict, grad: np.ndarray | None, grad_sketch: np.ndarray | None) -> dict:
        """What a sketched client-step keeps: exact distances to the broadcast adapter and three sketches."""
        k, s = self.sketch_dim, self.scaling
        eff = np.zeros(k)
        fac = np.zeros(k)
        to_eff = to_fac = 0.0
        for module, (a, b) in factors.items():
            a0, b0 = self._global[module]
            to_eff += effective_distance_sq(a, b, a0, b0, s)
            to_fac += float(np.sum((np.asarray(a, np.float64) - a0) ** 2) + np.sum((np.asarray(b, np.float64) - b0) ** 2))
            eff += tensor_sketch(a, b, module, k, s)
            fac += count_sketch(a, module + "/A", k) + count_sketch(b, module + "/B", k)
        return {"to_global_effective": np.sqrt(to_eff), "to_global_factors": np.sqrt(to_fac),
                "effective": eff.astype(np.float32), "factors": fac.astype(np.float32),
                "grad": None if grad_sketch is None else grad_sketch.astype(np.float32)}

    def step_done(self, cid: str, step: int, kind: str, state: dict[str, np.ndarray], diag: dict,
                  replacement_per_prompt=None) -> None:
        """Record client ``cid``'s adapter after local step ``step`` ("private" or "public")."""
        if kind not in ("private", "public"):
            raise ValueError(f"kind must be 'private' or 'public', got {kind!r}")
        if self._global is None:
            raise RuntimeError("step_done() before start_round()")
        grad, grad_sketch = self._pending.pop(cid, None), self._pending.pop(cid + "/sketch", None)
        if self._round_dir is not None:
            np.savez(self._round_dir / f"step{int(step):04d}_{cid}.npz", **state,
                     **({} if grad is None else {"grad": grad}))
        factors = as_factors(state)
        snap = self._measure(factors, grad, grad_sketch) if not self.exact else {"factors": factors, "grad": grad}
        self._steps[int(step)][cid] = {
            "kind": kind, **snap,
            "reward_std": float(diag.get("reward_std", np.nan)), "frac_zero_std": float(diag.get("frac_zero_std", np.nan)),
            "replacement": None if replacement_per_prompt is None else np.asarray(replacement_per_prompt, float),
        }

    def held_bytes(self) -> int:
        """Bytes of the arrays the probe holds now (its snapshots or sketches; not the broadcast adapter)."""
        def size(x):
            if isinstance(x, np.ndarray):
                return x.nbytes
            if isinstance(x, dict):
                return sum(size(v) for v in x.values())
            if isinstance(x, (tuple, list)):
                return sum(size(v) for v in x)
            return 0
        return size(self._steps) + size(self._pending)

    def _pairwise(self, snaps: dict, cids: list[str]) -> dict:
        """The pairwise quantities of one step: exact from whole adapters, or estimated from sketches."""
        rec = {}
        if self.exact:
            facs = [snaps[c]["factors"] for c in cids]
            for space in ("effective", "factors"):
                rec[f"pairwise_{space}"] = mean_pairwise_drift(facs, space, self.scaling) if len(facs) > 1 else 0.0
                rec[f"to_global_{space}"] = float(distance_to_global(facs, self._global, space, self.scaling).mean())
        else:
            for space in ("effective", "factors"):
                vecs = np.stack([snaps[c][space].astype(np.float64) for c in cids])  # [N, k]
                d = np.sqrt(((vecs[:, None, :] - vecs[None, :, :]) ** 2).sum(-1))  # [N, N]
                rec[f"pairwise_{space}"] = float(d[np.triu_indices(len(cids), k=1)].mean()) if len(cids) > 1 else 0.0
                rec[f"to_global_{space}"] = float(np.mean([snaps[c][f"to_global_{space}"] for c in cids]))
        grads = [snaps[c]["grad"] for c in cids if snaps[c]["grad"] is not None]
        if len(grads) > 1 and np.linalg.norm(np.mean(grads, axis=0)) > 0:
            rec["grad_dissimilarity"] = gradient_dissimilarity(grads)
            z = pairwise_gradient_dissimilarity(grads)  # [N, N]
            rec["zeta"] = float(z[np.triu_indices(len(grads), k=1)].mean())
        return rec

    def end_round(self) -> list[dict]:
        """One record per local step of the round just finished (then the measurements are dropped)."""
        if self._global is None:
            raise RuntimeError("end_round() before start_round()")
        records = []
        for step in sorted(self._steps):
            snaps = self._steps[step]
            cids = sorted(snaps)
            kinds = {snaps[c]["kind"] for c in cids}
            rec = {"step": step, "step_kind": kinds.pop() if len(kinds) == 1 else "mixed", "clients": len(cids)}
            if not self.exact:  # pairwise quantities are sketch estimates (exact records read as they always did)
                rec["sketched"] = True
            rec.update(self._pairwise(snaps, cids))
            rec["reward_std"] = float(np.nanmean([snaps[c]["reward_std"] for c in cids]))
            rec["frac_zero_std"] = float(np.nanmean([snaps[c]["frac_zero_std"] for c in cids]))
            reps = [snaps[c]["replacement"] for c in cids if snaps[c]["replacement"] is not None]
            if reps:
                per_prompt = np.mean(np.stack(reps), axis=0)  # [b]
                rec["replacement_fraction"] = float(per_prompt.mean())
                rec["replacement_per_prompt"] = [round(float(x), 6) for x in per_prompt]
            records.append(rec)
        self._steps.clear()
        return records
