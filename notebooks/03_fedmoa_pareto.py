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
# **The problem.** A reasoning model is rewarded for the right answer (**accuracy**) and for well-formed output (a
# **format reward**: 1 for a `<think>…</think>` block then an `<answer>…</answer>` block, else 0). In a federation
# each client has its *own* rewards and weights. **FedMOA**: each client's weights **adapt** by a *hypergradient*
# step; the server **clusters** clients by accuracy reward, and inside a cluster a client with a *lower* accuracy
# weight counts more. The paper's baseline "FedGRPO" (GRPO, then FedAvg) is **FedAvg-GRPO** here. Settings: **Homo+Homo** (one dataset, one reward set), **Homo+Heter** (one dataset, reward sets differ),
# **Heter+Heter** (datasets and reward sets differ). Reproduction: [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p lam 0.5 -p normalise True`); an unknown name stops the notebook.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
normalise = False      # True: Δ_k as the cosine of consecutive gradients, with λ from lam (ours; eq. 9 is unnormalised)
lam = 0.1              # λ when normalise is True
run_root = ""          # where the runs go ("": runs/fedmoa/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import numpy as np
import pandas as pd
import plotly.express as px
from IPython.display import Markdown

from experiments import fedmoa_analysis as analysis
from experiments.fedmoa_analysis import PAPER_TABLE1, PAPER_TABLE2
from experiments.findings import (fedmoa_ablation_findings, fedmoa_claim_interval, fedmoa_findings, fedmoa_setting,
                                 interval_words, labelled)
from experiments.stats import sign_verdict
from experiments.fedmoa_pareto import identical_server_paths, non_dominated, pareto_figure
from experiments.fedmoa_presets import setting_config
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa import evaluation, plan, probe
from fedrl_kit.fedmoa.weights import (accuracy_aware_weights, aggregate_shared_weights, cluster_by_reward_names,
                                      hypergradient_step)
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

