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
# code with tests): *reinforcement learning with verifiable rewards* (the reward is a program's verdict, not a
# learned model's opinion). The training problems sit on several
# **clients** (hospitals, companies, phones) that will not hand them over. **Federated GRPO** trains anyway: every
# client improves the shared model on its own problems with GRPO, and a **server** only ever sees model updates.
#
# This notebook teaches the two ideas every paper notebook builds on, **GRPO's group-relative advantage** (§1)
# and **a federated round** (§2), then runs FedAvg-GRPO for a few minutes on 2 CPU cores (§3–4) and ends with two
# exercises.
#
# Everything runs offline in the **embedded world**, the small world the package ships with (`fedrl_kit/world`):
# procedurally generated arithmetic problems in seven topics, each with one exact answer, and a tiny 1.6 M-parameter
# policy warm-started into a weak base (`data/base`), so that training has room to show in minutes on a CPU.

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p rounds 12`); a name it does not have stops the notebook in one line.
# `docs/class-guide.md` says what each preset costs.

# %% tags=["parameters"]
preset_name = "quick"   # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
base = ""               # "": the preset's model; "smollm2": SmolLM2-135M-Instruct, a real LM, on the CPU
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo (+ a pull μ/2·‖θ_k − θ‖² toward the global adapter) |
                        # central_grpo (Central-GRPO: plain GRPO on all clients' data pooled, the upper bound) | zero_shot
num_clients = None      # K clients (None: the preset's)
rounds = None           # communication rounds R (None: the preset's)
local_steps = None      # τ local GRPO steps per round (None: the preset's)
seed = 0                # one seed: one world, partition and run, bit for bit
run_dir = ""            # where the run goes ("": runs/quickstart/<one folder per set of parameters>)
figures_dir = ""        # where figures go ("": the run folder's figures/)
reference_path = False  # True: the plain sampler and scorer that fedrl_kit/rollout.py spells out (slower)

# %%
import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown

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
                  "dirichlet_alpha", "rewards", "epsilon", "epsilon_high", "beta", "loss_type", "num_iterations",
                  "lora_rank", "lora_alpha", "eval_samples")
pd.Series({k: cfg.to_dict()[k] for k in summary_fields}, name="value").to_frame()

# %% [markdown]
# ## 1. GRPO: score a group of answers against each other
#
# For one prompt $q$ the model samples a **group** of $G$ answers $o_1,\dots,o_G$ and a verifier scores each:
# $r_i = 1$ if the answer it extracts (inside `<answer>…</answer>`, else the last number) equals the gold one, else
# $0$ (config `rewards`: accuracy only). The **format rate** reported below is a separate, unrewarded measurement: the
# fraction of answers shaped exactly `<think>…</think><answer>…</answer>` (the *format reward* other runs add).
# GRPO needs no value network: an answer's **advantage** is how much better it scored than its own group,
#
# $$A_i = \frac{r_i - \operatorname{mean}(r_1,\dots,r_G)}{\operatorname{std}(r_1,\dots,r_G) + 10^{-4}}
# \qquad\text{(`fedrl_kit.grpo.group_advantages`)}$$
#
# and the update raises the probability of every token of an answer with $A_i>0$ and lowers it where $A_i<0$.
# The loss this package minimises, over all $b \cdot G$ answers of a local step, is
#
# $$\mathcal{L}(\theta) = -\frac{1}{\sum_i |o_i|}\sum_{i}\sum_{t=1}^{|o_i|}
# \min\bigl(\rho_{i,t} A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\epsilon, 1+\epsilon_{\text{high}})\,A_i\bigr),
# \qquad \rho_{i,t} = \frac{\pi_\theta(o_{i,t}\mid q, o_{i,<t})}{\pi_{\text{old}}(o_{i,t}\mid q, o_{i,<t})}
# \qquad\text{(`fedrl_kit.grpo.grpo_loss`)}$$
#
# - **a token-level mean** (config `loss_type = "dapo"`): every answer token of the step weighs the same;
# - **the ratio** $\rho$: the policy now over $\pi_{\text{old}}$, the one that sampled. Each step samples fresh answers,
#   then makes `num_iterations` gradient passes over them: in the first $\theta = \pi_{\text{old}}$, so $\rho = 1$; in
#   the second $\theta$ has moved, $\rho \ne 1$, and the **clip** (config `epsilon`, `epsilon_high`: $\epsilon$,
#   $\epsilon_{\text{high}}$) stops a token's push once $\rho > 1+\epsilon_{\text{high}}$ (if $A_i>0$) or
#   $\rho < 1-\epsilon$ (if $A_i<0$);
# - **no KL term**: TRL's optional penalty toward the base model, coefficient config `beta`, is 0 here.
#
# The setup table above holds every one of these values.
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
# where $\theta$ is not the whole model but its **LoRA adapter**: for a frozen weight $W$ ($d_{\text{out}} \times
# d_{\text{in}}$) two small factors add $\Delta W = U D$ (times the constant `lora_alpha`$/r$), with $D$ ($r \times
# d_{\text{in}}$, PEFT's `lora_A`) and $U$ ($d_{\text{out}} \times r$, PEFT's `lora_B`; renamed here so that $A$
# stays the advantage) and rank $r$ (config `lora_rank`). $U$ starts at 0, so round 0 *is* the base model. Only the
# factors train and travel:

# %%
lora = {k: v for k, v in run.initial_state.items() if "layers.0.self_attn.q_proj" in k}  # one adapted weight
for name, value in lora.items():
    print(f"{name.split('.')[-2]:>6} = {'D' if 'lora_A' in name else 'U'}: shape {value.shape}, max |entry| "
          f"{abs(value).max():.3f}")
print(f"{len(run.initial_state) // 2} adapted weights, {sum(v.size for v in run.initial_state.values()):,} adapter "
      "numbers in all: what each client sends up each round")

# %% [markdown]
# **Averaging factors is not averaging updates.** The server averages $U$ and $D$ *separately* (FedIT, the
# aggregator of PubSwap, does the same with equal weights), and a product of averages is not an average of products.
# Two clients with equal weight and $1 \times 1$ factors:

# %%
from fedrl_kit.aggregate import fedavg

clients_UD = [{"U": np.array([[2.0]]), "D": np.array([[1.0]])}, {"U": np.array([[0.0]]), "D": np.array([[3.0]])}]
avg = fedavg(clients_UD, [1, 1])
updates = [(c["U"] @ c["D"]).item() for c in clients_UD]
print(f"client updates ΔW = UD: {updates}, their mean {np.mean(updates)}; "
      f"mean U × mean D = {(avg['U'] @ avg['D']).item()}")

# %% [markdown]
# Here the product of the averages is double the average of the products. The gap is exactly the mean of
# $(U_k - \bar U)(D_k - \bar D)$: second order in how far the clients' factors spread, so it stays small while every
# round restarts all clients from the same $\theta$ and takes few steps.
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$ | number of clients, one client |
# | $R$, $\tau$ | communication rounds; local GRPO steps per round |
# | $b$, $G$ | prompts per local step; answers per prompt (the group) |
# | $r_i$, $A_i$ | reward and advantage of answer $i$ in its group |
# | $\rho$, $\epsilon$, $\epsilon_{\text{high}}$ | probability ratio to the sampling policy; its clip range |
# | $\theta$, $\theta_k$ | the global LoRA adapter; client $k$'s after its local steps |
# | $D$, $U$, $r$ | LoRA's factors (PEFT: `lora_A`, `lora_B`) and rank |
# | $n_k$ | training examples client $k$ holds |
# | $\beta$ | Dirichlet concentration of the topic split (config `dirichlet_alpha`; config `beta` is the KL coefficient) |
#
# **Pseudocode** (`fedrl_kit/methods/fedavg_grpo.py::run_round`):
# ```
# for round = 1..R:
#     send θ to every client                                   # a "fit" message (fedrl_kit.federation)
#     for each client k, in parallel:                          # GRPOClient.on_fit
#         for step = 1..τ:
#             sample b of its prompts, G answers each          # policy.rollout
#             r = verifier(answers); A = group advantages      # rewards.accuracy_reward, grpo.group_advantages
#             num_iterations clipped-surrogate passes on θ_k  # grpo.grpo_step
#         reply θ_k and n_k
#     θ = Σ_k (n_k / n) θ_k                                     # aggregate.fedavg
# ```

