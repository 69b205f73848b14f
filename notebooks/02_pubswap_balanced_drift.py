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
# # PubSwap: shared public prompts and swapped answers against client drift
#
# *Nayak, Askin, Ustaomeroglu, Joe-Wong, Joshi (Carnegie Mellon University): PubSwap.*
#
# **The problem.** In FedAvg-GRPO each of $N$ clients takes $\tau$ **local steps** (GRPO steps on its own prompts),
# then the server averages their LoRA adapters. With different data the adapters **drift** apart, and the average
# fits none well.
#
# **The idea.** In some **public** steps all clients answer the same prompts and the server **swaps** answers
# between them before they train: a shared pull. Public prompts mix all topics, disjoint from private and test
# ones.
#
# **The paper's claims.** (1) Public steps with Balanced swaps limit drift. (2) Balanced beats FedAvg-GRPO in
# accuracy for most τ. (3) At small τ (the paper's 10 and 40; 90 and 120 are large) the simpler Random swap beats
# Balanced. Our τ are smaller.

# %% [markdown]
# ## Parameters
# Change, then rerun from the top.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke | full (GPU, real model) | full-smoke
seed = 0
num_clients = 4        # N
dirichlet_alpha = 0.3  # topic split across clients: smaller, more lopsided (the paper's 0.3)
taus = None            # local steps τ (None: the preset's two); §3–4 run the larger
run_root = ""          # output folder ("": under runs/pubswap/)
figures_dir = ""       # figures ("": the output folder's)

# %%
import tempfile

import numpy as np
import pandas as pd
import torch
from IPython.display import display

pd.set_option("display.max_colwidth", None)  # tables show whole answers

from experiments import teaching_pubswap as teach
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.grpo import group_advantages
from fedrl_kit.pubswap.method import is_public_step
from fedrl_kit.pubswap.public_step import generate_public, group_table, swap_public
from fedrl_kit.pubswap.swap import balanced_swap, random_swap
from fedrl_kit.runs import Run

cfg, run_root, figures = notebook.setup("pubswap", globals(), teach.config_maker(globals()), runs="run_root",
                                        folder=dict(n=num_clients, a=dirichlet_alpha, s=seed))  # the paper's setting
