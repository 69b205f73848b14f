"""The sentences and small tables notebook 02 (PubSwap) shows, built here so that each notebook cell is a line or
three: the setting, the one-round drift runs read into frames and a figure, the swap step-through's tables and its
widget, the exercises' answers with their reasons, and the five findings read from the stored grids. Nothing here
trains or changes a method; the numbers come from the runs passed in or from ``experiments.findings``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import Markdown, display
from plotly.subplots import make_subplots

from experiments import findings as F

ARMS = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_noswap": "no-swap control", "pubswap_random": "PubSwap Random",
        "pubswap_balanced": "PubSwap Balanced"}
"""the four arms (methods compared), in the order every table lists them"""
COLOURS = {"FedAvg-GRPO": "#636efa", "no-swap control": "#ab63fa", "PubSwap Random": "#00cc96",
           "PubSwap Balanced": "#ef553b"}
REPORT = "12_pubswap_report.ipynb"


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


def settings_box(cfg, world, policy, tau_live: int, results=F.RESULTS) -> pd.DataFrame:
    """The settings every later section uses, one short row each: the federation's sizes, the world, the policy and its
    LoRA, GRPO's clip and updates per batch, the optimiser (and when its state starts afresh), then the runs the
    notebook shows (its live one-round runs, the stored runs of §5–6, the paper's)."""
    lora = [n for n, _ in policy.model.named_parameters() if ".lora_A." in n]  # one per adapted layer
    lora_n = sum(p.numel() for n, p in policy.model.named_parameters() if "lora_" in n)
    frozen = sum(p.numel() for p in policy.model.parameters()) - lora_n
    arch = policy.model.config
    s = F.pubswap_setting(results)
    seeds = {ARMS[m]: len(s["seeds"][m]) for m in ARMS}
    few = [a for a, n in seeds.items() if n < max(seeds.values())]
    optimiser = "AdamW" if cfg.weight_decay else "Adam"
    return pd.Series({
        "N clients; b prompts per step; K answers per prompt; τ_swap":
            f"{cfg.num_clients}; {cfg.prompts_per_step}; {cfg.num_generations}; {cfg.pubswap.period}"
            + (" (the paper's Table 1; its Table 5 also tries 4 and 8)" if cfg.pubswap.period == 2 else ""),
        "world": f"{pd.Series(world.public['topic']).nunique()} arithmetic topics; {len(world.train)} private problems "
                 f"split among the clients, {len(world.public)} public prompts, {len(world.test)} test problems",
        "policy": f"{arch.num_hidden_layers}-layer transformer ({frozen / 1e6:.2f} M frozen parameters); LoRA rank "
                  f"{cfg.lora_rank} on {len(lora)} layers ({lora_n / 1e6:.2f} M trained), scale s = "
                  f"{cfg.lora_alpha / cfg.lora_rank:g}",
        "GRPO": f"ratio ρ clipped to [{1 - cfg.epsilon:g}, {1 + cfg.epsilon_high:g}] (ε = {cfg.epsilon:g} below, "
                f"ε_high = {cfg.epsilon_high:g} above); each batch of answers is used for μ = {cfg.num_iterations} "
                f"updates (π_old: the policy that sampled it){'' if cfg.beta else '; no KL term'}",
        "optimiser": f"{optimiser}, η = {cfg.learning_rate:g}, weight decay {cfg.weight_decay:g}; one state for a "
                     "client's private and public steps"
                     + (", started afresh each round" if cfg.reset_optimizer else ", kept across rounds"),
        "live runs (§3–4)": f"τ = {tau_live}, one round, seed {cfg.seed}",
        "stored runs (§5–6)": f"τ = {s['tau']} × {s['rounds']} rounds = {s['steps']} local steps per client; "
                              f"{max(seeds.values())} seeds ({min(seeds.values())} for the {' and '.join(few)})",
        "the paper": f"τ = {F.PUBSWAP_PAPER_TAUS[0]} to {F.PUBSWAP_PAPER_TAUS[-1]}, {PAPER_STEPS} local steps; "
                     "1.5–1.7B-parameter models on MATH and DeepMath"}, name="setting").to_frame()


def _lora_modules(policy) -> list[str]:
    """The names of the linear modules LoRA adapts, one per module (e.g. ``model.layers.0.self_attn.q_proj``)."""
    return [n.split(".lora_A.")[0] for n, _ in policy.model.named_parameters() if ".lora_A." in n]


def settings_sentence(cfg, world, policy, tau_live: int, results=F.RESULTS) -> Markdown:
    """What a reader needs before §2, as one sentence: the federation's sizes, the world, the policy and which linear
    modules LoRA adapts (so many per layer), the live runs. GRPO's and the optimiser's settings come after GRPO is
    explained (``grpo_settings``)."""
    modules = _lora_modules(policy)
    lora_n = sum(p.numel() for n, p in policy.model.named_parameters() if "lora_" in n)
    frozen = sum(p.numel() for p in policy.model.parameters()) - lora_n
    layers = policy.model.config.num_hidden_layers
    kinds = list(dict.fromkeys(m.rsplit(".", 1)[-1].removesuffix("_proj") for m in modules))
    return Markdown(
        f"**This run:** N = {cfg.num_clients} clients, b = {cfg.prompts_per_step} prompts per step, "
        f"K = {cfg.num_generations} answers, τ_swap = {cfg.pubswap.period}; "
        f"{pd.Series(world.public['topic']).nunique()} arithmetic topics ({len(world.train)} private problems, "
        f"{len(world.public)} public prompts, {len(world.test)} test); a {layers}-layer "
        f"transformer ({frozen / 1e6:.2f} M frozen parameters) with LoRA rank {cfg.lora_rank} on its {len(modules)} "
        f"linear modules ({', '.join(kinds)} in each layer; {lora_n / 1e6:.2f} M trained); live runs (§3–4): "
        f"τ = {tau_live}, one round, seed {cfg.seed}.")


def grpo_settings(cfg) -> Markdown:
    """GRPO's and the optimiser's settings, shown once GRPO's symbols are defined: the clip range (ε, ε_high), μ, the
    KL term (none here), the optimiser, its learning rate and when its state starts afresh."""
    return Markdown(
        f"**Here:** ρ clipped to [{1 - cfg.epsilon:g}, {1 + cfg.epsilon_high:g}] (ε = {cfg.epsilon:g}, "
        f"ε_high = {cfg.epsilon_high:g}), μ = {cfg.num_iterations} updates per step, "
        f"{'a KL penalty β = %g' % cfg.beta if cfg.beta else 'no KL penalty'}; "
        f"{'AdamW' if cfg.weight_decay else 'Adam'}, learning rate η = {cfg.learning_rate:g}, "
        f"{'its state reset each round' if cfg.reset_optimizer else 'its state kept across rounds'}.")


LIVE_TAUS = {"quick": (2, 6), "smoke": (2, 4), "full": (10, 120), "full-smoke": (2, 4)}
"""each preset's two τ (full: the paper's smallest and largest); §3–4's live runs use the larger"""


def live_taus(preset_name: str, taus=None) -> tuple[int, ...]:
    """The τ's of the notebook: ``taus`` if given, else the preset's two (:data:`LIVE_TAUS`)."""
    return tuple(taus or LIVE_TAUS[preset_name])


def step_vectors(tensors: dict, j: int, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """After local step ``j`` of a traced round (``read_tensors``): every client's ΔW_n = s B_n A_n of all LoRA
    modules as one vector [N, P], the broadcast's ΔW_p [P], and each client's gradient at the step's start [N, P'];
    clients in sorted order."""
    def flat(st):
        return np.concatenate([(scale * st[k.replace("lora_A", "lora_B")] @ st[k]).ravel()
                               for k in sorted(st) if "lora_A" in k])
    cids = sorted(tensors[j])
    return (np.stack([flat(tensors[j][c]) for c in cids]), flat(tensors["global"]),
            np.stack([tensors[j][c]["grad"] for c in cids]))


def stored_grid_sentence(results=F.RESULTS) -> Markdown:
    """``stored_grid`` as one short plain sentence: the long grid's τ's, its length (and so its rounds at the largest
    τ), its seeds, and where the no-swap control ran (in which grid)."""
    g = stored_grid(results)
    s = F.pubswap_setting(results)
    long, short = g.iloc[-1], g.iloc[0]  # the grids by length: 96 local steps, then 24

    def seeds(text):  # "3 (5 for A at τ = 48)" → "3 seeds (5 for A at τ = 48)"
        first, _, rest = text.partition(" (")
        return f"{first} seeds" + (f" ({rest}" if rest else "")
    return Markdown(
        f"**Stored runs** (this setting, trained beforehand): τ = {long['τ']}, each client {s['steps']} local steps in all (so {s['rounds']} rounds at "
        f"τ = {s['tau']}), {seeds(long['seeds per arm'])}, the no-swap control at τ = {long['no-swap control at τ']} "
        f"and, in a shorter grid of {short['local steps per client (τ × rounds)']} steps, at τ = "
        f"{short['no-swap control at τ']}.")


def advantage_by_hand(K: int, right: int) -> str:
    """eq. 1 by hand for a group of K answers of which ``right`` are right: the mean, the sample standard deviation
    (divided by K − 1, as ``torch.std`` and ``grpo.group_advantages``) and the two advantages, beside what the
    population standard deviation (divided by K) would give."""
    r = np.array([1.0] * right + [0.0] * (K - right))  # [K]
    mean, sample, population = r.mean(), r.std(ddof=1), r.std(ddof=0)
    return (f"by hand, {right} of {K} right: r̄ = {mean:.2f}, σ_r = √(Σ(r_k − r̄)² / (K − 1)) = "
            f"√({((r - mean) ** 2).sum():g} / {K - 1}) = {sample:.2f}, so â = {1 - mean:.2f} / {sample:.2f} = "
            f"{(1 - mean) / (sample + 1e-4):.2f} for a right answer, {-mean / (sample + 1e-4):.2f} for a wrong one "
            f"(dividing by K instead: ±{(1 - mean) / population:.2f})")


def fedit_error(clients: list[dict], scale: float) -> float:
    """FedIT's averaging error on one round's end: e = ‖mean_n(s B_n A_n) − s B̄ Ā‖_F over all LoRA modules together,
    from each client's factors (``{"…lora_A…": A, "…lora_B…": B}``, other keys ignored). It equals
    ‖(s/N) Σ_n (B_n − B̄)(A_n − Ā)‖_F: zero when the factors agree, whatever δ_pair (on the products) says."""
    from fedrl_kit.aggregate import fedit

    keys = sorted(k for k in clients[0] if "lora_A" in k)
    states = [{k: c[k] for k in keys + [k.replace("lora_A", "lora_B") for k in keys]} for c in clients]
    avg = fedit(states)
    diff = [np.mean([scale * st[k.replace("lora_A", "lora_B")] @ st[k] for st in states], axis=0)
            - scale * np.asarray(avg[k.replace("lora_A", "lora_B")], np.float64) @ np.asarray(avg[k], np.float64)
            for k in keys]
    return float(np.sqrt(sum((d ** 2).sum() for d in diff)))


def fedit_error_table(drift_runs: dict, scale: float) -> tuple[pd.DataFrame, Markdown]:
    """Per arm of the live round, at its last local step: δ_pair (on ΔW_n = s B_n A_n) beside FedIT's averaging error
    e (``fedit_error``), both ‖ΔW‖ units, lowest δ_pair first; and a sentence saying whether e keeps δ_pair's order."""
    out = {}
    for (m, tau), (run, _) in drift_runs.items():
        t = run.tensors
        dW, _, _ = step_vectors(t, tau - 1, scale)
        N = len(dW)
        pair = np.mean([np.linalg.norm(dW[a] - dW[b]) for a in range(N) for b in range(a + 1, N)])
        out[ARMS[m]] = {"δ_pair": pair, "FedIT error e": fedit_error([t[tau - 1][c] for c in sorted(t[tau - 1])], scale)}
    table = pd.DataFrame(out).T.sort_values("δ_pair").round(3)
    table.index.name = f"live round, end (j = {tau})"
    by_e = list(table.sort_values("FedIT error e").index)
    low_e = table["FedIT error e"].idxmin().replace("PubSwap ", "")
    same = by_e == list(table.index)
    e = table["FedIT error e"]
    below = all(e[a] < e["FedAvg-GRPO"] for a in table.index if a != "FedAvg-GRPO") if "FedAvg-GRPO" in e else False
    low_d = table.index[0].replace("PubSwap ", "")
    return table, Markdown(
        ("Every arm with public steps ends with a smaller e than FedAvg-GRPO. " if below else "")
        + f"Ordered by e the arms {'keep' if same else 'do not keep'} δ_pair's order (lowest δ_pair: {low_d}; "
        f"lowest e: {low_e}): {'here lower drift came with a smaller averaging error' if same else 'lower drift on the products does not by itself mean a smaller averaging error'}. "
        "One round of one seed: a check of the mechanism, not a ranking.")


def fedit_demo() -> pd.DataFrame:
    """Two clients with 1 × 1 LoRA factors (s = 1) through ``aggregate.fedit``: the product of the averaged factors
    against the mean of the clients' products ΔW_n = B_n A_n. One pair with cross terms that do not cancel, one pair
    with the same ΔW written with opposite signs. Both pairs have ΔW_1 = ΔW_2, so δ_pair (on ΔW) is 0 for both, while the
    distance between the factors (``drift``'s "factors" space) is not: δ_pair does not see what FedIT's average
    does to them."""
    from fedrl_kit.aggregate import fedit
    from fedrl_kit.drift import mean_pairwise_drift

    cases = {"different factors": ((2.0, 1.0), (1.0, 2.0)), "same ΔW, signs flipped": ((1.0, 1.0), (-1.0, -1.0))}
    out = {}
    for name, clients in cases.items():
        states = [{"A": np.array([[a]], np.float32), "B": np.array([[b]], np.float32)} for b, a in clients]
        avg = fedit(states)
        adapters = [{"layer": (st["A"], st["B"])} for st in states]  # module → (A, B), as drift reads them
        out[name] = {"client 1: B_1, A_1 → ΔW_1": "{:g}, {:g} → {:g}".format(*clients[0], np.prod(clients[0])),
                     "client 2: B_2, A_2 → ΔW_2": "{:g}, {:g} → {:g}".format(*clients[1], np.prod(clients[1])),
                     "mean of ΔW_n": f"{np.mean([b * a for b, a in clients]):g}",
                     "FedIT: mean(B) · mean(A)": f"{float(avg['B'][0, 0]):g} · {float(avg['A'][0, 0]):g} = "
                                                 f"{float(avg['B'][0, 0] * avg['A'][0, 0]):g}",
                     "δ_pair": f"{mean_pairwise_drift(adapters):.2g}",
                     "factor distance": f"{mean_pairwise_drift(adapters, 'factors'):.2f}"}
    return pd.DataFrame(out).T


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


# -- §4: one round per arm, drift after each local step -----------------------------------------------------------------
def drift_frames(drift_runs: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """From ``{(method, τ): (run, records)}``: δ_pair and the update size u (the clients' mean distance from the
    broadcast adapter) after each local step, with the step's gradient spread (``drift.gradient_dissimilarity`` of the
    clients' gradients at its start) and its share of (client, prompt) groups without reward spread (one row per
    arm, τ, step), and each arm's end of round (those two, pass@1
    and its standard error √(p(1−p)/n) over n test problems, one sample each)."""
    drift = pd.DataFrame([{"arm": ARMS[m], "tau": tau, "step": r["step"], "step_kind": r["step_kind"],
                           "δ_pair": r["pairwise_effective"], "u": r["to_global_effective"],
                           "spread": r.get("grad_dissimilarity", np.nan), "no_gradient": r.get("frac_zero_std", np.nan)}
                          for (m, tau), (_, recs) in drift_runs.items() for r in recs if r["kind"] == "drift"])
    after = pd.DataFrame([{"arm": ARMS[m], "tau": tau, "pass@1": g["pass@1"], "n": g["n"]}
                          for (m, tau), (_, recs) in drift_runs.items() for g in recs
                          if g["kind"] == "global" and g["round"] == 1])
    end = drift.sort_values("step").groupby(["arm", "tau"]).last().reset_index().merge(after, on=["arm", "tau"])
    end["se"] = np.sqrt(end["pass@1"] * (1 - end["pass@1"]) / end["n"])
    return drift, end


def drift_figure(drift: pd.DataFrame) -> go.Figure:
    """Three panels side by side (a notebook stores its PNG at 900 × 420) over the local steps at the largest τ in
    ``drift`` (a small τ shows only overlapping points), from j = 0 (the broadcast adapter, δ_pair = 0): δ_pair; each
    arm minus FedAvg-GRPO, where the arms that lie on top of each other in the first come apart; and δ_pair / u (u: the
    clients' mean distance from the broadcast adapter), how alike the clients' directions are, beside √2, the value
    for unrelated directions. A public step is a grey band over the segment it draws (from j − 1 to j) and a large
    star at its end; a private step ends in a small circle."""
    tau = int(drift.tau.max())
    ends = drift[drift.tau == tau].sort_values("step").groupby("arm")["δ_pair"].last()
    low_here = ends.idxmin().replace("PubSwap ", "")
    low_stored = update_sizes()["final δ_pair"].idxmin().replace("PubSwap ", "")
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08,
                        subplot_titles=["δ_pair", "minus FedAvg-GRPO's", "δ_pair / u (dotted: √2)"])
    base = drift[(drift.arm == "FedAvg-GRPO") & (drift.tau == tau)].set_index("step")["δ_pair"]
    kinds = drift[(drift.tau == tau) & (drift.arm == ARMS["pubswap_balanced"])].set_index("step")["step_kind"]
    for name, colour in COLOURS.items():
        d = drift[(drift.arm == name) & (drift.tau == tau)].sort_values("step")
        x = [0, *(d.step + 1)]
        symbols = ["circle"] + ["circle" if k == "private" else "star" for k in d.step_kind]
        sizes = [5] + [5 if k == "private" else 14 for k in d.step_kind]
        ratio = (d["δ_pair"] / d["u"]).to_numpy()  # undefined at j = 0 (u = 0): drawn from j = 1
        for col, xs, y, sym, size in (
                (1, x, [0.0, *d["δ_pair"]], symbols, sizes),
                (2, x, [0.0, *(d["δ_pair"].to_numpy() - base.loc[d.step].to_numpy())], symbols, sizes),
                (3, x[1:], list(ratio), symbols[1:], sizes[1:])):
            fig.add_trace(go.Scatter(x=xs, y=y, name=name.replace("PubSwap ", ""), legendgroup=name,
                                     showlegend=col == 1, mode="lines", line=dict(color=colour, width=2)),
                          row=1, col=col)
            fig.add_trace(go.Scatter(x=xs, y=y, legendgroup=name, showlegend=False, mode="markers", hoverinfo="skip",
                                     marker=dict(symbol=sym, size=size, color=colour,
                                                 line=dict(color="white", width=1))), row=1, col=col)
    for step in kinds.index[kinds == "public"]:  # the segment a public step draws: j − 1 → j
        for col in (1, 2, 3):
            fig.add_vrect(x0=step, x1=step + 1, fillcolor="#d9d9d9", opacity=0.5, line_width=0, layer="below",
                          row=1, col=col)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="public step of PubSwap arms (grey, ★)",
                             marker=dict(symbol="square", size=13, color="#d9d9d9")))
    fig.add_hline(y=float(np.sqrt(2)), line=dict(color="#444", dash="dot"), row=1, col=3)
    fig.update_layout(template="plotly_white", height=420, width=900, margin=dict(t=80, b=40, l=50, r=20),
                      legend=dict(orientation="h", y=-0.2, x=0.5, xanchor="center", font=dict(size=12)),
                      title=dict(text=f"one round at τ = {tau}, one seed: mechanics, not a ranking"
                                      f"<br><sub>lowest δ_pair here: {low_here}; in the stored runs, which rank the arms (§5): "
                                      f"{low_stored}</sub>", x=0.02, y=0.96))
    fig.update_yaxes(rangemode="tozero", col=1)
    fig.update_yaxes(zeroline=True, zerolinecolor="#999", col=2)
    fig.update_yaxes(range=[1.0, 1.5], col=3)
    fig.update_xaxes(title_text="local step j", dtick=1, title_standoff=4, showgrid=False)
    return fig


