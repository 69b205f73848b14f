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
# **The problem.** We want to teach a language model to solve problems whose answers a program can check (sums,
# code with tests): *reinforcement learning with verifiable rewards*. The training problems sit on several
# **clients** (hospitals, companies, phones) that will not hand them over. **Federated GRPO** trains anyway: every
# client improves the shared model on its own problems with GRPO, and a **server** only ever sees model updates.
#
# This notebook teaches the two ideas every paper notebook builds on, then runs them on a laptop:
#
# 1. **GRPO's group-relative advantage**: the formula, a group worked by hand, and why a group whose answers all
#    score the same teaches nothing;
# 2. **a federated round**: a diagram, its equation and its pseudocode;
# 3. **one run** of FedAvg-GRPO (a few minutes on 2 CPU cores), the same questions before and after, and what
#    crossed the wire;
# 4. two exercises, each with a cell that checks your prediction.
#
# Everything runs offline in the **embedded world**: procedurally generated arithmetic problems in seven topics,
# and a tiny 1.6 M-parameter policy warm-started into a weak base, so that training has room to show.

# %% [markdown]
# ## Parameters
# The cell below is tagged `parameters`: papermill overrides it (`papermill 00_quickstart.ipynb out.ipynb -p
# rounds 12`), and a name it does not have stops the notebook in one line. `docs/class-guide.md` says what each
# preset costs.

# %% tags=["parameters"]
preset_name = "quick"   # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
base = ""               # "": the preset's model; "smollm2": SmolLM2-135M-Instruct, a real LM, on the CPU
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo | central_grpo | zero_shot
num_clients = None      # K clients (None: the preset's)
rounds = None           # communication rounds R (None: the preset's)
local_steps = None      # τ local GRPO steps per round (None: the preset's)
seed = 0                # one seed: one world, partition and run, bit for bit
run_dir = ""            # where the run goes ("": runs/quickstart/<one folder per set of parameters>)
figures_dir = ""        # where figures go ("": the run folder's figures/)
reference_path = False  # True: the plain sampler and scorer that fedrl_kit/rollout.py spells out (slower)

# %%
import pandas as pd
import torch

from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.config import REAL_LM
from fedrl_kit.grpo import group_advantages
from fedrl_kit.runs import Run
from fedrl_kit.world.partition import topic_matrix

NAMES = {"fedavg_grpo": "FedAvg-GRPO", "fedprox_grpo": "FedProx-GRPO", "central_grpo": "Central-GRPO",
         "zero_shot": "Zero-shot"}  # the methods this notebook runs, as the papers name them
cfg, run_dir, figures = notebook.setup(
    "quickstart", globals(), smoke="quickstart", setting=REAL_LM if base == "smollm2" else None,
    choices={"method": NAMES, "base": ("",) if "full" in preset_name else ("", "smollm2")},
    words=(base, method), folder=dict(k=num_clients, r=rounds, t=local_steps, s=seed, reference=reference_path))
run = Run(cfg, run_dir, progress=False).build()
summary_fields = ("base", "num_clients", "rounds", "local_steps", "prompts_per_step", "num_generations", "learning_rate",
         "dirichlet_alpha")
pd.Series({k: cfg.to_dict()[k] for k in summary_fields}, name="value").to_frame()

# %% [markdown]
# ## 1. GRPO: score a group of answers against each other
#
# For one prompt $q$ the model samples a **group** of $G$ answers $o_1,\dots,o_G$ and a verifier scores each:
# $r_i = 1$ if answer $i$ is right, else $0$. GRPO needs no value network: an answer's **advantage** is how much
# better it scored than its own group,
#
# $$A_i = \frac{r_i - \operatorname{mean}(r_1,\dots,r_G)}{\operatorname{std}(r_1,\dots,r_G) + 10^{-4}}
# \qquad\text{(`fedrl_kit.grpo.group_advantages`)}$$
#
# and the update raises the probability of every token of an answer with $A_i>0$ and lowers it where $A_i<0$, with
# PPO's clipped importance ratio $\rho_t = \pi_\theta(o_t\mid q, o_{<t}) / \pi_{\text{old}}(o_t\mid q, o_{<t})$
# (the policy now over the policy that sampled):
#
# $$\mathcal{L}(\theta) = -\frac{1}{\sum_i |o_i|}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|}
# \min\bigl(\rho_t A_i,\ \operatorname{clip}(\rho_t, 1-\epsilon, 1+\epsilon_{\text{high}})\,A_i\bigr)
# \qquad\text{(`fedrl_kit.grpo.grpo_loss`)}$$
#
# Here is one real group: the base model's $G$ answers to a test question, scored and turned into advantages by the
# function a local step calls (`notebook.one_group` picks the first question whose group holds both right and
# wrong answers).

