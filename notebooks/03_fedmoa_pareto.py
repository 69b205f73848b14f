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
# # FedMOA: several rewards per client, weights that adapt, and their Pareto fronts
#
# *Wang, Jung, He, Sun, Shen, Lee, Li: FedMOA, Federated GRPO for Personalized Reasoning LLMs under Heterogeneous
# Rewards.*
#
# **The method.** A reasoning model is rewarded for the right answer (**accuracy**) and for well-formed output
# (**format**, **tag count**, …); in a federation each client has its *own* rewards. **FedMOA** changes two things in
# FedAvg-GRPO (the paper's "FedGRPO"):
#
# 1. **Adaptive weights (client).** The reward weights are hyperparameters learnt while training: after every local
#    step a *hypergradient* step (the loss's derivative with respect to the weights) of size **λ** moves them.
# 2. **Accuracy-aware aggregation (server).** Inside a cluster of clients sharing an accuracy reward, a client with
#    a *lower* accuracy weight counts more.
#
# **You will learn** to predict which weight eq. 10 raises, to compute eqs. 11–12 by hand, to read the Pareto plot,
# and why our accuracy weight drains where the paper's rises. Reproduction:
# [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% [markdown]
# ## Parameters
# For papermill (`-p normalise True -p lam 0.5`); an unknown name stops the notebook.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
normalise = False      # False: eq. 9 as the paper, λ from the preset's scale rule; True: Δ_k as a cosine (ours)
lam = 0.1              # λ, read only when normalise is True (all the λ values: §5's table)
run_root = ""          # where the runs go ("": runs/fedmoa/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import json

import numpy as np
import pandas as pd
import plotly.express as px
from IPython.display import Markdown

from experiments import fedmoa_analysis as analysis
from experiments.fedmoa_analysis import PAPER_TABLE1, PAPER_TABLE2
from experiments.findings import (fedmoa_ablation_findings, fedmoa_claim_interval, fedmoa_findings, fedmoa_setting,
                                 fedmoa_weight_split_findings, interval_words, labelled)
from experiments.stats import t_quantile
from experiments.fedmoa_pareto import non_dominated, pareto_figure
from experiments.fedmoa_presets import setting_config
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa import evaluation, plan, probe
from fedrl_kit.fedmoa.weights import (accuracy_aware_weights, aggregate_shared_weights, cluster_by_reward_names,
                                      hypergradient_step, project_to_simplex)
from fedrl_kit.policy.pretrain_families import MISSING_MESSAGE
from fedrl_kit.runs import REPO_ROOT, Run
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

pd.set_option("display.max_colwidth", None)  # findings in full
SCALE = {"quick": "quick", "smoke": "smoke", "full": "paper", "full-smoke": "paper-smoke"}  # fedmoa_presets' scales
SETTING, METHODS = "heter+heter", ["FedAvg-GRPO", "FedMOA"]  # every family and reward set in one federation
FEDMOA = dict(normalise=True, lam=lam, lam_rule="fixed") if normalise else {}


def make_config(p, variant="FedMOA"):
    """One run of the paper's Heter+Heter federation at this preset's scale."""
    scale = SCALE[preset_name]
    if not scale.startswith("paper") and not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
        raise notebook.NotebookStop(" ".join(MISSING_MESSAGE.format(path="data/base_moa").split()))
    return setting_config(scale, SETTING, variant, seed, fedmoa=FEDMOA)


cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root",
                                        folder=dict(s=seed, normalise=normalise, lam=lam if normalise else None))
grid = json.loads((REPO_ROOT / "benchmarks" / "results" / "fedmoa_compare_cpu.json").read_text())  # §5's λ table, §7
hh, homo = fedmoa_setting(), fedmoa_setting(setting="homo+heter")  # the grid's Heter+Heter and Homo+Heter sizes
F = labelled(fedmoa_findings())  # §7's findings (§5 quotes F1)

# %% [markdown]
# ## 1. One round, drawn

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# Client $m$'s own weights $w^{(m)}$ change only on the client; the server sets $\alpha_m$ from $w_{\text{acc}}^{(m)}$
# and sends back $w^{(m\leftarrow c)}$ (eq. 12) with the global $\theta$.

# %% [markdown]
# ## 2. Key equations
# **GRPO on each client** (`grpo.grpo_step`; β = 0), with group mean $\bar r$, deviation $\sigma_r$, ratio $\rho$:
#
# $$\hat a_i = \frac{r_i - \bar r}{\sigma_r},\qquad J(\theta) = \frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t}, 1-\zeta_{\text{lo}}, 1+\zeta_{\text{hi}})
# \,\hat a_i\Bigr)$$
#
# FedMOA's client $m$ has $K_m$ rewards $r_0,\dots,r_{K_m-1}$, accuracy first, and ascends $J$ on
#
# $$w_k \ge 0,\ \sum_k w_k = 1\ \text{(1)},\qquad r_w = \sum_k w_k r_k\ \text{(2–4)}$$
#
# **What eq. 10 does, in words.** After each local step, per objective $k$: does $k$'s gradient point as at the
# previous step ($\Delta_k$ large: progress left) or flip ($\Delta_k < 0$: $k$ oscillates, e.g. a saturated
# format)? The projection subtracts one common shift from every weight, so **a weight rises when its $\Delta_k$ is
# above the others'** (their mean, while no weight is at 0), whatever its sign. The paper's hope: format saturates
# first, and weight flows to accuracy.
#
# $g_k$: the gradient of objective $k$'s own GRPO loss $L_k$ with respect to $\phi$, one layer's LoRA factors (the
# paper: its hidden state; `client.objective_gradients`):
#
# $$g_k^{(t)} = \nabla_\phi L_k\ \text{(8)},\qquad \Delta_k^{(t)} = g_k^{(t)\top} g_k^{(t-1)}\ \text{(9)},\qquad
# w \leftarrow \operatorname{Proj}_{\text{simplex}}\bigl(w + \lambda\,\Delta^{(t)}\bigr)\ \text{(10,
# `weights.hypergradient_step`)}$$
#
# $\operatorname{Proj}_{\text{simplex}}(v)$, the closest $w$ on the simplex to $v$, is $w_k = \max(v_k - \nu, 0)$
# with the one $\nu$ that makes the sum 1 (`weights.project_to_simplex`).
#
# **A toy case.** 2-D gradients: accuracy's agree (Δ > 0), format's vanish, tag count's flip (Δ < 0); λ = 0.1;
# package and by hand:

# %%
w_toy = np.array([0.5, 0.3, 0.2])  # accuracy, format, tag_count
g_prev = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # g_k^(t−1): one row per objective
g_now = np.array([[2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])  # g_k^(t): accuracy agrees, format vanished, tag flipped
w_new, delta = hypergradient_step(w_toy, g_now, g_prev, lr=0.1)
v = w_toy + 0.1 * np.array([2 * 1 + 0 * 0, 0 * 0 + 0 * 1, -1 * 1 + 0 * 0])  # by hand: Δ_k = g_k^(t)·g_k^(t−1)
nu = (v.sum() - 1) / 3  # every v_k − ν stays ≥ 0 here, so ν spreads the excess equally
display(pd.DataFrame({"w before": w_toy, "Δ_k (package)": delta, "w + λΔ (by hand)": v, "by hand: w + λΔ − ν": v - nu,
                      "package: w after": w_new}, index=["accuracy", "format", "tag_count"]).round(4))
print(f"sum of w + λΔ = {v.sum():.2f}, so ν = ({v.sum():.2f} − 1) / 3 = {nu:.4f}; by hand = package: "
      f"{np.allclose(v - nu, w_new)}. ν = λ × mean Δ = 0.1 × {delta.mean():.4f}: a weight rises iff its Δ_k is above "
      f"the mean Δ. Accuracy (Δ = {delta[0]:g}) rises by {w_new[0] - w_toy[0]:+.4f}; format (Δ = {delta[1]:g}, "
      f"below the mean) falls by {w_new[1] - w_toy[1]:+.4f} though its Δ is not negative; tag count falls by "
      f"{w_new[2] - w_toy[2]:+.4f}.")

# %% [markdown]
# **Where eq. 9 comes from** (Baydin et al.): $\phi$, with step size $\eta$, last moved by $-\eta\sum_j w_j g_j^{(t-1)}$,
# so $\partial L_k(\phi^{(t)})/\partial w_k = -\eta\,\Delta_k^{(t)}$ and eq. 10 is gradient descent on $w$. As
# $\Delta_k$ grows with $\lVert g\rVert^2$, a good λ depends on the model: the paper's 0.01 is not ours (every λ of
# this notebook: §5's table).
#
# **Server** (`algorithm.aggregate_round`). Clusters $S_c$: clients with the same accuracy reward
# (`weights.cluster_by_reward_names`); $w_{\text{acc}}^{(m)}$ at the round's end gives:
#
# $$s_m = \frac{1}{w_{\text{acc}}^{(m)} + \varepsilon},\qquad \alpha_m = \frac{e^{s_m}}{\sum_{m'\in S_c}
# e^{s_{m'}}}\qquad\text{(11, `weights.accuracy_aware_weights`)}$$
#
# Eq. 12 (`weights.aggregate_shared_weights`): $\bar w_k^{(c)} = \sum_{m\in S_c}\alpha_m w_k^{(m)}$ for each reward
# $k$ that *every* client of $S_c$ has; client $m$ keeps its own $w_k^{(m)}$ for the others and renormalises:
#
# $$u_k = \begin{cases}\bar w_k^{(c)} & k \text{ shared}\\ w_k^{(m)} & \text{otherwise}\end{cases},\qquad
# w_k^{(m\leftarrow c)} = \frac{u_k}{\sum_j u_j}\ \text{(12)},\qquad
# \theta = \sum_c \frac{N_c}{N}\sum_{m\in S_c}\alpha_m\,\theta^{(m)}\ \text{(12–13, `aggregate.fedavg`)}$$
#
# **Why a lower $w_{\text{acc}}$ counts more.** Eq. 10 lowers $w_{\text{acc}}$ when accuracy's gradients stop
# agreeing, which the paper reads as accuracy *closer to converged*: eq. 11 favours clients with more progress.
# Consequences: since α falls as $w_{\text{acc}}$ rises, $\sum_m \alpha_m w_{\text{acc}}^{(m)}$ sits **below the
# plain mean** of the cluster's $w_{\text{acc}}$ (§5 shows it), a pull down at every round boundary; and
# α-aggregation *is* FedAvg with one client per cluster, or with equal $w_{\text{acc}}$ and equal $N_m$.
#
# | symbol | meaning |
# |---|---|
# | $M$, $m$, $\tau$ | number of clients; one client; local steps per round |
# | $G$, $\hat a_i$, $\rho$, $\zeta_{\text{lo}}$, $\zeta_{\text{hi}}$ | answers per prompt; advantage; ratio; clip range |
# | $K_m$, $k$, $r_k$ | client $m$'s number of rewards; an objective; its reward (accuracy: $k = 0$) |
# | $w^{(m)}$, $w_k$, $w_{\text{acc}}$ | client $m$'s weights; entry $k$; the accuracy entry |
# | $\phi$, $g_k$, $L_k$ | what $g_k$ differentiates; objective $k$'s gradient, loss |
# | $\Delta_k$, $\lambda$ | eq. 9's gradient agreement; eq. 10's step size (`lam`) |
# | $\operatorname{Proj}_{\text{simplex}}$, $\nu$ | projection onto $w_k \ge 0$, $\sum_k w_k = 1$; its shift |
# | $S_c$, $N_m$, $N_c$, $N$ | cluster $c$'s clients; client $m$'s, the cluster's, all training examples |
# | $s_m$, $\alpha_m$, $\varepsilon$ | eq. 11's score; client $m$'s weight in its cluster; $10^{-6}$ |
# | $\bar w^{(c)}$, $u$, $w^{(m\leftarrow c)}$ | the cluster's shared average; before and after renormalising |
# | $\theta^{(m)}$, $\theta$ | a client's and the global LoRA adapter |
#
# ## 3. Pseudocode
# `fedrl_kit/fedmoa/algorithm.py::run_round`, each line naming its function:
# ```
# for round = 1..R:
#   send θ and w^(m←c) (round 1: each client's own initial w) to client m    # algorithm.round_weights
#   each client m, for step t = 1..τ:                                        # client.MOAClient.on_fit
#     b prompts × G answers; every reward r_k on every answer               # RewardSet.scores
#     g_k for every k (eq. 8); Δ_k and w ← Proj(w + λΔ) (eqs. 9–10)          # objective_gradients, hypergradient_step
#     one GRPO step on r_w = Σ w_k r_k (eqs. 2–4)                            # grpo.grpo_step
#   clients reply θ^(m), reward names, w^(m), N_m
#   clusters by accuracy reward; α (eq. 11); w^(m←c) (eq. 12)               # algorithm.aggregate_round
#   θ = Σ_c N_c/N Σ_{m∈S_c} α_m θ^(m) (eqs. 12–13)                          # aggregate.fedavg
# ```

# %% [markdown]
# ## 4. Who holds what
# Three families of small synthetic tasks stand for the paper's datasets; each client holds one family and one reward
# configuration (Table 3). `tag_count`: 0.25 per tag present once; `code_format`: 0.5 format, 0.5 a program that
# parses.

# %%
# NBVAL_CHECK_OUTPUT
world = make_family_world(seed, 10, 4)
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %%
# NBVAL_CHECK_OUTPUT
pd.DataFrame({f"{PAPER_NAMES[f]}-like": {c: ", ".join(n) for c, n in cfgs.items()}
              for f, cfgs in plan.reward_configs(cfg.world).items()})

# %% [markdown]
# The base policy (`data/base_moa`; on a GPU, Qwen2.5-1.5B-Instruct) per family (pass@1: share of right answers):

# %%
base_eval = evaluation.evaluate_base(cfg)
pd.DataFrame({f: {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith(f + "/")}
              for f in FAMILIES}).round(3)

# %% [markdown]
# ## 5. Run it: FedAvg-GRPO and FedMOA on the same federation
# **Heter+Heter** (clients differ in data *and* rewards; Homo+Heter: rewards only):
# configs A and B of each family. FedAvg-GRPO is FedMOA with both parts off. The clients and round-1 weights:

# %%
runs = {}
for name in METHODS:
    run_dir = run_root / name
    notebook.start_run_dir(run_dir)  # empties only a run folder this toolkit wrote
    run = Run(make_config(cfg.preset, name), run_dir, progress=False)
    runs[name] = (run, run.run())
first = runs["FedMOA"][0]
pd.DataFrame(analysis.client_info(first))

# %%
w_init = pd.DataFrame({cid: dict(zip(c.names, c.initial_weights)) for cid, c in first.clients.items()}).T
print(f"Initial weights (init_weights = {cfg.fedmoa.init_weights!r}, `plan.initial_weights`): a family's j-th client "
      f"starts with w_acc = {plan.W0_SPREAD}[j mod {len(plan.W0_SPREAD)}], its other rewards share 1 − w_acc equally; "
      "blank: a reward the client does not have.")
w_init.round(3).astype(object).fillna("")

# %%
print("g_k (fedmoa.hyper_grad): 'lora', the probed layer's LoRA factors; 'sequence' or 'shared', a shift of that "
      "layer's output per answer or for all tokens (the paper's form). λ rule 'target' (ours): λ = target / "
      "mean_k ‖g_k‖² at a round's first step, so agreeing gradients move w_k by about the target.")
print(f"this run: g_k = {cfg.fedmoa.hyper_grad!r}, λ rule = {cfg.fedmoa.lam_rule!r}"
      + (f", target = {cfg.fedmoa.lam_target}" if cfg.fedmoa.lam_rule == "target" else f", λ = {cfg.fedmoa.lam}")
      + f"; LoRA rank r = {cfg.lora_rank}; {cfg.rounds} rounds of τ = {cfg.local_steps} local steps, "
        f"b = {cfg.prompts_per_step} prompts × "
        f"G = {cfg.num_generations} answers; {cfg.n_test // len(FAMILIES)} test problems per family × "
        f"{cfg.eval_samples} samples")
print(f"GRPO: clip ζ_lo = {cfg.epsilon}, ζ_hi = {cfg.epsilon_high}, KL β = {cfg.beta}, {cfg.num_iterations} "
      f"optimiser step(s) per batch; g_k at layer hyper_layer = {cfg.fedmoa.hyper_layer} (None: the middle one)")
summary = pd.DataFrame({name: analysis.summary(recs) for name, (run, recs) in runs.items()}).T
display(summary[[c for c in ("global_accuracy", "aggregated_reward", "local_accuracy", "local_reward", "best_round")
                 if c in summary]].round(3))
display(Markdown("""Columns (fractions, last round): **global_accuracy**, the global θ's pass@1 averaged over the three
families; **aggregated_reward**, for each client the *unweighted* mean of its reward components (pass@1 for accuracy)
scored on the global θ, averaged over clients: equal weights, so FedMOA's changing $w$ does not enter it, and the
two methods are scored alike; **local_accuracy / local_reward**, the same for each client's own model $\\theta^{(m)}$
after its local steps, on its own family; **best_round**, the round with the best validation accuracy."""))
one_answer = 1 / (len(FAMILIES) * (cfg.n_test // len(FAMILIES)) * cfg.eval_samples)  # of global_accuracy
gap = summary.loc["FedAvg-GRPO", "global_accuracy"] - summary.loc["FedMOA", "global_accuracy"]
Markdown(f"""**Is the global_accuracy gap real?** FedAvg-GRPO − FedMOA = {100 * gap:+.1f} points, i.e.
{gap / one_answer:+.0f} right answers of the {round(1 / one_answer)} scored (one answer moves global_accuracy by
{100 * one_answer:.2f} points), on one seed. Over {int(F.loc['F1', 'seeds'])} seeds of the larger stored grid (F1,
§7), FedMOA − FedAvg-GRPO is {F.loc['F1', 'difference']:+.2f} ± {F.loc['F1', '±95% t']:.2f} points: read this gap as
one-seed noise, not as FedAvg-GRPO being better.""")

# %% [markdown]
# **Every λ in this notebook**, in one table:

# %%
run_lams = [float(r["lam"]) for r in runs["FedMOA"][1] if r["kind"] == "client" and r.get("client") != "server"
            and r.get("lam") is not None]
moa = cfg.fedmoa
pd.DataFrame([
    ("the paper (§4.1)", "0.01, fixed, on eq. 9's dot product"),
    (f"§5's run: lam_rule = {moa.lam_rule!r}", (f"target {moa.lam_target} / mean_k ‖g_k‖² at each round's first "
     "step: " if moa.lam_rule == "target" else "fixed: ")
     + (f"λ from {min(run_lams):.3g} to {max(run_lams):.3g} over clients and rounds" if run_lams else f"{moa.lam:g}")),
    ("§7's stored grid (FedMOA)", f"{hh['lam']['FedMOA']:g}, fixed, tuned on validation"),
    ("§7's F5 variant", f"{hh['lam']['FedMOA, λ=100']:g}, fixed"),
    ("the parameter `lam`", f"{lam:g}: " + ("used: normalise=True, Δ_k a cosine" if normalise
                                           else "unused in this run (normalise=False)"))],
    columns=["where", "λ"]).set_index("where")

# %% [markdown]
# **The paper's Fig. 5.** Each client's weights after every local step; a round's first step leaves $w$ as sent. The table splits eq. 10's moves from the boundary jumps.

# %%
wh = pd.DataFrame(analysis.weight_history(runs["FedMOA"][1]))
fig = px.line(wh, x="t", y="weight", color="reward", facet_col="client", facet_col_wrap=6, markers=True,
              title="FedMOA reward weights per client; x = (round − 1) + local step / τ")
fig.update_layout(template="plotly_white", height=300 * ((wh.client.nunique() + 5) // 6))
viz.export(fig, "fedmoa_weights", figures)
fig

# %%
acc = wh[wh.reward.isin(["accuracy", "code_accuracy"])].pivot_table(index=["client", "round"], columns="step",
                                                                       values="weight")
moves = pd.DataFrame({"eq. 10 inside round p": acc[acc.columns.max()] - acc[acc.columns.min()],
                      "jump into round p + 1 (eq. 12)": acc[acc.columns.min()].groupby(level=0).shift(-1)
                      - acc[acc.columns.max()]})
print(f"w_acc moves: median |eq. 10 within a round| = {moves.iloc[:, 0].abs().median():.2g}, median |jump at a "
      f"boundary| = {moves.iloc[:, 1].abs().median():.2g}")
moves.unstack("round").round(4).dropna(axis=1, how="all")

# %%
end1 = wh[(wh["round"] == 1) & (wh.step == wh.step.max())].pivot_table(index="client", columns="reward", values="weight")
start2 = wh[(wh["round"] == 2) & (wh.step == 0)].pivot_table(index="client", columns="reward", values="weight")
rewards_of = {c["client"]: c["rewards"].split(", ") for c in analysis.client_info(first)}
examples_of = {c["client"]: c["examples"] for c in analysis.client_info(first)}


def eq12_by_hand(cid):
    """Eq. 11–12 at the first boundary for cid's cluster, from the run's round-1 end weights."""
    acc_name = rewards_of[cid][0]  # accuracy first; clusters by its name
    ids = [c for c in rewards_of if rewards_of[c][0] == acc_name]
    mine = [{k: float(end1.loc[c, k]) for k in rewards_of[c]} for c in ids]
    a_ = accuracy_aware_weights([w[acc_name] for w in mine], cfg.fedmoa.eps, cfg.fedmoa.softmax_temperature)
    bar = {k: float(sum(a * w[k] for a, w in zip(a_, mine))) for k in mine[0] if all(k in w for w in mine)}
    own = {k: v for k, v in mine[ids.index(cid)].items() if k not in bar}
    sent = dict(zip(ids, aggregate_shared_weights(mine, a_)))
    return dict(ids=ids, mine=mine, alpha=a_, bar=bar, own=own, total=sum(bar.values()) + sum(own.values()),
                sent=sent, acc=acc_name)


h0 = eq12_by_hand("client_0")
ids, mine, a_, bar, own, total, sent = (h0[k] for k in ("ids", "mine", "alpha", "bar", "own", "total", "sent"))
shared_ = list(bar)
plain = [w["accuracy"] for w in mine]  # the cluster's round-1 w_acc, for the plain mean
low_ = [c for c, w in zip(ids, plain) if w < np.mean(plain)]
low_alpha = float(sum(a for c, a in zip(ids, a_) if c in low_))
per_round, n_up = cfg.local_steps - 1, (cfg.local_steps - 1) * cfg.rounds
jumps = moves.iloc[:, 1].dropna()
first_jumps = jumps.xs(1, level="round").mean() if len(jumps) else float("nan")


def in_run(cid, k):  # what the run sent client cid for reward k into round 2
    return f"{start2.loc[cid, k]:.4f}" if cid in start2.index else "one round only: none"


Markdown(f"""**Eq. 12 by hand, client_0 at the first boundary** (cluster {', '.join(ids)}; α from eq. 11 on their
round-1 w_acc = {', '.join(f'{w["accuracy"]:.4f}' for w in mine)}: α = {', '.join(f'{a:.4f}' for a in a_)}).
Shared rewards: {', '.join(shared_)}; ū_acc = Σ α_m w_acc^(m) = {bar['accuracy']:.4f}, ū_format = {bar['format']:.4f};
client_0's own {', '.join(f'{k} = {v:.4f}' for k, v in own.items())} is not averaged, so its vector sums to {total:.4f}
and w_acc becomes {bar['accuracy']:.4f} / {total:.4f} = **{sent['client_0']['accuracy']:.4f}** (the run: {in_run('client_0', 'accuracy')}).
A two-reward client (client_3) gets {bar['accuracy']:.4f} / {bar['accuracy'] + bar['format']:.4f} =
{sent['client_3']['accuracy']:.4f} (the run: {in_run('client_3', 'accuracy')}). So client_0's w_acc falls from
{mine[0]['accuracy']:.3f} to {sent['client_0']['accuracy']:.3f} in two parts: the α-average with the lower-w_acc
clients ({mine[0]['accuracy'] - bar['accuracy']:.3f}) and the renormalisation over a reward set larger than the shared
one ({bar['accuracy'] - sent['client_0']['accuracy']:.3f}).

**The α-average sits below the plain mean.** The plain mean of the cluster's w_acc is {np.mean(plain):.4f}; the
α-average is {bar['accuracy']:.4f}, {np.mean(plain) - bar['accuracy']:.4f} lower, because α gives the clients below
the mean ({', '.join(low_)}) {low_alpha:.2f} of the say instead of {len(low_) / len(ids):.2f}. """ + (
    "Data-size weights (α off) would give the plain mean: the cluster's clients hold "
    f"{', '.join(str(examples_of[c]) for c in ids)} examples." if len({examples_of[c] for c in ids}) == 1 else
    "Data-size weights (α off) would weight by N_m.") + f"""

**Consequences.** With τ = {cfg.local_steps} there is {per_round} eq. 10 update per round ({n_up} in the run), so at this
scale the weights' adaptation is mostly these jumps (the table above). Over the {len(rewards_of)} clients the first jumps
average {first_jumps:+.4f} against {moves.iloc[:, 0].mean():+.4f} for eq. 10's moves. §7 splits the stored grid the
same way (F4).""")

# %% [markdown]
# **The paper's Fig. 3: Pareto fronts.** Models scored on the MATH-like tests: lines, the global model per round
# from the base (r0); grey, clients' models; stars, the **Pareto front** (no point beats them on both rewards).

# %%
def pareto(x="accuracy", y="format", family="math"):
    acc, fmt = evaluation.eval_components(cfg.world)[family][:2]
    x, y = {"accuracy": acc, "format": fmt}.get(x, x), {"accuracy": acc, "format": fmt}.get(y, y)
    series = {}
    for name, (run, recs) in runs.items():
        ids = [c["client"] for c in analysis.client_info(run) if c["family"] == family]
        pts = analysis.pareto_points(recs, x, y, family, ids)
        pts["server"] = [[base_eval[f"{family}/{x}"], base_eval[f"{family}/{y}"]]] + pts["server"]
        pts["rounds"] = [0] + [r["round"] for r in analysis.server_records(recs)]
        series[name] = pts
    fig = pareto_figure(series, x, y, title=f"{y} vs {x}, {PAPER_NAMES[family]}-like")
    fig.update_xaxes(title="accuracy (pass@1)" if x == acc else x)
    return fig, series


fig, series = pareto()
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
fig

# %%
points = pd.DataFrame([dict(method=name, model=f"global r{r}", accuracy=a, format=f)
                       for name, s_ in series.items() for r, (a, f) in zip(s_["rounds"], s_["server"])]
                      + [dict(method=name, model="a client", accuracy=a, format=f)
                         for name, s_ in series.items() for a, f in s_["clients"]])
points["on the front"] = non_dominated(points[["accuracy", "format"]].to_numpy())
final = points[points.model == f"global r{cfg.rounds}"].set_index("method")
fa, fm = final.loc["FedAvg-GRPO"], final.loc["FedMOA"]
xy = lambda p: (round(float(p.accuracy), 3), round(float(p.format), 3))  # noqa: E731
beats = lambda p, q: min(np.subtract(xy(p), xy(q))) >= 0 and xy(p) != xy(q)  # noqa: E731
verdict = ("they score the same" if xy(fa) == xy(fm) else "FedAvg-GRPO's dominates FedMOA's" if beats(fa, fm)
           else "FedMOA's dominates FedAvg-GRPO's" if beats(fm, fa) else "neither dominates: each is better on one")
front = points[points["on the front"]]
step = 1 / ((cfg.n_test // len(FAMILIES)) * cfg.eval_samples)
display(front.round(3))
shape = (f"a single model ({front.iloc[0].method}, {front.iloc[0].model}) is at least as good as every other on both "
         "rewards, so no trade-off between accuracy and format shows here"
         if len(front) == 1 else f"the {len(front)} models on the front trade one reward for the other: moving "
         "along it buys format with accuracy")
srv = {name: analysis.server_records(recs) for name, (run, recs) in runs.items()}
comp = evaluation.eval_components(cfg.world)
same = pd.DataFrame({f"{PAPER_NAMES[f]}-like": [all(a[f"{f}/{k}"] == b[f"{f}/{k}"] for k in comp[f][:2])
                                                for a, b in zip(srv["FedAvg-GRPO"], srv["FedMOA"])] for f in FAMILIES},
                    index=pd.Index([r["round"] for r in srv["FedMOA"]], name="round"))
alphas = {name: [r["alpha"] for r in recs if r["kind"] == "client" and r.get("client") != "server" and "alpha" in r]
          for name, (run, recs) in runs.items()}
print("Same accuracy and format on the global model, FedAvg-GRPO vs FedMOA, per family and round:")
display(same)
Markdown(f"""**Reading the figure.** {len(front)} of the {len(points)} models {'is' if len(front) == 1 else 'are'} on
the front (the table); the other {len(points) - len(front)} are dominated. Of the two final global models (round {cfg.rounds}), {verdict}:
FedAvg-GRPO at {xy(fa)}, FedMOA at {xy(fm)} (accuracy, format). {shape[0].upper() + shape[1:]}.

**Why one server line.** The two global models differ: FedMOA's α ranged {min(alphas['FedMOA']):.3f}–{max(alphas['FedMOA']):.3f}
against FedAvg-GRPO's data shares {', '.join(f'{a:g}' for a in sorted(set(alphas['FedAvg-GRPO'])))}, and on the other
families their scores differ in {int((~same.drop(columns='MATH-like')).to_numpy().sum())} of {same.drop(columns='MATH-like').size} family-rounds (table). But the
MATH-like scores are equal in {int(same['MATH-like'].sum())} of {len(same)} rounds: each is a count over
{cfg.n_test // len(FAMILIES)} problems × {cfg.eval_samples} answers sampled with the same seed, where one answer moves a
score by {step:.3f}, and the models' small difference leaves these counts unchanged. One seed and gaps of that size are noise, so
this demo cannot show Fig. 3's claim; §7 draws the plane over the grid's seeds.""")

# %% [markdown]
# ## 6. One round of weights, step by step
# Eqs. 9–12 need only gradients, so a round replays in milliseconds from $g_k$ of three probe batches per client
# (`fedmoa.probe`); the widgets redraw it.

# %%
import ipywidgets as widgets

federation = Run(make_config(cfg.preset), policy=first.policy, progress=False).build()  # untrained clients
probes = probe.probe_clients(federation, "global", steps=3)
client_0 = federation.clients["client_0"]
print("how big eq. 9's Δ_k is, and one step of eq. 10 on client_0 at the base (three ways to take g_k):")
scales = probe.lambda_scales(client_0, "global", target=0.05)
display(pd.DataFrame(scales, index=list(client_0.names)).T.map(lambda v: f"{v:.3g}"))
for kind in ("lora", "sequence", "shared"):  # §2's rule on real gradients: the sign of Δ_k − mean Δ, not of Δ_k
    d_, w_ = scales[f"{kind}: Δ_k (eq. 9)"], next(v for k, v in scales.items() if k.startswith(f"{kind}: w after t"))
    moved_ = w_[0] - client_0.initial_weights[0]
    print(f"{kind}: Δ_acc − mean Δ = {d_[0] - d_.mean():+.3g}, accuracy's weight {moved_:+.3g} at the scale rule's λ "
          f"(all Δ_k negative: {bool((d_ < 0).all())})")
g0, names0 = np.asarray(probes["client_0"]["grads"]), list(client_0.names)
gap = float(np.abs(g0[:, names0.index("format")] - g0[:, names0.index("tag_count")]).max())
scale0 = float(np.abs(g0[:, names0.index("format")]).max())
print(f"format and tag_count: largest |g_format − g_tag_count| over client_0's probed steps = {gap:.2g} (|g| up to "
      f"{scale0:.2g}). " + ("The same gradient, so the same Δ_k and cosine: likely because on these answers the two "
                             "rewards are affine in each other within every group, and GRPO's group normalisation "
                             "then gives them the same advantages." if gap <= 1e-6 * max(scale0, 1e-12) else
                             "Different gradients: the equal rounded Δ_k are a coincidence of rounding."))
rule = float(np.median([probe.replay_weights(c["grads"], c["w0"], target=0.05)[1] for c in probes.values()]))
LAMS = {"each client's scale rule": None, "0.01 (the paper's)": 0.01}
LAMS |= {f"{m:g} × the median scale rule = {m * rule:.3g}": m * rule for m in (0.1, 1.0, 10.0, 100.0)}
PAIRS = {"accuracy–format": ("accuracy", "format"), "accuracy–tag count": ("accuracy", "tag_count")}


def replay(lam, pair="accuracy–format"):
    moa = cfg.fedmoa
    rows = probe.replay_round(probes, lam=LAMS[lam], target=0.05, cluster_key=moa.cluster_key, eps=moa.eps,
                              temperature=moa.softmax_temperature)
    fig = probe.replay_figure(rows, *PAIRS[pair], title=f"one round of reward weights, λ: {lam}",
                              aliases={"accuracy": "code_accuracy", "format": "code_format"})
    table = pd.DataFrame([{"client": r["client"], "cluster": r["cluster"], "rewards": ", ".join(r["reward_names"]),
                           "w_acc start": r["trajectory"][0][0], "w_acc end": r["trajectory"][-1][0],
                           "α (eq. 11)": r["alpha"], "w_acc sent (eq. 12)": r["broadcast"][0]} for r in rows])
    return fig, table.set_index("client")


def show_replay(lam, pair, static=False):
    fig, table = replay(lam, pair)
    display(fig) if static else fig.show(renderer="plotly_mimetype")  # static: with its PNG, for a stored notebook
    display(table.round(4))


controls = dict(lam=widgets.Dropdown(options=list(LAMS)), pair=widgets.Dropdown(options=list(PAIRS)))
notebook.static_default(lambda lam, pair: show_replay(lam, pair, static=True), **controls)
notebook.knobs(show_replay, **controls)

# %%
moa = cfg.fedmoa
rows_ = []
for name in LAMS:
    rr = {r["client"]: r for r in probe.replay_round(probes, lam=LAMS[name], target=0.05, cluster_key=moa.cluster_key,
                                                      eps=moa.eps, temperature=moa.softmax_temperature)}
    rows_.append({"λ": name, "client_0 w_acc after the round": rr["client_0"]["trajectory"][-1][0],
                  "median L1 move of w": float(np.median([np.abs(r["trajectory"][-1] - r["trajectory"][0]).sum()
                                                          for r in rr.values()])),
                  "client_0 w_acc sent (eq. 12)": rr["client_0"]["broadcast"][0]})
print(f"Static replays of one round (no kernel needed); start: client_0 w_acc = {probes['client_0']['w0'][0]}. The "
      f"softmax temperature of eq. 11 (moa.softmax_temperature = {moa.softmax_temperature:g}) divides s_m: ours, "
      "1 is the paper's eq. 11.")
rule_row = rows_[0]["client_0 w_acc sent (eq. 12)"]
print(f"Why the replay's client_0 w_acc sent ({rule_row:.4f}) is not §5's run's ({in_run('client_0', 'accuracy')}): the "
      "replay draws its own three probe batches per client from the untrained federation, so its g_k, and the end "
      "weights eq. 11 reads, differ from the run's training batches.")
pd.DataFrame(rows_).set_index("λ").round(4)

# %% [markdown]
# **By hand: the α table.** The first cluster at λ = 10 × the scale rule: eq. 11 by hand and by the package.

# %%
strong = [k for k in LAMS if k.startswith("10 ×")][0]
fig, table = replay(strong)
viz.export(fig, "fedmoa_weights_replay", figures)
cluster = table[table.cluster == 0]
s = 1 / (cluster["w_acc end"].to_numpy() + cfg.fedmoa.eps)  # eq. 11's scores
by_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax over the cluster
display(fig)
display(table.round(4))
pd.DataFrame({"w_acc end": cluster["w_acc end"], "α by hand": by_hand, "α package": cluster["α (eq. 11)"]}).round(4)

# %% [markdown]
# ## 7. What the reproduction found
# The stored `cpu` grid, final round: paired differences over seeds ± 95 % Student-t half-widths $h$; accuracy in
# pass@1 **points**. **Higher / lower**: the interval excludes 0; **within noise**: it contains 0 (*not detected*,
# not *absent*). `detectable`: the true effect these seeds catch 4 times in 5, about $h\,(1 + t_{0.8}/t_{0.975})$
# with $n - 1$ degrees of freedom.

# %%
display(pd.DataFrame({
    "§5 run (quick)": [cfg.num_clients, cfg.rounds, cfg.local_steps, f"{cfg.prompts_per_step} × {cfg.num_generations}",
                       f"scale rule, target {cfg.fedmoa.lam_target}" if cfg.fedmoa.lam_rule == "target"
                       else f"{cfg.fedmoa.lam:g}, fixed", 1, "minutes on 2 CPU cores"],
    "§7 grid (cpu, Heter+Heter)": [hh["clients"], hh["rounds"], hh["tau"], f"{hh['b']} × {hh['G']}",
                                   f"{hh['lam']['FedMOA']:g}, fixed, tuned", "3–5 (per finding)",
                                   "stored: far too slow to rerun on a CPU"],
    "paper (Heter+Heter)": [15, 3, "not stated", "128 samples per step, G = 16", "0.01, fixed", "not stated",
                            "Qwen2.5-1.5B on 4 GPUs"]},
    index=["clients", "rounds", "τ", "b × G", "λ", "seeds", "why this size"]))
print(f"Homo+Heter (F3): {homo['clients']} clients, {homo['rounds']} rounds of τ = {homo['tau']}.")
WORDS = {"holds": "higher", "does not hold": "lower", "falls": "lower", "within noise": "within noise"}
findings = F.copy()
findings["verdict"] = findings["verdict"].map(WORDS)
F2_CLAIM = "FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter"
findings.loc["F2", ["difference", "±95% t"]] = fedmoa_claim_interval(F2_CLAIM)[:2]  # unrounded: a reward's digits
t1 = {f: PAPER_TABLE1[("heter+heter", f)] for f in ("math", "gsm", "code")}
TEST_SET = {"math": "MATH", "gsm": "GSM8K", "code": "HumanEval"}  # the paper's test sets
findings["the paper"] = [
    "; ".join(f"{TEST_SET[f]} {b[0] - a[0]:+.2f}" for f, (a, b) in t1.items()) + " (Table 1, global)",
    "; ".join(f"{TEST_SET[f]} {b[1] - a[1]:+.3f}" for f, (a, b) in t1.items()) + " (Table 1)",
    "HumanEval, clients' models: +0.60 (Homo+Heter), +3.29 (Heter+Heter)",
    "Fig. 5: w_acc rises within rounds (this row adds the boundary jumps: not like for like, split below)",
    "not run: λ = 0.01 only"]
findings["detectable"] = [h * (1 + t_quantile(0.8, int(n) - 1) / t_quantile(0.975, int(n) - 1))
                          for h, n in zip(findings["±95% t"], findings.seeds)]  # 80 % power, as for A1–A4 below
DIGITS = {"F1": 2, "F2": 4, "F3": 2, "F4": 3, "F5": 3}  # points: 2; a reward or a weight: 3–4
shown = findings.copy()
for c in ("difference", "±95% t", "detectable"):
    shown[c] = [f"{v:{'+' if c == 'difference' else ''}.{DIGITS[i]}f}" for i, v in findings[c].items()]
display(shown)


drain = []  # one row per λ-on run of the grid (setting, variant, seed): w_acc at the last round − at the start
for st in sorted({analysis.setting_label(r) for r in grid["runs"]}):
    p_ = pd.DataFrame(analysis.accuracy_weight_paths(grid["runs"], setting=st))
    if len(p_):
        d_ = p_.sort_values("round").groupby(["variant", "seed"]).mean_w0.agg(lambda s: s.iloc[-1] - s.iloc[0])
        drain += [dict(setting=st, variant=v, seed=s, change=c) for (v, s), c in d_.items()]
drain = pd.DataFrame(drain)


# %%
def said(label, unit, digits=2, claim=None):
    r = findings.loc[label]
    d, h, n = (fedmoa_claim_interval(claim)[:3] if claim else (r["difference"], r["±95% t"], int(r["seeds"])))
    return interval_words(d, h, n, unit, digits)


Markdown(f"""- **F1** (Heter+Heter, {hh['clients']} clients): FedMOA's global accuracy against FedAvg-GRPO is
  {said('F1', 'points')}, where the paper has +{t1['math'][1][0] - t1['math'][0][0]:.1f} points on MATH; these
  seeds detect about ±{findings.loc['F1', 'detectable']:.2f} points""" + (", so an effect the paper's size would likely "
  "have shown." if t1['math'][1][0] - t1['math'][0][0] > findings.loc['F1', 'detectable'] else ", more than the "
  "paper's effect: they could not have shown it.") + f"""
- **F2**: its aggregated reward (equal weights, §5) is
  {said('F2', '', 4, F2_CLAIM)}, where the paper has
  +{t1['math'][1][1] - t1['math'][0][1]:.3f} on MATH.
- **F3** (Homo+Heter, code family, clients' own models): {said('F3', 'points')}, one subgroup among several
  per-family contrasts, so a lead rather than a result ([report: Homo+Heter](13_fedmoa_report.ipynb)).
- **F4**: over the run w_acc is {said('F4', '', 3)}; it ends lower in {int((drain.change < 0).sum())} of the
  {len(drain)} stored runs with λ on (every setting, variant and seed). The paper's Fig. 5 shows a rise *within*
  rounds: the like-for-like split is below.
- **F5**: at λ = {hh['lam']['FedMOA, λ=100']:g} the change of w_acc is {said('F5', '', 3)}
  ([report: the paper's claims, λ](13_fedmoa_report.ipynb)).""")

# %% [markdown]
# **F4, like for like.** The grid's w_acc change split into eq. 10's within-round moves (Fig. 5's) and the boundary
# jumps (eqs. 11–12):

# %%
split = fedmoa_weight_split_findings()
display(split.round(4))
w_in, w_b, w_off = (split.iloc[i] for i in range(3))
words = {"higher": "rises", "lower": "falls", "within noise": "shows no change outside noise"}
Markdown(f"""Within rounds w_acc {words[w_in.verdict]}, against the paper's rise:
{interval_words(w_in.difference, w_in['±95% t'], w_in.seeds, '', 4)}. At the boundaries it {words[w_b.verdict]}:
{interval_words(w_b.difference, w_b['±95% t'], w_b.seeds, '', 4)}, {w_b.difference / (w_in.difference + w_b.difference):.0%}
of the change. With data-size α ("λ on, α off") the boundary change is
{interval_words(w_off.difference, w_off['±95% t'], w_off.seeds, '', 4)}. """ + (
    "So the drain is mostly eq. 11's α, which puts the shared w_acc below the plain mean (§2), not eq. 10; eq. 10's "
    "own moves are small and do not rise." if w_b.difference < w_in.difference < 0 and w_off.difference > w_b.difference
    else "The split does not single out one mechanism."))

# %% [markdown]
# **The paper's Fig. 3, over seeds.** The grid's global model per round, MATH-like; stars, final mean ± one
# standard deviation.

# %%
import plotly.graph_objects as go

recs_ = analysis.grid_records(grid["runs"])
pts = pd.DataFrame([dict(method=v, seed=s, round=r["round"], accuracy=r["math/accuracy"], format=r["math/format"])
                    for (st, v, s), rr in recs_.items() if st == "heter+heter" and v in METHODS
                    for r in analysis.server_records(rr)])
last = pts[pts["round"] == pts["round"].max()].copy()
last["on the front"] = non_dominated(last[["accuracy", "format"]].to_numpy())  # over both methods' final models
fig = px.line(pts, x="accuracy", y="format", color="method", line_group="seed", markers=True,
              hover_data=["seed", "round"], title="global model per round, MATH-like, one line per seed (stored grid)")
for name, d in last.groupby("method"):
    fig.add_trace(go.Scatter(x=[d.accuracy.mean()], y=[d.format.mean()], mode="markers", name=f"{name}, final mean",
                             marker=dict(size=14, symbol="star"), error_x=dict(array=[d.accuracy.std()]),
                             error_y=dict(array=[d.format.std()])))
fig.update_layout(template="plotly_white", height=420)
viz.export(fig, "fedmoa_pareto_seeds", figures)
display(fig)
spread = last.groupby("method").agg(seeds=("seed", "nunique"), accuracy=("accuracy", "mean"),
                                    accuracy_sd=("accuracy", "std"), format=("format", "mean"),
                                    format_sd=("format", "std"), on_front=("on the front", "sum"))
display(spread.round(4))
gap_acc = abs(spread.loc["FedMOA", "accuracy"] - spread.loc["FedAvg-GRPO", "accuracy"])
n_seeds = (f"{int(spread.seeds.min())}" if spread.seeds.nunique() == 1
           else f"{int(spread.seeds.min())}–{int(spread.seeds.max())}")
Markdown(f"""**Reading it.** {n_seeds} seeds per method; of the {len(last)}
final global models, {int(spread.loc['FedMOA', 'on_front'])} of FedMOA's and {int(spread.loc['FedAvg-GRPO', 'on_front'])}
of FedAvg-GRPO's are on the front. The methods' mean final accuracies differ by {gap_acc:.4f}, against a seed-to-seed
standard deviation of {spread.accuracy_sd.min():.4f}–{spread.accuracy_sd.max():.4f}: """
         + ("the seeds overlap, so the paper's picture (FedMOA's server points nearer the front) does not show here."
            if gap_acc < spread.accuracy_sd.max() else "the gap exceeds the seeds' spread; F1 says whether it is "
            "outside noise."))

# %% [markdown]
# **Which part does what.** Table 2's one-component arms against FedAvg-GRPO (`paper`: its Table 2, MATH).

# %%
abl = labelled(fedmoa_ablation_findings(), "A")
abl["detectable"] = [h * (1 + t_quantile(0.8, int(n) - 1) / t_quantile(0.975, int(n) - 1))
                     for h, n in zip(abl["±95% t"], abl.seeds)]
display(abl.round(4))


def power_words(r):
    unit = "" if r.unit == "reward" else " points"
    k = 4 if r.unit == "reward" else 2
    out = f"{r.seeds} seeds detect only a true effect of about ±{r.detectable:.{k}f}{unit}"
    if pd.notna(r.paper):
        out += (f", larger than the paper's {r.paper:+.{k}f}: these seeds could not have shown it"
                if abs(r.paper) < r.detectable else f", smaller than the paper's {r.paper:+.{k}f}")
    return out


Markdown("\n".join(f"- **{i}** ({r.finding.split(', ', 1)[1].split(' −')[0]}, {r.finding.split(',')[0]}): "
                   f"{interval_words(r.difference, r['±95% t'], r.seeds, '' if r.unit == 'reward' else 'points', 4 if r.unit == 'reward' else 2)}; "
                   f"{power_words(r)}." for i, r in abl.iterrows())
         + ("\n\nNeither part alone moves the grid's numbers outside noise, and at these sizes that is *not detected*, "
            "not *absent*" if (abl.verdict == "within noise").all() else "\n\nNot every arm is within noise: see the verdicts")
         + f"; the paper has α alone at +{PAPER_TABLE2['λ off, α on'][0] - PAPER_TABLE2['FedAvg-GRPO'][0]:.1f} points "
           f"and both at +{PAPER_TABLE2['FedMOA'][0] - PAPER_TABLE2['FedAvg-GRPO'][0]:.1f} on MATH.")

# %% [markdown]
# ## 8. Exercises: predict, then run
# Predict first; answers unfold on a click.
#
# ### Exercise 1
#
# With `cluster_key = "names"`, clients cluster only when their *whole* reward lists are identical.
# How many clusters would §5's clients form?

# %%
prediction_1 = None  # an integer

# %%
info = analysis.client_info(first)
names_ = [c["rewards"].split(", ") for c in info]
by_names, by_acc = (cluster_by_reward_names(names_, key=k) for k in ("names", "accuracy"))
answer_1 = len(by_names)
notebook.check_explained(prediction_1, answer_1, f"the {len(info)} clients hold {answer_1} distinct reward lists "
                         f"(against {len(by_acc)} accuracy-reward names, the {len(by_acc)} clusters of the run); "
                         f"cluster sizes {[len(c) for c in by_names]}: a one-client cluster has α = 1, so eq. 11 "
                         "would change nothing there.")

# %% [markdown]
# ### Exercise 2
#
# Two clients of one cluster end a round with $w_{\text{acc}} = 0.5$ and $0.3$. What α does eq. 11
# give the second one? Two decimals.

# %%
prediction_2 = None  # a number between 0 and 1

# %%
pair_w = [0.5, 0.3]
answer_2 = round(float(accuracy_aware_weights(pair_w)[1]), 2)
s1, s2 = (1 / (w + cfg.fedmoa.eps) for w in pair_w)
notebook.check_explained(prediction_2, answer_2, f"scores s = 1/(w + ε) = {s1:.2f} and {s2:.2f}; α₂ = e^{s2:.2f} / "
                         f"(e^{s1:.2f} + e^{s2:.2f}) = 1 / (1 + e^({s1:.2f} − {s2:.2f})) = {answer_2}: the lower "
                         "accuracy weight gets most of the say.", tolerance=0.01)

# %% [markdown]
# ### Exercise 3
#
# In §2's toy, give all objectives the same gradients (equal $\Delta_k$). How far (L1) do the
# weights move?

# %%
prediction_3 = None  # a number

# %%
g_same = np.ones((3, 2))  # the same gradient for every objective: every Δ_k equal
moved, delta_same = hypergradient_step(w_toy, g_same, g_same, lr=0.1)
answer_3 = round(float(np.abs(moved - w_toy).sum()), 6)
notebook.check_explained(prediction_3, answer_3, f"Δ = {delta_same.tolist()}: w + λΔ adds {0.1 * delta_same[0]:g} to "
                         "every weight, and the projection's shift ν takes the same amount back from each (the sum "
                         "must be 1 again), so nothing changes: only differences between the Δ_k move w.")

# %% [markdown]
# ### Exercise 4
#
# §2's toy again (Δ = 2, 0, −1), now with λ = 0.25. What is accuracy's new weight? Two decimals.

# %%
prediction_4 = None  # a number between 0 and 1

# %%
w_big, _ = hypergradient_step(w_toy, g_now, g_prev, lr=0.25)
answer_4 = round(float(w_big[0]), 2)
v_big = w_toy + 0.25 * delta
nu_equal = (v_big.sum() - 1) / 3
nu_two = (v_big[:2].sum() - 1) / 2
notebook.check_explained(prediction_4, answer_4, f"w + λΔ = {np.round(v_big, 4).tolist()}; an equal shift "
                         f"ν = {nu_equal:.4f} would leave tag_count at {v_big[2] - nu_equal:.4f} < 0, so it stops at "
                         f"0 and ν is found over the other two: ν = ({v_big[0]:.2f} + {v_big[1]:.2f} − 1) / 2 = "
                         f"{nu_two:.4f}, giving {np.round(w_big, 4).tolist()} (package): a large λ pushes weights "
                         "onto the simplex's boundary, where an objective's weight is 0.")

# %% [markdown]
# ## 9. What to remember
# - FedMOA = FedAvg-GRPO + eq. 10's weights + eq. 11's α in accuracy clusters.
# - Eq. 10 raises a weight whose $\Delta_k$ is **above the others'**; λ must match $\lVert g\rVert^2$.
# - Eq. 11 favours a *lower* $w_{\text{acc}}$, so the α-average sits below the plain mean: in our grid this, not
#   eq. 10, drains $w_{\text{acc}}$. It is FedAvg with one client per cluster, or equal $w_{\text{acc}}$ and $N_m$.
# - A few answers' gap on one seed is noise; the grid's seeds detect no global gain.
