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
# **The problem.** We want to teach a language model to solve problems a program can check (*reinforcement learning
# with verifiable rewards*). But the training problems sit on **clients** that will not share them. **Federated
# GRPO** trains anyway. Each client improves a shared LoRA adapter on its own problems with GRPO. It sends the
# **server** its adapter, its example count $n_k$ and a few metrics, never a problem.
#
# This notebook teaches **FedAvg-GRPO**, the baseline that notebooks 01–03 improve on. It runs in minutes on a CPU.
# The problems are arithmetic, in seven topics. The policy, the **base**, is a tiny 1.6 M-parameter model pretrained
# by supervised learning.

# %% tags=["parameters"]
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo (Where next) | central_grpo (GRPO on the pooled data) | zero_shot
num_clients = None      # K, the number of clients (None: the preset's)
rounds = None           # R, communication rounds (None: the preset's)
local_steps = None      # τ, local GRPO steps per round (None: the preset's)
dirichlet_alpha = None  # α of the topic split: small, each client holds few topics (None: the preset's)
seed = 0                # one seed: one world, partition and run, bit for bit
# for papermill (-p name value): preset quick | smoke | full | full-smoke; base "" | "smollm2" (a real LM);
# folders ("": under runs/quickstart/); reference_path True: the plain, slower sampler of fedrl_kit/rollout.py
preset_name = "quick"
base = ""
run_dir = ""
figures_dir = ""
reference_path = False

# %%
import numpy as np
import torch

from experiments import teaching_quickstart as teach
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.grpo import group_advantages, grpo_loss
from fedrl_kit.runs import Run

cfg, run_dir, figures = teach.setup(globals())  # a bad parameter stops here, in one line
run = Run(cfg, run_dir, progress=False).build()
run.runtime.keep_messages = True  # §5 re-reads every message
central = teach.central_run(cfg)  # Central-GRPO beside FedAvg/FedProx-GRPO: same seed, sizes and budget
teach.settings(cfg)

# %% [markdown]
# ## 1. GRPO: score a group of answers against each other
#
# | symbol | meaning |
# |---|---|
# | $K$, $R$ | clients (`num_clients`); communication rounds (`rounds`) |
# | $\tau$, $b$ | local GRPO steps per round (`local_steps`); prompts per step (`prompts_per_step`) |
# | $G$ | answers per prompt, the group (`num_generations`) |
# | $r_i$, $A_i$ | reward and advantage of answer $i$ in its group |
# | $\rho$; $\epsilon$, $\epsilon_{\text{high}}$ | probability ratio; its clip range (`epsilon`, `epsilon_high`) |
# | $\theta$, $\theta_k$ | global LoRA adapter; client $k$'s after its steps |
# | $D$, $U$, $r_{\text{LoRA}}$ | LoRA's down and up factors; its rank (`lora_rank`) |
# | $n_k$, $w_k$ | client $k$'s training examples; its weight $n_k/n$ |
# | $\Delta_k$, $a$ | client $k$'s update of $UD$; the clients' agreement |
# | $\alpha$ | Dirichlet concentration of the topic split (`dirichlet_alpha`) |
#
# For one prompt $q$ the model samples a **group** of $G$ answers $o_1,\dots,o_G$. A verifier reads the answer inside
# `<answer>…</answer>`, else the last number. It gives $r_i = 1$ if that answer is right, else $0$. The **format rate**
# is the fraction of answers shaped `<think>…</think><answer>…</answer>`. It is measured, not rewarded.
#
# GRPO is PPO's clipped objective without a value network. An answer's **advantage** says how much better it scored
# than its own group:
#
# $$A_i = \frac{r_i - \operatorname{mean}(r_1,\dots,r_G)}{\operatorname{sample\ std}(r_1,\dots,r_G) + 10^{-4}}
# \qquad\text{(`fedrl_kit.grpo.group_advantages`)}$$
#
# Dividing by the std makes $\sum_i A_i^2 \approx G-1$ in every group that has any spread.
#
# A local step takes $b$ prompts and their $bG$ answers. It raises the probability of every token of an answer with
# $A_i>0$ and lowers it where $A_i<0$. Its loss is
#
# $$\mathcal{L}(\theta) = -\frac{1}{\sum_i |o_i|}\sum_{i}\sum_{t=1}^{|o_i|}
# \min\bigl(\rho_{i,t}A_i,\ \operatorname{clip}(\rho_{i,t},1-\epsilon,1+\epsilon_{\text{high}})\,A_i\bigr),
# \qquad \rho_{i,t} = \frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{\text{old}}(o_{i,t}\mid q,o_{i,<t})}
# \qquad\text{(`fedrl_kit.grpo.grpo_loss`)}$$
#
# - **The ratio $\rho$.** A step samples its answers once, with $\pi_{\text{old}}$, then makes `num_iterations`
#   passes over them. On the first pass $\pi_\theta = \pi_{\text{old}}$, so $\rho = 1$: only later passes see
#   $\rho \ne 1$, and only there can the **clip** act. `clip_fraction` is the share of tokens clipped.
# - **Clip-higher** (from DAPO, a GRPO variant): $\epsilon_{\text{high}} > \epsilon$ lets a rare token grow more
#   before the cap.
# - **Token mean** (`loss_type = "dapo"`): every token weighs the same, so long answers count more, and groups with no
#   spread still dilute the rest through $\sum_i |o_i|$.
# - **No KL penalty** to the base: $\beta = 0$.