# %%
group = notebook.one_group(run)
print(f"q = {group.attrs['question']!r}   (gold answer {group.attrs['gold']})")
group

# %% [markdown]
# **By hand.** Take the mean and the sample standard deviation of the reward column and compute the first answer's
# advantage yourself; the package's number is beside it.

# %%
r = group["reward r_i"].to_numpy()
by_hand = (r[0] - r.mean()) / (r.std(ddof=1) + 1e-4)  # sample std (ddof = 1), as torch.std and TRL use
print(f"mean r = {r.mean():.3f}, std r = {r.std(ddof=1):.3f}:  A_1 by hand = {by_hand:.4f}, "
      f"package = {group['advantage A_i'].iloc[0]:.4f}")

# %% [markdown]
# **A group that teaches nothing.** If all $G$ answers are right (or all wrong), every $r_i$ equals the mean, every
# $A_i = 0$, and the loss has no gradient: the prompt was too easy (or too hard) for the model. The fraction of such
# groups, `frac_zero_std`, is the first diagnostic to read in any GRPO run.

# %%
for rewards in ([1, 1, 1, 1, 0, 1, 0, 1], [1] * 8):
    advantages = group_advantages(torch.tensor(rewards, dtype=torch.float64), len(rewards))
    print(f"r = {rewards}  →  A = {[round(a, 2) for a in advantages.tolist()]}")

# %% [markdown]
# ## 2. A federated round
#
# **FedAvg-GRPO** (the baseline of all three papers) repeats for $R$ rounds:

# %%
diagrams.round_diagram("fedavg_grpo")

# %% [markdown]
# The server's average weighs each client's adapter by its number of training examples $n_k$:
#
# $$\theta \leftarrow \sum_{k=1}^{K} \frac{n_k}{n}\,\theta_k,\qquad n = \sum_k n_k
# \qquad\text{(`fedrl_kit.aggregate.fedavg`)}$$
#
# where $\theta$ is not the whole model but its **LoRA adapter**, two small matrices $(A, B)$ per layer added to a
# frozen base: only they train and travel.
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$ | number of clients, one client |
# | $R$, $\tau$ | communication rounds; local GRPO steps per round |
# | $b$, $G$ | prompts per local step; answers per prompt (the group) |
# | $r_i$, $A_i$ | reward and advantage of answer $i$ in its group |
# | $\theta$, $\theta_k$ | the global LoRA adapter; client $k$'s after its local steps |
# | $n_k$ | training examples client $k$ holds |
# | $\beta$ | Dirichlet concentration of the topic split (config `dirichlet_alpha`): small β, few topics per client |
#
# **Pseudocode** (`fedrl_kit/methods/fedavg_grpo.py::run_round`):
# ```
# for round = 1..R:
#     send θ to every client                                   # a "fit" message (fedrl_kit.federation)
#     for each client k, in parallel:                          # GRPOClient.on_fit
#         for step = 1..τ:
#             sample b of its prompts, G answers each          # policy.rollout
#             r = verifier(answers); A = group advantages      # rewards.accuracy_reward, grpo.group_advantages
#             one clipped-surrogate step on θ_k                # grpo.grpo_step
#         reply θ_k and n_k
#     θ = Σ_k (n_k / n) θ_k                                     # aggregate.fedavg
# ```

# %% [markdown]
# ## 3. The world: who holds what
# Every problem has one exact answer; topics play the role of a real dataset's subjects. The base solves `max` and
# `count` problems sometimes, `add`, `mul` and `seq` rarely.

# %%
# NBVAL_CHECK_OUTPUT
notebook.examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# The training problems are split over the clients with a Dirichlet distribution over topics (concentration β):
# each client holds mostly a few topics, so the clients disagree about what to learn. Rows are clients, columns
# topics; the bubble plot shows the same table.

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(run.partitions)

# %%
fig = viz.heterogeneity_bubbles(*topic_matrix(run.partitions),
                                title=f"topics per client (Dirichlet β = {cfg.dirichlet_alpha})")
viz.export(fig, "quickstart_heterogeneity", figures)
fig

# %% [markdown]
# ## 4. Run it
# Round 0 is the base policy; after every round the global adapter answers the held-out test problems
# (pass@1: the mean correctness of sampled answers).