T = max(teach.live_taus(preset_name, taus))  # the live runs' τ
probe_run = Run(cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy

# %% [markdown]
# ## 1. One PubSwap round
# | symbol | meaning |
# |---|---|
# | $N$; $\tau$ | clients; local steps per round |
# | $\tau_{\text{swap}}$ | every $\tau_{\text{swap}}$-th local step is public |
# | $b$; $K$ | prompts per step; answers per prompt |
# | $M_n$ | answers the server swaps into client $n$'s group (§2) |
#
# At the round's end the server averages the LoRA factors $A$ and $B$ separately (**FedIT**). FedAvg-GRPO runs
# the same round with private steps only; each method compared is an **arm**.

# %%
teach.settings_sentence(cfg, world, policy, T)

# %%
diagrams.round_diagram("pubswap")

# %%
diagrams.step_timeline(T, cfg.pubswap.period)

# %% [markdown]
# **Half of a PubSwap client's local steps are public** ($\tau_{\text{swap}}=2$). Private prompts and their answers
# never leave a client. The round as code
# (`fedrl_kit/pubswap/method.py::run_round`):
# ```
# for round p = 1, 2, …:
#   send (A_p, B_p) to every client
#   for local step j = 1..τ:
#     if j is a multiple of τ_swap:                                   # a public step
#       server: b public prompts, with gold answers, to every client
#       each client: K answers per prompt, scored, sent up
#       server, per prompt x and client n:
#         Balanced: M_n of n's wrong answers ← others' right ones     # swap.balanced_swap
#         Random:   one group of K drawn from all N·K answers, to all # swap.random_swap
#       each client: one GRPO step on its groups
#     else:
#       each client: one GRPO step on b of its private prompts
#   each client sends (A_n, B_n); A = mean A_n, B = mean B_n          # aggregate.fedit
# ```

# %% [markdown]
# ## 2. GRPO, and why swap answers
# **A GRPO step** (`grpo.group_advantages`, `grpo.grpo_loss`): on prompt $x$ the client samples $K$ answers $y_k$ from
# its policy $\pi_\theta$, rewards each ($r_k=1$ if it equals the gold answer, else 0), scores it against its group
# (advantage $\hat a_k$), then raises the probability of the better ones, clipped:
#
# $$\hat a_k=\frac{r_k-\bar r}{\sigma_r+10^{-4}},\qquad
# J(\theta)=\frac{1}{\sum_k|y_k|}\sum_{k}\sum_{t}\min\Bigl(\rho_{k,t}\,\hat a_k,\;
# \operatorname{clip}\bigl(\rho_{k,t},\,1-\varepsilon,\,1+\varepsilon_{\text{high}}\bigr)\,\hat a_k\Bigr),\qquad
# \rho_{k,t}=\frac{\pi_\theta(y_{k,t}\mid x,y_{k,<t})}{\pi_{\text{old}}(y_{k,t}\mid x,y_{k,<t})}$$
#
# $\bar r$, $\sigma_r$: the group's mean and *sample* standard deviation. $\rho_{k,t}$: how much likelier token $t$ of
# answer $k$ is now than under $\pi_{\text{old}}$, the policy at the step's start; $\varepsilon_{\text{high}}>\varepsilon$
# (clip-higher) lets unlikely tokens rise further. A step maximises $J$ with $\mu$
# optimiser updates (learning rate $\eta$). For a swapped-in answer $\pi_{\text{old}}$ is the *receiving* client's
# policy, not the sampler's: $\rho$ treats it as the client's own (**off-policy**).

# %%
teach.grpo_settings(cfg)

# %% [markdown]
# **Why swap.** If a group's answers are all wrong (or all right), every $\hat a_k$ is 0: the prompt gives no
# gradient. Swapping in other clients' right answers restores the spread; even one changes every advantage:

# %%
K_run = cfg.num_generations
M_demo = K_run // 2
groups = {"all wrong (own answers)": [0.0] * K_run,
          "one right answer swapped in (M = 1)": [1.0] + [0.0] * (K_run - 1),
          f"Balanced swaps in M = {M_demo} right answers": [1.0] * M_demo + [0.0] * (K_run - M_demo)}
print(teach.advantage_by_hand(K_run, M_demo))
pd.DataFrame({name: group_advantages(torch.tensor(r), K_run).numpy().round(2) for name, r in groups.items()},
             index=[f"answer {k + 1}" for k in range(K_run)]).T.assign(
    rewards=[" ".join(f"{v:g}" for v in r) for r in groups.values()])

# %% [markdown]
# **Balanced** (`swap.balanced_swap`): with $c_n(x)$ client $n$'s right answers on $x$ and $D_n(x)$ the other
# clients' together, it swaps $M_n(x)$ of $n$'s wrong answers for others' right ones, topping the group up to half
# right; the **swapped fraction** $f_n(x)$ is the share of $n$'s group that came from others:
#
# $$M_n(x)=\min\bigl((\lfloor K/2\rfloor-c_n(x))_+,\ D_n(x)\bigr),\qquad f_n(x)=\frac{M_n(x)}{K}\le\frac12$$
#
# Half, because reward variance $p(1-p)$ peaks at $p=\tfrac12$.
#
# **Random** (`swap.random_swap`) draws one group of $K$ from the $NK$ pooled answers and gives it to every client.
# All clients train on the same answers (more sharing), mostly not their own: $f_n$ can reach 1 (more off-policy).
#
# **The no-swap control** (our addition) takes the same public steps but keeps each client's own answers, so
# Balanced − control isolates the swap.
#
# **Why swapping should reduce drift.** Clients given right answers to the same prompt (on arithmetic mostly one
# string, whichever donor) all raise them: a shared pull (§4).
#
# ## 3. One swap, step by step
# After one Balanced round, each client answers the round's last public prompts afresh with **its own adapter after
# its τ local steps**: a new draw (runs keep no answers). Right answers $c_n(x)$:

# %%
def one_round(m, tau):  # one round of arm m from the shared start; every client's adapter and gradient after each step
    with tempfile.TemporaryDirectory() as folder:
        run = Run(cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, trace_tensors=True,
                              eval_samples=1), folder, progress=False, policy=policy)
        records = run.run()
        run.tensors = teach.read_tensors(folder)  # {"global": (A_p, B_p), j: {client: factors and gradient}}
    return run, records


