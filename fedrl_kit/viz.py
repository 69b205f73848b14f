"""Plotly figures for runs and worlds, and their export as HTML and PNG into a folder the caller names."""

from __future__ import annotations

import atexit
import threading
import warnings
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

TEMPLATE = "plotly_white"


def curves(runs: dict[str, list[dict]], metric: str = "pass@1", title: str | None = None) -> go.Figure:
    """Global ``metric`` per round for each named run (records as returned by ``Run.run``)."""
    fig = go.Figure()
    for name, recs in runs.items():
        g = [r for r in recs if r["kind"] == "global"]
        fig.add_trace(go.Scatter(x=[r["round"] for r in g], y=[r[metric] for r in g], mode="lines+markers", name=name))
    fig.update_layout(template=TEMPLATE, title=title or f"global {metric} on the test split", xaxis_title="round",
                      yaxis_title=metric)
    return fig


def seed_band_curves(df, y: str = "pass_at_1", group: str = "method", x: str = "round", title: str | None = None,
                     names: dict | None = None) -> go.Figure:
    """Mean over seeds of ``y`` against ``x``, one line per ``group``, with a band of ± one std over seeds.

    Args:
        df: a long frame with columns ``group``, ``"seed"``, ``x``, ``y`` (e.g.
            :func:`experiments.fedgrpo_claims.curve_frame`).
        names: display names by group value (default: the values).
    """
    missing = [c for c in (group, "seed", x, y) if c not in df.columns]
    if missing:
        raise ValueError(f"seed_band_curves: the frame lacks columns {missing}")
    fig = go.Figure()
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"]
    for i, (key, g) in enumerate(df.groupby(group, sort=False)):
        stats = g.groupby(x)[y].agg(["mean", "std", "count"]).reset_index().fillna({"std": 0.0})
        colour, name = palette[i % len(palette)], (names or {}).get(key, str(key))
        r, gr, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
        xs = stats[x].tolist()
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=(stats["mean"] + stats["std"]).tolist()
                                 + (stats["mean"] - stats["std"]).tolist()[::-1], fill="toself",
                                 fillcolor=f"rgba({r},{gr},{b},0.15)", line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=xs, y=stats["mean"], mode="lines+markers", name=name, legendgroup=name,
                                 line=dict(color=colour), customdata=stats["count"],
                                 hovertemplate=f"{name}<br>{x} %{{x}}: %{{y:.3f}} (%{{customdata}} seeds)<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=title or f"{y}: mean over seeds ± one std", xaxis_title=x,
                      yaxis_title=y)
    return fig


def client_curves(records: list[dict], metrics=("accuracy", "reward_mean"), exclude=("server",)) -> go.Figure:
    """Per-client local-training metrics per round (one panel per metric), global pass@1 dashed on the first."""
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[f"per-client {m}" for m in metrics])
    clients = sorted({r["client"] for r in records if r["kind"] == "client" and r["client"] not in exclude})
    palette = ["#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880"]
    for j, m in enumerate(metrics, 1):
        for i, c in enumerate(clients):
            rs = [r for r in records if r["kind"] == "client" and r["client"] == c]
            fig.add_trace(go.Scatter(x=[r["round"] for r in rs], y=[r[m] for r in rs], mode="lines+markers", name=c,
                                     legendgroup=c, showlegend=j == 1, line=dict(color=palette[i % len(palette)])),
                          row=1, col=j)
    g = [r for r in records if r["kind"] == "global"]
    fig.add_trace(go.Scatter(x=[r["round"] for r in g], y=[r["pass@1"] for r in g], name="global pass@1 (test)",
                             line=dict(dash="dash", color="black")), row=1, col=1)
    fig.update_layout(template=TEMPLATE, xaxis_title="round")
    return fig


