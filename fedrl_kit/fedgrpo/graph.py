"""The confidence graph: clients ↔ topics, weighted by the competence cells the server holds (lines 6–10)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from fedrl_kit.fedgrpo.algorithm import server_state
from fedrl_kit.fedgrpo.expert_selection import topic_competence

EXPERT = "#d62728"  # the chosen experts' outline and the question's topic
CLIENT, TOPIC = "#1f77b4", "#7f7f7f"
LEGEND_LEVELS = (0.25, 0.5, 1.0)  # edge-width legend entries, as fractions of the strongest edge


def _edge_style(w: float) -> dict:
    """Width and colour of an edge of relative strength ``w`` in [0, 1]."""
    return dict(width=0.5 + 8 * w, color=f"rgba(31,119,180,{0.1 + 0.9 * w:.2f})")


def confidence_graph(server, truth, questions, experts, active: int = 0) -> go.Figure:
    """Clients (left) ↔ topics (right); a slider step per question outlines its experts in red.

    Args:
        server, truth: a FedGRPO run's server (competence cache filled) and ``run.truth`` (the questions' topics).
        questions: indices into D_s (``world.queries``), one slider step each.
        experts: ``[N_s, M]`` chosen experts of every question (``selection_quality``'s ``experts``).
        active: the slider step shown first (an index into ``questions``).

    Returns:
        the figure; edge width and opacity = the client's mean competence cell over the topic's auxiliary questions.
    """
    questions = [int(q) for q in questions]
    experts = np.asarray(experts)
    if not questions:
        raise ValueError("questions must hold at least one index into D_s")
    if experts.ndim != 2 or max(questions) >= len(experts) or min(questions) < 0:
        raise ValueError(f"experts must be [N_s, M] with a row for every question, got shape {experts.shape} "
                         f"for questions up to {max(questions)}")
    if not 0 <= active < len(questions):
        raise ValueError(f"active must be in [0, {len(questions) - 1}], got {active}")
    topics, comp = topic_competence(server_state(server).cache.as_matrix(), list(server.world.aux["topic"]))  # [K, T]
    K, T = comp.shape
    top = np.nanmax(comp) if np.isfinite(comp).any() and np.nanmax(comp) > 0 else 1.0
    cy, ty = np.linspace(1, 0, K), np.linspace(1, 0, T)
    fig = go.Figure()
    for k in range(K):
        for t in range(T):
            w = comp[k, t] / top if np.isfinite(comp[k, t]) else 0.0
            fig.add_trace(go.Scatter(x=[0, 1], y=[cy[k], ty[t]], mode="lines", hoverinfo="text", showlegend=False,
                                     text=f"client_{k} – {topics[t]}: mean competence {comp[k, t]:.3f}",
                                     line=_edge_style(w)))
    for level in LEGEND_LEVELS:  # legend only: what an edge's width means
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=_edge_style(level), legendgroup="edges",
                                 legendgrouptitle_text="edge width: mean competence r_k^p on the topic",
                                 name=f"{level * top:.2f}"))
    ds = truth.fact("queries").rows  # D_s with its topics (simulator truth)

    def styles(i):
        chosen, topic = {int(k) for k in experts[i]}, ds[i]["topic"]
        return ([EXPERT if k in chosen else CLIENT for k in range(K)], [4 if k in chosen else 0 for k in range(K)],
                [EXPERT if t == topic else TOPIC for t in topics],
                f"experts for {ds[i]['prompt']!r} (topic {topic}): "
                + ", ".join(f"client_{k}" for k in sorted(chosen)))  # named as the node labels

    c0, w0, t0, title0 = styles(questions[active])
    fig.add_trace(go.Scatter(x=[0] * K, y=cy, mode="markers+text", text=[f"client_{k}" for k in range(K)],
                             textposition="middle left", showlegend=False,
                             marker=dict(size=18, color=c0, line=dict(width=w0, color="black"))))
    fig.add_trace(go.Scatter(x=[1] * T, y=ty, mode="markers+text", text=topics, textposition="middle right",
                             showlegend=False, marker=dict(size=18, symbol="square", color=t0)))
    nodes = [len(fig.data) - 2, len(fig.data) - 1]
    for name, marker in (("client", dict(color=CLIENT)), ("chosen expert (Top-M, eq. 6)",
                                                          dict(color=EXPERT, line=dict(width=4, color="black"))),
                         ("topic", dict(color=TOPIC, symbol="square")),
                         ("the question's topic", dict(color=EXPERT, symbol="square"))):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, legendgroup="nodes",
                                 legendgrouptitle_text="nodes", marker=dict(size=14, **marker)))
    steps = []
    for i in questions:
        c, w, tc, title = styles(i)
        steps.append(dict(method="update", label=str(i),
                          args=[{"marker.color": [c, tc], "marker.line.width": [w, None]}, {"title.text": title}, nodes]))
    fig.update_layout(template="plotly_white", height=560, title=title0, legend=dict(x=1.02, y=1),
                      xaxis=dict(visible=False, range=[-0.45, 1.55]), yaxis=dict(visible=False),
                      sliders=[dict(active=active, steps=steps, currentvalue=dict(prefix="question of D_s: "))])
    return fig


__all__ = ["confidence_graph"]
