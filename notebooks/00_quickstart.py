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
# # Federated GRPO in one sitting
#
# **The problem.** We want to teach a language model to solve problems a program can check (*reinforcement learning
# with verifiable rewards*), but the training problems sit on **clients** (hospitals, companies, phones) that will not
# share them. **Federated GRPO** trains anyway: each client improves a shared LoRA adapter on its own problems with
# GRPO and sends the **server** its whole adapter, its example count $n_k$ and a few metrics, never a problem.
#
# This notebook teaches **FedAvg-GRPO**, the baseline that FedGRPO, PubSwap and FedMOA (notebooks 01–03) build on,
# and runs it for a few minutes on a CPU, offline: arithmetic problems in seven topics with exact answers, and a tiny
# 1.6 M-parameter policy, the **base**, trained by supervised learning until it solves some problems.

# %% [markdown]
# ## Parameters
# Edit here and rerun (from a shell, papermill sets them: `-p dirichlet_alpha 100`).

# %% tags=["parameters"]
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo (§2) | central_grpo (GRPO on the pooled data) | zero_shot
num_clients = None      # K clients (None: the preset's)
rounds = None           # communication rounds R (None: the preset's)
local_steps = None      # τ local GRPO steps per round (None: the preset's)
dirichlet_alpha = None  # α of the topic split, > 0: small, each client holds few topics (None: the preset's)
seed = 0                # one seed: one world, partition and run, bit for bit
# where and how it runs
preset_name = "quick"   # quick (2-core CPU) | smoke (seconds) | full, full-smoke (GPU)
base = ""               # "": the preset's model; "smollm2": SmolLM2-135M-Instruct, a real LM, on the CPU
run_dir = ""            # "": runs/quickstart/<one folder per set of parameters>
figures_dir = ""        # "": the run folder's figures/
reference_path = False  # True: the plain, slower sampler and scorer of fedrl_kit/rollout.py

# %%
import dataclasses

import numpy as np
import torch

from experiments import teaching_quickstart as teach
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.config import REAL_LM
from fedrl_kit.grpo import group_advantages
from fedrl_kit.runs import Run

# reads the parameters above (a bad one stops here, in one line); returns the config and the folders it writes to
cfg, run_dir, figures = notebook.setup(
    "quickstart", globals(), smoke="quickstart", setting=REAL_LM if base == "smollm2" else None,
    choices={"method": teach.NAMES, "base": ("",) if "full" in preset_name else ("", "smollm2")},
    words=(base, method), folder=dict(k=num_clients, r=rounds, t=local_steps, a=dirichlet_alpha, s=seed, reference=reference_path))
run = Run(cfg, run_dir, progress=False).build()
run.runtime.keep_messages = True  # keep every message, so that §4 can measure the round on this run
compare = method in ("fedavg_grpo", "fedprox_grpo")  # then also Central-GRPO: same seed, sizes and budget
central = Run(dataclasses.replace(cfg, method="central_grpo"), None, progress=False).build() if compare else None
teach.settings(cfg)  # §1–2 explain each

# %% [markdown]
# ## 1. GRPO: score a group of answers against each other
#
# For one prompt $q$ the model samples a **group** of $G$ answers $o_1,\dots,o_G$; a verifier gives $r_i = 1$ if the
# answer it extracts (inside `<answer>…</answer>`, else the last number) is right, else $0$. The **format rate**,
# measured but not rewarded, is the fraction of answers shaped `<think>…</think><answer>…</answer>`. GRPO is PPO's
# clipped surrogate without the value network: an answer's **advantage** is how much better it scored than its own
# group. Dividing by the group's std makes $\sum_i A_i^2 \approx G-1$ in every group with any spread, whether one
# answer in eight is right or four:
#
# $$A_i = \frac{r_i - \operatorname{mean}(r_1,\dots,r_G)}{\operatorname{std}(r_1,\dots,r_G) + 10^{-4}}
# \qquad\text{(`fedrl_kit.grpo.group_advantages`)}$$
#
# A local step takes $b$ prompts (`prompts_per_step`), raising the probability of every token of an answer with
# $A_i>0$, lowering it where $A_i<0$; its loss over $bG$ answers is
#
# $$\mathcal{L}(\theta) = -\frac{1}{\sum_i |o_i|}\sum_{i}\sum_{t=1}^{|o_i|}
# \min\bigl(\rho_{i,t}A_i,\ \operatorname{clip}(\rho_{i,t},1-\epsilon,1+\epsilon_{\text{high}})\,A_i\bigr),
# \qquad \rho_{i,t} = \frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{\text{old}}(o_{i,t}\mid q,o_{i,<t})}
# \qquad\text{(`fedrl_kit.grpo.grpo_loss`)}$$
#
# - **a token-level mean** (`loss_type = "dapo"`, after DAPO, a GRPO variant): every token weighs the same ($|o_i|$
#   counts tokens), and groups with no spread still count in $\sum_i |o_i|$, diluting the rest;
# - **the ratio** $\rho$ of the policy now to $\pi_{\text{old}}$, the one that sampled: each step makes
#   `num_iterations` gradient passes over fresh answers; from the second $\rho \ne 1$, and the **clip** stops a token's
#   push once $\rho > 1+\epsilon_{\text{high}}$ (if $A_i>0$) or $\rho < 1-\epsilon$ (if $A_i<0$);
#   $\epsilon_{\text{high}} > \epsilon$ is DAPO's *clip-higher*; `clip_fraction` is the share clipped;
# - **no KL penalty** $\beta\,\mathrm{KL}(\pi_\theta\|\pi_{\text{base}})$: $\beta = 0$.
#
# Adam optimises (`learning_rate`), its moments reset every round. One real group (the base's $G$ answers to a test
# question, scored as a local step scores them), and this run's settings:

# %%
group = notebook.one_group(run)
print({k: cfg.to_dict()[k] for k in ("rewards", "loss_type", "epsilon", "epsilon_high", "beta", "num_iterations",
                                     "learning_rate", "reset_optimizer")})
print(f"q = {group.attrs['question']!r}   (gold answer {group.attrs['gold']})")
group

# %% [markdown]
# **By hand:** the first answer's advantage, from the rewards' mean and sample standard deviation.

# %%
r = group["reward r_i"].to_numpy()
by_hand = (r[0] - r.mean()) / (r.std(ddof=1) + 1e-4)  # sample std (ddof = 1), as torch.std and TRL use
print(f"mean r = {r.mean():.3f}, std r = {r.std(ddof=1):.3f}:  A_1 by hand = {by_hand:.4f}, "
      f"package = {group['advantage A_i'].iloc[0]:.4f}")

# %% [markdown]
# **A group that teaches nothing.** All $G$ answers right (or all wrong): every $A_i = 0$, no gradient; the prompt
# was too easy (or too hard). Their fraction, `frac_zero_std`, is the first diagnostic to read.

# %%
for rewards in ([1, 1, 1, 1, 0, 1, 0, 1], [1] * 8):
    advantages = group_advantages(torch.tensor(rewards, dtype=torch.float64), len(rewards))
    print(f"r = {rewards}  →  A = {[round(a, 2) for a in advantages.tolist()]}")

# %% [markdown]
# ## 2. A federated round
#
# **FedAvg-GRPO** repeats for $R$ rounds:

# %%
diagrams.round_diagram("fedavg_grpo")

# %% [markdown]
# The server's average weighs each client's adapter by its number of training examples $n_k$:
#
# $$\theta \leftarrow \sum_{k=1}^{K} \frac{n_k}{n}\,\theta_k,\qquad n = \sum_k n_k
# \qquad\text{(`fedrl_kit.aggregate.fedavg`)}$$
#
# where $\theta$ is the **LoRA adapter**: a frozen weight $W$ gets $\Delta W = UD$ (times
# `lora_alpha`$/r_{\text{LoRA}}$), $D$ projecting down to rank $r_{\text{LoRA}}$ (PEFT's `lora_A`), $U$ back up
# (`lora_B`; renamed so that $A$ stays the advantage). $U$ starts at 0: round 0 *is* the base model.
# FedProx-GRPO adds to each client's loss a pull $\frac{\mu}{2}\lVert\theta_k-\theta\rVert^2$ toward the global
# adapter. Only the factors train and travel:

# %%
teach.adapter_shapes(run.initial_state)  # layer 0's factors; every layer has the same modules

# %% [markdown]
# **Averaging factors is not averaging updates.** The server averages $U$ and $D$ *separately* (as does FedIT,
# federated instruction tuning, with equal weights), and a product of averages is not an average of products. Two
# clients, $1 \times 1$ factors:

# %%
from fedrl_kit.aggregate import fedavg

clients_UD = [{"U": np.array([[2.0]]), "D": np.array([[1.0]])}, {"U": np.array([[0.0]]), "D": np.array([[3.0]])}]
avg = fedavg(clients_UD, [1, 1])
updates = [(c["U"] @ c["D"]).item() for c in clients_UD]
print(f"client updates ΔW = UD: {updates}, their mean {np.mean(updates)}; "
      f"mean U × mean D = {(avg['U'] @ avg['D']).item()}")

