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
# **The problem.** We want to teach a language model to solve problems whose answers a program can check:
# *reinforcement learning with verifiable rewards*. The training problems sit on several **clients** (hospitals,
# companies, phones) that will not hand them over. **Federated GRPO** trains anyway: every
# client improves a shared LoRA adapter on its own problems with GRPO; the **server** receives each client's whole
# adapter, its example count $n_k$ and a few training metrics, never a problem or an answer.
#
# This notebook teaches **GRPO's group-relative advantage** (§1) and **a federated round** (§2), runs FedAvg-GRPO
# beside Central-GRPO (GRPO on the pooled data) for a few minutes on 2 CPU cores (§3–4), and ends with exercises.
# It runs offline: arithmetic problems in seven topics, each with one exact answer, and a tiny 1.6 M-parameter
# policy, the **base**, trained by supervised learning until it solves some problems: weak, so that RL shows.

# %% [markdown]
# ## Parameters
# Edit here, or `-p dirichlet_alpha 100` with papermill; presets and their cost: `docs/class-guide.md`.

# %% tags=["parameters"]
method = "fedavg_grpo"  # fedavg_grpo | fedprox_grpo (+ a pull μ/2·‖θ_k − θ‖² toward the global adapter) |
                        # central_grpo (Central-GRPO: plain GRPO on all clients' data pooled) | zero_shot
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
# checks the parameters (one line names a bad one); returns the config, the run folder and the figures folder
cfg, run_dir, figures = notebook.setup(
    "quickstart", globals(), smoke="quickstart", setting=REAL_LM if base == "smollm2" else None,
    choices={"method": NAMES, "base": ("",) if "full" in preset_name else ("", "smollm2")},
    words=(base, method), folder=dict(k=num_clients, r=rounds, t=local_steps, a=dirichlet_alpha, s=seed, reference=reference_path))
run = Run(cfg, run_dir, progress=False).build()
run.runtime.keep_messages = True  # keep every message, so that §2's factor gap can be measured on this run
compare = method in ("fedavg_grpo", "fedprox_grpo")  # then also Central-GRPO: same seed, sizes and budget
central = Run(dataclasses.replace(cfg, method="central_grpo"), None, progress=False).build() if compare else None
summary_fields = ("num_clients", "rounds", "local_steps", "dirichlet_alpha", "prompts_per_step", "num_generations",
                  "aggregator", "lora_rank", "eval_samples")
pd.Series({k: cfg.to_dict()[k] for k in summary_fields}, name="this run").to_frame().T  # §1–2 explain each

# %% [markdown]
# ## 1. GRPO: score a group of answers against each other
#
# For one prompt $q$ the model samples a **group** of $G$ answers $o_1,\dots,o_G$ and a verifier scores each:
# $r_i = 1$ if the answer it extracts (inside `<answer>…</answer>`, else the last number) equals the gold one, else
# $0$ (config `rewards`: accuracy only). The **format rate**, measured but not rewarded, is the fraction of answers
# shaped `<think>…</think><answer>…</answer>`.
# GRPO is PPO's clipped surrogate without PPO's value network: an answer's **advantage** is how much better it
# scored than its own group. Dividing by the group's std gives every group with any spread advantages of unit
# spread, so a prompt with one right answer in eight pushes as hard as one with four,
#
# $$A_i = \frac{r_i - \operatorname{mean}(r_1,\dots,r_G)}{\operatorname{std}(r_1,\dots,r_G) + 10^{-4}}
# \qquad\text{(`fedrl_kit.grpo.group_advantages`)}$$
#
# and the update raises the probability of every token of an answer with $A_i>0$ and lowers it where $A_i<0$.
# A local step takes $b$ prompts (config `prompts_per_step`); the loss over its $b \cdot G$ answers is
#
# $$\mathcal{L}(\theta) = -\frac{1}{\sum_i |o_i|}\sum_{i}\sum_{t=1}^{|o_i|}
# \min\bigl(\rho_{i,t} A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\epsilon, 1+\epsilon_{\text{high}})\,A_i\bigr),
# \qquad \rho_{i,t} = \frac{\pi_\theta(o_{i,t}\mid q, o_{i,<t})}{\pi_{\text{old}}(o_{i,t}\mid q, o_{i,<t})}
# \qquad\text{(`fedrl_kit.grpo.grpo_loss`)}$$
#
# - **a token-level mean** (config `loss_type = "dapo"`): every answer token ($|o_i|$ counts tokens) weighs the same;
# - **the ratio** $\rho$: the policy now over $\pi_{\text{old}}$, the one that sampled. Each step samples fresh answers,
#   then makes `num_iterations` gradient passes over them: in the second $\rho \ne 1$, and the **clip** stops a
#   token's push once $\rho > 1+\epsilon_{\text{high}}$ (if $A_i>0$) or $\rho < 1-\epsilon$ (if $A_i<0$);
#   $\epsilon_{\text{high}} > \epsilon$ is DAPO's *clip-higher*. `clip_fraction` is the share of tokens clipped;
# - **no KL term**: TRL's optional penalty $\beta\,\mathrm{KL}(\pi_\theta\,\|\,\pi_{\text{base}})$ has $\beta$ = 0 here.
#
# The optimiser is Adam (config `learning_rate`), its moments reset every round (`reset_optimizer`).
#
# One real group (the base's $G$ answers to a test question, scored as a local step scores them), and this run's
# GRPO settings:

