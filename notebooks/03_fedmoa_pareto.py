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
# **The problem.** GRPO for reasoning scores each answer with several rewards in [0, 1]: **accuracy** (1 if right),
# **format** (1 if `<think>…</think><answer>…</answer>`), **tag count** (a quarter per one of those four tags present
# once), and trains on their weighted sum. Fixed weights waste signal: format is learnt fast, yet keeps its
# share. And federated clients may hold *different* rewards.
#
# **The method.** FedMOA changes FedAvg-GRPO in two places:
#
# 1. **Client:** after every local step, the weights shift toward the rewards still being learnt.
# 2. **Server:** within a cluster, a client with a *lower* accuracy weight counts more (taken as: accuracy nearly
#    learnt).

# %% tags=["parameters"]
# papermill parameters (-p seed 1); the text describes these defaults
preset_name = "quick"  # quick (2-core CPU) | smoke (seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
run_root = ""          # where runs go ("": runs/fedmoa/…)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import ipywidgets as widgets
import numpy as np
import pandas as pd
import torch

from experiments import teaching_fedmoa as tf
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, hypergradient_step, per_objective_advantages
from fedrl_kit.grpo import grpo_loss
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

make_config = tf.config_maker(seed)
cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root", folder=dict(s=seed))

# %% [markdown]
# ## 1. One round
# Each client $m$ trains its LoRA adapter $\theta^{(m)}$ and reward weights $w^{(m)}$ for τ local steps;
# the server averages both per cluster, then the adapters across clusters.

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# | symbol | meaning |
# |---|---|
# | $S_c$ | a cluster: clients sharing an accuracy reward |
# | $w_k$, $w_{\text{acc}}$, λ | weight of reward $r_k$; of accuracy; eq. 10's step |
# | $g_k$, $\Delta_k$ | $r_k$'s gradient at step $t$; $g_k^{(t)}\cdot g_k^{(t-1)}$ |
# | $\alpha_m$ | client $m$'s share in $S_c$ |
# | $\theta^{(m)}$, $\theta^{(c)}$, $\theta$ | client, cluster, global adapter |

