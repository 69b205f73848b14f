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
# **The problem.** GRPO is rarely trained on one reward: a reasoning model is rewarded for the right answer
# (**accuracy**) and for well-formed output (a format, a tag count, a length). In a federation every client has
# its *own* set of rewards and its own weights on them, so clients optimise different mixtures, and averaging their
# models mixes those mixtures. **FedMOA** answers twice. On each client the weights **adapt during training**: an
# objective whose successive gradients agree is still making progress and gains weight (a *hypergradient* step: the
# gradient of the loss with respect to the weights, estimated from consecutive gradients). On the server, clients
# are **clustered** by their accuracy reward, and inside a cluster a client that *lowered* its accuracy weight,
# taken as closer to convergence, counts more.
#
# *A word on names:* the paper calls its baseline (plain GRPO on each client, then FedAvg) "FedGRPO"; here it is
# **FedAvg-GRPO**, since FedGRPO is notebook 01's method. Every table of the reproduction is in the report,
# [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p lam 0.5 -p normalise True`); a name it does not have stops the notebook in
# one line.

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

from experiments import fedmoa_analysis as analysis
from experiments.findings import fedmoa_findings
from experiments.fedmoa_pareto import non_dominated, pareto_figure
from experiments.fedmoa_presets import setting_config
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa import evaluation, plan, probe
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, cluster_by_reward_names, hypergradient_step
from fedrl_kit.policy.pretrain_families import MISSING_MESSAGE
from fedrl_kit.runs import REPO_ROOT, Run
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

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
# Client $m$ has $K_m$ rewards $r_0,\dots,r_{K_m-1}$, accuracy first, and weights on the simplex:
#
# $$w_k \ge 0,\quad \sum_k w_k = 1\quad\text{(eq. 1, `weights.project_to_simplex`)},\qquad
# r_w = \sum_k w_k\, r_k\quad\text{(eq. 2, `RewardSet.scalarise`)}$$
#
# and takes GRPO steps (notebook 00) on the group-relative advantage of $r_w$ (eq. 4, `grpo.group_advantages`). After
# each step it measures, for every objective alone, the gradient of its GRPO loss $L_k$ at one hidden layer $h$
# (we take that layer's LoRA factors), and moves the weights by how well consecutive gradients agree:
#
# $$g_k^{(t)} = \nabla_h L_k\bigl(h^{(t)}\bigr)\ \ \text{(eq. 8, `client.objective_gradients`)},\qquad
# \Delta_k^{(t)} = g_k^{(t)\top} g_k^{(t-1)}\ \ \text{(eq. 9)},\qquad
# w_k \leftarrow w_k + \lambda\,\Delta_k^{(t)}\ \ \text{(eq. 10)}$$
#
# then projects $w$ back onto the simplex (`weights.hypergradient_step`). The server groups clients into clusters
# $S_c$ by the name of their accuracy reward (`weights.cluster_by_reward_names`); inside a cluster, with
# $w_{\text{acc}}^{(m)}$ client $m$'s weight on accuracy (the paper's $w_0$),
#
# $$s_m = \frac{1}{w_{\text{acc}}^{(m)} + \varepsilon},\qquad \alpha_m = \frac{e^{s_m}}{\sum_{m'\in S_c}
# e^{s_{m'}}}\qquad\text{(eq. 11, `weights.accuracy_aware_weights`)}$$
#
# $$\theta^{(c)} = \sum_{m\in S_c}\alpha_m\,\theta^{(m)},\quad w_k^{(c)} = \sum_{m\in S_c}\alpha_m\,w_k^{(m)}
# \ \ \text{(eq. 12; $k$ shared by the cluster)},\qquad
# \theta = \sum_c \frac{N_c}{\sum_{c'} N_{c'}}\,\theta^{(c)}\ \ \text{(eq. 13, `aggregate.fedavg`)}$$
#
# and sends each client $\theta$ with its cluster's weights $w^{(c)}$, from which it resumes.
#
# | symbol | meaning |
# |---|---|
# | $M$, $m$ | number of clients; one client |
# | $K_m$, $k$, $r_k$ | client $m$'s number of rewards; one objective; its reward (accuracy is $k = 0$) |
# | $w_k$, $w_{\text{acc}}$ | weight of objective $k$; the weight on accuracy (the paper's $w_0$) |
# | $r_w$ | the weighted reward a client trains on |
# | $h$, $g_k$, $L_k$ | the hidden layer; the gradient there of objective $k$'s own GRPO loss $L_k$ |
# | $\Delta_k$, $\lambda$ | agreement of consecutive $g_k$; the step size of eq. 10 |
# | $\tau$ | local steps per round |
# | $S_c$, $N_c$ | the clients of cluster $c$; their training examples |
# | $\alpha_m$, $\varepsilon$ | client $m$'s weight inside its cluster (eq. 11); $10^{-6}$ |
# | $\theta^{(m)}$, $\theta^{(c)}$, $\theta$ | a client's, a cluster's and the global LoRA adapter |
# | Pareto front | the models no other model beats on both of two rewards at once |
#
# ## 3. Pseudocode
# `fedrl_kit/fedmoa/algorithm.py::run_round`, each line naming its function:
# ```
# for round = 1..R:
#   send θ and w^(c) (round 1: each client's own initial w) to every client   # algorithm.round_weights
#   each client m, for step t = 1..τ:                                        # client.MOAClient.on_fit
#     b prompts × G answers; every reward r_k on every answer               # RewardSet.scores
#     g_k for every k (eq. 8); Δ_k and w ← Proj(w + λΔ) (eqs. 9–10)          # objective_gradients, hypergradient_step
#     one GRPO step on r_w = Σ w_k r_k (eqs. 2–4)                            # grpo.grpo_step
#   clients reply θ^(m), reward names, w^(m), N_m
#   clusters by accuracy reward; α (eq. 11); θ^(c), w^(c) (eq. 12)          # algorithm.aggregate_round
#   θ = Σ_c N_c/N θ^(c) (eq. 13)                                             # aggregate.fedavg
# ```