# %%
group = notebook.one_group(run)
print({k: cfg.to_dict()[k] for k in ("rewards", "loss_type", "epsilon", "epsilon_high", "beta", "num_iterations",
                                     "learning_rate", "reset_optimizer")})
print(f"q = {group.attrs['question']!r}   (gold answer {group.attrs['gold']})")
group

# %% [markdown]
# **By hand.** Compute the first answer's advantage from the reward column's mean and sample standard deviation.

# %%
r = group["reward r_i"].to_numpy()
by_hand = (r[0] - r.mean()) / (r.std(ddof=1) + 1e-4)  # sample std (ddof = 1), as torch.std and TRL use
print(f"mean r = {r.mean():.3f}, std r = {r.std(ddof=1):.3f}:  A_1 by hand = {by_hand:.4f}, "
      f"package = {group['advantage A_i'].iloc[0]:.4f}")

# %% [markdown]
# **A group that teaches nothing.** If all $G$ answers are right (or all wrong), every $A_i = 0$ and the loss has no
# gradient: the prompt was too easy (or too hard). The fraction of such groups, `frac_zero_std`, is the first
# diagnostic to read in any GRPO run.

# %%
for rewards in ([1, 1, 1, 1, 0, 1, 0, 1], [1] * 8):
    advantages = group_advantages(torch.tensor(rewards, dtype=torch.float64), len(rewards))
    print(f"r = {rewards}  →  A = {[round(a, 2) for a in advantages.tolist()]}")

# %% [markdown]
# ## 2. A federated round
#
# **FedAvg-GRPO**, the baseline of the methods notebooks 01–03 teach, repeats for $R$ rounds:

# %%
diagrams.round_diagram("fedavg_grpo")

# %% [markdown]
# The server's average weighs each client's adapter by its number of training examples $n_k$:
#
# $$\theta \leftarrow \sum_{k=1}^{K} \frac{n_k}{n}\,\theta_k,\qquad n = \sum_k n_k
# \qquad\text{(`fedrl_kit.aggregate.fedavg`)}$$
#
# where $\theta$ is the **LoRA adapter**: a frozen weight $W$ gets $\Delta W = U D$ (times
# `lora_alpha`$/r_{\text{LoRA}}$), $D$ ($r_{\text{LoRA}} \times d_{\text{in}}$, PEFT's `lora_A`), $U$
# ($d_{\text{out}} \times r_{\text{LoRA}}$, `lora_B`; renamed so that $A$ stays the advantage). $U$ starts at 0, so
# round 0 *is* the base model. Only the factors train and travel:

# %%
state = run.initial_state
shapes = pd.DataFrame([{"module": k.split(".")[-3], "D (lora_A)": state[k].shape,
                        "U (lora_B)": state[k.replace("lora_A", "lora_B")].shape,
                        "numbers": state[k].size + state[k.replace("lora_A", "lora_B")].size}
                       for k in state if "lora_A" in k and ".layers.0." in k]).set_index("module")