def heterogeneity_bubbles(topic_names: list[str], counts: np.ndarray, title: str = "topics per client") -> go.Figure:
    """Client data heterogeneity as a bubble plot (as in the PubSwap appendix): bubble area ∝ examples; clients
    named ``client_k`` as runs name them.

    Args:
        topic_names: the n topics (y axis).
        counts: [K, n] examples of each topic held by each client.
    """
    K, n = counts.shape
    xs, ys, sizes, text = [], [], [], []
    for k in range(K):
        for t in range(n):
            if counts[k, t] > 0:
                xs.append(f"client_{k}")
                ys.append(topic_names[t])
                sizes.append(float(counts[k, t]))
                text.append(f"client_{k}, {topic_names[t]}: {int(counts[k, t])}")
    scale = 2.0 * max(sizes) / 45**2 if sizes else 1
    fig = go.Figure(go.Scatter(x=xs, y=ys, mode="markers", text=text, hoverinfo="text",
                               marker=dict(size=sizes, sizemode="area", sizeref=scale, sizemin=2, color="#636efa")))
    fig.update_layout(template=TEMPLATE, title=title, xaxis_title="client", yaxis_title="topic",
                      yaxis=dict(categoryorder="array", categoryarray=list(topic_names)))
    return fig


def communication_bars(by_kind: dict[tuple[str, str], int], title: str = "bytes on the wire by message kind",
                       log: bool = True) -> go.Figure:
    """Bytes per (message kind, direction) from ``Ledger.bytes_by_kind()``."""
    labels = [f"{k} ({d})" for (k, d) in by_kind]
    fig = go.Figure(go.Bar(x=labels, y=list(by_kind.values()), text=[_human(v) for v in by_kind.values()],
                           textposition="outside"))
    fig.update_layout(template=TEMPLATE, title=title, yaxis_title="bytes", yaxis_type="log" if log else "linear")
    return fig


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


_PNG: dict = {}  # "error": why PNG export cannot work here (None when it can); set by the first check
PROBE_TIMEOUT_S = 90.0
"""how long the first PNG (browser start included) may take before PNG export is given up for the process"""
PNG_TIMEOUT_S = 60.0
"""how long any later PNG may take before PNG export is given up for the process"""
STOP_TIMEOUT_S = 10.0
"""how long stopping kaleido's browser may take when the process exits"""


