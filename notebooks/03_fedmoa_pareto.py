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
# *Wang et al., FedMOA: Federated GRPO for Personalized Reasoning LLMs under Heterogeneous Rewards*.
#
# **The problem.** GRPO often trains on a weighted sum of rewards (accuracy, format, others).
# Fixed weights waste signal: format is learnt in a few steps, yet keeps its share.
#
# **The baseline, FedAvg-GRPO:** clients run GRPO with fixed weights; the server averages their LoRA adapters by
# data size.
#
# **FedMOA** *personalises* the reward weights and changes the averaging:
#
# 1. **Client:** from a round's second local step, each step shifts its weights toward rewards still being learnt
#    (the paper's words; see Exercise 1).
# 2. **Server:** clients with the same accuracy reward (math's or code's) form a *cluster*. In each, it averages adapters and shared
#    weights, counting a client with a *lower* accuracy weight more, then averages clusters' adapters into one model
#    for all.
#
# Only the weights are personal: all clients get one model θ, which everything here evaluates.
#
# **Setting:** the paper's **Heter+Heter**: clients differ in data and in reward set (one of three, *configs* A, B,
# C; table below).
#
# **Plan.** §2–3 build the client's rule (eq. 10) and the server's (eqs. 11–13); §4–5 find that eq. 12, not eq. 10,
# moves the accuracy weight; §6 tests the paper's gains.

# %% tags=["parameters"] jupyter={"source_hidden": true}
# papermill parameters; the text describes these defaults
preset_name = "quick"  # quick (2-core CPU) | smoke | full (GPU, the paper's model) | full-smoke
seed = 0
run_root = ""          # "": runs/fedmoa/…
figures_dir = ""       # "": the run folder's figures/

# %% jupyter={"source_hidden": true}
# setup
import ipywidgets as widgets
import numpy as np
import pandas as pd

from experiments import teaching_fedmoa as tf
from experiments.fedmoa_pareto import non_dominated, pareto_front_order
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, hypergradient_step
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

make_config = tf.config_maker(seed)
cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root", folder=dict(s=seed))

# %%
tf.rewards_table()  # every reward of the paper's reward sets A, B, C (the paper's §4), from fedrl_kit.rewards

# %% [markdown]
# ## 1. One round
# τ local steps on each client, then the server:

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# | symbol | meaning |
# |---|---|
# | $r_k$, $w_k$, $r_w$ | reward $k$, its weight, the weighted reward (eqs. 1–2) |
# | $L_k$ | GRPO's loss on $r_k$ alone |
# | φ | one layer's LoRA factors (the same at every step) |
# | $g_k$ | $L_k$'s gradient on φ (eq. 8) |
# | $\Delta_k$ | $g_k$ dotted with the last step's (eq. 9) |
# | λ | eq. 10's step size |
# | μ | Adam updates per local step (one batch) |
# | $N_c$ | cluster $c$'s example count |
# | $\alpha_m$ | client $m$'s share of its cluster (eq. 11) |
# | $\theta^{(c)}$ | cluster $c$'s averaged adapter (eq. 12), never sent |
# | $w^{(m\leftarrow c)}$ | the weights the server sends client $m$ (eq. 12) |
#
# ```
# for round=1..R:
#   each client m, from θ and w^(m←c), for t=1..τ:
#     score a fresh batch by every r_k; g_k (eq. 8)
#     if t>1: w←Proj(w+λΔ) (eqs. 9–10; Proj: onto the simplex)
#     μ Adam updates on r_w (eqs. 2–4)
#   per cluster: α, θ^(c), w^(m←c) (eqs. 11–12)
#   θ=Σ_c N_c/N·θ^(c) (eq. 13)
# ```
#
# ## 2. The client: GRPO on a weighted reward
# Client $m$ holds $K_m$ rewards $r_k$, accuracy first, with weights on the *simplex*:
#
# $$w_k\ge0,\ \sum_kw_k=1\ \text{(1)},\qquad r_w=\sum_kw_kr_k\ \text{(2)}$$
#
# GRPO on $r_w$: $A_i$ compares each of a prompt's $G$ answers $y_i$ with the others; $\mathcal L$ clips each
# token's new-to-old probability ratio $\rho_{i,t}$ to $[1-c,1+c']$, with $c'>c$ (DAPO's *clip-higher*). No KL
# term; Adam minimises $\mathcal L$.
#
# $$A_i=\frac{r_w(y_i)-\operatorname{mean}_jr_w(y_j)}{\operatorname{std}_jr_w(y_j)+10^{-4}},\qquad
# \mathcal L=-\frac{1}{\sum_i|y_i|}\sum_{i,t}\min\bigl(\rho_{i,t}A_i,\,
# \operatorname{clip}(\rho_{i,t},1-c,1+c')\,A_i\bigr)\qquad\text{(3–4)}$$
#
# **One loss per reward:** $L_k$ is $\mathcal L$ with $A_i^{(k)}$, eq. 3's advantage on $r_k$ alone, before
# the step ($\rho=1$, nothing clipped); only its gradient is used:
#
# $$\nabla L_k=-\frac{1}{\sum_i|y_i|}\sum_{i,t}A_i^{(k)}\,\nabla\log\pi(y_{i,t}\mid x,y_{i,<t})$$