# %% [markdown]
# ## 1. One round, drawn

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# ## 2. Key equations
# **GRPO in brief.** A client samples $G$ answers to a prompt from $\pi_{\text{old}}$ (the policy that sampled the
# batch), scores each ($r_i$), and with the group's mean $\bar r$ and deviation $\sigma_r$ and the per-token ratio
# $\rho_{i,t} = \pi_\theta / \pi_{\text{old}}$ ascends
#
# $$\hat a_i = \frac{r_i - \bar r}{\sigma_r},\qquad J(\theta) = \frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t}, 1-\zeta_{\text{lo}}, 1+\zeta_{\text{hi}})
# \,\hat a_i\Bigr)$$
#
# ($\zeta$: the clip range, usually written ε; here ε is eq. 11's constant). Each local step samples a fresh batch and
# takes `num_iterations` optimiser steps on it: $\rho = 1$ at the first, $\ne 1$ once θ has moved (the clip's job).
# β = 0: no KL term.
# FedMOA's client $m$ has $K_m$ rewards $r_0,\dots,r_{K_m-1}$, accuracy first:
#
# $$w_k \ge 0,\ \sum_k w_k = 1\ \text{(1)},\quad r_w = \sum_k w_k r_k\ \text{(2)},\quad
# J(\theta; w) = \mathbb{E}_{y\sim\pi_\theta}\bigl[r_w(y)\bigr]\ \text{(3)},\quad
# \max_\theta \mathbb{E}_{\pi_{\text{old}}}\bigl[\hat a_w \log\pi_\theta(y)\bigr]\ \text{(4)}$$
#
# with $\hat a_w$ the advantage of $r_w$; (4) is the paper's shorthand for $J(\theta)$ above on $r_w$. After each
# step, for every objective alone, $g_k$ is the gradient of its own GRPO loss $L_k$ with respect to $\phi$, the
# weights of one layer $\ell$ (`fedmoa.hyper_layer`; default: the middle one):
#
# $$g_k^{(t)} = \nabla_\phi L_k\ \text{(8)},\qquad \Delta_k^{(t)} = g_k^{(t)\top} g_k^{(t-1)}\ \text{(9)},\qquad
# w_k \leftarrow \operatorname{Proj}_{\text{simplex}}\bigl(w_k + \lambda\,\Delta_k^{(t)}\bigr)\ \text{(10)}$$
#
# The paper takes $\phi$ = the hidden state $h$ of layer $\ell$; our default takes $\phi$ = that layer's LoRA factors.
#
# **Where eq. 9 comes from.** Treat the weights as hyperparameters of $L_w(\phi) \approx \sum_j w_j L_j(\phi)$ (only
# near-linear: GRPO normalises $r_w$ in the group). A gradient step of size $\eta$ moves $\phi$; by the chain rule:
#
# $$\phi^{(t)} = \phi^{(t-1)} - \eta\sum_j w_j\, g_j^{(t-1)}
# \;\Rightarrow\; \frac{\partial L_k(\phi^{(t)})}{\partial w_k} = g_k^{(t)\top}\frac{\partial \phi^{(t)}}{\partial w_k}
# = -\eta\, g_k^{(t)\top} g_k^{(t-1)} = -\eta\,\Delta_k^{(t)} .$$
#
# A descent step of size $\kappa$ on $w_k$ is eq. 10 with $\lambda = \kappa\eta$: $\Delta_k > 0$ (consecutive
# gradients agree) raises $w_k$. (Differentiating $L_0$ instead would give $-\eta\, g_0^{(t)\top} g_k^{(t-1)}$.)
#
# **Server.** Clusters $S_c$ group clients by their accuracy reward's name; with $w_{\text{acc}}^{(m)}$ client $m$'s
# accuracy weight (the paper's $w_0$) at the round's end:
#
# $$s_m = \frac{1}{w_{\text{acc}}^{(m)} + \varepsilon},\qquad \alpha_m = \frac{e^{s_m}}{\sum_{m'\in S_c}
# e^{s_{m'}}}\qquad\text{(11)}$$
#
# Eq. 12 **as the code does it** (`weights.aggregate_shared_weights`): $\bar w_k^{(c)} = \sum_{m\in S_c}\alpha_m
# w_k^{(m)}$ for each reward $k$ that *every* client of $S_c$ has; client $m$ keeps its own $w_k^{(m)}$ for the
# others, then renormalises onto its own reward set, so each client gets its own vector $w^{(m\leftarrow c)}$:
#
# $$u_k = \begin{cases}\bar w_k^{(c)} & k \text{ shared}\\ w_k^{(m)} & \text{otherwise}\end{cases},\qquad
# w_k^{(m\leftarrow c)} = \frac{u_k}{\sum_j u_j}\ \text{(12)},\qquad
# \theta = \sum_c \frac{N_c}{N}\sum_{m\in S_c}\alpha_m\,\theta^{(m)}\ \text{(12–13)}$$
#
# So the global model is FedAvg with clients re-weighted inside clusters; every client resumes from the same $\theta$,
# and no per-cluster model survives the round. "Personalized" in the paper's title means the clients' own models
# ($\theta^{(m)}$ after local training, its "local" scores) and their own weights, not a model per cluster.
#
# | symbol | meaning |
# |---|---|
# | $M$, $m$, $\tau$ | number of clients; one client; local steps per round |
# | $G$, $\hat a_i$, $\rho$, $\zeta_{\text{lo}}$, $\zeta_{\text{hi}}$ | answers per prompt; advantage; ratio; clip range |
# | $K_m$, $k$, $r_k$ | client $m$'s number of rewards; one objective; its reward (accuracy is $k = 0$) |
# | $w_k$, $w_{\text{acc}}$ | weight of objective $k$; the weight on accuracy (the paper's $w_0$) |
# | $\ell$, $\phi$, $g_k$, $L_k$ | the probed layer; what $g_k$ differentiates; objective $k$'s gradient and loss |
# | $\Delta_k$, $\lambda$ ; $\eta$, $\kappa$ | eq. 9's agreement; eq. 10's step (code: `lam`) ; the derivation's steps |
# | $S_c$, $N_c$, $N$ | the clients of cluster $c$; their training examples; all examples |
# | $s_m$, $\alpha_m$, $\varepsilon$ | eq. 11's score; client $m$'s weight in its cluster; $10^{-6}$ |
# | $\bar w^{(c)}$, $w^{(m\leftarrow c)}$ | the cluster's shared average; what client $m$ starts the next round with |
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
# Three families of the *embedded world* (small synthetic tasks and policy, for a CPU) stand for the
# paper's datasets; each client holds one family and one reward configuration (Table 3). `tag_count`: 0.25 per tag
# present once; `code_format`: 0.5 format, 0.5 a program that parses; `length_short`: short programs;
# `char_repetition`: minus the share of repeated n-grams.

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
# The base policy (`data/base_moa`, warm-started on all three families; on a GPU, Qwen2.5-1.5B-Instruct) per family
# (pass@1: the share of test problems whose sampled answer is right, averaged over samples):

