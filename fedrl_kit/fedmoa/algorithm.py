"""FedMOA's server side: one round (paper Fig. 2, §3.1) and the aggregation of §3.3 (eq. 11–13).

The server sees messages, its own state and splits, and what each client said of itself at round 0
(``server.properties[cid]``: ``family``, ``reward_names``, ``num_examples``) — never a client object.
Between rounds it holds each client's reward weights (``server.scratch["fedmoa"]``, checkpointed).
"""

from __future__ import annotations

import json

import numpy as np

from fedrl_kit.aggregate import fedavg, weighted_sum
from fedrl_kit.fedmoa.evaluation import evaluate_round
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, aggregate_shared_weights, cluster_by_reward_names


def held_weights(server) -> dict:
    """cid → {reward name: w_k} the server holds between rounds (the clusters' values of eq. 12)."""
    return server.scratch.setdefault("fedmoa", {"weights": {}})["weights"]


def initial_weights(names) -> list[float]:
    """Uniform weights over a client's reward components (on the simplex, eq. 1)."""
    return [1.0 / len(names)] * len(names)


def round_weights(server) -> dict[str, list[float]]:
    """cid → the weights w^(m) to send this round with θ^global, in the order of the client's reward names.

    ``fedmoa.round_start``: ``"broadcast"`` (eq. 12): the client's cluster's aggregate of last round (its own w_k for
    unshared components, renormalised; its initial weights before its first aggregation); ``"initial"``: its initial
    weights every round; ``"uniform"``: 1/K_m. With λ off the weights are never adapted: initial weights every round.
    """
    held = held_weights(server)
    mode = server.config.fedmoa.round_start
    if not server.config.fedmoa.lambda_on and mode == "broadcast":
        mode = "initial"
    out = {}
    for cid, props in server.properties.items():
        names = props["reward_names"]
        if mode == "uniform":
            out[cid] = initial_weights(names)
        elif mode == "broadcast" and cid in held:
            out[cid] = [held[cid][n] for n in names]
        else:
            out[cid] = list(props.get("initial_weights") or initial_weights(names))
    return out


def aggregate_round(replies: dict, alpha_on: bool, cluster_key: str, eps: float, temperature: float):
    """Eq. 11–13 on the successful replies.

    Args:
        replies: cid → reply payload (``adapter``, ``num_examples``, ``reward_names``, ``weights``).
        alpha_on: α of eq. 11; False = weights by data size inside a cluster (Table 2's α OFF).
        cluster_key: ``"accuracy"`` (by r_0's name) or ``"names"`` (identical reward tuples).
        eps, temperature: ε of eq. 11 and the softmax temperature.

    Returns:
        (θ^global, {cid: new weight dict}, {cid: α_m}, clusters as lists of cids).
    """
    clusters, cluster_alpha, new_weights = aggregate_weights(replies, alpha_on, cluster_key, eps, temperature)
    cluster_states, cluster_sizes, alphas = [], [], {}
    for ids, alpha in zip(clusters, cluster_alpha):
        cluster_states.append(weighted_sum([replies[c]["adapter"] for c in ids], alpha))  # θ^(c), eq. 12
        alphas.update({c: float(a) for c, a in zip(ids, alpha)})
        cluster_sizes.append(float(sum(replies[c]["num_examples"] for c in ids)))  # N_c
    theta = fedavg(cluster_states, cluster_sizes)  # θ^global, eq. 13
    return theta, new_weights, alphas, clusters


def aggregate_weights(replies: dict, alpha_on: bool, cluster_key: str, eps: float, temperature: float):
    """The reward-weight half of eq. 11–12: task clusters, α inside each, and each cluster's shared w^(c).

    Args:
        replies: cid → ``reward_names``, ``weights`` (w^(m), accuracy first) and ``num_examples``.
        alpha_on, cluster_key, eps, temperature: as :func:`aggregate_round`.

    Returns:
        (clusters as lists of cids, α of each cluster [|S_c|] in the same order, {cid: new weight dict}).
    """
    cids = list(replies)
    groups = cluster_by_reward_names([replies[c]["reward_names"] for c in cids], key=cluster_key)
    clusters = [[cids[i] for i in members] for members in groups]
    alphas, new_weights = [], {}
    for ids in clusters:
        if alpha_on:
            alpha = accuracy_aware_weights([replies[c]["weights"][0] for c in ids], eps, temperature)  # eq. 11
        else:  # α OFF: FedAvg by data size inside the cluster (with eq. 13: FedAvg by examples overall)
            sizes = np.array([replies[c]["num_examples"] for c in ids], dtype=np.float64)  # [|S_c|]
            alpha = sizes / sizes.sum()  # [|S_c|]
        client_weights = [dict(zip(replies[c]["reward_names"], replies[c]["weights"])) for c in ids]
        new_weights.update(zip(ids, aggregate_shared_weights(client_weights, alpha)))  # w^(c), eq. 12
        alphas.append(alpha)
    return clusters, alphas, new_weights


def run_round(server, round: int) -> dict:
    """One FedMOA round (FedAvg-GRPO or an ablation by the ``config.fedmoa`` switches)."""
    cfg, args = server.config, server.config.fedmoa
    # 1. θ^global and each client's reward weights: its cluster's w^(c) of last round (eq. 12), or a reset
    present = set(server.participants(round))  # eqs. 11–13 over the round's participants
    payloads = {cid: {"adapter": server.global_state, "weights": w} for cid, w in round_weights(server).items()
                if cid in present}
    # 2–3. τ local multi-objective GRPO steps with adaptive weights (eq. 1–4, 8–10); replies θ^(m), names, w^(m)
    replies = server.runtime.broadcast("fit", round, payloads, receivers=list(payloads))
    ok, failed = server.split_replies(replies)
    metrics = {cid: dict(r.payload["metrics"]) for cid, r in ok.items()}
    if not ok:
        return {"clients": metrics, "failed": failed}
    # 4. clusters by reward names; α (eq. 11); θ^(c), w^(c) (eq. 12); FedAvg across clusters (eq. 13)
    theta, weights, alphas, clusters = aggregate_round({cid: r.payload for cid, r in ok.items()}, args.alpha_on,
                                                       args.cluster_key, float(args.eps),
                                                       float(args.softmax_temperature))
    server.global_state = theta
    held_weights(server).update(weights)
    for k, members in enumerate(clusters):
        for cid in members:
            metrics[cid].update(alpha=alphas[cid], cluster=float(k))
    # 5. evaluation: the global model on every family; each local model on its own family (Table 1)
    if round % args.eval_every == 0 or round == cfg.rounds:
        local = args.eval_local is True or (args.eval_local == "last" and round == cfg.rounds)
        adapters = {cid: r.payload["adapter"] for cid, r in ok.items()} if local else {}
        metrics["server"], local_metrics = evaluate_round(server, theta, adapters)
        for cid, m in local_metrics.items():
            metrics[cid].update(m)
    return {"clients": metrics, "failed": failed}


def save_state(server, folder) -> None:
    """The per-client reward weights the server holds (what ``round_start="broadcast"`` sends next round)."""
    held_weights(server)
    (folder / "fedmoa.json").write_text(json.dumps(server.scratch["fedmoa"], sort_keys=True))


def load_state(server, folder) -> None:
    """Restore what :func:`save_state` wrote (a run without it starts from the clients' initial weights)."""
    path = folder / "fedmoa.json"
    if path.exists():
        server.scratch["fedmoa"] = json.loads(path.read_text())