def live_round_note(drift: pd.DataFrame, end: pd.DataFrame, results=F.RESULTS) -> Markdown:
    """What one live round shows, in three short sentences: through which step every arm is the same (the same
    private steps from the same start and seed) and where they part; whether every arm with public steps ends pointing
    more alike than FedAvg-GRPO (δ_pair / u); and that one round of one seed ranks nothing."""
    tau = int(end.tau.max())
    d = drift[drift.tau == tau].pivot_table(index="step", columns="arm", values="δ_pair")  # [steps, arms]
    same = d.sub(d["FedAvg-GRPO"], axis=0).abs().max(axis=1) < 1e-6 * d["FedAvg-GRPO"].abs().clip(lower=1)  # [steps]
    # every arm equal up to float32 rounding: the same private steps give the same adapters
    last_same = int(same.index[~same.to_numpy()].min()) if (~same).any() else int(d.index.max()) + 1  # 0-based
    here = end[end.tau == tau].set_index("arm").reindex(ORDER)
    ratio = here["δ_pair"] / here["u"]
    public = [a for a in ORDER if a != "FedAvg-GRPO"]
    below_here = all(ratio[a] < ratio["FedAvg-GRPO"] for a in public)
    kinds = drift[(drift.tau == tau) & (drift.arm == "PubSwap Balanced")].set_index("step")["step_kind"]
    first_public = int(kinds.index[kinds == "public"].min()) if (kinds == "public").any() else None  # 0-based
    part = (f"Every arm is the same through step {last_same} (the same private step{'s' if last_same > 1 else ''} "
            f"from the same start) and they part at step {last_same + 1}"
            + (", the first public step. " if first_public == last_same else ". ") if last_same >= 1 else "")
    agree = ("Every arm with public steps ends pointing more alike than FedAvg-GRPO"
             if below_here else "Not every arm with public steps ends pointing more alike than FedAvg-GRPO")
    listed = ", ".join(f"{a.replace('PubSwap ', '')} {v:.2f}" for a, v in ratio.items())
    here_order = " < ".join(a.replace("PubSwap ", "") for a in here["δ_pair"].sort_values().index)
    stored = " < ".join(a.replace("PubSwap ", "") for a in update_sizes(results)["final δ_pair"].sort_values().index)
    flag = "the same order" if here_order == stored else "a different order"
    return Markdown(f"**Mechanics only: one round of one seed ranks nothing.** Final δ_pair here: {here_order}; the "
                    f"stored runs (§5), which rank the arms, give {stored} ({flag}). {part}{agree} (δ_pair / u: "
                    f"{listed}).")


