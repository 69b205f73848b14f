"""Pareto fronts of reward components, as in FedMOA's Figure 3.

Figure 3 of the FedMOA paper plots checkpoints in the plane of two reward
components (format vs. accuracy, tag count vs. accuracy, tag count vs.
format) and draws the Pareto frontier through them. :func:`non_dominated`
finds the frontier's points and :func:`pareto_front_order` orders them so a
line plot of them reads left to right.

Dominance is strict: point j dominates point i when j is at least as good in
every objective and strictly better in at least one. Two identical points do
not dominate each other, so duplicates on the front are all kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_CHUNK = 512
"""candidate points compared at once; bounds memory at O(_CHUNK · n · d)"""


def non_dominated(points, maximise: bool | Sequence[bool] = True) -> np.ndarray:
    """Mask of the points that no other point dominates.

    Args:
        points: the objective values, shape ``[n, d]`` (n checkpoints, d reward
            components), finite.
        maximise: ``True`` if larger is better in every objective, ``False`` if
            smaller is, or one bool per objective, shape ``[d]``.

    Returns:
        Boolean mask, shape ``[n]``; ``True`` for points on the Pareto front.

    Raises:
        ValueError: if ``points`` is not a finite ``[n, d]`` array or ``maximise``
            has the wrong length.
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] == 0:
        raise ValueError(f"points must have shape [n, d] with d >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("points must be finite (no NaN or inf)")
    mx = np.asarray(maximise, dtype=bool)
    if mx.ndim == 0:
        mx = np.full(p.shape[1], bool(mx))
    if mx.shape != (p.shape[1],):
        raise ValueError(
            f"maximise must be a bool or have one entry per objective ({p.shape[1]}), got {maximise!r}"
        )
    q = np.where(mx, p, -p)  # [n, d], larger is better everywhere
    dominated = np.zeros(p.shape[0], dtype=bool)  # [n]
    for start in range(0, p.shape[0], _CHUNK):  # chunks bound the [chunk, n, d] comparison
        qi = q[start : start + _CHUNK]  # [c, d] candidates
        ge = np.all(q[None, :, :] >= qi[:, None, :], axis=2)  # [c, n] j >= i everywhere
        gt = np.any(q[None, :, :] > qi[:, None, :], axis=2)  # [c, n] j > i somewhere
        dominated[start : start + _CHUNK] = np.any(ge & gt, axis=1)
    return ~dominated


def pareto_front_order(points, mask) -> np.ndarray:
    """Indices of the front's points, sorted along the first objective.

    Ties in the first objective are broken by the remaining objectives, then
    by index, so the order is deterministic. Plot with
    ``points[order, 0], points[order, 1]``.

    Args:
        points: shape ``[n, d]``.
        mask: shape ``[n]``, e.g. from :func:`non_dominated`.

    Returns:
        Integer indices into ``points``, shape ``[mask.sum()]``, ascending in
        the first objective.

    Raises:
        ValueError: if the shapes of ``points`` and ``mask`` disagree.
    """
    p = np.asarray(points, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    if p.ndim != 2:
        raise ValueError(f"points must have shape [n, d], got {p.shape}")
    if m.shape != (p.shape[0],):
        raise ValueError(f"mask must have shape [{p.shape[0]}], got {m.shape}")
    idx = np.nonzero(m)[0]  # [n_front]
    keys = [idx] + [p[idx, k] for k in range(p.shape[1] - 1, -1, -1)]  # last key is primary
    return idx[np.lexsort(keys)]


AXIS_UNIT = "mean reward per completion, 0–1"
"""what a Fig. 3 axis measures: every reward component is in [0, 1] (accuracy and format 0 or 1, tag count in
steps of 0.25), averaged over the test problems' sampled completions"""


def pareto_figure(series: dict, x: str, y: str, title: str | None = None, unit: str = AXIS_UNIT):
    """FedMOA Fig. 3 for one objective pair: server trajectories as lines with arrows labelled by round, client
    checkpoints as grey dots (one marker shape per method), the non-dominated set of all points marked.

    Args:
        series: method name → ``{"server": [[x, y], ...] in round order, "clients": [[x, y], ...]}``
            (e.g. from :func:`experiments.fedmoa_analysis.pareto_points`); ``"rounds"`` may name the server
            points' rounds (default 0, 1, 2, …: the base first).
        x, y: the objectives' names (axis titles); larger is better in both.
        title: figure title.
        unit: what the axes measure (their titles read ``"accuracy (unit)"``).

    Returns:
        A plotly figure with one legend entry per trace (each named once).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    allpts = []
    shapes = ("circle", "diamond", "square", "triangle-up")
    for i, (name, s) in enumerate(series.items()):
        c = np.asarray(s["clients"], dtype=np.float64).reshape(-1, 2)  # [n_clients·rounds, 2]
        if len(c):
            fig.add_trace(go.Scatter(x=c[:, 0], y=c[:, 1], mode="markers", name=f"client checkpoints ({name})",
                                     marker=dict(color="lightgrey", size=7, symbol=shapes[i % len(shapes)],
                                                 line=dict(color="grey", width=0.5))))
        allpts.append(c)
    for i, (name, s) in enumerate(series.items()):
        p = np.asarray(s["server"], dtype=np.float64).reshape(-1, 2)  # [rounds, 2]
        rounds = list(s.get("rounds", range(len(p))))
        # each later method drawn thinner on top, so a path two methods share shows both colours
        width = max(2, 8 - 3 * i)
        fig.add_trace(go.Scatter(x=p[:, 0], y=p[:, 1], mode="lines+markers+text", name=f"{name}: server",
                                 text=[f"r{r}" for r in rounds], textposition="top center",
                                 hovertext=[f"{name}, round {r}" for r in rounds], line=dict(width=width),
                                 marker=dict(size=width + 8, symbol=["circle"] + ["arrow"] * (len(p) - 1),
                                             angleref="previous")))
        allpts.append(p)
    pts = np.concatenate(allpts) if allpts else np.zeros((0, 2))
    if len(pts):
        mask = non_dominated(pts)
        order = pareto_front_order(pts, mask)
        # the edge of the region the front dominates (both objectives maximised): from a point down to the next
        # point's height, then across to it ("vh"); "hv" would cut through points no front point dominates
        fig.add_trace(go.Scatter(x=pts[order, 0], y=pts[order, 1], mode="lines+markers", name="non-dominated",
                                 line=dict(color="black", dash="dot", shape="vh"),
                                 marker=dict(symbol="star", size=12, color="gold", line=dict(color="black", width=1))))
    same = identical_server_paths(series)
    if same:  # one line drawn exactly over another: say so, or a reader looks for a method that is not there
        fig.add_annotation(text="; ".join(" = ".join(g) for g in same) + ": the same server point in every round",
                           xref="paper", yref="paper", x=0, y=1.0, xanchor="left", yanchor="bottom", showarrow=False,
                           font=dict(size=12, color="dimgrey"))
    fig.update_layout(template="plotly_white", title=title or f"{y} vs {x}", xaxis_title=f"{x} ({unit})",
                      yaxis_title=f"{y} ({unit})", legend_title_text="round order: r0 = base → last round")
    return fig


def identical_server_paths(series: dict) -> list[list[str]]:
    """Groups of two or more methods whose server points are equal in every round (their lines coincide), in the
    series' order; empty when every method's path is its own."""
    groups: list[list[str]] = []
    for name, s in series.items():
        path = np.asarray(s["server"], dtype=np.float64).reshape(-1, 2)
        for g in groups:
            other = np.asarray(series[g[0]]["server"], dtype=np.float64).reshape(-1, 2)
            if other.shape == path.shape and np.array_equal(other, path):
                g.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]