display(shapes)  # layer 0; every layer has the same modules
n_layers = sum("lora_A" in k for k in state) // len(shapes)
print(f"{len(shapes)} modules × {n_layers} layers = {len(state) // 2} adapted weights, "
      f"{sum(v.size for v in state.values()):,} adapter numbers in all: what each client sends up each round")

# %% [markdown]
# **Averaging factors is not averaging updates.** The server averages $U$ and $D$ *separately* (as does FedIT, with
# equal weights), and a product of averages is not an average of products. Two clients, $1 \times 1$ factors:

# %%
from fedrl_kit.aggregate import fedavg

clients_UD = [{"U": np.array([[2.0]]), "D": np.array([[1.0]])}, {"U": np.array([[0.0]]), "D": np.array([[3.0]])}]
avg = fedavg(clients_UD, [1, 1])
updates = [(c["U"] @ c["D"]).item() for c in clients_UD]
print(f"client updates ΔW = UD: {updates}, their mean {np.mean(updates)}; "
      f"mean U × mean D = {(avg['U'] @ avg['D']).item()}")

# %% [markdown]
# The product of the averages is double the average of the products. The gap is exactly the mean of
# $(U_k - \bar U)(D_k - \bar D)$: second order in how far the clients' factors spread. §4 measures
# $\lVert \sum_k w_k U_k D_k - \bar U \bar D \rVert$ on this run, against the whole adapter
# $\lVert \sum_k w_k U_k D_k \rVert$ and against the round's mean update.
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$ | number of clients, one client |
# | $R$, $\tau$ | communication rounds; local GRPO steps per round |
# | $b$, $G$ | prompts per local step; answers per prompt (the group) |
# | $r_i$, $A_i$ | reward and advantage of answer $i$ in its group |
# | $\rho$, $\epsilon$, $\epsilon_{\text{high}}$ | probability ratio to the sampling policy; its clip range |
# | $\beta$ | KL coefficient (config `beta`; 0 here) |
# | $\theta$, $\theta_k$ | the global LoRA adapter; client $k$'s after its local steps |
# | $D$, $U$, $r_{\text{LoRA}}$ | LoRA's factors (PEFT: `lora_A`, `lora_B`) and rank |
# | $n_k$, $w_k$ | training examples client $k$ holds; its weight in the average ($n_k/n$) |
# | $\alpha$ | Dirichlet concentration of the topic split (config `dirichlet_alpha`) |
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
#         reply θ_k, n_k (checked against the first) and metrics
#     θ = Σ_k (n_k / n) θ_k                                     # aggregate.fedavg
# ```

# %% [markdown]
# ## 3. The world: who holds what
# Topics play the role of a real dataset's subjects.

# %%
# NBVAL_CHECK_OUTPUT
notebook.examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# Each topic's training problems are split over the clients in proportions drawn from a Dirichlet distribution, one
# draw per topic (concentration $\alpha$; small $\alpha$: a topic lands mostly on one or two clients), so the clients
# disagree about what to learn. Rows are clients, columns topics; the bubble plot shows the same.

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(run.partitions)

# %% [markdown]
# **Where there is room to learn.** The base's **pass@1** per topic on the test problems: the fraction right of
# `eval_samples` answers sampled per problem at temperature 1. Near 0 or 1, most groups teach nothing.

# %%
base_eval = run.evaluate_global(0)  # the evaluation the run does at round 0
base_topics = pd.Series({k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith("topic/")},
                        name="base pass@1").round(3)
test_counts = pd.Series(run.world.test["topic"]).value_counts().sort_index()
display(pd.DataFrame({"base pass@1": base_topics, "test problems": test_counts}).T)
print(f"easiest: {base_topics.idxmax()} ({base_topics.max():.3f}), hardest: {base_topics.idxmin()} "
      f"({base_topics.min():.3f}); all topics: {base_eval['pass@1']:.3f}")

# %%
fig = viz.heterogeneity_bubbles(*topic_matrix(run.partitions),
                                title=f"topics per client (Dirichlet α = {cfg.dirichlet_alpha})")
viz.export(fig, "quickstart_heterogeneity", figures)
fig