# %%
teach.grpo_settings(cfg)

# %% [markdown]
# ### Exercise 1
#
# On a later pass, one answer with $A = +1$ and one with $A = -1$ each have tokens at $\rho = 0.7, 1.0, 1.3$. Which
# $(A, \rho)$ pairs get **zero gradient**?

# %%
prediction_1 = None  # a set of (A, ρ) pairs, e.g. {(1, 1.0), (-1, 1.0)}

# %%
rho, A = torch.tensor([0.7, 1.0, 1.3], dtype=torch.float64), torch.tensor([1.0, -1.0], dtype=torch.float64)
logps = rho.log().repeat(2, 1).requires_grad_()  # log π_θ of each token, with log π_old = 0: ρ = exp(logps)
loss, diag = grpo_loss(logps, torch.zeros_like(logps), A, torch.ones_like(logps), cfg.epsilon, cfg.epsilon_high)
loss.backward()
answer_1 = {(int(a), p) for a, g in zip(A.tolist(), logps.grad.tolist()) for p, x in zip(rho.tolist(), g) if x == 0}
notebook.check_explained(prediction_1, answer_1, teach.clip_why(cfg))

# %% [markdown]
# Token by token. The min keeps the smaller, **pessimistic** term: clipping removes the incentive to move further,
# never the pull back.

# %%
teach.clip_table(rho, A, logps.grad, loss, cfg)

# %% [markdown]
# **One real group**, the base's $G$ answers to a test question:

# %%
group = notebook.one_group(run)
print(f"q = {group.attrs['question']!r}   (gold answer {group.attrs['gold']})")
group

# %% [markdown]
# **By hand:** $A_1$ and $\sum_i A_i^2$.

# %%
r = group["reward r_i"].to_numpy()
by_hand = (r[0] - r.mean()) / (r.std(ddof=1) + 1e-4)  # sample std (ddof = 1), as torch.std uses
print(f"mean r = {r.mean():.3f}, std r = {r.std(ddof=1):.3f}:  A_1 by hand = {by_hand:.4f}, "
      f"package = {group['advantage A_i'].iloc[0]:.4f}")
print(f"Σ A_i² = {(group['advantage A_i'] ** 2).sum():.3f}, G − 1 = {len(r) - 1}")

# %% [markdown]
# **A group that teaches nothing.** If all $G$ answers are right (or all wrong), every $A_i = 0$: no gradient. The
# share of such groups, `frac_zero_std`, is the first diagnostic to read.

# %%
for rewards in ([1, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 1, 0, 1], [1] * 8):
    advantages = group_advantages(torch.tensor(rewards, dtype=torch.float64), len(rewards))
    print(f"r = {rewards}  →  A = {[round(a, 2) for a in advantages.tolist()]}")