# %% [markdown]
# ## 3. The world: who holds what
# Every problem has one exact answer; topics play the role of a real dataset's subjects.

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

# %% [markdown]
# **Where there is room to learn.** The base model's pass@1 per topic on the held-out test problems, before any
# training (the run's round-0 evaluation, computed ahead). A topic near 0 gives mostly all-wrong
# groups, one near 1 all-right groups: both teach nothing (§1).

# %%
base_eval = run.evaluate_global(0)  # the evaluation the run does at round 0
base_topics = pd.Series({k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith("topic/")},
                        name="base pass@1").round(3)
display(base_topics.to_frame().T)
print(f"easiest: {base_topics.idxmax()} ({base_topics.max():.3f}), hardest: {base_topics.idxmin()} "
      f"({base_topics.min():.3f}); all topics: {base_eval['pass@1']:.3f}")

# %%
fig = viz.heterogeneity_bubbles(*topic_matrix(run.partitions),
                                title=f"topics per client (Dirichlet β = {cfg.dirichlet_alpha})")
viz.export(fig, "quickstart_heterogeneity", figures)
fig

# %% [markdown]
# ## 4. Run it
# Round 0 is the base policy; after every round the global adapter answers the held-out test problems.
# **pass@1** is the expected accuracy of *one sampled* answer: each problem is answered `eval_samples` times at
# temperature 1, and pass@1 is the fraction right, averaged over problems. This is **one run, one seed**.