# %% [markdown]
# **Moving the weights.** Each $w_k$ descends the *hypergradient* of its own loss: how $L_k$ changes as $w_k$ grows.
# The last step $\theta_t=\theta_{t-1}-\eta\sum_jw_j\nabla L_j(\theta_{t-1})$ holds $w_k$ only in
# $-\eta w_k\nabla L_k(\theta_{t-1})$, so by the chain rule (the paper's eqs. 5–7):
#
# $$\frac{\partial L_k(\theta_t)}{\partial w_k}=\nabla L_k(\theta_t)^\top\frac{\partial\theta_t}{\partial w_k}
# =-\eta\,\nabla L_k(\theta_t)^\top\nabla L_k(\theta_{t-1})\qquad\text{(5–7)}$$
#
# FedMOA takes gradients on φ, the middle layer's LoRA factors (our pick for the paper's "intermediate
# representation"), the same parameters at every step, so two steps' $g_k$ can be dotted:
#
# $$g_k^{(t)}=\nabla_\phi L_k\ \text{(8)},\quad\Delta_k^{(t)}=g_k^{(t)\top}g_k^{(t-1)}\ \text{(9)},\quad
# w\leftarrow\operatorname{Proj}_{\text{simplex}}\bigl(w+\lambda\,\Delta^{(t)}\bigr)\ \text{(10)}$$
#
# Eq. 10 is a descent step on each weight's own loss: $-\partial L_k/\partial w_k=\eta\Delta_k$, with η folded into
# λ. Using the total loss $\sum_jw_jL_j$ would add cross terms $w_j\,g_j^{(t)\top}g_k^{(t-1)}$; FedMOA keeps the
# diagonal. $\Delta_k>0$ means consecutive gradients agree; whether $w_k$ then rises is Exercise 1's question.
#
# **What the derivation skips.** GRPO divides $r_w$ by its own group std, so the loss on $r_w$ is not exactly
# $\sum_kw_kL_k$. φ stands in for θ, and Adam's step is not η times the gradient.
#
# **The projection** sets $w_k=\max(v_k-\nu,0)$ for $v=w+\lambda\Delta$, with the one shift ν that makes them
# sum to 1:

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
# A toy step, λ = 0.1, weights (accuracy, format, tag count) = (0.5, 0.3, 0.2). Accuracy's gradient repeats and
# doubles (Δ = 2), format's has shrunk (Δ = 0.3), tag count's has flipped (Δ = −1). Which weights rise?

# %%
prediction_1 = None  # a set of reward names

