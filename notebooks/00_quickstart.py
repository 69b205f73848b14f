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
# # Federated GRPO in one sitting
#
# We want to teach a language model to solve problems a program can check (*reinforcement learning with verifiable
# rewards*), but the problems sit on **clients** that will not share them. In **FedAvg-GRPO** each client improves a
# shared LoRA adapter on its own problems with GRPO and sends the adapter, never a problem, to a **server**, which
# averages them.
#
# **§1** GRPO on one group of answers, **§2** one federated round, **§3** a run that learns. The problems are
# arithmetic in seven topics; the policy, the **base**, is a tiny 1.6 M-parameter model, so all of it runs on a CPU
# in minutes.

# %% tags=["parameters"]
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo (Where next) | central_grpo (GRPO on the pooled data)
num_clients = None      # K, the number of clients (None: the preset's)
rounds = None           # R, communication rounds (None: the preset's)
local_steps = None      # τ, local GRPO steps per round (None: the preset's)
dirichlet_alpha = None  # α of the topic split: small, each client holds few topics (None: the preset's)
seed = 0                # one seed: one world, partition and run, bit for bit
# for papermill (-p name value) only: preset quick | smoke | full | full-smoke; base "" | "smollm2" (a real LM);
# folders ("": under runs/quickstart/); reference_path True: the plain, slower sampler of fedrl_kit/rollout.py
preset_name = "quick"
base = ""
run_dir = ""
figures_dir = ""
reference_path = False

# %%
# All the bookkeeping is here: imports, the checked parameters, the two runs (built, not yet trained), the settings.
import numpy as np
import torch

from experiments import teaching_quickstart as teach
from fedrl_kit import diagrams, notebook
from fedrl_kit.grpo import group_advantages, grpo_loss
from fedrl_kit.runs import Run

cfg, run_dir, figures = teach.setup(globals())  # a bad parameter stops here, in one line
run = Run(cfg, run_dir, progress=False).build()
run.runtime.keep_messages = True  # §3 re-reads the clients' messages
central = teach.central_run(cfg)  # Central-GRPO beside FedAvg/FedProx-GRPO: same seed, sizes and prompts
teach.settings(cfg)

# %% [markdown]
# ## 1. GRPO: judge each answer against its own group
#
# | symbol | meaning |
# |---|---|
# | $G$ | answers sampled per prompt: a **group** (`num_generations`) |
# | $r_i$, $A_i$ | reward and advantage of answer $i$ of a group |
# | $\pi_\theta$, $\pi_{\text{old}}$ | the policy being trained; the policy that sampled the group |
# | $\rho$ | a token's probability ratio $\pi_\theta/\pi_{\text{old}}$ |
# | $\epsilon$, $\epsilon_{\text{high}}$ | the clip range $[1-\epsilon,\ 1+\epsilon_{\text{high}}]$ of $\rho$ |
# | $b$ | prompts per local step (`prompts_per_step`) |
#
# For one prompt $q$ the policy samples $G$ answers. A verifier reads each answer (inside `<answer>…</answer>`, else
# the last number): $r_i = 1$ if right, else $0$. The share of answers shaped `<think>…</think><answer>…</answer>`,
# the **format rate**, is measured, not rewarded. GRPO needs no value network: it judges an answer against its own
# group.
#
# $$A_i = \frac{r_i - \operatorname{mean}(r_1,\dots,r_G)}{\operatorname{std}(r_1,\dots,r_G) + 10^{-4}}
# \qquad\text{(`fedrl_kit.grpo.group_advantages`; std: the sample std)}$$
#
# A real group, the base's $G$ answers to one test question:

# %%
group = notebook.one_group(run)
print(f"q = {group.attrs['question']!r}   (gold answer {group.attrs['gold']})")
group.drop(columns="advantage A_i")

# %% [markdown]
# ### Exercise 1
#
# By hand: what advantage does a right answer get in this group, and a wrong one?

# %%
prediction_1 = None  # (A of a right answer, A of a wrong one), e.g. (0.5, -0.5); within 0.01 counts as right