# %% [markdown]
# ## 4. Who holds what
# Three task families stand for the paper's three datasets; every client holds one family and one of three reward
# configurations (the paper's Table 3):

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
# The base policy (`data/base_moa`, warm-started on all three families; on a GPU, Qwen2.5-1.5B-Instruct) per family:
# accuracy leaves room to grow and the format is used only part of the time, so every reward carries signal.

# %%
base_eval = evaluation.evaluate_base(cfg)
pd.DataFrame({f: {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith(f + "/")}
              for f in FAMILIES}).round(3)

# %% [markdown]
# ## 5. Run it: FedAvg-GRPO and FedMOA on the same federation
# Heter+Heter: every family and every reward configuration in one federation. FedAvg-GRPO is FedMOA's own code with
# both parts off: the same clients, data, rewards and initial weights, kept fixed, FedAvg by examples.

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
summary = pd.DataFrame({name: analysis.summary(recs) for name, (run, recs) in runs.items()}).T
summary[[c for c in ("global_accuracy", "aggregated_reward", "local_accuracy", "local_reward", "best_round")
         if c in summary]].round(3)

# %% [markdown]
# **The paper's Fig. 5: how the weights move.** Each client's weights after every local step (x = round + step/τ);
# at each round's start a client resumes from the weights its cluster was sent (eq. 12).

# %%
wh = pd.DataFrame(analysis.weight_history(runs["FedMOA"][1]))
fig = px.line(wh, x="t", y="weight", color="reward", facet_col="client", facet_col_wrap=6, markers=True,
              title="FedMOA reward weights per client; x = round + local step / τ")