# %%
base_eval = evaluation.evaluate_base(cfg)
pd.DataFrame({f: {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith(f + "/")}
              for f in FAMILIES}).round(3)

# %% [markdown]
# ## 5. Run it: FedAvg-GRPO and FedMOA on the same federation
# Heter+Heter with 6 clients: configs A and B of each family (C needs a third client per family). FedAvg-GRPO is
# FedMOA's code with both parts off (weights fixed, FedAvg by examples). The clients, then their round-1 weights:

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

# %% [markdown]
# $\phi$ of eq. 8 (`fedmoa.hyper_grad`): **lora**, layer $\ell$'s LoRA factors (the same coordinates every step);
# **sequence** or **shared**, a shift of $\ell$'s output $h$ per answer or for all tokens (the paper's form). The
# **scale rule** (`lam_rule = "target"`, ours) sets λ = target $/\ \text{mean}_k \lVert g_k\rVert^2$ at a round's
# first step, so agreeing gradients move $w_k$ by about the target.

# %%
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
Markdown("""Columns (fractions, last round): **global_accuracy**, the global θ's pass@1 averaged over the three
families; **aggregated_reward**, for each client the *unweighted* mean of its reward components (pass@1 for accuracy)
scored on the global θ, averaged over clients: equal weights, so FedMOA's changing $w$ does not enter it, and the
two methods are scored alike; **local_accuracy / local_reward**, the same for each client's own model $\\theta^{(m)}$
after its local steps, on its own family; **best_round**, the round with the best validation accuracy.""")

# %% [markdown]
# **The paper's Fig. 5.** Each client's weights after every local step: x = (round − 1) + step/τ, so round $p$ fills
# $(p-1, p]$. A round's first step leaves $w$ as sent (eq. 9 needs a previous gradient). The table after it separates
# eq. 10's moves from the jumps at the boundaries.

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

**Consequences.** With τ = {cfg.local_steps} there is {per_round} eq. 10 update per round ({n_up} in the run), so at this
scale the weights' adaptation is mostly these jumps (the table above). Over the {len(rewards_of)} clients the first jumps
average {first_jumps:+.4f} against {moves.iloc[:, 0].mean():+.4f} for eq. 10's moves; the three-reward clients'
first jumps: {', '.join(f'{c} {moves.loc[(c, 1)].iloc[1]:+.4f}' for c in rewards_of if len(rewards_of[c]) == 3)}. F4 below (w_acc drains in the grid) is **likely** the same boundary mechanism; the
grid's runs were not split into jumps and eq. 10 moves here.""")

# %% [markdown]
# **The paper's Fig. 3: Pareto fronts.** Each point is a model scored on the MATH-like test problems: lines, the
# global model round by round from the base (r0); grey, the clients' own models; stars, the **Pareto front** (the
# points no other beats on both rewards).

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
Markdown(f"""**Reading the figure.** {len(front)} of the {len(points)} models {'is' if len(front) == 1 else 'are'} on
the front (the table); the other {len(points) - len(front)} are dominated. Of the two final global models (round {cfg.rounds}), {verdict}:
FedAvg-GRPO at {xy(fa)}, FedMOA at {xy(fm)} (accuracy, format). {shape[0].upper() + shape[1:]}. What to conclude:
one seed, scored on {cfg.n_test // len(FAMILIES)} problems × {cfg.eval_samples} samples, where one answer more or less
moves a score by {step:.3f}; gaps of that size are noise, and what the method does is decided over seeds in §7.""")

# %%
fams, same = [], {}
for fam in FAMILIES:
    _, ser = pareto(family=fam)
    pts = [(True, p) for s_ in ser.values() for p in s_["server"][1:]] + [(False, p) for s_ in ser.values()
                                                                        for p in s_["clients"]]
    front_ = non_dominated(np.array([p for _, p in pts]))
    same[fam] = bool(identical_server_paths(ser))
    fams.append({"family": f"{PAPER_NAMES[fam]}-like", "models": len(pts), "on the front": int(front_.sum()),
                 "global models on it": int(sum(f_ for f_, (g_, _) in zip(front_, pts) if g_)),
                 "global paths identical": same[fam],
                 **{f"{m} r{cfg.rounds}": tuple(np.round(s_["server"][-1], 3)) for m, s_ in ser.items()}})
