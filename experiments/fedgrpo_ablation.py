"""The ablations over the number of experts M (Appendix C) and of clients K (Fig. 3), one knob at a time.

Each point changes one knob of a base FedGRPO config and trains for the base's rounds. The server takes
the same number of questions per step at every point (``fedgrpo.questions_per_step``, by default b · K of
the base), so K changes only how D_s is spread over the clients and who can be an expert, not how much
the server trains. ``benchmarks/fedgrpo_ablation.py`` runs the paper-sized grid with seeds.
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.notebook import headline
from fedrl_kit.runs import Run


def ablation_configs(base, M_grid=(), K_grid=(), questions_per_step: int | None = None) -> dict:
    """One config per ablation point: ``("M", m)`` varies ``fedgrpo.num_experts``, ``("K", k)`` ``num_clients``.

    Args:
        base: a validated FedGRPO :class:`~fedrl_kit.config.RunConfig`.
        M_grid, K_grid: the values of M and of K to run.
        questions_per_step: Q, the server's questions per step at every point; default b · K of ``base``.

    Returns:
        ``{(knob, value): RunConfig}`` in grid order (M first).
    """
    if base.method != "fedgrpo":
        raise ValueError(f"base.method must be 'fedgrpo', got {base.method!r}")
    Q = base.prompts_per_step * base.num_clients if questions_per_step is None else questions_per_step
    out = {("M", int(m)): base.replace(fedgrpo={"num_experts": int(m), "questions_per_step": Q}) for m in M_grid}
    out.update({("K", int(k)): base.replace(num_clients=int(k), fedgrpo={"questions_per_step": Q}) for k in K_grid})
    return out


def run_ablation(configs: dict, policy=None) -> list[dict]:
    """Train every point of :func:`ablation_configs`; one row per point.

    Args:
        configs: ``{(knob, value): RunConfig}``.
        policy: a loaded :class:`~fedrl_kit.policy.engine.Policy` to share between the runs (each run
            starts from its seed's untrained global adapter), or None to load one per run.

    Returns:
        rows ``{"ablation", "value", "final pass@1", "hit rate (main)"}``: the last evaluation's pass@1 and
        the experts' hit rate on a main topic of theirs, averaged over the rounds (nan when a round has none).
    """
    rows = []
    for (knob, value), cfg in configs.items():
        records = Run(cfg, progress=False, policy=policy).run()
        server = [r for r in records if r["kind"] == "client" and r["client"] == "server"]
        rows.append({"ablation": knob, "value": value, "final pass@1": headline(records)["final pass@1"],
                     "hit rate (main)": float(np.mean([r.get("expert_hit_rate_major", np.nan) for r in server]))})
    return rows


__all__ = ["ablation_configs", "run_ablation"]
