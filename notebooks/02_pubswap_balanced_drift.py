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

# %% [markdown] papermill={"duration": 0.006168, "end_time": "2026-12-06T07:32:32.634395+00:00", "exception": false, "start_time": "2026-12-06T07:32:32.628227+00:00", "status": "completed"}
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
# clients' answers.

# %% [markdown] papermill={"duration": 0.010114, "end_time": "2026-12-06T07:32:32.655266+00:00", "exception": false, "start_time": "2026-12-06T07:32:32.645152+00:00", "status": "completed"}
# ## Parameters
# Change, then rerun from the top.

# %% papermill={"duration": 0.020325, "end_time": "2026-12-06T07:32:32.693319+00:00", "exception": false, "start_time": "2026-12-06T07:32:32.672994+00:00", "status": "completed"} tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
seed = 0               # one seed: one world, partition and run
num_clients = 4        # N clients
dirichlet_alpha = 0.3  # Dirichlet concentration of the topic split (the paper's Table 1: 0.3)
taus = None            # local steps τ; §7 runs the largest (None: 2 and 6 quick, 2 and 4 smoke, 10 and 120 full)
run_root = ""          # where the runs go ("": runs/pubswap/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %% papermill={"duration": 13.411332, "end_time": "2026-12-06T07:32:46.114391+00:00", "exception": false, "start_time": "2026-12-06T07:32:32.703059+00:00", "status": "completed"}
import pandas as pd
import torch

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

# %% [markdown] papermill={"duration": 0.007886, "end_time": "2026-12-06T07:32:46.129068+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.121182+00:00", "status": "completed"}
# ## 1. One round, drawn, and in time order
# The server broadcasts the adapter. Each client takes $\tau$ local steps. Every $\tau_{\text{swap}}$-th step is
# public (★). A public step takes two round trips: answers up, swapped groups down. At the
# round's end the server averages the two LoRA factors separately (**FedIT**). Every **arm** (method compared) averages
# this way. In FedAvg-GRPO all $\tau$ steps are private. With $\tau_{\text{swap}} = 2$, half of PubSwap's steps are
# public.

# %% papermill={"duration": 0.013949, "end_time": "2026-12-06T07:32:46.154917+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.140968+00:00", "status": "completed"}
diagrams.round_diagram("pubswap")

# %% papermill={"duration": 0.017499, "end_time": "2026-12-06T07:32:46.178363+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.160864+00:00", "status": "completed"}
diagrams.step_timeline(max(TAUS), cfg.pubswap.period)

# %% [markdown] papermill={"duration": 0.012567, "end_time": "2026-12-06T07:32:46.197055+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.184488+00:00", "status": "completed"}
# ## 2. Pseudocode
# `fedrl_kit/pubswap/method.py::run_round`:
# ```
# for round p = 1, 2, …:
#   send (A_p, B_p) to every client
#   for local step j = 1..τ:
#     if j is a multiple of τ_swap:                                   # method.is_public_step
#       the same b public prompts to every client                     # method.sample_public_batch
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

# %% [markdown] papermill={"duration": 0.012066, "end_time": "2026-12-06T07:32:46.217054+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.204988+00:00", "status": "completed"}
# ## 3. Key equations
# | symbol | meaning |
# |---|---|
# | $N$; $n$, $n'$ | clients: number; one |
# | $\tau$; $j$; $\tau_{\text{swap}}$ | local steps per round; one local step; public-step period |
# | $x$, $b$; $y_k$, $K$ | prompt, prompts per step; answer, answers per prompt |
# | $\hat a_k$; $\pi_{\text{old}}$; $\rho$ | advantage; policy at the step's start; probability ratio |
# | $\varepsilon$, $\varepsilon_{\text{high}}$; $\mu$; $\eta$ | clip range; updates per step; learning rate |
# | $s$; $\Delta W = sBA$ | LoRA scale; a layer's weight change |
# | $\delta_{\text{pair}}$; $\Delta_j$ | drift between clients' $\Delta W$; between their parameters |
# | $L$; $\zeta$; $\omega_n$ | smoothness; private-gradient gap; swap's gradient error |
# | $c_n(x)$, $D_n(x)$ | right answers of client $n$, of the others |
# | $M_n(x)$, $\alpha_n(x)$ | answers swapped into $n$'s group, as a fraction of $K$ |
#
# **GRPO, every local step** (`grpo.group_advantages`, `grpo.grpo_loss`). For a prompt $x$ a client samples $K$
# answers $y_k$ from $\pi_{\text{old}}$. Reward $r_k = 1$ if the answer's final number equals the gold answer,
# whatever the format around it; else 0:
#
# $$\hat a_k = \frac{r_k - \bar r}{\sigma_r + 10^{-4}},\qquad
# J(\theta) = \frac{1}{K}\sum_{k=1}^{K}\frac{1}{|y_k|}\sum_{t}\min\Bigl(\rho_{k,t}\,\hat a_k,\;
# \operatorname{clip}\bigl(\rho_{k,t},\,1-\varepsilon,\,1+\varepsilon_{\text{high}}\bigr)\,\hat a_k\Bigr),\qquad
# \rho_{k,t} = \frac{\pi_\theta(y_{k,t}\mid x, y_{k,<t})}{\pi_{\text{old}}(y_{k,t}\mid x, y_{k,<t})}$$
#
# $\bar r$ and $\sigma_r$ are the group's mean and standard deviation. $J$ has no KL term and is averaged over the
# step's $b$ prompts. **pass@1** is the
# fraction of test problems answered right. The run's values:

# %% papermill={"duration": 0.01976, "end_time": "2026-12-06T07:32:46.248873+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.229113+00:00", "status": "completed"}
teach.run_values(cfg, policy)

# %% [markdown] papermill={"duration": 0.012082, "end_time": "2026-12-06T07:32:46.269055+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.256973+00:00", "status": "completed"}
# **LoRA and FedIT** (`aggregate.fedit`). A frozen layer $W_0$ becomes $W_0 + \Delta W$, with $\Delta W = sBA$. Only
# the factors $A$ and $B$ train and travel. FedIT averages them **separately**: $A = \frac{1}{N}\sum_n A_n$ and
# $B = \frac{1}{N}\sum_n B_n$.
#
# **Drift** (`drift.mean_pairwise_drift`): one Frobenius distance between clients' $\Delta W_n = sB_nA_n$, all
# layers together:
#
# $$\delta_{\text{pair}} = \frac{2}{N(N-1)}\sum_{n<n'}\lVert \Delta W_n - \Delta W_{n'}\rVert_F$$
#
# It is measured after each local step, before aggregation; it is 0 at a round's start.

# %% papermill={"duration": 0.026593, "end_time": "2026-12-06T07:32:46.307486+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.280893+00:00", "status": "completed"}
teach.drift_code()

# %% [markdown] papermill={"duration": 0.008062, "end_time": "2026-12-06T07:32:46.325044+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.316982+00:00", "status": "completed"}
# **What the drift bound predicts** (the paper's appendix A, noise terms dropped). Let $\Delta_j$ be two clients'
# parameter distance after local step $j$:
#
# $$\text{private: } \Delta_{j+1} \le (1+\eta L_{\text{priv}})\,\Delta_j + \eta\,\zeta,\qquad
# \text{public: } \Delta_{j+1} \le (1+\eta L_{\text{pub}})\,\Delta_j + \eta\,(\omega_n + \omega_{n'})$$
#
# $L_{\text{priv}}$, $L_{\text{pub}}$ are the private and public gradients' smoothness constants. $\zeta$ bounds
# two clients' private-gradient gap. $\omega_n$ bounds $\lVert g_n^{\text{swapped}} - g^{\text{public}}\rVert$:
# client $n$'s gradient on its swapped group against the on-policy public gradient. It grows with the swapped share.
# $\delta_{\text{pair}}$ is the $\Delta W$ analogue of $\Delta_j$. A public step removes $\zeta$: on the same
# prompts, two clients' gradients differ only through their parameters, which the $L$ term covers. The swap only adds
# $\omega$. So the bound predicts that the no-swap control (below) drifts least.
#
# **Why swap.** If all $K$ answers are wrong, or all right, every $\hat a_k$ is 0. Then there is no gradient.
# Balanced swaps in others' right answers. The advantages become $\pm 0.94$. They are not $\pm 1$ because
# $\sigma_r$ divides by $K - 1$:

# %% papermill={"duration": 0.023787, "end_time": "2026-12-06T07:32:46.360910+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.337123+00:00", "status": "completed"}
K_run = cfg.num_generations
M_demo = K_run // 2
groups = {"all wrong (own answers)": [0.0] * K_run,
          f"after Balanced swaps in M = {M_demo} right answers": [1.0] * M_demo + [0.0] * (K_run - M_demo)}
