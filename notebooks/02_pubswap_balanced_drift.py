# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # PubSwap: public-data steps with response swapping against client drift
#
# Paper: *PubSwap* (Nayak, Askin, Ustaomeroglu, Joe-Wong, Joshi; Carnegie Mellon University); code: `fedrl_kit/pubswap/method.py`,
# `fedrl_kit/pubswap/swap.py`, `fedrl_kit/drift.py`, `fedrl_kit/drift_probe.py`.
#
# **The problem.** In FedAvg-GRPO every client runs τ local GRPO steps on its own private problems
# before the server averages the LoRA adapters. Under heterogeneous data, more local steps mean the
# clients' adapters *drift* apart, and the average of drifted adapters is a worse model. Larger τ is
# what we want for communication, so drift is the price.
#
# **The idea.** A small *public* dataset D_pub that every client may see. Every τ_swap-th local step
# is a *public step*: all clients answer the same public prompts, send the answers (texts and 0/1
# correctness, no parameters) to the server, and the server hands each client back a group of K
# responses to train on:
#
# - **Random** — K responses drawn uniformly from the pooled N·K, the same group for everyone;
# - **Balanced** — a client with c_n < K/2 correct answers swaps up to K/2 − c_n of its incorrect
#   answers for correct answers of *other* clients; otherwise it keeps its own group.
#
# All clients take a step on the same prompts, which anchors them; Balanced keeps most of each
# client's group on-policy while making sure the group has correct answers to learn from.
#
# This notebook: (1) the world and its heterogeneity, (2) one swap step by step, (3) drift over the
# local steps of a round for FedAvg-GRPO, Random and Balanced at small and large τ, (4) the paper's
# tables (1, 4, 5) measured in the embedded world, with what they do and do not test.
#
# **The paper's setting.** Every run made here uses it unless `setting` says otherwise: the server
# averages A and B separately and uniformly (FedIT, eq. 4), the clients' optimiser is AdamW with weight
# decay 0.01 (Tables 9–12), and the clients hold equally many problems (appendix B.1).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill, e.g.
# `papermill notebooks/02_pubswap_balanced_drift.ipynb out.ipynb -p preset_name full -p run_sweep True`.
# With `run_sweep = False` the tables of §5 and the claims of §6 are read from the stored summaries in
# `benchmarks/results/` (they take several CPU-hours; the commands that produced them are shown next to
# them); `run_sweep = True` runs (or resumes) the whole grid here, in `<run_root>/sweep`; `run_root` (figures
# too) is `runs/pubswap/<preset>-<setting>-n<N>-a<α>` under the repository unless given. Only the quick scale's results are
# stored, so `preset_name = "full"` (a GPU) needs `run_sweep = True`; on a machine without a GPU it stops at
# once, in one line. `"smoke"` is the quick preset at tiny sizes (seconds per run: what CI runs), with
# `run_sweep = True` a grid of the same tables on 4 local steps per client. `setting = "paper"` is FedIT + weight
# decay 0.01 + equal-size clients; `"fedavg_examples"` is the setting of the first stored sweep (FedAvg by
# examples, plain Adam, unequal clients). `results_setting` picks which stored summary the tables read:
# `"paper"` (the default), or `"fedavg_examples"` for the first sweep, which every table then labels as the
# old setting, not the paper's.

# %% tags=["parameters"]
preset_name = "quick"      # "quick" (2-core CPU), "smoke" (tiny sizes, seconds), "full" (GPU, real model), "full-smoke"
seed = 0
num_clients = 4            # N (the runs made here, the sweep's too)
taus = None                # τ values for the drift curves; None: (2, 8) quick, (2, 4) smoke, (10, 120) full
dirichlet_alpha = 0.3      # the paper's Table 1 heterogeneity (the runs made here, the sweep's too)
setting = "paper"          # runs made here: "paper" (FedIT, weight decay 0.01, equal size) or "fedavg_examples"
run_sweep = False          # run the table grid here (hours on a CPU) instead of reading stored results
sweep_seeds = [0, 1, 2]    # seeds of the grid when run_sweep
results_setting = "paper"  # the stored summary the tables read without run_sweep: "paper" or "fedavg_examples" (old)
run_root = ""              # the sweep's runs and the figures; "": runs/pubswap/<one folder per set of parameters>
results_root = ""          # the stored summaries; "": benchmarks/results in the repository
figures_dir = ""           # "": this notebook's run folder; `make figures` passes ../figures

# %%
import json
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from experiments.sweep import SETTINGS, result_path, stored_records
from fedrl_kit import viz
from fedrl_kit.config import preset
from fedrl_kit.pubswap.method import is_public_step
from fedrl_kit.notebook import (NotebookStop, check_preset, check_run_root, config_preset, is_smoke, knobs,
                                quiet_progress_bars, repo_path, require_gpu, run_folder, shown_path, smoke_fields)