fig.update_layout(template="plotly_white", height=300 * ((wh.client.nunique() + 5) // 6))
viz.export(fig, "fedmoa_weights", figures)
fig

# %% [markdown]
# **The paper's Fig. 3: Pareto fronts.** Each point is a model scored on the MATH-like test problems in the plane of
# two rewards: lines, the global model round by round from the base (r0); grey, the clients' own models; stars, the
# Pareto front of all of them.

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
    return pareto_figure(series, x, y, title=f"{y} vs {x}, {PAPER_NAMES[family]}-like")


fig = pareto()
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
fig

# %% [markdown]
# ## 6. One round of weights, step by step
# Eqs. 9–12 act on gradients and weights only, so a round of them can be replayed in milliseconds from gradients
# measured once: $g_k$ of every client on its first three local batches, at the base (`fedmoa.probe`). **Turn
# λ** and the pair of rewards: the figure shows each client's weights moving (arrows in step order) and, crossed,
# the weights its cluster would send next (eq. 12); the table gives each client's cluster and $\alpha$ (eq. 11).
# The policy is held fixed between the replayed steps, so this shows what λ does to the weights, not where a run
# would end. The first table says why λ matters so much: eq. 9's $\Delta_k$ is an unnormalised inner product, its
# size the square of the gradients', so the paper's λ = 0.01 barely moves a small model's weights.

# %%
import ipywidgets as widgets

federation = Run(make_config(cfg.preset), policy=first.policy, progress=False).build()  # untrained clients
probes = probe.probe_clients(federation, "global", steps=3)
client_0 = federation.clients["client_0"]
print("how big eq. 9's Δ_k is, and one step of eq. 10 on client_0 at the base (three ways to take g_k):")
display(pd.DataFrame(probe.lambda_scales(client_0, "global", target=0.05), index=list(client_0.names)).T
        .map(lambda v: f"{v:.3g}"))
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


def show_replay(lam, pair):
    fig, table = replay(lam, pair)
    fig.show(renderer="plotly_mimetype")
    display(table.round(4))


notebook.knobs(show_replay, lam=widgets.Dropdown(options=list(LAMS)), pair=widgets.Dropdown(options=list(PAIRS)))

# %% [markdown]
# **By hand: the α table.** Take the first cluster of the table below (λ = 10 × the scale rule, where the weights
# move), compute eq. 11 from its end-of-round accuracy weights, and compare with the package's column.

# %%
strong = [k for k in LAMS if k.startswith("10 ×")][0]
fig, table = replay(strong)
viz.export(fig, "fedmoa_weights_replay", figures)
cluster = table[table.cluster == 0]
s = 1 / (cluster["w_acc end"].to_numpy() + cfg.fedmoa.eps)  # eq. 11's scores
by_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax over the cluster
display(table.round(4))
pd.DataFrame({"w_acc end": cluster["w_acc end"], "α by hand": by_hand, "α package": cluster["α (eq. 11)"]}).round(4)

# %% [markdown]
# A small difference in $w_{\text{acc}}$ becomes a large one in α: the scores $1/w$ are large and the softmax is
# peaked, so one client can take most of its cluster's weight.

# %% [markdown]
# ## 7. What the reproduction found
# The stored `cpu` grid (the paper's three settings on the embedded world, three to five seeds, λ tuned on
# validation): accuracy in pass@1 points, reward in its own units, weights as fractions, each a paired difference
# with its 95 % Student-t half-width.

# %%
findings = fedmoa_findings()
findings

# %% [markdown]
# - FedMOA is within noise of FedAvg-GRPO in global accuracy and below it in aggregated reward (rows 1–2)
#   ([report: the paper's claims](13_fedmoa_report.ipynb)).
# - Where it helps is the clients' own models on the code family (row 3)
#   ([report: Homo+Heter](13_fedmoa_report.ipynb)).
# - **Surprise:** the accuracy weight does not build up over rounds; it *drains* (row 4), and at λ = 100 it drains
#   five times as far on average over three seeds (row 5), after which eq. 11 hands a cluster's model to the client
#   that dropped accuracy most ([report: where a larger λ takes the weights](13_fedmoa_report.ipynb)).

# %% [markdown]
# ## 8. Exercises: predict, then run
# **Exercise 1.** Which clients share `client_0`'s cluster? Predict a set of names, e.g. `{"client_0", "client_3"}`
# (look at the client table of §5: clusters follow the accuracy reward's name).

# %%
prediction_1 = None  # a set of client names

# %%
info = analysis.client_info(first)
clusters = cluster_by_reward_names([c["rewards"].split(", ") for c in info], key=cfg.fedmoa.cluster_key)
answer_1 = {info[m]["client"] for c in clusters if 0 in c for m in c}
notebook.check(prediction_1, answer_1, "Clusters follow the accuracy reward's name alone: the MATH-like and "
                                       "GSM8K-like clients both call theirs `accuracy`, the code clients theirs "
                                       "`code_accuracy`.")

# %% [markdown]
# **Exercise 2.** Two clients of one cluster end a round with $w_{\text{acc}} = 0.5$ and $0.3$. What α does eq. 11
# give the second one? Two decimals.

# %%
prediction_2 = None  # a number between 0 and 1

# %%
answer_2 = round(float(accuracy_aware_weights([0.5, 0.3])[1]), 2)
notebook.check(prediction_2, answer_2, "Scores 2 and 3.33: softmax gives the lower accuracy weight most of the say.",
               tolerance=0.01)

# %% [markdown]
# **Exercise 3.** With λ = 0, how far (L1) does any client's weight vector move in a round?

# %%
prediction_3 = None  # a number

# %%
still = probe.replay_round(probes, lam=0.0)
answer_3 = float(max(np.abs(r["trajectory"][-1] - r["trajectory"][0]).sum() for r in still))
notebook.check(prediction_3, answer_3, "λ = 0 is the paper's 'λ off' ablation: eq. 10 adds nothing.")

# %% [markdown]
# **Exercise 4.** If every objective has the same $\Delta_k$, how far do the weights move? (Hint: the projection onto
# the simplex.)

# %%
prediction_4 = None  # a number

# %%
w = np.array([0.5, 0.3, 0.2])
g = np.ones((3, 4))  # the same gradient for every objective: every Δ_k equal
moved, delta = hypergradient_step(w, g, g, lr=0.1)
answer_4 = round(float(np.abs(moved - w).sum()), 6)
notebook.check(prediction_4, answer_4, f"Δ = {delta.tolist()}: adding the same amount to every weight and projecting "
                                       "back onto the simplex changes nothing; only differences of Δ move w.")
