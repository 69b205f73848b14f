"""Notebook 03's (FedMOA) sentences, tables and figures, so that each of its cells is a line or two.

Each helper returns an ``IPython.display.Markdown``, a small DataFrame or a plotly figure built from the notebook's
quick run or from the stored ``cpu`` grid; the method's own calls (eqs. 10–12) stay in the notebook's step-throughs.
The grid's Fig. 3 and Fig. 5 analogues (FedAvg-GRPO against FedMOA) and the first boundary that Exercise 7 reads are
drawn here too; the detailed tables (intervals, the drain's split, the ablation arms, every λ) are drawn by the report
notebook 13, with the helpers at the end of this module.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import Markdown

from experiments import fedmoa_analysis as analysis
from experiments.fedmoa_analysis import PAPER_TABLE1, PAPER_TABLE2
from experiments.fedmoa_pareto import non_dominated, pareto_front_order
from experiments.findings import (RESULTS, fedmoa_ablation_findings, fedmoa_claim_interval, fedmoa_findings,
                                  fedmoa_setting, fedmoa_weight_split_findings, interval_words, labelled)
from experiments.stats import detectable_effect, t_interval
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES

METHODS = ["FedAvg-GRPO", "FedMOA"]
REPORT = "13_fedmoa_report.ipynb"
F2_CLAIM = "FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter"
"""the claim whose unrounded interval F2 quotes (a reward's digits)"""


def stored_grid() -> dict:
    """The stored ``cpu`` grid (benchmarks/results/fedmoa_compare_cpu.json)."""
    return json.loads((RESULTS / "fedmoa_compare_cpu.json").read_text())


# -- the notebook's setup and the paper's claims ----------------------------------------------------------------------
SCALE = {"quick": "quick", "smoke": "smoke", "full": "paper", "full-smoke": "paper-smoke"}
"""the notebook's presets → fedmoa_presets' scales"""


def config_maker(seed: int, normalise: bool = False, lam: float = 0.1):
    """``make_config(preset, variant)`` for one run of the paper's Heter+Heter federation at a preset's scale;
    stops the notebook with a plain message when the CPU presets' base policy is missing."""
    from experiments.fedmoa_presets import setting_config
    from fedrl_kit import notebook
    from fedrl_kit.policy.pretrain_families import MISSING_MESSAGE
    from fedrl_kit.runs import REPO_ROOT

    fedmoa = dict(normalise=True, lam=lam, lam_rule="fixed") if normalise else {}

    def make_config(preset: str, variant: str = "FedMOA"):
        scale = SCALE[preset]
        if not scale.startswith("paper") and not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
            raise notebook.NotebookStop(" ".join(MISSING_MESSAGE.format(path="data/base_moa").split()))
        return setting_config(scale, "heter+heter", variant, seed, fedmoa=fedmoa)

    return make_config


def paper_claim(figure: int) -> Markdown:
    """The paper's claim for its Fig. 3 or Fig. 5 in one sentence, with its numbers where it gives any."""
    if figure == 3:
        (a0, r0), (a1, r1) = PAPER_TABLE1[("heter+heter", "math")]
        return Markdown(f"**The paper's claim (Fig. 3, MATH, Heter+Heter):** FedMOA's global model ends nearer the "
                        f"front than FedAvg-GRPO's, with higher accuracy and no lower format reward (its Table 1: "
                        f"accuracy {a0:.1f} → {a1:.1f} %, aggregated reward {r0:.3f} → {r1:.3f}).")
    return Markdown("**The paper's claim (Fig. 5, GSM8K):** w_acc rises within every round, by less each round, "
                    "while format and tag count fall once they saturate (the text gives no numbers).")


# -- the quick run ----------------------------------------------------------------------------------------------------
def run_methods(make_config, preset: str, run_root, methods=METHODS) -> dict:
    """Train each method on the same federation: name → (Run, its per-round records)."""
    from fedrl_kit import notebook
    from fedrl_kit.runs import Run

    runs = {}
    for name in methods:
        run_dir = notebook.start_run_dir(run_root / name)  # empties only a run folder this toolkit wrote
        run = Run(make_config(preset, name), run_dir, progress=False)
        runs[name] = (run, run.run())
    return runs


def clients_table(run) -> pd.DataFrame:
    """One row per client: the dataset its family stands for, its cluster S_c (clients sharing an accuracy reward),
    its reward config, rewards, data size N_m and its round-1 weights in the order of its rewards."""
    info = pd.DataFrame(analysis.client_info(run)).set_index("client")
    accs = list(dict.fromkeys(r.split(", ")[0] for r in info.rewards))
    info["cluster"] = [f"{accs.index(r.split(', ')[0])} ({r.split(', ')[0]})" for r in info.rewards]
    info["initial w (same order)"] = [" / ".join(f"{w:.3g}" for w in run.clients[c].initial_weights)
                                      for c in info.index]
    return info[["stands_for", "cluster", "config", "rewards", "examples", "initial w (same order)"]]


def run_summary(runs: dict) -> pd.DataFrame:
    """Each method's last round: the global model's pass@1 and its aggregated reward."""
    summary = pd.DataFrame({name: analysis.summary(recs) for name, (run, recs) in runs.items()}).T
    return summary[["global_accuracy", "aggregated_reward"]].astype(float).round(3)


def run_words(cfg, runs: dict) -> Markdown:
    """The run's size in one line, and the methods' accuracy gap in right answers: one seed's noise."""
    summary = run_summary(runs)
    answers = len(FAMILIES) * (cfg.n_test // len(FAMILIES)) * cfg.eval_samples  # scored answers of global_accuracy
    gap = summary.loc["FedMOA", "global_accuracy"] - summary.loc["FedAvg-GRPO", "global_accuracy"]
    seeds = {r["seed"] for r in stored_grid()["runs"] if r["setting"] == "heter+heter" and r["variant"] == "FedMOA"}
    return Markdown(
        f"{cfg.num_clients} clients, {cfg.rounds} rounds of τ = {cfg.local_steps} local steps, each on "
        f"{cfg.prompts_per_step} prompts × G = {cfg.num_generations} answers. FedMOA scores {signed(gap * answers, 0)} "
        f"right answers against FedAvg-GRPO, of the {answers} scored: on one seed of a run this small, that is noise. "
        f"§6 compares the two over {len(seeds)} seeds of a larger federation.")


def round_end_weights(records: list[dict], round: int = 1) -> pd.DataFrame:
    """Each client's weights after its last local step of ``round`` (what it sends the server): client × reward."""
    wh = pd.DataFrame(analysis.weight_history(records))
    end = wh[(wh["round"] == round) & (wh.step == wh.step.max())]
    return end.pivot_table(index="client", columns="reward", values="weight")


def sent_weights(records: list[dict], round: int = 2) -> pd.DataFrame:
    """The weights each client started ``round`` from, as the server sent them (eq. 12): client × reward."""
    wh = pd.DataFrame(analysis.weight_history(records))
    start = wh[(wh["round"] == round) & (wh.step == 0)]  # a round's first step leaves w as sent
    return start.pivot_table(index="client", columns="reward", values="weight")


def cluster_of(run, cid: str) -> list[str]:
    """``cid`` and the clients sharing its accuracy reward (its cluster S_c), in client order."""
    names = {c["client"]: c["rewards"].split(", ") for c in analysis.client_info(run)}
    return [c for c in names if names[c][0] == names[cid][0]]


def alpha_words(run, records: list[dict], cluster: list[str], alpha) -> Markdown:
    """What these round-1 α reflect: the clients' initial w_acc, since eq. 10 barely moved them (unlike §3's
    intended case, where a vanished accuracy gradient lowers w_acc)."""
    end = round_end_weights(records, 1).loc[cluster, "accuracy"]
    start = pd.Series({c: run.clients[c].initial_weights[0] for c in cluster})
    moved = float((end - start).abs().max())
    a = pd.Series(np.asarray(alpha, dtype=float), index=cluster)
    groups = [f"{' and '.join(ids)} started at w_acc = {w:g} and get α ≈ {a[ids].mean():.2f}"
              for w, ids in ((w, list(start.index[start == w])) for w in sorted(start.unique()))]
    return Markdown(f"Unlike §3's intended case, these α reflect the starting weights, not progress: in round 1, eq. 10 "
                    f"moved no w_acc of this cluster by more than {moved:.4f}. So {'; '.join(groups)}, from their "
                    "reward configuration alone.")


def side_by_side(cfg, run, records: list[dict]) -> Markdown:
    """The live run (§4) beside the stored grid, in one table: clients, the accuracy cluster's configs, their initial
    w_acc, the rewards eq. 12 shares there, λ, τ, GRPO's clip range and KL coefficient, and which config α favours
    after round 1 (the lowest w_acc sent back)."""
    from experiments.fedmoa_presets import setting_config

    hh = fedmoa_setting()
    live, grid = _cluster_configs(cfg.num_clients), _cluster_configs(hh["clients"])
    grid_cfg = setting_config("cpu", "heter+heter", "FedMOA", 0)

    def shared(cfgs):
        return ", ".join(k for k in plan_rewards("A") if all(k in plan_rewards(c) for c in cfgs))

    def configs(cfgs):
        return "; ".join(f"{c} ({', '.join(plan_rewards(c))})" for c in sorted(cfgs))

    def starts(cfgs):
        return "; ".join(f"{c}: {', '.join(f'{w:g}' for w in dict.fromkeys(ws))}" for c, ws in sorted(cfgs.items()))

    def grpo(c):
        return f"({1 - c.epsilon:g}, {1 + c.epsilon_high:g}); {c.beta:g}"

    cluster = cluster_of(run, "client_0")
    info = pd.DataFrame(analysis.client_info(run)).set_index("client").loc[cluster]
    live_fav = sent_weights(records, 2).loc[cluster, "accuracy"].groupby(info.config).mean().idxmin()
    d = grid_weight_steps()
    grid_fav = d[(d["round"] == 2) & (d.step == 0)].groupby("config").w_acc.mean().idxmin()
    moa = cfg.fedmoa
    live_lam = (f"scale rule, target {moa.lam_target:g}, per client and round" if moa.lam_rule == "target"
                and not moa.normalise else f"{moa.lam:g}, fixed")
    rows = [("clients", cfg.num_clients, hh["clients"]),
            ("configs in client_0's cluster", configs(live), configs(grid)),
            ("their initial w_acc", starts(live), starts(grid)),
            ("rewards eq. 12 shares there", shared(live), shared(grid)),
            ("λ", live_lam, f"{hh['lam']['FedMOA']:g}, fixed"),
            ("τ (local steps)", cfg.local_steps, hh["tau"]),
            ("GRPO clip range of ρ; KL coefficient", grpo(cfg), grpo(grid_cfg)),
            ("α favours from round 2 on", f"config {live_fav}", f"config {grid_fav}")]
    return Markdown("> **The live run beside the stored grid**\n>\n> | | live run (§4) | stored grid |\n> |---|---|---|\n"
                    + "\n".join(f"> | {a} | {b} | {c} |" for a, b, c in rows))


def grid_intro() -> Markdown:
    """The stored grid in plain words: its size, λ and τ, its seeds; the arms this lesson shows."""
    seeds = {r["seed"] for r in stored_grid()["runs"] if r["setting"] == "heter+heter" and r["variant"] == "FedMOA"}
    hh = fedmoa_setting()
    return Markdown(
        f"The **stored grid**: the Heter+Heter federation at a larger scale than §4, run on CPUs and stored in "
        f"`benchmarks/results/`. {hh['clients']} clients (each family's on configs A, B, C), {hh['rounds']} rounds of "
        f"τ = {hh['tau']}, λ = {hh['lam']['FedMOA']:g} fixed, {len(seeds)} seeds of each method. Below: FedAvg-GRPO "
        f"and FedMOA (the grid's ablation arms are in [the report]({REPORT})).")


def _cluster_configs(num_clients: int) -> dict[str, list[float]]:
    """The accuracy cluster's configs under the Heter+Heter plan of ``num_clients`` clients: config → the
    initial w_acc of its MATH-/GSM8K-like clients."""
    from fedrl_kit.fedmoa import plan

    clients = plan.client_plan("heter+heter", num_clients)
    out: dict[str, list[float]] = {}
    for (fam, name), w in zip(clients, plan.initial_weights("heter+heter", clients)):
        if fam != "code":
            out.setdefault(name, []).append(w[0])
    return out


# -- Pareto fronts ----------------------------------------------------------------------------------------------------
STAIRCASE = np.array([[0.20, 0.90], [0.30, 0.80], [0.45, 0.60], [0.55, 0.30], [0.25, 0.55], [0.35, 0.40],
                      [0.15, 0.70], [0.40, 0.25]])  # [n, 2] (accuracy, format), invented


def dominators(point, pts=STAIRCASE) -> np.ndarray:
    """The points of ``pts`` that dominate ``point``: at least as good on both coordinates, better on one."""
    p, q = np.asarray(point, dtype=float), np.asarray(pts, dtype=float)
    return q[(q >= p).all(axis=1) & (q > p).any(axis=1)]


def leaves_front(point, pts=STAIRCASE) -> set[str]:
    """The labels (P1, P2, …) of the front's points that a new model at ``point`` would push off the front: the
    ones it dominates."""
    front = non_dominated(pts)
    gone = [i for i in np.flatnonzero(front) if len(dominators(pts[i], np.asarray([point])))]
    return {f"P{i + 1}" for i in gone}


def leaves_front_why(point, pts=STAIRCASE) -> str:
    """Exercise 6's why: which front points ``point`` dominates, and which front points stay because they keep the
    best score on one reward."""
    gone = sorted(leaves_front(point, pts))
    front = non_dominated(pts)
    stay = [f"P{i + 1}" for i in np.flatnonzero(front) if f"P{i + 1}" not in gone]
    return (f"{list(point)} dominates {gone}: at least as good on both rewards, better on one. "
            f"{' and '.join(stay)} each beat it on one reward (accuracy or format), so they stay. A new model joins "
            "the front without beating every point on it.")


def projection_why(v: np.ndarray, w: np.ndarray) -> str:
    """Exercise 1's why: ``v = w + λΔ`` and its projection ``w``; when an equal shift ν would push a weight below 0,
    that weight stops at 0 and the others share ν."""
    v, w = np.asarray(v, dtype=float), np.asarray(w, dtype=float)
    nu_equal = (v.sum() - 1) / len(v)
    kept = w > 0
    nu = (v[kept].sum() - 1) / kept.sum()
    if kept.all():
        return f"w + λΔ = {np.round(v, 4).tolist()}; ν = {nu:.4f}, giving {np.round(w, 4).tolist()} (package)."
    low = int(np.argmin(v))
    return (f"w + λΔ = {np.round(v, 4).tolist()}; an equal shift ν = {nu_equal:.4f} would leave weight {low + 1} at "
            f"{v[low] - nu_equal:.4f} < 0, so it stops at 0 and the other {int(kept.sum())} share ν: "
            f"ν = ({' + '.join(f'{x:.2f}' for x in v[kept])} − 1) / {int(kept.sum())} = {nu:.4f}, giving "
            f"{np.round(w, 4).tolist()} (package). A large λ pushes weights onto the simplex's edge, where an "
            "objective's weight is 0.")


def staircase_points() -> pd.DataFrame:
    """The invented points of the staircase figure, one column per point, marked on the front or not."""
    front = non_dominated(STAIRCASE)
    return pd.DataFrame({"accuracy": STAIRCASE[:, 0], "format": STAIRCASE[:, 1],
                         "on the front": np.where(front, "yes", "no")},
                        index=[f"P{i + 1}" for i in range(len(STAIRCASE))]).T


def staircase_figure() -> go.Figure:
    """A made-up set of models in the accuracy–format plane, labelled P1, P2, … as in :func:`staircase_points`, its
    non-dominated points and the staircase they draw."""
    pts = STAIRCASE
    front = non_dominated(pts)
    order = pareto_front_order(pts, front)
    labels = np.array([f"P{i + 1}" for i in range(len(pts))])
    fig = go.Figure([
        go.Scatter(x=pts[~front, 0], y=pts[~front, 1], mode="markers+text", text=labels[~front],
                   textposition="bottom center", name="dominated: another model is at least as good on both, better "
                   "on one", marker=dict(color="lightgrey", size=11, line=dict(color="grey", width=1))),
        go.Scatter(x=pts[order, 0], y=pts[order, 1], mode="lines+markers+text", text=labels[order],
                   textposition="top right", name="the Pareto front", line=dict(color="black", dash="dot", shape="vh"),
                   marker=dict(symbol="star", size=15, color="gold", line=dict(color="black", width=1)))])
    fig.update_layout(template="plotly_white", height=340, title="a Pareto front (invented points)",
                      legend=dict(orientation="h", y=-0.3))
    fig.update_xaxes(title="accuracy", range=[0, 0.65])
    fig.update_yaxes(title="format", range=[0, 1.1])
    return fig


# -- the replay (widget) ----------------------------------------------------------------------------------------------
def probe_round(make_config, cfg, policy, steps: int = 3) -> dict:
    """g_k of ``steps`` probe batches per client of the untrained federation (fedmoa.probe): what eqs. 9–12 need."""
    from fedrl_kit.fedmoa import probe
    from fedrl_kit.runs import Run

    federation = Run(make_config(cfg.preset), policy=policy, progress=False).build()
    return probe.probe_clients(federation, "global", steps=steps)


def client_mid_round(make_config, cfg, policy, cid: str = "client_0"):
    """Client ``cid`` of a freshly built federation (the untrained adapter) after round 1's first local step, run by
    the package: ``(client, path)``, its :class:`~fedrl_kit.fedmoa.client.WeightPath` holding g^(t−1) and λ, ready for
    the notebook to write out step 2 by hand."""
    from fedrl_kit.fedmoa.client import WeightPath
    from fedrl_kit.runs import Run

    federation = Run(make_config(cfg.preset), policy=policy, progress=False).build()
    client = federation.clients[cid]
    client.policy.set_state(cid, client.policy.get_state("global"))  # what on_fit does with the server's θ
    w = np.asarray(client.initial_weights, dtype=np.float64)
    path = WeightPath(w.copy(), w.copy())
    client.local_step(1, 0, client.policy.trainable(cid), path)
    return client, path


def flat_grad(loss, params) -> np.ndarray:
    """∇ of ``loss`` on ``params`` (the graph kept for the next objective's loss), flattened into one vector: g_k."""
    import torch

    return torch.cat([x.flatten() for x in torch.autograd.grad(loss, params, retain_graph=True)]).double().numpy()


def step_inputs(client, rollouts):
    """What eq. 8 needs beyond the batch: φ (the middle layer's LoRA factors, hooked) and one forward pass's
    per-token log-probabilities, shared by the K losses."""
    from fedrl_kit.fedmoa.client import hooked_lora_parameters
    from fedrl_kit.rollout import per_token_logps

    phi = hooked_lora_parameters(client.policy.model, client.layer)
    return phi, per_token_logps(client.policy.model, rollouts, client.grpo.temperature)


def package_weights(client, path, rollouts, scores) -> np.ndarray:
    """The package's eqs. 8–10 on the same batch, on a copy of ``path`` (the written-out step is compared with it)."""
    import copy

    package = copy.deepcopy(path)
    client.adapt_weights(rollouts, scores, package)
    return package.weights


def configs_table(run) -> pd.DataFrame:
    """The reward configs A, B, C in one place: each config's rewards in the MATH/GSM8K-like cluster and the MBPP-like
    one, and the initial w_acc its clients get in the live run (``run``) and in the stored grid. A family's j-th
    client starts at ``plan.W0_SPREAD[j mod 5]``; the other rewards share the rest equally."""
    from fedrl_kit.fedmoa import plan

    def starts(num_clients):
        clients = plan.client_plan("heter+heter", num_clients)
        out: dict[str, list[float]] = {}
        for (_, name), w in zip(clients, plan.initial_weights("heter+heter", clients)):
            out.setdefault(name, [])
            if w[0] not in out[name]:
                out[name].append(w[0])
        return out

    live, grid = starts(len(run.clients)), starts(fedmoa_setting()["clients"])
    return pd.DataFrame({"rewards (MATH/GSM8K-like)": {c: ", ".join(plan.REWARD_CONFIGS["math"][c]) for c in grid},
                         "rewards (MBPP-like)": {c: ", ".join(plan.REWARD_CONFIGS["code"][c]) for c in grid},
                         "initial w_acc, live run": {c: ", ".join(f"{w:g}" for w in live.get(c, [])) or "—"
                                                      for c in grid},
                         "initial w_acc, stored grid": {c: ", ".join(f"{w:g}" for w in grid[c]) for c in grid}}
                        ).rename_axis("config")


def step_table(names, g_now: np.ndarray, g_prev: np.ndarray, lam: float, w_before, w_ours, w_package) -> pd.DataFrame:
    """One local step of eqs. 8–10, one row per reward: ‖g_k‖², Δ_k, the cosine of consecutive gradients, λΔ_k and
    the weights before, after (the notebook's loop) and as the package's own step computes them."""
    delta = (g_now * g_prev).sum(axis=1)  # [K] eq. 9
    norms = np.linalg.norm(g_now, axis=1) * np.linalg.norm(g_prev, axis=1)  # [K]
    cos = np.divide(delta, norms, out=np.zeros_like(delta), where=norms > 0)
    return pd.DataFrame({"‖g_k‖²": (g_now * g_now).sum(axis=1), "Δ_k (eq. 9)": delta, "cos(g_k^(t), g_k^(t−1))": cos,
                         "λΔ_k": lam * delta, "w before": w_before, "w after (loop)": w_ours,
                         "w after (package)": w_package}, index=list(names)).map(lambda x: float(f"{x:.4g}"))


def replay_lambdas(probes: dict, target: float = 0.05) -> dict:
    """The widget's λ choices: 1, 10 and 100 times the median scale-rule λ of the clients."""
    from fedrl_kit.fedmoa import probe

    rule = float(np.median([probe.replay_weights(c["grads"], c["w0"], target=target)[1] for c in probes.values()]))
    return {(f"{m:g} × the rule = {m * rule:.3g}" if m * rule < 100 else f"{m:g} × the rule = {m * rule:,.0f}"): m * rule
            for m in (1.0, 10.0, 100.0)}


def replay_view(probes: dict, cfg, lam: float, label: str) -> tuple[go.Figure, pd.DataFrame]:
    """One round replayed at λ: each client's w_acc as sent, after its local steps (eq. 10), and as the server sends
    it back (eq. 12), with its α (eq. 11)."""
    from fedrl_kit.fedmoa import probe

    moa = cfg.fedmoa
    rows = probe.replay_round(probes, lam=lam, cluster_key=moa.cluster_key, eps=moa.eps,
                              temperature=moa.softmax_temperature)
    table = pd.DataFrame([{"client": r["client"], "cluster": r["cluster"], "w_acc start": r["trajectory"][0][0],
                           "w_acc after eq. 10": r["trajectory"][-1][0], "α (eq. 11)": r["alpha"],
                           "w_acc sent (eq. 12)": r["broadcast"][0]} for r in rows]).set_index("client")
    ticks = [f"{c}<br>cluster {k}, α = {a:.2f}" for c, k, a in zip(table.index, table.cluster, table["α (eq. 11)"])]
    fig = go.Figure([go.Bar(x=ticks, y=table[c], name=c) for c in
                     ("w_acc start", "w_acc after eq. 10", "w_acc sent (eq. 12)")])
    fig.update_layout(template="plotly_white", height=360, barmode="group", legend=dict(orientation="h", y=1.12),
                      title=f"one round replayed, λ: {label}")
    fig.update_yaxes(title="w_acc", range=[0, 1])
    return fig, table.round(4)


def replay_all(probes: dict, cfg, lams: dict) -> pd.DataFrame:
    """The replayed round at every λ of the widget in one table: each client's w_acc as sent back (eq. 12), and the
    largest α (eq. 11) of its cluster."""
    from fedrl_kit.fedmoa import probe

    moa, cols = cfg.fedmoa, {}
    for label, lam in lams.items():
        rows = probe.replay_round(probes, lam=lam, cluster_key=moa.cluster_key, eps=moa.eps,
                                  temperature=moa.softmax_temperature)
        cols[f"λ = {label}"] = {r["client"]: r["broadcast"][0] for r in rows}
    start = {cid: c["w0"][0] for cid, c in probes.items()}
    table = pd.DataFrame({"w_acc start": start} | cols)
    table.columns.name = "w_acc sent back (eq. 12)"
    return table.round(3)


def lambda_line(cfg, records: list[dict]) -> Markdown:
    """The λ each run used: the live run's scale rule per client and round (its range in each cluster), the
    stored grid's one fixed λ."""
    moa, hh = cfg.fedmoa, fedmoa_setting()
    lams = pd.DataFrame([dict(cluster=int(r["cluster"]), lam=r["lam"]) for r in records
                         if r["kind"] == "client" and r["client"] != "server" and "lam" in r])
    if moa.lam_rule == "target" and not moa.normalise:
        spans = "; ".join(f"cluster {c}: {g.lam.min():.3g} to {g.lam.max():.3g}" for c, g in lams.groupby("cluster"))
        live = (f"the scale rule (target {moa.lam_target:g}) gave λ per client and round: {spans} (smaller "
                "gradients, larger λ)")
    else:
        live = f"λ = {moa.lam:g}, fixed, on the cosine form of Δ_k (`normalise`)"
    return Markdown(f"**λ in this notebook.** Live run (§4): {live}. Stored grid (§6): λ = {hh['lam']['FedMOA']:g} for "
                    "every client, fixed as in the paper.")


def consecutive_cosines(probes: dict) -> np.ndarray:
    """cos(g_k^(t), g_k^(t−1)) for every client, objective and pair of consecutive probe steps where both gradients
    are non-zero: how far eq. 9's Δ_k falls short of a repeated gradient's ‖g_k‖²."""
    out = []
    for c in probes.values():
        g = np.asarray(c["grads"], dtype=np.float64)  # [T, K, d]
        norms = np.linalg.norm(g, axis=2)  # [T, K]
        for t in range(1, len(g)):
            ok = (norms[t] > 0) & (norms[t - 1] > 0)
            out += list((g[t] * g[t - 1]).sum(axis=1)[ok] / (norms[t] * norms[t - 1])[ok])
    return np.asarray(out)


def _replay_parts(probes: dict, cfg, lams: dict) -> tuple[str, str]:
    """replay_words' two halves: why eq. 10 barely acts at the rule's λ, and what the largest λ does."""
    from fedrl_kit.fedmoa import probe

    moa = cfg.fedmoa
    cos = np.abs(consecutive_cosines(probes))

    def replay(lam):
        return probe.replay_round(probes, lam=lam, cluster_key=moa.cluster_key, eps=moa.eps,
                                  temperature=moa.softmax_temperature)

    (one, rule), (big, top) = list(lams.items())[0], list(lams.items())[-1]
    rows = replay(rule)
    eq10 = max(abs(r["trajectory"][-1][0] - r["trajectory"][0][0]) for r in rows)
    eq12 = max(abs(r["broadcast"][0] - r["trajectory"][-1][0]) for r in rows)
    tops = replay(top)
    zero = [r for r in tops if r["trajectory"][-1][0] == 0]
    if zero:
        z = max(zero, key=lambda r: r["alpha"])
        mates = [r for r in tops if r["cluster"] == z["cluster"]]
        last = (f"Only at {big} does eq. 10 drive a w_acc to 0 ({z['client']}'s); eq. 11 then gives that client "
                f"α = {z['alpha']:.2f}, its model becomes the cluster's, and eq. 12 sends w_acc = "
                f"{max(r['broadcast'][0] for r in mates):g} to all {len(mates)} clients of its cluster.")
    else:
        last = f"Even at {big} no w_acc reaches 0 in this round."
    why = (f"**Why eq. 10 barely acts.** Consecutive gradients come from different batches of noisy rewards and barely "
           f"repeat: |cos(g_k^(t), g_k^(t−1))| is {np.median(cos):.2f} in the median and at most {cos.max():.2f}, so "
           f"Δ_k is a few percent of the ‖g_k‖² the rule was sized for, and the projection cancels what the objectives "
           f"share. At {one}, eq. 10 moves w_acc by at most {eq10:.4f} in this round; eq. 12 then moves it by up to "
           f"{eq12:.2f}.")
    if len(lams) > 2:  # the middle λ: the clients eq. 10 lowers most gain α, and the shared w̄_acc falls with them
        mid_label, mid = list(lams.items())[1]
        at = {r["client"]: r for r in rows}
        lead = max(replay(mid), key=lambda r: r["alpha"] - at[r["client"]]["alpha"])
        was = at[lead["client"]]
        sent = {r["client"]: r["broadcast"][0] for r in replay(mid)}
        mates = [c for c, r in at.items() if r["cluster"] == lead["cluster"]]
        why += (f" In the column {mid_label}, eq. 10 lowers {lead['client']}'s w_acc; eq. 11's steep 1/w_acc "
                f"lifts its α from {was['alpha']:.2f} to {lead['alpha']:.2f}, so the α-average its cluster is sent "
                f"falls (w_acc sent at {one.split(' =')[0]} → at {mid_label.split(' =')[0]}): "
                + ", ".join(f"{c} {at[c]['broadcast'][0]:.3f} → {sent[c]:.3f}" for c in mates) + ".")
    return why, last


def first_zero(probes: dict, cfg, lams: dict):
    """Exercise 5's answer: the smallest multiple of the rule's λ in ``lams`` (1, 10 or 100) at which eq. 10 drives
    some client's w_acc to 0 in the replayed round; "none" when no λ does."""
    from fedrl_kit.fedmoa import probe

    moa = cfg.fedmoa
    for label, lam in lams.items():
        rows = probe.replay_round(probes, lam=lam, cluster_key=moa.cluster_key, eps=moa.eps,
                                  temperature=moa.softmax_temperature)
        if any(r["trajectory"][-1][0] == 0 for r in rows):
            return int(float(label.split(" ×")[0]))
    return "none"


def replay_words(probes: dict, cfg, lams: dict) -> Markdown:
    """Why eq. 10 barely moves the weights at the rule's λ: consecutive gradients barely repeat, so eq. 12 does the
    moving; only the largest λ sets weights to 0, and eq. 11 then gives one client all of its cluster's α."""
    return Markdown(" ".join(_replay_parts(probes, cfg, lams)))


def replay_why(probes: dict, cfg, lams: dict) -> Markdown:
    """The first half of :func:`replay_words`: why eq. 10 barely acts at the rule's λ."""
    return Markdown(_replay_parts(probes, cfg, lams)[0])


class Folded:
    """An answer that holds a table: folded (HTML ``<details>``, opened with a click) in a notebook, as the same
    words and table in plain text for any other reader."""

    def __init__(self, words: str, table: pd.DataFrame):
        self.words, self.table = words, table

    def __repr__(self) -> str:
        return f"{self.words}\n{self.table.to_string()}"

    def _repr_html_(self) -> str:
        import html

        return (f"<details><summary><b>Answer</b> (click to open once you have predicted)</summary>"
                f"<p>{html.escape(self.words)}</p>{self.table.to_html()}</details>")


def replay_answer(probes: dict, cfg, lams: dict) -> Folded:
    """The answer to §5's prediction (at which λ does a w_acc reach 0?), folded: the replayed round at every λ in one
    table, and what the largest λ does (the second half of :func:`replay_words`)."""
    return Folded("Answer: " + _replay_parts(probes, cfg, lams)[1], replay_all(probes, cfg, lams))


# -- what the reproduction found --------------------------------------------------------------------------------------
def findings_box() -> Markdown:
    """Three takeaways of the stored grid in plain words (the two arms; λ; where w_acc goes), each linking the report;
    the verdicts are the stored claims' (a comparison of λ on with λ off reads "not tested" when the weights moved less than
    ``fedmoa_analysis.MIN_WEIGHT_MOVE`` a round)."""
    from experiments.fedmoa_analysis import MIN_WEIGHT_MOVE

    F = labelled(fedmoa_findings())
    split = fedmoa_weight_split_findings()
    grid = stored_grid()
    t1 = PAPER_TABLE1[("heter+heter", "math")]
    f2 = fedmoa_claim_interval(F2_CLAIM)
    bsplit = boundary_split(grid)
    ap, rp = (t_interval(bsplit[c].tolist()) for c in ("alpha_part", "renormalisation_part"))  # (mean, ±95 % t, n)
    move = weight_move(grid)
    fam = accuracy_differences(grid)
    hh = fedmoa_setting()
    link = f"([report]({REPORT}))"
    f1, f4 = (F.loc[k] for k in ("F1", "F4"))
    untested = f1.verdict.startswith("not tested") and f2[3].startswith("not tested")
    acc_read, rew_read = interval_reading(f1.difference, f1["±95% t"]), interval_reading(f2[0], f2[1])
    head = (f"Accuracy: {acc_read}; aggregated reward: {rew_read}" if acc_read != rew_read
            else f"Accuracy and aggregated reward: {acc_read}")
    lines = [
        f"**{head}.** FedMOA − FedAvg-GRPO over {int(f1.seeds)} seeds, paired by seed (table above): accuracy "
        f"{signed(fam.loc['mean'].iloc[0], 2)} ± {fam.loc['± 95 % t'].iloc[0]:.2f} points on the MATH-like tests, "
        f"{signed(f1.difference, 2)} ± {f1['±95% t']:.2f} on all three families'; aggregated reward "
        f"{signed(f2[0], 4)} ± {f2[1]:.4f}" + ("; that interval excludes 0" if abs(f2[0]) > f2[1] else "")
        + f". The paper (MATH): +{t1[1][0] - t1[0][0]:.1f} points, +{t1[1][1] - t1[0][1]:.3f}. {link}",
        f"**λ = {hh['lam']['FedMOA']:g} was run, yet not tested.** It moved each client's weights by "
        f"{move[0]:.4f} ± {move[1]:.4f} (summed over rewards) per round"
        + (f", under {MIN_WEIGHT_MOVE:g}: with rewards in [0, 1], r_w changes by less than that, so FedMOA trained on "
           "nearly fixed weights and only eqs. 11–12 acted. The report's verdict on λ: \"not tested\". "
           if untested else ". ") + link,
        f"**w_acc drains where the paper's rises (Fig. 5).** Over all {hh['clients']} clients (both clusters) and "
        f"{int(f4.seeds)} seeds it ends {abs(f4.difference):.3f} below its start. Eq. 10's moves, up and down, cancel to "
        f"{signed(split.difference[0], 3)} over the {hh['rounds']} rounds; at the boundaries the α-average takes "
        f"{abs(ap[0]):.3f} off (the α tilt) and the rescaling gives {rp[0]:.3f} back. {link}"]
    return Markdown("> **Three takeaways from the stored grid** (± : 95 % interval)\n>\n"
                    + "\n".join(f"> {i + 1}. {t}" for i, t in enumerate(lines)))


def accuracy_differences(grid: dict | None = None, family: str = "math") -> pd.DataFrame:
    """FedMOA − FedAvg-GRPO in pass@1 points, paired by seed, on the stored grid's Heter+Heter final global models:
    on the family's tests (Fig. 3's x axis) and on all families' tests averaged (``global_accuracy``), one row per
    seed, then their mean and its 95 % Student-t half-width (n − 1 degrees of freedom)."""
    grid = grid or stored_grid()
    last = {(r["variant"], r["seed"]): r["history"]["server"][-1] for r in grid["runs"]
            if r["setting"] == "heter+heter" and r["variant"] in METHODS}
    seeds = sorted({s for v, s in last if v == "FedMOA"} & {s for v, s in last if v == "FedAvg-GRPO"})
    cols = {f"{PAPER_NAMES[family]}-like tests": f"{family}/pass@1", "all three families' tests": "global_accuracy"}
    out = pd.DataFrame({c: [100 * (last[("FedMOA", s)][k] - last[("FedAvg-GRPO", s)][k]) for s in seeds]
                        for c, k in cols.items()}, index=pd.Index([f"seed {s}" for s in seeds], name="FedMOA − FedAvg-GRPO, points"))
    iv = {c: t_interval(out[c].tolist()) for c in cols}
    out.loc["mean"] = [iv[c][0] for c in cols]
    out.loc["± 95 % t"] = [iv[c][1] for c in cols]
    return out.round(2)


def interval_reading(mean: float, half: float) -> str:
    """What a difference ± its 95 % half-width says: "no difference detected" when the interval holds 0, else "a
    small detected gain" or "a small detected loss" (the sign of the mean)."""
    if abs(mean) <= half:
        return "no difference detected"
    return "a small detected gain" if mean > 0 else "a small detected loss"


def weight_move(grid: dict | None = None, setting: str = "heter+heter", variant: str = "FedMOA") -> tuple:
    """The mean L1 move of the reward weights per client and round in the grid's ``variant`` runs: (mean over seeds,
    its 95 % t half-width, seeds), what the stored claims' "not tested" rule reads."""
    grid = grid or stored_grid()
    return t_interval([r["mean_w_move"] for r in grid["runs"] if r["setting"] == setting and r["variant"] == variant])


def signed(x: float, digits: int) -> str:
    """``x`` with its sign, a typographic minus for negatives."""
    return f"{x:+.{digits}f}".replace("-", "−")


# -- the report's detail ----------------------------------------------------------------------------------------------
def detectable(half, n) -> list[float]:
    """The true effect these seeds catch 4 times in 5 (:func:`experiments.stats.detectable_effect`), per row."""
    return [detectable_effect(h, int(k)) for h, k in zip(half, n)]


def findings_detail() -> pd.DataFrame:
    """The five findings with their intervals, what these seeds can detect and the paper's number."""
    F = labelled(fedmoa_findings())
    F.loc["F2", ["difference", "±95% t"]] = fedmoa_claim_interval(F2_CLAIM)[:2]
    t1 = {f: PAPER_TABLE1[("heter+heter", f)] for f in ("math", "gsm", "code")}
    test_set = {"math": "MATH", "gsm": "GSM8K", "code": "HumanEval"}
    F["the paper"] = [
        "; ".join(f"{test_set[f]} {b[0] - a[0]:+.2f}" for f, (a, b) in t1.items()) + " (Table 1, global)",
        "; ".join(f"{test_set[f]} {b[1] - a[1]:+.3f}" for f, (a, b) in t1.items()) + " (Table 1)",
        "HumanEval, clients' models: +0.60 (Homo+Heter), +3.29 (Heter+Heter)",
        "Fig. 5: w_acc rises within rounds (this row adds the boundary jumps; split below)",
        "not run: λ = 0.01 only"]
    F["detectable"] = detectable(F["±95% t"], F.seeds)
    digits = {"F1": 2, "F2": 4, "F3": 2, "F4": 3, "F5": 3}  # points: 2; a reward or a weight: 3–4
    for c in ("difference", "±95% t", "detectable"):
        F[c] = [f"{v:{'+' if c == 'difference' else ''}.{digits[i]}f}" for i, v in F[c].items()]
    return F


def split_words() -> Markdown:
    """F4 like for like: the change of w_acc within rounds (eq. 10, Fig. 5's) and at the boundaries (eqs. 11–12)."""
    split = fedmoa_weight_split_findings()
    w_in, w_b, w_off = (split.iloc[i] for i in range(3))
    words = {"higher": "rises", "lower": "falls", "within noise": "shows no change outside noise"}
    iw = lambda r: interval_words(r.difference, r["±95% t"], r.seeds, "", 4)  # noqa: E731
    verdict = ("So the drain is mostly eq. 11's α, which puts the shared w_acc below the plain mean, not eq. 10."
               if w_b.difference < w_in.difference < 0 and w_off.difference > w_b.difference
               else "The split does not single out one mechanism.")
    return Markdown(f"Within rounds w_acc {words[w_in.verdict]}: {iw(w_in)}. At the boundaries it "
                    f"{words[w_b.verdict]}: {iw(w_b)}, {w_b.difference / (w_in.difference + w_b.difference):.0%} of "
                    f"the change. With data-size α (\"λ on, α off\") the boundary change is {iw(w_off)}. {verdict}")


def seeds_final_figure(grid: dict) -> tuple[go.Figure, pd.DataFrame]:
    """The paper's Fig. 3 over the grid's seeds: each seed's final global model (MATH-like) as one point, each
    method's mean ± one standard deviation as a star."""
    recs = analysis.grid_records(grid["runs"])
    pts = pd.DataFrame([dict(method=v, seed=s, round=r["round"], accuracy=r["math/accuracy"], format=r["math/format"])
                        for (st, v, s), rr in recs.items() if st == "heter+heter" and v in METHODS
                        for r in analysis.server_records(rr)])
    last = pts[pts["round"] == pts["round"].max()].copy()
    last["on the front"] = non_dominated(last[["accuracy", "format"]].to_numpy())
    fig = go.Figure()
    colours = {"FedAvg-GRPO": "#636EFA", "FedMOA": "#EF553B"}
    for name, d in last.groupby("method"):
        fig.add_trace(go.Scatter(x=d.accuracy, y=d.format, mode="markers+text", name=f"{name}: one seed",
                                 text=[f"s{s}" for s in d.seed], textposition="top center",
                                 marker=dict(size=10, color=colours[name], opacity=0.6)))
        fig.add_trace(go.Scatter(x=[d.accuracy.mean()], y=[d.format.mean()], mode="markers",
                                 name=f"{name}: mean ± sd", marker=dict(size=16, symbol="star", color=colours[name]),
                                 error_x=dict(array=[d.accuracy.std()]), error_y=dict(array=[d.format.std()])))
    fig.update_layout(template="plotly_white", height=420,
                      title="final global model per seed, MATH-like (cpu grid, Heter+Heter)")
    fig.update_xaxes(title="accuracy (pass@1)")
    fig.update_yaxes(title="format (mean reward per completion)")
    spread = last.groupby("method").agg(seeds=("seed", "nunique"), accuracy=("accuracy", "mean"),
                                        accuracy_sd=("accuracy", "std"), format=("format", "mean"),
                                        format_sd=("format", "std"), on_front=("on the front", "sum"))
    return fig, spread.round(4)


def ablation_detail() -> tuple[pd.DataFrame, Markdown]:
    """Table 2's one-component arms against FedAvg-GRPO, with what their seeds can detect, and in words."""
    abl = labelled(fedmoa_ablation_findings(), "A")
    abl["detectable"] = detectable(abl["±95% t"], abl.seeds)

    def line(i, r):
        unit, k = ("", 4) if r.unit == "reward" else ("points", 2)
        out = (f"- **{i}** ({r.finding.split(', ', 1)[1].split(' −')[0]}, {r.finding.split(',')[0]}): "
               f"{interval_words(r.difference, r['±95% t'], r.seeds, unit, k)}; these seeds detect about "
               f"±{r.detectable:.{k}f}")
        if pd.notna(r.paper):
            out += (f", more than the paper's {r.paper:+.{k}f}" if abs(r.paper) < r.detectable
                    else f", less than the paper's {r.paper:+.{k}f}")
        return out + "."

    tail = (f"\n\nThe paper has α alone at +{PAPER_TABLE2['λ off, α on'][0] - PAPER_TABLE2['FedAvg-GRPO'][0]:.1f} "
            f"points and both at +{PAPER_TABLE2['FedMOA'][0] - PAPER_TABLE2['FedAvg-GRPO'][0]:.1f} on MATH.")
    return abl.round(4), Markdown("\n".join(line(i, r) for i, r in abl.iterrows()) + tail)


def lambda_versions() -> pd.DataFrame:
    """Every λ the teaching notebook and this report meet, in one table."""
    from experiments.fedmoa_presets import setting_config

    quick = setting_config("quick", "heter+heter", "FedMOA", 0).fedmoa
    hh = fedmoa_setting()
    return pd.DataFrame([
        ("the paper (§4.1)", "0.01, fixed, on eq. 9's dot product"),
        ("notebook 03's quick run", f"lam_rule = {quick.lam_rule!r}: λ = {quick.lam_target} / mean_k ‖g_k‖² at "
                                    "each round's first step, per client"),
        ("the stored cpu grid (FedMOA)", f"{hh['lam']['FedMOA']:g}, fixed, tuned on validation"),
        ("the grid's λ = 100 arm (F5)", f"{hh['lam']['FedMOA, λ=100']:g}, fixed"),
        ("notebook 03's parameter `lam`", "read only with normalise=True (Δ_k then a cosine)")],
        columns=["where", "λ"]).set_index("where")


def boundary_split(grid: dict | None = None, setting: str = "heter+heter", variant: str = "FedMOA") -> pd.DataFrame:
    """The stored grid's boundary change of w_acc split in two, per seed (mean over clients, summed over the
    boundaries): the **α part** ū_acc − w_acc^(m), where eq. 12's α-average ū_acc = Σ α_m w_acc^(m) sits below the
    cluster's plain mean, and the **renormalisation part** w_acc^(m←c) − ū_acc of eq. 12 (a client that keeps
    its own weights for rewards the cluster does not share divides by their sum). The two add up to
    ``fedmoa_analysis.accuracy_weight_split``'s ``boundary``."""
    grid = grid or stored_grid()
    rows = []
    for (st, v, seed), rr in analysis.grid_records(grid["runs"]).items():
        if st != setting or v != variant:
            continue
        mine = {(r["client"], r["round"]): r for r in rr if r["kind"] == "client" and r["client"] != "server"
                and "w_move" in r}
        first = lambda r: next(k.split("/", 1)[1] for k in r if k.startswith("w_start/"))  # noqa: E731
        clusters = {}
        for (cid, rnd), r in mine.items():
            clusters.setdefault((rnd, r["cluster"]), []).append(r)
        parts = {}
        for (rnd, _), members in clusters.items():
            bar = sum(m["alpha"] * m[f"w/{first(m)}"] for m in members) / sum(m["alpha"] for m in members)
            for m in members:
                nxt = mine.get((m["client"], rnd + 1))
                if nxt is None:
                    continue
                p = parts.setdefault(m["client"], [0.0, 0.0])
                p[0] += bar - m[f"w/{first(m)}"]  # eq. 12: the α-average against this client's own w_acc
                p[1] += nxt[f"w_start/{first(nxt)}"] - bar  # eq. 12: renormalising
        rows.append(dict(seed=seed, alpha_part=float(np.mean([p[0] for p in parts.values()])),
                         renormalisation_part=float(np.mean([p[1] for p in parts.values()]))))
    out = pd.DataFrame(rows).set_index("seed").sort_index()
    out["boundary"] = out.alpha_part + out.renormalisation_part
    return out


# -- the stored grid, drawn for the lesson ----------------------------------------------------------------------------
ARM_NAMES = {"FedMOA, uniform w_0": "FedMOA, uniform initial w"}
"""display names of the grid's arms where the stored JSON key would mislead (w_0 is the paper's accuracy entry)"""
ARM_SYMBOLS = {"FedAvg-GRPO": "circle", "FedMOA": "diamond", "FedMOA, uniform w_0": "square",
               "λ on, α off": "triangle-up", "λ off, α on": "triangle-down", "FedMOA, λ=100": "x"}
ARM_COLOURS = {"FedAvg-GRPO": "#636EFA", "FedMOA": "#EF553B", "FedMOA, uniform w_0": "#FFA15A",
               "λ on, α off": "#00CC96", "λ off, α on": "#AB63FA", "FedMOA, λ=100": "#19D3F3"}


def grid_weight_steps(grid: dict | None = None, variant: str = "FedMOA") -> pd.DataFrame:
    """The stored grid's Heter+Heter runs, the accuracy cluster (MATH-like and GSM8K-like clients): each client's
    w_acc after every local step, one row per (seed, client, config, round, step)."""
    from fedrl_kit.fedmoa.plan import config_name

    grid = grid or stored_grid()
    rows = []
    for run in grid["runs"]:
        if run["setting"] != "heter+heter" or run["variant"] != variant:
            continue
        for c in run["history"]["clients"]:
            names = [k.split("/", 1)[1] for k in c if k.startswith("w_start/")]
            if names[0] != "accuracy":
                continue
            steps = sorted(int(k[2:].split("/")[0]) for k in c if k.startswith("w@") and k.endswith("/accuracy"))
            rows += [dict(seed=run["seed"], client=c["client"], config=config_name("math", names), round=c["round"],
                          step=s, w_acc=c[f"w@{s}/accuracy"]) for s in steps]
    return pd.DataFrame(rows)


def boundary_moves(grid: dict | None = None) -> pd.DataFrame:
    """The stored grid's first boundary in the accuracy cluster (FedMOA): each config's mean w_acc after round 1's
    last local step and as round 2 starts (what eq. 12 sent), over its clients and the seeds."""
    d = grid_weight_steps(grid)
    end = d[(d["round"] == 1) & (d.step == d.step.max())].groupby("config").w_acc.mean()
    sent = d[(d["round"] == 2) & (d.step == 0)].groupby("config").w_acc.mean()
    return pd.DataFrame({"end of round 1": end, "sent for round 2": sent, "rises": sent > end})


def boundary_why(moves: pd.DataFrame) -> str:
    """Exercise 8's why: with only accuracy shared, a client's u is (w̄_acc, its other weights summing to 1 − w_acc),
    so it gets w̄_acc / (w̄_acc + 1 − w_acc), above its own w_acc exactly when w_acc < w̄_acc; and each config's move."""
    return ("only accuracy is shared, so a client's u is (w̄_acc, its own other weights, which sum to 1 − w_acc), and "
            "it gets w̄_acc / (w̄_acc + 1 − w_acc): above its w_acc exactly when w_acc < w̄_acc. "
            + "; ".join(f"{c} {r['end of round 1']:.3f} → {r['sent for round 2']:.3f}" for c, r in moves.iterrows())
            + ".")


def grid_weights_figure(grid: dict | None = None) -> tuple[go.Figure, Markdown]:
    """The paper's Fig. 5 from the stored grid: w_acc after every local step, the mean over a reward config's
    clients and the seeds (band: ± one sd of the seeds' means), round boundaries dotted; and in one sentence how
    much eq. 10 moves w_acc within a round against eq. 12's jump at a boundary."""
    d = grid_weight_steps(grid)
    tau, rounds = int(d.step.max()) + 1, int(d["round"].max())
    d["x"] = d["round"] - 1 + d.step / tau
    per_seed = d.groupby(["config", "seed", "x"]).w_acc.mean().reset_index()
    fig = go.Figure()
    colours = {"A": "#636EFA", "B": "#EF553B", "C": "#00CC96"}
    for cfg_name, g in per_seed.groupby("config"):
        s = g.groupby("x").w_acc.agg(["mean", "std"]).reset_index()
        names = ", ".join(plan_rewards(cfg_name))
        for r in range(rounds):  # one segment per round, so a boundary shows as a gap with a jump
            p = s[(s.x >= r) & (s.x < r + 1)]
            band = np.concatenate([p["mean"] + p["std"], (p["mean"] - p["std"])[::-1]])
            fig.add_trace(go.Scatter(x=np.concatenate([p.x, p.x[::-1]]), y=band, fill="toself", mode="lines",
                                     line=dict(width=0), fillcolor=_rgba(colours[cfg_name], 0.2), showlegend=False,
                                     hoverinfo="skip"))
            fig.add_trace(go.Scatter(x=p.x, y=p["mean"], mode="lines+markers", name=f"config {cfg_name} ({names})",
                                     line=dict(color=colours[cfg_name], width=3), showlegend=r == 0,
                                     legendgroup=cfg_name))
    for r in range(1, rounds):
        fig.add_vline(x=r - 0.5 / tau, line=dict(color="grey", dash="dot"))
    seeds = d.seed.nunique()
    fig.update_layout(template="plotly_white", height=380, legend=dict(orientation="h", y=-0.3),
                      title=f"Analogue of the paper's Fig. 5: w_acc after each local step, FedMOA (stored grid)<br>"
                            f"mean of a config's clients over {seeds} seeds, band ± sd; dotted: round boundaries")
    fig.update_xaxes(title=f"round r, local step s (τ = {tau})", tickvals=[r + s / tau for r in range(rounds)
                                                                          for s in (0, tau - 1)],
                     ticktext=[f"r{r + 1} s{s + 1}" for r in range(rounds) for s in (0, tau - 1)])
    fig.update_yaxes(title="w_acc (accuracy's share of the weights, 0–1)")
    end = d[d.step == tau - 1].set_index(["seed", "client", "round"]).w_acc
    start = d[d.step == 0].set_index(["seed", "client", "round"]).w_acc
    within = float((end - start).abs().mean())
    nxt = start.rename(lambda r: r - 1, level="round")
    jump = float((nxt - end).dropna().abs().mean())
    first_steps = d[d.step == 0].groupby(["round", "config"]).w_acc.mean().unstack()
    orders = {tuple(row.sort_values(ascending=False).index) for _, row in first_steps.iterrows()}
    kept = (f"The configs keep their order ({' > '.join(next(iter(orders)))}) in every round, so α keeps ranking the "
            "clients by configuration." if len(orders) == 1 else "The configs' order changes between rounds.")
    last = d[(d["round"] == rounds) & (d.step == tau - 1)].set_index(["seed", "client"]).w_acc
    first = d[(d["round"] == 1) & (d.step == 0)].set_index(["seed", "client"]).w_acc
    change = float((last - first).mean())
    words = Markdown(
        f"Within a round the lines stay nearly flat: a round of eq. 10 moves one client's w_acc by {within:#.2g} on "
        f"average (up or down). At each boundary they jump toward each other: eq. 12 moves a client's w_acc by "
        f"{jump:#.2g} on average, about {jump / within:.0f} times a whole round of eq. 10. {kept} Net change of w_acc "
        f"over the {rounds} rounds, the accuracy cluster's {d.client.nunique()} clients: {signed(change, 3)}"
        + (" (it drains, where the paper's rises)." if change < 0 else "."))
    return fig, words


def _rgba(hex_colour: str, alpha: float) -> str:
    """``#rrggbb`` as a plotly ``rgba(…)`` string with opacity ``alpha`` (a band's fill, drawn under its line)."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def plan_rewards(config: str, family: str = "math") -> tuple[str, ...]:
    """A reward configuration's reward names (the paper's Table 3)."""
    from fedrl_kit.fedmoa.plan import REWARD_CONFIGS

    return REWARD_CONFIGS[family][config]


def grid_points(grid: dict | None = None, family: str = "math", arms=METHODS) -> pd.DataFrame:
    """The stored grid's Heter+Heter final global models of ``arms``: one row per (arm, seed) with its accuracy and
    format on the family's tests, and whether it is on the Pareto front of these models."""
    grid = grid or stored_grid()
    pts = pd.DataFrame([dict(arm=run["variant"], seed=run["seed"], accuracy=last[f"{family}/accuracy"],
                             format=last[f"{family}/format"])
                        for run in grid["runs"] if run["setting"] == "heter+heter" and run["variant"] in arms
                        for last in [run["history"]["server"][-1]]])
    pts["on the front"] = non_dominated(pts[["accuracy", "format"]].to_numpy(dtype=float))
    return pts


def arm_spread(grid: dict | None = None, family: str = "math", arms=METHODS) -> pd.DataFrame:
    """Each arm's accuracy over its seeds: mean, sd (n − 1) and the number of seeds, in ``arms``' order."""
    acc = grid_points(grid, family, arms).groupby("arm").accuracy.agg(["mean", "std", "count"])
    return acc.loc[list(arms)].rename(columns={"std": "sd", "count": "seeds"}).round(3)


def grid_pareto(grid: dict | None = None, family: str = "math", arms=METHODS) -> tuple[go.Figure, Markdown]:
    """The paper's Fig. 3 from the stored grid: each arm's final global model per seed, accuracy on x and format on
    y, the y axis zoomed to the formats' narrow range (stated in its title), the models on the Pareto front ringed
    and joined by the front's staircase. The words say only how many models the front holds, not which arm is
    nearer (that is Exercise 7's answer: :func:`nearer_front`)."""
    pts = grid_points(grid, family, arms)
    on = pts[pts["on the front"]].sort_values("accuracy")
    lo, hi = pts["format"].min(), pts["format"].max()
    y0, y1 = float(np.floor((lo - 0.003) / 0.005) * 0.005), float(np.ceil((hi + 0.003) / 0.005) * 0.005)
    fig = go.Figure()
    stair_x, stair_y = [], []
    for x, y in zip(on.accuracy, on["format"]):  # the staircase, as the invented one: down, then right to the next
        if stair_x:  # corner (prev accuracy, this format): a model at that format lacks the accuracy to its right
            stair_x.append(stair_x[-1]), stair_y.append(y)
        stair_x.append(x), stair_y.append(y)
    fig.add_trace(go.Scatter(x=stair_x, y=stair_y, mode="lines", name="Pareto front", line=dict(color="grey",
                                                                                                  dash="dot")))
    for arm in arms:
        g = pts[pts.arm == arm]
        fig.add_trace(go.Scatter(x=g.accuracy, y=g["format"], mode="markers", name=arm, marker=dict(
            size=12, opacity=0.85, color=ARM_COLOURS.get(arm), symbol=ARM_SYMBOLS.get(arm, "circle"),
            line=dict(color="black", width=1))))
    fig.add_trace(go.Scatter(x=on.accuracy, y=on["format"], mode="markers", name="on the Pareto front",
                             marker=dict(symbol="circle-open", size=26, color="black", line=dict(width=2))))
    fig.update_layout(template="plotly_white", height=380, legend=dict(orientation="h", y=-0.25),
                      title=f"final global model of each seed ({PAPER_NAMES[family]}-like tests, stored grid)")
    fig.update_xaxes(title="accuracy (pass@1)")
    fig.update_yaxes(title=f"format (zoomed: {y0:.3f}–{y1:.3f})", range=[y0, y1])
    held = " and ".join(f"{int((on.arm == a).sum())} {a}" for a in arms)
    words = Markdown(f"The front holds {len(on)} of the {len(pts)} models ({held}, ringed).")
    return fig, words


def front_distance(grid: dict | None = None, family: str = "math", arms=METHODS) -> pd.DataFrame:
    """Each final global model's distance to the stored grid's front: the accuracy it lacks against the best model
    with at least its format (0 on the front), one row per (arm, seed)."""
    pts = grid_points(grid, family, arms)
    acc, fmt = pts.accuracy.to_numpy(), pts["format"].to_numpy()
    pts["distance"] = [acc[fmt >= f].max() - a for a, f in zip(acc, fmt)]
    return pts


def arm_distance(grid: dict | None = None, family: str = "math", arms=METHODS) -> pd.DataFrame:
    """Each arm's distance to the front over its seeds: mean, sd (n − 1), seeds, and how many of its models lie on
    the front, in ``arms``' order."""
    d = front_distance(grid, family, arms).groupby("arm")
    out = d.distance.agg(["mean", "std", "count"]).rename(columns={"std": "sd", "count": "seeds"})
    out["on the front"] = d["on the front"].sum()
    return out.loc[list(arms)].round(3)


def nearer_front(grid: dict | None = None, family: str = "math") -> tuple[str, str]:
    """Exercise 7's answer and why: the arm whose mean distance to the front (:func:`front_distance`) is smaller by
    more than either arm's sd over seeds, "neither" otherwise."""
    d = arm_distance(grid, family)
    moa, avg = d.loc["FedMOA"], d.loc["FedAvg-GRPO"]
    gap = moa["mean"] - avg["mean"]
    clear = abs(gap) > max(moa.sd, avg.sd)
    answer = ("FedMOA" if gap < 0 else "FedAvg-GRPO") if clear else "neither"
    return answer, (f"mean distance to the front ± sd over seeds: FedMOA {moa['mean']:.3f} ± {moa.sd:.3f}, "
                    f"FedAvg-GRPO {avg['mean']:.3f} ± {avg.sd:.3f} (on the front: {int(moa['on the front'])} and "
                    f"{int(avg['on the front'])} of {int(moa.seeds)}). The gap, {signed(gap, 3)}, is "
                    + ("larger than either sd." if clear else
                       "smaller than either sd: the seeds scatter both arms' models over the same stretch, and 5 "
                       "seeds cannot tell them apart. Why: eq. 10 barely moved the weights (§5), so both arms "
                       "trained on nearly the same weighted reward."))


def settings_table(cfg, records: list[dict], replay_steps: int = 3) -> pd.DataFrame:
    """The settings that differ across the lesson, one row per run: the live run (§4), §5's replay of its round 1,
    the stored grid (§6) and the paper's Heter+Heter; clients, rounds, τ and λ with its rule."""
    from experiments.fedmoa_presets import LAM_GRID

    hh = fedmoa_setting()
    lams = [r["lam"] for r in records if r["kind"] == "client" and r["client"] != "server" and "lam" in r]
    live = f"scale rule (§2): {min(lams):.3g} to {max(lams):.3g}"
    rows = {"live run (§4)": (cfg.num_clients, cfg.rounds, cfg.local_steps, live, "small enough for 2 CPU cores"),
            "replay of its round 1 (§5)": (cfg.num_clients, 1, replay_steps, "1, 10, 100 × the rule's median",
                                           f"eq. 10 acts τ − 1 = {replay_steps - 1} times"),
            "stored grid (§6)": (hh["clients"], hh["rounds"], hh["tau"],
                                 f"{hh['lam']['FedMOA']:g} (tuned over {', '.join(f'{x:g}' for x in LAM_GRID)})",
                                 "at the paper's 0.01, weights barely move"),
            "paper (Heter+Heter)": (15, 3, "not given", "0.01 fixed", "Qwen2.5-1.5B, GPUs")}
    return pd.DataFrame(rows, index=["clients", "rounds", "τ", "λ", "why"]).T


def findings_table(grid: dict | None = None) -> pd.DataFrame:
    """The stored grid against the paper in four rows (FedMOA − FedAvg-GRPO, 5 seeds paired, ± 95 % t): accuracy on
    the MATH-like tests, aggregated reward, eq. 10's weight move per round (L1 over all of a client's weights, all
    clients), and w_acc's net change over the rounds (all clients; a code client's w_acc is its code_accuracy)."""
    grid = grid or stored_grid()
    t1 = PAPER_TABLE1[("heter+heter", "math")]
    fam = accuracy_differences(grid)
    f2 = fedmoa_claim_interval(F2_CLAIM)
    move = weight_move(grid)
    f4 = labelled(fedmoa_findings()).loc["F4"]
    hh = fedmoa_setting()
    rows = {"accuracy, MATH-like (points)": (f"+{t1[1][0] - t1[0][0]:.1f}",
                                             f"{fam.loc['mean'].iloc[0]:+.2f} ± {fam.loc['± 95 % t'].iloc[0]:.2f}"),
            "aggregated reward": (f"+{t1[1][1] - t1[0][1]:.3f}", f"{f2[0]:+.4f} ± {f2[1]:.4f}"),
            f"all of a client's weights, moved by eq. 10 per round (L1, {hh['clients']} clients)": (
                "not given", f"{move[0]:.4f} ± {move[1]:.4f}"),
            f"w_acc net change over {hh['rounds']} rounds ({hh['clients']} clients)": ("rises (Fig. 5)",
                                                                                     signed(f4.difference, 3))}
    return pd.DataFrame(rows, index=["paper", "stored grid"]).T


def grid_first_boundary(grid: dict | None = None) -> tuple[pd.DataFrame, Markdown]:
    """The stored grid's first boundary in the accuracy cluster (FedMOA), what Exercise 7 needs: per config its
    rewards, clients, initial w_acc, mean w_acc at the end of round 1 and mean α per client (eq. 11); and in words
    the cluster's plain mean of w_acc against w̄_acc, the α-average eq. 12 shares (means over the seeds)."""
    from fedrl_kit.fedmoa.plan import config_name

    grid = grid or stored_grid()
    rows, ubar, plain = [], [], []
    for run in grid["runs"]:
        if run["setting"] != "heter+heter" or run["variant"] != "FedMOA":
            continue
        first = [c for c in run["history"]["clients"] if c["round"] == 1 and "w/accuracy" in c]
        ubar.append(sum(c["alpha"] * c["w/accuracy"] for c in first) / sum(c["alpha"] for c in first))
        plain.append(float(np.mean([c["w/accuracy"] for c in first])))
        for c in first:
            names = [k.split("/", 1)[1] for k in c if k.startswith("w_start/")]
            rows.append(dict(config=config_name("math", names), client=c["client"], start=c["w_start/accuracy"],
                             end=c["w/accuracy"], alpha=c["alpha"]))
    d = pd.DataFrame(rows)
    table = pd.DataFrame({
        "rewards": {c: ", ".join(plan_rewards(c)) for c in sorted(d.config.unique())},
        "clients": d.groupby("config").client.nunique(),
        "initial w_acc": d.groupby("config").start.agg(lambda s: ", ".join(f"{w:g}" for w in sorted(set(s), reverse=True))),
        "w_acc, end of round 1": d.groupby("config").end.mean().round(3),
        "α per client": d.groupby("config").alpha.mean().round(3)})
    table.index.name = "config"
    words = Markdown(f"Means over {len(ubar)} seeds. The cluster's plain mean of w_acc is {np.mean(plain):.3f}; its "
                     f"α-average w̄_acc, which eq. 12 shares, is {np.mean(ubar):.3f}.")
    return table, words


def favoured_config(run, records: list[dict]) -> str:
    """The reward config of client_0's cluster that eq. 11 favours after round 1: the lowest w_acc sent back."""
    cluster = cluster_of(run, "client_0")
    info = pd.DataFrame(analysis.client_info(run)).set_index("client").loc[cluster]
    return str(sent_weights(records, 2).loc[cluster, "accuracy"].groupby(info.config).mean().idxmin())


def dilution_words(run, records: list[dict]) -> str:
    """Exercise 4's why: eq. 12 averages only the shared rewards, so a client that also holds an unshared reward
    gets back a u summing to more than 1 (its w_acc diluted), one holding only shared rewards a u summing to less
    (inflated); α then favours the config that started higher."""
    cluster = cluster_of(run, "client_0")
    end1 = round_end_weights(records, 1).loc[cluster].dropna(axis=1, how="all")
    sent = sent_weights(records, 2).loc[cluster]
    shared = [k for k in end1.columns if end1[k].notna().all()]
    info = pd.DataFrame(analysis.client_info(run)).set_index("client").loc[cluster]
    alpha = np.array([next(r["alpha"] for r in records if r["kind"] == "client" and r["client"] == c
                           and r["round"] == 1) for c in cluster])
    ubar = alpha @ end1[shared].to_numpy() / alpha.sum()
    usum = (ubar.sum() + end1.drop(columns=shared).fillna(0).sum(axis=1)).groupby(info.config).mean()
    by = sent["accuracy"].groupby(info.config).mean()
    start = pd.Series({c: run.clients[c].initial_weights[0] for c in cluster}).groupby(info.config).mean()
    lo = favoured_config(run, records)
    own = [k for k in end1.columns if k not in shared and end1.loc[info.index[info.config == lo], k].notna().all()]
    others = [k for k in by.index if k != lo]
    return (f"eq. 12 averages only the rewards every client of the cluster holds ({' and '.join(shared)}). A "
            f"config-{lo} client also keeps its own {', '.join(own)} weight, so its u sums to {usum[lo]:.3f}: "
            f"rescaling dilutes its w_acc. "
            + "; ".join(f"A config-{k} client's u sums to {usum[k]:.3f}" + (": its w_acc is inflated" if usum[k] < 1
                        else "") for k in others)
            + f". The server sends config {lo} w_acc = {by[lo]:.2f}, against "
            + ", ".join(f"{by[k]:.2f} for config {k}" for k in others)
            + f", though config {lo} started higher ({start[lo]:g} against "
            + ", ".join(f"{start[k]:g}" for k in others)
            + f"). So from round 2 on α favours config {lo}: the ranking follows which rewards a client holds, not "
            "its progress.")


