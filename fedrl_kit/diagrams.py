"""One federated round as a picture: the server, a few clients, and the messages between them in order."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path

FONT = "font-family:Helvetica,Arial,sans-serif"
CHAR_W = 6.6
"""the width of one character at font size 12 (Helvetica's mean), to size boxes around their text"""
LINE_H = 16


@dataclass(frozen=True)
class Message:
    """One kind of message of a round: ``down`` (server → clients) or ``up``, what it carries, and who gets it."""

    direction: str  # "down" | "up"
    carries: str
    who: str = "every client"

    def __post_init__(self):
        if self.direction not in ("down", "up"):
            raise ValueError(f"Message.direction must be 'down' or 'up', got {self.direction!r}")


@dataclass(frozen=True)
class Round:
    """A method's round: the server's lines, a client's lines, the messages in order, and which clients take part
    (``selected``: indices among the drawn clients that the round's targeted messages reach; None: all)."""

    title: str
    server: tuple[str, ...]
    client: tuple[str, ...]
    messages: tuple[Message, ...]
    selected: tuple[int, ...] | None = None
    last_client: str = "K"  # the symbol of the number of clients
    edges: bool = False  # draw each message on the edge it travels (down: the first client's, up: the last one's)


ROUNDS = {
    "fedavg_grpo": Round(
        "one FedAvg-GRPO round",
        server=("holds the global LoRA adapter (D, U)", "average D and U, each weighted by n_k (FedAvg)"),
        client=("τ local GRPO steps on its", "private prompts: G answers each,", "verifier rewards, advantages"),
        messages=(Message("down", "global adapter (D, U)"),
                  Message("up", "its adapter (D_k, U_k), n_k (its number of examples) and metrics"))),
    "fedgrpo": Round(
        "one FedGRPO server step (Algorithm 1); a round is τ of them",
        server=("1 sample G candidate answers ŷ for a question x_s",
                "2 find its L nearest auxiliary questions (eq. 5)",
                "4 keep the M most competent clients (eq. 6)",
                "6 advantages from the experts' scores (eqs. 8–9)",
                "7 one GRPO step on the server's own policy"),
        client=("a domain model θ_k trained", "on its private labelled data D_k", "(never sent)"),
        messages=(Message("down", "3 the L auxiliary questions (once: the answers are cached)"),
                  Message("up", "3 competence: P(θ_k answers each one right)"),
                  Message("down", "5 question x_s and its G candidate answers", "the M experts only"),
                  Message("up", "5 G scalar scores r_k^s (exact check AE, or model ME)", "the M experts only")),
        selected=(0, 2)),
    "pubswap": Round(
        "one PubSwap round (N clients, τ local steps)",
        server=("holds the global LoRA adapter (A, B)",
                "public step: swap answers between clients (Balanced or Random)",
                "end of round: average A and B separately (FedIT)"),
        client=("τ local GRPO steps; every τ_swap-th", "step is public: the same b public",
                "prompts for every client"),
        messages=(Message("down", "global adapter (A, B)"),
                  Message("down", "each public step, trip 1: the b public prompts + gold answers"),
                  Message("up", "trip 1: K answers per public prompt, each scored 0/1 by the client"),
                  Message("down", "trip 2: its group of K answers per prompt after the swap"),
                  Message("up", "trip 2: \"GRPO step taken\" + the swapped fraction, for the log only"),
                  Message("up", "end of round: its adapter (A_n, B_n)")),
        last_client="N", edges=True),
    "fedmoa": Round(
        "one FedMOA round",
        server=("cluster S_c: the clients whose accuracy reward has the same name",
                "α_m: client m's share in its cluster, larger when its w_acc^(m) is lower",
                "adapters: α-averaged in each cluster (θ^(c)), then averaged across clusters by data size (θ)",
                "reward weights: those all of a cluster's clients hold are α-averaged; each client",
                "gets them back beside its own other weights (one vector per client)"),
        client=("keeps its OWN weights w^(m), one per reward;", "τ local GRPO steps on r_w = Σ_k w_k r_k;",
                "from step 2, each step first shifts w^(m)", "toward the rewards still being learnt"),
        messages=(Message("down", "global θ (not θ^(c)), and client m's weights w^(m←c)"),
                  Message("up", "its adapter θ^(m), reward names, its weights w^(m), data size N_m")),
        last_client="M"),
}
"""each method's round, in the papers' words (the notebooks' diagrams)"""


class Diagram:
    """An SVG picture that notebooks display (``_repr_svg_``) and :meth:`save` writes to a file."""

    def __init__(self, svg: str):
        self.svg = svg

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:  # the plain-text view a notebook stores: the title, no memory address
        import html
        import re

        title = re.search(r"<text[^>]*>([^<]*)</text>", self.svg)
        return f"<Diagram: {html.unescape(title.group(1)) if title else 'SVG'}>"

    def save(self, folder: str | Path, name: str) -> Path:
        path = Path(folder) / f"{name}.svg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.svg, encoding="utf-8")
        return path


def _box(x: float, y: float, lines: tuple[str, ...], fill: str, stroke: str, bold_first: str = "",
         width: float | None = None) -> tuple[list[str], float, float]:
    """A rounded box with a heading and lines of text at (x, y); returns (svg parts, width, height)."""
    texts = ((bold_first,) if bold_first else ()) + tuple(lines)
    w = width or max(len(t) for t in texts) * CHAR_W + 24
    h = len(texts) * LINE_H + 14
    parts = [f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="8" fill="{fill}" '
             f'stroke="{stroke}" stroke-width="1.5"/>']
    for i, t in enumerate(texts):
        weight = ' font-weight="bold"' if bold_first and i == 0 else ""
        parts.append(f'<text x="{x + 12:.0f}" y="{y + 20 + i * LINE_H:.0f}" font-size="12"{weight}>'
                     f'{escape(t, quote=False)}</text>')
    return parts, w, h


def round_diagram(method: str | Round, clients: int = 3) -> Diagram:
    """One round of ``method`` (a key of :data:`ROUNDS`, or a :class:`Round`) with ``clients`` client boxes drawn
    (the last one named ``K``, standing for all the others): the server on top, the clients below, and between them
    the round's messages top to bottom in the order they are sent, down-arrows on the left, up-arrows on the right.
    Clients a round's targeted messages skip are drawn pale."""
    if isinstance(method, str):
        if method not in ROUNDS:
            raise ValueError(f"method must be one of {sorted(ROUNDS)} or a Round, got {method!r}")
        method = ROUNDS[method]
    if clients < 2:
        raise ValueError(f"clients must be >= 2 (the last box stands for all the others), got {clients}")
    r = method
    width = 980
    parts: list[str] = []
    _, sw, sh = _box(0, 0, r.server, "#e8f0fe", "#1a73e8", "server")
    parts += _box((width - sw) / 2, 36, r.server, "#e8f0fe", "#1a73e8", "server")[0]
    top = 36 + sh + 24
    sx0, sx1, sy = (width - sw) / 2, (width + sw) / 2, 36 + sh  # the server box's bottom edge
    cy = top + len(r.messages) * 30 + 16
    gap = 16
    cw = (width - gap * (clients - 1)) / clients
    centres = [j * (cw + gap) + cw / 2 for j in range(clients)]
    starts = ([sx0 + 40 + (sx1 - sx0 - 80) * j / (clients - 1) for j in range(clients)] if r.edges
              else [width / 2] * clients)  # where each client's edge leaves the server

    def on_edge(j, y):  # x of client j's edge at height y
        return starts[j] + (centres[j] - starts[j]) * (y - sy) / (cy - sy)
    lane = []
    for i, m in enumerate(r.messages):  # one row per message: arrow and label
        y = top + i * 30
        y0, y1 = (y, y + 22) if m.direction == "down" else (y + 22, y)
        colour = "#1a73e8" if m.direction == "down" else "#d93025"
        if r.edges:  # the arrow lies on its edge, the label beside it
            j = 0 if m.direction == "down" else clients - 1
            x0, x1, xm = on_edge(j, y0), on_edge(j, y1), on_edge(j, y + 11)
            anchor, tx = ("start", xm + 12) if m.direction == "down" else ("end", xm - 12)
        else:
            x0 = x1 = 40 if m.direction == "down" else width - 40
            anchor, tx = ("start", 60) if m.direction == "down" else ("end", width - 60)
        lane.append(f'<line x1="{x0:.0f}" y1="{y0}" x2="{x1:.0f}" y2="{y1}" stroke="{colour}" stroke-width="2.5" '
                    f'marker-end="url(#head-{m.direction})"/>')
        label = f"{'↓' if m.direction == 'down' else '↑'} {m.carries}" + (f"  [{m.who}]" if m.who != "every client"
                                                                        else "")
        w = len(label) * CHAR_W + 8
        lane.append(f'<rect x="{tx - 4 if anchor == "start" else tx - w + 4:.0f}" y="{y + 2}" width="{w:.0f}" '
                    f'height="19" fill="white" fill-opacity="0.9"/>')
        lane.append(f'<text x="{tx:.0f}" y="{y + 16}" font-size="12" text-anchor="{anchor}" fill="{colour}">'
                    f'{escape(label, quote=False)}</text>')
    for j in range(clients):
        name = f"client {j + 1}" if j < clients - 1 else f"… client {r.last_client}"
        pale = r.selected is not None and j not in r.selected
        fill, stroke = ("#f5f5f5", "#bdbdbd") if pale else ("#fef7e0", "#f9ab00")
        box, _, ch = _box(j * (cw + gap), cy, r.client, fill, stroke,
                          name + ("  (not an expert here)" if pale else ""), width=cw)
        parts += box
        parts.append(f'<line x1="{starts[j]:.0f}" y1="{sy}" x2="{centres[j]:.0f}" y2="{cy}" stroke="#9aa0a6" '
                     f'stroke-dasharray="{"2,4" if pale else "6,3"}" stroke-width="1"/>')
    parts += lane  # over the fan lines, so that no line crosses a label
    height = cy + ch + 8
    defs = ('<defs>' + "".join(
        f'<marker id="head-{d}" markerWidth="8" markerHeight="8" refX="4" refY="4" orient="auto">'
        f'<path d="M0,0 L8,4 L0,8 z" fill="{c}"/></marker>' for d, c in (("down", "#1a73e8"), ("up", "#d93025")))
        + '</defs>')
    title = f'<text x="{width / 2:.0f}" y="20" font-size="15" font-weight="bold" text-anchor="middle">' \
            f'{escape(r.title, quote=False)}</text>'
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
           f'viewBox="0 0 {width} {height:.0f}" style="{FONT}">{defs}{title}{"".join(parts)}</svg>')
    return Diagram(svg)


