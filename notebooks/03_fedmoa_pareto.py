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
# **The problem.** A reasoning model is trained on a weighted sum of rewards: the right answer (**accuracy**) and
# well-formed output (**format**, **tag count**, …). Fixed weights fit badly: easy rewards saturate early yet keep
# their share, and in a federation each client has its *own* rewards. Clients with the same accuracy reward solve
# comparable tasks, so the server can group them by it and let the one furthest along lead.
#
# **The method.** **FedMOA** changes FedAvg-GRPO (the paper's "FedGRPO") twice:
#
# 1. **Adaptive weights (client).** After every local step, a *hypergradient* step (the loss's derivative with
#    respect to the weights) of size **λ** moves the reward weights.
# 2. **Accuracy-aware aggregation (server).** Among clients sharing an accuracy reward, a *lower* accuracy weight
#    counts more.
#
# **You will learn** which weight eq. 10 raises, eqs. 11–12 by hand, and Pareto fronts. Reproduction:
# [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% [markdown]
# ## Parameters
# For papermill (`-p seed 1`); an unknown name stops the notebook.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
normalise = False      # True: our variant (Δ_k as a cosine, λ = lam; see the report)
lam = 0.1              # λ, read only when normalise is True
run_root = ""          # where the runs go ("": runs/fedmoa/…)
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
# The server weighs client $m$ by $\alpha_m$, set from its accuracy weight $w_{\text{acc}}^{(m)}$ (eq. 11, defined
# below), and sends back θ and new weights $w^{(m\leftarrow c)}$ (eq. 12, below).