# %% [markdown]
# The product of the averages is double the average of the products; the gap is exactly the mean of
# $(U_k-\bar U)(D_k-\bar D)$, second order in how far the clients' factors spread (§4 measures it).
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$ | number of clients, one client |
# | $R$, $\tau$ | communication rounds; local GRPO steps per round |
# | $b$, $G$ | prompts per local step; answers per prompt (the group) |
# | $r_i$, $A_i$ | reward and advantage of answer $i$ in its group |
# | $\rho$, $\epsilon$, $\epsilon_{\text{high}}$ | probability ratio; its clip range |
# | $\beta$ | KL coefficient (0 here) |
# | $\theta$, $\theta_k$ | global LoRA adapter; client $k$'s after its steps |
# | $D$, $U$, $r_{\text{LoRA}}$ | LoRA's down and up factors; its rank |
# | $n_k$, $w_k$ | client $k$'s training examples; its weight $n_k/n$ |
# | $\alpha$ | Dirichlet concentration of the topic split |
#
# **Pseudocode** (`fedrl_kit/methods/fedavg_grpo.py::run_round`):
# ```
# each client k reports n_k once                              # "properties" message
# for round = 1..R:
#     send θ to every client                                   # "fit" message
#     for each client k, in parallel:                          # GRPOClient.on_fit
#         for step = 1..τ:
#             sample b of its prompts, G answers each          # policy.rollout
#             r = verifier(answers); A = group advantages      # grpo.group_advantages
#             num_iterations clipped-surrogate passes on θ_k  # grpo.grpo_step
#         reply θ_k, n_k and metrics
#     θ = Σ_k (n_k / n) θ_k                                     # aggregate.fedavg
# ```

# %% [markdown]
# ## 3. The world: who holds what
# Topics play the role of a real dataset's subjects.

# %%
notebook.examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# Each topic's training problems are split over the clients in proportions drawn from a Dirichlet distribution
# (concentration $\alpha$; small $\alpha$: a topic lands mostly on one or two clients), so the clients disagree about
# what to learn. Rows are clients, columns topics; the bubbles below show the same.

# %%
notebook.client_table(run.partitions)

# %% [markdown]
# **Where there is room to learn.** The base's **pass@1** per topic: the fraction right of `eval_samples` answers
# sampled per test problem at temperature 1. Near 0 or 1, most groups teach nothing. Sampled pass@1 also rises when
# training merely *sharpens* the model onto answers it already gives most often; greedy accuracy (its most likely
# answer) does not.

# %%
base_eval = run.evaluate_global(0)  # the evaluation the run does at round 0
teach.base_by_topic(run, base_eval)

# %%
fig = teach.bubbles(run, cfg.dirichlet_alpha)
viz.export(fig, "quickstart_heterogeneity", figures)
fig

# %% [markdown]
# ## 4. Run it
# After every round the global adapter answers the test problems (pass@1). **Central-GRPO** runs the same loop with
# one client holding all data and $Kb$ prompts per step: **one run each, one seed**. One noise rule throughout: a
# difference counts only beyond two standard errors (SE), about 95 % confidence.

# %%
records = run.run()
runs = {teach.NAMES[method]: records, **({"Central-GRPO": central.run()} if compare else {})}
n_answers = len(run.world.test) * cfg.eval_samples  # sampled answers per evaluation: the SE's n
teach.results(runs, n_answers)

# %%
fig = teach.pass_curve(runs, n_answers)
viz.export(fig, "quickstart_pass_at_1", figures)
fig

# %% [markdown]
# **Reading the curve:**

# %%
gaps = notebook.round_factor_gaps(run) if method != "zero_shot" else None  # per round, from the kept messages
teach.reading_the_curve(runs, teach.NAMES[method], cfg, n_answers, gaps)

# %% [markdown]
# ### Inside a round
# With $UD$ the adapter sent, client $k$'s update is $\Delta_k = U_kD_k-UD$, the mean update
# $\bar\Delta = \sum_k w_k\Delta_k$. Rows: §2's gap $\lVert\sum_k w_kU_kD_k-\bar U\bar D\rVert$ over the adapter
# $\lVert\sum_k w_kU_kD_k\rVert$, then over $\lVert\bar\Delta\rVert$; the **agreement**
# $\lVert\bar\Delta\rVert/\sum_k w_k\lVert\Delta_k\rVert$. Round 1 starts from $U = 0$, so there the adapter *is* the
# update and the first two rows agree; later the adapter accumulates and the first row shrinks.

# %%
display(teach.round_table(gaps)) if gaps is not None else print("zero-shot sends no adapters")
teach.round_words(gaps) if gaps is not None else None

# %% [markdown]
# ### Each client's view
# Per round, on its *own* rollouts: `accuracy` (mean reward) and `frac_zero_std` (§1); the first client here, any
# client from the menu in a running kernel.