# %% [markdown]
# ## 4. Run it
# After every round the global adapter answers the held-out test problems (pass@1, §3). **Central-GRPO** runs the same loop with one client holding all the data and $Kb$ prompts per step (as many sampled
# answers), same seed and sizes: **one run each, one seed**.

# %%
records = run.run()
runs = {NAMES[method]: records}
if compare:
    runs["Central-GRPO"] = central.run()
n_answers = len(run.world.test) * cfg.eval_samples
table = pd.DataFrame({name: notebook.headline(recs) for name, recs in runs.items()})
table.loc["SE of final pass@1"] = [round(float(np.sqrt(p * (1 - p) / n_answers)), 3) for p in table.loc["final pass@1"]]
se_final = float(table.loc["SE of final pass@1"].max())
table

# %%
fig = viz.curves(runs, "pass@1", title="global pass@1 on the held-out test split")
viz.export(fig, "quickstart_pass_at_1", figures)
fig

# %% [markdown]
# **Reading the curve** (from the run's records; the noise of a difference of two methods' pass@1 is
# $\sqrt 2 \times$ the SE above):

# %%
gaps = notebook.round_factor_gaps(run) if method != "zero_shot" else pd.DataFrame()
curve = pd.DataFrame({name: {r["round"]: r["pass@1"] for r in recs if r["kind"] == "global"} for name, recs in runs.items()})
reading = []
if compare:
    lead = 100 * (curve["Central-GRPO"] - curve[NAMES[method]]).iloc[1:]  # points, rounds 1..R
    noise = 100 * np.sqrt(2) * se_final
    ahead = lead[lead > noise]
    if len(ahead):
        caught = [r for r in lead.index if r > ahead.index.max()]
        reading.append(f"- Central-GRPO was ahead by more than the noise (±{noise:.1f} points) at rounds "
                       f"{', '.join(map(str, ahead.index))}, by up to {lead.max():.1f} points (round {lead.idxmax()}); "
                       + (f"from round {caught[0]} on the two stay within {lead.loc[caught].abs().max():.1f} points "
                          "of each other." if caught else "it still was at the last round."))
        plateau = curve["Central-GRPO"]
        reading.append(f"- Central-GRPO rose {100 * (plateau[ahead.index.max()] - plateau[0]):.1f} points by round "
                       f"{ahead.index.max()}, then {100 * (plateau.iloc[-1] - plateau[ahead.index.max()]):+.1f} more: "
                       f"{NAMES[method]} caught up by reaching the level where Central-GRPO had stopped rising.")
    else:
        reading.append(f"- The two curves never differ by more than the noise (±{noise:.1f} points).")
if len(gaps):
    agree = gaps["agreement of updates"].dropna()
    reading.append(f"- Why federation is slower at first: **client drift**. Each client spends its τ = "
                   f"{cfg.local_steps} steps on {cfg.prompts_per_step} prompts per step from its own topics, so the "
                   f"clients' updates point apart and partly cancel in the average: their agreement (‖mean update‖ / "
                   f"mean ‖update‖, 1 when all move alike) was {agree.min():.2f}–{agree.max():.2f} per round. "
                   f"Central-GRPO's every step sees all topics in one batch of {cfg.num_clients * cfg.prompts_per_step}"
                   " prompts, nothing cancelled. Non-IID topics and small noisy batches both cause drift; Exercise 4 "
                   "separates them.")
Markdown("\n".join(reading))

# %% [markdown]
# Per topic: the base, each client's share of the topic's training problems, and each method's gain.

# %%
topics = notebook.topic_table(records)
held = notebook.client_table(run.partitions).drop(columns="total")
per_topic = pd.concat([topics[["base"]].T, (held / held.sum()).round(2)])
for name, recs in runs.items():
    t = notebook.topic_table(recs)
    per_topic.loc[f"{name} gain"] = (t["final"] - t["base"]).round(3)