pd.DataFrame({name: group_advantages(torch.tensor(r), K_run).numpy().round(2) for name, r in groups.items()},
             index=[f"answer {k + 1}" for k in range(K_run)]).T.assign(
    rewards=[" ".join(f"{v:g}" for v in r) for r in groups.values()])

# %% [markdown] papermill={"duration": 0.012086, "end_time": "2026-12-06T07:32:46.381067+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.368981+00:00", "status": "completed"}
# **The swap rules.** Take public prompt $x$. Client $n$ got $c_n(x)$ of its $K$ answers right. The other clients
# together got $D_n(x)$ right. *Balanced* (`swap.balanced_swap`) replaces $M_n(x)$ of $n$'s wrong answers with
# others' right ones:
#
# $$M_n(x) = \min\bigl((\lfloor K/2\rfloor - c_n(x))_+,\ D_n(x)\bigr),\qquad \alpha_n(x) = \frac{M_n(x)}{K} \le
# \frac{1}{2}$$
#
# Why half? Reward variance $p(1-p)$ peaks at $p = \tfrac12$. So a half-right group gives GRPO its strongest signal.
# Balanced only adds right answers, so an all-right group still gives no gradient.
#
# *Random* (`swap.random_swap`) draws $K$ answers from the pooled $NK$. Every client gets this **same** group.
# Here $\alpha_n(x)$ is the share of the group not from $n$.
#
# **A shortcut.** Only texts travel. The receiver scores a foreign answer with its own $\pi_{\text{old}}$, as
# $\rho$'s denominator. So foreign answers get no importance correction from the donor's policy to the receiver's:
# they are treated as on-policy. The paper does not say how it scores them.
#
# **The no-swap control** (`swap.no_swap`) is our addition. It takes the same public steps but keeps each client's own
# answers, separating the shared prompts from the swap. Differences below are first arm − second (negative: less
# drift).

# %% [markdown] papermill={"duration": 0.012089, "end_time": "2026-12-06T07:32:46.405087+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.392998+00:00", "status": "completed"}
# ## 4. Who holds what
# Seven generated arithmetic topics stand in for MATH's subjects. The policy is a small character-level transformer,
# pretrained to be right sometimes. A Dirichlet draw over topics splits the data into equal-size clients.

# %% papermill={"duration": 0.637908, "end_time": "2026-12-06T07:32:47.054956+00:00", "exception": false, "start_time": "2026-12-06T07:32:46.417048+00:00", "status": "completed"} tags=["nbval-check-output"]
notebook.client_table(probe_run.partitions)

# %% papermill={"duration": 1.491486, "end_time": "2026-12-06T07:32:48.560744+00:00", "exception": false, "start_time": "2026-12-06T07:32:47.069258+00:00", "status": "completed"}
fig = teach.heterogeneity_figure(probe_run.partitions, dirichlet_alpha)
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown] papermill={"duration": 0.023725, "end_time": "2026-12-06T07:32:48.593202+00:00", "exception": false, "start_time": "2026-12-06T07:32:48.569477+00:00", "status": "completed"}
# ## 5. One swap, step by step
# We train one Balanced round at the larger τ, then replay its last public step with fresh answers from each
# client's end-of-round adapter. Each client's right answers $c_n(x)$ per prompt:

# %% papermill={"duration": 25.856427, "end_time": "2026-12-06T07:33:14.481536+00:00", "exception": false, "start_time": "2026-12-06T07:32:48.625109+00:00", "status": "completed"}
def one_round(m, tau):  # one round of arm m from the shared start, δ_pair recorded after every local step
    run = Run(cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, eval_samples=1), progress=False,
              policy=policy)
    return run, run.run()


T = max(TAUS)
drift_runs = {("pubswap_balanced", T): one_round("pubswap_balanced", T)}  # §7 adds the other arms

# %% papermill={"duration": 0.715386, "end_time": "2026-12-06T07:33:15.221542+00:00", "exception": false, "start_time": "2026-12-06T07:33:14.506156+00:00", "status": "completed"}
run, _ = drift_runs[("pubswap_balanced", T)]
last_public = max(s for s in range(run.config.local_steps) if is_public_step(s, run.config.pubswap.period))
gen = generate_public(run.server, round=1, step=last_public)
K, cids = gen.num_generations, gen.client_ids
correct = teach.correct_table(gen)
correct