# %%
teach.client_view(records, figures)

# %% [markdown]
# ### What crossed the wire
# The runtime's ledger: the adapter goes down (`fit`) and up (`fit_result`) every round; $n_k$ once before round 1
# (`properties_result`), checked against the $n_k$ each reply repeats.

# %%
teach.wire(run)

# %% [markdown]
# ### The same questions, before and after
# Base and trained model answer every test question greedily (their most likely answer); the first eight:

# %%
answers_table, greedy = notebook.before_after(run, n=len(run.world.test))
display(answers_table.head(8))
greedy.to_frame()

# %% [markdown]
# ### A real language model
# `-p base smollm2` runs this on SmolLM2-135M-Instruct. Stored: three seeds on a smaller task (three clients,
# one-digit sums and maxima, eight rounds). Format stays 0: this chat model never writes the tags; only answers
# are rewarded.

# %%
notebook.stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# ## 5. What this run shows

# %%
teach.takeaways(runs, teach.NAMES[method], n_answers, gaps, greedy, answers_table)

# %% [markdown]
# ## 6. Exercises: predict, then run
# Predict in the first cell; the second checks it.
#
# ### Exercise 1
#
# A group of $G = 4$ answers scores $r = (1, 0, 0, 0)$. What is the advantage of the one right
# answer, to two decimals?

# %%
prediction_1 = None  # a number, e.g. 0.75

# %%
r1 = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64)
answer_1 = round(float(group_advantages(r1, 4)[0]), 2)
why_1 = (f"mean r = {r1.mean():.2f} and sample std = {r1.std():.2f}, so A = (1 − {r1.mean():.2f}) / "
         f"({r1.std():.2f} + 0.0001) ≈ {answer_1}: the one right answer of a mostly wrong group gets a large push, the "
         f"three wrong ones {float(group_advantages(r1, 4)[1]):.2f} each")
notebook.check(prediction_1, answer_1, why_1) if prediction_1 is not None else notebook.reveal(answer_1, why_1)

# %% [markdown]
# ### Exercise 2
#
# Which client had the highest mean `frac_zero_std` over its rounds? Predict from §3: the client table and the base's
# pass@1 per topic.

# %%
prediction_2 = None  # a client's name, e.g. "client_0"

# %%
answer_2, why_2 = teach.frac_zero_answer(records, run, base_eval)
notebook.check(prediction_2, answer_2, why_2) if prediction_2 is not None else notebook.reveal(answer_2, why_2)

# %% [markdown]
# ### Exercise 3
#
# How many bytes does one client send up per round? Predict from §2's adapter size and its dtype
# (float32).

# %%
prediction_3 = None  # a number of bytes, e.g. 100_000 (within 2 % counts as right)

# %%
answer_3, why_3 = teach.bytes_answer(run, gaps)
notebook.check(prediction_3, answer_3, why_3, tolerance=0.02 * (answer_3 or 0)) if prediction_3 is not None \
    else notebook.reveal(answer_3, why_3)

# %% [markdown]
# ### Exercise 4
#
# Two clients (equal weights) start from $UD=0$ and move equally far at right angles: $\Delta_1=(1,0)$,
# $\Delta_2=(0,1)$. What is their agreement, to two decimals?

# %%
prediction_4 = None  # a number, e.g. 0.5

# %%
from fedrl_kit.lora_factors import factor_round


def lora(u):  # one adapted 2 × 1 weight: U (2 × 1) times D = [[1]]
    return {"w.lora_A.weight": np.ones((1, 1)), "w.lora_B.weight": np.array(u, dtype=float).reshape(2, 1)}


answer_4 = round(factor_round(lora([0, 0]), [lora([1, 0]), lora([0, 1])], [1, 1])["agreement"], 2)
why_4 = (f"the mean update (1/2, 1/2) has length {np.sqrt(0.5):.2f} while each client moved 1: the server's step is "
         f"{answer_4:.0%} as long as each client's (K clients at right angles: 1/√K)")
notebook.check(prediction_4, answer_4, why_4) if prediction_4 is not None else notebook.reveal(answer_4, why_4)

# %% [markdown]
# ## Where next
# **Open question (no stored answer):** is the low agreement the non-IID split or small noisy batches? Rerun at
# `-p dirichlet_alpha 100` (near-equal shares) and `0.1`, two seeds each: if the split drives it, agreement rises at
# α = 100 and falls at 0.1. Next: `01_fedgrpo_expert_selection.ipynb`, `02_pubswap_balanced_drift.ipynb`,
# `03_fedmoa_pareto.ipynb`.