def shared_pull(drift: pd.DataFrame) -> tuple[pd.DataFrame, Markdown]:
    """The shared pull measured on the live round at its largest τ, per arm: the clients' gradient spread
    (1/N) Σ_n ‖g_n − ḡ‖² / ‖ḡ‖² (0: every client pulls the same way), averaged over the private and over the public
    steps, and the share of (client, prompt) groups on public steps whose rewards are all equal (no gradient). With
    one plain sentence saying what the numbers show: whether public steps pull the clients more alike than private
    ones already without a swap, and whether each swap pulls them more alike still and rescues groups."""
    tau = int(drift.tau.max())
    d = drift[drift.tau == tau]
    table = pd.DataFrame({
        "gradient spread, private steps": d[d.step_kind == "private"].groupby("arm")["spread"].mean(),
        "gradient spread, public steps": d[d.step_kind == "public"].groupby("arm")["spread"].mean(),
        "groups without gradient, public steps": d[d.step_kind == "public"].groupby("arm")["no_gradient"].mean(),
    }).reindex(list(ARMS.values()))
    table.index.name = f"live round, τ = {tau}"
    t = table.rename(index=lambda a: a.replace("PubSwap ", ""))
    pub, priv, none = (t["gradient spread, public steps"], t["gradient spread, private steps"],
                       t["groups without gradient, public steps"])
    swaps = ["Random", "Balanced"]
    shared = pub["no-swap control"] < priv["no-swap control"]
    tighter = [a for a in swaps if pub[a] < pub["no-swap control"]]
    rescued = [a for a in swaps if none[a] < none["no-swap control"]]
    words = (f"On public steps the clients' gradients are {'more' if shared else 'not more'} alike than on private "
             f"steps{', already without a swap (the shared prompts)' if shared else ''}; "
             + (f"{' and '.join(tighter)} pull{'s' if len(tighter) == 1 else ''} them more alike still"
                if tighter else "neither swap pulls them more alike")
             + (", and both leave" if rescued == swaps and tighter == swaps else
                f", and {' and '.join(rescued)} leave{'s' if len(rescued) == 1 else ''}" if rescued else
                ", and neither swap leaves") + " fewer groups without gradient"
             + ". One round of one seed: a mechanism seen, not a ranking.")
    table = table.apply(lambda c: c.map(lambda v: "—" if pd.isna(v) else f"{v:.0%}" if "groups" in c.name
                                        else f"{v:.2f}"))
    return table, Markdown(words)


def last_private_order(drift: pd.DataFrame) -> Markdown:
    """Whether reading δ_pair after the round's last *private* step, instead of after its last step (public when
    τ is even), changes how the arms of the live round order: both orders, lowest first."""
    tau = int(drift.tau.max())
    d = drift[drift.tau == tau].pivot_table(index="step", columns="arm", values="δ_pair")  # [steps, arms]
    kinds = drift[(drift.tau == tau) & (drift.arm == ARMS["pubswap_balanced"])].set_index("step")["step_kind"]
    last, private = int(d.index.max()), int(kinds.index[kinds == "private"].max())

    def order(step):
        return " < ".join(a.replace("PubSwap ", "") for a in d.loc[step].sort_values().index)
    same = order(last) == order(private)
    return Markdown(f"Live round, δ_pair after the last step (j = {last + 1}, {kinds[last]}): {order(last)}; after the "
                    f"last private step (j = {private + 1}): {order(private)}: "
                    + ("the same order." if same else "a different order."))