# %% [markdown]
# ## 2. Key equations
# **GRPO on each client**, with group mean $\bar r$, deviation $\sigma_r$, ratio $\rho$ (new over old token
# probability); it maximises $J$, i.e. minimises the loss $L = -J$:
#
# $$\hat a_i = \frac{r_i - \bar r}{\sigma_r},\qquad J(\theta) = \frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t}, 1-\zeta_{\text{lo}}, 1+\zeta_{\text{hi}})
# \,\hat a_i\Bigr)$$
#
# Our CPU presets clip asymmetrically, $\zeta_{\text{hi}} > \zeta_{\text{lo}}$ (a probability may rise further than it
# falls); β = 0: no KL penalty. Client $m$ has $K_m$ rewards $r_k$ (defined in §4), accuracy first, and trains on
#
# $$w_k \ge 0,\ \sum_k w_k = 1\ \text{(1)},\qquad r_w = \sum_k w_k r_k\ \text{(2)}$$
#
# **The weights' step.** $L_k$: GRPO's loss with reward $r_k$ alone; $g_k$: its gradient with respect to $\phi$, one
# layer's LoRA factors (the paper's hidden state pairs different prompts at consecutive steps; LoRA factors are the
# same parameters every step). $g^{(t-1)}$ is the previous step's
# *in the same round*: a round's first step has none, so it leaves $w$ as sent.
#
# $$g_k^{(t)} = \nabla_\phi L_k\ \text{(8)},\qquad \Delta_k^{(t)} = g_k^{(t)\top} g_k^{(t-1)}\ \text{(9)},\qquad
# w \leftarrow \operatorname{Proj}_{\text{simplex}}\bigl(w + \lambda\,\Delta^{(t)}\bigr)\ \text{(10)}$$
#
# $\operatorname{Proj}_{\text{simplex}}(v)$, the closest $w$ on the simplex to $v$, is $w_k = \max(v_k - \nu, 0)$
# with the one $\nu$ that makes the sum 1.
#
# **Eq. 10 in words.** $\Delta_k > 0$: $k$'s gradient points as at the previous step (progress left); $\Delta_k < 0$:
# it flips (e.g. a saturated format). The projection subtracts one common shift, so **a weight rises when its
# $\Delta_k$ is above the others'** (their mean, while no weight is at 0), whatever its sign. The paper's hope: format
# saturates first, and weight flows to accuracy.
#
# **A toy case** (λ = 0.1): accuracy's gradients agree, format's vanish, tag count's flip:

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
# **Where eq. 9 comes from** (Baydin et al.). The last step descended $\sum_j w_j L_j$, moving $\phi$ by
# $-\eta\sum_j w_j g_j^{(t-1)}$ ($\eta$: learning rate), so objective $k$'s own loss moves with its own weight as
# $\partial L_k(\phi^{(t)})/\partial w_k = -\eta\,\Delta_k^{(t)}$: per objective, without the total loss's cross terms
# $g_j^\top g_k$ ($j \ne k$). Eq. 10 is gradient descent on $w$ (λ absorbs η). **λ:** $\Delta_k$ grows with
# $\lVert g\rVert^2$, so the paper's 0.01 does not carry over; our run rescales λ (§6).
#
# **Initial weights** (unstated in the paper): ours differ within a family (§5), so eq. 11 has something to act on.
#
# **Server.** Clusters $S_c$: clients with the same accuracy reward; $w_{\text{acc}}^{(m)}$ at the round's end gives:
#
# $$s_m = \frac{1}{w_{\text{acc}}^{(m)} + \varepsilon},\qquad \alpha_m = \frac{e^{s_m}}{\sum_{m'\in S_c}
# e^{s_{m'}}}\qquad\text{(11)}$$
#
# The cluster averages $\theta^{(c)} = \sum_{m\in S_c}\alpha_m\theta^{(m)}$ and $\bar w_k^{(c)} = \sum_{m\in S_c}
# \alpha_m w_k^{(m)}$ for each reward $k$ that *every* client of $S_c$ has; client $m$ keeps its own $w_k^{(m)}$ for the
# others and renormalises:
#
# $$u_k = \begin{cases}\bar w_k^{(c)} & k \text{ shared}\\ w_k^{(m)} & \text{otherwise}\end{cases},\qquad
# w_k^{(m\leftarrow c)} = \frac{u_k}{\sum_j u_j}\ \text{(12)},\qquad
# \theta = \sum_c \frac{N_c}{N}\,\theta^{(c)}\ \text{(13)}$$
#
# **Why should a lower $w_{\text{acc}}$ count more?** Eq. 10 lowers a weight whose gradients stop agreeing: for the
# paper, a *nearly learnt* objective. So a low $w_{\text{acc}}$ marks a client further along on accuracy, and eq. 11
# lets it lead. As $w_{\text{acc}} \to 0$, $s_m \to 1/\varepsilon
# = 10^6$ and α → 1: that client's model *becomes* the cluster's. **Consequence:** α falls as $w_{\text{acc}}$ rises,
# so the α-average $\sum_m \alpha_m w_{\text{acc}}^{(m)}$ sits **below the plain mean**:
# each boundary pulls the shared $w_{\text{acc}}$ down (renormalising can still lift one client's, §6). This pull
# is in the paper's method too; there eq. 10 must outweigh it.
#
# | symbol | meaning |
# |---|---|
# | $M$, $m$, $R$, $\tau$ | clients; one client; rounds; local steps per round |
# | $b$, $G$, $\hat a_i$, $\rho$, $\zeta_{\text{lo}}$, $\zeta_{\text{hi}}$ | prompts per step; answers per prompt; advantage; ratio; clip range |
# | $J$, $L$, $L_k$ | GRPO's objective; its loss $-J$; the loss with reward $k$ alone |
# | $K_m$, $k$, $r_k$ | client $m$'s number of rewards; an objective; its reward (accuracy: $k = 0$) |
# | $w^{(m)}$, $w_k$, $w_{\text{acc}}$ | client $m$'s weights; entry $k$; the accuracy entry (the paper's $w_0$) |
# | $\phi$, $g_k$, $\eta$ | what $g_k$ differentiates; objective $k$'s gradient; learning rate |
# | $\Delta_k$, $\lambda$ | eq. 9's gradient agreement; eq. 10's step size |
# | $\operatorname{Proj}_{\text{simplex}}$, $\nu$ | projection onto the simplex; its shift |
# | $S_c$, $N_m$, $N_c$, $N$ | cluster $c$'s clients; training examples of client $m$, cluster $c$, all |
# | $s_m$, $\alpha_m$, $\varepsilon$ | eq. 11's score; client $m$'s weight in its cluster; $10^{-6}$ |
# | $\bar w^{(c)}$, $u$, $w^{(m\leftarrow c)}$ | the cluster's shared average; before and after renormalising |
# | $\theta^{(m)}$, $\theta$ | a client's and the global LoRA adapter |
#
# ## 3. Pseudocode
# `fedmoa/algorithm.py::run_round`, with each line's function:
# ```
# for round = 1..R:
#   send θ and w^(m←c) (round 1: initial w) to client m          # algorithm.round_weights
#   each client m, for step t = 1..τ:                            # client.MOAClient.on_fit
#     b prompts × G answers; every reward r_k on every answer   # RewardSet.scores
#     g_k (eq. 8); if t > 1: w ← Proj(w + λΔ) (eqs. 9–10)        # objective_gradients, hypergradient_step
#     one GRPO step on r_w = Σ w_k r_k (eqs. 2–4)                # grpo.grpo_step
#   clients reply θ^(m), reward names, w^(m), N_m; g is dropped
#   clusters; α (eq. 11); w^(m←c) (eq. 12)                      # algorithm.aggregate_round
#   θ^(c) = Σ_{m∈S_c} α_m θ^(m) (eq. 12); θ = Σ_c N_c/N θ^(c) (eq. 13)   # aggregate.fedavg
# ```