# %%
r = torch.tensor(group["reward r_i"].to_numpy())
A_group = group_advantages(r, len(r))  # what a local step computes
answer_1 = (round(A_group[r == 1][0].item(), 2), round(A_group[r == 0][0].item(), 2))
why_1 = (f"mean r = {r.mean():.3f}, sample std = {r.std():.3f}; right: (1 − {r.mean():.3f}) / {r.std():.3f} = "
         f"{answer_1[0]}, wrong: (0 − {r.mean():.3f}) / {r.std():.3f} = {answer_1[1]}. The rarer outcome gets the "
         "larger |A|")
notebook.check_explained(prediction_1, answer_1, why_1, tolerance=0.01)

# %% [markdown]
# Three more groups of eight. A lone success is pushed hard; dividing by the std gives every group with any spread
# the same total push, $\sum_i A_i^2 = G-1$:

# %%
for rewards in ([1, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 1, 0, 1], [1] * 8):
    advantages = group_advantages(torch.tensor(rewards, dtype=torch.float64), len(rewards))
    print(f"r = {rewards}  →  A = {[round(a, 2) for a in advantages.tolist()]},  Σ A² = {(advantages ** 2).sum():.2f}")

# %% [markdown]
# **A group that teaches nothing.** If all $G$ answers are right (or all wrong), every $A_i = 0$: no gradient. The
# share of such groups, `frac_zero_std`, is the first diagnostic to read.
#
# ### The clipped loss
#
# A local step samples $G$ answers to each of $b$ prompts with the current policy $\pi_{\text{old}}$, then makes
# `num_iterations` gradient passes over that batch, each minimising
#
# $$\mathcal{L}(\theta) = -\frac{1}{\sum_i |o_i|}\sum_{i}\sum_{t=1}^{|o_i|}
# \min\bigl(\rho_{i,t}A_i,\ \operatorname{clip}(\rho_{i,t},1-\epsilon,1+\epsilon_{\text{high}})\,A_i\bigr),
# \qquad \rho_{i,t} = \frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{\text{old}}(o_{i,t}\mid q,o_{i,<t})}
# \qquad\text{(`fedrl_kit.grpo.grpo_loss`)}$$
#
# - **Push.** $\rho A_i$ raises every token of an answer with $A_i>0$ and lowers it where $A_i<0$.
# - **Clip.** On the first pass $\pi_\theta = \pi_{\text{old}}$, so $\rho = 1$; only later passes can leave the clip
#   range. A token may grow by at most a factor $1+\epsilon_{\text{high}}$ per batch, little for an unlikely token;
#   *clip-higher* ($\epsilon_{\text{high}} > \epsilon$, from the GRPO variant DAPO) lets such rare tokens grow faster.
# - **Token mean** (`loss_type = "dapo"`): every token of the batch weighs alike; groups with $A = 0$ still add
#   tokens to the denominator, diluting the rest.
# - **No KL penalty** to the base ($\beta = 0$).

# %%
teach.grpo_settings(cfg)

# %% [markdown]
# ### Exercise 2
#
# On the second pass, an answer with $A = +1$ and one with $A = -1$ each have tokens at $\rho = 0.7, 1.0, 1.3$. Which
# $(A, \rho)$ pairs get **zero gradient**?

# %%
prediction_2 = None  # a set of (A, ρ) pairs, e.g. {(1, 1.0), (-1, 1.0)}

# %%
rho, A = torch.tensor([0.7, 1.0, 1.3], dtype=torch.float64), torch.tensor([1.0, -1.0], dtype=torch.float64)
logps = rho.log().repeat(2, 1).requires_grad_()  # log π_θ of each token, with log π_old = 0: ρ = exp(logps)
loss, diag = grpo_loss(logps, torch.zeros_like(logps), A, torch.ones_like(logps), cfg.epsilon, cfg.epsilon_high)
loss.backward()
answer_2 = {(int(a), p) for a, g in zip(A.tolist(), logps.grad.tolist()) for p, x in zip(rho.tolist(), g) if x == 0}
notebook.check_explained(prediction_2, answer_2, teach.clip_why(cfg))

# %% [markdown]
# Token by token: the min keeps the smaller, **pessimistic** term, so clipping removes the incentive to move further,
# never the pull back.

# %%
teach.clip_table(rho, A, logps.grad, loss, cfg)

