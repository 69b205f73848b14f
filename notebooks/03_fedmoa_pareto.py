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
# exactly once), and trains on their weighted sum. Which weights? Fixed ones waste signal: format is learnt fast,
# yet keeps its share. And federated clients may hold *different* rewards.
#
# **The method.** FedMOA (federated **m**ulti-**o**bjective **a**lignment) changes FedAvg-GRPO in two places:
#
# 1. **Client:** after every local step, the weights shift toward the rewards still being learnt.
# 2. **Server:** within a cluster, a client with a *lower* accuracy weight counts more. The paper reads a low weight
#    as accuracy nearly learnt.
#
# | symbol | meaning |
# |---|---|
# | cluster $S_c$ | the clients with the same accuracy reward (the same task) |
# | config (A, B, C) | a client's set of rewards and their initial weights |
# | Heter+Heter | the paper's setting: clients differ in data *and* in rewards |
# | $w_k$, $w_{\text{acc}}$ | weight of reward $r_k$; of accuracy |
# | $g_k$, $\Delta_k$, λ | $r_k$'s gradient; its repeat (eq. 9); step size |
# | $\alpha_m$, $\bar w_k$, $u$ | client $m$'s share in its cluster; α-average; weights before rescaling |
# | $\theta^{(m)}$, $\theta^{(c)}$, $\theta$ | client, cluster, global adapter |
#
# Reproduction: [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% tags=["parameters"]
# papermill parameters (-p seed 1); the text describes these defaults
preset_name = "quick"  # quick (2-core CPU) | smoke (seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
normalise = False      # True: eq. 9 as a cosine (an option of ours, §2), with a fixed λ = lam
lam = 0.1              # eq. 10's λ, read only with normalise = True
run_root = ""          # where runs go ("": runs/fedmoa/…)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import copy

import ipywidgets as widgets
import numpy as np
import pandas as pd
import torch

from experiments import teaching_fedmoa as tf
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa.client import hooked_lora_parameters
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, hypergradient_step, per_objective_advantages
from fedrl_kit.grpo import grpo_loss
from fedrl_kit.rollout import per_token_logps
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

make_config = tf.config_maker(seed, normalise, lam)
cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root",
                                        folder=dict(s=seed, normalise=normalise, lam=lam if normalise else None))

# %% [markdown]
# ## 1. One round
# Each client $m$ trains its own LoRA adapter $\theta^{(m)}$ for τ local steps and keeps its own reward weights
# $w^{(m)}$. The server averages both within each cluster, then the adapters across clusters.

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# ## 2. The client: GRPO on a weighted reward
# Client $m$ has $K_m$ rewards $r_k$, accuracy first, and weights on the *simplex* (non-negative, summing to 1):
#
# $$w_k\ge0,\ \sum_kw_k=1\ \text{(1)},\qquad r_w=\sum_kw_kr_k\ \text{(2)}$$
#
# GRPO samples $G$ answers $y_i$ ($|y_i|$ tokens) per prompt and pushes up those whose $r_w$ beats their group's
# mean $\bar r$ (deviation $\sigma_r$); $\rho_{i,t}$ is token $t$'s new-to-old probability ratio:
#
# $$\hat a_i=\frac{r_w(y_i)-\bar r}{\sigma_r},\qquad J(\theta)=\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t},1-\zeta_{\text{lo}},1+\zeta_{\text{hi}})
# \,\hat a_i\Bigr)\qquad\text{(3–4)}$$
#
# Here $\zeta_{\text{lo}}=0.2$, $\zeta_{\text{hi}}=0.25$, no KL term.
#
# **Moving the weights.** Intuition: if reward $k$'s gradient keeps pointing the same way, there is progress left
# on $k$: give it more weight. Once $k$ is learnt, all $G$ answers score alike on it, their advantages are 0 and its
# gradient vanishes: take weight off. Let $L_k$ be GRPO's loss ($-J$) on $r_k$ alone and $g_k$ its gradient with
# respect to $\phi$, the LoRA factors of the middle layer. At step $t$:
#
# $$g_k^{(t)}=\nabla_\phi L_k\ \text{(8)},\qquad\Delta_k^{(t)}=g_k^{(t)\top}g_k^{(t-1)}\ \text{(9)},\qquad
# w\leftarrow\operatorname{Proj}_{\text{simplex}}\bigl(w+\lambda\,\Delta^{(t)}\bigr)\ \text{(10)}$$
#
# $\Delta_k>0$ when $k$'s gradient repeated its direction. The projection subtracts the same shift ν from every
# weight, stopping at 0. So **a weight rises only when its $\Delta_k$ is above the average Δ** (while none hits 0;
# in Exercise 1 one does). A round's first step has no $g^{(t-1)}$: it leaves $w$ as sent. In numpy:

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
v_big = w_toy + 0.25 * delta
nu_equal, nu_two = (v_big.sum() - 1) / 3, (v_big[:2].sum() - 1) / 2
notebook.check_explained(prediction_1, answer_1, f"w + λΔ = {np.round(v_big, 4).tolist()}; an equal shift "
                         f"ν = {nu_equal:.4f} would leave tag_count at {v_big[2] - nu_equal:.4f} < 0, so it stops at "
                         f"0 and ν is shared by the other two: ν = ({v_big[0]:.2f} + {v_big[1]:.2f} − 1) / 2 = "
                         f"{nu_two:.4f}, giving {np.round(w_big, 4).tolist()} (package). A large λ pushes weights "
                         "onto the simplex's edge, where an objective's weight is 0.", tolerance=0.01)

