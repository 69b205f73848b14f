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
# **The problem.** In FedAvg-GRPO each of $N$ clients takes $\tau$ **local steps** per round. A local step is one GRPO
# step on the client's own prompts. Then the server averages the clients' LoRA adapters. With many local steps the
# adapters **drift** apart, and their average gets worse.
#
# **PubSwap** makes every $\tau_{\text{swap}}$-th local step a **public step**. In a public step all clients answer
# the same $b$ public prompts, $K$ answers each. The server then **swaps** some of each client's answers for other
# clients' answers. The hope: clients trained on the same prompts and answers pull the same way.

# %% [markdown]
# ## Parameters
# Change, then rerun from the top.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
seed = 0               # one seed: one world, partition and run
num_clients = 4        # N clients
dirichlet_alpha = 0.3  # Dirichlet concentration of the topic split (the paper's Table 1: 0.3)
taus = None            # local steps τ; §5 and §7 run the largest (None: 2 and 6 quick, 2 and 4 smoke,
                       # 10 and 120 full: the paper's smallest and largest)
run_root = ""          # where the runs go ("": runs/pubswap/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import pandas as pd
import torch
from IPython.display import display

pd.set_option("display.max_colwidth", None)  # the setting table holds sentences

from experiments import teaching_pubswap as teach
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.grpo import group_advantages
from fedrl_kit.pubswap.method import is_public_step
from fedrl_kit.pubswap.public_step import generate_public, group_table, swap_public
from fedrl_kit.pubswap.swap import balanced_swap, random_swap
from fedrl_kit.runs import Run

# the paper's setting (FedIT, AdamW with weight decay 0.01, equal-size clients), τ_swap = 2
cfg, run_root, figures = notebook.setup("pubswap", globals(), teach.config_maker(globals()), runs="run_root",
                                        folder=dict(n=num_clients, a=dirichlet_alpha, s=seed))
