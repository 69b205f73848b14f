"""The tables, figures and exercise answers notebook 02 (PubSwap) shows, kept here so that each notebook cell stays a
few lines: the settings table, the live round (run through the package, its tensors kept), the swap step-through's
tables, the exercises' answers with their reasons, and the stored grid's rows and figure. The notebook
computes its key numbers in view (advantages, c_n(x), M_n, ΔW_n, δ_pair and u, the clients' gradient cosines, the
paired differences); nothing here changes a method."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import Markdown
from plotly.subplots import make_subplots

from experiments import findings as F

ARMS = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_noswap": "no-swap control", "pubswap_random": "PubSwap Random",
        "pubswap_balanced": "PubSwap Balanced"}
"""the four arms (methods compared), in the order every table lists them"""
ORDER = ["FedAvg-GRPO", "no-swap control", "PubSwap Balanced", "PubSwap Random"]
"""the stored figure's arms, left to right: FedAvg-GRPO, then the public steps alone, then with Balanced's swap"""
REPORT = "12_pubswap_report.ipynb"
PAPER_STEPS = 360
"""local steps per client in the paper's math runs (its §4: 360 GRPO steps)"""


# -- the setting ------------------------------------------------------------------------------------------------------
def config_maker(params: dict):
    """The setup cell's config builder from the notebook's parameters: the paper's setting (FedIT, AdamW with weight
    decay 0.01, equal-size clients), τ_swap = 2, and a smoke preset's small sizes (its clients, rounds and local
    steps stay the notebook's)."""
    from experiments.sweep import SETTINGS
    from fedrl_kit import notebook
    from fedrl_kit.config import preset

    def make_config(p):
        smoke = notebook.smoke_fields(params["preset_name"], notebook.SMOKE_SIZES["pubswap"],
                                      fixed=("num_clients", "rounds", "local_steps"))
        return preset(p, num_clients=params["num_clients"], seed=params["seed"],
                      dirichlet_alpha=params["dirichlet_alpha"], pubswap={"period": 2}, **SETTINGS["paper"], **smoke)
    return make_config

LIVE_TAU = {"quick": 6, "smoke": 4, "full": 120, "full-smoke": 4}
"""each preset's τ for the live round of §3–4 (full: the paper's largest)"""


def live_tau(preset_name: str, tau: int | None = None) -> int:
    """The live round's τ: ``tau`` if given, else the preset's (:data:`LIVE_TAU`)."""
    return int(tau or LIVE_TAU[preset_name])


SHORT = {"τ_swap (every τ_swap-th step public)": "τ_swap"}
"""a settings row's name in :func:`settings_sentences`, where it differs from its name in the table"""


def _settings(cfg, policy, tau_live: int, results) -> tuple[dict, dict, dict, str, str]:
    """The live round's, the stored runs' and the paper's settings (``{row: cell}`` each), the topic split and what is
    ours, not the paper's: what :func:`settings_table` and :func:`settings_sentences` both say."""
    from fedrl_kit.config import preset

    s = F.pubswap_setting(results)
    rows = stored_runs(results)
    stored = preset(rows.preset.iloc[0])
    seeds = rows[rows.tau == s["tau"]].groupby("arm").seed.nunique()
    more = " and ".join(a.replace("PubSwap ", "") for a in ORDER if a in seeds and seeds[a] > seeds.min())
    concentration = ", ".join(f"{a:g}" for a in sorted(rows.dirichlet_alpha.unique()))
    rounds = rows.groupby("tau").rounds.agg(lambda r: r.unique().item())  # [τ] rounds of every run at τ
    assert (rounds * rounds.index == s["steps"]).all(), "the stored runs do not share one budget of local steps"
    share = lambda taus, steps: (f"{', '.join(map(str, taus))} (τ is {100 * min(taus) / steps:.0f}–"
                                 f"{100 * max(taus) / steps:.0f} % of the {steps}-step budget: local steps per client, rounds × τ)")
    live = {"clients N": f"{cfg.num_clients}",
            "b prompts × K answers per step": f"{cfg.prompts_per_step} × {cfg.num_generations}",
            "public prompts": f"{cfg.n_public:,}",
            "τ_swap (every τ_swap-th step public)": f"{cfg.pubswap.period}",
            "τ: local steps per round": f"{tau_live}: all (one round, short enough to run live)",
            "local steps per client in all": f"{tau_live} (one round)",
            "seeds": f"{cfg.seed}"}
    mine = {"clients N": f"{s['clients']}", "b prompts × K answers per step": f"{s['b']} × {s['K']}",
            "public prompts": f"{stored.n_public:,}",
            "τ_swap (every τ_swap-th step public)": f"{s['period']}",
            "τ: local steps per round": share(list(rounds.index), s['steps']),
            "local steps per client in all": f"{s['steps']} at every τ: rounds = {s['steps']}/τ = "
                                             f"{', '.join(map(str, rounds))}",
            "seeds": f"{seeds.min()} per arm ({seeds.max()} for {more} at τ = {s['tau']})" if more else
                     f"{seeds.min()} per arm"}
    table1 = paper_table1_presets()
    one = lambda field: "/".join(f"{v:,}" for v in sorted({p[field] for p in table1.values()}))  # noqa: E731
    public = "/".join(f"{n:,} ({WORLDS.get(w, w)})" for n, w in sorted({(p["n_public"], p["world"])
                                                                      for p in table1.values()}))
    paper = {"clients N": one("num_clients"), "b prompts × K answers per step":
             f"{one('prompts_per_step')} × {one('num_generations')}", "public prompts": public,
             "τ_swap (every τ_swap-th step public)": "2", "τ: local steps per round":
             share(list(F.PUBSWAP_PAPER_TAUS), PAPER_STEPS), "local steps per client in all": f"{PAPER_STEPS}",
             "seeds": "—"}
    models = ", ".join(sorted({m for m, _ in F.PUBSWAP_PAPER_TABLE1}))
    split = (f"{cfg.dirichlet_alpha:g} (live, stored and the paper's)" if concentration == f"{cfg.dirichlet_alpha:g}" == "0.3" else
             f"{cfg.dirichlet_alpha:g} (stored: {concentration}; the paper: 0.3)")
    layers = policy.model.config.num_hidden_layers
    ours = (f"Ours, not the paper's: a {layers}-layer transformer, LoRA rank {cfg.lora_rank} (the paper: {models}); "
            f"ρ clipped to [{1 - cfg.epsilon:g}, {1 + cfg.epsilon_high:g}], μ = {cfg.num_iterations} updates per step, "
            f"learning rate η = {cfg.learning_rate:g}, " + (f"KL weight {cfg.beta:g}" if cfg.beta else "no KL term")
            + f" (the paper: KL weight {preset('full').beta:g}); pass@1 (stored runs): the global model's share of right "
            f"answers "
            f"on {stored.n_test} test problems × {stored.eval_samples} samples at temperature {stored.temperature:g}.")
    return live, mine, paper, f"topics split by Dirichlet concentration {split}.", ours