def stored_grid(results=F.RESULTS) -> pd.DataFrame:
    """The two stored grids in one table, so that §5–6 need not repeat it: per grid its τ's, its length (local steps
    per client, τ × rounds, the same for every τ of a grid), the τ's that ran the no-swap control, the seeds per arm,
    and where the notebook uses it."""
    import json
    from pathlib import Path

    used = {"pubswap_paper_quick.json": "the split table (τ = {control})",
            "pubswap_paper_quick_large_tau.json": "the figure, exercise 6 and the findings (τ = {top}); the split "
                                                  "table (τ = {control}); the accuracy claims (every τ)"}
    out = {}
    for name in F.PUBSWAP_RESULTS:
        rows = pd.DataFrame(json.loads((Path(results) / name).read_text()))
        rows = rows[rows.table.isin(["table1", "control"]) & rows.method.isin(list(ARMS))]
        steps = sorted(set(rows.tau * rows.rounds))
        seeds = rows.groupby(["tau", "method"]).seed.nunique()
        top = int(rows.tau.max())
        many = seeds[seeds > seeds.min()]
        control = ", ".join(map(str, sorted(rows[rows.method == "pubswap_noswap"].tau.unique())))
        more = "".join(f" ({n} for {' and '.join(ARMS[m] for m in d.index.get_level_values('method'))} at τ = {t})"
                       for (t, n), d in many.groupby([many.index.get_level_values("tau"), many]))
        out[f"{steps[0]} local steps"] = {
            "τ": ", ".join(map(str, sorted(rows.tau.unique()))),
            "local steps per client (τ × rounds)": " or ".join(map(str, steps)),
            "no-swap control at τ": control,
            "seeds per arm": f"{seeds.min()}{more}",
            "used for": used[name].format(top=top, control=control)}
    return pd.DataFrame(out).T.rename_axis("stored grid")


def stored_means(results=F.RESULTS) -> pd.DataFrame:
    """Exercise 5's data: per arm at the stored τ, the seeds, the final δ_pair and δ_pair / u (means over seeds), the
    two panels of the stored figure as numbers, without the update size u the exercise asks about."""
    s = F.pubswap_setting(results)
    table = update_sizes(results).drop(columns="update size u")
    table.index.name = f"τ = {s['tau']}, {s['rounds']} rounds ({s['steps']} local steps)"
    return table


def _grid(results=F.RESULTS) -> pd.DataFrame:
    """Every row of the stored larger-τ grid."""
    import json
    from pathlib import Path

    return pd.DataFrame(json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text()))


def _stored_rows(results=F.RESULTS) -> pd.DataFrame:
    """The stored larger-τ grid's rows of the four arms at its largest τ, with each row's arm name."""
    import json
    from pathlib import Path

    s = F.pubswap_setting(results)
    rows = pd.DataFrame(json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text()))
    rows = rows[rows.table.isin(["table1", "control"]) & (rows.tau == s["tau"]) & rows.method.isin(list(ARMS))]
    return rows.assign(arm=rows.method.map(ARMS))


ORDER = ["FedAvg-GRPO", "no-swap control", "PubSwap Balanced", "PubSwap Random"]
"""the stored figure's arms, left to right: FedAvg-GRPO, then the public steps alone, then with Balanced's swap"""


def stored_drift_figure(results=F.RESULTS) -> go.Figure:
    """Two panels over the stored τ's arms, y axes around the data (from 0 they flatten the differences): final δ_pair, and δ_pair divided by the update size u
    (each client's distance from the round's broadcast adapter, mean over clients) with √2, the ratio of updates of
    equal length in unrelated directions. One dot per seed; a solid grey line joins each seed that ran all four arms, a dashed one the
    seeds that ran only FedAvg-GRPO and Balanced; beside the dots each arm's mean with its 95 % t-interval."""
    from experiments.stats import t_interval

    s = F.pubswap_setting(results)
    rows = _stored_rows(results)
    rows = rows.assign(ratio=rows.drift_end_pairwise_effective / rows.drift_end_to_global_effective)
    x = {name: i for i, name in enumerate(ORDER)}
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["final δ_pair", "δ_pair / update size u (dotted: √2, unrelated)"])
    full = [seed for seed, d in rows.groupby("seed") if len(d) == len(ORDER)]
    first = {"full": True, "part": True}
    for seed, d in rows.groupby("seed"):
        d = d.set_index("arm").reindex(ORDER).dropna(subset=["seed"])
        kind = "full" if seed in full else "part"
        label = (f"one seed that ran all four arms ({len(full)} seeds)" if kind == "full" else
                 f"one seed that ran only FedAvg-GRPO and Balanced ({rows.seed.nunique() - len(full)} seeds)")
        for col, value in ((1, "drift_end_pairwise_effective"), (2, "ratio")):
            fig.add_trace(go.Scatter(x=[x[a] for a in d.index], y=d[value], mode="lines+markers", name=label,
                                     line=dict(color="#b8b8b8", width=1, dash="solid" if kind == "full" else "dash"),
                                     marker=dict(color="#808080", size=6), legendgroup=kind,
                                     showlegend=col == 1 and first[kind]), row=1, col=col)
        first[kind] = False
    for name in ORDER:
        for col, value in ((1, "drift_end_pairwise_effective"), (2, "ratio")):
            mean, half, n = t_interval(rows[rows.arm == name][value])
            fig.add_trace(go.Scatter(x=[x[name] + 0.2], y=[mean], mode="markers", legendgroup=name,
                                     marker=dict(color=COLOURS[name], size=12, symbol="diamond"),
                                     error_y=dict(type="data", array=[half], thickness=2, width=8),
                                     name=f"{name}: mean ± 95 % t-interval ({n} seeds)", showlegend=col == 1),
                          row=1, col=col)
    fig.add_hline(y=float(np.sqrt(2)), line=dict(color="#444", dash="dot"), row=1, col=2)
    low, high = int(rows.drift_end_pairwise_effective.min()) - 1, int(rows.drift_end_pairwise_effective.max()) + 2
    fig.update_layout(template="plotly_white", height=600, width=900, margin=dict(t=90, l=60),
                      legend=dict(font=dict(size=10), orientation="h", y=-0.16),
                      title=dict(text=f"stored runs at τ = {s['tau']} ({s['rounds']} rounds, {s['steps']} local "
                                      "steps), measured after each round's last step", x=0.02, y=0.97))
    fig.update_yaxes(title_text="final δ_pair (axis not from 0)", range=[low, high], row=1, col=1)
    fig.update_yaxes(title_text="δ_pair / u (0: identical)", range=[1.0, 1.5], row=1, col=2)
    fig.update_xaxes(tickvals=list(x.values()), ticktext=["FedAvg-<br>GRPO", "no-swap<br>control", "Balanced",
                                                         "Random"], tickangle=0, range=[-0.4, len(ORDER) - 0.4])
    return fig


def update_sizes(results=F.RESULTS) -> pd.DataFrame:
    """Per arm at the stored τ: final δ_pair, the update size u (mean over clients of ‖ΔW_n − ΔW_p‖_F, the distance
    from the round's broadcast adapter, ``drift.distance_to_global``) and their ratio, each the mean over the arm's
    seeds; the ratio is √2 for updates of equal length in unrelated directions and 0 for identical ones."""
    rows = _stored_rows(results)
    rows = rows.assign(ratio=rows.drift_end_pairwise_effective / rows.drift_end_to_global_effective)
    t = rows.groupby("arm")[["drift_end_pairwise_effective", "drift_end_to_global_effective", "ratio"]].mean()
    t = t.reindex(ORDER).rename(columns={"drift_end_pairwise_effective": "final δ_pair",
                                         "drift_end_to_global_effective": "update size u",
                                         "ratio": "δ_pair / u"})
    t.insert(0, "seeds", rows.groupby("arm").size().reindex(ORDER))
    return t.round({"final δ_pair": 2, "update size u": 2, "δ_pair / u": 2})


def exercise_update_size(results=F.RESULTS) -> tuple[str, str]:
    """Random's clients point more alike than FedAvg-GRPO's (lower δ_pair / u), yet its δ_pair is higher: what must
    its update size u be, "larger", "smaller" or "equal" to FedAvg-GRPO's? Since δ_pair = (δ_pair / u) · u, a lower
    ratio with a higher δ_pair needs a larger u; then u read off the table and as the runs measured it."""
    t = update_sizes(results)
    r, f = t.loc["PubSwap Random"], t.loc["FedAvg-GRPO"]
    ur, uf = r["final δ_pair"] / r["δ_pair / u"], f["final δ_pair"] / f["δ_pair / u"]
    word = "larger" if ur > uf * 1.02 else "smaller" if ur < uf / 1.02 else "equal"
    return word, (f"δ_pair = (δ_pair / u) · u: a lower ratio can give a higher δ_pair only if u is larger. Random: "
                  f"{r['final δ_pair']:.2f} ÷ {r['δ_pair / u']:.2f} ≈ {ur:.1f}; FedAvg-GRPO: {f['final δ_pair']:.2f} "
                  f"÷ {f['δ_pair / u']:.2f} ≈ {uf:.1f} (measured directly: {r['update size u']:.2f} against "
                  f"{f['update size u']:.2f}). Each Random client moves further, and the longer steps outweigh the "
                  "better alignment. Why they are longer these runs do not test. Drift alone would hide this: read it "
                  "beside u.")


