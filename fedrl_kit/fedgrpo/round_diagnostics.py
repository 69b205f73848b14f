"""FedGRPO's per-round diagnostics (``MethodSpec.diagnostics``): what only the simulator knows of a round.
Details: docs/fedgrpo.md, "Module notes"; the notebook's step-through is in :mod:`fedrl_kit.fedgrpo.diagnostics`.
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.fedgrpo.algorithm import StepTrace, finite, mean_over_steps
from fedrl_kit.fedgrpo.expert_selection import dual_evaluation_gate
from fedrl_kit.rewards import accuracy_reward

MAJOR_SHARE = 0.1
"""A topic a client is "expert in" for the stricter hit rate: at least 10 % of its private data."""


def _hit_rates(experts: np.ndarray, available: np.ndarray, topics: list[str], sets: list[set], suffix: str) -> dict:
    """Hit rate of the chosen experts and its exact expectation under a uniform choice among ``available``."""
    hits = [topics[q] in sets[int(k)] for q in range(len(experts)) for k in experts[q] if k >= 0]
    return {f"expert_hit_rate{suffix}": float(np.mean(hits)) if hits else float("nan"),
            f"random_hit_rate{suffix}": float(np.mean([np.mean([t in sets[k] for k in available]) for t in topics]))
            if available.size else float("nan")}


def _pathways(truth, trace: StepTrace) -> list[list[bool]]:
    """For each question, whether each expert that scored it used AE (λ_k = 1), as the client decided."""
    out = []
    for q, who in zip(trace.questions, trace.scorers):
        clients = [truth.client(trace.client_ids[k]) for k in who]
        out.append([dual_evaluation_gate(c.holds(q), c.args.mode) == "AE" for c in clients])
    return out


def _correct(trace: StepTrace, answers: list[str]) -> np.ndarray:
    """``[Q, C]`` 1.0 where a candidate's answer is the question's true answer (simulator truth)."""
    C = len(trace.candidates[0]) if trace.candidates else 0
    flat = accuracy_reward([q for q in trace.questions for _ in range(C)], [c for cs in trace.candidates for c in cs],
                           answer=[a for a in answers for _ in range(C)])
    return np.array([v or 0.0 for v in flat], dtype=np.float64).reshape(len(trace.questions), C)  # [Q, C]


def _quality(trace: StepTrace, correct: np.ndarray) -> dict:
    """``candidate_accuracy``, ``reward_gap`` (the experts' mean score on correct minus incorrect candidates) and
    ``no_right_share`` (the share of questions none of whose candidates is right)."""
    gaps = []
    for i, (r, idx) in enumerate(zip(trace.scores, trace.scored)):
        if not len(r):
            continue
        seen = np.unique(idx)  # the candidates some expert scored
        t = correct[i, seen] > 0.5
        if t.any() and (~t).any():
            gaps.append(float(trace.consensus[i, seen][t].mean() - trace.consensus[i, seen][~t].mean()))
    return dict(candidate_accuracy=float(correct.mean()) if correct.size else float("nan"),
                reward_gap=float(np.mean(gaps)) if gaps else float("nan"),
                no_right_share=float((correct.max(axis=1) < 0.5).mean()) if correct.size else float("nan"))


def diagnostics(truth, round: int, out: dict) -> dict[str, dict]:
    """Simulator-side metrics of one FedGRPO round (``MethodSpec.diagnostics``).

    Args:
        truth, round: ``run.truth``; the round just run.
        out: what ``run_round`` returned (``"trace"``, and ``"clients"``: the records so far).

    Returns:
        ``{"server": {expert_hit_rate, random_hit_rate, …_major, ae_share, candidate_accuracy, reward_gap},
        cid: {ae_share, malicious[, evaluator_sft_loss]}}``, undefined values left out.
    """
    traces = out.get("trace") or []
    if not traces:
        return {}
    pool = truth.fact("queries")
    ds_topics, ds_answers = list(pool.rows["topic"]), [str(a) for a in pool.rows["answer"]]
    cids = traces[0].client_ids
    sets = [truth.topics(c) for c in cids]  # topics with >= 1 example in D_k
    major = [truth.topics(c, MAJOR_SHARE) for c in cids]  # topics with >= 10 % of D_k
    steps, ae = [], {c: [] for c in cids}
    for t in traces:
        flags = _pathways(truth, t)
        for who, row in zip(t.scorers, flags):
            for k, a in zip(who, row):
                ae[cids[k]].append(float(a))
        flat = [a for row in flags for a in row]
        topics = [ds_topics[i] for i in t.q_idx]
        steps.append({**_hit_rates(t.experts, t.available, topics, sets, ""),
                      **_hit_rates(t.experts, t.available, topics, major, "_major"),
                      "ae_share": float(np.mean(flat)) if flat else float("nan"),
                      **_quality(t, _correct(t, [ds_answers[i] for i in t.q_idx]))})
    res = {"server": mean_over_steps(steps)}
    for cid in out["clients"]:
        if cid not in ae:
            continue  # the "server" record
        client = truth.client(cid)
        res[cid] = dict(ae_share=float(np.mean(ae[cid])) if ae[cid] else float("nan"),
                        malicious=float(client.malicious))
        if round == 1 and client.sft_metrics is not None:  # θ_k is trained on its first message (round 1)
            m = client.sft_metrics  # SFT: its loss; GRPO: its mean reward at the first and last steps
            res[cid].update({f"evaluator_{k}": m[k] for k in ("sft_loss", "grpo_reward_first", "grpo_reward_last")
                             if k in m})
    return finite(res)