drift_runs = {("pubswap_balanced", T): one_round("pubswap_balanced", T)}  # §4 adds the other arms
run, _ = drift_runs[("pubswap_balanced", T)]
last_public = max(s for s in range(run.config.local_steps) if is_public_step(s, run.config.pubswap.period))
gen = generate_public(run.server, round=1, step=last_public)
K, cids = gen.num_generations, gen.client_ids
correct = teach.correct_table(gen)
correct

# %% [markdown]
# Only an answer's number is scored. client_0's group on a prompt where it has few right answers (swapped slots
# first), and $M_0(x)$ by hand:

# %%
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b groups per rule
example = teach.example_prompt(correct, K)
view = group_table(gen, swaps["balanced"], 0, example)
print(teach.m_by_hand(correct, 0, example, K)[1], f"; package: f_0(x)·K = {view.attrs['alpha'] * K:.0f}")
view.sort_values("from", key=lambda s: s.str.startswith("own"), kind="stable")

# %% [markdown]
# The rule's code (wrong slots and donors drawn at random):

# %%
teach.code_excerpt(balanced_swap, "target = K // 2", "source[n, slots, 1]")

# %% [markdown]
# **Turn the knobs:**

# %%
widget_at = teach.widget_prompt(correct, K, avoid=example)
show_swap, controls = teach.swap_widget(gen, widget_at)
notebook.static_default(show_swap, **controls)
notebook.knobs(show_swap, **controls)

# %% [markdown]
# The first example prompt under Random:

# %%
teach.code_excerpt(random_swap, "flat = rng.choice", "source = np.broadcast_to")

# %%
show_swap("random", K, 0, example)
teach.random_group_note(gen, correct, example)

# %% [markdown]
# ### Exercise 1
# On this prompt, which clients get a gradient (a) under the no-swap control, (b) under Balanced?

# %%
prompt_1 = teach.gradient_prompt(correct, K, avoid=(example,))
correct.iloc[[prompt_1]]

# %%
prediction_1 = None  # two sets of client names, e.g. ({"client_0"}, {"client_0", "client_1"})

# %%
answer_1, why_1 = teach.exercise_gradient(swaps, correct, prompt_1, K)
notebook.check_explained(prediction_1, answer_1, why_1)

# %% [markdown]
# ### Exercise 2
# Under Random, what share $f_n$ of a client's group is, on average over draws, other clients' answers (two
# decimals)? One draw:

# %%
teach.random_alpha_line(gen, swaps, example)

# %%
prediction_2 = None  # a fraction, e.g. 0.5

# %%
answer_2, why_2 = teach.exercise_random_share(gen, swaps, example)
notebook.check_explained(prediction_2, answer_2, why_2, tolerance=0.005)

# %% [markdown]
# ### Exercise 3
# On how many of the $b$ prompts can Random give **no** client a gradient *whatever its draw*, and on how many does
# Balanced give none? Read the $c_n(x)$ table.

# %%
prediction_3 = None  # two whole numbers (Random, Balanced), e.g. (1, 0)

# %%
answer_3, why_3 = teach.exercise_no_spread(gen, swaps, correct)
notebook.check_explained(prediction_3, answer_3, why_3)

# %% [markdown]
# ### Exercise 4
# $N=3$ clients, $K=4$, and on one prompt the clients hold $c=(0,1,4)$ right answers. Predict each $M_n$. Which
# clients then get a gradient?

# %%
prediction_4 = None  # three whole numbers (M_0, M_1, M_2), e.g. (1, 1, 1)

# %%
answer_4, why_4 = teach.exercise_top_up(K=4, c=(0, 1, 4))
notebook.check_explained(prediction_4, answer_4, why_4)

# %% [markdown]
# ## 4. Drift: why it hurts, how it is measured
# **Why clients drift.** A Dirichlet draw gives each client a different mix of seven arithmetic topics, so their
# private gradients differ:

# %%
fig = teach.heterogeneity_figure(probe_run.partitions, dirichlet_alpha)
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown]
# **Why drift hurts.** A layer's weight change is $\Delta W=sBA$ ($s$: LoRA scale). FedIT averages $A$ and $B$
# separately, and the product of means is not the mean of products:
# $\frac1N\sum_nB_nA_n-\bar B\bar A=\frac1N\sum_n(B_n-\bar B)(A_n-\bar A)$, small only when the *factors* agree.
# Two clients, 1 × 1 factors, $s=1$:

# %%
teach.fedit_demo()

# %% [markdown]
# FedIT's product matches neither client. **Drift** $\delta_{\text{pair}}$ is measured on
# $\Delta W_n=sB_nA_n$, all modules together, so it misses this (both rows: $\delta_{\text{pair}}=0$); it measures
# how differently clients *update*. FedIT's own **averaging error**
# $e=\lVert\frac1N\sum_nsB_nA_n-s\bar B\bar A\rVert_F$ we measure beside it on the live round. Also the **update size** $u$, the clients' mean distance from the round's
# broadcast $\Delta W_p$:
#
# $$\delta_{\text{pair}}=\frac{2}{N(N-1)}\sum_{n<n'}\lVert\Delta W_n-\Delta W_{n'}\rVert_F,\qquad
# u=\frac1N\sum_n\lVert\Delta W_n-\Delta W_p\rVert_F$$
#
# Two clients, $\Delta W_p=0$ (`drift.mean_pairwise_drift`, `drift.distance_to_global`):

# %%
teach.drift_demo()

# %% [markdown]
# For equal-length updates $\delta_{\text{pair}}/u$ says how alike the directions are: 0 identical, $\sqrt2$
# unrelated, 2 opposite.
#
# **The paper's bound** on two clients' parameter distance $\Delta_j=\lVert\theta_n-\theta_{n'}\rVert$ after local
# step $j$ ($\Delta_0=0$; $\theta$: the LoRA factors, so a small $\Delta$ also keeps $e$ small). In steps, with expected gradients
# $g_n$ (averaged over sampled answers):
# 1. **Smoothness $L$**: $g_n$ moves at most $L$ times as far as $\theta$. So a step (size $\eta$) gives
#    $\Delta_{j}\le(1+\eta L)\Delta_{j-1}+\eta c_j$, $c_j$ the two clients' gradient gap at one point.
# 2. **Private step**: different data, different losses: $c_j=\zeta\ge\lVert g_n-g_{n'}\rVert$.
# 3. **Public step**: the same prompts and reward: in expectation over the answers, one loss, so without a swap
#    $c_j=0$ (different samples only add noise). The **swap distortion** $\omega_n$ is how far the swap moves
#    $n$'s expected gradient from the one on its own answers: $\omega_n\le\frac1b\sum_x M_n(x)\beta_n(x)$, with
#    $\beta_n(x)$ the largest change one replaced answer makes to it. So $c_j=\omega_n+\omega_{n'}$.
# 4. Unrolled: $\Delta_\tau\le\eta\sum_{j=1}^{\tau}(1+\eta L)^{\tau-j}c_j$.

# %% [markdown]
# ### Exercise 5
# From the bound alone, with the same $\zeta$, $L$ and $\eta$ for every arm: which arm's bound on $\Delta_\tau$ is
# smallest?

# %%
prediction_5 = None  # "FedAvg-GRPO", "no-swap control", "Random" or "Balanced"

# %%
answer_5, why_5 = teach.exercise_bound()
notebook.check_explained(prediction_5, answer_5, why_5)

# %% [markdown]
# **Why the runs can disagree: the shared pull.** The bound uses expected gradients. A client that *samples* no
# right answer gets no gradient from the prompt (Exercise 1), though its expected gradient is not zero: sampling
# noise. Swapping in right answers removes it, and pulls all clients whose groups now hold them toward the same
# answers. The bound lacks this: only runs rank arms.
# **Watch one round**, every arm from the same start: mechanics only (the stored runs of §5 rank the arms,
# Balanced lowest and Random highest).