# %% [markdown]
# ## 2. The client: GRPO on a weighted reward
# Client $m$ has $K_m$ rewards $r_k$, accuracy first, and weights on the *simplex* (non-negative, summing to 1):
#
# $$w_k\ge0,\ \sum_kw_k=1\ \text{(1)},\qquad r_w=\sum_kw_kr_k\ \text{(2)}$$
#
# GRPO samples $G$ answers $y_i$ per prompt and pushes up those whose $r_w$ beats their group's mean $\bar r$;
# $\rho_{i,t}$, token $t$'s new-to-old probability ratio, is clipped asymmetrically (clip-higher):
#
# $$\hat a_i=\frac{r_w(y_i)-\bar r}{\sigma_r},\qquad J(\theta)=\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t},0.8,1.25)\,\hat a_i\Bigr)\qquad\text{(3–4, no KL)}$$
#
# **Moving the weights.** $L_k$ is GRPO's loss ($-J$) with $r_k$'s own advantage $\hat a_{i,k}$; its gradient
# $g_k$ is taken on $\phi$, the middle layer's LoRA factors only (cheap: $K$ gradients per step). At step $t$:
#
# $$\hat a_{i,k}=\frac{r_k(y_i)-\bar r_k}{\sigma_{r_k}},\quad g_k^{(t)}=\nabla_\phi L_k\ \text{(8)},\quad
# \Delta_k^{(t)}=g_k^{(t)\top}g_k^{(t-1)}\ \text{(9)},\quad
# w\leftarrow\operatorname{Proj}_{\text{simplex}}\bigl(w+\lambda\,\Delta^{(t)}\bigr)\ \text{(10)}$$
#
# **Why Δ_k: a hypergradient.** With learning rate η, the last step moved
# $\theta_t=\theta_{t-1}-\eta\sum_jw_jg_j^{(t-1)}$, so by the chain rule
# $\partial L_k(\theta_t)/\partial w_k\approx-\eta\,g_k^{(t)}\cdot g_k^{(t-1)}=-\eta\Delta_k$. $\Delta_k>0$:
# more weight on $r_k$ would have lowered its loss (progress left), so eq. 10 raises $w_k$; $\Delta_k\approx0$:
# none left. Each $w_k$ follows only its own $L_k$ (the cross-terms $g_j^{(t)}\cdot g_k^{(t-1)}$, $j\ne k$, are
# dropped); our Adam steps make it a proxy.
#
# $\cos(g_k^{(t)},g_k^{(t-1)})=\Delta_k/(\lVert g_k^{(t)}\rVert\lVert g_k^{(t-1)}\rVert)$: 1 for a repeated
# direction, 0 for unrelated. §4's run sets $\lambda=0.05/\operatorname{mean}_k\lVert g_k\rVert^2$ per client
# and round (our *scale rule*): a repeated gradient moves its weight by about 0.05.
#
# Proj (Euclidean) subtracts one shift ν from every weight, stopping at 0. So **a weight rises
# only when its $\Delta_k$ beats the average Δ of the weights that stay above 0**. In numpy:

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
# a toy step, λ = 0.1: 2-dimensional gradients, one row per objective
w_toy = np.array([0.5, 0.3, 0.2])  # accuracy, format, tag_count
g_prev = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # g_k^(t−1)
g_now = np.array([[2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])  # g_k^(t): accuracy repeats, format vanished, tag flipped
w_mine, delta = eq10(w_toy, g_now, g_prev, 0.1)
w_new, delta_pkg = hypergradient_step(w_toy, g_now, g_prev, lr=0.1)  # the package
v = w_toy + 0.1 * delta
display(pd.DataFrame({"w before": w_toy, "Δ_k": delta, "w + λΔ": v, "w + λΔ − ν (numpy)": w_mine,
                      "package": w_new}, index=["accuracy", "format", "tag_count"]).round(4))
print(f"ν = ({v.sum():.2f} − 1) / 3 = {(v.sum() - 1) / 3:.4f}. Numpy = package: "
      f"{np.allclose(w_mine, w_new) and np.allclose(delta, delta_pkg)}.")

# %% [markdown]
# Format's Δ is 0, yet its weight falls: 0 is below the average Δ.
#
# ### Exercise 1
# The same toy with λ = 0.25. What is accuracy's new weight? Two decimals (watch tag count).

# %%
prediction_1 = None  # a number between 0 and 1

# %%
w_big, _ = hypergradient_step(w_toy, g_now, g_prev, lr=0.25)
answer_1 = round(float(w_big[0]), 2)
notebook.check_explained(prediction_1, answer_1, tf.projection_why(w_toy + 0.25 * delta, w_big), tolerance=0.01)

# %% [markdown]
# Thirty steps: format's gradient decays (saturates); accuracy and tag count keep learning.

# %%
w_run, hist = np.array([0.4, 0.3, 0.3]), []
size = lambda t: np.array([1.0, 0.8 ** t, 1.0])  # |g_k|: accuracy, format (saturating), tag_count
for t in range(1, 31):  # fixed directions: g_k = size_k × (unit vector k)
    w_run, _ = eq10(w_run, np.diag(size(t)), np.diag(size(t - 1)), 0.03)
    hist.append(w_run)
fig = pd.DataFrame(hist, columns=["accuracy", "format", "tag_count"], index=range(1, 31)).plot(
    backend="plotly", height=300, labels=dict(index="step t", value="w_k", variable="objective"),
    title="eq. 10 on a toy: format's gradient shrinks 0.8× a step (λ = 0.03)", template="plotly_white")
display(fig)

# %% [markdown]
# ## 3. The server: α and eq. 12
# In cluster $S_c$, eq. 11 gives client $m$ a share $\alpha_m$ that grows as its accuracy weight falls (ε = 10⁻⁶):
#
# $$s_m=\frac{1}{w_{\text{acc}}^{(m)}+\varepsilon},\qquad\alpha_m=\frac{e^{s_m}}{\sum_{m'\in S_c}e^{s_{m'}}}
# \qquad\text{(11)}$$
#
# Intended case: two clients start alike; one has learnt accuracy (gradient vanished).

# %%
w_start, g_before = np.array([0.5, 0.5]), np.eye(2)  # accuracy, format; g_k^(t−1), one row per objective
w_done, _ = eq10(w_start, np.array([[0.0, 0.0], [0.0, 1.0]]), g_before, 0.1)  # accuracy's gradient vanished
w_going, _ = eq10(w_start, np.array([[1.0, 0.0], [0.0, 1.0]]), g_before, 0.1)  # both gradients repeat
w_pair = np.array([w_done[0], w_going[0]])
display(pd.DataFrame({"w_acc after eq. 10": w_pair, "α (eq. 11)": accuracy_aware_weights(w_pair)},
                     index=["accuracy learnt", "still learning"]).round(4))
for pair in [(0.4, 0.5), (0.1, 0.2), (0.0, 0.1)]:  # the same 0.1 gap, nearer and nearer to 0
    print(f"w_acc {pair}: α = {tuple(accuracy_aware_weights(pair).round(3).tolist())}")

# %% [markdown]
# **The paper's reason:** a low $w_{\text{acc}}$ means "accuracy closer to convergence". **What can go wrong:** it
# signals that only once accuracy's gradient vanishes; else it may mean noise or a low start. Eq. 11 is steep
# (last line printed): **winner takes all**.
#
# **Eq. 12: back to the clients.** The server α-averages the clients' models into the cluster's model, and likewise
# each reward weight that all of the cluster's clients hold (*shared*). Each client keeps its other weights; its
# vector $u$ is then rescaled to sum to 1:
#
# $$\theta^{(c)}=\sum_{m\in S_c}\alpha_m\theta^{(m)},\quad\bar w_k=\sum_{m\in S_c}\alpha_mw_k^{(m)},\quad
# u_k=\begin{cases}\bar w_k&k\text{ shared}\\w_k^{(m)}&\text{otherwise}\end{cases},\quad
# w^{(m\leftarrow c)}=\frac{u}{\sum_ju_j}\qquad\text{(12)}$$
#
# Since lower $w_{\text{acc}}$ gets more α, $\bar w_{\text{acc}}$ lies *below* the plain mean: the **α tilt**. And
# $\sum_ju_j=1+\sum_{k\text{ shared}}(\bar w_k-w_k^{(m)})$: shared weights returned larger in total shrink all the
# client's weights (**dilution**); smaller, they grow (**inflation**). A client at (accuracy, format) = (0.5, 0.5),
# accuracy shared:

# %%
for w_bar in (0.6, 0.4):  # the shared w̄_acc returned: above, then below the client's own 0.5
    u_k = np.array([w_bar, 0.5])  # (w̄_acc, its own format weight)
    print(f"w̄_acc = {w_bar}: u sums to {u_k.sum():.1f}, w_acc = {w_bar}/{u_k.sum():.1f} = {u_k[0] / u_k.sum():.3f}"
          f" ({'diluted below' if u_k.sum() > 1 else 'inflated above'} w̄_acc)")

# %% [markdown]
# Then the global model:
#
# $$\theta=\sum_c\frac{N_c}{N}\,\theta^{(c)}\qquad\text{(13)}$$
#
# Only $w^{(m\leftarrow c)}$ stays personal. The round:
# ```
# for round = 1..R:
#   each client m, from θ and w^(m←c) (round 1: initial w), for t = 1..τ:
#     b×G answers, each scored by every r_k
#     g_k (eq. 8); if t > 1: w ← Proj(w + λΔ) (eqs. 9–10; τ − 1 times a round)
#     one GRPO step on r_w (eqs. 2–4)
#   clients send θ^(m), reward names, w^(m), N_m
#   per cluster: α, θ^(c), w^(m←c) (eqs. 11–12)
#   θ = Σ_c N_c/N θ^(c) (eq. 13)
# ```
#
# ### Exercise 2
# Two clients of one cluster, both holding only accuracy and format, end a round with $w_{\text{acc}}=0.5$
# and $0.3$. What $w_{\text{acc}}$ does eq. 12 send back? Two decimals.

# %%
prediction_2 = None  # a number between 0 and 1

# %%
pair_w = [0.5, 0.3]
alpha_pair = accuracy_aware_weights(pair_w)
answer_2 = round(float(alpha_pair @ pair_w), 2)
s1, s2 = (1 / (w + cfg.fedmoa.eps) for w in pair_w)
notebook.check_explained(prediction_2, answer_2, f"s = 1/(w + ε) = {s1:.2f} and {s2:.2f}, so α = "
                         f"{np.round(alpha_pair, 3).tolist()}: the lower w_acc gets e^{s2 - s1:.2f} = "
                         f"{np.exp(s2 - s1):.1f} times the say. w̄_acc = {alpha_pair[0]:.3f} × 0.5 + "
                         f"{alpha_pair[1]:.3f} × 0.3 = {answer_2}; every reward is shared, so u already sums to 1. "
                         "Below the plain mean 0.4: the α tilt.", tolerance=0.01)

# %% [markdown]
# ### Exercise 3
# Now client 1 holds $w=(0.5, 0.25, 0.25)$ on accuracy, format, tag count and client 2 $(0.3, 0.7)$ on accuracy,
# format. What $w_{\text{acc}}$ does eq. 12 send client 1? Two decimals.

# %%
prediction_3 = None  # a number between 0 and 1

# %%
w1, w2 = np.array([0.5, 0.25, 0.25]), np.array([0.3, 0.7])  # accuracy, format (, tag_count)
a3 = accuracy_aware_weights([w1[0], w2[0]])
u_bar = a3 @ np.array([w1[:2], w2])  # the shared accuracy and format, α-averaged
back = u_bar[0] / (u_bar.sum() + w1[2]), u_bar[0] / u_bar.sum()  # client 1 adds its own tag_count
answer_3 = round(float(back[0]), 2)
notebook.check_explained(prediction_3, answer_3, f"α = {np.round(a3, 3).tolist()} as in Exercise 2; shared "
                         f"w̄ = {np.round(u_bar, 4).tolist()}. Client 1: u = ({u_bar[0]:.4f}, {u_bar[1]:.4f}, 0.25) "
                         f"sums to {u_bar.sum() + w1[2]:.4f} > 1, so w_acc = {back[0]:.4f}: diluted, below both its "
                         f"own 0.5 and w̄_acc. Client 2's u sums to {u_bar.sum():.4f} < 1: inflated to "
                         f"{back[1]:.4f}.", tolerance=0.01)

# %% [markdown]
# ## 4. A real run
# The **live run**: the paper's Heter+Heter setting (each client its own dataset and reward set), FedMOA against
# FedAvg-GRPO (fixed weights, θ averaged by $N_m$). Toy families stand in for its datasets:

# %% tags=["nbval-check-output"]
world = make_family_world(seed, 10, 4)
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %%
runs = tf.run_methods(make_config, cfg.preset, run_root)
first, moa_records = runs["FedMOA"]
print(f"R = {cfg.rounds} rounds of τ = {cfg.local_steps} local steps; each step b = {cfg.prompts_per_step} prompts × "
      f"G = {cfg.num_generations} answers; learning rate {cfg.learning_rate:g}; clip ρ to "
      f"[{1 - cfg.epsilon:g}, {1 + cfg.epsilon_high:g}]")
tf.clients_table(first)

# %% [markdown]
# A **config** fixes a client's rewards (initial $w_{\text{acc}}$ ours); **code_format**: tags and parsable code;
# **length_short**: 1 if short.
#
# **Why three λ.** The paper's λ = 0.01 barely moves our weights; the live run's scale rule (§2) makes eq. 10 act
# visibly in a short run; the grid (§6) tuned λ = 10 on validation. τ fits each run's budget:

# %%
tf.settings_table(cfg, moa_records)  # what differs between this run, §5's replay, §6's grid, the paper

# %% [markdown]
# **One local step, written out:** client_0, round 1, step 2. The package ran step 1 (giving $g^{(t-1)}$ and
# this round's λ).

# %%
client, path = tf.client_mid_round(make_config, cfg, first.policy, "client_0")  # path: w, g^(t−1), λ after step 1
K, G, s = len(client.names), cfg.num_generations, client.grpo
rollouts, scores = client.rollout_scores(round=1, step=1)  # b·G answers, each scored by every r_k: [b·G, K]
adv = torch.tensor(per_objective_advantages(scores.reshape(-1, G, K)).reshape(-1, K), dtype=torch.float32)  # â_i,k
phi, logps = tf.step_inputs(client, rollouts)  # φ (hooked LoRA factors); one forward pass for all K losses
g_now = []
for k in range(K):  # eq. 8: L_k = GRPO's loss on r_k alone (ρ = 1: the batch was just sampled), one backward pass
    L_k, _ = grpo_loss(logps, logps.detach(), adv[:, k], rollouts.completion_mask, s.epsilon, s.epsilon_high,
                       loss_type=s.loss_type)
    g_now.append(tf.flat_grad(L_k, phi))  # g_k: [|φ|]
delta = (np.stack(g_now) * path.g_prev).sum(axis=1)  # eq. 9
w = project_simplex(path.weights + path.lam * delta)  # eq. 10
w_package = tf.package_weights(client, path, rollouts, scores)  # the package on the same batch, to compare
client.passes.grpo_step(client.policy, client.cid, client.optimizer, rollouts,  # eqs. 2–4: one Adam step on r_w
                        torch.tensor(scores @ w, dtype=torch.float32), s)
display(tf.step_table(client.names, np.stack(g_now), path.g_prev, path.lam, path.weights, w, w_package))
print(f"λ = {path.lam:.3g}; |φ| = {len(g_now[0]):,}; largest |loop − package| = {np.abs(w - w_package).max():.1e}; "
      f"(format, tag_count) scores seen: {sorted(set(map(tuple, scores[:, 1:].round(2).tolist())))}")

# %% [markdown]
# Each Δ is slightly negative by chance (cos ≈ 0: two batches' gradients barely relate); accuracy's most, so its
# weight falls.

# %% [markdown]
# Cluster 0 after round 1:

# %%
cluster = tf.cluster_of(first, "client_0")
end1 = tf.round_end_weights(moa_records, round=1).loc[cluster].dropna(axis=1, how="all")  # client × reward
s = 1 / (end1["accuracy"].to_numpy() + cfg.fedmoa.eps)  # eq. 11's scores
alpha_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax (shifting s by its max: same result)
alpha = accuracy_aware_weights(end1["accuracy"].to_numpy(), cfg.fedmoa.eps)  # the package
shown = end1.assign(**{"α by hand": alpha_hand, "α package": alpha}).round(4).astype(object).fillna("")
display(shown.assign(config=tf.clients_table(first).config).set_index("config", append=True))
start = pd.Series({c: first.clients[c].initial_weights[0] for c in cluster})  # w_acc each client started from
print(f"largest |w_acc at round 1's end − w_acc at its start| = {(end1['accuracy'] - start).abs().max():.4f}")

# %% [markdown]
# These α rank the *starting* weights (round 1 barely moved them), B (0.4) over A (0.5), not progress.

# %% [markdown]
# ### Exercise 4
# Which config will eq. 12 send the lower $w_{\text{acc}}$, so that α favours it from round 2: "A" or "B"?

# %%
prediction_4 = None  # "A" or "B"

# %%
answer_4 = tf.favoured_config(first, moa_records)  # the config sent the lowest w_acc after round 1
notebook.check_explained(prediction_4, answer_4, tf.dilution_words(first, moa_records))

# %% [markdown]
# Eq. 12 by hand, beside the run:

# %%
shared = end1.columns[end1.notna().all()]  # the rewards every client of the cluster holds
u = end1.copy()
u.loc[:, shared] = alpha @ end1[shared].to_numpy()  # α-average the shared weights; each keeps its others
w_back = u.div(u.sum(axis=1), axis=0)  # rescale to sum 1
pd.DataFrame({"u sums to": u.sum(axis=1), "w_acc by hand": w_back["accuracy"],
              "w_acc the run sent": tf.sent_weights(moa_records, round=2).loc[cluster, "accuracy"]}).round(4)

# %% [markdown]
# Last round: **global_accuracy** is θ's pass@1 over all families;
# **aggregated_reward**: per client, the unweighted mean of its own rewards scored on θ; then the mean over clients.

# %%
summary = tf.run_summary(runs)
answers = len(FAMILIES) * (cfg.n_test // len(FAMILIES)) * cfg.eval_samples  # test answers scored, all families
gap = summary.global_accuracy["FedMOA"] - summary.global_accuracy["FedAvg-GRPO"]
display(summary)
print(f"FedMOA − FedAvg-GRPO: {gap:+.3f} × {answers} answers = {gap * answers:+.0f} right answers; one seed: noise (§6)")

# %% [markdown]
# ## 5. Why the weights barely move
# Round 1 replayed (settings table): do consecutive gradients repeat?

# %%
probes = tf.probe_round(make_config, cfg, first.policy)  # g_k of round 1's batches at the untrained model
LAMS = tf.replay_lambdas(probes)  # 1, 10, 100 × the median over clients of the rule's λ in this replayed round
cos = np.abs(tf.consecutive_cosines(probes))  # |cos(g_k^(t), g_k^(t−1))| over clients, rewards, steps
tau_replay = len(next(iter(probes.values()))["grads"])  # local steps replayed
print(f"replayed round (τ = {tau_replay}): |cos(g_k^(t), g_k^(t−1))| median {np.median(cos):.2f}, max {cos.max():.2f}")

# %% [markdown]
# ### Exercise 5
# The widget below replays round 1 at 1, 10 and 100 × the rule's median λ. From the |cos| above: at which
# multiple does a $w_{\text{acc}}$ first reach 0?

# %%
prediction_5 = None  # 1, 10, 100 or "none"

# %%
answer_5 = tf.first_zero(probes, cfg, LAMS)
why = tf.replay_answer(probes, cfg, LAMS).words.removeprefix("Answer: ")  # what the largest λ does
notebook.check_explained(prediction_5, answer_5, why)

# %% [markdown]
# $w_{\text{acc}}$ as sent, after eq. 10, after eq. 12:

# %%
def show_replay(lam, static=False):
    fig, table = tf.replay_view(probes, cfg, LAMS[lam], lam)
    display(fig) if static else fig.show(renderer="plotly_mimetype")  # static: with its PNG, for a stored notebook
    display(table)


controls = dict(lam=widgets.Dropdown(options=list(LAMS), value=list(LAMS)[0], description="λ"))
notebook.static_default(lambda lam: show_replay(lam, static=True), **controls)
notebook.knobs(show_replay, **controls)

# %%
display(tf.replay_all(probes, cfg, LAMS))  # w_acc sent back at every λ
t = tf.replay_view(probes, cfg, LAMS[list(LAMS)[0]], "")[1]  # at 1 × the rule: the table above the widget
print(f"largest move of w_acc, eq. 10: {(t['w_acc after eq. 10'] - t['w_acc start']).abs().max():.4f}; "
      f"eq. 12: {(t['w_acc sent (eq. 12)'] - t['w_acc after eq. 10']).abs().max():.2f}")

# %% [markdown]
# **Why eq. 10 barely acts.** Consecutive gradients come from different noisy batches (median |cos| 0.03), so
# $\Delta_k$ is a few percent of the $\lVert g_k\rVert^2$ the rule was sized for: eq. 10 moves $w_{\text{acc}}$ by at
# most 0.0071, eq. 12 by up to 0.13. At 100 × one $w_{\text{acc}}$ hits 0, so its client gets α = 1 and eq. 12
# sends $w_{\text{acc}}=0$ to the whole cluster.

# %% [markdown]
# ## 6. What the stored grid shows
# **Pareto fronts (the paper's Fig. 3).** A model *dominates* another when it is at least as good on both rewards
# and better on one. The models nothing dominates form the **Pareto front**, a staircase. Invented points:

# %%
display(tf.staircase_figure(), tf.staircase_points())

# %% [markdown]
# ### Exercise 6
# A new model scores accuracy 0.46, format 0.82. Which points leave the front? A set, e.g. `{"P1"}`.

# %%
prediction_6 = None  # a set of point names

# %%
new_model = [0.46, 0.82]
answer_6 = tf.leaves_front(new_model)
notebook.check_explained(prediction_6, answer_6, tf.leaves_front_why(new_model))

# %% [markdown]
# **Distance to the front:** the accuracy a model lacks against the best model with at least its format: its
# horizontal gap to the staircase (0 on the front).
#
# ### Exercise 7
# The paper expects FedMOA nearer the front. Whose mean distance will be smaller by more
# than the seed-to-seed sd: "FedMOA", "FedAvg-GRPO" or "neither"?

# %%
prediction_7 = None  # "FedMOA", "FedAvg-GRPO" or "neither"

# %%
dist = tf.arm_distance()  # per arm: mean distance to the front and its sd over seeds, models on the front
gap = dist.loc["FedMOA", "mean"] - dist.loc["FedAvg-GRPO", "mean"]
answer_7 = ("FedMOA" if gap < 0 else "FedAvg-GRPO") if abs(gap) > dist.sd.max() else "neither"
assert answer_7 == tf.nearer_front()[0]  # the helper agrees
notebook.check_explained(prediction_7, answer_7, tf.nearer_front()[1])

# %% [markdown]
# Format is saturated (range printed), so accuracy decides most of the front:

# %%
display(tf.paper_claim(3))
pts = tf.grid_points()  # each arm's final global model per seed
print(f"format of all {len(pts)} models: {pts['format'].min():.2f}–{pts['format'].max():.2f}")
fig, words = tf.grid_pareto()
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
display(fig, words, dist)

# %% [markdown]
# **The accuracy weight over rounds (Fig. 5).** The grid's accuracy cluster holds configs A, B and C (appendix),
# so eq. 12 shares only accuracy. First boundary:

# %%
display(tf.paper_claim(5))
table, words = tf.grid_first_boundary()
display(table, words)

# %% [markdown]
# ### Exercise 8
# At this boundary, whose $w_{\text{acc}}$ rises? A set of config letters.

# %%
prediction_8 = None  # a set of config letters

# %%
moves = tf.boundary_moves()  # per config: mean w_acc at round 1's end, as sent for round 2, whether it rose
answer_8 = set(moves.index[moves.rises])
notebook.check_explained(prediction_8, answer_8, tf.boundary_why(moves))

# %%
fig, words = tf.grid_weights_figure()
viz.export(fig, "fedmoa_weights", figures)
display(fig)
words

# %%
display(tf.accuracy_differences())  # FedMOA − FedAvg-GRPO, seed by seed
tf.findings_table()  # FedMOA − FedAvg-GRPO over the seeds (± 95 % t), FedMOA's weights; beside the paper's

# %% [markdown]
# **The verdict.** Against the paper's gains: accuracy, no difference detected; aggregated reward, a small loss.
# At the tuned λ = 10, eq. 10 moved a client's weights < 0.01 a round (0.0095: L1 over all its weights;
# $w_{\text{acc}}$ alone 0.0047), too little to test eq. 10: eqs. 11–12 acted alone; $w_{\text{acc}}$ of all 15
# clients fell by 0.030 over 3 rounds, where the paper's rises. [Report](13_fedmoa_report.ipynb).

# %% [markdown]
# ## 7. What to remember
# - Eq. 10 is a hypergradient step; noisy gradients barely repeat, so it barely acts.
# - Eq. 11 favours a *lower* $w_{\text{acc}}$; eq. 12's rescaling can make α rank reward sets, not progress.
# - Pareto front: the models no other beats on both rewards; here accuracy decides it.
# - The paper's gains did not reproduce here; eq. 10 barely moved the weights.

# %% [markdown]
# ## Appendix: reward configs
# **char_repetition**: minus the share of repeated characters.

# %%
tf.configs_table(first)  # configs A, B, C (C: only in §6's stored grid)
