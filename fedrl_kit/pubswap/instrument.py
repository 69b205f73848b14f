"""Drift instrumentation: how far apart the clients' adapters move at every local step of a round.

PubSwap (``papers/pubswap.md``) argues about client drift step by step (appendix A.1–A.2): the
drift ``Δ_t = θ_n^(t) − θ_{n'}^(t)`` between two clients after local step t grows through the
private-gradient dissimilarity ``ζ_{n,n'}`` on private steps, and through ``L_pub`` and the
replacement fraction ``α_i(x)`` on Balanced public steps. With ``RunConfig.trace_drift`` on, a
:class:`DriftProbe` is attached to every client and, after each local step, keeps

- a snapshot of the client's LoRA factors (:mod:`fedrl_kit.pubswap.drift` measures them),
- the flattened gradient of the step's first epoch, i.e. at the point the step starts from
  (before clipping and the update; :func:`fedrl_kit.grpo.grpo_step`'s ``on_first_grad``),
- the step's within-group reward statistics and, on public steps, the replacement fraction of
  every public prompt.

At the end of the round :meth:`DriftProbe.end_round` turns them into one record per local step
(``kind = "drift"`` in ``metrics.jsonl``):

==========================  ====================================================================
``step``, ``step_kind``     local step t (0-based) and "private" / "public" (all clients' kinds)
``clients``                 how many clients reported the step
``pairwise_effective``      mean over client pairs of ``‖s B_n A_n − s B_n' A_n'‖_F`` (ΔW space)
``pairwise_factors``        mean over client pairs of ``‖(A_n, B_n) − (A_n', B_n')‖`` (the appendix's θ)
``to_global_effective``     mean over clients of the distance to the round's broadcast adapter (ΔW)
``to_global_factors``       the same in factor space
``grad_dissimilarity``      ``(1/N) Σ_n ‖g_n − ḡ‖² / ‖ḡ‖²`` of the clients' step gradients
``zeta``                    mean over pairs of ``ζ_{n,n'} = ‖g_n − g_n'‖``
``reward_std``              mean within-group reward std (over clients)
``frac_zero_std``           mean fraction of groups with no reward variance (zero advantage)
``replacement_fraction``    public steps: mean ``α_n(x)`` over clients and prompts
``replacement_per_prompt``  public steps: ``α(x)`` per public prompt, averaged over clients
==========================  ====================================================================

This is *simulation-side* measurement, not part of any protocol: the probe reads each client's
adapter from the shared in-process policy, so nothing passes through the runtime and the ledger's
byte counts are unchanged. Cost: K·τ adapter snapshots and gradients per round in host memory
(a few MB in the embedded world; for a 1.5 B model at r = 32 about 70 MB per client step, so trace
short rounds only). Gradients of different clients are taken at their own current parameters
θ_n^(t), as in the appendix's ``g_n(θ_n)``; at step 0 all clients start from the same θ.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from fedrl_kit.pubswap.drift import distance_to_global, gradient_dissimilarity, mean_pairwise_drift, \
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


class DriftProbe:
    """Collects per-step snapshots from the clients of one run; see the module docstring.

    Args:
        scaling: the LoRA scaling ``s = lora_alpha / r`` used for the effective ΔW.
        gradients: also keep each step's first-epoch gradient (for ζ and the dissimilarity).
    """

    def __init__(self, scaling: float, gradients: bool = True):
        if not scaling > 0:
            raise ValueError(f"scaling must be > 0, got {scaling!r}")
        self.scaling, self.gradients = float(scaling), gradients
        self._global = None
        self._steps: dict[int, dict[str, dict]] = defaultdict(dict)  # step → cid → snapshot
        self._pending: dict[str, np.ndarray] = {}

    def start_round(self, global_state: dict[str, np.ndarray]) -> None:
        """Remember the round's broadcast adapter and forget the previous round's snapshots."""
        self._global = as_factors(global_state)
        self._steps.clear()
        self._pending.clear()

    def grad_catcher(self, cid: str):
        """A callback for ``grpo_step(on_first_grad=…)`` storing ``cid``'s flattened gradient; None if off."""
        if not self.gradients:
            return None

        def catch(params: list[torch.Tensor]) -> None:
            flat = [p.grad.detach().reshape(-1) if p.grad is not None else torch.zeros(p.numel(), device=p.device)
                    for p in params]
            self._pending[cid] = torch.cat(flat).to("cpu", torch.float32).numpy()  # [P]
        return catch

    def step_done(self, cid: str, step: int, kind: str, state: dict[str, np.ndarray], diag: dict,
                  replacement_per_prompt=None) -> None:
        """Record client ``cid``'s adapter after local step ``step`` ("private" or "public")."""
        if kind not in ("private", "public"):
            raise ValueError(f"kind must be 'private' or 'public', got {kind!r}")
        self._steps[int(step)][cid] = {
            "kind": kind, "factors": as_factors(state), "grad": self._pending.pop(cid, None),
            "reward_std": float(diag.get("reward_std", np.nan)), "frac_zero_std": float(diag.get("frac_zero_std", np.nan)),
            "replacement": None if replacement_per_prompt is None else np.asarray(replacement_per_prompt, float),
        }

    def end_round(self) -> list[dict]:
        """One record per local step of the round just finished (then the snapshots are dropped)."""
        if self._global is None:
            raise RuntimeError("end_round() before start_round()")
        records = []
        for step in sorted(self._steps):
            snaps = self._steps[step]
            cids = sorted(snaps)
            facs = [snaps[c]["factors"] for c in cids]
            kinds = {snaps[c]["kind"] for c in cids}
            rec = {"step": step, "step_kind": kinds.pop() if len(kinds) == 1 else "mixed", "clients": len(cids)}
            for space, short in (("effective", "effective"), ("factors", "factors")):
                rec[f"pairwise_{short}"] = (mean_pairwise_drift(facs, space, self.scaling) if len(facs) > 1
                                            else 0.0)
                rec[f"to_global_{short}"] = float(distance_to_global(facs, self._global, space, self.scaling).mean())
            grads = [snaps[c]["grad"] for c in cids if snaps[c]["grad"] is not None]
            if len(grads) > 1 and np.linalg.norm(np.mean(grads, axis=0)) > 0:
                rec["grad_dissimilarity"] = gradient_dissimilarity(grads)
                z = pairwise_gradient_dissimilarity(grads)  # [N, N]
                rec["zeta"] = float(z[np.triu_indices(len(grads), k=1)].mean())
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