# %%
records = run.run()
summary = notebook.headline(records)
if method != "zero_shot" and not notebook.is_smoke(preset_name):  # zero-shot trains nothing; smoke is too small
    assert summary["final pass@1"] > summary["base pass@1"], "pass@1 did not rise: training is broken"
pd.Series(summary).to_frame(NAMES[method])

# %%
fig = viz.curves({NAMES[method]: records}, "pass@1", title="global pass@1 on the held-out test split")
viz.export(fig, "quickstart_pass_at_1", figures)
fig

# %% [markdown]
# ### The same questions, before and after
# The base model (round 0) and the trained one answer the first held-out questions greedily (each its single most
# likely answer), then over the whole test split.

# %%
answers_table, greedy_accuracy = notebook.before_after(run, n=8)
display(answers_table)
greedy_accuracy.to_frame()

# %% [markdown]
# Compare the greedy accuracies with the sampled pass@1 of the curve: where the sampled one rose more, GRPO mostly
# moved probability onto answers the model could already give ("sharpening", reported for real models too: Yue
# et al., 2025).
#
# ### Each client's view
# Each client's accuracy on its *own* rollouts (its own topics); pick a client to see its diagnostics round by
# round. `frac_zero_std` is the fraction of its groups that taught nothing (§1).

# %%
import ipywidgets as widgets

client_df = pd.DataFrame([r for r in records if r["kind"] == "client"])
clients = sorted(client_df.client.unique()) if len(client_df) else []  # zero-shot trains no client
cols = ["round", "accuracy", "reward_mean", "frac_zero_std", "clip_fraction", "completion_length"]


def show_client(client):
    mine = [r for r in records if r["kind"] == "global" or r.get("client") == client]  # its rounds + global pass@1
    fig = viz.client_curves(mine)
    fig.update_layout(title=f"{client}: local training per round (global pass@1 dashed)", height=360)
    fig.show(renderer="plotly_mimetype")
    display(client_df[client_df.client == client][cols].round(3).reset_index(drop=True))


notebook.knobs(show_client, client=widgets.Dropdown(options=clients)) if clients else print("no client trains")

# %% [markdown]
# ### What crossed the wire
# The ledger of the runtime records every message: FedAvg-GRPO moves the LoRA factors down and up every round, and
# nothing else.

# %%
fig = viz.communication_bars(run.runtime.ledger.bytes_by_kind(), title="bytes by message kind (all rounds)")
viz.export(fig, "quickstart_communication", figures)
fig

# %% [markdown]
# ### A real language model
# `-p base smollm2` runs every cell above on SmolLM2-135M-Instruct (three clients, one-digit sums and maxima, eight
# rounds of one local step). The stored measurement over three seeds (`benchmarks/real_lm_learns.py`): the last row
# is the mean gain with its 95 % Student-t half-width.

# %%
notebook.stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# ## 5. Exercises: predict, then run
# Write your prediction in the first cell, run the second to compute the answer and the third to check.
#
# **Exercise 1.** A group of $G = 4$ answers scores $r = (1, 0, 0, 0)$. What is the advantage of the one right
# answer, to two decimals? (Hint: the sample std of $(1,0,0,0)$ is $0.5$.)

# %%
prediction_1 = None  # a number, e.g. 0.75

# %%
answer_1 = round(float(group_advantages(torch.tensor([1.0, 0, 0, 0], dtype=torch.float64), 4)[0]), 2)
notebook.check(prediction_1, answer_1, "(1 − 0.25) / 0.5 = 1.5: a rare right answer gets a large push.")

# %% [markdown]
# **Exercise 2.** Which client's groups taught it nothing most often (the highest mean `frac_zero_std` over its
# rounds)? Predict from the client table of §3 alone: a client holding easy topics gets all-right groups, one
# holding hard topics all-wrong ones.

# %%
prediction_2 = None  # a client's name, e.g. "client_0"

# %%
zero = client_df.groupby("client").frac_zero_std.mean() if clients else pd.Series(dtype=float)
answer_2 = zero.idxmax() if len(zero) else None
display(zero.round(3).to_frame("mean frac_zero_std"))
notebook.check(prediction_2, answer_2, "Its topics are all easy or all hard for the model, so most groups agree.")

# %% [markdown]
# ## Where next
# - `01_fedgrpo_expert_selection.ipynb`: the server trains; clients only send scalar rewards.
# - `02_pubswap_balanced_drift.ipynb`: shared public prompts and swapped answers against client drift.
# - `03_fedmoa_pareto.ipynb`: several rewards per client, weights that adapt, and their Pareto fronts.
#
# The same run from a shell: `fedrl run --method fedavg_grpo --preset quick`.