display(per_topic)
gain = per_topic.loc[f"{NAMES[method]} gain"].astype(float)
top = gain.idxmax()
se_topic = np.sqrt(0.25 / (test_counts.min() * cfg.eval_samples))  # p = 0.5, the fewest problems: the largest SE
se_gain = np.sqrt(2) * se_topic  # a gain is final − base: two independent estimates
real = [f"{k} {v:+.3f}" for k, v in gain.items() if abs(v) > 2 * se_gain]
apart = ""
if compare:
    diff = (per_topic.loc["Central-GRPO gain"] - gain).astype(float).dropna()
    t = diff.abs().idxmax()
    losses = per_topic.loc["Central-GRPO gain"].astype(float)
    losses = losses[losses < 0]
    apart = (f"\n- The two methods differ most on **{t}** (Central-GRPO's gain minus {NAMES[method]}'s: {diff[t]:+.3f},"
             f" {'within' if abs(diff[t]) <= 2 * se_gain else 'beyond'} ±{2 * se_gain:.2f}, two standard errors of a "
             "difference of two final pass@1s"
             + ("; one seed cannot tell it from noise)" if abs(diff[t]) <= 2 * se_gain else ")")
             + (f". Central-GRPO's losses ({', '.join(f'{k} {v:+.3f}' for k, v in losses.items())}) are "
                f"{'within' if losses.abs().max() <= 2 * se_gain else 'partly beyond'} that noise." if len(losses) else "."))
Markdown(f"- Largest {NAMES[method]} gain: **{top}** ({topics.loc[top, 'base']:.3f} → {topics.loc[top, 'final']:.3f});"
         f" {held[top].idxmax() if top in held else '—'} holds "
         f"{held[top].max() / held[top].sum() if top in held else 0:.0%} of its training problems. Hardest at"
         f" the start: {topics['base'].idxmin()} ({topics['base'].min():.3f} → "
         f"{topics.loc[topics['base'].idxmin(), 'final']:.3f}).\n"
         f"- Each topic has {int(test_counts.min())}–{int(test_counts.max())} test problems × {cfg.eval_samples} "
         f"samples: a topic's pass@1 has a standard error up to {se_topic:.2f}, and a gain, the difference of two "
         f"estimates, up to √2 × {se_topic:.2f} = {se_gain:.2f}. Read gains within ±{2 * se_gain:.2f} (two such errors) "
         f"as possibly noise; beyond it here: {', '.join(real) or 'none'}."
         + apart)

# %% [markdown]
# **The cost of federation, and the factor gap, on this run** (printed from its numbers):

# %%
display(gaps.drop(columns="bytes up per client").round(4).T if len(gaps) else "zero-shot sends no adapters")
s = {name: notebook.headline(recs) for name, recs in runs.items()}
se = float(table.loc["SE of final pass@1", NAMES[method]])
lines = [f"- {NAMES[method]}: pass@1 {s[NAMES[method]]['base pass@1']:.3f} → {s[NAMES[method]]['final pass@1']:.3f} "
         f"({s[NAMES[method]]['change (points)']:+.1f} points; the evaluation alone has a standard error of "
         f"±{100 * se:.1f} points: {n_answers} sampled answers treated as independent, which understates it)."]
if compare:
    d = s["Central-GRPO"]["final pass@1"] - s[NAMES[method]]["final pass@1"]
    lines.append(f"- Central-GRPO, the same number of sampled answers on the pooled data, ended at "
                 f"{s['Central-GRPO']['final pass@1']:.3f}: {abs(100 * d):.1f} points "
                 f"{'above' if d > 0 else 'below'} {NAMES[method]}. One seed cannot say whether that is the price of"
                 " federation or noise; notebooks 01–03 compare methods over several seeds.")
if len(gaps):
    g = gaps["gap, n_k weights"].dropna()
    u = gaps["gap / round's update"].dropna()
    first, last = gaps.index.min(), gaps.index.max()
    lines.append(f"- The factor gap (§2) fell from {g.iloc[0]:.1%} to {g.iloc[-1]:.1%} of the whole adapter "
                 f"(equal weights: {gaps['gap, equal weights'].iloc[0]:.1%} → {gaps['gap, equal weights'].iloc[-1]:.1%})."
                 f" What falls is the ratio: the denominator ‖adapter‖ grew {gaps.loc[first, '‖adapter‖']:.3f} → "
                 f"{gaps.loc[last, '‖adapter‖']:.3f} as rounds accumulate, while ‖gap‖ stayed "
                 f"{gaps['‖gap‖'].min():.3f}–{gaps['‖gap‖'].max():.3f}: every round restarts all clients from the same "
                 f"θ, so their factors spread apart only during that round's τ = {cfg.local_steps} steps. Against the "
                 f"round's mean update it was {u.min():.0%}–{u.max():.0%}: each round the server's step misses the "
                 "clients' mean step by that much, a real but second-order error next to the drift above.")
    n_k = pd.Series(run.server.sizes)
    lines.append(f"- Why weight by n_k (here {', '.join(f'{k} {v / n_k.sum():.2f}' for k, v in n_k.items())})? FedAvg's "
                 "convention: a client holding more data speaks for more of the pooled data. Every client here trains "
                 f"on the same τ·b = {cfg.local_steps * cfg.prompts_per_step} prompts per round, so n_k does not "
                 "measure work done, only whose topics count more. Equal weights are FedIT's (config `aggregator = "
                 "\"fedit\"`); config `equal_size = True` instead gives every client as many examples.")