from fedrl_kit.pubswap.public_step import generate_public, group_table, off_policy_terms, swap_public
from fedrl_kit.runs import Run
from fedrl_kit.world.partition import partition, topic_matrix

check_preset(preset_name, ("quick", "smoke", "full", "full-smoke"))
# smoke: the quick preset with a tiny world and budget (a handful of problems, 2 answers each), for CI
SMOKE = dict(n_train=64, n_test=8, n_public=8, prompts_per_step=2, num_generations=2, eval_samples=1,
             num_iterations=1)
SIZES = smoke_fields(preset_name, SMOKE, fixed=("num_clients", "rounds", "local_steps"))
base_cfg = preset(config_preset(preset_name), num_clients=num_clients, seed=seed, dirichlet_alpha=dirichlet_alpha,
                  pubswap={"period": 2}, **SETTINGS[setting], **SIZES)
require_gpu(base_cfg.device, preset_name)  # full on a laptop stops here, in one line
if preset_name == "full" and not run_sweep:
    raise NotebookStop("full-scale results are not stored (benchmarks/results holds the quick scale's): add "
                       "-p run_sweep True to run the grid here on a GPU, or make them with "
                       "benchmarks/pubswap_sweep.py --preset full --seeds 0 1 2")
out_dir = check_run_root(run_folder("pubswap", preset_name, setting, n=num_clients, a=dirichlet_alpha, run_dir=run_root))
results_root = Path(results_root) if results_root else repo_path("benchmarks/results")
quiet_progress_bars()
viz.setup_notebook()
FIGURES = Path(figures_dir) if figures_dir else out_dir / "figures"  # where this notebook's figures go
pd.set_option("display.width", 140)
pd.set_option("display.max_colwidth", 40)
taus = tuple(taus or {"quick": (2, 8), "smoke": (2, 4), "full": (10, 120), "full-smoke": (2, 4)}[preset_name])
METHODS = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_random": "PubSwap Random", "pubswap_balanced": "PubSwap Balanced"}
pd.Series({**{k: v for k, v in base_cfg.to_dict().items() if k in (
    "base", "num_clients", "prompts_per_step", "num_generations", "learning_rate", "weight_decay", "lora_rank",
    "partition", "dirichlet_alpha", "equal_size", "aggregator", "n_public")}, "pubswap.period": base_cfg.pubswap.period},
          name="value").to_frame()

# %% [markdown]
# ## 1. Who holds what
# The paper's Table 1 splits data with a Dirichlet(α = 0.3) over topics into equal-size clients
# (4 × 2,500 problems); its Table 4 uses a more heterogeneous α = 0.1, again equal-size. The bubble
# plots show both splits of our world's private pool (bubble area ∝ examples of a topic on a client).

# %%
# NBVAL_CHECK_OUTPUT
probe_run = Run(base_cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy
splits = {f"Dirichlet α = {base_cfg.dirichlet_alpha}" + (" (Table 1)" if base_cfg.dirichlet_alpha == 0.3 else ""):
              probe_run.partitions,
          "Dirichlet α = 0.1, equal size (Table 4)": partition(world.train, num_clients, "dirichlet", 0.1, equal_size=True,
                                                                 seed=seed)}
pd.DataFrame({name: [len(p) for p in parts] for name, parts in splits.items()},
             index=[f"client_{i}" for i in range(num_clients)])

# %%
figs = []
for name, parts in splits.items():
    names, counts = topic_matrix(parts)
    figs.append(viz.heterogeneity_bubbles(names, counts, title=f"topics per client: {name} (bubble area ∝ examples)"))
viz.export(figs[0], f"pubswap_heterogeneity_alpha{base_cfg.dirichlet_alpha}", FIGURES)
viz.export(figs[1], "pubswap_heterogeneity_alpha0.1", FIGURES)
figs[0].show()
figs[1]

# %% [markdown]
# ## 2. Drift within a round
# One round from the same starting adapter for each method and each τ, with `trace_drift=True`:
# after every local step the probe measures every client's adapter and gradient
# (`fedrl_kit/drift_probe.py`; simulation-side, it changes neither training nor the ledger — a test
# checks that; the embedded world's adapters are small enough to keep whole and measure exactly, a real
# model's are reduced to fixed-size sketches as they come, so tracing costs bounded memory). We plot
#
# - **pairwise drift** ‖s·B_nA_n − s·B_n'A_n'‖_F averaged over client pairs (the effective weight
#   change, blind to LoRA's A/B gauge), and the same on the raw factors (A, B), which is what FedIT
#   averages;
# - **distance to the round's global adapter**;
# - **gradient spread** (1/N) Σ‖g_n − ḡ‖² / ‖ḡ‖² of the clients' step gradients: on private steps, the
#   appendix's dissimilarity ζ; on public steps, where everyone trains on the same prompts, the spread that is left.

# %%
drift_runs = {}
for tau in taus:
    for m in METHODS:
        cfg = base_cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, eval_samples=1,
                               pubswap={"period": 2})
        run = Run(cfg, progress=False, policy=policy)
        drift_runs[(m, tau)] = (run, run.run())