# %%
names = ["accuracy", "format", "tag_count"]
w_toy = np.array([0.5, 0.3, 0.2])
g_prev = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # g_k^(t−1), one row per reward
g_now = np.array([[2.0, 0.0], [0.0, 0.3], [-1.0, 0.0]])  # g_k^(t): repeated ×2, shrunk, flipped
w_mine, delta = eq10(w_toy, g_now, g_prev, 0.1)
w_package, _ = hypergradient_step(w_toy, g_now, g_prev, lr=0.1)  # the package's eq. 10
answer_1 = {n for n, before, after in zip(names, w_toy, w_mine) if after > before}  # the rewards whose weight rose
why_1 = tf.why_1(names, w_toy, delta, w_mine, w_package, lam=0.1)  # in words, from the numbers above
notebook.check_explained(prediction_1, answer_1, why_1)

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
# Format's weight falls as its Δ shrinks; accuracy and tag count rise only because format pulls the mean Δ below
# theirs: "still being learnt" means more than the average reward.

# %% [markdown]
# ## 3. The server: α and eq. 12
# Eq. 10 lowers $w_{\text{acc}}$ once $\Delta_{\text{acc}}$ falls below the mean Δ (Exercise 1's rule). The paper
# reads this as accuracy nearing convergence: a client with a low $w_{\text{acc}}$ has learnt more, so it counts more.
# Eq. 11 gives it a larger share $\alpha_m$ of its cluster $S_c$ (ε = 10⁻⁶):
#
# $$s_m=\frac{1}{w_{\text{acc}}^{(m)}+\varepsilon},\qquad\alpha_m=\frac{e^{s_m}}{\sum_{m'\in S_c}e^{s_{m'}}}
# \qquad\text{(11)}$$
#
# **Other readings:** a client may also have a low $w_{\text{acc}}$ because it fails (all-wrong groups give zero
# advantages), started lower, or was rescaled by eq. 12 (below).

# %%
print("no temperature: 1/w stretches the gaps between low weights, so α nears winner-takes-all")
pairs = np.array([[0.5, 0.4], [0.4, 0.3], [0.2, 0.1]])  # two clients' w_acc
s_pair = 1 / pairs  # eq. 11's scores
alpha_pair = np.exp(s_pair) / np.exp(s_pair).sum(axis=1, keepdims=True)  # the softmax, row by row
pd.DataFrame({"scores 1/w": [f"{a:.2f} vs {b:.2f}" for a, b in s_pair], "α of the lower": alpha_pair[:, 1].round(3)},
             index=pd.Index([f"{a} vs {b}" for a, b in pairs], name="w_acc"))

# %% [markdown]
# **Eq. 12** α-averages the cluster's adapters and the weight of each *shared* reward (held by the whole
# cluster); a client keeps its other weights, then rescales to sum 1:
#
# $$\theta^{(c)}=\sum_{m\in S_c}\alpha_m\theta^{(m)},\quad\bar w_k=\sum_{m\in S_c}\alpha_mw_k^{(m)},\quad
# u_k=\begin{cases}\bar w_k&k\text{ shared}\\w_k^{(m)}&\text{otherwise}\end{cases},\quad
# w^{(m\leftarrow c)}=\frac{u}{\sum_ju_j}\qquad\text{(12)}$$
#
# **The α tilt:** a lower $w_{\text{acc}}$ gets more α, so $\bar w_{\text{acc}}$ lies below the plain mean.
# **Dilution and inflation:** $\sum_ju_j$ = the averaged shared weights + the client's own unshared ones: above 1,
# rescaling shrinks the client's weights; below 1, it grows them. A client at accuracy 0.5, format 0.5, only
# accuracy shared:

# %%
w_bar = np.array([0.6, 0.4])  # the shared w̄_acc returned: above, then below the client's own 0.5
u_sum = w_bar + 0.5  # u = (w̄_acc, its own format weight 0.5)
pd.DataFrame({"u sums to": u_sum, "w_acc sent = w̄_acc / sum": (w_bar / u_sum).round(3)},
             index=pd.Index(w_bar, name="w̄_acc"))