def step_timeline(tau: int, period: int, title: str = "") -> Diagram:
    """One PubSwap round as a time line, left to right: the server's broadcast, the ``tau`` local steps of every
    client (every ``period``-th one public: answers up, swapped group down, then a GRPO step on it; the others
    private GRPO steps), and the FedIT average at the end. The order the round diagram's messages are sent in, drawn
    along time."""
    if tau < 1 or period < 1:
        raise ValueError(f"tau and period must be >= 1, got tau={tau}, period={period}")
    box_w, gap, x0, y0 = 46, 6, 150, 46
    ends = 190  # room for the FedIT box
    width = max(x0 + tau * (box_w + gap) + ends, 720)
    parts = [f'<text x="{width / 2:.0f}" y="20" font-size="15" font-weight="bold" text-anchor="middle">'
             f'{escape(title or f"one round in time order (τ = {tau}, τ_swap = {period})", quote=False)}</text>',
             f'<rect x="4" y="{y0}" width="{x0 - 14}" height="44" rx="8" fill="#e8f0fe" stroke="#1a73e8"/>',
             f'<text x="12" y="{y0 + 18}" font-size="12">start: server sends</text>',
             f'<text x="12" y="{y0 + 34}" font-size="12">the global (A, B)</text>']
    for j in range(tau):
        public = (j + 1) % period == 0
        x = x0 + j * (box_w + gap)
        fill, stroke, kind = ("#fce8e6", "#d93025", "public") if public else ("#fef7e0", "#f9ab00", "private")
        ink = "#c5221f" if public else "#9a6200"  # the box's colour, dark enough to read
        parts.append(f'<rect x="{x}" y="{y0}" width="{box_w}" height="44" rx="6" fill="{fill}" stroke="{stroke}"/>')
        parts.append(f'<text x="{x + box_w / 2:.0f}" y="{y0 + 19}" font-size="13" font-weight="bold" '
                     f'text-anchor="middle">{j + 1}</text>')  # words, not a glyph: ★ is missing from some fonts
        parts.append(f'<text x="{x + box_w / 2:.0f}" y="{y0 + 35}" font-size="10" text-anchor="middle" '
                     f'fill="{ink}">{kind}</text>')
    xe = x0 + tau * (box_w + gap) + 4
    parts += [f'<rect x="{xe}" y="{y0}" width="{ends - 14}" height="44" rx="8" fill="#e8f0fe" stroke="#1a73e8"/>',
              f'<text x="{xe + 8}" y="{y0 + 18}" font-size="12">end: each client sends</text>',
              f'<text x="{xe + 8}" y="{y0 + 34}" font-size="12">(A_n, B_n); FedIT averages</text>',
              f'<text x="12" y="{y0 + 64}" font-size="12">between them, local steps j = 1 … τ, every client in step '
              f'with the others (time →):</text>',
              f'<text x="12" y="{y0 + 80}" font-size="12">private step j: a GRPO step on the client\'s own prompts'
              f'</text>',
              f'<text x="12" y="{y0 + 96}" font-size="12">public step j: two round trips: the b public '
              f'prompts down, K answers each up;</text>',
              f'<text x="12" y="{y0 + 112}" font-size="12">then the swapped groups down, one GRPO step on them, '
              f'then "step done" up (with the swapped fraction, for the log only)</text>']
    height = y0 + 124
    return Diagram(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                   f'viewBox="0 0 {width} {height}" style="{FONT}">{"".join(parts)}</svg>')


