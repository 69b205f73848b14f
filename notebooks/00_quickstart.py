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
# with verifiable rewards*). But the training problems sit on **clients** that will not share them. **Federated
# GRPO** trains anyway. Each client improves a shared LoRA adapter on its own problems with GRPO. It sends the
# **server** its adapter, its example count $n_k$ and a few metrics, never a problem.
#
# This notebook teaches **FedAvg-GRPO**, the baseline that three papers improve on. **FedGRPO** (notebook 01) sends
# scores instead of adapters. **PubSwap** (02) pulls drifting clients together with public prompts. **FedMOA** (03)
# balances several rewards.
#
# It runs in minutes on a CPU. The problems are arithmetic, in seven topics. The policy, the **base**, is a tiny
# 1.6 M-parameter model pretrained by supervised learning.

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
run.runtime.keep_messages = True  # §4 re-reads every message
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
# - **The ratio $\rho$.** A step samples its answers once, with $\pi_{\text{old}}$. It then makes `num_iterations`
#   passes over them. On pass 1, $\rho = 1$. Later, a token stops being pushed once $\rho > 1+\epsilon_{\text{high}}$
#   (if $A_i>0$) or $\rho < 1-\epsilon$ (if $A_i<0$). This is the **clip**. `clip_fraction` is the share of tokens
#   clipped.
# - **Clip-higher** (from DAPO, a GRPO variant). With $\epsilon_{\text{high}} > \epsilon$, a rare token can grow
#   more before the cap.
# - **Token mean** (`loss_type = "dapo"`). Every token weighs the same, so a long answer counts more. Groups with no
#   spread still add their tokens to $\sum_i |o_i|$, so they dilute the rest.
# - **No KL penalty** to the base: $\beta = 0$.
#
# Toy: tokens with $\rho = 1.0, 1.3, 0.7$ in two answers, $A = \pm1$. A clipped token gets zero gradient:

# %%
logps = torch.tensor([[1.0, 1.3, 0.7]] * 2, dtype=torch.float64).log().requires_grad_()  # log ρ (log π_old = 0)
A = torch.tensor([1.0, -1.0], dtype=torch.float64)
loss, diag = grpo_loss(logps, torch.zeros_like(logps), A, torch.ones_like(logps), cfg.epsilon, cfg.epsilon_high)
loss.backward()
print(f"clip range [1 − ε, 1 + ε_high] = [{1 - cfg.epsilon:.2f}, {1 + cfg.epsilon_high:.2f}]")
for a, g in zip(A.tolist(), logps.grad.tolist()):
    print(f"A = {a:+.0f}: clipped tokens (ρ) {[p for p, x in zip((1.0, 1.3, 0.7), g) if x == 0]}")
print(f"loss = {loss.item():.4f}, clip_fraction = {diag['clip_fraction']:.3f}")

# %% [markdown]
# One real group (the base's $G$ answers to a test question) and this run's settings:

# %%
group = notebook.one_group(run)
print({k: cfg.to_dict()[k] for k in ("rewards", "loss_type", "epsilon", "epsilon_high", "beta", "num_iterations",
                                     "learning_rate", "reset_optimizer")})
print(f"q = {group.attrs['question']!r}   (gold answer {group.attrs['gold']})")
group

# %% [markdown]
# **By hand:** $A_1$ from the rewards' mean and sample std, and the check $\sum_i A_i^2 \approx G-1$.

# %%
r = group["reward r_i"].to_numpy()
by_hand = (r[0] - r.mean()) / (r.std(ddof=1) + 1e-4)  # sample std (ddof = 1), as torch.std and TRL use
print(f"mean r = {r.mean():.3f}, std r = {r.std(ddof=1):.3f}:  A_1 by hand = {by_hand:.4f}, "
      f"package = {group['advantage A_i'].iloc[0]:.4f}")
print(f"Σ A_i² = {(group['advantage A_i'] ** 2).sum():.3f}, G − 1 = {len(r) - 1}")

# %% [markdown]
# **A group that teaches nothing.** If all $G$ answers are right (or all wrong), every $A_i = 0$: no gradient. The
# prompt was too easy (or too hard). The share of such groups, `frac_zero_std`, is the first diagnostic to read.

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
# The server averages the clients' adapters. Each is weighted by its number of training examples $n_k$:
#
# $$\theta \leftarrow \sum_{k=1}^{K} \frac{n_k}{n}\,\theta_k,\qquad n = \sum_k n_k
# \qquad\text{(`fedrl_kit.aggregate.fedavg`)}$$
#
# A client sends $n_k$ once, before round 1; each reply repeats it, and a reply that disagrees is dropped.
#
# The **LoRA adapter** $\theta$ changes each frozen weight $W$ by $\Delta W = UD$ (times `lora_alpha`$/r_{\text{LoRA}}$).
# $D$ projects down to rank $r_{\text{LoRA}}$ (PEFT's `lora_A`). $U$ projects back up (PEFT's `lora_B`). We rename
# them so that $A$ stays the advantage. $U$ starts at 0, so round 0 *is* the base model.
#
# Only the factors train and travel:

# %%
teach.adapter_shapes(run.initial_state)  # layer 0's factors; every layer has the same modules

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
# moves at right angles, $(1,0)$ and $(0,1)$, average to $(\tfrac12,\tfrac12)$, so $a = 1/\sqrt2$. $K$ such clients
# give $1/\sqrt K$. A low agreement shortens the server's step.
#
# **Pseudocode:**
# ```
# each client k reports n_k once, before round 1
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

# %%
import inspect  # the package's round: these steps as calls

from fedrl_kit.methods import fedavg_grpo

print(inspect.getsource(fedavg_grpo.run_round))

# %% [markdown]
# ## 3. The world: who holds what

# %% tags=["nbval-check-output"]
notebook.examples_by_topic(run.world.test, per_topic=1)

# %% [markdown]
# Each topic's training problems are split over the clients in Dirichlet proportions. With a small concentration
# $\alpha$, a topic lands mostly on one or two clients. Rows are clients, columns topics.

# %% tags=["nbval-check-output"]
notebook.client_table(run.partitions)

# %% [markdown]
# **Where there is room to learn.** The base's **pass@1** per topic is the fraction right of `eval_samples` answers
# sampled per test problem, at temperature 1. Near 0 or 1, most groups teach nothing. **Greedy test accuracy** scores
# only the single most likely answer. Training that merely *sharpens* the model onto its likeliest answers raises
# sampled pass@1, but not greedy test accuracy.

# %%
base_eval = run.evaluate_global(0)  # the evaluation the run does at round 0
display(teach.base_by_topic(run, base_eval))
teach.sampled_vs_greedy(run, base_eval)

# %%
fig = teach.bubbles(run, cfg.dirichlet_alpha)
viz.export(fig, "quickstart_heterogeneity", figures)
fig

# %% [markdown]
# **Predict now, before the run.** Which client will have the highest mean `frac_zero_std` (Exercise 2)? How many
# bytes does one client send up per round (Exercise 3; §2's adapter, float32)?

# %% [markdown]
# ## 4. Run it
# After every round the global adapter answers the test problems. **Central-GRPO** runs the same loop with one client
# that holds all the data and takes $Kb$ prompts per step. Each method runs once, with one seed. No ± below
# includes seed-to-seed variance.
#
# **Noise rule:** a difference counts only beyond two standard errors (SE), about 95 %. SEs are over test problems.
# Two models are compared problem by problem (paired).

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
# ### Inside a round
# **Round 1 by hand**, from the kept messages. The server's new adapter is each tensor's average over the clients'
# replies, with weights $w_k = n_k/n$:

# %%
if method != "zero_shot":  # zero-shot sends no adapters
    replies = [m for m in run.runtime.messages if m.kind == "fit_result" and m.round == 1]
    n_k = np.array([run.server.sizes[m.sender] for m in replies], dtype=float)
    w = n_k / n_k.sum() if cfg.aggregator == "fedavg" else np.full(len(n_k), 1 / len(n_k))  # fedit: equal weights
    thetas = [m.payload["adapter"] for m in replies]  # each client's θ_k: its U and D factors
    by_hand = {name: sum(w_k * theta[name] for w_k, theta in zip(w, thetas)) for name in thetas[0]}  # Σ_k w_k θ_k
    sent = {m.round: m.payload["adapter"] for m in run.runtime.messages if m.kind == "fit"}
    server = sent.get(2, run.server.global_state)  # the adapter the server sent next
    print(f"n_k = {n_k.astype(int).tolist()}, w_k = {np.round(w, 3).tolist()}")
    print(f"largest |by hand − server| over {len(by_hand)} tensors: "
          f"{max(np.abs(by_hand[k] - server[k]).max() for k in by_hand):.1e}")

# %% [markdown]
# Every round: §2's factor gap $\lVert\sum_k w_kU_kD_k-\bar U\bar D\rVert$ over $\lVert\bar\Delta\rVert$, and the agreement
# $a$.

# %%
gaps = notebook.round_factor_gaps(run) if method != "zero_shot" else None  # per round, from the kept messages
display(teach.round_table(gaps)) if gaps is not None else print("zero-shot sends no adapters")
teach.round_words(gaps, cfg) if gaps is not None else None

