"""How far FedMOA's reward weights move per round under each hypergradient variant (a short run).

Eq. 9's Δ_k = g_k^(t)·g_k^(t−1) is unnormalised, so how much the weights move depends on the scale of g_k
and on λ. This script runs the quick Heter+Heter federation (6 clients, one seed) for a few rounds under:

- ``sequence, target``: the default — per-sequence g_k, unnormalised Δ, λ = lam_target / mean_k |g_k|² (0.05);
- ``sequence, λ=0.01``: per-sequence g_k, the paper's λ = 0.01 as written;
- ``shared, λ=0.01``: the first implementation's g_k (one shift for every token), λ = 0.01;
- ``cosine, λ=0.1``: cosine-normalised Δ with λ = 0.1 (the first experiments' choice);

and reports, per variant and round, the mean and max over clients of the L1 distance between the weights a
client started the round from and those it returned (``w_move``), the λ used, and the w_0 range.

``--alignment`` instead measures, on the base policy, |g_k|², Δ_k and the cosine of consecutive g_k for both g_k
(per sequence and shared) on three clients' first three local batches: what sets the scale of eq. 9.

``--lora`` compares the per-sequence g_k with the LoRA one (``hyper_grad="lora"``: ∂L_k/∂θ of the hooked layer's
LoRA factors, batch-order invariant and of a fixed shape): the ``--alignment`` measurement for sequence, shared
and lora, and the weight move per round of the federation under ``sequence, target 0.05`` and
``lora, target 0.05`` (the same scale rule, so the moves compare the signal, not λ).

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_weight_moves.py --rounds 2
    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_weight_moves.py --alignment
    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fedmoa_weight_moves.py --lora --rounds 2

write ``benchmarks/results/fedmoa_weight_moves.json``, ``benchmarks/results/fedmoa_gk_alignment.json`` and
``benchmarks/results/fedmoa_gk_alignment_lora.json``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

from experiments.fedmoa_analysis import weight_moves  # noqa: E402
from experiments.fedmoa_presets import setting_config  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402

VARIANTS = {
    "sequence, target 0.05": dict(hyper_grad="sequence", lam_rule="target", lam_target=0.05),
    "sequence, λ=0.01": dict(hyper_grad="sequence", lam_rule="fixed", lam=0.01),
    "shared, λ=0.01": dict(hyper_grad="shared", lam_rule="fixed", lam=0.01),
    "cosine, λ=0.1": dict(hyper_grad="sequence", normalise=True, lam=0.1),
}
LORA_VARIANTS = {
    "sequence, target 0.05": VARIANTS["sequence, target 0.05"],
    "lora, target 0.05": dict(hyper_grad="lora", lam_rule="target", lam_target=0.05),
}
"""``--lora``: the per-sequence and the LoRA g_k under the same scale rule"""
RESULTS = ROOT / "benchmarks" / "results"


def alignment(seed: int, kinds=("sequence", "shared")) -> tuple[list, dict]:
    """|g_k|², Δ_k = g^(t)·g^(t−1) and their cosine for each g_k in ``kinds`` on the base policy (three clients,
    steps 0–2; every kind on the same rollouts)."""
    from fedrl_kit.fedmoa.client import objective_gradients, resolve_layer
    from fedrl_kit.grpo import GRPOSettings

    cfg = setting_config("quick", "heter+heter", "FedMOA", seed).reference()  # the path its results were made on
    run = Run(cfg, progress=False).build()
    layer = resolve_layer(run.policy.model, None)
    rows = []
    for cid in ("client_0", "client_1", "client_2"):
        c = run.clients[cid]
        grads = {kind: [] for kind in kinds}
        for step in range(3):
            batch = c.sample_batch(1, step)
            ro = run.policy.rollout("global", batch["prompt"], cfg.num_generations, seed=100 + step)
            scores = np.nan_to_num(c.reward_scores(ro, batch))  # [N, K]
            for kind in grads:
                grads[kind].append(objective_gradients(run.policy.model, ro, scores, layer, GRPOSettings(), kind))
        for kind, g in grads.items():
            for t in (1, 2):
                now, prev = g[t], g[t - 1]
                sq = np.einsum("kd,kd->k", now, now)  # [K]
                delta = np.einsum("kd,kd->k", now, prev)  # [K] eq. 9
                norms = np.linalg.norm(now, axis=1) * np.linalg.norm(prev, axis=1)
                cos = np.divide(delta, norms, out=np.zeros_like(delta), where=norms > 0)
                rows.append(dict(client=cid, g_k=kind, step=t, rewards=list(c.names), g_sq=sq.tolist(),
                                 delta=delta.tolist(), cosine=cos.tolist()))
                print(rows[-1], flush=True)
    summary = {}
    for kind in kinds:
        rs = [r for r in rows if r["g_k"] == kind]
        summary[kind] = {"median_g_sq": float(np.median([v for r in rs for v in r["g_sq"] if v > 0])),
                         "median_abs_delta": float(np.median([abs(v) for r in rs for v in r["delta"] if v != 0])),
                         "median_abs_cosine": float(np.median([abs(v) for r in rs for v in r["cosine"] if v != 0]))}
    return rows, summary


def weight_move_rows(variants: dict, rounds: int, seed: int) -> tuple[list, dict]:
    """The quick Heter+Heter federation under each variant: per round, the mean and max over clients of
    ``w_move`` (L1), the median λ and the w_0 range; per variant, the mean ``w_move`` and the wall time."""
    rows, summary = [], {}
    for name, fedmoa in variants.items():
        cfg = setting_config("quick", "heter+heter", "FedMOA", seed, rounds=rounds,
                             fedmoa={**fedmoa, "eval_local": False, "validate": False},
                             eval_every=rounds).reference()  # the sampling path its stored results were made on
        t0 = time.time()
        moves = weight_moves(Run(cfg, progress=False).run())
        for r in sorted({m["round"] for m in moves}):
            ms = [m for m in moves if m["round"] == r]
            row = {"variant": name, "round": r, "mean_w_move": float(np.mean([m["w_move"] for m in ms])),
                   "max_w_move": float(np.max([m["w_move"] for m in ms])),
                   "lam_median": float(np.median([m["lam"] for m in ms])),
                   "w0_end_min": float(min(m["w0_end"] for m in ms)), "w0_end_max": float(max(m["w0_end"] for m in ms))}
            rows.append(row)
            print(row, flush=True)
        summary[name] = {"mean_w_move_per_round": float(np.mean([m["w_move"] for m in moves])),
                         "seconds": round(time.time() - t0, 1)}
    return rows, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--alignment", action="store_true", help="measure |g_k|², Δ_k and their cosine instead")
    ap.add_argument("--lora", action="store_true",
                    help="the alignment and the weight moves of the per-sequence and the LoRA g_k")
    args = ap.parse_args()
    settings = {"scale": "quick", "setting": "heter+heter", "seed": args.seed}
    if args.alignment:
        rows, summary = alignment(args.seed)
        save_result(RESULTS / "fedmoa_gk_alignment.json", "fedmoa_weight_moves", None,
                    {**settings, "policy": "the base (round 1, step 0–2)"}, rows, summary)
    elif args.lora:
        align, align_summary = alignment(args.seed, ("sequence", "shared", "lora"))
        moves, move_summary = weight_move_rows(LORA_VARIANTS, args.rounds, args.seed)
        save_result(RESULTS / "fedmoa_gk_alignment_lora.json", "fedmoa_weight_moves", None,
                    {**settings, "alignment_policy": "the base (round 1, step 0–2)", "rounds": args.rounds,
                     "variants": LORA_VARIANTS},
                    [{"measure": "alignment", **r} for r in align] + [{"measure": "weight_move", **r} for r in moves],
                    {"alignment": align_summary, "weight_move": move_summary})
    else:
        rows, summary = weight_move_rows(VARIANTS, args.rounds, args.seed)
        save_result(RESULTS / "fedmoa_weight_moves.json", "fedmoa_weight_moves", None,
                    {**settings, "rounds": args.rounds, "variants": VARIANTS}, rows, summary)


if __name__ == "__main__":
    main()
