"""Notebook 03's (FedMOA) loaders and its two figures, and report 13's detail tables.

The notebook computes its numbers in its own cells; the helpers here load what those cells read (the live run's
records as tables, the stored ``cpu`` grid of ``benchmarks/results``), draw the live run's accuracy weights and the
grid's final models with their Pareto front. The detail tables of the stored grid (intervals, the drain's split, the
ablation arms, every λ) are drawn for the report notebook 13 by the helpers at the end of this module.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import Markdown

from experiments import fedmoa_analysis as analysis
from experiments.fedmoa_analysis import PAPER_TABLE1, PAPER_TABLE2
from experiments.fedmoa_pareto import non_dominated
from experiments.findings import (RESULTS, fedmoa_ablation_findings, fedmoa_claim_interval, fedmoa_findings,
                                  fedmoa_setting, fedmoa_weight_split_findings, interval_words, labelled)
from experiments.stats import detectable_effect

METHODS = ["FedAvg-GRPO", "FedMOA"]
F2_CLAIM = "FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter"
"""the claim whose unrounded interval F2 quotes (a reward's digits)"""


# -- the notebook's setup ---------------------------------------------------------------------------------------------
SCALE = {"quick": "quick", "smoke": "smoke", "full": "paper", "full-smoke": "paper-smoke"}
"""the notebook's presets → fedmoa_presets' scales"""


def config_maker(seed: int):
    """``make_config(preset, variant)`` for one run of the paper's Heter+Heter federation at a preset's scale; stops
    the notebook with a plain message when the CPU presets' base policy is missing. The CPU presets take the stored
    grid's λ (tuned on validation, fixed), so that the live run and the grid differ in size only; the paper presets
    keep the paper's λ = 0.01."""
    from experiments.fedmoa_presets import setting_config
    from fedrl_kit import notebook
    from fedrl_kit.policy.pretrain_families import MISSING_MESSAGE
    from fedrl_kit.runs import REPO_ROOT

    def make_config(preset: str, variant: str = "FedMOA"):
        scale = SCALE[preset]
        if scale.startswith("paper"):
            return setting_config(scale, "heter+heter", variant, seed)
        if not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
            raise notebook.NotebookStop(" ".join(MISSING_MESSAGE.format(path="data/base_moa").split()))
        grid_lam = fedmoa_setting()["lam"]["FedMOA"]
        return setting_config(scale, "heter+heter", variant, seed, fedmoa=dict(lam_rule="fixed", lam=grid_lam))

    return make_config


# -- the live run -----------------------------------------------------------------------------------------------------
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
    out = info[["stands_for", "cluster", "config", "rewards", "examples", "initial w (same order)"]]
    return out.rename_axis(index=None, columns="client")  # "client" in the header's corner: no row of its own


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


def w_acc_table(client_records) -> pd.DataFrame:
    """w_acc of each client and round, from client records (a run's records, or a stored run's
    ``history["clients"]``): the client's first reward weight (accuracy, or code_accuracy for an MBPP-like client)
    as the round started (sent by the server; round 1: the initial one) and after its τ local steps, with its
    cluster and its α of that round (eq. 11)."""
    rows = []
    for r in client_records:
        if r.get("kind", "client") != "client" or r["client"] == "server" or "w_move" not in r:
            continue
        acc = next(k.split("/", 1)[1] for k in r if k.startswith("w_start/"))  # the client's rewards in its order
        rows.append(dict(client=r["client"], cluster=int(r["cluster"]), round=r["round"], start=r[f"w_start/{acc}"],
                         end=r[f"w/{acc}"], alpha=r.get("alpha", float("nan"))))
    return pd.DataFrame(rows).sort_values(["client", "round"]).reset_index(drop=True)


def weights_view(table: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """A client × reward table of weights (and any other columns) as the notebook shows it: numbers rounded to
    ``digits`` places, a reward the client does not hold (NaN) left blank, "client" in the header's corner (as the
    columns' name, so that no empty row renders under the header)."""
    out = table.round(digits).astype(object).where(table.notna(), "")
    return out.rename_axis(index=None, columns="client")


def delta_ratios(records: list[dict]) -> pd.DataFrame:
    """Eq. 9's Δ_k of every client, round, local step ≥ 1 and reward (``fedmoa_analysis.delta_trace``) beside the
    round's mean ‖g_k‖² (``gsq``, as the client recorded it) and ``ratio`` = |Δ_k| / ‖g_k‖²: 1 for a gradient that
    repeats exactly, near 0 for two that barely line up. Rewards whose gradient was 0 are left out."""
    gsq = {(r["client"], r["round"], k.split("/", 1)[1]): v for r in records
           if r.get("kind", "client") == "client" and r.get("client") != "server" for k, v in r.items()
           if k.startswith("gsq/")}
    out = pd.DataFrame(analysis.delta_trace(records))
    out["gsq"] = [gsq[key] for key in zip(out.client, out["round"], out.reward)]
    out = out[out.gsq > 0].reset_index(drop=True)
    out["ratio"] = out.delta.abs() / out.gsq
    return out


def hyper_layer_size(run) -> tuple[int, int, int]:
    """φ, where eq. 8 takes g_k in a run (``fedmoa.hyper_layer``, None: the middle one): (its decoder layer, counted
    from 0; the model's number of layers; how many numbers the layer's LoRA factors hold, which is g_k's length)."""
    from fedrl_kit.fedmoa.client import decoder_layers, hooked_lora_parameters, resolve_layer

    model = run.policy.model
    layer = resolve_layer(model, run.config.fedmoa.hyper_layer)
    return layer, len(decoder_layers(model)), sum(p.numel() for p in hooked_lora_parameters(model, layer))


def w_acc_figure(w: pd.DataFrame, configs: dict, run: str = "live run") -> go.Figure:
    """The paper's Fig. 5 for one run: each client's w_acc at the start and the end of every round (``w_acc_table``),
    one line per client, coloured by its reward config, one panel per cluster, each config's clients named at their
    lines' end (a config's lines overlap); the boundaries between rounds (where eq. 12 acts) shaded; ticks at each
    round's start and end; the title names the ``run`` (the notebook draws only its live run)."""
    from plotly.subplots import make_subplots

    colours = {"A": "#636EFA", "B": "#EF553B", "C": "#00CC96"}
    clusters = sorted(w.cluster.unique())
    fig = make_subplots(1, len(clusters), shared_yaxes=True, subplot_titles=[
        f"cluster {c} ({'accuracy' if c == 0 else 'code_accuracy'})" for c in clusters])
    shown = set()
    for i, c in enumerate(clusters, 1):
        for cid, d in w[w.cluster == c].groupby("client"):
            x = np.ravel([[r - 1, r - 0.4] for r in d["round"]])  # a round's start, then its end
            y = np.ravel(d[["start", "end"]].to_numpy())
            cfg = configs[cid]
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=f"config {cfg}", legendgroup=cfg,
                                     showlegend=cfg not in shown, line=dict(color=colours.get(cfg), width=2)),
                          1, i)
            shown.add(cfg)
        for r in range(1, int(w["round"].max())):
            fig.add_vrect(x0=r - 0.4, x1=r, fillcolor="grey", opacity=0.15, line_width=0, row=1, col=i)
        last = w[(w.cluster == c) & (w["round"] == w["round"].max())]
        for cfg, d in last.groupby(last.client.map(configs)):  # a config's clients, named at their lines' end
            ids = [n.rsplit("_", 1)[-1] for n in sorted(d.client)]
            fig.add_annotation(x=d["round"].iloc[0] - 0.35, y=d.end.mean(), xanchor="left", showarrow=False,
                               text=f"client{'s' if len(ids) > 1 else ''} {', '.join(ids)}",
                               font=dict(size=11, color=colours.get(cfg)), row=1, col=i)
    rounds = range(1, int(w["round"].max()) + 1)
    fig.update_layout(template="plotly_white", height=360, legend=dict(orientation="h", y=-0.25),
                      title=f"{run}: w_acc at each round's start and end (shaded: the server's eq. 12 between rounds)")
    fig.update_xaxes(tickvals=[x for r in rounds for x in (r - 1, r - 0.4)], range=[-0.1, max(rounds) + 0.1],
                     ticktext=[t for r in rounds for t in (f"round {r}<br>start", "end")])
    fig.update_yaxes(title="w_acc", col=1)
    return fig