drift = pd.DataFrame([{"method": METHODS[m], "tau": tau, **{k: v for k, v in r.items() if k != "replacement_per_prompt"}}
                      for (m, tau), (_, recs) in drift_runs.items() for r in recs if r["kind"] == "drift"])
drift[["method", "tau", "step", "step_kind", "pairwise_effective", "pairwise_factors", "to_global_effective",
       "grad_dissimilarity", "frac_zero_std"]].round(3)

# %%
fig = make_subplots(rows=2, cols=len(taus), subplot_titles=[f"τ = {t}" for t in taus], shared_yaxes=True,
                    vertical_spacing=0.12)
colors = {"FedAvg-GRPO": "#636efa", "PubSwap Random": "#00cc96", "PubSwap Balanced": "#ef553b"}
for j, tau in enumerate(taus, 1):
    for name, color in colors.items():
        d = drift[(drift.method == name) & (drift.tau == tau)]
        marker = dict(symbol=["circle" if k == "private" else "star" for k in d.step_kind], size=9)
        for row, y in ((1, d.pairwise_effective), (2, d.reward_std)):
            fig.add_trace(go.Scatter(x=d.step + 1, y=y, name=name, legendgroup=name, showlegend=j == 1 and row == 1,
                                     mode="lines+markers", line=dict(color=color), marker=marker), row=row, col=j)
fig.update_layout(template="plotly_white", height=620,
                  title="after each local step (★ = public step): pairwise client drift (top), within-group reward std (bottom)")
fig.update_yaxes(title_text="mean ‖ΔW_n − ΔW_n′‖_F", row=1, col=1)
fig.update_yaxes(title_text="reward std in a group", row=2, col=1)
fig.update_xaxes(title_text="local step", row=2)
viz.export(fig, "pubswap_drift_within_round", FIGURES)
fig

# %%
end = drift.sort_values("step").groupby(["method", "tau"]).last().reset_index()
gd = drift.groupby(["method", "tau", "step_kind"]).grad_dissimilarity.mean().unstack("step_kind")
end_table = end.pivot(index="method", columns="tau", values="pairwise_effective").round(3)
end_table.columns = [f"drift at end of round, τ = {t}" for t in end_table.columns]
end_table.join(gd.groupby("method").mean().round(3).add_prefix("gradient spread, "))

# %% [markdown]
# Read the table above: the *end-of-round* drift is what the server averages; the gradient spread
# columns compare private steps (each client on its own topics, the appendix's ζ) with public steps (everyone
# on the same prompts). The public-step spread is *not* the appendix's L_pub against L_priv: on shared prompts
# the clients' gradients still differ because their adapters have drifted apart (the appendix's L_pub·‖Δ‖ term),
# because the swap puts different answers into each client's groups (its off-policy distortion ω_n, measured in §3)
# and because each samples its own answers (its noise ξ_n); the column mixes the three.
# These are one round from one seed; the sweep below averages end-of-round drift over every round of longer
# runs.

# %% [markdown]
# ## 3. One swap, step by step
# Take the clients' adapters at the end of the τ = max round above (Balanced) and replay that round's last
# public step on them: the same b public prompts, the same rollout streams and the same swap stream as the
# round used (`generate_public` and `swap_public` in `fedrl_kit/pubswap/public_step.py`; on the adapters the
# step itself saw they reproduce its swap exactly, which a test checks). The adapters have taken one more
# step since, so these are the answers the clients would give now. Each client answers every prompt K times;
# then both rules are applied to the pooled answers. Pick a client and a prompt: the table shows the
# client's own K answers, which slots Balanced replaces and with whose answer, and the Random group for
# comparison.

# %%
run, _ = drift_runs[("pubswap_balanced", max(taus))]
round_ledger = pd.DataFrame(run.runtime.ledger.to_rows())  # §4 reads the round as trained, before the replay below
last_public = max(s for s in range(run.config.local_steps) if is_public_step(s, run.config.pubswap.period))
gen = generate_public(run.server, round=1, step=last_public)  # one real public_generate message, answered now
K, batch, cids = gen.num_generations, gen.batch, gen.client_ids
correct = pd.DataFrame({cid: [sum(c) for c in g["correct"]] for cid, g in zip(cids, gen.generated)},
                       index=[f"{p} (gold {a})" for p, a in zip(batch["prompt"], batch["answer"])])
correct.index.name = f"correct answers out of K = {K}"
correct