# %% [markdown]
# ### Exercise 2
# One cluster: client P ends a round at (accuracy, format, tag count) = (0.6, 0.2, 0.2), client Q at (accuracy,
# format) = (0.3, 0.7). For Q the tilt and inflation compete. Is the $w_{\text{acc}}$ eq. 12 sends Q "above", "at"
# or "below" the plain mean 0.45?

# %%
prediction_2 = None  # "above", "at" or "below"

# %%
w_P, w_Q = np.array([0.6, 0.2, 0.2]), np.array([0.3, 0.7])  # P: accuracy, format, tag_count; Q: accuracy, format
alpha_PQ = accuracy_aware_weights([w_P[0], w_Q[0]])  # eq. 11
u_Q = alpha_PQ @ np.array([w_P[:2], w_Q[:2]])  # eq. 12: w̄ of the shared accuracy and format; Q holds no other
w_acc_Q, plain = u_Q[0] / u_Q.sum(), (w_P[0] + w_Q[0]) / 2  # eq. 12's rescaling; the plain mean
answer_2 = "below" if w_acc_Q < plain else "above" if w_acc_Q > plain else "at"
why_2 = tf.why_2(answer_2, alpha_PQ, u_Q)
notebook.check_explained(prediction_2, answer_2, why_2)

# %% [markdown]
# **Eq. 13** averages clusters' adapters by size:
#
# $$\theta=\sum_c\frac{N_c}{N}\,\theta^{(c)}\qquad\text{(13)}$$
#
# ## 4. The live run
# Three run sets: the **live run** (§4–5, one seed), stored **Homo+Homo** runs (§5: all clients
# alike, the paper's Fig. 5 setting) and the stored **Heter+Heter grid** (§6, five seeds). All train on
# toy tasks standing in for the datasets and score **pass@1**, the share of sampled test answers right:

# %%
grid = tf.stored_runs()  # the stored grid: one row per arm and seed (benchmarks/results/fedmoa_compare_cpu.json)
tf.settings_table(cfg, seed, grid)  # the live run, the stored grid and the paper, side by side

# %% tags=["nbval-check-output"]
world = make_family_world(seed, 10, 4)  # one test prompt of each toy family, and the dataset it stands for
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %%
runs = tf.run_methods(make_config, cfg.preset, run_root)  # trains FedAvg-GRPO and FedMOA from one start and seed:
# per method, (its run, its clients' per-round records)
first, moa_records = runs["FedMOA"]  # FedMOA's run and its clients' records
clients = tf.clients_table(first)
clients

# %% [markdown]
# **Round 1's boundary** (cluster 0): α by hand.

# %%
cluster = clients.index[clients.cluster.str.startswith("0")]  # the MATH- and GSM8K-like clients
end1 = tf.round_end_weights(moa_records, round=1).loc[cluster].dropna(axis=1, how="all")  # client × reward
s = 1 / (end1["accuracy"].to_numpy() + cfg.fedmoa.eps)  # eq. 11's scores
alpha = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax (shifting s by its max changes nothing)
assert np.allclose(alpha, accuracy_aware_weights(end1["accuracy"], cfg.fedmoa.eps))  # the package agrees
tf.weights_view(end1.assign(α=alpha, config=clients.config))  # blank: a reward the client does not hold

# %% [markdown]
# ### Exercise 3
# To which config does eq. 12 send the lower $w_{\text{acc}}$, "A" or "B"? Only accuracy and format are
# shared.

# %%
prediction_3 = None  # "A" or "B"

# %%
shared = end1.columns[end1.notna().all()]  # the rewards every client of the cluster holds
u = end1.copy()
u[shared] = alpha @ end1[shared].to_numpy()  # eq. 12: α-average the shared weights; each keeps its others
table = pd.DataFrame({"config": clients.config[cluster], "u sums to": u.sum(axis=1),
                      "w_acc by hand": u["accuracy"] / u.sum(axis=1),  # rescaled to sum 1
                      "w_acc the run sent": tf.sent_weights(moa_records, round=2).loc[cluster, "accuracy"]})