display(pd.DataFrame(fams).set_index("family"))
alpha_range = [float(a) for r in runs["FedMOA"][1] if r["kind"] == "client" and r.get("client") != "server"
               and "alpha" in r for a in np.atleast_1d(r["alpha"])]
sv = {m: analysis.server_records(recs)[-1] for m, (run, recs) in runs.items()}
gap_answers = max(np.abs(np.subtract(r["FedAvg-GRPO r%d" % cfg.rounds], r["FedMOA r%d" % cfg.rounds])).max()
                  for r in fams) / step  # in answers of the scored samples
Markdown(f"""**{'Why the two global paths coincide on some families' if any(same.values()) else 'Two global paths'}.** The two methods' θ differ only by eq. 11
re-weighting clients inside a cluster (FedMOA's α ranged {min(alpha_range):.2f}–{max(alpha_range):.2f} against
FedAvg's equal shares) and by slightly different $w$; both are scored on the same problems with the same sampling
seed, so a small difference in θ rarely changes a sampled answer. The global paths are identical on
{', '.join(PAPER_NAMES[f] + '-like' for f, v in same.items() if v) or 'no family'}; over all families the final global
accuracy still differs ({sv['FedAvg-GRPO']['global_accuracy']:.3f} against {sv['FedMOA']['global_accuracy']:.3f}).
**Likely** (the adapters' distance was not measured): θ's differences are too small to flip answers there. The table
says, per family, how many models are on the front and how many of those are global models: a front of several
models is a trade-off between accuracy and format. The paper's Fig. 3 reports FedMOA's final server
points closer to the front than FedGRPO's, with higher accuracy at comparable format.""")

# %% [markdown]
# ## 6. One round of weights, step by step
# Eqs. 9–12 need only gradients, so a round replays in milliseconds from $g_k$ of each client's first three batches
# at the base (`fedmoa.probe`). The first table: $\Delta_k$ scales as $\lVert g\rVert^2$, so the paper's λ = 0.01
# barely moves a small model's weights. The figure (arrows: steps; crosses: eq. 12) redraws with the widgets.

# %%
import ipywidgets as widgets

federation = Run(make_config(cfg.preset), policy=first.policy, progress=False).build()  # untrained clients
probes = probe.probe_clients(federation, "global", steps=3)
client_0 = federation.clients["client_0"]
print("how big eq. 9's Δ_k is, and one step of eq. 10 on client_0 at the base (three ways to take g_k):")
display(pd.DataFrame(probe.lambda_scales(client_0, "global", target=0.05), index=list(client_0.names)).T
        .map(lambda v: f"{v:.3g}"))
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
hh, homo = fedmoa_setting(), fedmoa_setting(setting="homo+heter")
run_lams = [float(r["lam"]) for r in runs["FedMOA"][1] if r["kind"] == "client" and r.get("client") != "server"
            and r.get("lam") is not None]
moa = cfg.fedmoa
display(pd.DataFrame([
    ("the paper (§4.1)", "0.01, fixed, on eq. 9's dot product", "paper"),
    ("`lam` (this notebook's parameter)", f"{lam:g}, used only with normalise=True (Δ_k a cosine)", "toolkit"),
    (f"§5's run: lam_rule = {moa.lam_rule!r}", (f"target {moa.lam_target} / mean_k ‖g_k‖² at each round's first "
     "step: " if moa.lam_rule == "target" else "fixed: ")
     + (f"λ from {min(run_lams):.3g} to {max(run_lams):.3g} over clients and rounds" if run_lams else f"{moa.lam:g}"),
     "toolkit (scale rule)" if moa.lam_rule == "target" else "toolkit"),
    ("§7's stored grid", f"{hh['lam']['FedMOA']:g}, fixed, tuned on validation", "toolkit"),
    ("F5's variant", f"{hh['lam']['FedMOA, λ=100']:g}, fixed", "toolkit")],
    columns=["where", "λ", "from"]).set_index("where"))
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
pd.DataFrame(rows_).set_index("λ").round(4)