TAUS = tuple(taus or {"quick": (2, 6), "smoke": (2, 4), "full": (10, 120), "full-smoke": (2, 4)}[preset_name])
probe_run = Run(cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy
teach.setting_table(cfg, world, policy)

# %% [markdown]
# ## 1. One round, drawn, and in time order
# Each client takes $\tau$ local steps; with $\tau_{\text{swap}} = 2$ every second one is public (★), two round trips:
# answers up, swapped groups down. At the round's end the server averages the two LoRA factors separately
# (**FedIT**), in every **arm** (method compared). FedAvg-GRPO's steps are all private.

# %%
diagrams.round_diagram("pubswap")

# %%
diagrams.step_timeline(max(TAUS), cfg.pubswap.period)

# %% [markdown]
# ## 2. Pseudocode
# `fedrl_kit/pubswap/method.py::run_round`:
# ```
# for round p = 1, 2, …:
#   send (A_p, B_p) to every client
#   for local step j = 1..τ:
#     if j is a multiple of τ_swap:                                   # method.is_public_step
#       b public prompts, drawn afresh, the same for every client     # method.sample_public_batch
#       each client: K answers per prompt, and which are right
#       server, per prompt x and client n:                            # method.swap_prompts
#         Balanced: M_n = min((⌊K/2⌋ − c_n)+, D_n)                    # swap.balanced_swap
#                   M_n of n's wrong answers ← others' right ones
#         Random:   one group of K drawn from all N·K answers, to all # swap.random_swap
#       each client: one GRPO step on its group
#     else:
#       each client: one GRPO step on b of its private prompts
#   each client sends (A_n, B_n); A = mean A_n, B = mean B_n          # aggregate.fedit
# ```

# %% [markdown]
# ## 3. Key equations
# | symbol | meaning |
# |---|---|
# | $N$; $n$, $n'$ | clients: number; one |
# | $\tau$; $j$; $\tau_{\text{swap}}$ | local steps per round; one local step; public-step period |
# | $x$, $b$; $y_k$, $K$ | prompt, prompts per step; answer, answers per prompt |
# | $\hat a_k$; $\pi_{\text{old}}$; $\rho$ | advantage; policy at the step's start; probability ratio |
# | $\varepsilon$, $\varepsilon_{\text{high}}$; $\eta$ | clip range; learning rate |
# | $s$; $\Delta W = sBA$ | LoRA scale; a layer's weight change |
# | $\delta_{\text{pair}}$; $u$; $\Delta_j$ | drift between clients' $\Delta W$; update size; distance between parameters |
# | $L$; $\zeta$; $\omega_n$ | smoothness; private-gradient gap; swap's gradient error |
# | $c_n(x)$, $D_n(x)$ | right answers of client $n$, of the others |
# | $M_n(x)$, $\alpha_n(x)$ | answers swapped into $n$'s group, as a fraction of $K$ |
#
# **GRPO, every local step** (`grpo.group_advantages`, `grpo.grpo_loss`). For a prompt $x$ a client samples $K$
# answers $y_k$ from $\pi_{\text{old}}$. Reward $r_k=1$ if the answer's final number is the gold answer, else 0:
#
# $$\hat a_k=\frac{r_k-\bar r}{\sigma_r+10^{-4}},\qquad
# J(\theta)=\frac{1}{\sum_k|y_k|}\sum_{k}\sum_{t}\min\Bigl(\rho_{k,t}\,\hat a_k,\;
# \operatorname{clip}\bigl(\rho_{k,t},\,1-\varepsilon,\,1+\varepsilon_{\text{high}}\bigr)\,\hat a_k\Bigr),\qquad
# \rho_{k,t}=\frac{\pi_\theta(y_{k,t}\mid x,y_{k,<t})}{\pi_{\text{old}}(y_{k,t}\mid x,y_{k,<t})}$$
#
# $\bar r$, $\sigma_r$: the group's mean and standard deviation. The sums run over the step's $b{\cdot}K$ answers,
# every token weighing the same; no KL term. The clip is asymmetric: a right answer's token ($\hat a_k>0$) may grow to
# $1+\varepsilon_{\text{high}}$ times its old probability, a wrong one's shrink to $1-\varepsilon$, so rare right
# tokens grow faster (DAPO's "clip higher"). **pass@1**: the fraction of test problems answered right. Settings:

# %%
teach.run_values(cfg, policy, max(TAUS))

# %% [markdown]
# **LoRA and FedIT** (`aggregate.fedit`). A frozen layer $W_0$ becomes $W_0 + \Delta W$, with $\Delta W = sBA$. Only
# the factors $A$ and $B$ train and travel. FedIT averages them **separately**: $A=\frac{1}{N}\sum_n A_n$,
# $B=\frac{1}{N}\sum_n B_n$. Their product $BA=\frac{1}{N^2}\sum_{n,n'}B_nA_{n'}$ mixes clients (cross terms
# $n\ne n'$), so it is not the mean of the $B_nA_n$. Two clients, 1 × 1 factors, $s=1$:

# %%
teach.fedit_demo()

# %% [markdown]
# The further apart the factors, the larger the gap; and different factors can give one $\Delta W$ (row 2). So
# **drift** (`drift.mean_pairwise_drift`) is measured on $\Delta W_n=sB_nA_n$, what the model uses, all layers
# together, after each local step (0 at a round's start):
#
# $$\delta_{\text{pair}}=\frac{2}{N(N-1)}\sum_{n<n'}\lVert\Delta W_n-\Delta W_{n'}\rVert_F$$

# %%
teach.drift_code()

# %% [markdown]
# **What the drift bound predicts** (the paper's appendix A). Let $\Delta_j$ be two clients' parameter distance after
# local step $j$. A step moves client $n$ by $-\eta g_n$, so $\Delta$ grows by at most $\eta$ times the gap
# $\lVert g_n(\theta_n)-g_{n'}(\theta_{n'})\rVert$. Split the gap. One loss at two points: at most $L\Delta_j$
# (smoothness). Two clients' losses at one point: at most $\zeta$ on private prompts; 0 on shared public prompts,
# except that the swap moves $n$'s gradient off the shared one by $\omega_n$:
#
# $$\text{private: }\Delta_{j+1}\le(1+\eta L_{\text{priv}})\,\Delta_j+\eta\,\zeta,\qquad
# \text{public: }\Delta_{j+1}\le(1+\eta L_{\text{pub}})\,\Delta_j+\eta\,(\omega_n+\omega_{n'})$$
#
# $\omega_n$ grows with the swapped share. Dropped: noise (on the same prompts, clients still sample different
# answers). So public steps should cut drift, and the no-swap control (below; $\omega=0$) should drift least.
#
# **Why swap.** If all $K$ answers are wrong, or all right, every $\hat a_k$ is 0: no gradient. Swapping in others'
# right answers makes the advantages $\pm 0.94$ (not $\pm 1$: $\sigma_r$ divides by $K-1$):

# %%
K_run = cfg.num_generations
M_demo = K_run // 2
groups = {"all wrong (own answers)": [0.0] * K_run,
          f"after Balanced swaps in M = {M_demo} right answers": [1.0] * M_demo + [0.0] * (K_run - M_demo)}
pd.DataFrame({name: group_advantages(torch.tensor(r), K_run).numpy().round(2) for name, r in groups.items()},
             index=[f"answer {k + 1}" for k in range(K_run)]).T.assign(
    rewards=[" ".join(f"{v:g}" for v in r) for r in groups.values()])

# %% [markdown]
# **The swap rules.** Take public prompt $x$. Client $n$ got $c_n(x)$ of its $K$ answers right. The other clients
# together got $D_n(x)$ right. *Balanced* (`swap.balanced_swap`) replaces $M_n(x)$ of $n$'s wrong answers with
# others' right ones:
#
# $$M_n(x)=\min\bigl((\lfloor K/2\rfloor-c_n(x))_+,\ D_n(x)\bigr),\qquad\alpha_n(x)=\frac{M_n(x)}{K}\le\frac{1}{2}$$
#
# Why half? Reward variance $p(1-p)$ peaks at $p=\tfrac12$: a half-right group gives GRPO its strongest signal.
# Balanced only adds right answers, so an all-right group still gives no gradient.
#
# *Random* (`swap.random_swap`) draws $K$ answers from the pooled $NK$ and gives every client this **same** group;
# $\alpha_n(x)$ is the share not from $n$.
#
# Only texts travel, so the receiver scores a foreign answer with its own $\pi_{\text{old}}$ in $\rho$, as if
# on-policy.
#
# **The no-swap control** (`swap.no_swap`, our addition) takes the same public steps but keeps each client's own
# answers: it separates the shared prompts from the swap.

# %% [markdown]
# ## 4. Who holds what
# Seven arithmetic topics stand in for MATH's subjects; a Dirichlet draw splits them into equal-size clients. The
# policy: a small character-level transformer, pretrained to be right sometimes.

# %% tags=["nbval-check-output"]
notebook.client_table(probe_run.partitions)

# %%
fig = teach.heterogeneity_figure(probe_run.partitions, dirichlet_alpha)
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown]
# ## 5. One swap, step by step
# One Balanced round at the larger τ; then its last public step replayed with fresh answers from each client's
# end-of-round adapter. Right answers $c_n(x)$ per prompt:

# %%
def one_round(m, tau):  # one round of arm m from the shared start, δ_pair recorded after every local step
    run = Run(cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, eval_samples=1), progress=False,
              policy=policy)
    return run, run.run()


T = max(TAUS)
drift_runs = {("pubswap_balanced", T): one_round("pubswap_balanced", T)}  # §7 adds the other arms

# %%
run, _ = drift_runs[("pubswap_balanced", T)]
last_public = max(s for s in range(run.config.local_steps) if is_public_step(s, run.config.pubswap.period))
gen = generate_public(run.server, round=1, step=last_public)
K, cids = gen.num_generations, gen.client_ids
correct = teach.correct_table(gen)
correct

# %% [markdown]
# Balanced's group for client_0 on a prompt where it has few right answers, with $M_0(x)$ by hand and from the
# package:

# %%
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b groups per rule
example = teach.example_prompt(correct, K)
view = group_table(gen, swaps["balanced"], 0, example)
print(teach.m_by_hand(correct, 0, example, K)[1], f"; package: α_0(x)·K = {view.attrs['alpha'] * K:.0f}")
view

# %% [markdown]
# The rule's code. Which wrong slots go, and which donors come, is drawn at random:

# %%
teach.code_excerpt(balanced_swap, "target = K // 2", "source[n, slots, 1]")

# %% [markdown]
# **Turn the knobs**: rule, group size $K$ (each client's first $K$ answers), client, prompt:

# %%
widget_at = teach.widget_prompt(correct, K, avoid=example)
show_swap, controls = teach.swap_widget(gen, widget_at)
notebook.static_default(show_swap, **controls)
notebook.knobs(show_swap, **controls)

# %% [markdown]
# The same prompt under Random (one group for all, drawn without replacement):

# %%
teach.code_excerpt(random_swap, "flat = rng.choice", "source = np.broadcast_to")

# %%
show_swap("random", K, 0, example, summary=False)
teach.random_group_note(gen, correct, example)

# %% [markdown]
# ## 6. What the reproduction found
# Stored runs at τ = 48, several seeds each (settings box, §3). Full tables:
# [12_pubswap_report](12_pubswap_report.ipynb#findings). First, the paper's accuracy claims:

# %%
teach.claims_note()