by_config = table.groupby("config").mean()
answer_3 = by_config["w_acc the run sent"].idxmin()  # the config eq. 12 sent the lower w_acc
why_3 = tf.why_3(answer_3, end1, clients.config[cluster], by_config)
notebook.check_explained(prediction_3, answer_3, why_3, table=table.round(4))  # by hand beside the run

# %% [markdown]
# Cluster 0 by round (config means):

# %%
w = tf.w_acc_table(moa_records)  # per client and round: w_acc as sent (start), after τ steps (end); α (eq. 11)
tf.config_means(w, clients.config, cluster=0).round(3)  # cluster 0, averaged over each config's clients

# %% [markdown]
# **The live run's outcome:** one seed cannot separate the methods:

# %%
# the global model's pass@1 by round, on the test prompts of every family; round 1 ties: after two local steps from
# one start the clients' adapters barely differ, so weighing them by α instead of data size changes little
pd.DataFrame({name: {r["round"]: r["pass@1"] for r in records if r.get("kind") == "global"}
              for name, (_, records) in runs.items()}).rename_axis("round").round(3)

# %% [markdown]
# ## 5. Which equation moves the weights?
# The paper's Fig. 5 shows $w_{\text{acc}}$ rising within every round, where only eq. 10 acts. Here, the mean
# |change| of $w_{\text{acc}}$ within rounds and at boundaries:

# %%
def w_acc_moves(w):  # mean |change of w_acc| within rounds (eq. 10 only) and at each boundary (eq. 12 only)
    jump = w.groupby(["seed", "client"]).start.shift(-1) - w.end  # the next round's start − this round's end
    return {"within a round (eq. 10)": (w.end - w.start).abs().mean(),  # one row per boundary: round r → r + 1
            **{f"at boundary {r} → {r + 1} (eq. 12)": jump[w["round"] == r].abs().mean()
               for r in sorted(w["round"].unique())[:-1]}}


w_grid = tf.grid_w_acc_table(grid[grid.variant == "FedMOA"])  # the same table for every seed of the stored grid
pd.DataFrame({f"live run (τ = {cfg.local_steps})": w_acc_moves(w.assign(seed=seed)),
              f"stored grid (τ = {tf.fedmoa_setting()['tau']})": w_acc_moves(w_grid)}).round(4)

# %%
fig = tf.w_acc_figure(w, clients.config.to_dict())  # Fig. 5's view of the live run (not Fig. 5's setting)
viz.export(fig, "fedmoa_weights", figures)
display(fig)

# %% [markdown]
# **So eq. 12, not eq. 10, moves $w_{\text{acc}}$**, mostly at the first boundary, where it re-mixes the clients'
# starting weights, ours by config (Exercise 3). Why is eq. 10 weak?
#
# **Signal and noise.** $g_k$ is a *signal* $s$ (the gradient on all the client's data) plus batch *noise* $n$,
# new each step, which mostly cancels in the dot product:
#
# $$\Delta_k\approx\lVert s\rVert^2,\quad\lVert g_k\rVert^2\approx\lVert s\rVert^2+\lVert n\rVert^2,\quad
# \frac{|\Delta_k|}{\lVert g_k\rVert^2}\approx\frac{\lVert s\rVert^2}{\lVert s\rVert^2+\lVert n\rVert^2}$$
#
# For pure noise ($s=0$) the ratio is about $1/\sqrt d$ ($d$: φ's size). A toy:

# %%
layer, layers, d = tf.hyper_layer_size(first)  # φ: the LoRA factors of the live model's middle layer
print(f"φ: layer {layer} of layers 0–{layers - 1}, d = {d:,} numbers; pure noise's ratio: about 1/√d = {d ** -0.5:.4f}")
rng = np.random.default_rng(seed)
s_k = rng.normal(size=d) / np.sqrt(d)  # the signal: one direction, length about 1, the same at both steps
toy = []
for noise in (0.0, 1.0, 3.0, 10.0):  # ‖n‖ / ‖s‖
    g_prev, g_now = (s_k + noise * rng.normal(size=d) / np.sqrt(d) for _ in range(2))  # fresh noise each step
    toy.append({"‖n‖ / ‖s‖": noise, "|Δ| / ‖g‖² (toy)": abs(g_now @ g_prev) / (g_now @ g_now),
                "‖s‖² / (‖s‖² + ‖n‖²)": 1 / (1 + noise ** 2)})
pd.DataFrame(toy).round(3)

# %%
deltas = tf.delta_ratios(moa_records)  # Δ_k of every client, round, step t ≥ 2 and reward; gsq: the round's mean ‖g_k‖²
ratio = deltas.delta.abs() / deltas.gsq  # |Δ_k| / ‖g_k‖²: 1 for a gradient that repeats exactly
acc = deltas["rank"] == 0  # each client's accuracy reward (its first), the weight §5 follows
print(f"the live run: accuracy's median |Δ_k| / ‖g_k‖² = {ratio[acc].median():.3f} over {acc.sum()} (client, step) "
      f"cases; every reward's: {ratio.median():.3f} over {len(ratio)} (a constant reward's exact zeros among them); "
      f"each step's batch: {cfg.prompts_per_step} prompts × {cfg.num_generations} answers")

# %% [markdown]
# ### Exercise 4
# By the formula above, how large is the live run's batch noise against its signal on accuracy: is $\lVert n\rVert/\lVert
# s\rVert$ "under 1", "1 to 3" or "over 3"?

# %%
prediction_4 = None  # "under 1", "1 to 3" or "over 3"

# %%
noise_to_signal = np.sqrt(1 / ratio[acc].median() - 1)  # ‖n‖ / ‖s‖ from |Δ_k| / ‖g_k‖² ≈ ‖s‖² / (‖s‖² + ‖n‖²)
answer_4 = "under 1" if noise_to_signal < 1 else "1 to 3" if noise_to_signal <= 3 else "over 3"
deltas["λ|Δ_k|"] = cfg.fedmoa.lam * deltas.delta.abs()  # how far eq. 10 moves w_k before the projection
why_4 = tf.why_4(deltas, cfg.fedmoa.lam, cfg.prompts_per_step, d, cfg.max_new_tokens, on=acc)  # in words
by_reward = deltas.assign(ratio=ratio).groupby("reward")[["ratio", "λ|Δ_k|"]].median().add_prefix("median ")
by_reward["share of steps with Δ_k = 0"] = deltas.delta.eq(0).groupby(deltas.reward).mean()
notebook.check_explained(prediction_4, answer_4, why_4, table=by_reward.round(4).rename(
    columns={"median ratio": "median |Δ_k| / ‖g_k‖²"}))

# %% [markdown]
# **How far** eq. 10 moves $w_k$ in a step, $\lambda\Delta_k$:

# %%
typical = deltas.delta.abs().median()  # a typical |Δ_k| on this model and layer
moves = {"median |Δ_k|": typical, "λ|Δ_k| at the paper's λ = 0.01": 0.01 * typical,
         f"λ|Δ_k| at our λ = {cfg.fedmoa.lam:g}": cfg.fedmoa.lam * typical}
pd.Series(moves, name="a step").map("{:.1g}".format).to_frame()

# %% [markdown]
# **Fig. 5's own setting**, the Homo+Homo runs: the rise within rounds excludes 0 only under the paper's cosine
# decay:

# %%
tf.fig5_rise_table()  # stored FedMOA runs: w_acc after a round's last local step − after its first, per schedule

# %% [markdown]
# ## 6. The stored grid
#
# ### Exercise 5
# The grid's four arms:

# %%
tf.arms_table(grid)  # which parts of FedMOA each arm runs, and its seeds