# %% [markdown] papermill={"duration": 0.067964, "end_time": "2026-12-06T07:33:15.337294+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.269330+00:00", "status": "completed"}
# Balanced's group for client_0 on a prompt where it has few right answers, slot by slot, with $M_0(x)$ by hand
# beside the package's $\alpha_0(x)\cdot K$:

# %% papermill={"duration": 0.221122, "end_time": "2026-12-06T07:33:15.582259+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.361137+00:00", "status": "completed"}
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b groups per rule
example = teach.example_prompt(correct, K)
view = group_table(gen, swaps["balanced"], 0, example)
print(teach.m_by_hand(correct, 0, example, K)[1], f"; package: α_0(x)·K = {view.attrs['alpha'] * K:.0f}")
view

# %% [markdown] papermill={"duration": 0.026298, "end_time": "2026-12-06T07:33:15.621256+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.594958+00:00", "status": "completed"}
# The rule's code. Which wrong slots go, and which donors come, is drawn uniformly (`rng.choice`).

# %% papermill={"duration": 0.043163, "end_time": "2026-12-06T07:33:15.683872+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.640709+00:00", "status": "completed"}
teach.code_excerpt(balanced_swap, "target = K // 2", "source[n, slots, 1]")

# %% [markdown] papermill={"duration": 0.027916, "end_time": "2026-12-06T07:33:15.733183+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.705267+00:00", "status": "completed"}
# **Turn the knobs**: rule, group size $K$ (each client's first $K$ answers), client, prompt. It starts on another
# prompt:

# %% papermill={"duration": 0.14541, "end_time": "2026-12-06T07:33:15.905854+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.760444+00:00", "status": "completed"}
show_swap, controls = teach.swap_widget(gen, teach.widget_prompt(correct, K, avoid=example))
notebook.static_default(show_swap, **controls)
notebook.knobs(show_swap, **controls)

# %% [markdown] papermill={"duration": 0.027426, "end_time": "2026-12-06T07:33:15.997245+00:00", "exception": false, "start_time": "2026-12-06T07:33:15.969819+00:00", "status": "completed"}
# The same prompt under Random: every client gets this one group, $K$ answers drawn without replacement.

# %% papermill={"duration": 0.032737, "end_time": "2026-12-06T07:33:16.053373+00:00", "exception": false, "start_time": "2026-12-06T07:33:16.020636+00:00", "status": "completed"}
teach.code_excerpt(random_swap, "flat = rng.choice", "source = np.broadcast_to")

# %% papermill={"duration": 0.033766, "end_time": "2026-12-06T07:33:16.110667+00:00", "exception": false, "start_time": "2026-12-06T07:33:16.076901+00:00", "status": "completed"}
show_swap("random", K, 0, example, summary=False)
teach.random_group_note(gen, correct, example)

# %% [markdown] papermill={"duration": 0.023733, "end_time": "2026-12-06T07:33:16.157315+00:00", "exception": false, "start_time": "2026-12-06T07:33:16.133582+00:00", "status": "completed"}
# ## 6. What the reproduction found
# The paper reports that Balanced beats FedAvg-GRPO in accuracy for most τ, and Random beats Balanced at small τ.
# Neither holds in our runs ([12_pubswap_report](12_pubswap_report.ipynb#findings)).
# *Final* δ_pair is measured after a round's last local step and averaged over the rounds.

# %% papermill={"duration": 0.032747, "end_time": "2026-12-06T07:33:16.214058+00:00", "exception": false, "start_time": "2026-12-06T07:33:16.181311+00:00", "status": "completed"}
teach.stored_setting_note()

# %% papermill={"duration": 0.930616, "end_time": "2026-12-06T07:33:17.167011+00:00", "exception": false, "start_time": "2026-12-06T07:33:16.236395+00:00", "status": "completed"}
fig = teach.stored_drift_figure()
viz.export(fig, "pubswap_stored_drift", figures)
fig

# %% [markdown] papermill={"duration": 0.031772, "end_time": "2026-12-06T07:33:17.221584+00:00", "exception": false, "start_time": "2026-12-06T07:33:17.189812+00:00", "status": "completed"}
# Balanced drifts least, not the control: against the bound's prediction (§3). Accuracy at the end, with the paper's
# gain:

# %% papermill={"duration": 0.399373, "end_time": "2026-12-06T07:33:17.650373+00:00", "exception": false, "start_time": "2026-12-06T07:33:17.251000+00:00", "status": "completed"}
teach.accuracy_table()

# %% [markdown] papermill={"duration": 0.040403, "end_time": "2026-12-06T07:33:17.725322+00:00", "exception": false, "start_time": "2026-12-06T07:33:17.684919+00:00", "status": "completed"}
# ### Exercise 1
#
# Follow the grey lines of the seeds that ran all four arms. Which step goes down for every one of them: the public
# steps (FedAvg-GRPO → control), the swap (control → Balanced), both, or neither?

# %% papermill={"duration": 0.056865, "end_time": "2026-12-06T07:33:17.818085+00:00", "exception": false, "start_time": "2026-12-06T07:33:17.761220+00:00", "status": "completed"}
prediction_1 = None  # "swap", "public steps", "both" or "neither"

# %% papermill={"duration": 0.080666, "end_time": "2026-12-06T07:33:17.946804+00:00", "exception": false, "start_time": "2026-12-06T07:33:17.866138+00:00", "status": "completed"}
answer_1, why_1 = teach.exercise_1()
notebook.check_explained(prediction_1, answer_1, why_1)

# %% papermill={"duration": 0.680702, "end_time": "2026-12-06T07:33:18.666145+00:00", "exception": false, "start_time": "2026-12-06T07:33:17.985443+00:00", "status": "completed"}
teach.findings_box()

# %% papermill={"duration": 0.504091, "end_time": "2026-12-06T07:33:19.209500+00:00", "exception": false, "start_time": "2026-12-06T07:33:18.705409+00:00", "status": "completed"}
teach.drift_accuracy_note()

# %% [markdown] papermill={"duration": 0.035995, "end_time": "2026-12-06T07:33:19.281380+00:00", "exception": false, "start_time": "2026-12-06T07:33:19.245385+00:00", "status": "completed"}
# **What lowers drift?** An untested guess: Balanced gives every client the same right answers as targets. That pulls
# the clients together. The bound counts only $\zeta$ and $\omega$, so it leaves this pull out.

# %% [markdown] papermill={"duration": 0.212116, "end_time": "2026-12-06T07:33:19.533400+00:00", "exception": false, "start_time": "2026-12-06T07:33:19.321284+00:00", "status": "completed"}
# ## 7. Try it yourself: drift within one round
# Each arm runs one round from the same start, on one seed. This shows where the arms part, not which is better.

# %% papermill={"duration": 93.348028, "end_time": "2026-12-06T07:34:52.917422+00:00", "exception": false, "start_time": "2026-12-06T07:33:19.569394+00:00", "status": "completed"}
for m in teach.ARMS:  # FedAvg-GRPO, the no-swap control, PubSwap Random, PubSwap Balanced
    if (m, T) not in drift_runs:
        drift_runs[(m, T)] = one_round(m, T)
drift, end = teach.drift_frames(drift_runs)

# %% papermill={"duration": 0.819798, "end_time": "2026-12-06T07:34:53.756417+00:00", "exception": false, "start_time": "2026-12-06T07:34:52.936619+00:00", "status": "completed"}
fig = teach.drift_figure(drift)
viz.export(fig, "pubswap_drift_within_round", figures)
fig

# %% [markdown] papermill={"duration": 0.037527, "end_time": "2026-12-06T07:34:53.887377+00:00", "exception": false, "start_time": "2026-12-06T07:34:53.849850+00:00", "status": "completed"}
#
# %% papermill={"duration": 0.479396, "end_time": "2026-12-06T07:34:54.413708+00:00", "exception": false, "start_time": "2026-12-06T07:34:53.934312+00:00", "status": "completed"}
teach.within_round_note(end)

# %% [markdown] papermill={"duration": 0.04691, "end_time": "2026-12-06T07:34:54.503438+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.456528+00:00", "status": "completed"}
# Step 1 is private, so the lines coincide until the first ★.
# **Knob:** set `taus = (2, 12)` in Parameters and rerun. Watch whether the public-step arms stay apart from
# FedAvg-GRPO through the private steps between ★, or rejoin it.