WORLDS = {"math": "MATH", "deepmath": "DeepMath"}
"""the paper's datasets by their preset's ``world``"""


def paper_table1_presets() -> dict[str, dict]:
    """The paper's runs behind its Table 1 (Qwen3-1.7B and Qwen2.5-Math-1.5B on MATH and DeepMath) as their
    ``pubswap/presets.py`` fields: where :func:`_settings` takes the paper's N, b, K and public-set size from."""
    from fedrl_kit.pubswap.presets import PAPER_PRESETS

    models = {m.split("/")[-1] for m, _ in F.PUBSWAP_PAPER_TABLE1}
    return {name: p for name, p in PAPER_PRESETS.items() if p["base"].split("/")[-1] in models}


def settings_table(cfg, policy, tau_live: int, results=F.RESULTS) -> tuple[pd.DataFrame, str]:
    """The settings the notebook's numbers depend on, once: a short table (clients, b and K, τ_swap, τ, the budget of
    local steps, seeds) for the live round of §3–4, the stored runs of §5 and the paper's runs ("same" where a stored
    cell equals the live one; "—" where the paper gives no number we use), and the rest in two lines: the topic split
    (which ends the notebook's "same in both" line), then what is ours, not the paper's (policy, GRPO's settings, how
    pass@1 is measured)."""
    live, mine, paper, split, ours = _settings(cfg, policy, tau_live, results)
    table = pd.DataFrame({"live round (§3–4)": live, "stored runs (§5)": mine, "the paper": paper})
    same = table["stored runs (§5)"] == table["live round (§3–4)"]
    table.loc[same, "stored runs (§5)"] = "same"
    table.index.name = "setting"
    return table, f"{split}\n{ours}"


def settings_sentences(cfg, policy, tau_live: int, results=F.RESULTS) -> str:
    """:func:`settings_table` as two printed sentences: what the live round, the stored runs and the paper each run
    (τ, the local-step budget, seeds) and share (N, b × K, τ_swap, the topic split); then what is ours, not the
    paper's."""
    live, stored, paper, split, ours = _settings(cfg, policy, tau_live, results)
    tau, seeds = "τ: local steps per round", "seeds"
    shared = "; ".join(f"{SHORT.get(row, row)} = {live[row]}" + ("" if paper[row] == live[row] else
                                                                 f" (the paper: {paper[row]})")
                       for row in live if stored[row] == live[row])
    return (f"Live round (§3–4): one round of τ = {tau_live} local steps, seed {live[seeds]}; stored runs (§5): "
            f"τ = {stored[tau]}, seeds {stored[seeds]}; the paper: τ = {paper[tau]}; "
            + (f"in both of ours and in the paper, unless said: {shared}; " if shared else "") + f"{split}\n{ours}")


def live_round(cfg, policy, method: str, tau: int, tensors: bool = True):
    """One round of ``method`` from the shared start ``policy``, τ local steps, in a temporary folder: the built run
    (``run.server`` holds the trained clients) with ``run.tensors`` (:func:`read_tensors`; ``{}`` unless ``tensors``),
    and the package's drift record after each local step, ``{j: record}`` (``drift.mean_pairwise_drift``,
    ``drift.distance_to_global``)."""
    import tempfile

    from fedrl_kit.runs import Run

    with tempfile.TemporaryDirectory() as folder:
        run = Run(cfg.replace(method=method, rounds=1, local_steps=tau, trace_drift=True, trace_tensors=tensors,
                              eval_samples=1), folder, progress=False, policy=policy)
        records = run.run()
        run.tensors = read_tensors(folder)
    return run, {r["step"]: r for r in records if r["kind"] == "drift"}