# %% [markdown]
# ## 2. A federated round
#
# **FedAvg-GRPO** repeats for $R$ rounds:

# %%
diagrams.round_diagram("fedavg_grpo")

# %% [markdown]
# The server averages the clients' adapters. Each is weighted by its number of training examples $n_k$:
#
# $$\theta \leftarrow \sum_{k=1}^{K} \frac{n_k}{n}\,\theta_k,\qquad n = \sum_k n_k
# \qquad\text{(`fedrl_kit.aggregate.fedavg`)}$$
#
# **Who holds what.** Every client and the server hold the same frozen base model; only the **LoRA adapter** $\theta$
# trains and travels. It adds $\Delta W = (\texttt{lora\_alpha}/r_{\text{LoRA}})\,UD$ to each frozen weight $W$:
# $D$ (PEFT's `lora_A`) projects down to rank $r_{\text{LoRA}}$, $U$ (`lora_B`) back up (renamed: $A$ is the
# advantage). $U$ starts at 0, so round 0 *is* the base model. `reset_optimizer` gives each client fresh Adam
# moments every round: no optimizer state outlives a round.

# %%
teach.adapter_line(run)

# %% [markdown]
# **Averaging factors is not averaging updates.** The server averages $U$ and $D$ separately. A product of averages
# is not an average of products. Two clients, $1 \times 1$ factors:

# %%
from fedrl_kit.aggregate import fedavg

clients_UD = [{"U": np.array([[2.0]]), "D": np.array([[1.0]])}, {"U": np.array([[0.0]]), "D": np.array([[3.0]])}]
avg = fedavg(clients_UD, [1, 1])
updates = [(c["U"] @ c["D"]).item() for c in clients_UD]
print(f"client updates ΔW = UD: {updates}, their mean {np.mean(updates)}; "
      f"mean U × mean D = {(avg['U'] @ avg['D']).item()}")

# %% [markdown]
# Double. The gap is exactly the mean of $(U_k-\bar U)(D_k-\bar D)$. It is second order in the factors' spread.
#
# **How far the clients agree.** Client $k$ starts from the adapter sent, $UD$, and moves by $\Delta_k = U_kD_k-UD$.
# Up to that gap, the server's step is the mean update $\bar\Delta = \sum_k w_k\Delta_k$. The **agreement** compares
# its length with the clients' own:
#
# $$a = \frac{\lVert\bar\Delta\rVert}{\sum_k w_k\lVert\Delta_k\rVert}
# \qquad\text{(`fedrl_kit.lora_factors.factor_round`)}$$
#
# Each norm is taken over all adapted weights' $UD$ concatenated. $a = 1$ when all clients move alike. Two equal
# moves at right angles, $(1,0)$ and $(0,1)$, average to $(\tfrac12,\tfrac12)$, so $a = 1/\sqrt2$. $K$ equal moves at
# right angles give $\sqrt{\sum_k w_k^2}$: $1/\sqrt K$ for equal weights, more when one client dominates.
#
# Right angles are what noise gives. A client's update is mostly the noise of its few sampled prompts, and
# independent noise vectors in millions of dimensions are nearly orthogonal. A low agreement shortens the server's
# step.
#
# ### Exercise 2
#
# Three clients (equal weights) start from $UD=0$: $\Delta_1=\Delta_2=(1,0)$, $\Delta_3=(0,1)$. What is their
# agreement, to two decimals?

# %%
prediction_2 = None  # a number, e.g. 0.5 (within 0.01 counts as right)

# %%
from fedrl_kit.lora_factors import factor_round


def lora(u):  # one adapted 2 × 1 weight: U (2 × 1) times D = [[1]]
    return {"w.lora_A.weight": np.ones((1, 1)), "w.lora_B.weight": np.array(u, dtype=float).reshape(2, 1)}


answer_2 = round(factor_round(lora([0, 0]), [lora([1, 0]), lora([1, 0]), lora([0, 1])], [1, 1, 1])["agreement"], 2)
why_2 = (f"the mean update (2/3, 1/3) has length √5/3 = {np.sqrt(5) / 3:.3f} while each client moved 1: a = "
         f"{answer_2}, between 1/√3 = {1 / np.sqrt(3):.2f} (all at right angles) and 1 (all alike)")