# %% [markdown]
# ## 2. One federated round
#
# $K$ clients (`num_clients`) train together for $R$ rounds (`rounds`). In each round:

# %%
diagrams.round_diagram("fedavg_grpo")

# %% [markdown]
# Each client starts from the global adapter $\theta$, takes $\tau$ local steps of §1 (`local_steps`) on its own
# prompts, and replies with its adapter $\theta_k$, its number of training problems $n_k$ and a few metrics. The
# server averages:
#
# $$\theta \leftarrow \sum_{k=1}^{K} w_k\,\theta_k,\qquad w_k = \frac{n_k}{n},\quad n = \sum_k n_k
# \qquad\text{(`fedrl_kit.aggregate.fedavg`)}$$
#
# Every client does the same work, $\tau b$ prompts per round, so why weigh by $n_k$? The goal is the loss over all
# $n$ problems as if pooled, and a client holding more of them stands for more of it.
#
# **What travels.** Only a LoRA adapter trains; the frozen base is everywhere. The adapter adds
# $(\texttt{lora\_alpha}/r)\,UD$ to a frozen weight: $D$ (PEFT's `lora_A`, renamed since $A$ is the advantage)
# projects down to rank $r$, $U$ back up. $U$ starts at 0, so round 0 *is* the base.

# %%
teach.adapter_line(run)

# %% [markdown]
# **Pseudocode:**
# ```
# for round = 1..R:
#     send θ to every client
#     for each client k, in parallel:                          # GRPOClient.on_fit
#         for step = 1..τ:
#             sample b of its prompts, G answers each          # policy.rollout
#             r = verifier(answers); A = group advantages      # grpo.group_advantages
#             num_iterations clipped-loss passes on θ_k        # grpo.grpo_step
#         reply θ_k, n_k and metrics
#     θ = Σ_k (n_k / n) θ_k                                     # aggregate.fedavg
# ```
#
# ## 3. A run
# ### The data
# One test question per topic:

# %% tags=["nbval-check-output"]
notebook.examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# Each topic's training problems are split over the $K$ clients in proportions drawn from Dirichlet($\alpha$)
# (`dirichlet_alpha`). With a small $\alpha$, a topic lands mostly on one or two clients:

# %%
teach.bubbles(run, cfg.dirichlet_alpha, figures)

# %% [markdown]
# **Room to learn.** The base's **pass@1** per topic: each test problem gets `eval_samples` sampled answers, at the
# temperature of training; pass@1 is the fraction right, averaged over problems. Near 0 or 1, most groups have no
# spread. **Greedy accuracy** instead scores each problem's single likeliest answer.

# %%
base_eval = run.evaluate_global(0)  # the evaluation the run does at round 0
display(teach.base_by_topic(run, base_eval))
teach.sampled_vs_greedy(run, base_eval)

# %% [markdown]
# ### Training
# FedAvg-GRPO, and beside it **Central-GRPO**: one client holding all the data. Both see $K\tau b$ prompts per round:
# Central-GRPO in $\tau$ steps of $Kb$, each client in $\tau$ steps of $b$. After each round the global adapter
# answers the test problems.
#
# **Noise.** A problem's pass rate is the mean of its `eval_samples` answers; the standard error (SE) of pass@1 is
# these rates' std over problems divided by $\sqrt{\text{problems}}$. Two models are compared **paired**: the SE of
# their per-problem differences. A difference counts only beyond 2 SE. One seed: seed-to-seed variance is not in it.

# %%
records = run.run()
runs = {teach.NAMES[method]: records, **({"Central-GRPO": central.run()} if central else {})}
scores = teach.per_problem({name: (r, runs[name]) for name, r in zip(runs, (run, central))})  # [problems × rounds]
teach.results(runs, scores)

# %%
teach.pass_curve(scores, figures)

# %%
teach.reading_the_curve(scores, teach.NAMES[method])

# %% [markdown]
# ### Exercise 3
#
# Sampled pass@1 rose. Will **greedy** accuracy (the base's is above) end `"higher"`, the `"same"` (within ± 2 SE)
# or `"lower"`?

# %%
prediction_3 = None  # "higher", "same" or "lower"