# %%
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b SwapResults per rule
# a prompt where client 0 has few correct answers but others have some: Balanced has something to do
c0 = np.array([sum(c) for c in gen.generated[0]["correct"]])
others = np.array([sum(sum(g["correct"][i]) for g in gen.generated[1:]) for i in range(len(c0))])
example_prompt = int(np.argmax((c0 < K // 2) * (others > 0) * (K - c0))) if ((c0 < K // 2) & (others > 0)).any() else 0
view = group_table(gen, swaps["balanced"], 0, example_prompt)
# Balanced replaces M = min(⌊K/2⌋ − c, D) of the client's K answers, D the correct answers the other clients gave
M = min(max(K // 2 - int(c0[example_prompt]), 0), int(others[example_prompt]))
assert round(view.attrs["alpha"] * K) == M, "the swap does not follow M = min(⌊K/2⌋ − c, D)"
print(f"prompt {batch['prompt'][example_prompt]!r}, gold {batch['answer'][example_prompt]}: "
      f"{cids[0]} has c = {c0[example_prompt]} of K = {K} correct, the other clients D = {others[example_prompt]}; "
      f"Balanced replaces M = min(⌊K/2⌋ − c, D) = {M} answers, α = M/K = {view.attrs['alpha']:.3f} of its group")
view

# %%
group_table(gen, swaps["random"], 0, example_prompt)

# %% [markdown]
# **Turn the knobs** (live with a running kernel; the tables appear on the first change): the swap rule,
# the group size K (the first K of each client's answers are pooled, so Balanced's threshold K/2 moves
# with it), the client and the prompt.
# Only the swap is recomputed — with the round's own swap stream — not the answers and not training. The
# second table is α_n, the fraction of each client's group swapped in, averaged over the b prompts.

# %%
import ipywidgets as widgets
from IPython.display import display


def show(rule, K, client, prompt):
    res = swap_public(gen, rule, K)
    v = group_table(gen, res, client, prompt)
    print(f"{rule}, K = {K}: {cids[client]}, prompt {batch['prompt'][prompt]!r} (gold {batch['answer'][prompt]}): "
          f"α = {v.attrs['alpha']:.3f} swapped in")
    display(v)
    display(pd.DataFrame({"α_n (mean over prompts)": np.mean([r.replacement_fraction for r in res], axis=0).round(3),
                          "correct in group (mean)": np.mean([r.correct.sum(axis=1) for r in res], axis=0).round(2)},
                         index=cids).T)


knobs(show, rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")]),
      K=widgets.IntSlider(K, 2, K, continuous_update=False),
      client=widgets.Dropdown(options=[(c, i) for i, c in enumerate(cids)], value=0),
      prompt=widgets.Dropdown(options=[(p, i) for i, p in enumerate(batch["prompt"])], value=example_prompt))

# %% [markdown]
# Under **Random** every client trains on the same K answers, mostly other clients' (off-policy
# for it: their token probabilities under its own policy can be low). Under **Balanced** a client
# keeps its own group unless it has fewer than K/2 correct answers; then only incorrect slots are
# replaced, and only by correct answers from elsewhere (never its own). The swapped-in answers are
# scored by the client's *current* policy as π_old, so their importance ratio starts at 1
# (`fedrl_kit/pubswap/method.py` documents this choice; the paper does not say).

# %% [markdown]
# **The off-policy distortion, measured** (appendix A.2). Balanced's swapped-in answers change the gradient of a
# client's public step: the appendix writes the change as e_n = g_n^Balanced − g_pub, bounds its norm ω_n by
# (1/b) Σ_x M_n(x) β_n(x), and argues that ω_n is small when few slots are replaced (small α) and when one
# replacement moves the gradient little (small β). `off_policy_terms` measures them on this step, for each client
# at its current adapter: the gradient of the step's loss on each prompt's group before the swap, and after each of
# Balanced's replacements made one at a time. These are single draws of this one step, not the appendix's
# expectations, and β here is the largest change one of Balanced's own replacements made: a lower bound on the
# appendix's supremum over all replacements. A client that replaced nothing has ω_n = 0. With
# `--set pubswap.trace_off_policy=true` a Balanced run measures the same terms at every public step, for every
# client, without changing what it trains; `docs/pubswap.md` ("The appendix's quantities, measured") gives them
# over whole runs and seeds, and finds this step typical.

# %%
terms = {cid: off_policy_terms(run.clients[cid], gen, swaps["balanced"], n) for n, cid in enumerate(cids)}
pd.DataFrame({cid: {"replacements M (all b prompts)": int(t["M"].sum()), "α_n (mean over prompts)": t["alpha"].mean(),
                    "‖ĝ_n‖ (on-policy public gradient)": t["on_policy"], "ω_n = ‖e_n‖": t["omega"],
                    "ω_n / ‖ĝ_n‖": t["omega"] / t["on_policy"] if t["on_policy"] else float("nan"),
                    "max_x β_n(x)": t["beta"].max(),
                    "bound (1/b) Σ_x M_n(x) β_n(x)": t["bound"]}
              for cid, t in terms.items()}).round(4)

# %% [markdown]
# ## 4. What crossed the wire
# Per round, a PubSwap client sends its LoRA factors once (like FedAvg) plus, on each public step,
# b·K short texts and their 0/1 correctness. From the ledger of the τ = max Balanced round:

# %%
led = round_ledger[round_ledger["round"] == 1]
per_kind = led.groupby(["kind", "direction"]).nbytes.sum()
fig = viz.communication_bars({k: int(v) for k, v in per_kind.items()},
                             title=f"bytes in one Balanced round (τ = {max(taus)}, N = {num_clients})")
fig.update_layout(xaxis_title="message kind (direction)", yaxis_title="bytes, all clients (log scale)")
viz.export(fig, "pubswap_communication", FIGURES)
fig

# %%
adapter = int(per_kind.get(("fit_end_result", "up"), 0))
public = int(sum(v for (k, d), v in per_kind.items() if k.startswith("public")))
pd.Series({"LoRA factors up (all clients), bytes": f"{adapter:,}", "public-step messages (both ways), bytes": f"{public:,}",
           "public / LoRA": f"{public / max(adapter, 1):.3f}"}).to_frame("one round")

# %% [markdown]
# ## 5. The paper's tables in the embedded world, in the paper's setting
# **Design (equal budget).** Every run does the same number of local GRPO steps per client; τ local steps
# per round means budget / τ rounds, so larger τ is fewer communications. Table 1: FedAvg-GRPO,
# FedProx-GRPO at every μ of the grid (all reported, not only the best), PubSwap Random and Balanced;
# Table 4: FedAvg-GRPO against Balanced on a more heterogeneous split with equal-size clients; Table 5:
# Balanced at other swap periods τ_swap (Table 1's Balanced run is its smallest τ_swap). Every method gets the
# same settings (learning rate, b, K, LoRA rank, FedIT, AdamW with weight decay); none was tuned for this
# comparison except FedProx's μ, as in the paper. The first cell below says which file it read and in which
# setting; the second prints the design read from the rows (budget, τ, rounds, τ_swap, Dirichlet α, seeds,
# test set) beside the paper's (`full` scale): scaled down, all for a 2-core CPU, are the model (the embedded tiny
# policy instead of Qwen models), the world (arithmetic topics instead of MATH / DeepMath), the budget (keeping the
# paper's ratio of its largest τ to the budget), b = 8 prompts instead of 32, completions of at most 20 tokens
# instead of 1,024, and the GRPO knobs a tiny policy trained from scratch needs: learning rate 2e-3 instead of 1e-5,
# LoRA r = 8 instead of 32, rollout temperature 1.0 instead of 0.7, no KL term (β = 0 instead of 1e-4).
#
# The stored summary `benchmarks/results/pubswap_paper_quick.json` (one row per run: its settings, numbers, curves and
# a digest of its records) comes from these commands, run from the repository root:
#
# ```
# export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
# .venv/bin/python benchmarks/pubswap_sweep.py --tables table1 --seeds 0 1 2 --taus 8 2 --methods fedavg_grpo pubswap_balanced pubswap_random
# .venv/bin/python benchmarks/pubswap_sweep.py --tables table1 --seeds 0 1 2 --taus 8 2 --methods fedprox_grpo_mu0.001 fedprox_grpo_mu0.01 fedprox_grpo_mu0.1
# .venv/bin/python benchmarks/pubswap_sweep.py --tables table4 table5 --seeds 0 1 2
# ```
#
# The first sweep, in the old setting (`-p results_setting fedavg_examples`, `benchmarks/results/pubswap_sweep.json`),
# came from `benchmarks/pubswap_sweep.py --setting fedavg_examples`; `benchmarks/README.md` lists its invocations.

# %%
from experiments.sweep import (PUBSWAP_SCALES, pubswap_claims_both, pubswap_grid, run_grid, summary_row, table,
                               table5_arms)

scale = {"quick": "quick", "smoke": "smoke", "full": "full", "full-smoke": "smoke"}[preset_name] if run_sweep else "quick"
if run_sweep:
    grid = pubswap_grid(config_preset(preset_name), seeds=tuple(sweep_seeds), alpha=dirichlet_alpha, setting=setting,
                        scale=scale, num_clients=num_clients, **SIZES)
    results = out_dir / "sweep"  # resumable: a second run reads back the runs already done
    done = run_grid(grid, results, progress=False)
    rows = [summary_row(n, grid[n], r, preset=preset_name, scale=scale, setting=setting) for n, r in done.items()]
    run_cfg = next(iter(grid.values()))
else:
    results = result_path(results_setting, scale, results_root)
    rows = json.loads(Path(results).read_text())
    for r in rows:  # the first stored sweep predates these columns: it ran FedAvg by examples and plain Adam
        r.setdefault("setting", results_setting)
        r.setdefault("aggregator", SETTINGS[results_setting]["aggregator"])
        r.setdefault("weight_decay", SETTINGS[results_setting]["weight_decay"])
sweep = pd.DataFrame(rows)
SETTING_LABEL = ("the paper's setting" if set(sweep.setting) == {"paper"} else
                 f"THE OLD SETTING {sorted(set(sweep.setting))}, not the paper's: its verdicts are 'not tested' for the paper")
print(f"{len(rows)} runs read from {shown_path(results)}: {SETTING_LABEL} (aggregator {sorted(set(sweep.aggregator))}, "
      f"weight decay {sorted(set(sweep.weight_decay))}, equal-size clients {sorted(set(sweep.equal_size))} in "
      f"{sorted(set(sweep.table))})")
sweep[["name", "pass@1_start", "pass@1_final", "pass@1_best", "best_round", "drift_end_pairwise_effective",
       "seconds"]].round(3)

# %%
# NBVAL_CHECK_OUTPUT
sweep["local_steps_per_client"] = sweep.tau * sweep.rounds


def sorted_set(col):
    return sorted(set(col.dropna()))


design = sweep.groupby("table").agg(runs=("name", "size"), seeds=("seed", sorted_set), tau=("tau", sorted_set),
                                    rounds=("rounds", sorted_set), budget=("local_steps_per_client", sorted_set),
                                    dirichlet_alpha=("dirichlet_alpha", sorted_set))
design["tau_swap"] = [sorted_set(table5_arms(rows).tau_swap) if t == "table5" else
                      sorted_set(sweep[(sweep.table == t) & sweep.method.str.startswith("pubswap")].pubswap_period)
                      for t in design.index]
full = PUBSWAP_SCALES["full"]
design = design.astype(object)
design.loc["paper (full scale)"] = {"runs": "", "seeds": "", "tau": list(full["taus"]), "budget": [full["total_steps"]],
                                    "rounds": [full["total_steps"] // t for t in full["taus"]], "dirichlet_alpha": "",
                                    "tau_swap": sorted({2, *full["periods"]})}
if not run_sweep:  # the stored summary's own preset
    run_cfg = preset(sweep.preset.iloc[0] if "preset" in sweep else "quick")
print(f"pass@1 on {run_cfg.n_test} held-out test problems × {run_cfg.eval_samples} samples "
      f"({run_cfg.base} base, {run_cfg.num_clients} clients, b = {run_cfg.prompts_per_step}, K = {run_cfg.num_generations})")
design

# %% [markdown]
# Each table below shows pass@1 (%) as mean ± sample std over seeds (n = seeds) at the final checkpoint
# and at the best evaluated one (the paper's appendix B.2, Tables 7–8), columns τ.

# %%
# NBVAL_CHECK_OUTPUT
def final_and_best(rows, index="method", columns="tau"):
    """pass@1 (%) at the final and the best evaluated checkpoint, side by side."""
    return pd.concat({c: table(rows, index, columns, f"pass@1_{c}") for c in ("final", "best")}, axis=1)


t1 = sweep[sweep.table == "table1"]
print(f"Table 1 analogue ({SETTING_LABEL}): pass@1 (%), Dirichlet α = {sorted_set(t1.dirichlet_alpha)}")
final_and_best(t1.to_dict("records"))

# %%
# NBVAL_CHECK_OUTPUT
print("end-of-round pairwise drift ‖ΔW_n − ΔW_n′‖_F, mean over rounds; columns τ")
table(t1.to_dict("records"), "method", "tau", "drift_end_pairwise_effective", digits=3, scale=1.0)

# %%
# NBVAL_CHECK_OUTPUT
t4 = sweep[sweep.table == "table4"]
if len(t4):
    print(f"Table 4 analogue ({SETTING_LABEL}): pass@1 (%), Dirichlet α = {sorted_set(t4.dirichlet_alpha)}, "
          f"equal-size clients {sorted_set(t4.equal_size)}")
    display(final_and_best(t4.to_dict("records")))
    display(table(t4.to_dict("records"), "method", "tau", "drift_end_pairwise_effective", digits=3, scale=1.0)
            .add_prefix("drift, τ = "))
else:
    print("Table 4: not in the stored results")

# %%
# NBVAL_CHECK_OUTPUT
t5 = table5_arms(rows)
t5 = t5[t5.seed.isin(set(t5[t5.table == "table5"].seed))].sort_values("tau_swap")  # only the seeds every τ_swap ran
if len(t5):
    print(f"Table 5 analogue ({SETTING_LABEL}): Balanced by swap period τ_swap, pass@1 (%); columns τ")
    display(final_and_best(t5.to_dict("records"), index="tau_swap"))
    display(table(t5.to_dict("records"), "tau_swap", "tau", "drift_end_pairwise_effective", digits=3, scale=1.0)
            .add_prefix("drift, τ = "))
else:
    print("Table 5: not in the stored results")

# %%
# NBVAL_CHECK_OUTPUT
same = sweep["pass@1_best"] == sweep["pass@1_final"]
print(f"best checkpoint = final checkpoint in {same.sum()} of {len(sweep)} runs")
sweep[~same][["name", "pass@1_final", "pass@1_best", "best_round", "rounds"]].round(3)


# %% [markdown]
# ### Training curves and replacement fraction at large τ
# pass@1 against local steps taken (so different τ line up), and the Balanced/Random replacement
# fraction α over training: Balanced swaps less as clients get better at the public prompts. Each summary row keeps
# its run's curves (`experiments.sweep.stored_records`); FedProx is drawn at its best μ at this τ.

# %%
by_name = {r["name"]: r for r in rows}


def stored(name):
    """A run's curves as records (global evaluations, public steps' α), from its summary row."""
    return stored_records(by_name[name]) if "curves" in by_name.get(name, {}) else None


tau_big = max(t for t in sweep[sweep.table == "table1"].tau)
at_big = sweep[(sweep.table == "table1") & (sweep.tau == tau_big)]
prox = at_big[at_big.method.str.startswith("fedprox")].groupby("method")["pass@1_final"].mean()
arms = ["fedavg_grpo"] + ([prox.idxmax()] if len(prox) else []) + ["pubswap_random", "pubswap_balanced"]
curves = {m: recs for m in arms if (recs := stored(f"table1/{m}/tau{tau_big}/seed0"))}
fig = make_subplots(rows=1, cols=2, subplot_titles=[f"global pass@1 (τ = {tau_big}, seed 0)",
                                                    "replacement fraction α per public step"])
palette = {"fedavg_grpo": "#636efa", "pubswap_random": "#00cc96", "pubswap_balanced": "#ef553b"}
colours = {m: palette.get(m, "#ab63fa") for m in arms}  # FedProx at its best μ: purple
for m, recs in curves.items():
    g = [r for r in recs if r["kind"] == "global"]
    fig.add_trace(go.Scatter(x=[r["round"] * tau_big for r in g], y=[r["pass@1"] for r in g], name=m, legendgroup=m,
                             mode="lines+markers", line=dict(color=colours[m])), row=1, col=1)
    d = [r for r in recs if r["kind"] == "drift" and "replacement_fraction" in r]
    if d:  # the same colour as the method's pass@1 line: the legend names both panels
        fig.add_trace(go.Scatter(x=[(r["round"] - 1) * tau_big + r["step"] + 1 for r in d],
                                 y=[r["replacement_fraction"] for r in d], name=m, legendgroup=m, showlegend=False,
                                 mode="lines+markers", line=dict(color=colours[m])), row=1, col=2)
fig.update_xaxes(title_text="local steps taken")
fig.update_yaxes(title_text="pass@1 (fraction of test problems)", row=1, col=1)
fig.update_yaxes(title_text="α (fraction of a group swapped in)", row=1, col=2)
fig.update_layout(template="plotly_white")
viz.export(fig, "pubswap_curves_large_tau", FIGURES)
fig

# %% [markdown]
# ## 6. The paper's claims in the embedded world
# Checked on the runs above by `experiments.sweep.pubswap_claims_both`, each claim in the paper's words with where it
# says so (`paper`). Each pairs two arms seed by seed (the same seed is the same world, partition and base start),
# on the final and on the best evaluated checkpoint (the paper's appendix B.2): `diff` is the mean paired difference
# in pass@1 points (drift: ‖ΔW‖ units; the τ trend: points per doubling of τ), `±95% t` the half-width of its 95 %
# Student-t interval over seeds (n − 1 degrees of freedom), and `holds` "yes" or "no" when that interval lies on one
# side of 0, "within noise" when it contains 0; `flips` marks a verdict that differs between the two checkpoints. A
# claim the rows cannot test reads "not tested" and why, with what was measured: rows outside the paper's setting
# (FedIT, AdamW 0.01, equal clients), one τ, one τ_swap, one seed, or a Table 5 period not below τ (the paper's
# periods all lie below its τ). The drift claim against FedAvg-GRPO is confounded (a Balanced round takes half its
# steps on public prompts); `pubswap_noswap`, a control with Balanced's steps and no swap, separates the two when its
# rows are stored.

# %%
# NBVAL_CHECK_OUTPUT
pd.set_option("display.max_colwidth", 110)  # the claims' text
print(f"final and best evaluated checkpoint, {SETTING_LABEL}")
claims = pubswap_claims_both(rows)
claims

# %%
# NBVAL_CHECK_OUTPUT
print(f"verdicts that differ between the final and the best checkpoint: {int(claims.flips.sum())} of {len(claims)}")
claims[claims.flips][["claim", "final holds", "best holds"]]

# %%
# NBVAL_CHECK_OUTPUT
verdict = lambda v: "not tested" if v.startswith("not tested") else v.split(" (")[0]  # noqa: E731
pd.crosstab(claims["final holds"].map(verdict), claims["best holds"].map(verdict), rownames=["final checkpoint"],
            colnames=["best checkpoint"])

# %% [markdown]
# How to read the verdicts (the tables above hold the numbers):
#
# - **Drift.** The drift rows test the mechanism the paper argues for (public steps on shared prompts pull
#   the clients' adapters together before they are averaged), against FedAvg-GRPO and across τ_swap.
# - **Accuracy.** Every accuracy claim is a paired difference of a few points at most, against a
#   seed-to-seed spread of several points (the ± columns of the tables): a "within noise" verdict means
#   the runs neither show the claimed gain nor rule it out at this scale.
# - **Small τ.** "Random can outperform Balanced when the number of local steps is small" is the paper's
#   observation at its smallest τ, where a run has many rounds; compare the `rounds` column of the design table
#   with the paper's row: our smallest τ leaves far fewer rounds, so a verdict here does not test the paper's
#   small-τ regime, whatever it reads.
# - **Large τ.** The paper's gains appear at its largest τ with billion-parameter models, where drift is far
#   larger than a tiny policy reaches in the budget above; the quick scale keeps only the ratio of τ to
#   budget. Whether the gains appear there is not tested here; the larger-τ grid below goes further.

# %% [markdown]
# ### Larger τ
# The scale `quick_large_tau` keeps the paper's ratio of τ to budget with more local steps and larger τ
# (the cell prints its grid), Table 1's arms on the grid's seeds, in the paper's setting; one command runs it (several
# CPU-hours), from the repository root:
#
# ```
# OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/pubswap_sweep.py --scale quick_large_tau --tables table1 --seeds 0 1 2
# ```
#
# (`--taus` and `--methods` run part of it; rerunning adds to the same summary.) The next cell reads that
# summary when it is stored, says how much of the grid it holds, and shows the claims on the final and the
# best checkpoint. While it holds fewer τ (or seeds) than the grid it is **partial**: the τ trend uses the τ its two
# arms both ran, the small- and large-τ claims the smallest and largest τ both of their arms ran (so a τ run for
# some arms only leaves the others' claims where their arms are), and with a single τ they read "not tested".

# %%
from experiments.sweep import grid_coverage

large_scale = "quick_large_tau"
spec = PUBSWAP_SCALES[large_scale]
print(f"{large_scale}: {spec['total_steps']} local steps per client, τ ∈ {list(spec['taus'])} "
      f"(rounds {[spec['total_steps'] // t for t in spec['taus']]})")
large_path = result_path("paper", large_scale, results_root)
if Path(large_path).exists():
    large_rows = json.loads(Path(large_path).read_text())
    coverage = grid_coverage(large_rows, large_scale)
    stored_taus = sorted({r["tau"] for r in large_rows})
    partial = (coverage.seeds_stored < coverage.seeds_grid).any()
    print(f"{len(large_rows)} runs read from {shown_path(large_path)}; τ stored {stored_taus} of the grid's {list(spec['taus'])}; "
          f"{int(coverage.seeds_stored.sum())} of {int(coverage.seeds_grid.sum())} runs of the grid"
          + (": PARTIAL, the claims below are on the τ and seeds stored only" if partial else ": complete"))
    display(coverage.pivot(index="method", columns="tau", values="seeds_stored").add_prefix("seeds stored, τ = "))
    large_claims = pubswap_claims_both(large_rows)
    print(f"larger-τ claims, final and best checkpoint; {int(large_claims.flips.sum())} of {len(large_claims)} "
          "verdicts differ between them")
    display(large_claims)
else:
    print(f"not run: {shown_path(large_path)} does not exist")

# %% [markdown]
# Caveats: differences of a few points are within the seed-to-seed spread here (the ± columns);
# the embedded world's "drift" is that of a tiny model on arithmetic topics, so it tests the
# *mechanism* (does a public anchor reduce drift, does it help at large τ), not the paper's numbers.
# The `full` preset (`-p preset_name full -p run_sweep True`) runs the grid on a GPU; the paper's own
# model and dataset settings are the `pubswap-…` presets (`fedrl run --preset pubswap-qwen3-1.7b-math
# --dry-run` prints one's memory estimate; docs/pubswap.md lists them).