notebook.check_explained(prediction_2, answer_2, why_2, tolerance=0.01)

# %% [markdown]
# **Pseudocode:**
# ```
# for round = 1..R:
#     send θ to every client
#     for each client k, in parallel:                          # GRPOClient.on_fit
#         for step = 1..τ:
#             sample b of its prompts, G answers each          # policy.rollout
#             r = verifier(answers); A = group advantages      # grpo.group_advantages
#             num_iterations clipped-surrogate passes on θ_k  # grpo.grpo_step
#         reply θ_k, n_k and metrics
#     θ = Σ_k (n_k / n) θ_k                                     # aggregate.fedavg
# ```
#
# ## 3. The world: who holds what

# %% tags=["nbval-check-output"]
notebook.examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# For each topic, proportions over the $K$ clients are drawn from Dirichlet($\alpha$), and the topic's training
# problems are split in them. With a small $\alpha$, a topic lands mostly on one or two clients. Rows: clients;
# columns: topics.

# %% tags=["nbval-check-output"]
notebook.client_table(run.partitions)

# %% [markdown]
# **Where there is room to learn.** The base's **pass@1** per topic: the fraction right of `eval_samples` sampled
# answers per test problem (temperature 1). Near 0 or 1, most groups teach nothing. **Greedy test accuracy** scores
# only the single likeliest answer: training that merely *sharpens* the model onto its likeliest answers raises
# pass@1, not greedy accuracy.

# %%
base_eval = run.evaluate_global(0)  # the evaluation the run does at round 0
display(teach.base_by_topic(run, base_eval))
teach.sampled_vs_greedy(run, base_eval)

# %%
fig = teach.bubbles(run, cfg.dirichlet_alpha)
viz.export(fig, "quickstart_heterogeneity", figures)
fig

# %% [markdown]
# ## 4. Run it
# After every round the global adapter answers the test problems. **Central-GRPO** is the same loop with one client
# holding all the data, $Kb$ prompts per step. One seed per method: no ± below includes seed-to-seed variance.
#
# **Noise rule:** a difference counts only beyond two standard errors (SE, over test problems; paired when two models
# answer the same problems).

# %%
records = run.run()
runs = {teach.NAMES[method]: records, **({"Central-GRPO": central.run()} if central else {})}
scores = teach.per_problem({name: (r, runs[name]) for name, r in zip(runs, (run, central))})
teach.results(runs, scores)

# %%
fig = teach.pass_curve(scores)
viz.export(fig, "quickstart_pass_at_1", figures)
fig

# %% [markdown]
# **Reading the curve:**

# %%
teach.reading_the_curve(scores, teach.NAMES[method])

# %% [markdown]
# ### Exercise 3
#
# Sampled pass@1 rose. Will **greedy** test accuracy (§3 gave the base's) end `"higher"`, the `"same"` (within
# ± 2 SE) or `"lower"`?

# %%
prediction_3 = None  # "higher", "same" or "lower"

# %%
answers_table, greedy = notebook.before_after(run, n=len(run.world.test))  # every test problem, greedy, both models
answer_3, why_3 = teach.greedy_answer(answers_table, greedy, scores[teach.NAMES[method]])
notebook.check_explained(prediction_3, answer_3, why_3)

# %% [markdown]
# ### The same questions, before and after
# The eight test questions whose sampled success changed most, with each model's greedy answer, then those whose
# greedy answer turned wrong:

# %%
shown = teach.answers_changed(answers_table, scores[teach.NAMES[method]], cfg.eval_samples)
display(shown, teach.answers_reading(answers_table, shown))
teach.turned_wrong(answers_table)

# %% [markdown]
# ### A real language model
# `-p base smollm2` runs FedAvg-GRPO on SmolLM2-135M-Instruct. Stored: three seeds, three clients, eight rounds,
# one-digit sums and maxima; ± (95 %) on the mean row. The chat model never writes the tags (format 0), so the
# verifier reads its last number. Only sampled pass@1 was stored: the gain may be sharpening, or learning to end on
# the answer, rather than learning to add.