Markdown("\n".join(lines))

# %% [markdown]
# ### The same questions, before and after
# Base and trained model answer every test question greedily (their most likely answer); the first eight:

# %%
answers_table, greedy_accuracy = notebook.before_after(run, n=len(run.world.test))
display(answers_table.head(8))
greedy_accuracy.to_frame()

# %%
from fedrl_kit.rewards.format import is_well_formatted

g0, g1 = greedy_accuracy["base (greedy)"], greedy_accuracy["trained (greedy)"]
n_test = len(run.world.test)
formatted = answers_table["base answer"].map(is_well_formatted)
right = answers_table["base right"]
Markdown(
    f"- Sampled pass@1 went from {s[NAMES[method]]['base pass@1']:.3f} to "
    f"{s[NAMES[method]]['final pass@1']:.3f}; greedy accuracy {g0:.3f} → {g1:.3f} ({round((g1 - g0) * n_test):+d} "
    f"of {n_test} problems). GRPO raises the reward of answers *sampled* at temperature 1: it moves probability from "
    "rare wrong answers onto answers the model could already give, so sampling gets closer to the greedy answer "
    "while the greedy answer itself barely moves (\"sharpening\", reported for real models too: Yue et al., 2025). "
    f"The trained model's sampled pass@1 ({s[NAMES[method]]['final pass@1']:.3f}) is still "
    f"{'below' if s[NAMES[method]]['final pass@1'] < g0 else 'above'} the base's greedy accuracy ({g0:.3f}).\n"
    f"- The format rate went {s[NAMES[method]]['base format']:.3f} → {s[NAMES[method]]['final format']:.3f}, though "
    f"format is not rewarded. The base's formatted greedy answers were right {right[formatted].mean():.0%} of the "
    f"time ({formatted.sum()} answers), its unformatted ones {right[~formatted].mean():.0%} ({(~formatted).sum()}): "
    "where formatted answers are right more often, they get the positive advantages, and GRPO favours the format "
    "indirectly.")

# %% [markdown]
# ### A real language model
# `-p base smollm2` runs this on SmolLM2-135M-Instruct. Stored, three seeds of FedAvg-GRPO on a smaller task
# (`benchmarks/real_lm_learns.py`: three clients, one-digit sums and maxima, eight rounds of one local step; last row:
# mean gain, 95 % Student-t half-width). Its format rate is 0 throughout: this chat model never writes the
# `<think>…</think><answer>…</answer>` tags, and only the answer is rewarded.

# %%
notebook.stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# ## 5. Exercises: predict, then run
# Predict in the first cell; the second checks it, or shows the answer and why.
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
# Which client's groups taught it nothing most often (the highest mean `frac_zero_std` over its
# rounds)? Predict from §3 alone: the client table and the base's pass@1 per topic.

# %%
prediction_2 = None  # a client's name, e.g. "client_0"