# %% [markdown] papermill={"duration": 0.034148, "end_time": "2026-12-06T07:34:54.571464+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.537316+00:00", "status": "completed"}
# ## 8. Exercises
# Predict, then run the check.
#
# ### Exercise 2
#
# On §5's example prompt (below), how many of client_1's answers does Balanced replace?

# %% papermill={"duration": 0.078254, "end_time": "2026-12-06T07:34:54.682371+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.604117+00:00", "status": "completed"}
teach.named_pair(correct, 1, example)

# %% papermill={"duration": 0.050014, "end_time": "2026-12-06T07:34:54.775667+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.725653+00:00", "status": "completed"}
prediction_2 = None  # a whole number

# %% papermill={"duration": 0.046363, "end_time": "2026-12-06T07:34:54.852152+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.805789+00:00", "status": "completed"}
answer_2, why_2 = teach.exercise_2(gen, swaps, correct, example, client=1)
notebook.check_explained(prediction_2, answer_2, why_2)

# %% [markdown] papermill={"duration": 0.024223, "end_time": "2026-12-06T07:34:54.901235+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.877012+00:00", "status": "completed"}
# ### Exercise 3
#
# Why is client_0's $\alpha_0(x)$ under Random what it is here? Predict $\alpha_n$'s mean over Random's draws (two
# decimals), and the range $\alpha_n$ can take.

# %% papermill={"duration": 0.031992, "end_time": "2026-12-06T07:34:54.958310+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.926318+00:00", "status": "completed"}
teach.random_alpha_line(gen, swaps, example)

# %% papermill={"duration": 0.043544, "end_time": "2026-12-06T07:34:55.027637+00:00", "exception": false, "start_time": "2026-12-06T07:34:54.984093+00:00", "status": "completed"}
prediction_3 = None  # a fraction, e.g. 0.5

# %% papermill={"duration": 0.043282, "end_time": "2026-12-06T07:34:55.096285+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.053003+00:00", "status": "completed"}
answer_3, why_3 = teach.exercise_3(gen, swaps, example)
notebook.check_explained(prediction_3, answer_3, why_3, tolerance=0.005)

# %% [markdown] papermill={"duration": 0.062781, "end_time": "2026-12-06T07:34:55.237657+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.174876+00:00", "status": "completed"}
# ### Exercise 4
#
# For the client and prompt below, use §5's table of $c_n(x)$: how many answers does Balanced swap in?

# %% papermill={"duration": 0.024522, "end_time": "2026-12-06T07:34:55.316047+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.291525+00:00", "status": "completed"}
client_4, prompt_4, pair_4 = teach.binding_pair(correct, K, avoid=example)
pair_4

# %% papermill={"duration": 0.083671, "end_time": "2026-12-06T07:34:55.481733+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.398062+00:00", "status": "completed"}
prediction_4 = None  # a whole number

# %% papermill={"duration": 0.041846, "end_time": "2026-12-06T07:34:55.559366+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.517520+00:00", "status": "completed"}
answer_4, why_4 = teach.exercise_4(gen, swaps, correct, client_4, prompt_4)
notebook.check_explained(prediction_4, answer_4, why_4)

# %% [markdown] papermill={"duration": 0.032599, "end_time": "2026-12-06T07:34:55.622209+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.589610+00:00", "status": "completed"}
# ### Exercise 5
#
# In §5's table of $c_n(x)$, on how many prompts does Random give **no** client a gradient, whatever its draw?

# %% papermill={"duration": 0.036357, "end_time": "2026-12-06T07:34:55.686915+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.650558+00:00", "status": "completed"}
prediction_5 = None  # a whole number

# %% papermill={"duration": 0.040967, "end_time": "2026-12-06T07:34:55.761604+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.720637+00:00", "status": "completed"}
answer_5, why_5 = teach.exercise_5(gen, swaps, correct)
notebook.check_explained(prediction_5, answer_5, why_5)

# %% [markdown] papermill={"duration": 0.028137, "end_time": "2026-12-06T07:34:55.821613+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.793476+00:00", "status": "completed"}
# ## What to remember
# - **Balanced** tops a public group up to half right. **Random** hands every client one mostly foreign group.

# %% papermill={"duration": 0.889815, "end_time": "2026-12-06T07:34:56.743430+00:00", "exception": false, "start_time": "2026-12-06T07:34:55.853615+00:00", "status": "completed"}
teach.remember_note(T)