# %% [markdown]
# The paper's story over thirty steps: format saturates (its gradient decays), accuracy and tag count keep learning.

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
# Format drains; accuracy and tag count share what it loses.
#
# **Why "hypergradient".** The last step was $\phi^{(t)}=\phi^{(t-1)}-\eta\sum_kw_kg_k^{(t-1)}$, so
# $\partial\phi^{(t)}/\partial w_k=-\eta g_k^{(t-1)}$ and, by the chain rule, $\partial L_j(\phi^{(t)})/\partial
# w_k=-\eta\,g_j^{(t)\top}g_k^{(t-1)}$. Keeping only $j=k$ gives $-\eta\Delta_k^{(t)}$: eq. 10 is gradient descent
# on $w$ with step $\lambda/\eta$. Dropping $j\ne k$ judges each weight by its own reward only.
#
# Tension: eq. 10 raises $w_{\text{acc}}$ while accuracy
# learns (Fig. 5), yet eq. 11 favours a *low* one.
#
# ## 3. The server: α and eq. 12
# Each client sends $\theta^{(m)}$, its weights and its number of examples $N_m$. In cluster $S_c$, eq. 11 gives
# client $m$ a share $\alpha_m$ that grows as its accuracy weight falls (ε = 10⁻⁶ avoids division by 0):
#
# $$s_m=\frac{1}{w_{\text{acc}}^{(m)}+\varepsilon},\qquad\alpha_m=\frac{e^{s_m}}{\sum_{m'\in S_c}e^{s_{m'}}}
# \qquad\text{(11)}$$
#
# The intended case: two clients start alike; one has learnt accuracy (its gradient vanishes).

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
# The learnt client's $w_{\text{acc}}$ falls, so its model leads. Eq. 11 is steep: the same 0.1 gap is worth far more
# near 0 (printed above). If a $w_{\text{acc}}$ reaches 0, $s=1/\varepsilon$: that client takes α = 1, its model
# becomes the cluster's and every client is sent $w_{\text{acc}}=0$: **winner takes all**. As lower $w_{\text{acc}}$
# always gets more α, the α-average $\bar w_{\text{acc}}$ lies *below* the plain mean: the **α tilt**.
#
# **Eq. 12: back to the clients.** The cluster's model is the α-average of the $\theta^{(m)}$. So is each weight
# that *every* client of the cluster holds; client $m$ keeps its own values for the rest and rescales to sum 1:
#
# $$\theta^{(c)}=\sum_{m\in S_c}\alpha_m\theta^{(m)},\quad\bar w_k=\sum_{m\in S_c}\alpha_mw_k^{(m)},\quad
# u_k=\begin{cases}\bar w_k&k\text{ shared}\\w_k^{(m)}&\text{otherwise}\end{cases},\quad
# w^{(m\leftarrow c)}=\frac{u}{\sum_ju_j}\qquad\text{(12)}$$
#
# The rescaling matters: $\sum_ju_j=1+\sum_{k\text{ shared}}(\bar w_k-w_k^{(m)})$. If the shared weights come back
# larger in total than the client sent them, every weight shrinks, $w_{\text{acc}}$ included: **dilution**.
# If smaller, its weights grow: **inflation**.
#
# One global model, each cluster weighted by its examples ($N_c$ of $N$):
#
# $$\theta=\sum_c\frac{N_c}{N}\,\theta^{(c)}\qquad\text{(13)}$$
#
# Only $w^{(m\leftarrow c)}$ stays personal. The round (`fedmoa/algorithm.py::run_round`):
# ```
# for round = 1..R:
#   send θ and w^(m←c) (round 1: initial w) to each client
#   each client m, for t = 1..τ:
#     b prompts × G answers, each scored by every r_k
#     g_k (eq. 8); if t > 1: w ← Proj(w + λΔ) (eqs. 9–10)
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
# Six clients in the Heter+Heter setting, trained with FedMOA and with FedAvg-GRPO (fixed weights, θ
# averaged by $N_m$). Each client's data stands in for a paper dataset. Its config (A, B; C in §6) fixes its rewards:

# %% tags=["nbval-check-output"]
world = make_family_world(seed, 10, 4)
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %%
runs = tf.run_methods(make_config, cfg.preset, run_root)
first, moa_records = runs["FedMOA"]
print(f"R = {cfg.rounds} rounds of τ = {cfg.local_steps} local steps; each step b = {cfg.prompts_per_step} prompts × "
      f"G = {cfg.num_generations} answers; learning rate {cfg.learning_rate:g}; λ: the scale rule (§5)")
tf.clients_table(first)

# %% [markdown]
# Cluster 1's rewards: **code_accuracy** (the program passes its tests), **code_format** (tags and a function `f`),
# **length_short** (higher for shorter answers).
#
# **One local step, written out.** Client_0 at round 1's second step, on a fresh copy of the federation. The first
# step ran in the package and left $g^{(t-1)}$ and λ. Each $g_k$ costs one backward pass: $K$ backwards per step,
# besides GRPO's own.

# %%
client, path = tf.client_mid_round(make_config, cfg, first.policy, "client_0")  # path: w, g^(t−1), λ after step 1
model, K, G, s = client.policy.model, len(client.names), cfg.num_generations, client.grpo
rollouts, scores = client.rollout_scores(round=1, step=1)  # b·G answers, each scored by every r_k: [b·G, K]
adv = per_objective_advantages(scores.reshape(-1, G, K)).reshape(-1, K)  # eq. 3's â, once per r_k: [b·G, K]
adv = torch.tensor(adv, dtype=torch.float32)
phi = hooked_lora_parameters(model, client.layer)  # φ: the middle layer's LoRA factors
logps = per_token_logps(model, rollouts, s.temperature)  # one forward pass, shared by the K losses
g = []
for k in range(K):  # eq. 8: L_k = GRPO's loss (eqs. 3–4) on r_k alone, then one backward pass
    L_k, _ = grpo_loss(logps, logps.detach(), adv[:, k], rollouts.completion_mask, s.epsilon, s.epsilon_high,
                       loss_type=s.loss_type)  # ρ = 1: the batch was just sampled
    g.append(torch.cat([x.flatten() for x in torch.autograd.grad(L_k, phi, retain_graph=True)]).double().numpy())
g_now = np.stack(g)  # [K, |φ|]
delta = (g_now * path.g_prev).sum(axis=1)  # eq. 9
w = project_simplex(path.weights + path.lam * delta)  # eq. 10, with §2's projection
package = copy.deepcopy(path)
client.adapt_weights(rollouts, scores, package)  # the package's eqs. 8–10 on the same batch, for comparison
r_w = torch.tensor(scores @ w, dtype=torch.float32)  # eq. 2
client.passes.grpo_step(client.policy, client.cid, client.optimizer, rollouts, r_w, s)  # eqs. 3–4: one Adam step
display(tf.step_table(client.names, g_now, path.g_prev, path.lam, path.weights, w, package.weights))
print(f"λ = {path.lam:.3g} (the scale rule, §5); |φ| = {g_now.shape[1]:,} numbers; "
      f"largest |loop − package| = {np.abs(w - package.weights).max():.1e}; format's and tag_count's â "
      f"equal on this batch (so are their g_k): {torch.equal(adv[:, 1], adv[:, 2])}")

# %% [markdown]
# Cluster 0 after round 1: each client's weights (blank: a reward it lacks) and eq. 11's α.

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
tf.alpha_words(first, moa_records, cluster, alpha)

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
# Last round: **global_accuracy** is θ's pass@1 (share right) averaged over the three families' tests;
# **aggregated_reward** averages each client's rewards equally, then over clients.