def named_round_diagram(method: str | Round, names: tuple[str, ...] | list[str]) -> Diagram:
    """:func:`round_diagram` with one client box per name of ``names`` (the last standing for all the others, drawn
    as "… name"), so that a diagram names clients as the notebook's tables do (e.g. client_0 … client_7)."""
    names = list(names)
    d = round_diagram(method, clients=len(names))
    last = (ROUNDS[method] if isinstance(method, str) else method).last_client
    svg = d.svg
    for j, name in enumerate(names[:-1]):
        svg = svg.replace(f'font-weight="bold">client {j + 1}<', f'font-weight="bold">{escape(name)}<', 1) \
                 .replace(f'font-weight="bold">client {j + 1}  (', f'font-weight="bold">{escape(name)}  (', 1)
    svg = svg.replace(f'font-weight="bold">… client {last}', f'font-weight="bold">… {escape(names[-1])}', 1)
    return Diagram(svg)


from dataclasses import replace  # noqa: E402  (here, beside its one use, so the imports above stay as they were)

#: FedGRPO's server step as this package trains it: step 6 is the candidate-level reward (8 × the experts' mean
#: score + the format reward, then GRPO's advantage), not eq. 9's per-expert R_k, which sums to zero
FEDGRPO_AS_TRAINED = replace(ROUNDS["fedgrpo"], server=(
    "1 sample G candidate answers ŷ for a question x_s",
    "2 find its L nearest auxiliary questions (eq. 5)",
    "4 keep the M most competent clients (eq. 6)",
    "6 reward 8·(experts' mean score) + format → advantages",
    "7 one GRPO step on the server's own policy"))