# %% [markdown]
# ### Noise or non-IID split?
# Batch noise alone predicts $a \approx 1/\sqrt K$ at every $\alpha$. Heterogeneity predicts $a$ rising with
# $\alpha$. Stored FedAvg-GRPO runs of this preset (`benchmarks/quickstart_alpha.py`):

# %%
display(teach.alpha_sweep())
teach.alpha_words()

# %% [markdown]
# ### Each client's view
# Per round, on its *own* rollouts: **train reward** (mean reward; `accuracy` in the records) and `frac_zero_std` (§1).

# %%
fig = teach.client_grid(records) if gaps is not None else None
viz.export(fig, "quickstart_clients", figures) if fig else None
display(fig, teach.client_spike(records, cfg), teach.client_view(records)) if fig else print("no client trains")

# %% [markdown]
# ### What crossed the wire
# The adapter goes down (`fit`) and up (`fit_result`) every round; `properties` asks for $n_k$ once.

# %%
teach.wire(run)

# %% [markdown]
# ### The same questions, before and after
# The eight test questions whose sampled success changed most, with each model's greedy answer:

# %%
answers_table, greedy = notebook.before_after(run, n=len(run.world.test))
display(teach.answers_changed(answers_table, scores[teach.NAMES[method]], cfg.eval_samples))
greedy.rename("greedy test accuracy (all test problems)").to_frame()

# %% [markdown]
# ### A real language model
# `-p base smollm2` runs FedAvg-GRPO on SmolLM2-135M-Instruct. Stored: three seeds, three clients, eight rounds,
# one-digit sums and maxima; ± (95 %) on the mean row only. Format stays 0: this chat model never writes the tags.

# %%
notebook.stored_before_after("benchmarks/results/real_lm_learns_cpu.json")

# %% [markdown]
# ## 5. What this run shows

# %%
teach.takeaways(runs, teach.NAMES[method], scores, gaps, greedy, answers_table)

# %% [markdown]
# ## 6. Exercises: predict, then run
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
# Your §3 prediction: the client with the highest mean `frac_zero_std`.

# %%
prediction_2 = None  # a client's name, e.g. "client_0"

# %%
answer_2, why_2 = teach.frac_zero_answer(records, run, base_eval)
notebook.check(prediction_2, answer_2, why_2) if prediction_2 is not None else notebook.reveal(answer_2, why_2)

# %% [markdown]
# ### Exercise 3
#
# Your §3 prediction: bytes one client sends up per round.

# %%
prediction_3 = None  # a number of bytes, e.g. 100_000 (within 2 % counts as right)

# %%
answer_3, why_3 = teach.bytes_answer(run, gaps)
notebook.check(prediction_3, answer_3, why_3, tolerance=0.02 * (answer_3 or 0)) if prediction_3 is not None \
    else notebook.reveal(answer_3, why_3)

# %% [markdown]
# ### Exercise 4
#
# Three clients (equal weights) start from $UD=0$: $\Delta_1=\Delta_2=(1,0)$, $\Delta_3=(0,1)$. What is their
# agreement, to two decimals?

# %%
prediction_4 = None  # a number, e.g. 0.5 (within 0.01 counts as right)

# %%
from fedrl_kit.lora_factors import factor_round


def lora(u):  # one adapted 2 × 1 weight: U (2 × 1) times D = [[1]]
    return {"w.lora_A.weight": np.ones((1, 1)), "w.lora_B.weight": np.array(u, dtype=float).reshape(2, 1)}


answer_4 = round(factor_round(lora([0, 0]), [lora([1, 0]), lora([1, 0]), lora([0, 1])], [1, 1, 1])["agreement"], 2)
why_4 = (f"the mean update (2/3, 1/3) has length √5/3 = {np.sqrt(5) / 3:.3f} while each client moved 1: a = "
         f"{answer_4}, between 1/√3 = {1 / np.sqrt(3):.2f} (all at right angles) and 1 (all alike)")
notebook.check(prediction_4, answer_4, why_4, tolerance=0.01) if prediction_4 is not None \
    else notebook.reveal(answer_4, why_4)

# %% [markdown]
# ## Where next
# Rerun with `-p method fedprox_grpo`: FedProx adds $\frac{\mu}{2}\lVert\theta_k-\theta\rVert^2$ to each client's
# loss ($\mu$ = `fedprox μ` in the settings). Next: `01_fedgrpo_expert_selection.ipynb`,
# `02_pubswap_balanced_drift.ipynb`, `03_fedmoa_pareto.ipynb`.