# %%
client_df = pd.DataFrame([r for r in records if r["kind"] == "client"])
clients = sorted(client_df.client.unique()) if len(client_df) else []  # zero-shot trains no client
zero = client_df.groupby("client").frac_zero_std.mean() if clients else pd.Series(dtype=float)
answer_2 = zero.idxmax() if len(zero) else None
if answer_2 is not None:
    mine = held.loc[answer_2]
    mix = ", ".join(f"{t} {n / mine.sum():.0%} (base pass@1 {base_topics.get(t, float('nan')):.2f})"
                    for t, n in mine.sort_values(ascending=False).head(2).items())  # nan: no test problem of t
    why_2 = (f"{answer_2}'s groups had no spread {zero.max():.0%} of the time (the others {zero.drop(answer_2).min():.0%}"
             f"–{zero.drop(answer_2).max():.0%}); its data is mostly {mix}: topics where most groups of G answers are "
             "all wrong (or all right) give every answer A = 0")
    notebook.check(prediction_2, answer_2, why_2) if prediction_2 is not None else notebook.reveal(answer_2, why_2)

# %% [markdown]
# **Each client's view**: `accuracy` on its *own* rollouts (= mean reward), `frac_zero_std`, `clip_fraction`,
# `completion_length` (tokens). The widget draws one client by round; below it, all clients' means and one client.

# %%
import ipywidgets as widgets

cols = ["round", "accuracy", "frac_zero_std", "clip_fraction", "completion_length"]


def show_client(client):
    mine = [r for r in records if r["kind"] == "global" or r.get("client") == client]  # its rounds + global pass@1
    fig = viz.client_curves(mine, metrics=("accuracy", "frac_zero_std"))
    fig.update_layout(title=f"{client}: local training per round (global pass@1 dashed)", height=360)
    fig.show(renderer="plotly_mimetype")
    display(client_df[client_df.client == client][cols].round(3).reset_index(drop=True))


notebook.knobs(show_client, client=widgets.Dropdown(options=clients)) if clients else print("no client trains")

# %%
if clients:
    display(client_df.groupby("client")[cols[1:]].mean().round(3))
    fig = viz.client_curves([r for r in records if r["kind"] == "global" or r.get("client") == clients[0]],
                            metrics=("accuracy", "frac_zero_std"))
    fig.update_layout(title=f"{clients[0]}: local training per round (global pass@1 dashed)", height=360)
    viz.export(fig, "quickstart_first_client", figures)
    display(fig)

# %% [markdown]
# ### Exercise 3
#
# How many bytes does one client send up per round? Predict from §2's adapter size and its dtype
# (float32).

# %%
prediction_3 = None  # a number of bytes, e.g. 100_000 (within 2 % counts as right)

# %%
if len(gaps):
    answer_3 = int(gaps["bytes up per client"].max())
    numbers = sum(v.size for v in run.initial_state.values())
    why_3 = (f"the ledger counts {answer_3:,} bytes per client reply: {numbers:,} adapter numbers × 4 bytes = "
             f"{4 * numbers:,}, plus {answer_3 - 4 * numbers:,} bytes of tensor names, n_k and metrics; every round "
             "about as many bytes come down (the global adapter, without metrics)")
    notebook.check(prediction_3, answer_3, why_3, tolerance=0.02 * answer_3) if prediction_3 is not None \
        else notebook.reveal(answer_3, why_3)

# %% [markdown]
# **What crossed the wire** (the runtime's ledger): the adapter down (`fit`) and up (`fit_result`) each round. $n_k$
# comes up once before round 1 (`properties_result`): the server weighs by that, and checks the $n_k$ each
# `fit_result` repeats against it.

# %%
by_kind = run.runtime.ledger.bytes_by_kind()
print({f"{kind} ({way})": f"{n:,} B" for (kind, way), n in by_kind.items()})
fig = viz.communication_bars(by_kind, title="bytes by message kind (all rounds)")
viz.export(fig, "quickstart_communication", figures)
fig

# %% [markdown]
# ### Exercise 4 (a rerun)
#
# Is the drift of §4 the non-IID split or the small noisy batches? Rerun with
# `-p dirichlet_alpha 100` (near-equal topic shares) and `0.1` (most topics on one client). If non-IID data drove
# it, the agreement of updates rises and Central-GRPO's early lead shrinks at α = 100, the reverse at 0.1; if both
# barely move, batch noise dominates. Try two seeds before concluding.

# %% [markdown]
# ## Where next
# `01_fedgrpo_expert_selection.ipynb`, `02_pubswap_balanced_drift.ipynb`, `03_fedmoa_pareto.ipynb`. From a shell:
# `fedrl run --method fedavg_grpo --preset quick`.
