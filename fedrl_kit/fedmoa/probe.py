"""What-ifs of eq. 8–12 without retraining: gradients measured once, the weight updates replayed."""

from __future__ import annotations

import numpy as np

from fedrl_kit.fedmoa.algorithm import aggregate_weights
from fedrl_kit.fedmoa.client import objective_gradients, target_lambda
from fedrl_kit.fedmoa.weights import hypergradient_step


def probe_gradients(client, adapter: str, steps: int = 2, round: int = 1, hyper_grad: str | None = None,
                    layer: int | None = None) -> np.ndarray:
    """g_k^(t) (eq. 8) of one client on its first ``steps`` local batches of ``round``, all at ``adapter``.

    Args:
        client: a :class:`~fedrl_kit.fedmoa.client.MOAClient` (its own batches, seeds and reward components).
        adapter: the adapter to roll out and differentiate (e.g. ``"global"`` at the run's initial state).
        steps: consecutive local batches (>= 1).
        hyper_grad, layer: which g_k and at which decoder layer (``fedmoa.hyper_grad``); None: the client's own.

    Returns:
        [steps, K, d] float64, K = the client's reward components in its order (accuracy first).
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    layer = client.layer if layer is None else layer
    hyper_grad = client.args.hyper_grad if hyper_grad is None else hyper_grad
    grads = []
    for step in range(steps):
        rollouts, scores = client.rollout_scores(round, step, adapter)  # [N, K]
        grads.append(objective_gradients(client.policy.model, rollouts, scores, layer, client.grpo, hyper_grad))
    return np.stack(grads)  # [steps, K, d]


def replay_weights(grads, w0, lam: float | None = None, target: float = 0.05,
                   normalise: bool = False) -> tuple[np.ndarray, float]:
    """Eq. 9–10 over measured gradients, step by step, as a client's round does.

    Args:
        grads: [T, K, d], g_k^(t) of T consecutive local steps (:func:`probe_gradients`).
        w0: [K] the weights the round starts from, on the simplex.
        lam, target: λ of eq. 10; None = the scale rule ``target / mean_k |g_k|²`` of the first step.
        normalise: Δ_k as the cosine of consecutive gradients (``fedmoa.normalise``).

    Returns:
        (trajectory [T, K]: the weights after each step, the first keeping w0; the λ used).
    """
    g = np.asarray(grads, dtype=np.float64)
    if g.ndim != 3 or g.shape[0] < 1:
        raise ValueError(f"grads must have shape [T >= 1, K, d], got {g.shape}")
    if lam is None:
        lam = target_lambda(g[0], target)
    w, g_prev, out = np.asarray(w0, dtype=np.float64), None, []
    for g_now in g:
        w, _ = hypergradient_step(w, g_now, g_prev, lam, normalise)  # [K] eq. 9–10
        out.append(w)
        g_prev = g_now
    return np.stack(out), float(lam)


def replay_round(clients: dict, lam: float | None = None, target: float = 0.05, normalise: bool = False,
                 alpha_on: bool = True, cluster_key: str = "accuracy", eps: float = 1e-6,
                 temperature: float = 1.0) -> list[dict]:
    """One round of reward weights over a setting's clients: eq. 9–10 on each, then eq. 11–12 across them.

    Args:
        clients: cid → ``{"reward_names", "w0", "grads" [T, K, d], "num_examples"}``.
        lam, target, normalise: as :func:`replay_weights` (one λ for every client; None = each client's rule).
        alpha_on, cluster_key, eps, temperature: as the server's ``fedmoa`` settings (their defaults here are
            :class:`~fedrl_kit.fedmoa.args.FedMOAArgs`'s).

    Returns:
        One row per client: ``client``, ``reward_names``, ``trajectory`` ([T + 1, K]: w0, then after each
        step), ``lam``, ``cluster`` (index), ``alpha`` (eq. 11) and ``broadcast`` (its cluster's w^(c) in the
        client's order, eq. 12: what it would start the next round from).
    """
    rows, replies = {}, {}
    for cid, c in clients.items():
        traj, lam_used = replay_weights(c["grads"], c["w0"], lam, target, normalise)
        traj = np.vstack([np.asarray(c["w0"], dtype=np.float64)[None], traj])  # [T + 1, K]
        rows[cid] = dict(client=cid, reward_names=list(c["reward_names"]), trajectory=traj, lam=lam_used)
        replies[cid] = dict(reward_names=list(c["reward_names"]), weights=list(traj[-1]),
                            num_examples=c["num_examples"])
    clusters, alphas, new = aggregate_weights(replies, alpha_on, cluster_key, eps, temperature)
    for k, (ids, alpha) in enumerate(zip(clusters, alphas)):
        for cid, a in zip(ids, alpha):
            rows[cid].update(cluster=k, alpha=float(a), broadcast=[new[cid][n] for n in rows[cid]["reward_names"]])
    return list(rows.values())


def probe_clients(run, adapter: str = "global", steps: int = 3, family: str | None = None) -> dict:
    """:func:`replay_round`'s input for a built run's clients: each one's task family, reward names, initial
    weights, data size and g_k of its first ``steps`` local batches at ``adapter`` (clients of ``family`` only,
    when given)."""
    return {cid: dict(family=c.family, reward_names=list(c.names), w0=list(c.initial_weights),
                      num_examples=c.num_examples,
                      grads=probe_gradients(c, adapter, steps))
            for cid, c in run.clients.items() if family is None or c.family == family}


def lambda_scales(client, adapter: str, target: float = 0.05) -> dict[str, np.ndarray]:
    """How big eq. 9's Δ_k is, and how far one step of eq. 10 moves the weights, on two consecutive local batches.

    Returns:
        row label → [K] values in the client's reward order, starting from its initial weights.
    """
    w0 = np.asarray(client.initial_weights, dtype=np.float64)
    out = {}
    for kind in ("lora", "sequence", "shared"):
        g_prev, g_now = probe_gradients(client, adapter, 2, hyper_grad=kind)
        lam = target_lambda(g_prev, target)
        out[f"{kind}: Δ_k (eq. 9)"] = hypergradient_step(w0, g_now, g_prev, 0.0)[1]
        out[f"{kind}: w after λ=0.01"] = hypergradient_step(w0, g_now, g_prev, 0.01)[0]
        out[f"{kind}: w after target λ={lam:.3g}"] = hypergradient_step(w0, g_now, g_prev, lam)[0]
        out[f"{kind}: cosine Δ_k"] = hypergradient_step(w0, g_now, g_prev, 0.0, normalise=True)[1]
    return out


def replay_figure(rows: list[dict], x: str, y: str, title: str | None = None, aliases: dict | None = None):
    """:func:`replay_round` in the plane of two reward weights (w_x, w_y): one path per client in step order
    (arrows; its start w0 a circle), what eq. 12 sends it, w^(m←c), a cross, α (eq. 11) in the legend.
    """
    aliases = aliases or {}
    import plotly.express as px
    import plotly.graph_objects as go

    fig = go.Figure()
    colours = px.colors.qualitative.Plotly
    for i, r in enumerate(rows):
        names = r["reward_names"]

        def coord(w, name):
            name = name if name in names else aliases.get(name, name)
            return [float(v[names.index(name)]) if name in names else 0.0 for v in w]

        traj, colour = np.asarray(r["trajectory"]), colours[i % len(colours)]
        fig.add_trace(go.Scatter(x=coord(traj, x), y=coord(traj, y), mode="lines+markers", legendgroup=r["client"],
                                 name=f"{r['client']} ({', '.join(names)}): α = {r['alpha']:.2f}",
                                 line=dict(color=colour),
                                 hovertext=[f"{r['client']}, step {t}" for t in range(len(traj))],
                                 marker=dict(color=colour, size=9, symbol=["circle"] + ["arrow"] * (len(traj) - 1),
                                             angleref="previous")))
        fig.add_trace(go.Scatter(x=coord([r["broadcast"]], x), y=coord([r["broadcast"]], y), mode="markers",
                                 legendgroup=r["client"], showlegend=False, hovertext=[f"{r['client']}: sent w^(m←c)"],
                                 marker=dict(color=colour, size=12, symbol="x-thin", line=dict(color=colour, width=2))))
    fig.update_layout(template="plotly_white", title=title or f"reward weights w_{y} vs w_{x}",
                      xaxis_title=f"w_{x} (weight of {x}, 0–1)", yaxis_title=f"w_{y} (weight of {y}, 0–1)",
                      legend_title_text="client (its rewards): α of eq. 11; × = sent w^(m←c) (eq. 12)")
    return fig