def replay_last_public(run, tau: int):
    """The live round's last public step, answered again by its trained clients (a round keeps no answer texts):
    the same public prompts and swap stream as that step (``generate_public``), fresh answers from the adapters the
    round ended with. Local steps count from 0 here: step j is public when j + 1 is a multiple of τ_swap."""
    from fedrl_kit.pubswap.method import is_public_step
    from fedrl_kit.pubswap.public_step import generate_public

    last = max(j for j in range(tau) if is_public_step(j, run.config.pubswap.period))
    return generate_public(run.server, round=1, step=last)


COLOURS = {"FedAvg-GRPO": "#5f6368", "no-swap control": "#f9ab00", "PubSwap Balanced": "#1a73e8",
           "PubSwap Random": "#d93025"}
"""one colour per arm in every figure"""


def live_drift_figure(drifts: dict, period: int) -> go.Figure:
    """Two panels over one live round's local steps j = 1 … τ, a line per arm: δ_pair after each step, and
    δ_pair / u with √2 (equal-length updates in unrelated directions) dotted; public steps (every ``period``-th) shaded.
    ``drifts``: ``{arm: {j: record}}``, each arm's per-step drift record as :func:`live_round` gives it (j from 0)."""
    from fedrl_kit.pubswap.method import is_public_step

    tau = max(len(d) for d in drifts.values())
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["δ_pair after step j (lower: clients closer)",
                                        "δ_pair / u (lower: directions more alike)"])
    for arm in sorted(drifts, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER)):  # as every table lists them
        d = drifts[arm]
        steps = sorted(d)
        for col, y in ((1, [d[j]["pairwise_effective"] for j in steps]),
                       (2, [d[j]["pairwise_effective"] / d[j]["to_global_effective"] for j in steps])):
            fig.add_trace(go.Scatter(x=[j + 1 for j in steps], y=y, mode="lines+markers", name=arm, legendgroup=arm,
                                     showlegend=col == 1, line=dict(color=COLOURS.get(arm, "black"), width=2)),
                          row=1, col=col)
    for j in range(tau):
        if is_public_step(j, period):
            for col in (1, 2):
                fig.add_vrect(x0=j + 0.5, x1=j + 1.5, fillcolor="#fce8e6", opacity=0.6, line_width=0, layer="below",
                              row=1, col=col)
    fig.add_hline(y=float(np.sqrt(2)), line=dict(color="#444", dash="dot"), row=1, col=2,
                  annotation_text="√2: unrelated", annotation_position="top right")
    fig.update_layout(template="plotly_white", height=420, width=900, margin=dict(t=90, l=60, b=60),
                      legend=dict(orientation="h", y=-0.25, x=0.5, xanchor="center"),
                      title=dict(text=f"the live round, step by step (τ = {tau}; shaded: public steps)", x=0.02,
                                 y=0.97))
    fig.update_xaxes(title_text="local step j", tickvals=list(range(1, tau + 1)), range=[0.5, tau + 0.5])
    fig.update_yaxes(title_text="δ_pair", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="δ_pair / u (axis from 1)", range=[1.0, 1.5], row=1, col=2)
    return fig


def read_tensors(folder) -> dict:
    """What ``trace_tensors`` wrote for one round (``drift_probe.DriftProbe``): ``{"global": the broadcast adapter,
    j: {client: its LoRA factors and first-epoch gradient "grad" after local step j (0-based)}}``, as numpy arrays."""
    import re
    from pathlib import Path

    out: dict = {}
    for path in sorted(Path(folder).glob("drift_tensors/round*/*.npz")):
        with np.load(path) as z:
            arrays = {k: z[k].astype(np.float64) for k in z.files}  # float64: sums as exact as the probe's
        m = re.fullmatch(r"step(\d+)_(.+)", path.stem)
        if m:
            out.setdefault(int(m.group(1)), {})[m.group(2)] = arrays
        else:
            out["global"] = arrays
    return out


def heterogeneity_figure(partitions, concentration: float) -> go.Figure:
    """Topics per client as bubbles (area ∝ examples), with a key column of three reference bubbles, labelled."""
    from fedrl_kit import viz
    from fedrl_kit.world.partition import topic_matrix

    names, counts = topic_matrix(partitions)
    fig = viz.heterogeneity_bubbles(names, counts, title=f"topics per client (Dirichlet concentration "
                                                         f"{concentration:g}; bubble area ∝ examples)")
    top = int(counts.max())
    sizes = sorted({max(1, int(round(top / 10, -1))), max(1, int(round(top / 2, -1))), top})
    fig.add_trace(go.Scatter(x=["key: examples"] * len(sizes), y=list(names[:len(sizes)]), mode="markers+text",
                             text=[f"   {s}" for s in sizes], textposition="middle right", hoverinfo="skip",
                             marker=dict(size=sizes, sizemode="area", sizeref=fig.data[0].marker.sizeref,
                                         color="#b0b0b0"), showlegend=False))
    fig.update_layout(showlegend=False)
    fig.update_xaxes(range=[-0.5, counts.shape[0] + 0.9])  # room for the key's labels
    return fig