def accuracy_claims(results=F.RESULTS) -> tuple[pd.DataFrame, Markdown]:
    """The paper's two accuracy claims against the stored grid at every τ it ran, as a table (one row per τ) and a
    verdict per claim. Balanced − FedAvg-GRPO and Random − Balanced pass@1, points, paired over seeds with the half-width
    of the 95 % t-interval. A Balanced − FedAvg-GRPO interval that contains 0 is *inconclusive* unless its upper end lies
    below the paper's median gain (Table 1), which then it rules out ("no paper-size gain"); a Random − Balanced one
    that contains 0 is inconclusive (the paper tables no size for it)."""
    from experiments.stats import sign_verdict
    from experiments.sweep import _compare

    t1 = _grid(results).query("table == 'table1'")
    taus = sorted(set(t1.query("method == 'pubswap_random'").tau) & set(t1.query("method == 'fedavg_grpo'").tau))
    median = float(np.median(F.pubswap_paper_gains().to_numpy()))
    steps = sorted({int(r.tau * r.rounds) for r in t1[t1.tau.isin(taus)].itertuples()})

    def diff(a, b, tau):
        mean, _, half, n = _compare(t1, {"method": a, "tau": tau}, {"method": b, "tau": tau}, "pass@1_final")
        return 100 * mean, 100 * half, n

    gain = {t: diff("pubswap_balanced", "fedavg_grpo", t) for t in taus}
    ctl = control_accuracy(results)
    rnd = {t: diff("pubswap_random", "pubswap_balanced", t) for t in taus}

    def gain_word(m, h):
        v = sign_verdict(m, h)
        return "a gain" if v > 0 else "a loss" if v < 0 else "no paper-size gain" if m + h < median else "inconclusive"

    def random_word(m, h):
        v = sign_verdict(m, h)
        return "Random better" if v > 0 else "Random worse" if v < 0 else "inconclusive"

    def cell(d, word):
        m, h, n = d
        return f"{m:+.2f} ± {h:.2f} ({n} seeds): {word(m, h)}"
    table = pd.DataFrame({"Balanced − FedAvg-GRPO": [cell(gain[t], gain_word) for t in taus],
                          "Random − Balanced": [cell(rnd[t], random_word) for t in taus],
                          "control − FedAvg-GRPO": [cell(ctl[t], random_word).replace("Random better", "control better")
                                                    .replace("Random worse", "control worse") if t in ctl else "not run"
                                                    for t in taus]},
                         index=pd.Index([f"τ = {t}" for t in taus], name="pass@1, points"))

    def at(words, word, among=taus):
        return [t for t in among if words[t] == word]
    g = {t: gain_word(*gain[t][:2]) for t in taus}
    r = {t: random_word(*rnd[t][:2]) for t in taus}
    small = [t for t in taus if t <= F.PUBSWAP_PAPER_TAUS[1]]  # our τ up to the paper's second, 40

    def listed(ts):
        return ", ".join(map(str, ts))
    if at(g, "a gain"):
        first = f"**holds** at τ = {listed(at(g, 'a gain'))}"
    elif at(g, "no paper-size gain"):
        t = at(g, "no paper-size gain")[-1]
        first = f"**not reproduced**: no τ shows a gain; at τ = {t} gains above {gain[t][0] + gain[t][1]:+.2f} points are ruled out"
    else:
        first = "**inconclusive** at every τ"
    if at(r, "Random better", small):
        second = f"**holds** at τ = {listed(at(r, 'Random better', small))}"
    elif at(r, "Random worse", small):
        second = f"**does not hold**: at τ = {listed(at(r, 'Random worse', small))} Random is worse"
    else:
        second = "**inconclusive**"
    note = Markdown(
        f"Every row here ran {' or '.join(map(str, steps))} local steps per client (all from the "
        f"{' or '.join(map(str, steps))}-step grid). *Balanced beats FedAvg-GRPO* "
        f"(the paper's median gain: {median:+.2f} points): {first}. *Random beats Balanced at small τ*: {second}.")
    return table, note


def control_accuracy(results=F.RESULTS) -> dict[int, tuple[float, float, int]]:
    """pass@1 of the no-swap control (PubSwap's private steps, no swap) minus FedAvg-GRPO's, points, paired by seed
    (mean, 95 % t half-width, seeds) at each τ where the control ran as long as the accuracy table's rows."""
    from experiments.sweep import _compare

    g = _grid(results)
    g = g[g.table.isin(["table1", "control"])]
    out = {}
    for tau in sorted(set(g.query("method == 'pubswap_noswap'").tau)):
        mean, _, half, n = _compare(g, {"method": "pubswap_noswap", "tau": tau}, {"method": "fedavg_grpo", "tau": tau},
                                    "pass@1_final")
        out[int(tau)] = (100 * mean, 100 * half, n)
    return out


def drift_demo() -> pd.DataFrame:
    """δ_pair and u for two clients whose ΔW is a 1 × 2 matrix (A 1 × 2, B 1 × 1, s = 1), the broadcast ΔW_p = 0,
    through ``drift.mean_pairwise_drift`` and ``drift.distance_to_global`` (u: their mean): updates of one length
    in unrelated, identical and opposite directions."""
    from fedrl_kit.drift import distance_to_global, mean_pairwise_drift

    cases = {"unrelated directions": ((3, 0), (0, 3)), "identical": ((3, 0), (3, 0)), "opposite": ((3, 0), (-3, 0))}

    def adapter(w):  # ΔW = B A = [w_1, w_2] with B = [[1]]
        return {"layer": (np.array([w], float), np.array([[1.0]]))}
    zero = adapter((0, 0))
    out = {}
    for name, (w1, w2) in cases.items():
        d = mean_pairwise_drift([adapter(w1), adapter(w2)])
        u = float(distance_to_global([adapter(w1), adapter(w2)], zero).mean())
        out[name] = {"ΔW_1": str(list(w1)), "ΔW_2": str(list(w2)), "δ_pair": round(d, 2), "u": round(u, 2),
                     "δ_pair / u": round(d / u, 2)}
    return pd.DataFrame(out).T


def exercise_bound(results=F.RESULTS) -> tuple[str, str]:
    """Which arm's bound on Δ_τ is smallest: the no-swap control, whose public steps drop ζ and, on its own
    answers, add no ω; with what the stored runs measured (Balanced − control, paired by seed), which an upper bound
    cannot rank."""
    f, _ = F.pubswap_teaching_tables(results)
    u = update_sizes(results)["final δ_pair"]
    return "no-swap control", (
        "FedAvg-GRPO adds ζ on every step. The three others add ζ only on private steps; on public steps Random and "
        "Balanced add ω_n + ω_n′ > 0, while the control trains on its own answers, so its ω_n = 0 and its public "
        "steps add nothing: its bound is the smallest. The stored runs (§5) disagree: mean final δ_pair, lowest "
        f"first: {', '.join(f'{a} {v:.2f}' for a, v in u.sort_values().items())}; Balanced − control "
        f"{_plain(f.loc['F2'])}. So the bound does not favour swapping, yet the runs do: why, in the next paragraph.")


# -- §3: one swap, step by step ---------------------------------------------------------------------------------------
def correct_table(gen) -> pd.DataFrame:
    """c_n(x): each client's right answers (of K) per public prompt, with the prompt's gold answer."""
    t = pd.DataFrame({cid: [int(sum(c)) for c in g["correct"]] for cid, g in zip(gen.client_ids, gen.generated)},
                     index=[f"{x} (gold {a})" for x, a in zip(gen.batch["prompt"], gen.batch["answer"])])
    t.index.name = f"c_n(x): right answers out of K = {gen.num_generations}"
    return t