# -- the stored grid --------------------------------------------------------------------------------------------------
def stored_grid() -> dict:
    """The stored ``cpu`` grid (benchmarks/results/fedmoa_compare_cpu.json)."""
    return json.loads((RESULTS / "fedmoa_compare_cpu.json").read_text())


def stored_runs(setting: str = "heter+heter") -> pd.DataFrame:
    """The stored grid's runs of ``setting`` (``benchmarks/results/fedmoa_compare_cpu.json``), one row per (variant,
    seed): the last round's metrics as stored, the run's per-round records (``history``: its ``server`` and
    ``clients`` lists) and the final global model's format reward on the MATH-like tests (``math/format``)."""
    out = pd.DataFrame([r for r in stored_grid()["runs"] if r["setting"] == setting])
    out["math/format"] = [h["server"][-1]["math/format"] for h in out.history]
    return out


LAM_TUNING = ("fedmoa_tuning_cpu.json", "fedmoa_tuning_cpu_lam_at_lr0.004.json", "fedmoa_tuning_cpu_lam1_3.json")
"""the stored λ tuning runs (FedMOA, Heter+Heter, one tuning seed, validation only): the first tuning, then λ re-run
at the grid's shared learning rate (docs/fedmoa.md, "The tuned-λ grid")"""


def lam_tuning(files=LAM_TUNING) -> dict:
    """The stored λ tuning runs, read from ``files`` of benchmarks/results: learning rate → {λ: best validation
    pass@1 over the run's rounds (the mean of the three families')}, each learning rate's λ best first; with the
    tuning seed under ``"seed"`` (a λ run at one learning rate in two files, identical, is read once)."""
    out, seeds = {}, set()
    for name in files:
        for r in json.loads((RESULTS / name).read_text())["runs"]:
            if r["variant"] == "FedMOA":
                out.setdefault(r["learning_rate"], {})[r["lam"]] = r["best_val_accuracy"]
                seeds.add(r["seed"])
    (seed,) = seeds
    return {"seed": seed, **{lr: dict(sorted(v.items(), key=lambda kv: -kv[1])) for lr, v in sorted(out.items())}}