# %% [markdown]
# **By hand: the α table.** For the first cluster at λ = 10 × the scale rule (the weights move), eq. 11 from the
# end-of-round accuracy weights, beside the package's α.

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
# The stored `cpu` grid, final round: paired differences over seeds, 95 % Student-t half-widths; accuracy in pass@1
# **points** (× 100 of §5's fractions). **Higher / lower by X**: the interval excludes 0; **within noise**: it
# contains 0.

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
findings = labelled(fedmoa_findings())
findings["verdict"] = findings["verdict"].map(WORDS)
t1 = {f: PAPER_TABLE1[("heter+heter", f)] for f in ("math", "gsm", "code")}
TEST_SET = {"math": "MATH", "gsm": "GSM8K", "code": "HumanEval"}  # the paper's test sets
findings["the paper"] = [
    "; ".join(f"{TEST_SET[f]} {b[0] - a[0]:+.2f}" for f, (a, b) in t1.items()) + " (Table 1, global)",
    "; ".join(f"{TEST_SET[f]} {b[1] - a[1]:+.3f}" for f, (a, b) in t1.items()) + " (Table 1)",
    "HumanEval, clients' models: +0.60 (Homo+Heter), +3.29 (Heter+Heter)",
    "Fig. 5: w_acc rises within rounds as the format rewards saturate",
    "not run: λ = 0.01 only"]
findings

# %%
def said(label, unit, digits=2, claim=None):
    r = findings.loc[label]
    d, h, n = (fedmoa_claim_interval(claim)[:3] if claim else (r["difference"], r["±95% t"], int(r["seeds"])))
    return interval_words(d, h, n, unit, digits)


Markdown(f"""- **F1, F2** (Heter+Heter, {hh['clients']} clients, τ = {hh['tau']}): FedMOA's global accuracy against
  FedAvg-GRPO is {said('F1', 'points')}; its aggregated reward (equal weights, §5) is
  {said('F2', '', 4, 'FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter')}. The paper: +{t1['math'][1][0] -
  t1['math'][0][0]:.1f} points and +{t1['math'][1][1] - t1['math'][0][1]:.3f} reward on MATH.
- **F3** (Homo+Heter, {homo['clients']} clients, code family, clients' own models): {said('F3', 'points')}. A
  subgroup: one family of three, local models, {int(findings.loc['F3', 'seeds'])} seeds against F1's
  {int(findings.loc['F1', 'seeds'])}, one of several per-family contrasts on clients' own models in the report;
  picking the favourable one overstates it, so read it as a lead ([report: Homo+Heter](13_fedmoa_report.ipynb)).
- **F4** (Heter+Heter): over the run w_acc is {said('F4', '', 3)}; the paper's Fig. 5 has it rising. Likely the
  boundary renormalisation of §5, which fixed λ cannot outweigh.
- **F5**: at λ = {hh['lam']['FedMOA, λ=100']:g} the change of w_acc is {said('F5', '', 3)}: these
  {int(findings.loc['F5', 'seeds'])} seeds do not show that a larger λ drains it further
  ([report: the paper's claims, λ](13_fedmoa_report.ipynb)).

**Fig. 3 and Fig. 5.** The paper's Pareto fronts show FedMOA's final server points nearer the front; in §5 the two
final global models differ by at most {gap_answers:.0f} answer(s) per reward on any family, noise at one seed. Its Fig. 5 shows w_acc rising inside rounds and reset at each boundary; §5 shows the
boundary jumps dominating instead.""")

# %% [markdown]
# **Which part does what.** Table 2's one-component arms against FedAvg-GRPO (same grid, all families; `paper`: its
# Table 2 on MATH, none for "λ on, α off", a row the paper lacks):

# %%
abl = labelled(fedmoa_ablation_findings(), "A")
display(abl.round(4))
Markdown("; ".join(f"**{i}** ({r.finding.split(', ', 1)[1].split(' −')[0]}, {r.finding.split(',')[0]}): "
                   f"{interval_words(r.difference, r['±95% t'], r.seeds, '' if r.unit == 'reward' else 'points', 4 if r.unit == 'reward' else 2)}"
                   for i, r in abl.iterrows())
         + (". Neither part alone moves the grid's numbers outside noise" if (abl.verdict == "within noise").all()
            else ". Not every arm is within noise: see the verdicts")
         + f"; the paper has α alone at "
           f"+{PAPER_TABLE2['λ off, α on'][0] - PAPER_TABLE2['FedAvg-GRPO'][0]:.1f} points and both at "
           f"+{PAPER_TABLE2['FedMOA'][0] - PAPER_TABLE2['FedAvg-GRPO'][0]:.1f} on MATH.")