# %%
notebook.stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# ## 5. Inside a round
# **Round 1 by hand** from the kept messages: $\sum_k w_k\theta_k$ per tensor, beside what the server sent next.

# %%
replies = [m for m in run.runtime.messages if m.kind == "fit_result" and m.round == 1]  # zero-shot sends none
if replies:
    w = np.array([run.server.sizes[m.sender] for m in replies], dtype=float)
    w /= w.sum()  # w_k = n_k / n
    by_hand = {k: sum(w_k * m.payload["adapter"][k] for w_k, m in zip(w, replies)) for k in replies[0].payload["adapter"]}
    server = next((m.payload["adapter"] for m in run.runtime.messages if m.kind == "fit" and m.round == 2),
                  run.server.global_state)  # the adapter the server sent next
    print(f"w_k = {np.round(w, 3).tolist()}; largest |by hand − server| = "
          f"{max(np.abs(by_hand[k] - server[k]).max() for k in by_hand):.1e}; √Σ w_k² = {np.sqrt((w ** 2).sum()):.3f}")

# %% [markdown]
# Every round: the agreement $a$, the mean cosine between two clients' updates, and §2's factor gap
# $\lVert\sum_k w_kU_kD_k-\bar U\bar D\rVert$ over $\lVert\bar\Delta\rVert$.

# %%
gaps = notebook.round_factor_gaps(run) if replies else None  # per round, from the kept messages
geometry = teach.update_geometry(run) if replies else None
display(teach.round_table(gaps, geometry), teach.round_words(gaps, geometry, cfg)) if replies else print("no adapters")

# %% [markdown]
# ### Noise or non-IID split?
# Noise-dominated updates give $a \approx \sqrt{\sum_k w_k^2}$ at every $\alpha$; a split that drove the clients
# apart would lower $a$ at small $\alpha$. Stored FedAvg-GRPO runs of this preset (`benchmarks/quickstart_alpha.py`);
# ± is the 95 % t interval over seeds:

# %%
display(teach.alpha_sweep())
teach.alpha_words()

# %% [markdown]
# ### Each client's view
#
# ### Exercise 4
#
# Which client had the highest mean `frac_zero_std`? Use §3's split and the base's pass@1 per topic.

# %%
prediction_4 = None  # a client's name, e.g. "client_0"

# %%
answer_4, why_4 = teach.frac_zero_answer(records, run, base_eval)
notebook.check_explained(prediction_4, answer_4, why_4)

# %% [markdown]
# Per round, on each client's *own* rollouts: train reward (`accuracy` in the records) beside the global test
# pass@1, and `frac_zero_std`:

# %%
fig = teach.client_grid(records) if replies else None
viz.export(fig, "quickstart_clients", figures) if fig else None
display(fig, teach.client_spike(records, cfg)) if fig else print("no client trains")

# %% [markdown]
# ### What travels
# Each round $\theta$ goes down to every client; $\theta_k$, $n_k$ and a few metrics come back up.
#
# ### Exercise 5
#
# How many bytes does one client send up per round? (§2 printed the adapter's size; float32.)

# %%
prediction_5 = None  # a number of bytes, e.g. 100_000 (within 2 % counts as right)

# %%
answer_5, why_5 = teach.bytes_answer(run, gaps)
notebook.check_explained(prediction_5, answer_5, why_5, tolerance=0.02 * (answer_5 or 0))

# %% [markdown]
# ## 6. What this run shows

# %%
teach.takeaways(runs, teach.NAMES[method], scores, gaps, greedy, answers_table, geometry)

# %% [markdown]
# ## Where next
# Rerun with `-p method fedprox_grpo`: FedProx adds $\frac{\mu}{2}\lVert\theta_k-\theta\rVert^2$ to each client's
# loss. Then the papers: [FedGRPO](01_fedgrpo_expert_selection.ipynb) sends scores instead of adapters,
# [PubSwap](02_pubswap_balanced_drift.ipynb) pulls drifting clients together with public prompts,
# [FedMOA](03_fedmoa_pareto.ipynb) balances several rewards.