def settings_table(cfg, seed: int, grid: pd.DataFrame) -> pd.DataFrame:
    """The notebook's three run sets and the paper side by side: the live run (``cfg``, ``seed``), the stored
    Homo+Homo runs of Fig. 5's setting (:func:`fig5_rise_table`), the stored Heter+Heter grid (its runs:
    :func:`stored_runs`). Rows: model (with its size) and what the CPU base was pretrained on, LoRA, clients, rounds,
    τ, prompts × answers a step, tokens an answer, temperature, the learning rate η, μ (Adam updates on a local step's
    one batch), the clip bounds (c, c′), λ, how the grid's was chosen and its validation scores at the grid's η
    (:func:`lam_tuning`) beside the binomial noise of a difference of two, what pass@1 averages, seeds and, per
    reward config A, B, C, its clients and the w_acc they start from (:func:`configs_table`). Where the paper is
    silent: "not given". Every entry stays under pandas' 50-character column, so that the table shows it whole."""
    from pathlib import Path

    from experiments.fedmoa_presets import CLIENTS, SCALE_FEDMOA, SCALE_FIELDS
    from fedrl_kit.config import RunConfig
    from fedrl_kit.runs import REPO_ROOT
    from fedrl_kit.world.families import PAPER_NAMES

    s, paper, stored = fedmoa_setting(), SCALE_FIELDS["paper"], stored_grid()["settings"]["heter+heter"]
    cosine = json.loads((RESULTS / COSINE_GRID).read_text())  # Fig. 5's runs under the decay, read once
    homo = cosine["settings"]["homo+homo"]  # their settings, those of the constant-rate runs too
    pretrain = json.loads((REPO_ROOT / "data" / "base_moa" / "pretrain.json").read_text())
    size = lambda base: (f"{Path(base).name} ({pretrain['n_params'] / 1e6:.1f} M parameters)"  # noqa: E731
                         if Path(base).name == "base_moa" else str(base))
    taught = (f"worked toy answers, {pretrain['format_rate']:.0%} in the tag format")  # base_moa's pretraining
    clip = {k: stored.get(k, getattr(RunConfig, k)) for k in ("epsilon", "epsilon_high")}  # unrecorded: the default
    updates = stored.get("num_iterations", RunConfig.num_iterations)
    configs = configs_table(cfg.num_clients)  # clients per reward config and the w_acc they start from
    per_config = lambda col: "; ".join(f"{c}: {v}" for c, v in configs[col].items())  # noqa: E731
    tuning = lam_tuning()
    lam = s["lam"]["FedMOA"]
    at = float(stored["learning_rate"])  # the grid's learning rate
    first = min(lr for lr in tuning if lr != "seed")  # the first tuning's learning rate, where λ was chosen
    chosen = "best" if next(iter(tuning[first])) == lam else "not best"
    scores = tuning[at]  # λ → validation pass@1 at the grid's η, best first
    n_val = stored["n_aux"] * stored["eval_samples"]  # validation answers a score averages
    p = float(np.mean(list(scores.values())))
    noise = 1.96 * np.sqrt(2 * p * (1 - p) / n_val)  # a difference of two scores, binomial: a lower bound
    homo_family = PAPER_NAMES[homo["fedmoa"]["homo_family"]]
    field = lambda c, k: c.get(k, getattr(RunConfig, k))  # noqa: E731  (unrecorded: the default)
    lora = lambda c: f"rank {field(c, 'lora_rank')}: {targets(c['base'], field(c, 'lora_targets'))}"  # noqa: E731
    answers = lambda c: f"{c['n_test']:,} test prompts × {c['eval_samples']}"  # noqa: E731
    rows = {  # row: (live run, Homo+Homo runs, stored grid, paper)
        "model": (size(cfg.base), size(homo["base"]), size(stored["base"]), paper["base"]),
        "base model pretrained on": (taught if Path(cfg.base).name == "base_moa" else "—", taught, taught, "—"),
        "LoRA": (lora(dict(lora_rank=cfg.lora_rank, base=cfg.base, lora_targets=cfg.lora_targets)), lora(homo),
                 lora(stored), "not given"),
        "clients": (cfg.num_clients, f"{homo['num_clients']}, all alike ({homo_family}-like)", s["clients"],
                    CLIENTS["paper"]["heter+heter"]),
        "rounds": (cfg.rounds, homo["rounds"], s["rounds"], paper["rounds"]),
        "τ: local steps a round": (cfg.local_steps, homo["local_steps"], s["tau"], "not given"),
        "prompts × answers (G) a step": (f"{cfg.prompts_per_step} × {cfg.num_generations}",
                                         f"{homo['prompts_per_step']} × {homo['num_generations']}",
                                         f"{s['b']} × {s['G']}",
                                         f"{paper['prompts_per_step']} × {paper['num_generations']}"),
        "tokens an answer (at most)": (cfg.max_new_tokens, homo["max_new_tokens"], stored["max_new_tokens"],
                                       f"{paper['max_new_tokens']:,}"),
        "sampling temperature": (f"{cfg.temperature:g}", f"{field(homo, 'temperature'):g}",
                                 f"{field(stored, 'temperature'):g}", "not given"),
        "learning rate η": (f"{cfg.learning_rate:g}", f"{homo['learning_rate']:g}: constant, and cosine decay",
                            f"{stored['learning_rate']:g}", f"{paper['learning_rate']:g}, cosine decay"),
        "μ: Adam updates a local step (one batch)": (cfg.num_iterations, field(homo, "num_iterations"), updates,
                                                     "not given"),
        "clip: c, c′": (f"{cfg.epsilon:g}, {cfg.epsilon_high:g}",
                        f"{field(homo, 'epsilon'):g}, {field(homo, 'epsilon_high'):g}",
                        f"{clip['epsilon']:g}, {clip['epsilon_high']:g}", "not given"),
        "λ": (f"{cfg.fedmoa.lam:g}", f"{homo['fedmoa']['lam']:g}", f"{lam:g}", f"{SCALE_FEDMOA['paper']['lam']:g}"),
        "λ chosen by": ("the stored grid's λ" if cfg.fedmoa.lam == lam else "—", "the stored grid's λ",
                        f"validation at η = {first:g}, seed {tuning['seed']} ({chosen})", "not given"),
        f"validation pass@1 (%) by λ at η = {at:g}": ("", "", "; ".join(f"{x:g}: {100 * a:.1f}"
                                                                       for x, a in scores.items()), ""),
        "noise on two λ's difference (95 %)": ("", "", f"at least ± {100 * noise:.1f} points (binomial)", ""),
        "eq. 10 updates a round (τ − 1)": (cfg.local_steps - 1, homo["local_steps"] - 1, s["tau"] - 1, "not given"),
        "pass@1 averages": (answers(dict(n_test=cfg.n_test, eval_samples=cfg.eval_samples)), answers(homo),
                            answers(stored), "not given"),
        "seeds": (f"1 (seed {seed})", len({r["seed"] for r in cosine["runs"]}),
                  grid.query("variant == 'FedMOA'").seed.nunique(), "not given"),
        "clients per config (w_acc at start: ours)": (per_config("live run: clients (w_acc at start)"), "all alike",
                                                per_config("stored grid: clients (w_acc at start)"), "not given")}
    return pd.DataFrame(rows, index=["live run (§4–5)", "Homo+Homo runs (§5)", "stored grid (§6)", "paper"]).T


