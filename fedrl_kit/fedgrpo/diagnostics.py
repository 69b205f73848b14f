"""Looking inside FedGRPO: the notebook's step-through and the selection study (the per-round hook, what only the
simulator knows: :mod:`fedrl_kit.fedgrpo.round_diagnostics`).
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

import numpy as np

from fedrl_kit.fedgrpo.algorithm import ask_competence, ensure_embeddings, server_step, server_state
from fedrl_kit.fedgrpo.expert_selection import expert_hit_rate, nearest_exemplars, select_experts
from fedrl_kit.fedgrpo.group_reward import (SHARED_VARIANTS, candidate_advantages, default_scale_rewards,
                                            group_relative_rewards)
from fedrl_kit.fedgrpo.round_diagnostics import MAJOR_SHARE, _pathways, diagnostics  # noqa: F401 - also from here
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.rewards import accuracy_reward


# -- the notebook's step-through and the selection study -----------------------------------------------------------
def measure_all_competence(server, round: int = 0) -> list[dict]:
    """Fill the whole confidence graph: every client is asked about every unmeasured auxiliary item."""
    items = np.arange(len(server.world.aux))
    return ask_competence(server, round, items, list(server.runtime.client_ids))[1]


def trace_question(server, question: int, L: int | None = None, M: int | None = None, seed: int = 0,
                   truth=None) -> dict:
    """Algorithm 1 lines 3–20 for one question of D_s, with every intermediate value (no update).

    Args:
        server: a built ``fedgrpo`` run's server (``Run(cfg).build().server``).
        question: index into ``world.queries`` (D_s).
        L, M: neighbourhood size and experts (default: the run's settings).
        seed: seeds the candidates.
        truth: ``run.truth``, for what the server does not know (topic, answer, pathways, correctness); else None.

    Returns:
        dict: ``question``, ``topic``, ``answer``, ``neighbours`` (aux index, text, topic, cosine), ``competence``
        [K], ``experts`` (most competent first), ``candidates`` [C], ``scores`` [M, G] (rows in ``experts`` order;
        official: one block each, ``blocks``), ``pathways`` (AE/ME), ``format`` [C], ``correct`` [C], ``eq9`` [M, G],
        ``advantages`` {variant: [C]} (the run's own variant, and the other shared ones from the same scores) and
        ``trace`` (the StepTrace).
    """
    args = server.config.fedgrpo
    official = args.group_reward == "official"
    state = ensure_embeddings(server)
    if not official:
        measure_all_competence(server)
    server.policy.set_state(GLOBAL, server.global_state)
    tr = server_step(server, 0, 0, np.array([question]), seed, list(server.runtime.client_ids), L=L, M=M,
                     update=False)
    aux, C = server.world.aux, len(tr.candidates[0])
    row = truth.fact("queries").rows[question] if truth is not None else None
    answer = None if row is None else str(row["answer"])
    neigh = tr.neighbours[0]  # [L]
    sims = state.aux_emb[neigh] @ state.query_emb[question]  # [L]
    who, r = tr.scorers[0], tr.scores[0]  # [M'], [M', G] in reply order (the order training averages in)
    order = [int(np.flatnonzero(who == k)[0]) for k in tr.experts[0] if k in who]  # rank order for display
    adv = {args.group_reward: tr.advantages[0]} if len(who) else {}
    if len(who) and not official:
        scale = default_scale_rewards(args.group_reward, args.scale_rewards)
        for v in SHARED_VARIANTS:
            if v != args.group_reward:
                adv[v] = candidate_advantages(r, v, args.group_coef, tr.format[0], args.format_coef,
                                              how=args.robust if v == "paper" else "mean", trim=args.trim,
                                              scale_rewards=scale)
    experts = [int(who[j]) for j in order]
    correct = None
    if answer is not None:
        correct = np.array([v or 0.0 for v in accuracy_reward([tr.questions[0]] * C, tr.candidates[0],
                                                              answer=[answer] * C)])
    return dict(
        question=tr.questions[0], topic=None if row is None else row["topic"], answer=answer,
        neighbours=[dict(index=int(j), text=aux[int(j)]["prompt"], topic=aux[int(j)]["topic"], cosine=float(s))
                    for j, s in zip(neigh, sims)],
        competence=tr.competence[0], experts=experts, candidates=list(tr.candidates[0]), scores=r[order],
        blocks=tr.scored[0][order],
        pathways=None if truth is None else ["AE" if a else "ME" for a in np.array(_pathways(truth, tr)[0])[order]],
        format=tr.format[0], correct=correct,
        eq9=group_relative_rewards(r)[order] if len(who) and not official else np.zeros((0, r.shape[1])),
        advantages=adv, trace=tr,
    )


def selection_quality(server, truth, L: int | None = None, M: int | None = None) -> dict:
    """Expert selection (eqs. 5–6) for every question of D_s, scored against the clients' topics.

    Args:
        server: a built run's server with method ``fedgrpo``.
        truth: the run's :class:`~fedrl_kit.federation.truth.SimulatorTruth` (the clients' topics).
        L, M: neighbourhood size and experts (default: the run's settings).

    Returns:
        ``{"hit_rate", "random_hit_rate", "hit_rate_major", "random_hit_rate_major", "experts" [N_s, M]}``:
        the fraction of chosen experts holding the question's topic (≥ 1 example; "major": ≥ 10 %
        of the client's data) and its exact expectation under uniform random selection.
    """
    args = server.config.fedgrpo
    L = args.neighbours if L is None else L
    M = args.num_experts if M is None else M
    state = ensure_embeddings(server)
    measure_all_competence(server)
    neigh = nearest_exemplars(state.query_emb, state.aux_emb, L)  # [N_s, L]
    comp = np.stack([state.cache.competence(None, row) for row in neigh])  # [N_s, K]
    experts = select_experts(comp, M)  # [N_s, M]
    topics = list(truth.fact("queries").rows["topic"])
    cids = list(server.runtime.client_ids)
    out = {"experts": experts}
    for suffix, share in (("", 0.0), ("_major", MAJOR_SHARE)):
        sets = [truth.topics(c, share) for c in cids]
        out[f"hit_rate{suffix}"] = expert_hit_rate(experts, sets, topics)
        out[f"random_hit_rate{suffix}"] = float(np.mean([np.mean([t in s for s in sets]) for t in topics]))
    return out


def ownership_leak(scores, owns) -> dict:
    """How well "a score row all exactly 0 or 1 ⇒ its expert owns the question" names owners (docs/fedgrpo.md,
    "What the score values reveal"). ``scores``: one row per (question, expert) pair as the server got it; ``owns``:
    per pair, simulator truth. Returns counts, ``identified`` / ``false_positive_rate`` (owner / other pairs
    flagged), ``precision``, ``base_rate`` (owners' share) and ``advantage`` = identified − false_positive_rate."""
    owns = np.asarray(owns, dtype=bool)  # [P]
    if len(scores) != len(owns):
        raise ValueError(f"scores and owns must have one entry per pair, got {len(scores)} and {len(owns)}")
    flagged = np.array([bool(np.all((np.asarray(r) == 0.0) | (np.asarray(r) == 1.0))) for r in scores],
                       dtype=bool)  # [P]

    def rate(num: int, den: int) -> float:
        return num / den if den else float("nan")

    n_own, n_other = int(owns.sum()), int((~owns).sum())
    tp, fp = int((flagged & owns).sum()), int((flagged & ~owns).sum())
    identified, fpr = rate(tp, n_own), rate(fp, n_other)
    return {"pairs": len(owns), "owner_pairs": n_own, "owners_flagged": tp, "others_flagged": fp,
            "identified": identified, "false_positive_rate": fpr, "precision": rate(tp, tp + fp),
            "base_rate": rate(n_own, len(owns)), "advantage": identified - fpr}


def scored_pairs(traces, owner) -> tuple[list[np.ndarray], list[bool]]:
    """Each (question, expert) score row of ``traces`` and whether the expert owns the question (``owner``: [N_s]
    client index per D_s question, ``truth.fact("queries").owner``)."""
    rows, owns = [], []
    for t in traces:
        for q, who, r in zip(t.q_idx, t.scorers, t.scores):
            for k, row in zip(who, r):
                rows.append(np.asarray(row))
                owns.append(bool(owner[int(q)] == int(k)))
    return rows, owns


__all__ = ["diagnostics", "measure_all_competence", "trace_question", "selection_quality", "server_state",
           "MAJOR_SHARE", "ownership_leak", "scored_pairs"]


def hit_differences(server, truth, experts, min_share: float = MAJOR_SHARE) -> np.ndarray:
    """Per question of D_s: the fraction of its chosen experts holding its topic (≥ ``min_share`` of their data)
    minus that fraction's expectation under a uniform random choice; the mean over questions is
    ``hit_rate_major − random_hit_rate_major`` of :func:`selection_quality`, and a t-interval over these values says
    how well the questions of one run pin that gap down.

    Args:
        experts: ``[N_s, M]`` client indices per question (:func:`selection_quality`'s ``experts``).

    Returns:
        float64 ``[N_s]``.
    """
    experts = np.asarray(experts)
    topics = list(truth.fact("queries").rows["topic"])
    if experts.ndim != 2 or len(experts) != len(topics):
        raise ValueError(f"experts must be [N_s, M] with N_s = {len(topics)}, got shape {experts.shape}")
    sets = [truth.topics(c, min_share) for c in server.runtime.client_ids]
    holds = np.array([[t in s for s in sets] for t in topics], dtype=np.float64)  # [N_s, K]
    return np.take_along_axis(holds, experts, axis=1).mean(axis=1) - holds.mean(axis=1)  # [N_s]


def server_view(server, truth) -> "pd.DataFrame":
    """What the competence replies alone tell the server about its clients: per client, the topic of the auxiliary
    questions on which it beats the average client by most (its mean competence on the topic minus all clients' mean
    there: the confidence graph's most distinctive edge, which the server computes from scalars it received), beside
    its true largest topic and that topic's share of its data (simulator truth, which the server never sees)."""
    import pandas as pd

    from fedrl_kit.fedgrpo.expert_selection import topic_competence

    measure_all_competence(server)
    names, comp = topic_competence(server_state(server).cache.as_matrix(), list(server.world.aux["topic"]))  # [K, T]
    edge = comp - np.nanmean(comp, axis=0, keepdims=True)  # [K, T] above the average client on each topic
    rows = []
    for k, cid in enumerate(server.runtime.client_ids):
        counts = truth.topic_counts(cid)
        largest = max(counts, key=counts.get)
        best = int(np.nanargmax(edge[k]))
        rows.append({"client": cid, "server's guess: its topic": names[best], "edge over the average client":
                     edge[k, best], "true largest topic": largest,
                     "its share of the data": counts[largest] / sum(counts.values()),
                     "guessed right": names[best] == largest})
    return pd.DataFrame(rows).set_index("client").round(3)