# %% [markdown]
# ## 4. Who holds what
# Three families of synthetic tasks stand for the paper's datasets; each client holds one family and one reward
# configuration (Table 3).

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
# Each reward, per completion:

# %%
tf.rewards_table()

# %% [markdown]
# The base policy per family (pass@1: share of right answers; on a GPU, Qwen2.5-1.5B-Instruct):

# %%
base_eval = evaluation.evaluate_base(cfg)
pd.DataFrame({f: {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith(f + "/")}
              for f in FAMILIES}).round(3)

# %% [markdown]
# ## 5. Run it: FedAvg-GRPO and FedMOA on the same federation
# **Heter+Heter**: clients differ in data *and* rewards. FedAvg-GRPO is FedMOA with both parts off. The clients:

# %%
runs = tf.run_methods(make_config, cfg.preset, run_root)
first, moa_records = runs["FedMOA"]
tf.clients_table(first)

# %% [markdown]
# Last round: **global_accuracy**, the global θ's pass@1; **aggregated_reward**, each client's rewards equally
# weighted on the global θ, averaged over clients; **local_…**: each client's own model.

# %%
display(tf.run_summary(runs))
tf.run_words(cfg, runs)

# %% [markdown]
# **The paper's Fig. 3: Pareto fronts.** A model *dominates* another when it is at least as good on both rewards and
# better on one; the undominated models form the **Pareto front**, a staircase. Invented points first:

# %%
display(tf.staircase_figure())
tf.paper_claim(3)

# %% [markdown]
# Our run, MATH-like tests:

# %%
fig, series = tf.run_pareto(cfg, runs, base_eval)
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
display(fig)
tf.pareto_words(cfg, series)

# %% [markdown]
# **The paper's Fig. 5.** Each client's $w_{\text{acc}}$ after every local step: eq. 10 within a round, eq. 12's jump
# at a boundary.

# %%
display(tf.paper_claim(5))
fig = tf.weights_figure(first, moa_records)
viz.export(fig, "fedmoa_weights", figures)
fig

# %% [markdown]
# ## 6. One boundary, step by step
# Eq. 11 for client_0's cluster at the end of round 1, by hand and by the package:

# %%
cluster = tf.cluster_of(first, "client_0")
w_acc = tf.round_end_weights(moa_records, round=1).loc[cluster, "accuracy"].to_numpy()
s = 1 / (w_acc + cfg.fedmoa.eps)  # eq. 11's scores
alpha_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax over the cluster (shifted: same result)
alpha = accuracy_aware_weights(w_acc, cfg.fedmoa.eps, cfg.fedmoa.softmax_temperature)  # the package
pd.DataFrame({"w_acc": w_acc, "s = 1/(w_acc + ε)": s, "α by hand": alpha_hand, "α package": alpha},
             index=cluster).round(4)

# %%
tf.eq12_words(first, moa_records, alpha)

# %% [markdown]
# **One knob: λ.** A round replays in milliseconds from $g_k$ of three probe batches per untrained client (eqs.
# 9–12 need only gradients).

# %%
probes = tf.probe_round(make_config, cfg, first.policy)
LAMS = tf.replay_lambdas(probes)
display(tf.lambda_words(cfg, probes))
fig, words = tf.replay_grid(probes, cfg, LAMS)
display(fig)
words