def targets(base, lora_targets: str = "auto") -> str:
    """The modules LoRA adapts on ``base`` (:func:`fedrl_kit.policy.adapters.resolve_lora_targets`), read from the
    model's config on the meta device (no weights loaded), their names shortened ("q_proj" → "q")."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from fedrl_kit.policy.adapters import resolve_lora_targets

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base))
    found = resolve_lora_targets(model, lora_targets)
    return found if isinstance(found, str) else ", ".join(t.removesuffix("_proj") for t in found)


def tuning_table() -> pd.DataFrame:
    """The grid's λ tuning runs (benchmarks/results/fedmoa_tuning_cpu.json, FedMOA, a seed of their own): the best
    round's validation accuracy and the weights' mean L1 move a round, one row per λ; the header's corner names
    λ and the tuning seed (as the columns' name, so that no empty row renders under the header)."""
    tuned = [r for r in json.loads((RESULTS / "fedmoa_tuning_cpu.json").read_text())["runs"]
             if r["variant"] == "FedMOA"]
    out = pd.DataFrame({"validation accuracy (best round)": [f"{r['best_val_accuracy']:.4f}" for r in tuned],
                        "weights' move a round (L1)": [f"{r['mean_w_move']:.2g}" for r in tuned]},
                       index=[f"{r['lam']:g}" for r in tuned])
    out.columns.name = f"λ (tuning seed {tuned[0]['seed']})"  # in the header's corner: no row of its own
    return out


def grid_w_acc_table(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`w_acc_table` for each of the stored grid's ``runs`` (:func:`stored_runs` rows), stacked, with a
    ``seed`` column: w_acc of every seed, client and round as sent and after the round's τ local steps."""
    return pd.concat([w_acc_table(h["clients"]).assign(seed=s) for s, h in zip(runs.seed, runs.history)],
                     ignore_index=True)


def grid_w_acc_change(moa: pd.DataFrame, setting: str = "heter+heter") -> tuple[float, pd.DataFrame]:
    """Over the stored grid's FedMOA runs (``moa``: :func:`stored_runs` rows of one variant): eq. 10's mean L1 move
    of a client's weights a round, and per reward config (then all clients) its MATH-/GSM8K-like rewards, its
    clients, the w_acc they started round 1 from (the plan's, alike on every seed) and w_acc's change over the run
    (last round's end − first round's start; per seed the mean over the config's clients, then mean ± 95 % t over
    seeds)."""
    from experiments.stats import t_interval
    from fedrl_kit.fedmoa.plan import REWARD_CONFIGS, client_plan

    w = grid_w_acc_table(moa)
    first = w[w["round"] == 1].set_index(["seed", "client"]).start
    last = w[w["round"] == w["round"].max()].set_index(["seed", "client"]).end
    change = pd.DataFrame({"start": first, "change": last - first}).reset_index()
    plan = client_plan(setting, w.client.nunique())  # (family, config) of client_0, client_1, …
    change["config"] = [plan[int(c.split("_")[1])][1] for c in change.client]
    per_seed = change.groupby(["seed", "config"]).change.mean().unstack()  # per seed: mean over a config's clients
    per_seed["all clients"] = change.groupby("seed").change.mean()
    out = pd.DataFrame({c: t_interval(per_seed[c]) for c in per_seed}, index=["change", "± 95 %", "seeds"]).T
    starts = change.groupby("config").start.unique()
    out.insert(0, "rewards (MATH-, GSM8K-like)", [", ".join(REWARD_CONFIGS["math"][c]) for c in starts.index] + [""])
    out.insert(1, "clients", [*change.groupby("config").client.nunique(), change.client.nunique()])
    out.insert(2, "w_acc at round 1's start", [", ".join(f"{x:g}" for x in sorted(v, reverse=True)) for v in starts]
               + [f"{change.start.mean():.3f} (mean)"])
    return float(moa.mean_w_move.mean()), out.astype({"seeds": int}).round(3)


def configs_table(live_clients: int, setting: str = "heter+heter") -> pd.DataFrame:
    """Reward configs A, B, C (``fedrl_kit.fedmoa.plan``: the paper's Table 3 reward sets) as the live run
    (``live_clients`` clients) and the stored grid (its clients) use them: each config's rewards on the MATH- and
    GSM8K-like and on the MBPP-like family, then per run how many clients hold it and the w_acc they start round 1
    from, largest first ("—": no client; the starting weights are ours, the paper gives none)."""
    from fedrl_kit.fedmoa.plan import CONFIG_NAMES, REWARD_CONFIGS, client_plan, initial_weights

    def held(n):
        plan = client_plan(setting, n)
        starts = [w[0] for w in initial_weights(setting, plan)]
        out = []
        for c in CONFIG_NAMES:
            w0 = sorted({w for (_, cf), w in zip(plan, starts) if cf == c}, reverse=True)
            k = sum(cf == c for _, cf in plan)
            out.append(f"{k} ({', '.join(f'{w:g}' for w in w0)})" if k else "—")
        return out

    out = pd.DataFrame({"rewards: MATH-, GSM8K-like": [", ".join(REWARD_CONFIGS["math"][c]) for c in CONFIG_NAMES],
                        "rewards: MBPP-like": [", ".join(REWARD_CONFIGS["code"][c]) for c in CONFIG_NAMES],
                        "live run: clients (w_acc at start)": held(live_clients),
                        "stored grid: clients (w_acc at start)": held(fedmoa_setting(setting=setting)["clients"])},
                       index=list(CONFIG_NAMES))
    out.columns.name = "config"  # in the header's corner: no row of its own
    return out


def rewards_table() -> pd.DataFrame:
    """Every reward of configs A, B, C (``fedrl_kit.fedmoa.plan``) in one line each: what it scores (from the
    reward functions of ``fedrl_kit.rewards``, their constants read from the code) and which configs hold it on the
    MATH- and GSM8K-like and on the MBPP-like family. Each description stays under pandas' 50-character column,
    so that a table shows it whole."""
    from fedrl_kit.fedmoa.plan import CONFIG_NAMES, REWARD_CONFIGS
    from fedrl_kit.rewards.code import DEFAULT_CHAR_NGRAM, SHORT_TARGET_LEN

    scores = {"accuracy": "1 if the answer matches the gold one, else 0",
              "format": "1 for exactly <think>…</think><answer>…</answer>",
              "tag_count": "0.25 per tag (of the four) present exactly once",
              "code_accuracy": "1 if the program passes its tests, else 0",
              "code_format": "0.5 for the format + 0.5 for a program defining f",
              "length_short": f"1 up to {SHORT_TARGET_LEN} characters, falling to 0 at {4 * SHORT_TARGET_LEN}",
              "char_repetition": f"minus the share of repeated {DEFAULT_CHAR_NGRAM}-character strings"}
    rows = {}
    for family, label in (("math", "MATH-, GSM8K-like"), ("code", "MBPP-like")):
        for c in CONFIG_NAMES:
            for r in REWARD_CONFIGS[family][c]:
                rows.setdefault(r, {"scores": scores[r], "held by configs": {}})["held by configs"].setdefault(
                    label, []).append(c)
    out = pd.DataFrame({r: {"scores": v["scores"], "held by configs": "; ".join(
        f"{', '.join(cs)} ({label})" for label, cs in v["held by configs"].items())} for r, v in rows.items()}).T
    out.columns.name = "reward"  # in the header's corner: no row of its own
    return out


def arms_table(grid: pd.DataFrame, arms: dict | None = None) -> pd.DataFrame:
    """Exercise 5's four arms as the stored grid (``grid``: :func:`stored_runs`) ran them, one row each: whether
    eq. 10 moves the client's weights, how the server weighs a cluster's clients in eq. 12 (α of eq. 11, or data
    size), whether the weights the client gets back are eq. 12's averaged shared weights (only with eq. 10 on: with
    λ off the server sends each client its starting weights every round, ``fedrl_kit.fedmoa.algorithm.
    round_weights``), and the seeds run; the switches and seeds are read from the grid's runs."""
    arms = arms or {"FedAvg-GRPO": "FedAvg-GRPO", **ARMS}
    rows = {}
    for arm, variant in arms.items():
        runs = grid[grid.variant == variant]
        lam, alpha = bool(runs.lambda_on.iloc[0]), bool(runs.alpha_on.iloc[0])
        by = "α (eq. 11)" if alpha else "data size"
        rows[arm] = {"eq. 10 on the client": "on" if lam else "off",
                     "the server weighs a cluster's clients by": by,
                     "eq. 12 averages the shared weights": f"yes, by {by.split(' (')[0]}" if lam
                     else "no: starting weights every round",
                     "seeds": runs.seed.nunique()}
    out = pd.DataFrame(rows).T
    out.columns.name = "arm"  # in the header's corner: no row of its own
    return out


COSINE_GRID = "fedmoa_compare_cpu_cosine_homo+homo_gsm.json"
"""the stored grid that runs the paper's Fig. 5 cell (Homo+Homo, GSM8K-like) under its cosine learning-rate decay"""


def cosine_w_acc_rise(name: str = COSINE_GRID) -> tuple[float, float, int, str]:
    """FedMOA's within-round rise of w_acc (after a round's last local step − after its first, mean over clients and
    rounds) in the stored cosine-decay grid ``name`` of benchmarks/results, as its Fig. 5 verdict reads it
    (:func:`experiments.fedmoa_figure_claims.figure_claims`): (mean, 95 % t half-width, seeds, verdict)."""
    from experiments import fedmoa_figure_claims as claims

    grid = json.loads((RESULTS / name).read_text())
    rows = claims.figure_claims(grid["runs"], settings=("homo+homo",), families=("gsm",),
                                lr_schedule=claims.lr_schedule_of(grid))
    (row,) = [r for r in rows if r["figure"] == claims.CLAIMS["fig5"][0]]
    return row["mean"], row["half_width"], len(row["seeds"]), row["verdict"]


def fig5_rise_table() -> pd.DataFrame:
    """Fig. 5's own setting (Homo+Homo, GSM8K-like, FedMOA) in the two stored grids that ran it, read by
    :func:`cosine_w_acc_rise`: w_acc's rise within a round at a constant learning rate (the main grid) and under
    the paper's cosine decay, each with its 95 % t half-width, seeds and interval, one row per schedule."""
    rows = {}
    for label, name in (("constant (the grids')", "fedmoa_compare_cpu.json"),
                        ("cosine decay (the paper's)", COSINE_GRID)):
        rise, half, n, _ = cosine_w_acc_rise(name)
        lo, hi = rise - half, rise + half
        rows[label] = {"w_acc's rise within a round": f"{rise:+.4f}", "± 95 %": f"{half:.4f}", "seeds": n,
                       "95 % interval": f"{lo:+.4f} to {hi:+.4f}",
                       "reads": "above 0" if lo > 0 else "below 0" if hi < 0 else "holds 0"}
    out = pd.DataFrame(rows).T
    out.columns.name = "learning rate"  # in the header's corner: no row of its own
    return out


ARM_STYLE = {"FedAvg-GRPO": ("#636EFA", "circle"), "FedMOA": ("#EF553B", "diamond")}
"""each arm's colour and marker in the notebook's front figure"""


def front_figure(models: pd.DataFrame, order=None, x: str = "math/pass@1", y: str = "math/format") -> go.Figure:
    """The paper's Fig. 3 for final models: one point per row of ``models`` (columns ``variant``, ``seed``, ``x``,
    ``y``) coloured by arm and labelled by seed; the rows at positions ``order`` (the front, ascending in ``x``, as
    :func:`experiments.fedmoa_pareto.pareto_front_order` gives them) ringed and joined by the front's edge: down
    from each to the next one's height, then across to it (``order`` None: the points alone, for a reader to find
    the front). Both axes span the same width, the wider of the two rewards' ranges padded, each centred on its
    points (kept within 0–1), so that a narrow range on one reward is not drawn as wide as a broad one on the other;
    the y title gives the points' range, the x title the width both axes span."""
    fig = go.Figure()
    for arm, d in models.groupby("variant", sort=False):
        colour, symbol = ARM_STYLE.get(arm, ("grey", "square"))
        fig.add_trace(go.Scatter(x=d[x], y=d[y], mode="markers", name=arm, text=[f"s{s}" for s in d.seed],
                                 hovertemplate=f"{arm}, %{{text}}<extra></extra>",
                                 marker=dict(size=12, color=colour, symbol=symbol, line=dict(color="black", width=1))))
        for px, py, s in zip(d[x], d[y], d.seed):  # the seed above each point: clear of its ring and of the front's
            fig.add_annotation(x=px, y=py, text=f"s{s}", showarrow=False, yshift=21, font=dict(size=11))  # edge
    if order is not None:
        front = models.iloc[list(order)]
        fig.add_trace(go.Scatter(x=front[x], y=front[y], mode="lines+markers", name="Pareto front",
                                 line=dict(color="grey", dash="dot", shape="vh"),
                                 marker=dict(symbol="circle-open", size=24, color="black", line=dict(width=2))))
    lo, hi = models[y].min(), models[y].max()
    span = 1.3 * max(hi - lo, models[x].max() - models[x].min(), 0.01)  # one span for both axes: no zoom on one

    def centred(v):  # [a, a + span] around v's points, shifted to lie within 0–1
        a = min(max((v.min() + v.max() - span) / 2, 0.0), 1.0 - span)
        return [round(a, 4), round(a + span, 4)]
    fig.update_layout(template="plotly_white", height=400, legend=dict(orientation="h", y=-0.25),
                      title="final global model of each arm and seed (sN: seed N; stored grid, MATH-like tests)")
    fig.update_xaxes(title=f"accuracy (pass@1); each axis spans {span:.3f}", range=centred(models[x]))
    fig.update_yaxes(title=f"format reward (models: {lo:.3f}–{hi:.3f})", range=centred(models[y]))
    return fig


# -- the exercises ----------------------------------------------------------------------------------------------------
# Each check cell computes its answer in view, by a rule of a line or two; these write the why from the numbers that
# cell computed, so that the explanation, which would give the answer away before the reader predicts, stays folded.
def _vector(v) -> str:
    return "(" + ", ".join(f"{x:.3f}" for x in v) + ")"


def why_1(names, w, delta, w_after, w_package, lam: float) -> str:
    """Exercise 1 (one toy step of eq. 10): why the weights that rose did: which Δ_k beat the average Δ, which
    weights fell although their Δ_k > 0, the projection's shift ν (what w + λΔ holds beyond 1, taken equally from
    the weights that stay above 0), and the rule that follows (while no weight reaches 0, ν = λ × the average Δ, so a
    weight rises only when its Δ_k beats the average Δ: Δ_k > 0 is not enough)."""
    w, delta, w_after = np.asarray(w, float), np.asarray(delta, float), np.asarray(w_after, float)
    beat = [n for n, d in zip(names, delta) if d > delta.mean()]
    still = [f"{n}'s Δ = {d:g} is {'above 0 but ' if d > 0 else ''}below it"
             for n, d, a, b in zip(names, delta, w_after, w) if d >= 0 and a < b]
    v = w + lam * delta
    kept = int((w_after > 0).sum())
    why = (f"Δ = ({', '.join(f'{d:g}' for d in delta)}), each gradient dotted with its previous one; the average "
           f"Δ is {delta.mean():.2f}, and only {' and '.join(beat)}'s Δ {'beats' if len(beat) == 1 else 'beat'} it. ")
    if still:
        said = ", ".join(still)
        why += f"{said[0].upper()}{said[1:]}, so {'its weight falls' if len(still) == 1 else 'their weights fall'}. "
    where = "every weight" if kept == len(w) else f"the {kept} weights it leaves above 0"
    why += (f"w + λΔ = {_vector(v)} sums to {v.sum():.3g}, so the projection takes ν = {v.sum() - 1:.3g} / {kept} "
            f"from {where}: {_vector(w_after)} in numpy, {_vector(w_package)} by the package. The rule: while no "
            "weight reaches 0, ν is λ times the average Δ, the same for every weight, so a weight rises only when "
            "its Δ_k beats the average Δ; Δ_k > 0 is not enough.")
    return why


def why_2(answer: str, alpha, u) -> str:
    """Exercise 2 (eq. 12 for a client holding only shared rewards): why its w_acc lies ``answer`` ("above", "at",
    "below") the cluster's plain mean: eq. 11's α tilts w̄_acc, and u's sum rescales it (inflation below 1,
    dilution above)."""
    u = np.asarray(u, float)
    w_acc = u[0] / u.sum()
    scaled = "inflation lifts" if u.sum() < 1 else "dilution lowers"
    why = (f"α = {np.round(alpha, 3).tolist()}, so the tilt puts w̄_acc at {u[0]:.3f}. Q's u sums to {u.sum():.3f}, "
           f"so {scaled} its w_acc to {w_acc:.3f}")
    if answer == "below" and u.sum() < 1:
        why += ": here the tilt wins. With a smaller gap in w_acc, the tilt is weaker and inflation can win."
    else:
        why += ": here inflation wins." if answer == "above" and u.sum() < 1 else "."
    return why


def why_3(answer: str, end: pd.DataFrame, configs: pd.Series, by_config: pd.DataFrame) -> str:
    """Exercise 3 (the live run's first boundary): why eq. 12 sent config ``answer`` the lower w_acc: a config
    holding a reward the cluster does not share has u summing above 1 (diluted), one holding only shared rewards
    below 1 (inflated). ``end``: client × reward weights as sent to the server (NaN: not held); ``configs``: each
    of those clients' config; ``by_config``: per config, "u sums to" and "w_acc the run sent"."""
    shared = end.columns[end.notna().all()]
    parts = []
    for cfg, row in by_config.iterrows():
        held = end.loc[configs[configs == cfg].index].notna().all()
        own = [r for r in end.columns[held] if r not in shared]
        holds = f"config {cfg} also holds {', '.join(own)}, which the cluster does not share. Its" if own else \
            f"config {cfg} holds only shared rewards. Its"
        parts.append(f"{holds} u sums to {row['u sums to']:.3f}, so rescaling "
                     f"{'dilutes' if row['u sums to'] > 1 else 'inflates'} its w_acc.")
    why = " ".join(p[0].upper() + p[1:] if i else p for i, p in enumerate(parts))
    return (f"{why} From round 2 on, α favours config {answer}: the ranking follows which "
            "rewards a client holds, not its progress.")


def why_4(deltas: pd.DataFrame, lam: float, prompts: int, dims: int, max_tokens: int | None = None,
          on=None) -> str:
    """Exercise 4 (why eq. 10 is weak): the batch noise's size against the signal's, ‖n‖ / ‖s‖, from the live run's
    median |Δ_k| / ‖g_k‖² (:func:`delta_ratios`) by the notebook's signal-and-noise formula; that median against pure
    noise's 1/√``dims`` (φ's size), and λ|Δ_k|'s median at the run's λ; then, for each reward whose Δ_k is 0 at every
    step (``deltas`` with a ``reward`` column), why: its advantages, hence g_k, are 0 at one step or both (for
    length_short, answers capped at ``max_tokens`` tokens almost all score 1). ``on``: a mask of the rows the ratio is
    read on (the notebook's: each client's accuracy reward); None: every row."""
    read = deltas if on is None else deltas[on]
    median = read.ratio.median()
    noise = np.sqrt(1 / median - 1) if median > 0 else float("inf")  # ‖n‖ / ‖s‖ by the signal-and-noise formula
    why = (f"‖n‖ / ‖s‖ ≈ √(1/{median:.3f} − 1) = {noise:.1f}, from |Δ_k| / ‖g_k‖² ≈ ‖s‖² / (‖s‖² + ‖n‖²): the batch "
           f"noise is {noise:.1f} times the signal. The median |Δ_k| / ‖g_k‖² is {median:.3f} (largest {read.ratio.max():.2f}): above pure noise's "
           f"1/√{dims:,} = {dims ** -0.5:.3f}, so there is some signal, but far below 1. Each step draws a new batch "
           f"of only {prompts} prompts, so batch noise dominates each g_k. At λ = {lam:g}, λ|Δ_k| then has median "
           f"{lam * deltas.delta.abs().median():.4f}: eq. 10 hardly moves the weights.")
    if "reward" in deltas:
        for reward, d in deltas.groupby("reward"):
            if d.delta.eq(0).all():
                cap = (f" (answers are capped at {max_tokens} tokens, so almost all score 1)"
                       if reward == "length_short" and max_tokens else "")
                why += (f" {reward}'s Δ_k is 0 at every step: its reward barely varies within a group{cap}, so its "
                        "advantages, hence g_k, are 0 at one step or both.")
    return why


ARMS = {"FedMOA": "FedMOA", "eq. 10 alone": "λ on, α off", "α alone": "λ off, α on"}
"""Exercise 5's arms: the name the notebook gives each → its variant in the stored grid (eq. 10 alone: α off, the
clients counted by data size in eqs. 12–13; α alone: λ off, the weights moved only by eq. 12)"""


def arm_gains(grid: pd.DataFrame, arms: dict = ARMS, family: str = "math") -> pd.DataFrame:
    """Each of ``arms`` against FedAvg-GRPO in the stored grid (``grid``: :func:`stored_runs`), paired by seed, on
    ``family``'s tests: the paper's difference (its Table 2 on MATH; NaN where it has no such row) beside the grid's
    mean and 95 % Student-t half-width over the seeds both arms ran, for accuracy (pass@1, in points) and the
    aggregated reward (the client's rewards, equal weights); then the seeds. One row per arm."""
    from experiments.stats import t_interval

    base = grid[grid.variant == "FedAvg-GRPO"].set_index("seed")
    paper0 = PAPER_TABLE2["FedAvg-GRPO"]
    cols = {}
    for arm, variant in arms.items():
        rows = grid[grid.variant == variant].set_index("seed")
        paper = PAPER_TABLE2.get(variant)
        for i, (measure, column, unit) in enumerate([("accuracy (points)", f"{family}/pass@1", 100),
                                                     ("aggregated reward", f"{family}/aggregated_reward", 1)]):
            diff = unit * (rows[column] - base[column]).dropna()  # paired by seed
            mean, half, n = t_interval(diff)
            gain = float("nan") if paper is None else paper[i] - paper0[i]
            cols.setdefault(arm, {}).update({(measure, "paper"): round(gain, 4), (measure, "stored grid"): mean,
                                             (measure, "± 95 %"): half})
        cols[arm][("", "seeds")] = n  # the seeds both arms ran, last
    out = pd.DataFrame(cols).T
    out.columns = pd.MultiIndex.from_tuples(out.columns)
    return out.astype({("", "seeds"): int})


def why_5(answer: set, gains: pd.DataFrame, lam_delta: float) -> str:
    """Exercise 5 (each part of FedMOA alone against FedAvg-GRPO, :func:`arm_gains`): why the arms in ``answer``
    (those whose accuracy interval lies above 0) are the ones that beat it: each arm's interval, whether it holds
    the paper's gain, whether the seeds could tell (an arm below the bar whose interval holds both 0 and a gain as
    large as the paper's, its own or, where the paper has none, the largest it reports, is inconclusive; with
    ``("", "seeds")`` in ``gains`` each is named with its seeds), the aggregated reward beside the paper's (where
    ``gains`` has it), and the mechanism (``lam_delta``: eq. 10's median λ|Δ_k| a step in the live run)."""
    acc = gains["accuracy (points)"]
    lo, hi = acc["stored grid"] - acc["± 95 %"], acc["stored grid"] + acc["± 95 %"]
    seeds = gains[("", "seeds")] if ("", "seeds") in gains else None
    head = ("no interval lies above 0" if not answer else
            f"only {' and '.join(sorted(answer))}'s interval{'s lie' if len(answer) > 1 else ' lies'} above 0")
    spans = "; ".join(f"{arm} {lo[arm]:+.2f} to {hi[arm]:+.2f}" for arm in acc.index)
    paper = [f"{arm}'s {'holds' if lo[arm] <= p <= hi[arm] else 'excludes'} the paper's {p:+.1f}"
             for arm, p in acc["paper"].items() if not np.isnan(p)]
    why = f"{head} (accuracy, points, 95 %: {spans}); {' and '.join(paper)}."
    target = acc["paper"].fillna(acc["paper"].max())  # the gain each arm would have to show
    open_ = [arm for arm in acc.index if arm not in answer and lo[arm] <= 0 and hi[arm] >= target[arm]]
    if open_:
        n = (lambda arm: f", {seeds[arm]} seeds") if seeds is not None else (lambda arm: "")
        said = " and ".join(f"{arm} (±{acc['± 95 %'][arm]:.2f}{n(arm)})" for arm in open_)
        why += (f" Power: the interval{'s' if len(open_) > 1 else ''} of {said} "
                f"{'hold' if len(open_) > 1 else 'holds'} both 0 and a gain as large as the paper's, so "
                f"{'their' if len(open_) > 1 else 'its'} \"no gain beyond noise\" is inconclusive: too few seeds to "
                "tell.")
        sure = [arm for arm in acc.index if arm not in open_ and arm not in answer]
        if sure:
            said = " and ".join(f"{arm}'s (±{acc['± 95 %'][arm]:.2f}{n(arm)})" for arm in sure)
            why += f" {said} {'are' if len(sure) > 1 else 'is'} narrow enough to rule out the paper's gain."
    if "aggregated reward" in gains:  # Table 2's other column
        agg = gains["aggregated reward"]
        said = "; ".join(f"{arm} {agg['stored grid'][arm]:+.4f} ± {agg['± 95 %'][arm]:.4f}"
                         + ("" if np.isnan(agg["paper"][arm]) else f" (the paper's {agg['paper'][arm]:+.3f})")
                         for arm in agg.index)
        why += (" The table's aggregated reward (Table 2's: each client's rewards averaged, then over clients): "
                f"{said}.")
    return (why + f" Eq. 10 alone moves a weight by a median λ|Δ_k| of {lam_delta:.4f} a step in the live run; "
            "between rounds eq. 12 still averages its shared weights, by data size, so its weights move mostly "
            "there, as FedMOA's do, and nothing in either steers by progress. α alone changes only how much each client counts in θ^(c): with eq. 10 "
            "off every client trains on its starting weights each round, so α ranks clients by those, never by "
            "progress: nothing in it steers the model toward accuracy.")


def why_6(final: pd.DataFrame, order, chance: float, x: str = "math/pass@1", y: str = "math/format",
          arm: str = "FedMOA") -> str:
    """Exercise 6 (the Pareto front of the grid's final models): why the front holds the models it does: with
    format nearly equal the front is close to an accuracy ranking; a less accurate model joins only by a better
    format; ``chance``: how often front places drawn at random would give ``arm`` as many (the cell computes it).
    ``final``: one row per model (``variant``, ``x``, ``y``); ``order``: the front's rows by accuracy."""
    front = final.iloc[list(order)]
    n, n_front, k = len(final), len(front), int((front.variant == arm).sum())
    best = front.iloc[-1]
    others = [f"{r.variant}'s seed {r.seed} ({r[x]:.3f}, {r[y]:.3f})" for _, r in front.iloc[:-1][::-1].iterrows()]
    why = (f"format spans only {final[y].min():.3f} to {final[y].max():.3f}, so the front is nearly an accuracy "
           f"ranking: the most accurate model ({best.variant}'s seed {best.seed}, {best[x]:.3f}), then each less "
           "accurate one with a better format")
    why += f": {'; '.join(others)}. " if others else " (none here). "
    why += (f"{k} of the front's {n_front} models are {arm}'s. Were the {n_front} places drawn at random among the "
            f"{n} models, {arm} would get {k} or more with chance {chance:.2f}"
            + (": the front does not separate the arms." if chance > 0.05 else "."))
    return why


def config_means(w: pd.DataFrame, configs: pd.Series, cluster: int = 0) -> pd.DataFrame:
    """Cluster ``cluster``'s w_acc as sent and α at each round's end (``w``: :func:`w_acc_table`), averaged over the
    clients of each reward config (``configs``: client → config), one row per round: w_acc's columns first."""
    w = w[w.cluster == cluster].assign(config=lambda d: d.client.map(configs))
    out = w.pivot_table(index="round", columns="config", values=["start", "alpha"])[["start", "alpha"]]
    label = {"start": "w_acc as sent", "alpha": "α at the round's end"}
    return out.set_axis([f"{label[v]}, config {c}" for v, c in out.columns], axis=1)


def front_chance(final: pd.DataFrame, order, arm: str = "FedMOA") -> float:
    """How often ``arm`` would hold at least as many of the front's places as it does (``order``: the front's rows of
    ``final``) if those places went to models drawn at random, without replacement, from ``final`` (the
    hypergeometric tail)."""
    from math import comb

    n, n_front, n_arm = len(final), len(order), int((final.variant == arm).sum())
    k = int((final.variant.iloc[list(order)] == arm).sum())
    return sum(comb(n_arm, j) * comb(n - n_arm, n_front - j) for j in range(k, n_front + 1)) / comb(n, n_front)


def aux_gap(final: pd.DataFrame, reward: str = "tag_count", family: str = "math") -> tuple[float, float, int]:
    """FedMOA − FedAvg-GRPO on the final global model's ``reward`` over ``family``'s tests (stored grid rows of both
    arms, ``history`` kept), paired by seed: (mean, 95 % Student-t half-width, seeds)."""
    from experiments.stats import t_interval

    value = {v: pd.Series({r.seed: r.history["server"][-1][f"{family}/{reward}"]
                           for r in final[final.variant == v].itertuples()}) for v in ("FedMOA", "FedAvg-GRPO")}
    return t_interval((value["FedMOA"] - value["FedAvg-GRPO"]).dropna())


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
    hh = fedmoa_setting()
    return pd.DataFrame([
        ("the paper (§4.1)", "0.01, fixed, on eq. 9's dot product"),
        ("the stored cpu grid (FedMOA)", f"{hh['lam']['FedMOA']:g}, fixed, tuned on validation"),
        ("notebook 03's live run (quick)", f"{hh['lam']['FedMOA']:g}, fixed: the grid's (config_maker)"),
        ("the grid's λ = 100 arm (F5)", f"{hh['lam']['FedMOA, λ=100']:g}, fixed")],
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
