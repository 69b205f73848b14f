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
# *Nayak, Askin, Ustaomeroglu, Joe-Wong, Joshi (CMU): PubSwap.*
#
# **The problem.** In FedAvg-GRPO each client trains its LoRA adapter with $\tau$ GRPO steps on its own prompts
# (**local steps**), then the server averages the adapters. Clients hold different topics, so their adapters
# **drift** apart and the average fits none well.
#
# **The idea.** Make some local steps **public**: all clients answer the same prompts, and the server **swaps**
# answers among them before training.
#
# **The paper's claims.** (1) **Balanced** swapping (others' right answers for a client's wrong ones) reduces drift
# (the paper argues it with a bound). (2) It beats FedAvg-GRPO in **pass@1** (share of right test answers) for
# most $\tau$. (3) For few local steps, a simpler **Random** swap (one shared group drawn from all answers) beats
# Balanced.
#
# **The thread.** A swap gives a gradient where a client's answers were all wrong (§2–3). The paper's bound,
# extended here to a public step without a swap, charges the swap more drift (§4), yet the stored runs find the swap
# cuts drift (§5). Why stays open.

# %% [markdown]
# ## Parameters
# Change, then rerun from the top.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU, the small model) | full (GPU, a Hugging Face LM); smoke, full-smoke: tiny, for tests
seed = 0
num_clients = 4        # N
dirichlet_alpha = 0.3  # Dirichlet concentration of the topic split: smaller, more lopsided (the paper's 0.3)
tau = None             # local steps of the live round (None: the preset's)
run_root = ""          # output folder ("": under runs/pubswap/)
figures_dir = ""       # figures ("": the output folder's)

# %%
from collections import Counter

import numpy as np
import pandas as pd
import torch

pd.set_option("display.max_colwidth", None)  # tables show whole answers

from experiments import findings as F
from experiments import teaching_pubswap as teach
from experiments.stats import t_interval
from fedrl_kit import diagrams, notebook, seeding, viz
from fedrl_kit.grpo import group_advantages
from fedrl_kit.pubswap.method import is_public_step, sample_public_batch
from fedrl_kit.pubswap.public_step import group_table, off_policy_terms, swap_public
from fedrl_kit.rewards.parsing import extract_answer
from fedrl_kit.runs import Run

cfg, run_root, figures = notebook.setup("pubswap", globals(), teach.config_maker(globals()), runs="run_root",
                                        folder=dict(n=num_clients, a=dirichlet_alpha, s=seed), renamed={"taus": "tau"})