# %% [markdown]
# One λ at a time, with numbers (a widget in a live kernel):

# %%
def show_replay(lam, static=False):
    fig, table = tf.replay_view(probes, cfg, LAMS[lam], lam)
    display(fig) if static else fig.show(renderer="plotly_mimetype")  # static: with its PNG, for a stored notebook
    display(table)


controls = dict(lam=widgets.Dropdown(options=list(LAMS), value=list(LAMS)[1], description="λ"))
notebook.static_default(lambda lam: show_replay(lam, static=True), **controls)
notebook.knobs(show_replay, **controls)

# %% [markdown]
# ## 7. What the reproduction found
# From a larger stored grid (several seeds); details: the [report](13_fedmoa_report.ipynb).

# %%
tf.findings_box()

# %% [markdown]
# ## 8. Exercises: predict, then run
#
# ### Exercise 1
#
# Two clients of one cluster end a round with $w_{\text{acc}} = 0.5$ and $0.3$. What α does eq. 11
# give the second one? Two decimals.

# %%
prediction_1 = None  # a number between 0 and 1

# %%
pair_w = [0.5, 0.3]
answer_1 = round(float(accuracy_aware_weights(pair_w)[1]), 2)
s1, s2 = (1 / (w + cfg.fedmoa.eps) for w in pair_w)
notebook.check_explained(prediction_1, answer_1, f"scores s = 1/(w + ε) = {s1:.2f} and {s2:.2f}; α₂ = e^{s2:.2f} / "
                         f"(e^{s1:.2f} + e^{s2:.2f}) = 1 / (1 + e^({s1:.2f} − {s2:.2f})) = {answer_1}: the lower "
                         "accuracy weight gets most of the say.", tolerance=0.01)

# %% [markdown]
# ### Exercise 2
#
# Same two clients, both holding only accuracy and format. What $w_{\text{acc}}$ does eq. 12 send back?
# Two decimals. Above or below the plain mean 0.4?

# %%
prediction_2 = None  # a number between 0 and 1

# %%
alpha_pair = accuracy_aware_weights(pair_w)
answer_2 = round(float(alpha_pair @ pair_w), 2)
notebook.check_explained(prediction_2, answer_2, f"α = {np.round(alpha_pair, 3).tolist()}; Σ α_m w_acc^(m) = "
                         f"{alpha_pair[0]:.3f} × 0.5 + {alpha_pair[1]:.3f} × 0.3 = {answer_2}, and with every reward "
                         "shared, u already sums to 1: below the mean 0.4, pulled to the lower weight.",
                         tolerance=0.01)

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
answer_3 = 0 if np.allclose(moved, w_toy) else round(float(np.abs(moved - w_toy).sum()), 6)
notebook.check_explained(prediction_3, answer_3, f"Δ = {delta_same.tolist()}: w + λΔ adds {0.1 * delta_same[0]:g} to "
                         "every weight, and the projection's shift ν takes the same amount back from each (the sum "
                         "must be 1 again), so nothing changes: only differences between the Δ_k move w.",
                         tolerance=1e-6)

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
nu_equal, nu_two = (v_big.sum() - 1) / 3, (v_big[:2].sum() - 1) / 2
notebook.check_explained(prediction_4, answer_4, f"w + λΔ = {np.round(v_big, 4).tolist()}; an equal shift "
                         f"ν = {nu_equal:.4f} would leave tag_count at {v_big[2] - nu_equal:.4f} < 0, so it stops at "
                         f"0 and ν is found over the other two: ν = ({v_big[0]:.2f} + {v_big[1]:.2f} − 1) / 2 = "
                         f"{nu_two:.4f}, giving {np.round(w_big, 4).tolist()} (package): a large λ pushes weights "
                         "onto the simplex's boundary, where an objective's weight is 0.", tolerance=0.01)

# %% [markdown]
# ## 9. What to remember
# - FedMOA = FedAvg-GRPO + eq. 10's weights + eq. 11's α.
# - Eq. 10 raises a weight whose $\Delta_k$ is **above the others'**; λ must match $\lVert g\rVert^2$.
# - Eq. 11 favours a *lower* $w_{\text{acc}}$, so the α-average sits below the plain mean: a built-in pull down.
# - One seed's gap of a few answers is noise.