# %%
answers_table, greedy = notebook.before_after(run, n=len(run.world.test))  # every test problem, greedy, both models
answer_3, why_3 = teach.greedy_answer(answers_table, greedy, scores[teach.NAMES[method]])
notebook.check_explained(prediction_3, answer_3, why_3)

# %% [markdown]
# **The same questions, before and after:** the eight whose sampled success changed most, with each model's greedy
# answer.

# %%
shown = teach.answers_changed(answers_table, scores[teach.NAMES[method]], cfg.eval_samples)
display(shown, teach.answers_reading(answers_table, shown))

# %% [markdown]
# ### Round 1 by hand
# The server's average, rebuilt from what the clients sent up, beside the adapter it sent down next:

# %%
replies = [m for m in run.runtime.messages if m.kind == "fit_result" and m.round == 1]  # θ_k, n_k, metrics
n_k = np.array([m.payload["num_examples"] for m in replies], dtype=float)
w = n_k / n_k.sum()
by_hand = {name: sum(w_k * m.payload["adapter"][name] for w_k, m in zip(w, replies))  # θ = Σ_k w_k θ_k, per tensor
           for name in replies[0].payload["adapter"]}
sent = next((m.payload["adapter"] for m in run.runtime.messages if m.kind == "fit" and m.round == 2),
            run.server.global_state)  # the global adapter of round 2 (the last one, if the run had one round)
print(f"n_k = {n_k.astype(int).tolist()}, w_k = {np.round(w, 3).tolist()}; "
      f"largest |by hand − server| = {max(np.abs(by_hand[k] - sent[k]).max() for k in by_hand):.1e}")

# %% [markdown]
# ### Each client's view
#
# ### Exercise 4
#
# Which client had the highest mean `frac_zero_std`? Use the split and the base's pass@1 per topic above.

# %%
prediction_4 = None  # a client's name, e.g. "client_0"

# %%
answer_4, why_4 = teach.frac_zero_answer(records, run, base_eval)
notebook.check_explained(prediction_4, answer_4, why_4)

# %% [markdown]
# Per round, on each client's *own* rollouts: train reward beside the global test pass@1, and `frac_zero_std`:

# %%
teach.client_grid(records, figures)

# %% [markdown]
# ## What this run shows

# %%
teach.takeaways(runs, teach.NAMES[method], scores, greedy, answers_table)

# %% [markdown]
# ## Optional: why the federated curve starts slower
# The server steps along the weighted mean of the clients' updates. Client $k$ moves the product $UD$ by $\Delta_k$.
# If all $\Delta_k$ point alike, their mean is as long as each; at right angles it is shorter. The **agreement**:
#
# $$a = \frac{\lVert\sum_k w_k\Delta_k\rVert}{\sum_k w_k\lVert\Delta_k\rVert}
# \qquad\text{(`fedrl_kit.lora_factors.factor_round`)}$$
#
# $a = 1$ when all move alike; $\sqrt{\sum_k w_k^2}$ ($1/\sqrt K$ for equal weights) for equal lengths at right
# angles. ($a$ measures the products $UD$; the server averages $D$ and $U$ separately, which differs by a
# second-order term.)

# %%
teach.agreement(run)

# %% [markdown]
# Independent noise in many dimensions is nearly orthogonal, and a client's update is mostly the noise of a few
# prompts. Or is it the non-IID split? Stored runs of this preset over $\alpha$ (`benchmarks/quickstart_alpha.py`):

# %%
display(teach.alpha_sweep())
teach.alpha_words()

# %% [markdown]
# ## Where next
# **A real language model.** `-p base smollm2` runs FedAvg-GRPO on SmolLM2-135M-Instruct. Stored (three seeds, ± 95 %
# on the mean row; sampled pass@1 only, so the gain may be sharpening):

# %%
notebook.stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# Rerun with `-p method fedprox_grpo`: FedProx adds $\frac{\mu}{2}\lVert\theta_k-\theta\rVert^2$ to each client's
# loss. Then the papers, which improve on this baseline: [FedGRPO](01_fedgrpo_expert_selection.ipynb) sends scores
# instead of adapters, [PubSwap](02_pubswap_balanced_drift.ipynb) pulls drifting clients together with public prompts,
# [FedMOA](03_fedmoa_pareto.ipynb) balances several rewards.