# %% [markdown]
# The paper's Table 2 puts FedMOA 2.2 points of MATH accuracy above FedAvg-GRPO, α alone 1.4. An arm's *gain* on a
# seed is its MATH-like accuracy minus FedAvg-GRPO's on that seed; it is *beyond noise* when the 95 % Student-t
# interval of the mean gain over seeds lies above 0.
#
# Which arms beat FedAvg-GRPO beyond noise on MATH-like accuracy?

# %%
prediction_5 = None  # a set of arms: "FedMOA", "eq. 10 alone", "α alone"; set() for none

# %%
gains = tf.arm_gains(grid)  # per arm, paired by seed: mean gain over FedAvg-GRPO, 95 % t half-width; the paper's
acc = gains["accuracy (points)"]
answer_5 = set(acc.index[acc["stored grid"] - acc["± 95 %"] > 0])  # the arms whose whole interval lies above 0
why_5 = tf.why_5(answer_5, gains, lam_delta=deltas["λ|Δ_k|"].median())
notebook.check_explained(prediction_5, answer_5, why_5, table=gains.round(4))

# %% [markdown]
# ### The Pareto front (the paper's Fig. 3)
# A model is on the **Pareto front** when no other is as good on every reward and better on one. The paper's Fig. 3
# puts FedMOA's final model "closer to the Pareto-optimal frontier".

# %%
final = grid[grid.variant.isin(["FedAvg-GRPO", "FedMOA"])].reset_index(drop=True)  # one row per arm and seed
gap, half, n = tf.aux_gap(final)  # the third reward, tag count, which the figure leaves out
print(f"tag count, FedMOA − FedAvg-GRPO (paired by seed): {gap:+.4f} ± {half:.4f} (95 % t, {n} seeds), "
      + ("within noise" if abs(gap) <= half else "beyond noise"))
fig = tf.front_figure(final)  # the points alone: the front is yours to find
viz.export(fig, "fedmoa_final_models", figures)
display(fig)

# %% [markdown]
# ### Exercise 6
# Whose models does the front hold: "FedMOA", "FedAvg-GRPO" or "both"? Why can a less accurate model be on it?

# %%
prediction_6 = None  # "FedMOA", "FedAvg-GRPO" or "both"

# %%
xy = final[["math/pass@1", "math/format"]].to_numpy()  # each final model: (accuracy, format)
final["on the front"] = non_dominated(xy)  # no other model is at least as good on both and better on one
order = pareto_front_order(xy, final["on the front"])  # the front's models, by accuracy
answer_6 = "both" if final.variant[order].nunique() > 1 else final.variant[order[0]]  # the arms on the front
chance = tf.front_chance(final, order)  # were the front's places drawn at random: P(FedMOA gets as many or more)
why_6 = tf.why_6(final, order, chance)
front = final.loc[order, ["variant", "seed", "math/pass@1", "math/format"]].reset_index(drop=True)
notebook.check_explained(prediction_6, answer_6, why_6, table=front.rename(
    columns={"math/pass@1": "accuracy", "math/format": "format"}).rename_axis("the front, by accuracy"))

# %%
fig = tf.front_figure(final, order)  # the answer drawn: the front ringed, joined as a staircase
viz.export(fig, "fedmoa_front", figures)
display(fig)

# %% [markdown]
# ### Findings (details: [report 13](13_fedmoa_report.ipynb))
#
# 1. No gain beyond noise: FedMOA's interval excludes the paper's +2.2; the arms with one part cannot tell (Ex. 5).
# 2. Eq. 12, not eq. 10, moves $w_{\text{acc}}$, mostly at the first boundary, re-mixing our per-config starts (§5;
#    report 13 §2).
# 3. Fig. 5's rise within rounds excludes 0 only under cosine decay (§5).
# 4. The front does not separate the arms (Ex. 6).
# 5. α ranks reward sets, not progress (Ex. 3).
#
# All runs use a 1.6 M-parameter model at λ = 10; the paper's scale is not tested.