# %%
for m in teach.ARMS:  # FedAvg-GRPO, the no-swap control, PubSwap Random, PubSwap Balanced
    if (m, T) not in drift_runs:
        drift_runs[(m, T)] = one_round(m, T)
drift, end = teach.drift_frames(drift_runs)
fig = teach.drift_figure(drift)
viz.export(fig, "pubswap_drift_within_round", figures)
fig

# %%
teach.live_round_note(drift, end)

# %% [markdown]
# **Lower drift, smaller FedIT error?** At the round's end:

# %%
e_table, e_note = teach.fedit_error_table(drift_runs, cfg.lora_alpha / cfg.lora_rank)
display(e_note)
e_table

# %% [markdown]
# **By hand**, Balanced's last step: $\delta_{\text{pair}}$, $u$ and the **gradient spread**
# $\frac1N\sum_n\lVert g_n-\bar g\rVert^2/\lVert\bar g\rVert^2$ (0: the clients' sampled gradients pull alike):

# %%
t, j = drift_runs[("pubswap_balanced", T)][0].tensors, T - 1  # Balanced's live round; j: its last local step
dW, dW_p, g = teach.step_vectors(t, j, cfg.lora_alpha / cfg.lora_rank)  # [N, P] ΔW_n = sB_nA_n; [P] ΔW_p; [N, P'] g_n
N = len(dW)
delta_pair = np.mean([np.linalg.norm(dW[n] - dW[m]) for n in range(N) for m in range(n + 1, N)])
u = np.mean(np.linalg.norm(dW - dW_p, axis=1))
g_bar = g.mean(axis=0)
spread = ((g - g_bar) ** 2).sum(axis=1).mean() / (g_bar @ g_bar)
rec = drift[(drift.arm == "PubSwap Balanced") & (drift.step == j)].iloc[0]  # what the helpers recorded
assert np.allclose([delta_pair, u, spread], [rec["δ_pair"], rec["u"], rec["spread"]], rtol=1e-6)
print(f"j = {j + 1}: δ_pair = {delta_pair:.3f}, u = {u:.3f}, gradient spread = {spread:.3f}")

# %% [markdown]
# **The shared pull, measured**: gradient spread per kind of step, and the share of (client, prompt) groups with no
# gradient:

# %%
pull, pull_note = teach.shared_pull(drift)
display(pull_note)
pull

# %% [markdown]
# ## 5. What the stored runs show
# *Final* δ_pair (after each round's last step, averaged over rounds), one grey line per seed. **Balanced's clients
# end closest, Random's furthest apart, yet Random's point more alike than FedAvg-GRPO's (right panel):**

# %%
fig = teach.stored_drift_figure()
viz.export(fig, "pubswap_stored_drift", figures)
fig

# %%
teach.stored_means()  # the figure's means as numbers

# %% [markdown]
# ### Exercise 6
# Random's clients point more alike than FedAvg-GRPO's (lower δ_pair / u), yet its δ_pair is higher. What must be
# true of its update size $u$?

# %%
prediction_6 = None  # "larger", "smaller" or "equal"

# %%
answer_6, why_6 = teach.exercise_update_size()
notebook.check_explained(prediction_6, answer_6, why_6)

# %% [markdown]
# **Paired by seed:**

# %%
teach.drift_findings()

# %% [markdown]
# **Shared prompts or swap?** The control splits the cut in two:
# (Balanced − FedAvg-GRPO) = (control − FedAvg-GRPO) + (Balanced − control).

# %%
split, split_note = teach.drift_split()
display(split_note)
split

# %% [markdown]
# ## 6. What they do not show
# **Accuracy** (pass@1: share of test problems answered right). **Balanced's lower drift bought no accuracy,
# and no τ shows Random ahead of Balanced:**

# %%
claims, claims_note = teach.accuracy_claims()
display(claims_note)
claims

# %%
teach.drift_accuracy_note()

# %% [markdown]
# **Scale.** A small transformer on arithmetic, not the paper's models on MATH: only directions compare. Every
# table: [12_pubswap_report](12_pubswap_report.ipynb#findings).
#
# ## What to remember
# - **Balanced** tops each public group up to half right; **Random** hands every client one group, mostly others'
#   answers.

# %%
teach.remember_note()