def example_prompt(correct: pd.DataFrame, K: int) -> int:
    """A prompt where client 0 has fewer than K/2 right and others have some: Balanced has work to do there."""
    c0, others = correct.iloc[:, 0].to_numpy(), correct.iloc[:, 1:].sum(axis=1).to_numpy()
    wanted = (c0 < K // 2) & (others > 0)
    return int(np.argmax(wanted * (K - c0))) if wanted.any() else 0


def widget_prompt(correct: pd.DataFrame, K: int, avoid: int) -> int:
    """The widget's first prompt: one (not ``avoid``) where client 0 lacks right answers and the others hold enough
    to fill the gap, so its static view shows a swap that §3's worked example does not. Falls back to ``avoid``."""
    c0, others = correct.iloc[:, 0].to_numpy(), correct.iloc[:, 1:].sum(axis=1).to_numpy()
    gap = np.maximum(K // 2 - c0, 0)
    ok = (gap > 0) & (others >= gap) & (np.arange(len(c0)) != avoid)
    return int(np.argmax(ok * gap)) if ok.any() else avoid


def m_by_hand(correct: pd.DataFrame, client: int, prompt: int, K: int) -> tuple[int, str]:
    """M_n(x) = min((⌊K/2⌋ − c_n(x))+, D_n(x)) computed by hand, and the line that shows it."""
    c = int(correct.iloc[prompt, client])
    D = int(correct.iloc[prompt].sum()) - c
    M = min(max(K // 2 - c, 0), D)
    return M, f"c_{client}(x) = {c}, D_{client}(x) = {D}: M_{client}(x) = min(({K // 2} − {c})+, {D}) = {M}"


def code_excerpt(func, first: str, last: str) -> Markdown:
    """The lines of ``func``'s source from the one containing ``first`` to the one containing ``last``."""
    import inspect
    import textwrap

    lines = inspect.getsource(func).splitlines()
    i = next(k for k, l in enumerate(lines) if first in l)
    j = next(k for k, l in enumerate(lines) if last in l and k >= i)
    return Markdown(f"`{func.__module__}.{func.__name__}`:\n```python\n"
                    + textwrap.dedent("\n".join(lines[i:j + 1])) + "\n```")


def random_view(view: pd.DataFrame, cid: str) -> pd.DataFrame:
    """Random's group as ``group_table`` gives it, without the client's own answer beside each slot: Random draws a
    new group from the pool, so a slot has no own answer it replaced, and an own answer drawn back may sit in another
    slot. "from" names the client for its own answers too ("client_0 (own) #7")."""
    out = view.drop(columns=["own answer", "own correct"])
    out["from"] = [f"{cid} (own) #{f.split('#')[1]}" if f.startswith("own ") else f for f in out["from"]]
    out.attrs = dict(view.attrs)
    return out


def swap_widget(gen, prompt: int):
    """The swap widget's update function and its controls: rule, K (each client's first K answers), client, prompt."""
    import ipywidgets as widgets

    from fedrl_kit.pubswap.public_step import group_table, swap_public

    cids, K = gen.client_ids, gen.num_generations

    def show_swap(rule, K, client, prompt, summary=False):
        res = swap_public(gen, rule, K)
        v = group_table(gen, res, client, prompt)
        print(f"{rule}, K = {K}: {cids[client]} on {gen.batch['prompt'][prompt]!r}: swapped fraction f_n = "
              f"{v.attrs['alpha']:.3f}")
        display(random_view(v, cids[client]) if rule == "random" else v)
        if summary:
            display(pd.DataFrame({"f_n (mean over prompts)": np.mean([r.replacement_fraction for r in res], axis=0),
                                  "right answers in the group (mean)": np.mean([r.correct.sum(axis=1) for r in res],
                                                                               axis=0)}, index=cids).T.round(3))

    controls = dict(rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")]),
                    K=widgets.IntSlider(K, 2, K, continuous_update=False),
                    client=widgets.Dropdown(options=[(c, i) for i, c in enumerate(cids)], value=0),
                    prompt=widgets.Dropdown(options=[(x, i) for i, x in enumerate(gen.batch["prompt"])], value=prompt))
    return show_swap, controls


def random_group_note(gen, correct: pd.DataFrame, prompt: int) -> Markdown:
    """What Random's one group holds on ``prompt`` against the pool, and whether it has any spread."""
    from fedrl_kit.pubswap.public_step import swap_public

    K, N = gen.num_generations, len(gen.client_ids)
    group = swap_public(gen, "random", K)[prompt].correct[0]  # [K] the one group every client gets
    pool = int(correct.iloc[prompt].sum())
    text = (f"On {gen.batch['prompt'][prompt]!r} the clients' {N * K} answers hold {pool} right ones. Random's group "
            f"of {K} holds {int(group.sum())}. ")
    if group.all() or not group.any():
        text += ("So all its rewards are equal, and every advantage is 0. **No client gets a gradient** from this "
                 "prompt. Balanced instead copies those right answers into every group short of half right (one answer can "
                 "go to several clients).")
    else:
        text += "Its rewards differ, so the group has a gradient."
    return Markdown(text)


# -- the exercises' answers -----------------------------------------------------------------------------------------
def random_alpha_line(gen, swaps, prompt: int, client: int = 0) -> Markdown:
    """Client ``client``'s f_n(x) under Random on ``prompt``: the share of the one group not from it."""
    K = gen.num_generations
    alpha = float(swaps["random"][prompt].replacement_fraction[client])
    return Markdown(f"Under Random, {gen.client_ids[client]} on {gen.batch['prompt'][prompt]!r}: "
                    f"f_{client}(x) = {round(alpha * K)}/{K} = {alpha:.3f}.")


def exercise_random_share(gen, swaps, prompt: int, client: int = 0) -> tuple[float, str]:
    """E[f_n] under Random, over its draws: 1 − 1/N (each drawn slot is foreign with probability (N−1)/N), with the
    range α_n can take and the value of this draw."""
    alphas = np.array([r.replacement_fraction[client] for r in swaps["random"]])  # [b] this client, every prompt
    N, K = len(gen.client_ids), gen.num_generations
    here = float(alphas[prompt])
    return round(1 - 1 / N, 2), (
        f"Random draws K = {K} of the N·K = {N * K} pooled answers; each drawn slot is another client's with "
        f"probability (N−1)/N, so E[f_n] = 1 − 1/N = {1 - 1 / N:.2f}. {gen.client_ids[client]} has K answers in the "
        f"pool, so the group may hold all of them or none: f_n runs from 0 to 1 in steps of 1/K (Balanced: at most "
        f"1/2). Here f_{client}(x) = {here:.3f} is one draw; over these prompts it ran from {alphas.min():.3f} to "
        f"{alphas.max():.3f}.")


class ClientSet(set):
    """A set of client names that prints sorted, so that a stored answer reads the same on every run."""

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(c) for c in sorted(self)) + "}"


def _has_gradient(right: int, K: int) -> bool:
    """A group gives a gradient only if its rewards differ: some right and some wrong answers."""
    return 0 < right < K


def gradient_prompt(correct: pd.DataFrame, K: int, avoid: tuple[int, ...]) -> int:
    """A prompt of the c_n(x) table, none of ``avoid``, on which Balanced gives a gradient to clients that had none
    (all their answers wrong), preferring one where some client still gets none (all right: Balanced only adds right
    answers). Falls back to the first prompt not avoided."""
    def score(x):
        c = correct.iloc[x].to_numpy()
        D = c.sum() - c
        M = np.minimum(np.maximum(K // 2 - c, 0), D)
        rescued = sum(not _has_gradient(ci, K) and _has_gradient(ci + mi, K) for ci, mi in zip(c, M))
        left = sum(not _has_gradient(ci + mi, K) for ci, mi in zip(c, M))
        return 2 * rescued + (left > 0 and rescued > 0)
    cands = [x for x in range(len(correct)) if x not in avoid]
    return max(cands, key=score) if cands else 0


def exercise_gradient(swaps, correct: pd.DataFrame, prompt: int, K: int) -> tuple[tuple[set, set], str]:
    """Which clients get a gradient on ``prompt`` under the no-swap control (their own group) and under Balanced (the
    package's swapped group): a client's right answers c_n(x), then c_n(x) + M_n(x) by hand, against the group the
    package built. Names any prompt of the table where a client got all K right, which no swap can help."""
    cids = list(correct.columns)
    group = swaps["balanced"][prompt].correct  # [N, K] the groups Balanced built
    own = ClientSet(c for c, n in zip(cids, correct.iloc[prompt]) if _has_gradient(int(n), K))
    swapped = ClientSet(c for c, g in zip(cids, group) if _has_gradient(int(g.sum()), K))
    parts = []
    for n, cid in enumerate(cids):
        c = int(correct.iloc[prompt, n])
        M = min(max(K // 2 - c, 0), int(correct.iloc[prompt].sum()) - c)
        parts.append(f"{cid}: {c} right" + (f" + {M} swapped in = {c + M}" if M else "")
                     + f" of {K} → {'a gradient' if _has_gradient(c + M, K) else 'none'}")
    full = [f"{x.split(' (gold')[0]!r} ({', '.join(c for c, v in zip(cids, row) if int(v) == K)})"
            for x, row in correct.iterrows() if (row.astype(int) == K).any()]
    return (own, swapped), (
        f"(a) the control keeps each client's own answers, which give a gradient where 0 < c_n(x) < {K}: "
        f"{', '.join(sorted(own)) or 'no client'}. (b) Balanced: " + "; ".join(parts) + ". A client whose answers "
        "are all wrong learns nothing from the prompt until right answers are swapped in. An all-right group stays "
        "without a gradient: Balanced only adds right answers"
        + (f" (all {K} right in this table: {'; '.join(full)})" if full else "") + ".")


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
        "There no group Random draws has spread, and Balanced has no right answer to swap in (or no wrong one to "
        "replace); everywhere else Balanced tops every short group up, so both counts are the same. Random can lose "
        f"more by chance: this draw left {len(rnd)} without gradient, adding {', '.join(chance) or 'none'}. "
        "Random shares more, but a shared group can hold no right answer for anyone.")


# -- what the reproduction found --------------------------------------------------------------------------------------
def _plain(row, unit: str = "") -> str:
    """A paired difference as "−1.56 ± 0.55 (5 seeds)", with ": inconclusive" when the interval contains 0."""
    d, h, n = row["difference"], row["±95% t"], int(row["seeds"])
    unit = f" {unit}" if unit else ""
    return f"{d:+.2f} ± {h:.2f}{unit} ({n} seeds){': inconclusive' if abs(d) <= h else ''}"


def control_seeds_gain(results=F.RESULTS) -> float:
    """Balanced − FedAvg-GRPO in final δ_pair at the stored τ, mean over the seeds the no-swap control ran (paired by
    seed): the sum of the split's two parts on those seeds, which differs from finding 1's mean over more seeds."""
    rows = _stored_rows(results)
    by = rows.pivot_table(index="seed", columns="arm", values="drift_end_pairwise_effective")  # [seeds, arms]
    both = by.dropna(subset=["no-swap control", "PubSwap Balanced", "FedAvg-GRPO"])
    return float((both["PubSwap Balanced"] - both["FedAvg-GRPO"]).mean())


def drift_findings() -> Markdown:
    """Two drift findings at the stored grid's largest τ, one short sentence each, linking the report: Balanced lowers
    drift with updates as long (so they point more alike); Random does not (its clients point more alike but move
    further, exercise 6). Each difference is the first arm minus the second, paired by seed, with the half-width of its
    95 % t-interval; *inconclusive* where that interval contains 0. Where Balanced's cut comes from is the split
    table's (``drift_split``)."""
    f, r = F.pubswap_teaching_tables()
    s = F.pubswap_setting()
    u = update_sizes()
    return Markdown(
        f"> **At τ = {s['tau']}**, paired by seed (± 95 % t; [report §5]({REPORT}#findings)): Balanced − FedAvg-GRPO "
        f"{_plain(f.loc['F1'])}, with updates as long (u {u.loc['PubSwap Balanced', 'update size u']:.2f} against "
        f"{u.loc['FedAvg-GRPO', 'update size u']:.2f}), so they point more alike. Random − FedAvg-GRPO "
        f"{_plain(r.loc['R2'])}; its clients point more alike but move further (exercise 6).")


def drift_split(results=F.RESULTS) -> tuple[pd.DataFrame, Markdown]:
    """Balanced's drift cut split at every stored τ that ran the no-swap control (``findings.pubswap_drift_split``):
    the shared prompts (control − FedAvg-GRPO) and the swap (Balanced − control), paired by seed, ± the 95 %
    t half-width, *inconclusive* where the interval contains 0; one row per τ with its run length, which differs
    between rows, FedAvg-GRPO's final δ_pair on the same seeds, and each part as a share of it (so rows of different
    length compare). Under it, at which τ each part's interval excludes 0, on how many seeds, and how loosely to read
    that."""
    split = F.pubswap_drift_split(results)

    def cell(d, h):
        return f"{d:+.2f} ± {h:.2f}" + (": inconclusive" if abs(d) <= h else "")
    cols = {"shared prompts: control − FedAvg-GRPO": ("public steps: control − FedAvg-GRPO", "±95% t (public steps)"),
            "swap: Balanced − control": ("swap: Balanced − control", "±95% t (swap)")}
    base = split_drift(results)
    (pa, pb), (sa, sb) = cols["shared prompts: control − FedAvg-GRPO"], cols["swap: Balanced − control"]
    table = pd.DataFrame({"local steps per client": split["local steps per client"].to_numpy(),
                          "FedAvg-GRPO's δ_pair": [f"{base[t]:.2f}" for t in split.index],
                          **{name: [cell(d, h) for d, h in zip(split[a], split[b])] for name, (a, b) in cols.items()},
                          "in % of FedAvg-GRPO's δ_pair: shared · swap": [
                              f"{100 * p / base[t]:+.0f} % · {100 * w / base[t]:+.0f} %"
                              for t, p, w in zip(split.index, split[pa], split[sa])]},
                         index=pd.Index([f"τ = {t}" for t in split.index], name="final δ_pair, paired by seed"))

    def firm(a, b):
        taus = [str(t) for t, d, h in zip(split.index, split[a], split[b]) if abs(d) > h]
        return f"τ = {', '.join(taus)}" if taus else "no τ"
    seeds = int(split["seeds"].min())
    s = F.pubswap_setting(results)
    most = max(len(v) for v in s["seeds"].values())
    grids = split.groupby("local steps per client").apply(lambda d: ", ".join(map(str, d.index)))
    short, long = grids.index.min(), grids.index.max()
    note = Markdown(f"The swap's interval excludes 0 at {firm(sa, sb)}, the shared prompts' at {firm(pa, pb)}. "
                    f"With {seeds} seeds a row can flip by chance (every row pairs the {seeds} seeds the control ran; "
                    f"the finding above paired {most} at τ = {s['tau']}). Two stored grids: the {long}-step one ran "
                    f"the control only at τ = {grids[long]}, so τ = {grids[short]} come from the earlier {short}-step "
                    "grid; the last column, in % of FedAvg-GRPO's δ_pair, lets rows of different length compare.")
    return table, note


def split_drift(results=F.RESULTS) -> dict[int, float]:
    """Per τ that ran the no-swap control: FedAvg-GRPO's final δ_pair, mean over the seeds the control ran (the
    seeds the split pairs), the yardstick that makes the split's rows of different length compare."""
    return {t: float(v) for t, v in _split_means(results)["fedavg_grpo"].items()}


def _split_means(results=F.RESULTS, ratio: bool = False) -> pd.DataFrame:
    """[τ, method] final δ_pair (or δ_pair / u with ``ratio``) of FedAvg-GRPO, the control and Balanced, mean over
    the seeds the control ran at that τ."""
    import json
    from pathlib import Path

    out = {}
    for name in F.PUBSWAP_RESULTS:
        rows = pd.DataFrame(json.loads((Path(results) / name).read_text()))
        rows = rows[rows.method.isin(["fedavg_grpo", "pubswap_noswap", "pubswap_balanced"])
                    & rows.table.isin(["table1", "control"])]
        for tau in sorted(rows[rows.method == "pubswap_noswap"].tau.unique()):
            r = rows[rows.tau == tau]
            r = r[r.seed.isin(set(r[r.method == "pubswap_noswap"].seed))]
            v = r.drift_end_pairwise_effective / (r.drift_end_to_global_effective if ratio else 1)
            out[int(tau)] = v.groupby(r.method).mean()
    return pd.DataFrame(out).T


def split_ratios(results=F.RESULTS) -> dict[int, str]:
    """Per τ that ran the no-swap control: FedAvg-GRPO's, the control's and Balanced's final δ_pair / u (mean over
    the seeds the control ran), as "1.38 · 1.33 · 1.26": scale-free, so it compares across rows of different length."""
    m = _split_means(results, ratio=True)
    return {int(t): " · ".join(f"{row[k]:.2f}" for k in ("fedavg_grpo", "pubswap_noswap", "pubswap_balanced"))
            for t, row in m.iterrows()}


PAPER_STEPS = 360
"""local steps per client in the paper's math runs (its §4: 360 GRPO steps)"""


def accuracy_table(results=F.RESULTS) -> pd.DataFrame:
    """pass@1 at the end per arm in the stored runs (mean ± 95 % t-interval over seeds, points) and Balanced −
    FedAvg-GRPO paired by seed, beside the paper's Table 1 difference for the same comparison (Qwen3-1.7B on MATH at
    its two long-round τ). The paper's levels are left out: a 1.7B model on MATH and a small transformer on toy
    arithmetic share no scale, only the sign and size of a difference compare. Five rows."""
    from experiments.stats import t_interval

    s = F.pubswap_setting(results)
    rows = _stored_rows(results)
    f, _ = F.pubswap_teaching_tables(results)
    paper = F.PUBSWAP_PAPER_TABLE1[("Qwen3-1.7B", "MATH")]
    long = [F.PUBSWAP_PAPER_TAUS.index(t) for t in F.PUBSWAP_PAPER_TAUS[-2:]]
    ours_drift, ours_acc = f"ours, τ = {s['tau']}: final δ_pair", f"ours, τ = {s['tau']}: pass@1 (%, mean ± 95 % t)"
    theirs_col = (f"paper, Qwen3-1.7B on MATH, τ = {', '.join(str(F.PUBSWAP_PAPER_TAUS[i]) for i in long)}: "
                  "Balanced − FedAvg-GRPO pass@1 only (points)")
    out = {}
    for name in ("FedAvg-GRPO", "no-swap control", "PubSwap Balanced", "PubSwap Random"):
        mean, half, n = t_interval(100 * rows[rows.arm == name]["pass@1_final"])
        theirs = ("not tabled (its text: Random beats Balanced at τ = 10, 40)" if name == "PubSwap Random" else
                  "not run (our control)" if name not in paper else "—")
        d = rows[rows.arm == name].drift_end_pairwise_effective.mean()
        out[name] = {"seeds": n, ours_drift: f"{d:.2f}", ours_acc: f"{mean:.1f} ± {half:.1f}", theirs_col: theirs}
    gain = f.loc["F4"]
    out["Balanced − FedAvg-GRPO (paired)"] = {
        "seeds": int(gain["seeds"]), ours_drift: f"{f.loc['F1', 'difference']:+.2f}",
        ours_acc: f"{gain['difference']:+.2f} ± {gain['±95% t']:.2f}",
        theirs_col: ", ".join(f"{paper['PubSwap Balanced'][i] - paper['FedAvg-GRPO'][i]:+.1f}" for i in long)}
    return pd.DataFrame(out).T


def drift_accuracy_note(results=F.RESULTS) -> Markdown:
    """Why lower drift bought no accuracy: the reasons we can name, untested, among them the private steps PubSwap
    gives up (counted from the stored runs' τ, τ_swap and rounds) and the size of Balanced's cut."""
    from fedrl_kit.pubswap.method import is_public_step

    s = F.pubswap_setting(results)
    public = sum(is_public_step(j, s["period"]) for j in range(s["tau"]))  # public steps per round
    f, _ = F.pubswap_teaching_tables(results)
    share = abs(f.loc["F1", "difference"]) / update_sizes(results).loc["FedAvg-GRPO", "final δ_pair"]
    c = control_accuracy(results)[s["tau"]]
    return Markdown(
        "**Why did lower drift buy no accuracy?** Three reasons we can name, none settled:\n\n"
        f"- **Fewer private steps.** At τ = {s['tau']} a PubSwap client takes {s['tau'] - public} private steps a "
        f"round, FedAvg-GRPO's {s['tau']}. The control takes as few without swapping; its pass@1 − FedAvg-GRPO's "
        f"(last column) is {c[0]:+.2f} ± {c[1]:.2f} points ({c[2]} seeds)"
        f"{': inconclusive, so this reason is neither shown nor ruled out' if abs(c[0]) <= c[1] else ''}.\n"
        f"- **A small cut.** Balanced removes {share:.0%} of the drift, and δ_pair is not all that spoils FedIT's "
        "average: it misses the factors' cross terms (§4).\n"
        "- **Off-policy answers.** A client trains on others' answers as if it had sampled them.")


# -- the report's section behind the findings (notebook 12) ---------------------------------------------------------
def report_notes(results=F.RESULTS) -> Markdown:
    """How the findings' tables fit together: arm levels against paired differences (different seed sets), the stored
    drift ranking and how firm Random's place in it is, and the untrained policy's stored pass@1."""
    f, r = F.pubswap_teaching_tables(results, digits=3)
    levels = F.pubswap_arm_levels(results)
    lv = levels["δ_pair at the end, mean ± SD"].str.split(" ± ").str[0].astype(float)
    start = F.pubswap_start_pass1(0, results)
    p = start["mean"] / 100
    se_one = 100 * np.sqrt(p * (1 - p) / start["n_test"])
    b, c = lv["PubSwap Balanced"], lv["no-swap control"]
    return Markdown(
        f"- **Seeds.** The levels give Balanced − control = {b:.2f} − {c:.2f} = {b - c:.2f}; F2 gives "
        f"{f.loc['F2', 'difference']:.2f}. Balanced's level averages {levels.loc['PubSwap Balanced', 'seeds']} seeds, "
        f"F2 pairs the {int(f.loc['F2', 'seeds'])} seeds both arms ran.\n"
        f"- **Ranking.** Mean final δ_pair, lowest first: {', '.join(f'{a} {v:.2f}' for a, v in lv.sort_values().items())}. "
        f"Random's top place is not firm: R1, Random − Balanced, is "
        f"{F.interval_words(r.loc['R1', 'difference'], r.loc['R1', '±95% t'], int(r.loc['R1', 'seeds']), '‖ΔW‖', 3)}. "
        "A single seed's "
        "one short round (notebook 02, §4) can rank Random lowest.\n"
        f"- **Start.** The untrained policy scores {start['at_seed']} % at seed 0 and {start['mean']} % over "
        f"{start['seeds']} seeds ({start['n_test']} test problems × {start['samples']} samples). Notebook 02's one-round "
        f"runs score one sample per problem, whose standard error is about {se_one:.1f} points: their start differs "
        "from these by noise.")


def firm_sentence(results=F.RESULTS) -> str:
    """At which stored τ each part of Balanced's drift cut (the swap, the shared prompts) has an interval that excludes
    0, as one sentence that names every τ."""
    split = F.pubswap_drift_split(results)

    def firm(a, b):
        return [t for t, d, h in zip(split.index, split[a], split[b]) if abs(d) > h]
    swap = firm("swap: Balanced − control", "±95% t (swap)")
    shared = firm("public steps: control − FedAvg-GRPO", "±95% t (public steps)")

    def taus(ts):
        return "τ = " + ", ".join(map(str, ts)) if ts else "no τ"
    seeds = int(split["seeds"].min())
    return (f"Which part of the cut has a 95 % interval excluding 0 ({seeds} seeds each, so read loosely) depends on "
            f"τ: the swap's at {taus(swap)}, the shared prompts' at {taus(shared)}.")


def remember_note(results=F.RESULTS) -> Markdown:
    """"What to remember" after its first bullet, one short idea each: the stored drift result read beside the update
    size, what the bound cannot say, and the accuracy result."""
    s = F.pubswap_setting(results)
    return Markdown(
        f"- At τ = {s['tau']} Balanced lowered drift with updates as long as FedAvg-GRPO's: its clients point more "
        "alike. Read drift beside the update size u.\n"
        "- The bound favours the no-swap control; the runs favour Balanced. The shared pull is not in the bound.\n"
        "- No accuracy gain at this scale.")


def exercise_top_up(K: int = 8, c: tuple[int, ...] = (0, 0, 0, 8), seed: int = 0) -> tuple[tuple[int, ...], str]:
    """Exercise 6: on a prompt where client n has ``c[n]`` right answers of K, how many answers M_n does Balanced
    swap into each client's group (``swap.balanced_swap`` on a made-up pool), M_n by hand per client, and what that
    does to the gradients and to where the clients are pulled."""
    from fedrl_kit.pubswap.swap import ResponsePool, balanced_swap

    correct = np.array([[k < cn for k in range(K)] for cn in c])  # [N, K]
    texts = [[f"c{n}#{k}" for k in range(K)] for n in range(len(c))]
    res = balanced_swap(ResponsePool(texts, correct), K, np.random.default_rng(seed))
    m = tuple(int(round(a * K)) for a in res.replacement_fraction)
    donors = sorted({f"client_{j}" for n in range(len(c)) for j, _ in res.source[n] if j != n})
    grad = [f"client_{n}" for n in range(len(c)) if 0 < int(res.correct[n].sum()) < K]
    by_hand = "; ".join(f"client_{n}: min(({K // 2} − {cn})+, {sum(c) - cn}) = {mn}" for n, (cn, mn) in
                        enumerate(zip(c, m)))
    return m, (
        f"M_n = min((⌊K/2⌋ − c_n)_+, D_n): {by_hand}. The target is ⌊{K}/2⌋ = {K // 2} right; a client already "
        f"there keeps its group (Balanced only adds right answers, so an all-right group stays without gradient). "
        f"Donors in this draw: {', '.join(donors) or 'none'}. Gradients now: {', '.join(grad) or 'none'}. Every client with a "
        "gradient now raises right answers to the same prompt (on arithmetic, mostly the same string): the shared "
        "pull.")


def exercise_fedit(clients=((2.0, 2.0), (-1.0, -4.0))) -> tuple[tuple[float, float], str]:
    """Exercise 6: two clients' 1 × 1 LoRA factors (B_n, A_n), s = 1, through ``aggregate.fedit``: FedIT's product of
    the averaged factors against the mean of the clients' ΔW_n = B_n A_n, with the four cross terms that make it."""
    from fedrl_kit.aggregate import fedit

    avg = fedit([{"A": np.array([[a]], np.float32), "B": np.array([[b]], np.float32)} for b, a in clients])
    product = float(avg["B"][0, 0] * avg["A"][0, 0])
    mean_dw = float(np.mean([b * a for b, a in clients]))
    terms = " + ".join(f"({b:g})({a:g})" for b, _ in clients for _, a in clients)
    return (round(product, 4), round(mean_dw, 4)), (
        f"mean(B) · mean(A) = (1/N²) Σ_n,n′ B_n A_n′ = ({terms}) / {len(clients) ** 2} = {product:g}, while both "
        f"clients learned ΔW = {mean_dw:g}. The cross terms B_n A_n′ belong to no client; here they flip the sign. "
        "δ_pair is 0 (ΔW_1 = ΔW_2), so a drift measure on ΔW cannot warn of this: the factors disagree, not the "
        "updates.")


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