# %% [markdown]
# Now drift (*final*: after a round's last step, averaged over rounds). Clients taking smaller steps drift less for
# that reason alone, so the right panel divides by the **update size** $u$, the clients' mean distance
# $\lVert\Delta W_n-\Delta W_p\rVert_F$ from the round's broadcast adapter (`drift.distance_to_global`). Updates of
# length $u$ in unrelated directions lie $\sqrt2\,u$ apart; identical ones, 0.

# %%
fig = teach.stored_drift_figure()
viz.export(fig, "pubswap_stored_drift", figures)
fig

# %% [markdown]
# Balanced drifts least, not the control: against the bound's prediction (§3).
#
# ### Exercise 1
#
# Follow the solid grey lines (left panel) of the seeds that ran all four arms. Which step goes down for every one of
# them: the public steps (FedAvg-GRPO → control), the swap (control → Balanced), both, or neither?

# %%
prediction_1 = None  # "swap", "public steps", "both" or "neither"

# %%
answer_1, why_1 = teach.exercise_1()
notebook.check_explained(prediction_1, answer_1, why_1)

# %% [markdown]
# ### Exercise 2
#
# Random has the highest δ_pair but a lower δ_pair / u than FedAvg-GRPO. Are its clients' updates larger, smaller or
# about equal in size to FedAvg-GRPO's?

# %%
prediction_2 = None  # "larger", "smaller" or "equal"

# %%
answer_2, why_2 = teach.exercise_2()
notebook.check_explained(prediction_2, answer_2, why_2)

# %%
teach.update_sizes()

# %% [markdown]
# **What lowers drift?** Not smaller steps: Balanced's $u$ is close to FedAvg-GRPO's, but its updates point more
# alike. A reading, untested: shared right answers (Balanced) or one shared group (Random) pull the clients one way,
# a pull the bound leaves out. In short:

# %%
teach.findings_box()

# %%
teach.drift_accuracy_note()

# %% [markdown]
# ## 7. Try it yourself: drift within one round
# Each arm runs one round from the same start, one seed, at the larger τ: where the arms part, not which is better.

# %%
for m in teach.ARMS:  # FedAvg-GRPO, the no-swap control, PubSwap Random, PubSwap Balanced
    if (m, T) not in drift_runs:
        drift_runs[(m, T)] = one_round(m, T)
drift, end = teach.drift_frames(drift_runs)

# %%
fig = teach.drift_figure(drift)
viz.export(fig, "pubswap_drift_within_round", figures)
fig

# %%
note, split = teach.within_round_split(end)
display(note)
split

# %% [markdown]
# The split depends on τ: at small τ the shared prompts give about half the cut or more, at τ = 32 and 48 the
# swap most of it. A reading, untested: a public step removes $\zeta$ at once, while the swap's pull builds up over
# many steps. **Knob:** set `taus = (2, 12)` in Parameters and rerun: does the swap's part grow?

# %% [markdown]
# ## 8. Exercises
# Predict, then run the check. All use §5's public step.
#
# ### Exercise 3
#
# Why is client_0's $\alpha_0(x)$ under Random what it is here? Predict $\alpha_n$'s mean over Random's draws (two
# decimals), and the range $\alpha_n$ can take.

# %%
teach.random_alpha_line(gen, swaps, example)

# %%
prediction_3 = None  # a fraction, e.g. 0.5

# %%
answer_3, why_3 = teach.exercise_3(gen, swaps, example)
notebook.check_explained(prediction_3, answer_3, why_3, tolerance=0.005)

# %% [markdown]
# ### Exercise 4
#
# On the prompt below, how many answers does Balanced swap in, summed over all clients? Its row of §5's table:

# %%
prompt_4 = teach.total_swap_prompt(correct, K, avoid=(example, widget_at))
correct.iloc[[prompt_4]]

# %%
prediction_4 = None  # a whole number

# %%
answer_4, why_4 = teach.exercise_4(swaps, correct, prompt_4, K)
notebook.check_explained(prediction_4, answer_4, why_4)

# %% [markdown]
# ### Exercise 5
#
# In §5's table of $c_n(x)$, on how many prompts does Random give **no** client a gradient, whatever its draw?

# %%
prediction_5 = None  # a whole number

# %%
answer_5, why_5 = teach.exercise_5(gen, swaps, correct)
notebook.check_explained(prediction_5, answer_5, why_5)

# %% [markdown]
# ## What to remember
# - **Balanced** tops a public group up to half right. **Random** hands every client one mostly foreign group.

# %%
teach.remember_note(T)