def _bounded(fn, timeout_s: float, name: str) -> dict:
    """Run ``fn()`` in a daemon thread for at most ``timeout_s`` seconds."""
    outcome: dict = {}

    def attempt():
        try:
            outcome["value"] = fn()
        except Exception as e:  # noqa: BLE001 - reported to the caller, who keeps the HTML
            outcome["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"

    worker = threading.Thread(target=attempt, name=name, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return {} if worker.is_alive() else dict(outcome)


def _give_up(why: str) -> str:
    """No more PNGs in this process; kaleido's own exit hook must then not wait for a server thread that hangs."""
    _PNG["error"] = why
    try:
        from kaleido import _sync_server

        _sync_server.GlobalKaleidoServer()._initialized = False  # its close() at exit returns at once
    except Exception:  # noqa: BLE001 - an older or newer kaleido: nothing to neutralise
        pass
    return why


def _stop_server() -> None:
    """Stop kaleido's browser at exit, waiting at most :data:`STOP_TIMEOUT_S` seconds."""
    import kaleido

    if not _bounded(lambda: kaleido.stop_sync_server(silence_warnings=True), STOP_TIMEOUT_S, "png-stop"):
        _give_up("stopping kaleido's browser timed out")


def _find_browser() -> str | None:
    """The Chrome/Chromium that kaleido would drive, or None; "" when this choreographer cannot tell."""
    try:
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        return ""
    try:
        return Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 - an unknown choreographer: let kaleido itself decide
        return ""


def _probe() -> None:
    """Start kaleido's server (kaleido >= 1) and draw one tiny PNG; raises why it cannot."""
    import kaleido
    import plotly.io as pio

    if hasattr(kaleido, "start_sync_server"):  # kaleido >= 1: one browser for the whole process
        kaleido.start_sync_server(silence_warnings=True)
        atexit.register(_stop_server)  # runs before kaleido's own exit hook, which waits without a deadline
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pio.to_image(go.Figure(), format="png", width=20, height=20)


def png_unavailable() -> str | None:
    """Start the static exporter once per process; returns why PNG export cannot work, or None when it can."""
    if "error" in _PNG:
        return _PNG["error"]
    if _find_browser() is None:
        _PNG["error"] = ("no Chrome or Chromium found for kaleido (install one, e.g. `apt-get install chromium`, "
                         "or set BROWSER_PATH)")
        return _PNG["error"]
    outcome = _bounded(_probe, PROBE_TIMEOUT_S, "png-probe")
    if "value" in outcome:
        _PNG["error"] = None
        return None
    return _give_up(outcome.get("error", f"the static exporter (kaleido) gave no PNG within {PROBE_TIMEOUT_S:.0f} s"))


def _png(fig, **kw) -> tuple[bytes | None, str | None]:
    """``(PNG bytes, None)``, or ``(None, why not)``: the exporter unavailable, an error, or no PNG within
    :data:`PNG_TIMEOUT_S` seconds (then no later PNG is tried in this process)."""
    import plotly.io as pio

    if why := png_unavailable():
        return None, why

    def draw():
        with warnings.catch_warnings():  # kaleido's server ignores per-call browser options, and says so
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            return pio.to_image(fig, format="png", **kw)

    outcome = _bounded(draw, PNG_TIMEOUT_S, "png")
    if "value" in outcome:
        return outcome["value"], None
    return None, outcome.get("error") or _give_up(
        f"the static exporter (kaleido) gave no PNG within {PNG_TIMEOUT_S:.0f} s")


def png_bytes(fig, **kw) -> bytes | None:
    """``fig`` as PNG bytes (plotly's ``to_image``; ``kw``: its width, height, scale, validate), or None, with a warning
    saying why (:func:`_png`)."""
    data, why = _png(fig, **kw)
    if data is None:
        warnings.warn(f"no PNG ({why})")
    return data


def export(fig: go.Figure, name: str, folder: str | Path, png: bool = True) -> dict[str, Path]:
    """Write ``name.html`` (always) and ``name.png`` (if the static exporter runs) into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {"html": folder / f"{name}.html"}
    fig.write_html(out["html"], include_plotlyjs="directory")  # one local plotly.min.js: works offline
    if png and (why := png_unavailable()):
        warnings.warn(f"PNG export of {name} skipped ({why}); the HTML was written")
    elif png:
        data, why = _png(fig, width=900, height=fig.layout.height or 450, scale=1)
        if data is None:  # the HTML is the primary artefact; say why the PNG is missing
            warnings.warn(f"PNG export of {name} failed ({why}); the HTML was written")
        else:
            out["png"] = folder / f"{name}.png"
            out["png"].write_bytes(data)
    return out


def _bounded_png_renderer():
    """plotly's PNG renderer (the PNG a notebook stores beside the interactive figure), each PNG drawn through
    :func:`png_bytes`: an exporter that stalls costs that figure its PNG, never the notebook its kernel."""
    import base64

    from plotly.io._base_renderers import PngRenderer

    class BoundedPngRenderer(PngRenderer):
        def to_mimebundle(self, fig_dict):
            data = png_bytes(fig_dict, width=self.width, height=self.height, scale=self.scale, validate=False)
            return {} if data is None else {self.mime_type: base64.b64encode(data).decode("utf8")}

    return BoundedPngRenderer()


def setup_notebook(png: bool = True) -> None:
    """Render figures interactively in JupyterLab *and* as a static PNG stored in the notebook,
    so they show offline, on GitHub and in nbval-checked outputs alike (no CDN needed)."""
    import plotly.io as pio

    if png and (why := png_unavailable()):
        warnings.warn(f"figures stay interactive but get no stored PNG: {why}")
        png = False
    warnings.filterwarnings("ignore", message="The kopts argument is ignored")  # kaleido's server, every PNG
    pio.renderers["png"] = _bounded_png_renderer()
    pio.renderers.default = "plotly_mimetype+png" if png else "plotly_mimetype"
    pio.renderers["png"].width, pio.renderers["png"].height = 900, 420