T = teach.live_tau(preset_name, tau)  # the live round's τ
probe_run = Run(cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy

# %% [markdown]
# ## 1. One PubSwap round
# | symbol | meaning |
# |---|---|
# | $N$; $\tau$ | clients; local steps per round |
# | $\tau_{\text{swap}}$ | every $\tau_{\text{swap}}$-th local step is public |
# | $b$; $K$ | prompts per step; answers per prompt |
# | $c_n(x)$ | client $n$'s right answers on prompt $x$ |
#
# At the round's end the server averages the LoRA factors $A$ and $B$ separately (**FedIT**). FedAvg-GRPO runs the
# same round with private steps only. Each method compared is an **arm**.
#
# **Task and model:** arithmetic prompts of seven topics, reward 1 for the gold answer; a 1.6 M-parameter
# transformer pretrained by this project on arithmetic, under the clients' LoRA adapters.

# %%
diagrams.named_round_diagram("pubswap", ["client_0", "client_1", f"client_{num_clients - 1}"])  # as the tables name them

# %%
diagrams.step_timeline(T, cfg.pubswap.period)  # cfg.pubswap.period is τ_swap

# %%
public = world.public  # the server's public prompts
print(f"{len(public)} public prompts with gold answers, held by the server; per topic: "
      f"{dict(sorted(Counter(public['topic']).items()))}; also in the test set: "
      f"{len(set(public['prompt']) & set(world.test['prompt']))}; in the clients' pool: "
      f"{len(set(public['prompt']) & set(world.train['prompt']))}")
last_period = T // cfg.pubswap.period - 1  # the round's last τ_swap-period, counted from 0
batch = sample_public_batch(public, cfg.prompts_per_step, cfg.seed, round=1, period_index=last_period)  # b prompts
print(f"the last public step ({T}) draws b = {len(batch['prompt'])}: {', '.join(batch['prompt'])}")

# %% [markdown]
# ## 2. GRPO, and why swap answers
# **A GRPO step** (`grpo.group_advantages`, `grpo.grpo_loss`). On prompt $x$ the client samples $K$ answers $y_k$ from
# its policy $\pi_\theta$, reward $r_k=1$ if right, else 0. The step raises $J$, making answers with advantage
# $\hat{a}_k>0$ more likely:
#
# $$\hat{a}_k=\frac{r_k-\bar{r}}{\sigma_r+10^{-4}},\qquad
# J(\theta)=\frac{1}{\sum_k|y_k|}\sum_{k}\sum_{t}\min\Bigl(\rho_{k,t}\,\hat{a}_k,\;\operatorname{clip}\bigl(\rho_{k,t},\,1-\varepsilon,\,1+\varepsilon_{\text{high}}\bigr)\,\hat{a}_k\Bigr),\qquad\rho_{k,t}=\frac{\pi_\theta(y_{k,t}\mid{x},y_{k,<t})}{\pi_{\text{old}}(y_{k,t}\mid{x},y_{k,<t})}$$
#
# $\bar{r}$, $\sigma_r$: the group's mean and standard deviation; $\rho_{k,t}$: how much likelier token $t$ is now
# than under $\pi_{\text{old}}$, the policy at the step's start; clipping it to $[1-\varepsilon,1+\varepsilon_{\text{high}}]$
# (here [0.8, 1.25]) keeps a step small. A step runs $\mu$ (here 2) Adam updates on $J$.

# %% [markdown]
# **Why swap.** In an all-wrong (or all-right) group every $\hat{a}_k$ is 0: no gradient. One swapped-in right
# answer restores an all-wrong group's. By hand, checked by the package:

# %%
groups = {"all wrong": 0, "one right swapped in": 1, "half right": cfg.num_generations // 2}  # right answers of K
table = {}
for name, right in groups.items():
    r = torch.tensor([1.0] * right + [0.0] * (cfg.num_generations - right))  # rewards r_k
    by_hand = (r - r.mean()) / (r.std() + 1e-4)  # torch's std divides by K − 1: the sample standard deviation
    assert torch.allclose(by_hand, group_advantages(r, cfg.num_generations))  # the package's â_k
    table[f"{name}: r = {' '.join(str(int(v)) for v in r)}"] = by_hand.numpy().round(2)
pd.DataFrame(table, index=[f"â_{k + 1}" for k in range(cfg.num_generations)]).T

# %% [markdown]
# **Balanced** (`swap.balanced_swap`) tops each client's group up toward half right, where a 0/1 reward's variance
# $p(1-p)$ peaks, and no further, to swap in few foreign answers: client $n$ swaps $M_n(x)$ of its wrong answers for
# copies drawn from the $D_n(x)$ right answers the others hold:
#
# $$M_n(x)=\min\bigl((\lfloor{K}/2\rfloor-c_n(x))_+,\;D_n(x)\bigr),\qquad{D}_n(x)=\sum_{n'\neq{n}}c_{n'}(x)$$
#
# **Random** (`swap.random_swap`) draws $K$ of all $N\cdot K$ answers without replacement and sends this **one**
# group to every client.
#
# A swapped-in answer keeps its writer's 0/1. Its $\pi_{\text{old}}$ is the *receiver's* probability of it, so
# $\rho$ starts at 1: no importance correction for this **off-policy** answer (our choice; the paper is silent).
# The round (`method.run_round`):
# ```
# for round p = 1, 2, …:  send (A_p, B_p) to every client
#   for step j = 1..τ:
#     if j mod τ_swap ≠ 0: one GRPO step on b own prompts
#     else (replacing it): server sends b shared prompts with gold answers →
#       each client: K answers each, scored 0/1 against gold → server swaps → one GRPO step
#   A, B = mean A_n, mean B_n   # FedIT
# ```
# **The no-swap control** (ours) takes the same public steps on its own answers (so, like the swapping arms, half as
# many private steps as FedAvg-GRPO at $\tau_{\text{swap}}=2$): Balanced − control isolates the swap.

# %%
print(teach.settings_sentences(cfg, policy, T))  # the live round (§3–4) against the stored runs (§5) and the paper

# %% [markdown]
# ## 3. One swap, step by step
# The table below and §4's measurement come from a **replay**: a round keeps no answer texts, so after one Balanced
# round each client answers the last public step's prompts afresh with its own adapter.

# %%
run, drift = teach.live_round(cfg, policy, "pubswap_balanced", T)  # drift: the package's record after each step
gen = teach.replay_last_public(run, T)  # the trained clients answer the last public step's prompts again
for text in ("<think>53+49</think><answer>102</answer>", "99"):  # reward 1 if this equals the gold answer, else 0
    print(f"an answer {text!r} is read as {extract_answer(text)!r}")  # inside <answer>, else the last number
K, cids = gen.num_generations, gen.client_ids
correct = pd.DataFrame({cid: [int(sum(right)) for right in g["correct"]] for cid, g in zip(cids, gen.generated)},
                       index=[f"{q} (gold {a})" for q, a in zip(gen.batch["prompt"], gen.batch["answer"])])
correct = correct.rename_axis(f"c_n(x): right answers out of K = {K}")
correct

# %% [markdown]
# **The two rules in code**, checked slot by slot against the package's `swap_public`:

# %%
def balanced(right, rng):  # right: [N, K] bool, which answers of one prompt are right → [N, K, 2]: the (client,
    # answer) that fills each slot of each client's group
    N, K = right.shape
    group = np.stack(np.meshgrid(np.arange(N), np.arange(K), indexing="ij"), axis=-1)  # start: own answers
    donor_client, donor_answer = np.nonzero(right)  # every right answer of the prompt
    for n in range(N):
        others = np.flatnonzero(donor_client != n)  # the D_n right answers of other clients
        M_n = min(max(K // 2 - right[n].sum(), 0), len(others))
        if M_n > 0:
            slots = np.sort(rng.choice(np.flatnonzero(~right[n]), M_n, replace=False))  # wrong answers to replace
            donors = rng.choice(others, M_n, replace=False)  # copies: another client may draw the same ones
            group[n, slots] = np.stack([donor_client[donors], donor_answer[donors]], axis=-1)
    return group


def random_rule(right, rng):  # one group of K drawn from all N·K answers, the same for every client
    N, K = right.shape
    drawn = rng.choice(N * K, K, replace=False)
    return np.broadcast_to(np.stack([drawn // K, drawn % K], axis=-1), (N, K, 2))


swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # the package's: b groups per rule
right = [np.array([g["correct"][i] for g in gen.generated], bool) for i in range(len(gen.batch["prompt"]))]
for rule, mine in (("balanced", balanced), ("random", random_rule)):
    rng = seeding.rng("pubswap/swap", gen.seed, gen.round, gen.period)  # that step's draws: one stream, b prompts
    assert all((mine(r, rng) == result.source).all() for r, result in zip(right, swaps[rule]))  # slot by slot
    print(f"{rule}: the code above and swap_public fill every slot alike on all {len(right)} prompts")
# the swap's distortion terms for client_0 and client_1 (§4c), measured now: the live rounds of §4b share the policy and
# its client names, so after them the clients no longer hold this round's adapters
terms = [off_policy_terms(run.clients[cid], gen, swaps["balanced"], n) for n, cid in enumerate(cids[:2])]
x = teach.example_prompt(correct, K)  # a prompt where client_0 is short of right answers
pd.DataFrame({"own": right[x].sum(1), "after Balanced": swaps["balanced"][x].correct.sum(1),
              "after Random": swaps["random"][x].correct.sum(1)}, index=cids).T.rename_axis(
    f"right answers of K = {K} on {gen.batch['prompt'][x]!r}")

# %% [markdown]
# client_0's group after Balanced, slot by slot:

# %%
view = group_table(gen, swaps["balanced"], 0, x)
view.sort_values("from", key=lambda s: s.str.startswith("own"), kind="stable")

# %% [markdown]
# Random's one group on the same prompt, sent to every client:

# %%
drawn = group_table(gen, swaps["random"], 0, x)  # the one group every client gets
print(f"{drawn.attrs['swapped_in']} of client_0's {K} answers come from other clients (on average K(N − 1)/N = "
      f"{K * (len(cids) - 1) / len(cids):g}); right: {int(drawn['correct'].sum())} in the group, {right[x].sum()} in the "
      f"pool of all {len(cids) * K} answers")
teach.random_view(drawn, cids[0])

# %% [markdown]
# **Try:** below, Random's group where it lost most right answers. What would Balanced give this client? Can it
# ever take a right answer away?

# %%
teach.swap_try(gen, swaps, correct)  # Random's costliest case, widgets to try others, then (folded) Balanced's

# %% [markdown]
# ### Exercise 1
# On one prompt, client_0 to client_3 get $c_n(x)=0, 2, 0, 0$ of $K=8$ right. How many right answers does each
# group hold after Balanced?

# %%
prediction_1 = None  # four whole numbers (client_0 … client_3), e.g. (4, 4, 4, 4)

# %%
answer_1, why_1 = teach.exercise_balanced_counts((0, 2, 0, 0), K=8)
notebook.check_explained(prediction_1, answer_1, why_1)

# %% [markdown]
# ### Exercise 2
# In the $c_n(x)$ table, on how many prompts does Random leave every client without a gradient, whatever it draws?
# On how many does Balanced?

# %%
prediction_2 = None  # two whole numbers (Random, Balanced), e.g. (1, 0)

# %%
answer_2, why_2 = teach.exercise_no_spread(gen, swaps, correct)
notebook.check_explained(prediction_2, answer_2, why_2)

# %% [markdown]
# ## 4. Drift
# Each client's mix of the seven topics:

# %%
fig = teach.heterogeneity_figure(probe_run.partitions, dirichlet_alpha)
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown]
# ### 4a. Why drift hurts
# A LoRA layer changes its weights by $\Delta{W}=sBA$, with scale
# $s=\alpha_{\text{LoRA}}/r$ ($r$: the rank). FedIT averages $B$ and $A$ separately, but a product of
# averages is not the average of products:
#
# $$\frac1N\sum_nB_nA_n-\bar{B}\bar{A}=\frac1N\sum_n(B_n-\bar{B})(A_n-\bar{A})$$
#
# The error grows as the factors drift apart.
#
# ### Exercise 3
# Two clients with $1\times1$ factors and $s=1$ both learned $\Delta{W}=4$: client 1 with $(B,A)=(2,2)$, client 2 with
# $(-1,-4)$. Is the $\Delta{W}$ of FedIT's average positive, zero or negative?

# %%
prediction_3 = None  # "positive", "zero" or "negative"

# %%
answer_3, why_3 = teach.exercise_fedit(((2.0, 2.0), (-1.0, -4.0)))
notebook.check_explained(prediction_3, answer_3, why_3)

# %% [markdown]
# ### 4b. How we measure drift
# We measure drift on what the model applies, $\Delta{W}$; it cannot see Exercise 3's case (equal $\Delta{W}$,
# different factors), so the live round also prints FedIT's error itself. With $\Delta{W}_n=sB_nA_n$, client $n$'s whole adapter, all
# layers in one vector, the **drift** $\delta_{\text{pair}}$ is the
# mean distance between two clients, the **update size** $u$ a client's mean distance from the round's start
# $\Delta{W}_p$:
#
# $$\delta_{\text{pair}}=\frac{2}{N(N-1)}\sum_{n<n'}\lVert\Delta{W}_n-\Delta{W}_{n'}\rVert_F,\qquad{u}=\frac1N\sum_n\lVert\Delta{W}_n-\Delta{W}_p\rVert_F$$
#
# $\delta_{\text{pair}}/u$ says how alike their directions are; for two updates of length 3:

# %%
for name, (w1, w2) in {"identical": ([3, 0], [3, 0]), "orthogonal": ([3, 0], [0, 3]),
                       "opposite": ([3, 0], [-3, 0])}.items():
    dW = np.array([w1, w2], float)  # [N, P] the clients' ΔW_n
    d, u = np.linalg.norm(dW[0] - dW[1]), np.linalg.norm(dW, axis=1).mean()
    print(f"{name:10}: δ_pair = {d:.2f}, u = {u:.2f}, δ_pair / u = {d / u:.2f}")

# %%
# after the live round: δ_pair and u by hand, then as fedrl_kit.drift recorded them
s = cfg.lora_alpha / cfg.lora_rank  # LoRA's scale


def delta_W(factors):  # s·B·A of every LoRA layer, as one vector
    return np.concatenate([(s * factors[k.replace("lora_A", "lora_B")] @ factors[k]).ravel()
                           for k in sorted(factors) if "lora_A" in k])


last = run.tensors[T - 1]  # {client: its LoRA factors after the round's last local step}
dW = np.stack([delta_W(last[cid]) for cid in sorted(last)])  # [N, P] ΔW_n
dW_p = delta_W(run.tensors["global"])  # [P] ΔW_p: the adapter broadcast at the round's start
N = len(dW)
print(f"s = {cfg.lora_alpha:g}/{cfg.lora_rank} = {s:g}; ΔW_n holds {dW.shape[1]:,} numbers (one per weight of every adapted matrix: the product, not the factors); ‖ΔW_p‖ = "
      f"{np.linalg.norm(dW_p):g}" + (" (a fresh adapter has B = 0)" if not np.linalg.norm(dW_p) else ""))
delta_pair = np.mean([np.linalg.norm(dW[n] - dW[m]) for n in range(N) for m in range(n + 1, N)])
u = np.linalg.norm(dW - dW_p, axis=1).mean()
print(f"by hand: δ_pair = {delta_pair:.3f}, u = {u:.3f}; the package: δ_pair = "  # pairwise_effective is δ_pair
      f"{drift[T - 1]['pairwise_effective']:.3f}, u = {drift[T - 1]['to_global_effective']:.3f}")

# %%
# step by step, beside FedAvg-GRPO and the control
drifts, tensors = {}, {}  # per arm: the drift record and the tensors after each local step
for method in ("fedavg_grpo", "pubswap_noswap", "pubswap_balanced"):  # the same start, seed and τ
    arm = teach.ARMS[method]
    other, drifts[arm] = (run, drift) if method == "pubswap_balanced" else teach.live_round(cfg, policy, method, T)
    tensors[arm] = other.tensors
d = {arm: record[T - 1]["pairwise_effective"] for arm, record in drifts.items()}  # δ_pair after the last step
# ("effective": measured on ΔW = sBA, not on the factors)
public_cut, swap_cut = d["no-swap control"] - d["FedAvg-GRPO"], d["PubSwap Balanced"] - d["no-swap control"]
print(f"after step {T}: δ_pair {', '.join(f'{arm} {v:.2f}' for arm, v in d.items())}; control − FedAvg-GRPO "
      f"{public_cut:+.2f}, Balanced − control {swap_cut:+.2f}: one seed, one round, an example, not evidence; here "
      + ("the public steps cut more than the swap" if public_cut < swap_cut else "the swap cuts more than the public "
         "steps") + " (§5 has the stored runs)")


def fedit_error(factors):  # ‖mean_n s·B_n·A_n − s·B̄·Ā‖: what FedIT's average loses (§4a), all layers in one vector
    mean_factors = {k: np.mean([f[k] for f in factors.values()], axis=0) for k in next(iter(factors.values()))
                    if "lora_" in k}
    return np.linalg.norm(np.mean([delta_W(f) for f in factors.values()], axis=0) - delta_W(mean_factors))


print("FedIT's error at the round's end, ‖mean ΔW_n − s·B̄·Ā‖: "
      + ", ".join(f"{arm} {fedit_error(t[T - 1]):.3f}" for arm, t in tensors.items()))
fig = teach.live_drift_figure(drifts, cfg.pubswap.period)
viz.export(fig, "pubswap_live_drift", figures)
fig

# %% [markdown]
# **The shared pull:** the mean cosine of two clients' gradients, step by step:

# %%
def mean_cosine(vectors):  # mean over client pairs of cos(v_n, v_n'); a zero gradient has no direction: left out
    # vectors: each client's gradient at its step's first update, on the groups it trains on (after any swap)
    v = [g / np.linalg.norm(g) for g in vectors if np.linalg.norm(g) > 0]
    pairs = [v[n] @ v[m] for n in range(len(v)) for m in range(n + 1, len(v))]
    return np.mean(pairs) if pairs else np.nan


public_steps = [j for j in range(T) if is_public_step(j, cfg.pubswap.period)]
pull = pd.DataFrame({f"{j + 1}" + (" (public)" if j in public_steps else ""):
                     {f"cos: {arm}": f"{mean_cosine([t[j][cid]['grad'] for cid in sorted(t[j])]):.2f}"
                      for arm, t in tensors.items()} for j in range(T)})
for arm, key, row in (("PubSwap Balanced", "replacement_fraction", "Balanced: share of answers swapped in"),
                      ("no-swap control", "frac_zero_std", "control: groups without gradient"),
                      ("PubSwap Balanced", "frac_zero_std", "Balanced: groups without gradient")):
    pull.loc[row] = [f"{drifts[arm][j][key]:.0%}" if j in public_steps else "" for j in range(T)]  # the package's
pull.rename_axis("local step j →")

# %% [markdown]
# ### 4c. What the paper's bound predicts
# The paper derives the private and Balanced cases (its appendix A); the no-swap line is ours, by the same argument,
# and Exercise 4 extends it to Random. It assumes one plain gradient step of size $\eta$ per GRPO step (ours: $\mu$ Adam updates). A sampled gradient is
# its **expectation** $g_n$ over the answers plus noise $\xi_n$.
#
# | symbol | meaning |
# |---|---|
# | $\theta_n$; $\Delta_j$ | client $n$'s LoRA factors; $\lVert\theta_n-\theta_{n'}\rVert$ after step $j$ ($\Delta_0=0$) |
# | $L$ | smoothness: $\lVert{g_n(\theta)-g_n(\theta')}\rVert\le{L}\lVert\theta-\theta'\rVert$ |
# | $\gamma_j$ | step $j$'s gap $\lVert{g_n(\theta)-g_{n'}(\theta)}\rVert$, both at the same $\theta$ |
# | $\zeta$ | **heterogeneity**: $\gamma_j$ of a private step (different prompts) |
# | $\omega_n$ | swap distortion: $\lVert{g_n^{\text{swap}}-g_n}\rVert$ |
#
# Per step, and over $\tau$:
#
# $$\Delta_{j}\le(1+\eta{L})\Delta_{j-1}+\eta\gamma_j+\eta\bigl(\lVert\xi_n\rVert+\lVert\xi_{n'}\rVert\bigr),\qquad
# \Delta_\tau\le\eta\sum_{j=1}^{\tau}(1+\eta{L})^{\tau-j}\bigl(\gamma_j+\lVert\xi_n\rVert+\lVert\xi_{n'}\rVert\bigr)$$
#
# - **Private step**: $\gamma_j=\zeta$.
# - **Public, no swap**: at one $\theta$, on the same prompts, expected gradients are equal: $\gamma_j=0$.
# - **Balanced**: a client's donors are the *other* clients, whose drifted policies wrote the copies: even in
#   expectation groups differ:
#   $\gamma_j\le\omega_n+\omega_{n'}$, with $\omega_n\le\frac1b\sum_xM_n(x)\beta_n(x)$, $\beta_n(x)$ the most one
#   swapped answer changes the gradient on prompt $x$.

# %%
# measured from sampled answers: ω̂ and β̂ on §3's replay, after the round (terms, from §3); β̂ only over the swaps
# made, so the true bound on ω lies above the printed one; ζ̂ on step 1, where every client starts at the same θ
print(teach.bound_report(terms[0]))  # ĝ: the gradient of client_0's GRPO loss in its LoRA factors
first = [run.tensors[0][cid]["grad"] for cid in cids]  # each client's ĝ on step 1 (private), at the broadcast θ
zeta = np.mean([np.linalg.norm(first[n] - first[m]) for n in range(len(cids)) for m in range(n + 1, len(cids))])
assert np.isclose(zeta, drift[0]["zeta"])  # the package's ζ̂, the same mean over pairs
print(f"Balanced's γ ≤ ω̂_0 + ω̂_1 = {terms[0]['omega']:.3f} + {terms[1]['omega']:.3f} = "
      f"{terms[0]['omega'] + terms[1]['omega']:.3f}, against a private step's ζ̂ = {zeta:.3f}"
      + (": a Balanced public step is charged less than a private one" if terms[0]['omega'] + terms[1]['omega'] < zeta
         else ": a Balanced public step is charged no less than a private one")
      + " (both estimates from sampled gradients, ω̂ after the round, ζ̂ at its first step)")

# %% [markdown]
# ### Exercise 4
# Random sends every client one and the same group. With $\zeta$, $L$ and $\eta$ the same for every arm, which
# arms' bound on $\Delta_\tau$ is smallest?

# %%
prediction_4 = None  # a set of arms from "FedAvg-GRPO", "no-swap control", "Random", "Balanced"

# %%
answer_4, why_4 = teach.exercise_bound()
notebook.check_explained(prediction_4, answer_4, why_4)

# %% [markdown]
# **What the bound leaves out: shared noise.** It adds $\lVert\xi_n\rVert+\lVert\xi_{n'}\rVert$ for every arm, as
# if independent; shared answers (Balanced's copies, Random's whole group) make part of $\xi_n-\xi_{n'}$ cancel.

# %% [markdown]
# ## 5. What the reproduction found
# The bounds put the no-swap control and Random below Balanced (Exercise 4); a bound is not drift, so the runs
# measure the order directly, on $\Delta{W}$. Their $\delta_{\text{pair}}$ and $\delta_{\text{pair}}/u$ at each
# round's end (after step $\tau$, before FedIT), averaged over rounds, at $\tau=48$:

# %%
fig = teach.stored_drift_figure()
viz.export(fig, "pubswap_stored_drift", figures)
fig

# %% [markdown]
# ### Exercise 5
# Compare Random's and FedAvg-GRPO's black diamonds on both panels. Is Random's update size $u$ larger, smaller or
# equal?

# %%
prediction_5 = None  # "larger", "smaller" or "equal"

# %%
answer_5, why_5 = teach.exercise_update_size()
notebook.check_explained(prediction_5, answer_5, why_5, table=teach.update_sizes())  # each arm's u at τ = 48

# %% [markdown]
# **Which arms ran** (seeds):

# %%
runs = teach.stored_runs()  # one row per stored run: arm, τ, seed, δ_pair, u, pass@1 (%), pass@1 before GRPO (%)
design = runs.pivot_table(index="arm", columns="tau", values="seed", aggfunc=lambda s: ", ".join(map(str, sorted(s))))
design.columns = [f"τ = {t} ({r} rounds)" for t, r in runs.groupby("tau").rounds.first().items()]
design.fillna("not run").reindex(teach.ORDER)

# %% [markdown]
# **Drift, paired by seed:** first arm minus second, mean ± 95% t half-width;
# "cannot tell": it holds 0.

# %%
def difference(value, a, b, tau):  # a − b over the seeds both ran at τ: (mean, 95 % half-width, seeds), or None
    both = runs[runs.tau == tau].pivot_table(index="seed", columns="arm", values=value).reindex(columns=[a, b])
    both = both.dropna()
    return None if both.empty else t_interval(both[a] - both[b])


def paired(value, a, b, tau):  # difference() as a table cell
    if (d := difference(value, a, b, tau)) is None:
        return "not run"
    mean, half, n = d
    reads = "cannot tell" if abs(mean) <= half else "lower" if mean < 0 else "higher"  # does the interval hold 0?
    return f"{mean:+.2f} ± {half:.2f} ({n} seeds): {reads}"


def by_tau(rows):  # one column per row (value, a, b), one line per stored τ
    return pd.DataFrame({row: {tau: paired(value, a, b, tau) for tau in sorted(runs.tau.unique())}
                         for row, (value, a, b) in rows.items()}).rename_axis("τ")


runs["δ_pair / u"] = runs["δ_pair"] / runs["u"]  # per run: how alike the clients' directions are
by_tau({"1. δ_pair: Balanced − FedAvg-GRPO": ("δ_pair", "PubSwap Balanced", "FedAvg-GRPO"),
        "2. δ_pair: control − FedAvg-GRPO": ("δ_pair", "no-swap control", "FedAvg-GRPO"),
        "3. δ_pair: Balanced − control": ("δ_pair", "PubSwap Balanced", "no-swap control")})

# %%
by_tau({"4. u: Balanced − control": ("u", "PubSwap Balanced", "no-swap control"),  # the swap's cut: shorter moves?
        "5. δ_pair / u: Balanced − control": ("δ_pair / u", "PubSwap Balanced", "no-swap control")})  # more alike?

# %% [markdown]
# **Accuracy:** final pass@1 (%) over the seeds all arms ran at that τ, then paired:

# %%
gains = F.pubswap_paper_gains()  # Balanced − FedAvg-GRPO in the paper's Table 1, points
print(f"the paper's Balanced − FedAvg-GRPO: {gains.min().min():+.1f} to {gains.max().max():+.1f} points "
      f"({gains.size} cells: 2 models × 2 benchmarks × 4 τ)")
teach.pass1_by_tau(same_seeds=True)  # the policy before GRPO first

# %%
top = runs.tau.max()
mean, half, n = difference("pass@1", "PubSwap Balanced", "FedAvg-GRPO", top)  # row 6 at the largest τ
last = gains.columns[-1]  # the paper's largest τ, 120: a third of its budget (ours, 48: a half)
print(f"row 6 at τ = {top}: the 95 % interval runs from {mean - half:+.2f} to {mean + half:+.2f} points; "
      f"{int((gains > mean + half).sum().sum())} of the paper's {gains.size} gains lie above it, "
      f"{int((gains[last] > mean + half).sum())} of its {len(gains)} at {last}")
by_tau({"6. pass@1: Balanced − FedAvg-GRPO": ("pass@1", "PubSwap Balanced", "FedAvg-GRPO"),  # in points
        "7. pass@1: Random − Balanced": ("pass@1", "PubSwap Random", "PubSwap Balanced")})

# %% [markdown]
# ### Findings
# 1. Balanced keeps clients closer than FedAvg-GRPO at $\tau$ = 8, 32, 48 (row 1): claim (1) holds there.
# 2. Where the control ran ($\tau$ = 32, 48), the public steps' own cut: cannot tell (row 2). The swap's: yes
#    (row 3), with directions more alike (row 5) and at $\tau$ = 32 shorter moves (row 4).
#    Shared noise alone predicts Random, sharing whole groups, the most aligned; the runs do not show it (Exercise
#    5's table).
#    The live round hints at shared *signal*: Balanced leaves fewer groups without gradient than the control, and its
#    public gradients agree more at steps 4 and 6 (§4b's table).
# 3. No $\tau$ tells Balanced's pass@1 from FedAvg-GRPO's (row 6): at this scale the lower drift bought no visible
#    accuracy. At $\tau$ = 48 (5 seeds) the interval excludes
#    any gain above 0.65 points, and 10 of the paper's 16 gains are larger: claim (2) is not reproduced there, open
#    elsewhere.
# 4. Claim (3) is not reproduced: at our smallest $\tau$, 2, Random scores *below* Balanced (row 7), as at
#    $\tau$ = 48. Its one shared group can hold no right answer (§3's Random group).
#
# Every claim: [12_pubswap_report](12_pubswap_report.ipynb#findings).