# -- §3: one swap, step by step ---------------------------------------------------------------------------------------
def example_prompt(correct: pd.DataFrame, K: int) -> int:
    """A prompt where client 0 has fewer than K/2 right and others have some: Balanced has work to do there."""
    c0, others = correct.iloc[:, 0].to_numpy(), correct.iloc[:, 1:].sum(axis=1).to_numpy()
    wanted = (c0 < K // 2) & (others > 0)
    return int(np.argmax(wanted * (K - c0))) if wanted.any() else 0


def random_view(view: pd.DataFrame, cid: str) -> pd.DataFrame:
    """Random's group as ``group_table`` gives it, without the client's own answer beside each slot: Random draws a
    new group from the pool, so a slot has no own answer it replaced, and an own answer drawn back may sit in another
    slot. "from" names the client for its own answers too ("client_0 (own) #7")."""
    out = view.drop(columns=["own answer", "own correct"])
    out["from"] = [f"{cid} (own) #{f.split('#')[1]}" if f.startswith("own ") else f for f in out["from"]]
    out.attrs = dict(view.attrs)
    return out


def random_loss(swaps: dict) -> tuple[int, int]:
    """(client, prompt) where Random's group holds the most fewer right answers than the client's own K held (its own
    c_n(x) minus the right answers in the group it gets; the first such pair on a tie), from ``swaps["random"]``
    (``swap_public``'s groups, one per prompt); (0, 0) where Random took no right answer from anyone."""
    lost = np.stack([r.own_correct - r.correct.sum(axis=1) for r in swaps["random"]])  # [b, N]
    prompt, client = np.unravel_index(int(np.argmax(lost)), lost.shape)
    return (int(client), int(prompt)) if lost.max() > 0 else (0, 0)


def swap_widget(gen, swaps: dict, rule: str = "balanced", client: int = 1, prompt: int = 0):
    """§3's knobs: the rule, the client and the prompt → that client's group after the swap, as ``swaps`` (one
    ``swap_public`` result per rule, on the round's answers ``gen``) made it, with how many of its answers came from
    other clients, how many are right and how many of its own answers were. ``rule``, ``client`` and ``prompt`` are
    the controls' first values. Returns the update and its controls, for :func:`fedrl_kit.notebook.knobs`."""
    import ipywidgets as widgets
    from IPython.display import display

    from fedrl_kit.pubswap.public_step import group_table

    cids, K = gen.client_ids, gen.num_generations

    def show_swap(rule, client, prompt):
        v = group_table(gen, swaps[rule], client, prompt)
        print(f"{rule}: {v.attrs['swapped_in']} of {cids[client]}'s {K} answers on {gen.batch['prompt'][prompt]!r} come "
              f"from other clients; the group holds {int(v['correct'].sum())} right, its own {K} held "
              f"{int(v['own correct'].sum())} right")
        display(random_view(v, cids[client]) if rule == "random" else v)

    controls = dict(rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")], value=rule),
                    client=widgets.Dropdown(options=[(c, i) for i, c in enumerate(cids)],
                                            value=min(client, len(cids) - 1)),
                    prompt=widgets.Dropdown(options=[(x, i) for i, x in enumerate(gen.batch["prompt"])], value=prompt))
    return show_swap, controls


def swap_try(gen, swaps: dict, correct: pd.DataFrame) -> None:
    """§3's "Try": Random's group for the client and prompt where it lost most right answers (:func:`random_loss`),
    drawn once as plain output (a page read without a kernel shows it), then the widgets (rule, client, prompt) that
    redraw it in a kernel, then, folded, Balanced's group in the same case (:func:`balanced_beside`): the answer."""
    from IPython.display import display

    from fedrl_kit import notebook

    client, prompt = random_loss(swaps)
    show, controls = swap_widget(gen, swaps, "random", client, prompt)
    show(**{name: w.value for name, w in controls.items()})
    display(notebook.knobs(show, **controls))
    notebook.fold(*balanced_beside(gen, swaps, correct, client, prompt))


def balanced_beside(gen, swaps: dict, correct: pd.DataFrame, client: int, prompt: int) -> tuple[str, pd.DataFrame]:
    """The "Try" under §3's widget, answered: what Balanced gives ``client`` on ``prompt`` (the case the widget shows
    for Random), M_n(x) worked from the c_n(x) table, and that client's group after Balanced (``group_table``)."""
    from fedrl_kit.pubswap.public_step import group_table

    K, cid = gen.num_generations, gen.client_ids[client]
    c = correct.iloc[prompt].to_numpy()
    D = int(c.sum() - c[client])
    M = min(max(K // 2 - int(c[client]), 0), D)
    if swaps["balanced"] is not None and (done := int(swaps["balanced"][prompt].num_replaced[client])) != M:
        raise AssertionError(f"M worked by hand ({M}) is not what swap_public replaced ({done})")
    view = group_table(gen, swaps["balanced"], client, prompt)
    kept = "keeps its own K" if M == 0 else f"swaps {M} of its wrong answers for right ones"
    return (f"Balanced, {cid} on {gen.batch['prompt'][prompt]!r}: c = {int(c[client])}, D = {D}, M = min(({K // 2} − "
            f"{int(c[client])})+, {D}) = {M}: it {kept}, {int(view['correct'].sum())} of {K} right (Random's group "
            f"above: {int(swaps['random'][prompt].correct[client].sum())}). Balanced never drops a right answer."), view


def bound_report(terms: dict) -> str:
    """§4's measured bound in words: ``off_policy_terms``' M_0(x), β_0(x), the bound (1/b) Σ_x M β, the measured ω_0
    beside the norm of the gradient on the client's own answers, ω_0's share of it, and the largest angle by which a
    change of that size can turn the gradient, arcsin(ω_0 / ‖ĝ‖) (for ω_0 < ‖ĝ‖)."""
    M, beta, b = terms["M"], terms["beta"], len(terms["M"])
    used = " + ".join(f"{int(m)}·{x:.3f}" for m, x in zip(M, beta) if m > 0)
    lines = [f"M_0(x) = {' '.join(str(int(m)) for m in M)} over b = {b} prompts",
             f"bound on ω_0 (a gradient length): (1/b) Σ_x M_0(x) β_0(x) = ({used or '0'}) / {b} = "
             f"{terms['bound']:.3f}"]
    if not terms["omega"]:
        return "\n".join(lines + ["measured ω_0 = 0: nothing swapped in"])
    share = terms["omega"] / terms["on_policy"] if terms["on_policy"] else float("inf")
    lines.append(f"measured ω_0 = {terms['omega']:.3f} ({terms['bound']:.3f} / {terms['omega']:.3f} = "
                 f"{terms['bound'] / terms['omega']:.1f}× below the bound)")
    lines.append(f"relative distortion (a share): ω_0 / ‖ĝ(own groups)‖ = {terms['omega']:.3f} / "
                 f"{terms['on_policy']:.3f} = {share:.0%}")
    if share < 1:
        angle = np.degrees(np.arcsin(share))
        lines.append(f"so the swap turns client_0's gradient by at most arcsin({terms['omega']:.3f} / "
                     f"{terms['on_policy']:.3f}) = {angle:.0f}° "
                     f"(cosine ≥ {np.cos(np.radians(angle)):.2f})")
    return "\n".join(lines)


# -- §3: the exercises on the swap ---------------------------------------------------------------------------------
class ClientSet(set):
    """A set of names (clients, arms) that prints sorted, so that a stored answer reads the same on every run."""

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(c) for c in sorted(self)) + "}"


def _has_gradient(right: int, K: int) -> bool:
    """A group gives a gradient only if its rewards differ: some right and some wrong answers."""
    return 0 < right < K


def exercise_balanced_counts(c=(0, 2, 0, 0), K: int = 8) -> tuple[tuple[int, ...], str]:
    """Exercise 1: four clients answered one prompt with c_n(x) right answers of K; how many right answers does each
    hold after Balanced? The package's ``balanced_swap`` on a pool with those counts (the texts do not matter)
    decides; the reason gives M_n = min((⌊K/2⌋ − c_n)_+, D_n) per client by hand, and which clients get a gradient
    with and without the swap."""
    from fedrl_kit.pubswap.swap import ResponsePool, balanced_swap

    c = np.asarray(c)
    cids = [f"client_{n}" for n in range(len(c))]
    pool = ResponsePool([["answer"] * K for _ in c], np.arange(K)[None, :] < c[:, None])  # [N, K] c_n right each
    swapped = balanced_swap(pool, K, np.random.default_rng(0)).correct.sum(axis=1)  # [N] right after the swap
    parts = []
    for cid, cn, r in zip(cids, c, swapped):
        D = int(c.sum() - cn)  # right answers the other clients hold
        M = min(max(K // 2 - int(cn), 0), D)  # by hand, as in §2
        assert int(cn) + M == int(r)  # the package's group agrees
        parts.append(f"{cid}: D = {D}, M = min(({K // 2} − {cn})+, {D}) = {M} → {r} right")
    after = [cid for cid, r in zip(cids, swapped) if _has_gradient(int(r), K)]
    before = [cid for cid, cn in zip(cids, c) if _has_gradient(int(cn), K)]
    return tuple(int(r) for r in swapped), (
        "; ".join(parts) + ". Balanced wants ⌊K/2⌋ right per group but can only pass on the D_n right answers the "
        "others hold; each receiver draws its own donors, so the same right answer can go to several clients, while a "
        "client whose right answers are the only ones gets none back. With the swap "
        f"{_names(after)} get a gradient; without it (the no-swap control) only {_names(before)} would.")


def _names(cids: list[str]) -> str:
    """'no client', 'client_1', 'client_0 and client_2', 'all 4 clients' (when the list is client_0 … client_{N−1})."""
    if not cids:
        return "no client"
    if len(cids) > 2 and cids == [f"client_{n}" for n in range(len(cids))]:
        return f"all {len(cids)} clients"
    return " and ".join([", ".join(cids[:-1]), cids[-1]]) if len(cids) > 1 else cids[0]


def _no_gradient(groups) -> bool:
    """No client gets a gradient from a prompt: every client's group is all right or all wrong."""
    return all(not _has_gradient(int(g.sum()), len(g)) for g in groups)


def exercise_no_spread(gen, swaps, correct: pd.DataFrame) -> tuple[tuple[int, int], str]:
    """Exercise 3: on how many of the b prompts can Random give no client a gradient *whatever its draw* (all N·K
    pooled answers wrong, or all right), and on how many does Balanced give none: (Random, Balanced). The reason names
    those prompts, and what this one draw of Random added by chance (a group of K from a pool with R right of NK is all
    wrong or all right with probability (C(NK−R, K) + C(R, K)) / C(NK, K))."""
    from math import comb

    K, N = gen.num_generations, len(gen.client_ids)
    names = [x.split(" (gold")[0] for x in correct.index]
    pool = correct.sum(axis=1).to_numpy()  # [b] right answers among the N·K pooled ones
    forced = [x for x, R in zip(names, pool) if R in (0, N * K)]
    rnd = [x for x, r in zip(names, swaps["random"]) if _no_gradient(r.correct)]
    bal = [x for x, r in zip(names, swaps["balanced"]) if _no_gradient(r.correct)]
    chance = [f"{x!r} ({R} of {N * K} right: a {(comb(N * K - R, K) + comb(R, K)) / comb(N * K, K):.0%} chance)"
              for x, R in zip(names, pool) if x in rnd and 0 < R < N * K]
    return (len(forced), len(bal)), (
        f"Rows whose {N * K} pooled answers are all wrong or all right: {', '.join(map(repr, forced)) or 'none'}. "
        "There no group Random draws has spread, and Balanced has no right answer to swap in (all wrong) or "
        "leaves the groups alone (all right); everywhere else Balanced tops every short group up, so both counts are "
        "the same. Random can lose "
        f"more by chance: this draw left {len(rnd)} prompts without gradient, adding {', '.join(chance) or 'none'}. "
        "Random shares more, but a shared group can hold no right answer for anyone.")


# -- §4: the exercises on drift ----------------------------------------------------------------------------------------
def exercise_fedit(clients=((2.0, 2.0), (-1.0, -4.0))) -> tuple[str, str]:
    """Two clients' 1 × 1 LoRA factors (B_n, A_n), s = 1, through ``aggregate.fedit``: the sign ("positive", "zero" or
    "negative") of FedIT's product of the averaged factors, with the four cross terms that make it, against the
    clients' own ΔW_n = B_n A_n."""
    from fedrl_kit.aggregate import fedit

    avg = fedit([{"A": np.array([[a]], np.float32), "B": np.array([[b]], np.float32)} for b, a in clients])
    product = float(avg["B"][0, 0] * avg["A"][0, 0])
    own = ", ".join(f"{b * a:g}" for b, a in clients)
    terms = " + ".join(f"({b:g})({a:g})" for b, _ in clients for _, a in clients)
    word = "positive" if product > 1e-12 else "negative" if product < -1e-12 else "zero"
    return word, (
        f"mean(B) · mean(A) = {float(avg['B'][0, 0]):g} · {float(avg['A'][0, 0]):g} = {product:g}, while the clients "
        f"learned ΔW = {own}. Written out, mean(B) · mean(A) = ({terms}) / {len(clients) ** 2}: the cross terms "
        "B_n A_n′ mix one client's B with another's A and belong to no client; here they flip the sign. The clients "
        "agree on ΔW but not on the factors, and FedIT averages the factors.")


def exercise_bound() -> tuple[set, str]:
    """Which arms' bound on Δ_τ is smallest: the no-swap control's and Random's, whose public steps drop ζ and add
    nothing: the control trains every client on its own answers to the same prompts (ω_n = 0), Random trains every
    client on one and the same group (equal gradients at one θ, whatever ω_n is). Balanced gives each client its own
    group, so its public steps add γ_j ≤ ω_n + ω_n′."""
    return ClientSet({"no-swap control", "Random"}), (
        "FedAvg-GRPO adds ζ on every step; the other three add ζ only on private steps. On a public step the control "
        "trains each client on its own answers to the same prompts: ω_n = 0, γ_j = 0. Random sends every client one "
        "and the same group, so at one θ their gradients are equal: γ_j = 0 too, though each ω_n > 0. Balanced tops "
        "each client's own group up with right answers from the *other* clients, so even in expectation the groups "
        "differ and γ_j can reach ω_n + ω_n′ > 0. The noise term is the same for every arm. So the control and Random "
        "tie for the smallest bound; Balanced's lies above theirs, and below FedAvg-GRPO's where ω_n + ω_n′ < ζ. "
        "The bound does not favour Balanced's swap over no swap; the runs below test it.")


# -- §5: the stored runs ----------------------------------------------------------------------------------------------
def stored_runs(results=F.RESULTS) -> pd.DataFrame:
    """One row per stored run of the four arms in the larger-τ grid (every τ it ran, final checkpoint): the arm's
    name, τ, seed, the end-of-round δ_pair (``drift_end_pairwise_effective``: δ_pair after each round's last local step,
    mean over the run's rounds), the update size u (``drift_end_to_global_effective``, the same way), the final
    pass@1 in points and the untrained start's ("start"); plus the run's rounds, preset and topic split."""
    import json
    from pathlib import Path

    rows = pd.DataFrame(json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text()))
    rows = rows[rows.table.isin(["table1", "control"]) & rows.method.isin(list(ARMS))]
    return pd.DataFrame({"arm": rows.method.map(ARMS), "tau": rows.tau, "seed": rows.seed,
                         "δ_pair": rows.drift_end_pairwise_effective, "u": rows.drift_end_to_global_effective,
                         "pass@1": 100 * rows["pass@1_final"], "start": 100 * rows["pass@1_start"],
                         "rounds": rows.rounds, "preset": rows.preset,
                         "dirichlet_alpha": rows.dirichlet_alpha}).reset_index(drop=True)


def _at_largest_tau(results=F.RESULTS) -> pd.DataFrame:
    """:func:`stored_runs` at the grid's largest τ (the figure's), with δ_pair / u per run."""
    rows = stored_runs(results)
    rows = rows[rows.tau == rows.tau.max()]
    return rows.assign(ratio=rows["δ_pair"] / rows["u"])


JITTER = 0.03
"""how far right each seed's dots sit from the previous seed's in the stored figure (two seeds can tie)"""

SEED_LINE = "one seed's runs (the line breaks at an arm that did not run it)"
"""the stored figure's legend entry for a seed's grey line"""


def stored_drift_figure(results=F.RESULTS) -> go.Figure:
    """Two panels over the four arms at the stored grid's largest τ: the end-of-round δ_pair, and δ_pair divided by
    the update size u with √2 (equal-length updates in unrelated directions) dotted. One grey trace per seed, its line
    broken where an arm did not run that seed: a line joins a seed only across neighbouring arms that both ran it (arms
    ran different seeds), each seed shifted right by :data:`JITTER` more than the last so that equal values stay
    apart; a black diamond is each arm's mean with its 95 % t-interval. Each tick names the arm's seeds;
    the first panel's axis does not start at 0 (from 0 it flattens the differences)."""
    from experiments.stats import t_interval

    s = F.pubswap_setting(results)
    rows = _at_largest_tau(results)
    x = {name: i for i, name in enumerate(ORDER)}
    n = rows.groupby("arm").size()
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["end-of-round δ_pair (lower: clients closer)",
                                        "δ_pair / u (lower: directions more alike)"])
    for k, (seed, d) in enumerate(rows.groupby("seed")):
        d = d.set_index("arm").reindex(ORDER)  # NaN where an arm did not run this seed: the line breaks there
        for col, value in ((1, "δ_pair"), (2, "ratio")):
            fig.add_trace(go.Scatter(x=[x[a] + JITTER * k for a in d.index], y=d[value], mode="lines+markers",
                                     connectgaps=False,
                                     name=SEED_LINE, legendgroup="seed", showlegend=col == 1 and k == 0,
                                     line=dict(color="#c4c4c4", width=1), marker=dict(color="#9a9a9a", size=6)),
                          row=1, col=col)
    for col, value in ((1, "δ_pair"), (2, "ratio")):
        means = [t_interval(rows[rows.arm == a][value]) for a in ORDER]
        fig.add_trace(go.Scatter(x=[x[a] + 0.25 for a in ORDER], y=[m for m, _, _ in means], mode="markers",
                                 name="mean ± 95 % t-interval", legendgroup="mean", showlegend=col == 1,
                                 marker=dict(color="black", size=11, symbol="diamond"),
                                 error_y=dict(type="data", array=[h for _, h, _ in means], thickness=2, width=8,
                                              color="black")), row=1, col=col)
    fig.add_hline(y=float(np.sqrt(2)), line=dict(color="#444", dash="dot"), row=1, col=2,
                  annotation_text="√2: unrelated", annotation_position="bottom right")
    low, high = int(rows["δ_pair"].min()) - 1, int(rows["δ_pair"].max()) + 2
    fig.update_layout(template="plotly_white", height=480, width=900, margin=dict(t=90, l=60, b=60),
                      legend=dict(orientation="h", y=-0.22, x=0.5, xanchor="center"),
                      title=dict(text=f"stored runs at τ = {s['tau']} ({s['rounds']} rounds): end-of-round "
                                      "δ_pair and δ_pair / u", x=0.02, y=0.97))
    fig.update_yaxes(title_text="end-of-round δ_pair (axis not from 0)", range=[low, high], row=1, col=1)
    fig.update_yaxes(title_text="δ_pair / u (axis from 1)", range=[1.0, 1.5], row=1, col=2)
    short = {"FedAvg-GRPO": "FedAvg-<br>GRPO", "no-swap control": "no-swap<br>control"}
    ticks = [f"{short.get(a, a.replace('PubSwap ', ''))}<br>({n.get(a, 0)} seeds)" for a in ORDER]
    fig.update_xaxes(tickvals=list(x.values()), ticktext=ticks, tickangle=0, range=[-0.4, len(ORDER) - 0.4])
    return fig


def update_sizes(results=F.RESULTS) -> pd.DataFrame:
    """Per arm at the stored τ: end-of-round δ_pair, the update size u (mean over clients of ‖ΔW_n − ΔW_p‖_F, the
    distance from the round's broadcast adapter, ``drift.distance_to_global``) and their ratio, each the mean over the
    arm's seeds; the ratio is √2 for updates of equal length in unrelated directions and 0 for identical ones."""
    rows = _at_largest_tau(results)
    t = rows.groupby("arm")[["δ_pair", "u", "ratio"]].mean().reindex(ORDER)
    t = t.rename(columns={"δ_pair": "end-of-round δ_pair", "u": "update size u", "ratio": "δ_pair / u"})
    t.insert(0, "seeds", rows.groupby("arm").size().reindex(ORDER))
    return t.round({"end-of-round δ_pair": 2, "update size u": 2, "δ_pair / u": 2})


def pass1_by_tau(results=F.RESULTS, same_seeds: bool = False) -> pd.DataFrame:
    """pass@1 (%) at every stored τ: the policy's before GRPO (mean over the seeds run at that τ) and each arm's at the
    end (mean over its seeds; "not run" where it did not run). One row per τ. ``same_seeds``: at each τ only the
    seeds every arm run there ran, so that a row's means compare like with like."""
    rows = stored_runs(results)
    if same_seeds:
        arms = rows.groupby("tau").arm.nunique()
        common = rows.groupby(["tau", "seed"]).arm.nunique()
        keep = {(t, s) for (t, s), n in common.items() if n == arms[t]}
        rows = rows[[(t, s) in keep for t, s in zip(rows.tau, rows.seed)]]
    start = rows.drop_duplicates(["tau", "seed"]).groupby("tau").start.mean()
    arms = rows.pivot_table(index="tau", columns="arm", values="pass@1", aggfunc="mean").reindex(columns=ORDER)
    t = pd.concat([start.rename("before GRPO"), arms], axis=1).round(1).rename_axis("τ")
    return t.astype(object).where(t.notna(), "not run")


def exercise_update_size(results=F.RESULTS) -> tuple[str, str]:
    """Random's clients point more alike than FedAvg-GRPO's (lower δ_pair / u), yet its mean δ_pair is higher: what
    must its update size u be, "larger", "smaller" or "equal" to FedAvg-GRPO's? Since δ_pair = (δ_pair / u) · u, a
    lower ratio with a higher δ_pair needs a larger u; then u read off the means and as the runs measured it."""
    t = update_sizes(results)
    r, f = t.loc["PubSwap Random"], t.loc["FedAvg-GRPO"]
    ur, uf = r["end-of-round δ_pair"] / r["δ_pair / u"], f["end-of-round δ_pair"] / f["δ_pair / u"]
    word = "larger" if ur > uf * 1.02 else "smaller" if ur < uf / 1.02 else "equal"
    return word, (f"δ_pair = (δ_pair / u) · u, so a lower ratio can give a higher δ_pair only if u is larger. Random: "
                  f"{r['end-of-round δ_pair']:.2f} ÷ {r['δ_pair / u']:.2f} ≈ {ur:.1f}; FedAvg-GRPO: "
                  f"{f['end-of-round δ_pair']:.2f} "
                  f"÷ {f['δ_pair / u']:.2f} ≈ {uf:.1f} (measured directly: {r['update size u']:.2f} against "
                  f"{f['update size u']:.2f}). Random's clients point more alike, as sharing one group should "
                  "make them, but each moves further from the broadcast adapter, and the longer moves win. Why they "
                  "are longer these runs do not test. So read drift beside u.")


# -- the report's section behind the findings (notebook 12) ---------------------------------------------------------
def report_notes(results=F.RESULTS) -> Markdown:
    """How the findings' tables fit together: arm levels against paired differences (different seed sets), the stored
    drift ranking and how firm Random's place in it is, and the untrained policy's stored pass@1."""
    f, r = F.pubswap_teaching_tables(results, digits=3)
    levels = F.pubswap_arm_levels(results)
    lv = levels["δ_pair at the end, mean ± SD"].str.split(" ± ").str[0].astype(float)
    start = F.pubswap_start_pass1(0, results)
    b, c = lv["PubSwap Balanced"], lv["no-swap control"]
    return Markdown(
        f"- **Seeds.** The levels give Balanced − control = {b:.2f} − {c:.2f} = {b - c:.2f}; F2 gives "
        f"{f.loc['F2', 'difference']:.2f}. Balanced's level averages {levels.loc['PubSwap Balanced', 'seeds']} seeds, "
        f"F2 pairs the {int(f.loc['F2', 'seeds'])} seeds both arms ran.\n"
        f"- **Ranking.** Mean final δ_pair, lowest first: {', '.join(f'{a} {v:.2f}' for a, v in lv.sort_values().items())}. "
        f"Random's top place is not firm: R1, Random − Balanced, is "
        f"{F.interval_words(r.loc['R1', 'difference'], r.loc['R1', '±95% t'], int(r.loc['R1', 'seeds']), '‖ΔW‖', 3)}.\n"
        f"- **Start.** The untrained policy scores {start['at_seed']} % at seed 0 and {start['mean']} % over "
        f"{start['seeds']} seeds ({start['n_test']} test problems × {start['samples']} samples).")