# %% [markdown]
# ## 8. Exercises: predict, then run
# Check cells print the answer and why; predict first.
#
# **Exercise 1.** Which clients share `client_0`'s cluster? Predict a set of names (clusters: §2).

# %%
prediction_1 = None  # a set of client names

# %%
info = analysis.client_info(first)
clusters = cluster_by_reward_names([c["rewards"].split(", ") for c in info], key=cfg.fedmoa.cluster_key)
answer_1 = {info[m]["client"] for c in clusters if 0 in c for m in c}
acc_name = info[0]["rewards"].split(", ")[0]
notebook.check_explained(prediction_1, answer_1, f"clusters follow the accuracy reward's name alone (cluster_key = "
                         f"{cfg.fedmoa.cluster_key!r}): client_0's is `{acc_name}`, and so is that of "
                         f"{', '.join(sorted(answer_1 - {'client_0'}))} (families "
                         f"{', '.join(sorted({c['family'] for c in info if c['client'] in answer_1}))}); the others' "
                         f"is a different name.")

# %% [markdown]
# **Exercise 2.** Two clients of one cluster end a round with $w_{\text{acc}} = 0.5$ and $0.3$. What α does eq. 11
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
# **Exercise 3.** In the replay of §6 with λ = 0, how far (L1) does any client's weight vector move in a round?

# %%
prediction_3 = None  # a number

# %%
still = probe.replay_round(probes, lam=0.0)
answer_3 = float(max(np.abs(r["trajectory"][-1] - r["trajectory"][0]).sum() for r in still))
notebook.check_explained(prediction_3, answer_3, f"eq. 10 adds λ·Δ_k = 0 at every step, so w stays at w^(0) (the "
                         f"largest L1 move over the {len(still)} clients is {answer_3:g}); λ = 0 is the paper's "
                         "'λ off' ablation. In a real round eq. 12 could still move w at the boundary.")

# %% [markdown]
# **Exercise 4.** If every objective has the same $\Delta_k$, how far do the weights move?

# %%
prediction_4 = None  # a number

# %%
w = np.array([0.5, 0.3, 0.2])
g = np.ones((3, 4))  # the same gradient for every objective: every Δ_k equal
moved, delta = hypergradient_step(w, g, g, lr=0.1)
answer_4 = round(float(np.abs(moved - w).sum()), 6)
notebook.check_explained(prediction_4, answer_4, f"Δ = {delta.tolist()}: w + λΔ adds {0.1 * delta[0]:g} to every "
                         "weight, and projecting back onto the simplex subtracts the same amount from each (the sum "
                         "must be 1 again), so nothing changes; only differences between the Δ_k move w.")

# %% [markdown]
# **Exercise 5.** At the first round boundary, will `client_2`'s $w_{\text{acc}}$ (code cluster) rise or fall, and
# why? Answer `"rise"` or `"fall"`.

# %%
prediction_5 = None  # "rise" or "fall"

# %%
h2 = eq12_by_hand("client_2")
jump2 = h2["sent"]["client_2"][h2["acc"]] - end1.loc["client_2", h2["acc"]]  # by hand; the run's: §5's table
answer_5 = "rise" if jump2 > 0 else "fall"
notebook.check_explained(prediction_5, answer_5, f"the jump is {jump2:+.4f} (w_acc the run sent: "
                         f"{in_run('client_2', h2['acc'])}). Eq. 12 averages the shared "
                         f"{', '.join(h2['bar'])} over {', '.join(h2['ids'])} (ū = "
                         f"{', '.join(f'{v:.4f}' for v in h2['bar'].values())}); client_2 keeps its own "
                         f"{', '.join(f'{k} = {v:.4f}' for k, v in h2['own'].items())}, so its weights sum to "
                         f"{h2['total']:.4f} and w_acc becomes {h2['bar'][h2['acc']]:.4f} / {h2['total']:.4f} = "
                         f"{h2['sent']['client_2'][h2['acc']]:.4f}, from {end1.loc['client_2', h2['acc']]:.4f}.")