# %%
records = run.run()
summary = notebook.headline(records)
if method != "zero_shot" and not notebook.is_smoke(preset_name):  # zero-shot trains nothing; smoke is too small
    assert summary["final pass@1"] > summary["base pass@1"], "pass@1 did not rise: training is broken"
pd.Series(summary).to_frame(f"{NAMES[method]}, seed {seed}")

# %%
fig = viz.curves({NAMES[method]: records}, "pass@1", title="global pass@1 on the held-out test split")
viz.export(fig, "quickstart_pass_at_1", figures)
fig

# %% [markdown]
# Per topic, base and final. GRPO learns where groups are mixed (§1): a topic the base almost never solves gives
# all-wrong groups and little signal.

# %%
topics = notebook.topic_table(records)
gain = topics["final"] - topics["base"]
display(topics.T)
print(f"largest gain: {gain.idxmax()} ({topics.loc[gain.idxmax(), 'base']:.3f} → "
      f"{topics.loc[gain.idxmax(), 'final']:.3f}); hardest at the start: {topics['base'].idxmin()} "
      f"({topics['base'].min():.3f} → {topics.loc[topics['base'].idxmin(), 'final']:.3f})")

# %% [markdown]
# ### The same questions, before and after
# The base model (round 0) and the trained one answer the first held-out questions greedily (each its single most
# likely answer), then over the whole test split.

# %%
answers_table, greedy_accuracy = notebook.before_after(run, n=8)
display(answers_table)
greedy_accuracy.to_frame()

# %% [markdown]
# What this one run says (printed from its numbers):

