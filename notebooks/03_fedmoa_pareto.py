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
# # FedMOA: reward weights that adapt, in federated GRPO
#
# *Wang, Jung, He, Sun, Shen, Lee, Li: FedMOA, Federated GRPO for Personalized Reasoning LLMs under Heterogeneous
# Rewards.*
#
# **The problem.** A reasoning model trains on a weighted sum of rewards: **accuracy** checks the answer, others
# (**format**, **tag count**, …) the form. Fixed weights fit badly: easy rewards saturate early yet keep their
# share. Federated clients also have their *own* rewards.
#
# **The method.** **FedMOA** changes FedAvg-GRPO (the paper's "FedGRPO") in two places:
#
# 1. **Adaptive weights (client).** After every local step, a *hypergradient* step of size **λ** (the loss's
#    derivative with respect to a reward weight) moves the weights.
# 2. **Accuracy-aware aggregation (server).** Within a group sharing an accuracy reward, a client with a *lower*
#    accuracy weight counts more.
#
# **You will learn** eqs. 10–12 by hand, how to read a Pareto front, and whether the paper's reasoning holds in
# a run. Reproduction: [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% tags=["parameters"]
# papermill parameters (-p seed 1); the text describes these defaults
preset_name = "quick"  # quick (2-core CPU) | smoke (seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
normalise = False      # True: Δ_k as a cosine (eq. 9 / ‖g_k^(t)‖ ‖g_k^(t−1)‖) and a fixed λ = lam
lam = 0.1              # read only with normalise (every λ: §6's table)
run_root = ""          # where runs go ("": runs/fedmoa/…)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import ipywidgets as widgets
import numpy as np
import pandas as pd

from experiments import teaching_fedmoa as tf
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa import evaluation, plan
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, hypergradient_step
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

make_config = tf.config_maker(seed, normalise, lam)
cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root",
                                        folder=dict(s=seed, normalise=normalise, lam=lam if normalise else None))

# %% [markdown]
# ## 1. One round, drawn

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# ## 2. Key equations
# **The paper's idea** (§5–7 test it). Eq. 10 moves weight off *nearly learnt* objectives (gradient ≈ 0), so a
# low $w_{\text{acc}}$ should mean accuracy is nearly learnt; eq. 11 lets that client lead its cluster. Numbering
# follows the paper; its eqs. 5–7 are not needed.
#
# | symbol | meaning |
# |---|---|
# | $M, m, R, \tau$ | clients; one client; rounds; local steps per round |
# | $b, G, \hat a_i, \zeta_{\text{lo}}, \zeta_{\text{hi}}$ | prompts per step; answers per prompt; advantage; clip range |
# | $K_m, k, r_k$ | number of rewards; an objective; its reward |
# | $w^{(m)}, w_k, w_{\text{acc}}$ | client $m$'s weights; entry $k$; the accuracy entry (the paper's $w_0$) |
# | $\phi, g_k, \Delta_k, \lambda$ | one layer's LoRA factors; $\nabla_\phi L_k$; eq. 9; eq. 10's step size |
# | $S_c, N_m, N_c, N$ | cluster $c$'s clients; training examples of $m$, $c$, all |
# | $s_m, \alpha_m, \varepsilon$ | eq. 11's score; client $m$'s weight in its cluster; $10^{-6}$ |
# | $\bar w^{(c)}, u, w^{(m\leftarrow c)}$ | shared average; before, after renormalising |
# | $\theta^{(m)}, \theta$ | a client's and the global LoRA adapter |
#
# **Rewards.** Client $m$ has $K_m$ rewards $r_k$ (§4), accuracy first, and trains on
#
# $$w_k\ge0,\ \sum_kw_k=1\ \text{(1)},\qquad r_w=\sum_kw_kr_k\ \text{(2)}$$
#
# **GRPO on $r_w$.** Each prompt gets $G$ answers $y_i$ of $|y_i|$ tokens, with rewards of mean $\bar r$ and
# deviation $\sigma_r$; $\rho$ is a token's new-to-old probability ratio. GRPO maximises $J$ (its loss: $L=-J$).
#
# $$\hat a_i=\frac{r_i-\bar r}{\sigma_r},\qquad J(\theta)=\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t},1-\zeta_{\text{lo}},1+\zeta_{\text{hi}})
# \,\hat a_i\Bigr)\qquad\text{(3–4)}$$
#
# **The weights' step.** $L_k$ is GRPO's loss with reward $r_k$ alone, $g_k$ its gradient with respect to $\phi$,
# the LoRA factors of the middle decoder layer. $g^{(t-1)}$ comes from the same round, so a round's first step
# leaves $w$ as sent. Eq. 8 costs $K_m$ extra backward passes per step; stopping them at the middle layer spares
# the lower half and keeps $g_k$ short enough to store.
#
# $$g_k^{(t)}=\nabla_\phi L_k\ \text{(8)},\qquad\Delta_k^{(t)}=g_k^{(t)\top}g_k^{(t-1)}\ \text{(9)},\qquad
# w\leftarrow\operatorname{Proj}_{\text{simplex}}\bigl(w+\lambda\,\Delta^{(t)}\bigr)\ \text{(10)}$$
#
# The paper's λ = 0.01 does not transfer across models, so the live run uses the *scale rule*
# $\lambda=\text{target}/\operatorname{mean}_k\lVert g_k\rVert^2$ (at a round's first step): a *repeated*
# gradient, $g^{(t)}=g^{(t-1)}$, would move its weight by about the target. Real ones barely repeat (§6, with every
# λ in one table).
#
# $\operatorname{Proj}_{\text{simplex}}$ finds the closest $w$ that obeys eq. 1. In numpy:

# %%
def project_simplex(v):  # w_k = max(v_k − ν, 0), with the one ν that makes Σ w_k = 1
    u = np.sort(v)[::-1]  # largest first
    excess = np.cumsum(u) - 1  # what the top j entries hold beyond 1
    j = np.arange(1, len(v) + 1)
    keep = j[u - excess / j > 0][-1]  # how many weights stay above 0
    return np.maximum(v - excess[keep - 1] / keep, 0)  # ν: that excess shared equally by them


def eq10(w, g_now, g_prev, lam):
    delta = (g_now * g_prev).sum(axis=1)  # eq. 9: Δ_k = g_k^(t)·g_k^(t−1), one row per objective
    return project_simplex(w + lam * delta), delta


# %%
# a toy step, λ = 0.1
w_toy = np.array([0.5, 0.3, 0.2])  # accuracy, format, tag_count
g_prev = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # g_k^(t−1): one row per objective
g_now = np.array([[2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])  # g_k^(t): accuracy agrees, format vanished, tag flipped
w_mine, delta = eq10(w_toy, g_now, g_prev, 0.1)
w_new, delta_pkg = hypergradient_step(w_toy, g_now, g_prev, lr=0.1)  # the package
v = w_toy + 0.1 * delta
display(pd.DataFrame({"w before": w_toy, "Δ_k": delta, "w + λΔ": v, "w + λΔ − ν (numpy above)": w_mine,
                      "package: w after": w_new}, index=["accuracy", "format", "tag_count"]).round(4))
print(f"ν = ({v.sum():.2f} − 1) / 3 = {(v.sum() - 1) / 3:.4f} = λ × mean Δ. Numpy = package: "
      f"{np.allclose(w_mine, w_new) and np.allclose(delta, delta_pkg)}. Format (Δ = {delta[1]:g}, below the mean "
      f"{delta.mean():.4f}) falls by {w_new[1] - w_toy[1]:+.4f} though its Δ is not negative.")

# %% [markdown]
# **Eq. 10 in words.** $\Delta_k>0$: $k$'s gradient repeats its direction, so $k$ still has progress to
# make. A nearly learnt objective has $g_k \approx 0$: when all $G$ answers score the same on $r_k$, their
# advantage on $r_k$ is 0, so $\Delta_k \approx 0$. The projection subtracts one shift ν from every weight, so
# **a weight rises when its $\Delta_k$ is above the others'**, falls when below. Thirty steps, format's gradient
# decaying:

# %%
w_run, hist = np.array([0.4, 0.3, 0.3]), []
size = lambda t: np.array([1.0, 0.8 ** t, 1.0])  # |g_k|: accuracy, format (saturating), tag_count
for t in range(1, 31):  # fixed directions: g_k = size_k × (unit vector k)
    w_run, _ = eq10(w_run, np.diag(size(t)), np.diag(size(t - 1)), 0.03)
    hist.append(w_run)
fig = pd.DataFrame(hist, columns=["accuracy", "format", "tag_count"], index=range(1, 31)).plot(
    backend="plotly", height=300, labels=dict(index="step t", value="w_k", variable="objective"))
display(fig)

# %% [markdown]
# Format drains though its Δ never turns negative. Then accuracy and tag count have equal Δ, so ν cancels their
# steps: accuracy is not favoured.
#
# **Why eq. 9.** If the last step descended $\sum_jw_jL_j$ with learning rate $\eta$,
# $\phi^{(t)}=\phi^{(t-1)}-\eta\sum_jw_j\,g_j^{(t-1)}$, so
#
# $$\frac{\partial}{\partial w_k}\sum_jL_j(\phi^{(t)})=-\eta\sum_jg_j^{(t)\top}g_k^{(t-1)}
# \;\approx\;-\eta\,g_k^{(t)\top}g_k^{(t-1)}=-\eta\,\Delta_k^{(t)}$$
#
# Eq. 9 approximates twice: the loss on $r_w$ is not $\sum_jw_jL_j$ (GRPO divides by $r_w$'s own $\sigma_r$),
# and it drops the $j\ne k$ terms. Eq. 10 is then gradient descent on $w_k$, λ absorbing η.
#
# **Server.** A cluster $S_c$ holds the clients sharing an accuracy reward: here MATH- and GSM8K-like clients
# form one, code clients another. At a round's end:
#
# $$s_m=\frac{1}{w_{\text{acc}}^{(m)}+\varepsilon},\qquad\alpha_m=\frac{e^{s_m}}{\sum_{m'\in S_c}e^{s_{m'}}}
# \qquad\text{(11)}$$
#
# The cluster averages θ and each weight *every* client of $S_c$ has; client $m$ keeps its other weights and
# renormalises:
#
# $$\theta^{(c)}=\sum_{m\in S_c}\alpha_m\theta^{(m)},\quad\bar w_k^{(c)}=\sum_{m\in S_c}\alpha_mw_k^{(m)},\quad
# u_k=\begin{cases}\bar w_k^{(c)}&k\text{ shared}\\w_k^{(m)}&\text{otherwise}\end{cases},\quad
# w_k^{(m\leftarrow c)}=\frac{u_k}{\sum_ju_j}\qquad\text{(12)}$$
#
# $$\theta=\sum_c\frac{N_c}{N}\,\theta^{(c)}\qquad\text{(13)}$$
#
# θ is global; only $w^{(m\leftarrow c)}$ is personal.
#
# **One-hot α.** As $w_{\text{acc}}\to0$, $s_m\to1/\varepsilon$ and that client's α → 1: its model *becomes*
# the cluster's. **The α tilt.** Eq. 11 gives the lowest $w_{\text{acc}}$ the most say, so the shared
# $\bar w_{\text{acc}}^{(c)}$ sits **below the cluster's plain mean** of $w_{\text{acc}}$. At a boundary each
# client's $w_{\text{acc}}$ moves toward $\bar w_{\text{acc}}^{(c)}$: those above it fall, those below rise, and the
# cluster's mean falls, less as the clients draw together.
#
# > **Caveat.** A low $w_{\text{acc}}$ need not mean accuracy is nearly learnt: it also falls when other Δ are larger
# > (the toy loop), by noise, or by dilution (§5).
#
# ## 3. Pseudocode
# `fedmoa/algorithm.py::run_round` and each line's function:
# ```
# for round = 1..R:
#   send θ and w^(m←c) (round 1: initial w) to client m          # algorithm.round_weights
#   each client m, for step t = 1..τ:                            # client.MOAClient.on_fit
#     b prompts × G answers; every reward r_k on every answer   # RewardSet.scores
#     g_k (eq. 8); if t > 1: w ← Proj(w + λΔ) (eqs. 9–10)        # objective_gradients, hypergradient_step
#     one GRPO step on r_w = Σ w_k r_k (eqs. 2, 3–4)             # grpo.grpo_step
#   clients reply θ^(m), reward names, w^(m), N_m; g is dropped
#   clusters; α (eq. 11); θ^(c) and w^(m←c) (eq. 12)            # algorithm.aggregate_round
#   θ = Σ_c N_c/N θ^(c) (eq. 13)                                 # aggregate.fedavg
# ```

# %% [markdown]
# ## 4. Who holds what
# Each client holds one synthetic task family (a paper dataset's stand-in) and one reward configuration.

# %% tags=["nbval-check-output"]
world = make_family_world(seed, 10, 4)
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %% tags=["nbval-check-output"]
pd.DataFrame({f"{PAPER_NAMES[f]}-like": {c: ", ".join(n) for c, n in cfgs.items()}
              for f, cfgs in plan.reward_configs(cfg.world).items()})

# %%
tf.rewards_table()  # each reward, per completion

# %% [markdown]
# Base policy: a tiny 4-layer Qwen2-style model (CPU) or Qwen2.5-1.5B-Instruct (GPU). pass@1: share of right answers; length in tokens.

# %%
base_eval = evaluation.evaluate_base(cfg)
pd.DataFrame({f: {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith(f + "/")}
              for f in FAMILIES}).round(3)

# %% [markdown]
# ## 5. Run it: FedAvg-GRPO vs FedMOA
# **Heter+Heter**: clients differ in data *and* rewards. FedAvg-GRPO is FedMOA with both parts off: fixed initial
# weights, θ averaged by data size $N_m$.

# %%
runs = tf.run_methods(make_config, cfg.preset, run_root)
first, moa_records = runs["FedMOA"]
tf.clients_table(first)

# %% [markdown]
# ### Exercise 1: whom does α favour?
# In client_0's cluster config B starts with the lower $w_{\text{acc}}$, so α favours it after round 1. Which
# config does eq. 12 send the lower $w_{\text{acc}}$, to be favoured from round 2: "A" or "B"? Hint: only shared
# rewards are averaged.

# %%
prediction_1 = None  # "A" or "B"

# %%
answer_1 = tf.favoured_config(first, moa_records)  # the config sent the lowest w_acc after round 1
notebook.check_explained(prediction_1, answer_1, tf.dilution_words(first, moa_records))

# %% [markdown]
# Last round. **aggregated_reward**: a client's rewards averaged with equal weights $1/K_m$ (not its initial or
# learned $w$, so both methods are scored alike), then averaged over clients. **global_…** scores θ;
# **local_…** each client's own model after its local steps.

# %%
display(tf.run_summary(runs))
tf.run_words(cfg, runs)

# %% [markdown]
# **The paper's Fig. 3: Pareto fronts.** A model *dominates* another when it is at least as good on both rewards
# and better on one. The undominated models form the **Pareto front**, a staircase. Invented points first:

# %%
display(tf.staircase_figure(), tf.staircase_points())

# %% [markdown]
# ### Exercise 2
# A new model scores accuracy 0.46, format 0.82. Which points leave the front? A set, e.g. `{"P1"}`.

# %%
prediction_2 = None  # a set of point names

# %%
new_model = [0.46, 0.82]
answer_2 = tf.leaves_front(new_model)
notebook.check_explained(prediction_2, answer_2, f"{new_model} dominates {sorted(answer_2)}: at least as good on "
                         "both rewards, better on one. P1 keeps the highest format and P4 the highest accuracy, so "
                         "they stay. A new model joins the front without beating every point on it.")

# %%
display(tf.paper_claim(3))
tf.grid_intro()

# %% [markdown]
# ### Exercise 3
# Over the stored grid's seeds, is FedMOA's global accuracy "higher", "lower" or "within noise" of FedAvg-GRPO's?

# %%
prediction_3 = None  # "higher", "lower" or "within noise"

# %%
answer_3, why_3 = tf.accuracy_finding()
notebook.check_explained(prediction_3, answer_3, why_3)

# %%
fig, words = tf.grid_pareto()
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
display(fig)
words

# %% [markdown]
# ### Exercise 4
# The paper's Fig. 5 draws $w_{\text{acc}}$ after every local step. In the grid's accuracy cluster, configs A, B, C
# start with $w_{\text{acc}}$ high, middle, low. At the boundary after round 1, whose mean $w_{\text{acc}}$ rises?
# A set of letters.

# %%
prediction_4 = None  # a set of config letters

# %%
moves = tf.boundary_moves()
answer_4 = set(moves.index[moves.rises])
notebook.check_explained(prediction_4, answer_4, "eq. 12's α-average sits below the cluster's plain mean (the α "
                         "tilt); each client moves toward it, so configs below it rise, those above fall: "
                         + "; ".join(f"{c} {r['end of round 1']:.3f} → {r['sent for round 2']:.3f}"
                                     for c, r in moves.iterrows()) + ".")

# %%
display(tf.paper_claim(5))
fig, words = tf.grid_weights_figure()
viz.export(fig, "fedmoa_weights", figures)
display(fig)
words

# %% [markdown]
# ## 6. One boundary, step by step
# Eq. 11 for client_0's cluster after round 1, by hand and by package:

# %%
cluster = tf.cluster_of(first, "client_0")
w_acc = tf.round_end_weights(moa_records, round=1).loc[cluster, "accuracy"].to_numpy()
s = 1 / (w_acc + cfg.fedmoa.eps)  # eq. 11's scores
alpha_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax over the cluster (shifted: same result)
alpha = accuracy_aware_weights(w_acc, cfg.fedmoa.eps)  # the package
display(pd.DataFrame({"w_acc": w_acc, "s = 1/(w_acc + ε)": s, "α by hand": alpha_hand, "α package": alpha},
                     index=cluster).round(4))
tf.alpha_words(first, moa_records, cluster, alpha)

# %%
# two equal clients; on one, accuracy is nearly learnt (g_acc = 0)
w_start, g_before = np.array([0.5, 0.5]), np.eye(2)  # accuracy, format; g_k^(t−1), one row per objective
w_done, _ = eq10(w_start, np.array([[0.0, 0.0], [0.0, 1.0]]), g_before, 0.1)  # accuracy's gradient vanishes
w_going, _ = eq10(w_start, np.array([[1.0, 0.0], [0.0, 1.0]]), g_before, 0.1)  # both gradients still agree
w_pair = np.array([w_done[0], w_going[0]])
pd.DataFrame({"w_acc after eq. 10": w_pair, "α (eq. 11)": accuracy_aware_weights(w_pair)},
             index=["accuracy nearly learnt", "still learning"]).round(4)

# %%
# eq. 12 in numpy, beside what the run sent
end1 = tf.round_end_weights(moa_records, round=1).loc[cluster]  # client × reward; NaN where a client lacks one
shared = end1.columns[end1.notna().all()]  # the rewards every client of the cluster holds
u = end1.copy()
u.loc[:, shared] = alpha @ end1[shared].to_numpy()  # α-average the shared weights; each keeps its others
w_back = u.div(u.sum(axis=1), axis=0)  # renormalise: divide by the sum
pd.DataFrame({"u sums to": u.sum(axis=1), "w_acc by hand": w_back["accuracy"],
              "w_acc the run sent": tf.sent_weights(moa_records, round=2).loc[cluster, "accuracy"]}).round(4)

# %% [markdown]
# **One knob: λ.** Every λ this notebook meets:

# %%
probes = tf.probe_round(make_config, cfg, first.policy)  # g_k of round 1's batches at the untrained model
LAMS = tf.replay_lambdas(probes)
tf.lambda_table(cfg, LAMS, lam, normalise)

# %% [markdown]
# The widget replays round 1 at one λ for every client (untrained model, fresh batches: not the run's numbers):
# $w_{\text{acc}}$ before and after eq. 10, and after eq. 12.

# %%
def show_replay(lam, static=False):
    fig, table = tf.replay_view(probes, cfg, LAMS[lam], lam)
    display(fig) if static else fig.show(renderer="plotly_mimetype")  # static: with its PNG, for a stored notebook
    display(tf.replay_all(probes, cfg, LAMS) if static else table)  # static: every λ in one table


controls = dict(lam=widgets.Dropdown(options=list(LAMS), value=list(LAMS)[1], description="λ"))
notebook.static_default(lambda lam: show_replay(lam, static=True), **controls)
notebook.knobs(show_replay, **controls)

# %%
tf.replay_words(probes, cfg, LAMS)

# %% [markdown]
# ## 7. What the reproduction found

# %%
tf.findings_box()

# %% [markdown]
# ## 8. More exercises, by hand
#
# ### Exercise 5
#
# Two clients of one cluster, both holding only accuracy and format, end a round with $w_{\text{acc}}=0.5$
# and $0.3$. What $w_{\text{acc}}$ does eq. 12 send back? Two decimals.

# %%
prediction_5 = None  # a number between 0 and 1

# %%
pair_w = [0.5, 0.3]
alpha_pair = accuracy_aware_weights(pair_w)
answer_5 = round(float(alpha_pair @ pair_w), 2)
s1, s2 = (1 / (w + cfg.fedmoa.eps) for w in pair_w)
notebook.check_explained(prediction_5, answer_5, f"s = 1/(w + ε) = {s1:.2f} and {s2:.2f}, so α = "
                         f"{np.round(alpha_pair, 3).tolist()}: s is steep, and a w_acc lower by 0.2 gets e^{s2 - s1:.2f}"
                         f" = {np.exp(s2 - s1):.1f} times the say (ε = 1e-6 matters only near w_acc = 0). Σ α_m w_acc^(m) "
                         f"= {alpha_pair[0]:.3f} × 0.5 + {alpha_pair[1]:.3f} × 0.3 = {answer_5}; with every reward "
                         "shared, u already sums to 1. Below the plain mean 0.4: the α tilt.", tolerance=0.01)

# %% [markdown]
# ### Exercise 6
#
# §2's toy again (Δ = 2, 0, −1), now with λ = 0.25. What is accuracy's new weight? Two decimals.

# %%
prediction_6 = None  # a number between 0 and 1

# %%
w_big, _ = hypergradient_step(w_toy, g_now, g_prev, lr=0.25)
answer_6 = round(float(w_big[0]), 2)
v_big = w_toy + 0.25 * delta
nu_equal, nu_two = (v_big.sum() - 1) / 3, (v_big[:2].sum() - 1) / 2
notebook.check_explained(prediction_6, answer_6, f"w + λΔ = {np.round(v_big, 4).tolist()}; an equal shift "
                         f"ν = {nu_equal:.4f} would leave tag_count at {v_big[2] - nu_equal:.4f} < 0, so it stops at "
                         f"0 and ν is found over the other two: ν = ({v_big[0]:.2f} + {v_big[1]:.2f} − 1) / 2 = "
                         f"{nu_two:.4f}, giving {np.round(w_big, 4).tolist()} (package): a large λ pushes weights "
                         "onto the simplex's boundary, where an objective's weight is 0.", tolerance=0.01)

# %% [markdown]
# ### Exercise 7
#
# One cluster: client 1 has $w=(0.5, 0.25, 0.25)$ on accuracy, format, tag_count; client 2 $(0.3, 0.7)$ on
# accuracy, format. What $w_{\text{acc}}$ does eq. 12 send client 1? Two decimals.

# %%
prediction_7 = None  # a number between 0 and 1

# %%
w1, w2 = np.array([0.5, 0.25, 0.25]), np.array([0.3, 0.7])  # accuracy, format (, tag_count)
a7 = accuracy_aware_weights([w1[0], w2[0]])
u_bar = a7 @ np.array([w1[:2], w2])  # the shared accuracy and format, α-averaged
back = u_bar[0] / (u_bar.sum() + w1[2]), u_bar[0] / u_bar.sum()  # client 1 divides by its own tag_count too
answer_7 = round(float(back[0]), 2)
notebook.check_explained(prediction_7, answer_7, f"α = {np.round(a7, 3).tolist()}; shared ū = "
                         f"{np.round(u_bar, 4).tolist()}; client 1 gets {u_bar[0]:.4f} / ({u_bar.sum():.4f} + 0.25) = "
                         f"{back[0]:.4f}, client 2 {u_bar[0]:.4f} / {u_bar.sum():.4f} = {back[1]:.4f}: its own "
                         "tag_count dilutes client 1's w_acc (Exercise 1's mechanism).", tolerance=0.01)

# %% [markdown]
# ## 9. What to remember
# - Eq. 10 raises a weight whose $\Delta_k$ is **above the others'**; noisy gradients barely repeat, so it moves little.
# - Eq. 11 favours a *lower* $w_{\text{acc}}$: the α-average sits below the plain mean (the α tilt).
# - Eq. 12 shares only common rewards; an unshared one dilutes $w_{\text{acc}}$.
# - An arm beats another only if nearer the front than the seeds' spread.
# - **For your group:** the paper reads a low $w_{\text{acc}}$ as accuracy nearly learnt; here α ranked reward
#   configurations instead, and accuracy did not beat FedAvg-GRPO.
#
# ## Appendix: the live run beside the stored grid

# %%
tf.side_by_side(cfg, first, moa_records)
