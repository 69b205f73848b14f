# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # FedMOA: who sets the reward weights in federated GRPO?
#
# *Wang et al., FedMOA: Federated GRPO for Personalized Reasoning LLMs under Heterogeneous Rewards.*
#
# **The problem.** GRPO for reasoning often scores each answer with several rewards in [0, 1]. **Accuracy** is 1
# if the answer is right. **Format** is 1 if it reads `<think>…</think><answer>…</answer>`. **Tag count** gives a
# quarter for each of those four tags that appears once. Training uses a weighted sum. Fixed weights waste signal:
# format is learnt in a few steps, yet keeps its share. Federated clients may also hold different rewards.
#
# **The method.** FedMOA changes FedAvg-GRPO in two places:
#
# 1. **Client:** after each local step, the weights shift toward the rewards still being learnt.
# 2. **Server:** in a cluster, a client with a *lower* accuracy weight counts more, read as "accuracy nearly
#    learnt".

# %% tags=["parameters"]
# papermill parameters (-p seed 1); the text describes these defaults
preset_name = "quick"  # quick (2-core CPU) | smoke (seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
run_root = ""          # where runs go ("": runs/fedmoa/…)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
from math import comb
from pathlib import Path

import ipywidgets as widgets
import numpy as np
import pandas as pd

from experiments import findings
from experiments import teaching_fedmoa as tf
from experiments.fedmoa_analysis import PAPER_TABLE1
from experiments.fedmoa_pareto import non_dominated, pareto_front_order
from experiments.fedmoa_presets import CLIENTS, LAM_GRID, SCALE_FEDMOA, SCALE_FIELDS
from experiments.stats import t_interval
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, hypergradient_step
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

make_config = tf.config_maker(seed)
cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root", folder=dict(s=seed))

# %% [markdown]
# ## 1. One round
# Each client $m$ trains its LoRA adapter $\theta^{(m)}$ and its reward weights $w^{(m)}$ for τ local steps. The
# server averages both within each cluster, then the adapters across clusters.

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# | symbol | meaning |
# |---|---|
# | $m$, $S_c$ | client; cluster (clients sharing an accuracy reward) |
# | $r_k$, $w_k$, $w_{\text{acc}}$ | reward $k$ of $K_m$; its weight; accuracy's weight |
# | $g_k$, $\Delta_k$, λ | $r_k$'s gradient at step $t$; $g_k^{(t)}\cdot g_k^{(t-1)}$; eq. 10's step |
# | $\alpha_m$ | client $m$'s share in its cluster |
# | $\theta^{(m)}$, $\theta^{(c)}$, $\theta$ | client, cluster, global adapter |
# | $N_m$, $N_c$, $N$ | training examples: client, cluster, all |

# %% [markdown]
# ## 2. The client: GRPO on a weighted reward
# Client $m$ holds $K_m$ rewards $r_k$, accuracy first, with weights on the *simplex*:
#
# $$w_k\ge0,\ \sum_kw_k=1\ \text{(1)},\qquad r_w=\sum_kw_kr_k\ \text{(2)}$$
#
# GRPO then runs as usual on $r_w$ (eqs. 3–4): of the $G$ answers $y_i$ to a prompt, it pushes up those whose
# $r_w$ beats the group's mean.
#
# **Moving the weights.** $L_k$ is GRPO's loss with reward $r_k$ alone, through its own advantage
# $\hat a_{i,k}$. Its gradient $g_k$ is taken only on $\phi$, one middle layer's LoRA factors, to keep it cheap. At
# local step $t$:
#
# $$\hat a_{i,k}=\frac{r_k(y_i)-\bar r_k}{\sigma_{r_k}},\quad g_k^{(t)}=\nabla_\phi L_k\ \text{(8)},\quad
# \Delta_k^{(t)}=g_k^{(t)\top}g_k^{(t-1)}\ \text{(9)},\quad
# w\leftarrow\operatorname{Proj}_{\text{simplex}}\bigl(w+\lambda\,\Delta^{(t)}\bigr)\ \text{(10)}$$
#
# **Why $\Delta_k$: a hypergradient.** Suppose the last step was plain gradient descent with learning rate η:
# $\theta_t=\theta_{t-1}-\eta\sum_jw_jg_j^{(t-1)}$. The chain rule then gives
# $\partial L_k(\theta_t)/\partial w_k=-\eta\,g_k^{(t)}\cdot g_k^{(t-1)}=-\eta\Delta_k$. So $\Delta_k>0$ means that
# more weight on $r_k$ would have lowered its loss further: progress is left, and eq. 10 raises $w_k$.
# $\Delta_k\approx0$ means its gradient has vanished or now points elsewhere.
#
# Eq. 10 folds η into λ. Our clients take Adam steps, so for them $\Delta_k$ only approximates this derivative.
#
# **The projection.** Proj subtracts one shift ν from every weight so that they sum to 1; none goes below 0. So
# **a weight rises only when its $\Delta_k$ beats the average Δ of the weights above 0**. In numpy:

# %%
def project_simplex(v):  # w_k = max(v_k − ν, 0), with the one ν that makes Σ w_k = 1
    u = np.sort(v)[::-1]  # largest first
    excess = np.cumsum(u) - 1  # what the top j entries hold beyond 1
    j = np.arange(1, len(v) + 1)
    keep = j[u - excess / j > 0][-1]  # how many weights stay above 0
    return np.maximum(v - excess[keep - 1] / keep, 0)  # ν: that excess shared equally by them


def eq10(w, g_now, g_prev, lam):
    delta = (g_now * g_prev).sum(axis=1)  # eq. 9: Δ_k = g_k^(t)·g_k^(t−1), one row per reward
    return project_simplex(w + lam * delta), delta


# %% [markdown]
# ### Exercise 1
# A toy step with λ = 0.1, 2-dimensional gradients and weights (accuracy, format, tag count) = (0.5, 0.3, 0.2).
# Accuracy's gradient repeats and doubles (Δ = 2). Format's has vanished (Δ = 0). Tag count's has flipped (Δ = −1).
# Which weights rise? A set, e.g. `{"format"}`.

# %%
prediction_1 = None  # a set of reward names

# %%
names = ["accuracy", "format", "tag_count"]
w_toy = np.array([0.5, 0.3, 0.2])
g_prev = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # g_k^(t−1), one row per reward
g_now = np.array([[2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])  # g_k^(t): repeated ×2, vanished, flipped
w_mine, delta = eq10(w_toy, g_now, g_prev, 0.1)
w_package, _ = hypergradient_step(w_toy, g_now, g_prev, lr=0.1)  # the package's eq. 10
display(pd.DataFrame({"w before": w_toy, "Δ_k": delta, "w + λΔ": w_toy + 0.1 * delta, "after eq. 10 (numpy)": w_mine,
                      "package": w_package}, index=names).round(4))
answer_1 = {n for n, before, after in zip(names, w_toy, w_mine) if after > before}
notebook.check_explained(prediction_1, answer_1, f"the average Δ is {delta.mean():.2f}, and only accuracy's Δ beats "
                         f"it. Format's Δ = 0 lies below the average, so its weight falls too: the projection takes "
                         f"ν = {(w_toy + 0.1 * delta).sum() - 1:.1f} / 3 from every weight.")

# %% [markdown]
# **Many steps.** Below, format is being learnt: its gradient shrinks by a factor each step; the others keep their
# size. Predict first: what does a factor of 1 (nothing learnt) do? And a larger λ?

# %%
def show_toy(lam, shrink, static=False):
    w, history = np.array([0.4, 0.3, 0.3]), []
    size = lambda t: np.array([1.0, shrink ** t, 1.0])  # |g_k| at step t: accuracy, format, tag_count
    for t in range(1, 31):  # fixed directions: g_k = size_k × (unit vector k)
        w, _ = eq10(w, np.diag(size(t)), np.diag(size(t - 1)), lam)
        history.append(w)
    fig = pd.DataFrame(history, columns=names, index=range(1, 31)).plot(
        backend="plotly", height=300, labels=dict(index="step t", value="w_k", variable="reward"),
        title=f"eq. 10 on a toy: λ = {lam}, format's gradient × {shrink} each step", template="plotly_white")
    display(fig) if static else fig.show(renderer="plotly_mimetype")  # static: with its PNG, for a stored notebook


controls = dict(lam=widgets.Dropdown(options=[0.01, 0.03, 0.1], value=0.03, description="λ"),
                shrink=widgets.Dropdown(options=[0.5, 0.8, 1.0], value=0.8, description="format's factor"))
notebook.static_default(lambda lam, shrink: show_toy(lam, shrink, static=True), **controls)
notebook.knobs(show_toy, **controls)

# %% [markdown]
# With a factor of 1 every $\Delta_k$ is equal and nothing moves: eq. 10 reacts only to *differences* between
# rewards. A larger λ takes weight off format sooner, until it reaches 0.
#
# ## 3. The server: α and eq. 12
# In cluster $S_c$, eq. 11 gives client $m$ a share $\alpha_m$ that grows as its accuracy weight falls (ε = 10⁻⁶):
#
# $$s_m=\frac{1}{w_{\text{acc}}^{(m)}+\varepsilon},\qquad\alpha_m=\frac{e^{s_m}}{\sum_{m'\in S_c}e^{s_{m'}}}
# \qquad\text{(11)}$$
#
# The intended case: two clients start alike; one has learnt accuracy, so its accuracy gradient vanished.

# %%
w_start, g_before = np.array([0.5, 0.5]), np.eye(2)  # accuracy, format; g_k^(t−1), one row per reward
w_done, _ = eq10(w_start, np.array([[0.0, 0.0], [0.0, 1.0]]), g_before, 0.1)  # accuracy's gradient vanished
w_going, _ = eq10(w_start, np.array([[1.0, 0.0], [0.0, 1.0]]), g_before, 0.1)  # both gradients repeat
w_pair = np.array([w_done[0], w_going[0]])
display(pd.DataFrame({"w_acc after eq. 10": w_pair, "α (eq. 11)": accuracy_aware_weights(w_pair)},
                     index=["accuracy learnt", "still learning"]).round(4))
for pair in [(0.4, 0.5), (0.1, 0.2), (0.0, 0.1)]:  # the same 0.1 gap, nearer and nearer to 0
    print(f"w_acc {pair}: α = {tuple(accuracy_aware_weights(pair).round(3).tolist())}")

# %% [markdown]
# Eq. 10 lowered the finished client's $w_{\text{acc}}$, so eq. 11 gives it more say: the paper's reason. The
# catch: a client that merely *started* lower gets the same say. Eq. 11 is also steep: the same gap gives all of
# the say near 0 (**winner takes all**).
#
# **Eq. 12: back to the clients.** The server α-averages the clients' adapters into the cluster's $\theta^{(c)}$. It
# does the same for each reward weight that every client of the cluster holds (a *shared* reward). Each client
# keeps its other weights. Its vector $u$ is rescaled to sum to 1:
#
# $$\theta^{(c)}=\sum_{m\in S_c}\alpha_m\theta^{(m)},\quad\bar w_k=\sum_{m\in S_c}\alpha_mw_k^{(m)},\quad
# u_k=\begin{cases}\bar w_k&k\text{ shared}\\w_k^{(m)}&\text{otherwise}\end{cases},\quad
# w^{(m\leftarrow c)}=\frac{u}{\sum_ju_j}\qquad\text{(12)}$$
#
# Two effects follow. **The α tilt:** a lower $w_{\text{acc}}$ gets more α, so $\bar w_{\text{acc}}$ lies below the
# plain mean. **Dilution and inflation:** when the shared weights come back larger in total, $u$ sums to more than 1
# and rescaling shrinks all of the client's weights; smaller, it grows them. A client at (accuracy, format) =
# (0.5, 0.5), only accuracy shared:

# %%
for w_bar in (0.6, 0.4):  # the shared w̄_acc returned: above, then below the client's own 0.5
    u_k = np.array([w_bar, 0.5])  # (w̄_acc, its own format weight)
    print(f"w̄_acc = {w_bar}: u sums to {u_k.sum():.1f}, w_acc = {w_bar}/{u_k.sum():.1f} = {u_k[0] / u_k.sum():.3f}"
          f" ({'diluted below' if u_k.sum() > 1 else 'inflated above'} w̄_acc)")

# %% [markdown]
# ### Exercise 2
# Two clients of one cluster both hold only accuracy and format. They end a round with $w_{\text{acc}}=0.5$ and
# $0.3$. Is the $w_{\text{acc}}$ that eq. 12 sends back "above", "at" or "below" their plain mean 0.4?

# %%
prediction_2 = None  # "above", "at" or "below"

# %%
pair_w = np.array([0.5, 0.3])
alpha_pair = accuracy_aware_weights(pair_w)  # eq. 11
w_bar = alpha_pair @ pair_w  # eq. 12: both rewards are shared, so u already sums to 1
answer_2 = "below" if w_bar < pair_w.mean() - 1e-9 else "above" if w_bar > pair_w.mean() + 1e-9 else "at"
notebook.check_explained(prediction_2, answer_2, f"α = {alpha_pair.round(3).tolist()}: the client with the lower "
                         f"w_acc gets {alpha_pair[1] / alpha_pair[0]:.1f} times the say, so w̄_acc = {w_bar:.3f}. "
                         "That is the α tilt.")

# %% [markdown]
# Finally the global adapter averages the cluster adapters by data size:
#
# $$\theta=\sum_c\frac{N_c}{N}\,\theta^{(c)}\qquad\text{(13)}$$
#
# Every client receives θ; $\theta^{(c)}$ exists only inside this average. Only the weights $w^{(m\leftarrow c)}$
# stay personal. The round:
# ```
# for round = 1..R:
#   each client m, from θ and w^(m←c), for t = 1..τ:
#     score b×G answers by every r_k; g_k (eq. 8)
#     if t > 1: w ← Proj(w + λΔ) (eqs. 9–10)
#     one GRPO step on r_w (eqs. 2–4)
#   per cluster: α, θ^(c), w^(m←c) (eqs. 11–12)
#   θ = Σ_c N_c/N θ^(c) (eq. 13)
# ```
#
# ## 4. A real run
# The **live run** trains FedMOA beside FedAvg-GRPO (fixed weights, adapters averaged by $N_m$) in the paper's
# Heter+Heter setting: each client has its own dataset and reward set. §6 reads a larger **stored grid** of the same
# comparison. The paper's λ barely moves our small model's weights, so the grid tuned λ; the live run reuses it.
# The settings:

# %%
grid_setting, paper = findings.fedmoa_setting(), SCALE_FIELDS["paper"]
grid = tf.stored_runs()  # the stored grid: one row per arm and seed (benchmarks/results/fedmoa_compare_cpu.json)
pd.DataFrame({
    "live run (§4–5)": [Path(cfg.base).name, cfg.num_clients, cfg.rounds, cfg.local_steps,
                        f"{cfg.prompts_per_step} × {cfg.num_generations}", f"{cfg.fedmoa.lam:g}", f"1 (seed {seed})"],
    "stored grid (§6)": [Path(tf.stored_grid()["settings"]["heter+heter"]["base"]).name, grid_setting["clients"],
                         grid_setting["rounds"], grid_setting["tau"], f"{grid_setting['b']} × {grid_setting['G']}",
                         f"{grid_setting['lam']['FedMOA']:g} (tuned over {', '.join(f'{x:g}' for x in LAM_GRID)})",
                         grid.query("variant == 'FedMOA'").seed.nunique()],
    "paper": [paper["base"], CLIENTS["paper"]["heter+heter"], paper["rounds"], "not given",
              f"{paper['prompts_per_step']} × {paper['num_generations']}", f"{SCALE_FEDMOA['paper']['lam']:g}",
              "not given"]},
    index=["model", "clients", "rounds", "τ: local steps a round", "prompts × answers a step", "λ", "seeds"])

# %% [markdown]
# Toy task families stand in for the paper's datasets:

# %% tags=["nbval-check-output"]
world = make_family_world(seed, 10, 4)
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %%
runs = tf.run_methods(make_config, cfg.preset, run_root)  # trains both methods
first, moa_records = runs["FedMOA"]
clients = tf.clients_table(first)
clients

# %% [markdown]
# A **config** fixes a client's rewards and initial weights (our choice). **code_format** checks tags and that the
# code parses; **length_short** is 1 for a short answer.
#
# **Round 1's boundary, by hand.** Cluster 0's weights at the end of round 1, and eq. 11's α:

# %%
cluster = clients.index[clients.cluster.str.startswith("0")]
end1 = tf.round_end_weights(moa_records, round=1).loc[cluster].dropna(axis=1, how="all")  # client × reward
s = 1 / (end1["accuracy"] + cfg.fedmoa.eps)  # eq. 11's scores
alpha_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax (shifting s by its max changes nothing)
alpha = accuracy_aware_weights(end1["accuracy"].to_numpy(), cfg.fedmoa.eps)  # the package
display(end1.assign(**{"α by hand": alpha_hand, "α package": alpha}).round(4).astype(object).fillna("")
        .assign(config=clients.config))
start = pd.Series({c: first.clients[c].initial_weights[0] for c in cluster})  # w_acc each client started from
print(f"largest change of a w_acc during round 1: {(end1['accuracy'] - start).abs().max():.4f}")

# %% [markdown]
# Round 1 barely moved the weights, so these α rank the *starting* weights: config B started lower.
#
# ### Exercise 3
# Eq. 12 now sends each client its new weights. Which config gets back the lower $w_{\text{acc}}$: "A" or "B"?
# Only accuracy and format are shared in this cluster.

# %%
prediction_3 = None  # "A" or "B"

# %%
shared = end1.columns[end1.notna().all()]  # the rewards every client of the cluster holds
u = end1.copy()
u.loc[:, shared] = alpha @ end1[shared].to_numpy()  # α-average the shared weights; each keeps its others
w_back = u.div(u.sum(axis=1), axis=0)  # rescale to sum 1
sent = tf.sent_weights(moa_records, round=2).loc[cluster, "accuracy"]  # what the run's server sent for round 2
table = pd.DataFrame({"config": clients.config[cluster], "u sums to": u.sum(axis=1),
                      "w_acc by hand": w_back["accuracy"], "w_acc the run sent": sent})
display(table.round(4))
by_config = table.groupby("config").mean()
answer_3 = by_config["w_acc the run sent"].idxmin()
notebook.check_explained(prediction_3, answer_3, f"config A also holds tag_count, which the cluster does not share. "
                         f"Its u sums to {by_config.loc['A', 'u sums to']:.3f}, so rescaling dilutes its w_acc. "
                         f"Config B's u sums to {by_config.loc['B', 'u sums to']:.3f}, which inflates its w_acc. "
                         f"From round 2 on, α favours config {answer_3}: the ranking follows which rewards a client "
                         "holds, not its progress.")

# %% [markdown]
# ## 5. Which equation moves the weights?
# The paper's Fig. 5 shows the accuracy weight rising steadily within every round: eq. 10 at work.
#
# ### Exercise 4
# In the live run, what moves a client's $w_{\text{acc}}$ more on average: one round of eq. 10, or one boundary
# of eq. 12? "eq. 10" or "eq. 12".

# %%
prediction_4 = None  # "eq. 10" or "eq. 12"

# %%
w = tf.w_acc_table(moa_records)  # per client and round: w_acc as the round started and after its τ local steps
w["jump"] = w.groupby("client").start.shift(-1) - w.end  # eq. 12: the next round's start − this round's end
moves = pd.Series({"eq. 10": (w.end - w.start).abs().mean(), "eq. 12": w.jump.abs().mean()})
print("mean |change of w_acc|:", moves.round(4).to_dict())
answer_4 = moves.idxmax()
notebook.check_explained(prediction_4, answer_4, f"a boundary moves w_acc {moves['eq. 12'] / moves['eq. 10']:.0f} "
                         "times as much as a whole round of eq. 10. The figure below shows it.")

# %%
fig = tf.w_acc_figure(w, clients.config.to_dict())  # the paper's Fig. 5, for the live run
viz.export(fig, "fedmoa_weights", figures)
display(fig)

# %% [markdown]
# Within a round the lines are flat; the jumps come at the boundaries. Why is eq. 10 weak? A repeated gradient
# would give $\Delta_k=\lVert g_k\rVert^2$. But each step draws a new small batch, and two noisy gradients barely
# line up:

# %%
ratio = pd.Series([abs(r[f"delta@{t}/{k}"]) / r[f"gsq/{k}"]  # |Δ_k| / ‖g_k‖² (the round's mean ‖g_k‖²)
                   for r in moa_records if r["kind"] == "client" and "w_move" in r
                   for k in (key.split("/", 1)[1] for key in r if key.startswith("gsq/"))
                   for t in range(1, cfg.local_steps) if r[f"gsq/{k}"] > 0])
print(f"|Δ_k| / ‖g_k‖², every client, reward and step: median {ratio.median():.3f}, largest {ratio.max():.2f}")

# %% [markdown]
# $\Delta_k$ is a few percent of $\lVert g_k\rVert^2$, so $\lambda\Delta_k$ stays tiny and eq. 12 does the moving.
#
# ## 6. What the reproduction found
# **Aggregated reward**: the mean of a client's rewards on the global model.
#
# ### Exercise 5
# The paper's Table 1 has FedMOA more accurate than FedAvg-GRPO on MATH. Given §5, predict the grid's
# FedMOA − FedAvg-GRPO accuracy on MATH-like tests: "higher", "within noise" or "lower"?

# %%
prediction_5 = None  # "higher", "within noise" or "lower"

# %%
arms = grid[grid.variant.isin(["FedAvg-GRPO", "FedMOA"])].pivot(index="seed", columns="variant")
(acc0, rew0), (acc1, rew1) = PAPER_TABLE1[("heter+heter", "math")]  # the paper: (FedAvg-GRPO, FedMOA), MATH
rows = {}
for name, column, unit, paper_gain in [("accuracy (points)", "math/pass@1", 100, acc1 - acc0),
                                       ("aggregated reward", "math/aggregated_reward", 1, rew1 - rew0)]:
    diff = unit * (arms[column]["FedMOA"] - arms[column]["FedAvg-GRPO"])  # paired by seed
    mean, half, n = t_interval(diff)  # mean and 95 % Student-t half-width over the seeds
    rows[name] = {"paper": paper_gain, "stored grid": mean, "± 95 %": half, "seeds": n}
gains = pd.DataFrame(rows).T.astype({"seeds": int})
display(gains.round(4).rename_axis("FedMOA − FedAvg-GRPO, MATH-like"))
low, high = (gains["stored grid"] - gains["± 95 %"]).iloc[0], (gains["stored grid"] + gains["± 95 %"]).iloc[0]
answer_5 = "higher" if low > 0 else "lower" if high < 0 else "within noise"
notebook.check_explained(prediction_5, answer_5, f"the interval {low:+.2f} to {high:+.2f} points holds 0. Eq. 10 "
                         "barely moved the weights, so both arms trained on nearly the same weighted reward.")

# %% [markdown]
# ### The Pareto front (the paper's Fig. 3)
# Each final model of either arm is a point: (accuracy, format reward) on the MATH-like tests. It lies on the
# **Pareto front** when no other model is at least as good on both and better on one. A method that balances
# rewards is judged by this front, not by one reward. The paper's claim: FedMOA's models lie nearer it, more
# accurate at a comparable format reward. Format ends near 1 everywhere, so the figure zooms its format axis.
#
# ### Exercise 6
# How many of FedMOA's five final models lie on the front? 0 to 5.

# %%
prediction_6 = None  # a number from 0 to 5

# %%
final = grid[grid.variant.isin(["FedAvg-GRPO", "FedMOA"])].reset_index(drop=True)  # one row per arm and seed
xy = final[["math/pass@1", "math/format"]].to_numpy()  # each final model: (accuracy, format)
final["on the front"] = non_dominated(xy)  # no other model is at least as good on both and better on one
order = pareto_front_order(xy, final["on the front"])  # the front's models, by accuracy
print(f"format of the {len(final)} final models: {xy[:, 1].min():.3f} to {xy[:, 1].max():.3f}")
display(final.loc[order, ["variant", "seed", "math/pass@1", "math/format"]].set_index(["variant", "seed"]))
moa_models = final.variant == "FedMOA"
answer_6 = int(final["on the front"][moa_models].sum())
n, n_front, n_moa = len(final), len(order), int(moa_models.sum())
# were the front's places to fall on models at random: the chance that FedMOA gets answer_6 of them or more
chance = sum(comb(n_moa, k) * comb(n - n_moa, n_front - k) for k in range(answer_6, n_front + 1)) / comb(n, n_front)
notebook.check_explained(prediction_6, answer_6, f"{answer_6} of the front's {n_front} models are FedMOA's. Were "
                         f"the {n_front} front places drawn at random among the {n} models, FedMOA would get "
                         f"{answer_6} or more with chance {chance:.2f}: the count does not separate the arms.")

# %%
fig = tf.front_figure(final, order)
viz.export(fig, "fedmoa_pareto_front", figures)
display(fig)

# %%
moa = grid[grid.variant == "FedMOA"]
w_grid = pd.concat([tf.w_acc_table(h["clients"]).assign(seed=s) for s, h in zip(moa.seed, moa.history)])
first_start = w_grid[w_grid["round"] == 1].set_index(["seed", "client"]).start
last_end = w_grid[w_grid["round"] == w_grid["round"].max()].set_index(["seed", "client"]).end
drift, drift_half, _ = t_interval((last_end - first_start).groupby("seed").mean())  # per seed: mean over clients
print(f"eq. 10's move of a client's weights per round (L1, all rewards): {moa.mean_w_move.mean():.4f}\n"
      f"w_acc, last round's end − start, mean over the {w_grid.client.nunique()} clients: {drift:+.3f} ± "
      f"{drift_half:.3f}")

# %% [markdown]
# ### What the grid found
#
# 1. **No gain.** Neither accuracy nor aggregated reward differs beyond noise, where the paper reports gains.
# 2. **Eq. 10 barely acted.** It moved a client's weights by under 0.01 a round; eqs. 11–12 did the rest.
# 3. **$w_{\text{acc}}$ fell**, where the paper's Fig. 5 shows it rising: eq. 12's α tilt pulls it down.
# 4. **The Pareto front cannot separate the arms** (figure above): both hold models on it, about as chance gives.
#
# Intervals, ablations (λ alone, α alone) and Pareto fronts: the [report](13_fedmoa_report.ipynb).
#
# ## 7. What to remember
# - Eq. 10 is a hypergradient step: a weight rises when its gradient repeats more than the others'.
# - Eq. 11 favours a *lower* $w_{\text{acc}}$; eq. 12's rescaling can make α rank reward sets, not progress.
# - Noisy gradients barely repeat: eq. 10 barely acts, eq. 12 does the moving.