# %%
g0, g1 = greedy_accuracy["base (greedy)"], greedy_accuracy["trained (greedy)"]
n_test = len(run.world.test)
moved = {True: "rose", False: "fell"}[g1 > g0] if g1 != g0 else "stayed"
lines = [f"- Sampled pass@1 went from {summary['base pass@1']:.3f} to {summary['final pass@1']:.3f} "
         f"({summary['change (points)']:+.1f} points); greedy accuracy {moved}: {g0:.3f} → {g1:.3f} "
         f"({round((g1 - g0) * n_test):+d} of {n_test} problems)."]
if g1 < g0:
    lines.append("- Greedy accuracy **fell** although training worked on what it optimises. GRPO raises the reward "
                 "of *sampled* answers at temperature 1: it moves probability from rare wrong answers to common right "
                 "ones. The greedy answer is only the single most likely one, and a few rounds can tip a few "
                 "problems' top answer either way.")
elif g1 - g0 < (summary["final pass@1"] - summary["base pass@1"]):
    lines.append("- Sampled pass@1 rose more than greedy accuracy: GRPO mostly moved probability onto answers the "
                 "model could already give as its top one (\"sharpening\", reported for real models too: Yue et al., "
                 "2025).")
lines.append(f"- All of it is **one seed** (seed {seed}: one world, one partition, one sampling sequence). A single "
             "run shows what can happen; it says nothing about whether the change is larger than seed-to-seed noise. "
             "That takes several seeds and an interval, as in the stored measurement below and in notebooks 01–03.")
Markdown("\n".join(lines))

# %% [markdown]
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
# The widget needs a running kernel; read without one, here are every client's diagnostics averaged over its rounds,
# and the first client's curves.

# %%
if clients:
    display(client_df.groupby("client")[cols[1:]].mean().round(3))
    fig = viz.client_curves([r for r in records if r["kind"] == "global" or r.get("client") == clients[0]])
    fig.update_layout(title=f"{clients[0]}: local training per round (global pass@1 dashed)", height=360)
    viz.export(fig, "quickstart_first_client", figures)
    display(fig)

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
# Predict in the first cell; the second shows the answer and, once you have predicted, checks you.
#
# **Exercise 1.** A group of $G = 4$ answers scores $r = (1, 0, 0, 0)$. What is the advantage of the one right
# answer, to two decimals? (Hint: the sample std of $(1,0,0,0)$ is $0.5$.)

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
# **Exercise 2.** Which client's groups taught it nothing most often (the highest mean `frac_zero_std` over its
# rounds)? Predict from §3 alone: the client table and the base's pass@1 per topic.

# %%
prediction_2 = None  # a client's name, e.g. "client_0"

# %%
zero = client_df.groupby("client").frac_zero_std.mean() if clients else pd.Series(dtype=float)
answer_2 = zero.idxmax() if len(zero) else None
if answer_2 is not None:
    held = notebook.client_table(run.partitions).loc[answer_2].drop("total")
    mix = ", ".join(f"{t} {n / held.sum():.0%} (base pass@1 {base_topics.get(t, float('nan')):.2f})"
                    for t, n in held.sort_values(ascending=False).head(2).items())  # nan: no test problem of t
    why_2 = (f"{answer_2}'s groups had no spread {zero.max():.0%} of the time (the others {zero.drop(answer_2).min():.0%}"
             f"–{zero.drop(answer_2).max():.0%}); its data is mostly {mix}: topics where most groups of G answers are "
             "all wrong (or all right) give every answer A = 0")
    display(zero.round(3).to_frame("mean frac_zero_std"))
    notebook.check(prediction_2, answer_2, why_2) if prediction_2 is not None else notebook.reveal(answer_2, why_2)

# %% [markdown]
# ## Where next
# - `01_fedgrpo_expert_selection.ipynb`: the server trains; clients only send scalar rewards.
# - `02_pubswap_balanced_drift.ipynb`: shared public prompts and swapped answers against client drift.
# - `03_fedmoa_pareto.ipynb`: several rewards per client, weights that adapt, and their Pareto fronts.
#
# The same run from a shell: `fedrl run --method fedavg_grpo --preset quick`.