# %%
summary = tf.run_summary(runs)
answers = len(FAMILIES) * (cfg.n_test // len(FAMILIES)) * cfg.eval_samples  # test answers scored, all families
gap = summary.global_accuracy["FedMOA"] - summary.global_accuracy["FedAvg-GRPO"]
display(summary)
print(f"FedMOA − FedAvg-GRPO: {gap:+.3f} × {answers} answers = {gap * answers:+.0f} right answers; one seed: noise (§6)")

# %% [markdown]
# ## 5. Why the weights barely move
# **How large is λ?** $\Delta_k$ multiplies two gradients, so a useful λ depends on the model. The live run sets
# $\lambda=0.05/\operatorname{mean}_k\lVert g_k\rVert^2$ per client from each round's first gradients (the *scale
# rule*, ours): an exactly repeated gradient moves its weight by about 0.05.

# %%
probes = tf.probe_round(make_config, cfg, first.policy)  # g_k of round 1's batches at the untrained model
LAMS = tf.replay_lambdas(probes)  # 1, 10, 100 × the median over clients of the rule's λ in this replayed round
cos = np.abs(tf.consecutive_cosines(probes))  # |cos(g_k^(t), g_k^(t−1))| over clients, rewards, steps
print(f"replayed round: |cos(g_k^(t), g_k^(t−1))| median {np.median(cos):.2f}, max {cos.max():.2f}")
tf.lambda_line(cfg, moa_records)

# %% [markdown]
# ### Exercise 5
# A widget below replays round 1 (untrained model, three fresh batches: eq. 10 acts twice) at 1, 10 and 100 times
# the clients' median rule λ. At m × the rule, a step moves a weight by about 0.05·m·|cos| (printed above). At which
# multiple does a $w_{\text{acc}}$ (starting at 0.4 or 0.5) first reach 0?

# %%
prediction_5 = None  # 1, 10, 100 or "none"

# %%
answer_5 = tf.first_zero(probes, cfg, LAMS)
why = tf.replay_answer(probes, cfg, LAMS).words.removeprefix("Answer: ")  # what the largest λ does
notebook.check_explained(prediction_5, answer_5, why)

# %% [markdown]
# Now look: $w_{\text{acc}}$ as sent, after eq. 10, after eq. 12.

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
tf.replay_why(probes, cfg, LAMS)

# %% [markdown]
# ## 6. What the stored grid shows

# %%
tf.grid_intro()

# %% [markdown]
# **Pareto fronts (the paper's Fig. 3).** A model *dominates* another when it is at least as good on both rewards
# and better on one. The models nothing dominates form the **Pareto front**, a staircase. Invented points first:

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
notebook.check_explained(prediction_6, answer_6, f"{new_model} dominates {sorted(answer_6)}: at least as good on "
                         "both rewards, better on one. P1 keeps the highest format and P4 the highest accuracy, so "
                         "they stay. A new model joins the front without beating every point on it.")

# %% [markdown]
# **Reading a front over seeds.** One model per seed. An arm sits *nearer the front* when its models score higher by
# more than either arm's spread over seeds (sd). Format is near 1 for all, so only accuracy separates them.
#
# ### Exercise 7
# The paper expects FedMOA. Given §5, whose models will sit nearer the stored grid's front: "FedMOA",
# "FedAvg-GRPO" or "neither"?

# %%
prediction_7 = None  # "FedMOA", "FedAvg-GRPO" or "neither"

# %%
spread = tf.arm_spread()  # accuracy over seeds: format is saturated
gap = spread.loc["FedMOA", "mean"] - spread.loc["FedAvg-GRPO", "mean"]
answer_7 = ("FedMOA" if gap > 0 else "FedAvg-GRPO") if abs(gap) > spread.sd.max() else "neither"
assert answer_7 == tf.nearer_front()[0]  # the helper agrees
notebook.check_explained(prediction_7, answer_7, tf.nearer_front()[1])

# %%
display(tf.paper_claim(3))
fig, words = tf.grid_pareto()
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
display(fig, words, spread)

# %% [markdown]
# **The accuracy weight over rounds (analogue of the paper's Fig. 5).** In the grid's accuracy cluster, eq. 12 shares
# only accuracy: config C lacks format. The first boundary:

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
moves = tf.boundary_moves()
answer_8 = set(moves.index[moves.rises])
notebook.check_explained(prediction_8, answer_8, "only accuracy is shared, so a client's u is (w̄_acc, its own other "
                         "weights, which sum to 1 − w_acc), and it gets w̄_acc / (w̄_acc + 1 − w_acc): above its "
                         "w_acc exactly when w_acc < w̄_acc. " + "; ".join(
                             f"{c} {r['end of round 1']:.3f} → {r['sent for round 2']:.3f}"
                             for c, r in moves.iterrows()) + ".")

# %%
fig, words = tf.grid_weights_figure()
viz.export(fig, "fedmoa_weights", figures)
display(fig)
words

# %%
display(tf.accuracy_differences())  # finding 1's accuracy, seed by seed
tf.findings_box()

# %% [markdown]
# ## 7. What to remember
# - Eq. 10 raises a weight only when its $\Delta_k$ is above their average; noisy gradients barely repeat.
# - Eq. 11 favours a *lower* $w_{\text{acc}}$ (the α tilt); at 0, winner takes all.
# - Eq. 12's rescaling dilutes or inflates $w_{\text{acc}}$, so α can rank reward sets instead of progress.
