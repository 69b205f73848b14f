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
# # FedGRPO: the server learns from the scores of expert clients
#
# *Zhu, Gu, Fan, Yang, Han: FedGRPO, AAAI 2026 (arXiv:2602.12014).*
#
# **The problem.** A server wants to improve its language model on questions only its $K$ **clients** can judge:
# each holds private labelled data of a few topics and shares neither data nor model updates. FedGRPO: **the server
# trains, the clients only grade**. Per question the server samples $G$ candidate answers and asks $M$ **experts**,
# the clients most **competent** on similar questions (how often a client's small **domain model** answers the
# server's nearest labelled questions right). An expert scores each candidate by **answer-based evaluation (AE)**,
# an exact check, if it holds the question's label, else by **model-based evaluation (ME)**, its domain model's
# probability of that answer; the scores become a GRPO reward. Two ideas: **competence-based expert selection**
# (eqs. 5–6) and a **group-relative reward** (eqs. 8–9), which as printed cancels out (§2).
#
# **The paper's claim** (Table 1: mean **pass@1**, the fraction of problems one sampled answer solves, over six math
# test sets): FedGRPO beats **Fedpetuning+GRPO** (clients GRPO-tune LoRA adapters on their data, the server averages
# them: notebook 00's FedAvg-GRPO) and nearly matches **Central-GRPO** (GRPO on all data pooled, the upper bound):

# %%
from experiments.findings import fedgrpo_paper_table
from IPython.display import Markdown, display

paper = fedgrpo_paper_table()  # points; copied from the paper
display(paper)
Markdown(f"In its six settings FedGRPO beats Fedpetuning+GRPO by {paper.iloc[:, 4].min():.1f} to "
         f"{paper.iloc[:, 4].max():.1f} points and sits {paper.iloc[:, 5].min():+.1f} to {paper.iloc[:, 5].max():+.1f} "
         "points from Central-GRPO. §7 puts the reproduction's numbers beside these.")

# %% [markdown]
# Runs use the **embedded world** (notebook 00: arithmetic in seven topics, a tiny policy). An **arm** is one
# method or variant at a fixed budget. §1–4 trace one server step, §5 trains two arms, §7–8 read stored arms, §10
# sums up. Full reproduction: [11_fedgrpo_report.ipynb](11_fedgrpo_report.ipynb).

# %% [markdown]
# ## Parameters
# Papermill's (`-p M 4`); a wrong or old name stops in one line.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
num_clients = 8        # K clients (the paper: 4 to 20)
dirichlet_alpha = 0.1  # Dirichlet concentration of the topic split (smaller: fewer topics per client), or "iid"
L = 20                 # neighbours per question, eq. 5 (paper: 20 of 100)
M = 2                  # experts per question, eq. 6 (paper: 2)
seed = 0               # one seed: one world, partition and run
question = 0           # the question of D_s the step-through follows
run_root = ""          # where the runs go ("": runs/fedgrpo/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import json

import numpy as np
import pandas as pd

from experiments import fedgrpo_comm as comm
from IPython.display import Markdown, display

from experiments.fedgrpo_claims import METHOD_NAMES, arm_diagnostics, load_arms
from experiments.findings import (FEDGRPO_BASE_ROW, FEDGRPO_SAME_REWARD_FILE, fedgrpo_closing_summary,
                                  fedgrpo_finding_notes, fedgrpo_findings, fedgrpo_gap_sources, fedgrpo_plateaus,
                                  fedgrpo_scale_down, fedgrpo_traces, fedgrpo_window_note, fedgrpo_window_table,
                                  fedgrpo_windows, interval_words)
from experiments.stats import t_interval
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.config import preset
from fedrl_kit.fedgrpo.algorithm import questions_per_step
from fedrl_kit.fedgrpo.diagnostics import hit_differences, selection_quality, server_view, trace_question
from fedrl_kit.fedgrpo.graph import confidence_graph
from fedrl_kit.policy.engine import Policy
from fedrl_kit.runs import Run, resolve_base
from fedrl_kit.world.partition import topic_matrix

SIZES = {"quick": dict(rounds=3, local_steps=1, prompts_per_step=2, eval_samples=2),  # the budget of every run
         "full": dict(rounds=10, local_steps=2, prompts_per_step=8, eval_samples=4),
         "smoke": dict(rounds=1, local_steps=1, prompts_per_step=1, eval_samples=1)}
SFT_STEPS = {"quick": 30, "full": 60, "smoke": 2}  # each client's domain model: SFT steps on its own data


def make_config(p, method="fedgrpo"):
    """The config of ``method`` on preset ``p``: the same world, federation and budget for every method."""
    size = "smoke" if notebook.is_smoke(preset_name) else p
    split = dict(partition="iid") if dirichlet_alpha == "iid" else dict(dirichlet_alpha=float(dirichlet_alpha))
    sections = dict(fedgrpo=dict(neighbours=L, num_experts=M), evaluator=dict(sft_steps=SFT_STEPS[size])) \
        if method == "fedgrpo" else {}
    smoke = notebook.smoke_fields(preset_name, notebook.SMOKE_SIZES["fedgrpo"], fixed=("num_clients", *SIZES["quick"]))
    return preset(p, method=method, num_clients=num_clients, seed=seed, **split, **sections, **SIZES[size], **smoke)


cfg, run_root, figures = notebook.setup("fedgrpo", globals(), make_config, runs="run_root",
                                        folder=dict(k=num_clients, a=dirichlet_alpha, L=L, M=M, s=seed),
                                        renamed={"beta": "dirichlet_alpha"})  # beta is GRPO's KL coefficient
policy = Policy.load(resolve_base(cfg.base), cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.chat, cfg.max_new_tokens,
                     cfg.temperature, cfg.device, getattr(__import__("torch"), cfg.dtype))  # shared by every run
notebook.start_run_dir(run_root / "fedgrpo")
tour = Run(cfg, run_root / "fedgrpo", progress=False, policy=policy).build()
world, Q = tour.server.world, questions_per_step(cfg)
display(pd.Series({"K clients": cfg.num_clients, "M experts per question": M, "L neighbours": L,
                   "G candidates per question": cfg.num_generations, "Q questions per server step": Q,
                   "τ server steps per round": cfg.local_steps, "rounds R": cfg.rounds,
                   "num_iterations (passes per step)": cfg.num_iterations,
                   "ε, ε_high (clip)": f"{cfg.epsilon}, {cfg.epsilon_high}", "KL coefficient (config beta)": cfg.beta,
                   "LoRA rank (config lora_rank)": cfg.lora_rank,
                   "Dirichlet concentration (dirichlet_alpha)": dirichlet_alpha,
                   "SFT steps of each domain model": cfg.evaluator.sft_steps}, name="this run").to_frame())
n_params = sum(w.numel() for n, w in policy.model.named_parameters() if "lora_" not in n)  # the base only
setup = pd.DataFrame({"size": [f"{len(world.queries):,} questions", f"{len(world.aux)} labelled questions",
                       f"{len(world.test)} problems × {cfg.eval_samples} samples",
                       f"{Q} = {cfg.prompts_per_step} × {cfg.num_clients}",
                       "a vector per question", f"{n_params / 1e6:.1f} M parameters"],
              "who holds it, who sees it": [
                  "D_s = ∪ D_k, split over the clients by topic (Dirichlet, dirichlet_alpha); each question's owner "
                  "(the client "
                  "holding it) has its label; the server gets the questions, never the labels",
                  "D_p, the server's; it sends questions and labels to every client once, to measure competence",
                  "the server's test set; pass@1 moves in steps of one problem-sample, "
                  f"1/{len(world.test) * cfg.eval_samples}",
                  "questions per server step: prompts_per_step × K, the prompts FedAvg-GRPO's K clients take per "
                  "local step together, so both methods see as many questions (FedGRPO's clients train only their domain model, once, before the "
                  "rounds)",
                  "φ, the frozen encoder: the base policy's hidden states after decoder layer "
                  f"{cfg.fedgrpo.encoder_layer}, mean-pooled, ℓ2-normalised (config fedgrpo.encoder)",
                  "the server's policy π_θg: a tiny transformer, LoRA-tuned (θ_g is its adapter)"]},
             index=["training questions", "auxiliary questions", "test set", "Q", "φ", "base model"])
with pd.option_context("display.max_colwidth", None):  # the whole sentences
    display(setup)

# %% [markdown]
# ## 1. One server step, drawn
# Repeated $\tau$ times a round, on $Q$ questions each time. Here client_0 and the last are experts; client_1 is
# not asked.

# %%
diagrams.named_round_diagram(diagrams.FEDGRPO_AS_TRAINED, ["client_0", "client_1", f"client_{num_clients - 1}"])

# %% [markdown]
# ## 2. Key equations
# **GRPO** (notebook 00): $G$ answers $\hat y_j$ to a question $x$, rewards $r_j$ standardised within the group,
# PPO's clipped surrogate over all answer tokens $t$:
#
# $$A_j = \frac{r_j - \operatorname{mean}(r)}{\operatorname{std}(r) + 10^{-6}},\qquad
# \max_\theta\ \frac{1}{\sum_j |\hat y_j|}\sum_{j,t}\min\bigl(\rho_{j,t}A_j,\ \operatorname{clip}(\rho_{j,t},
# 1-\epsilon, 1+\epsilon_{\text{high}})A_j\bigr),\qquad \rho_{j,t} = \frac{\pi_\theta(\hat y_{j,t}\mid x,
# \hat y_{j,<t})}{\pi_{\text{old}}(\hat y_{j,t}\mid x, \hat y_{j,<t})}$$
#
# $\pi_{\text{old}}$ sampled the answers. No KL term (config `beta` = 0). FedGRPO changes only **where $r_j$ comes
# from**.
#
# **Eq. 5.** The server embeds $x_s$ with the frozen encoder $\phi$ and finds its $L$ nearest labelled auxiliary
# questions:
#
# $$\mathcal{G}(x_s) = \{(x_{p,\ell}, y_{p,\ell})\}_{\ell=1}^{L},\qquad
# \langle z_s, z_{p,1}\rangle \ge \dots \ge \langle z_s, z_{p,L}\rangle,\quad z = \phi(x)/\lVert\phi(x)\rVert
# \qquad\text{(`expert_selection.nearest_exemplars`)}$$
#
# **Eq. 6.** Client $k$'s **competence** on $x_s$: the probability its domain model $\theta_k$ answers those
# neighbours right (the mean of the paper's 0/1 indicator):
#
# $$r_k^p(x_s) = \frac{1}{L}\sum_{\ell=1}^{L} \Pr\bigl[\theta_k \text{ answers } x_{p,\ell} \text{ with }
# y_{p,\ell}\bigr],\qquad \mathcal{C}(x_s) = \operatorname{Top-}M_k\; r_k^p(x_s)
# \qquad\text{(`expert_selection.select_experts`)}$$
#
# **Dual evaluation**: an expert scores a candidate by AE if it holds $x_s$'s label, $r_k^s = \mathbb{1}[\text{answer of }\hat y_j
# = y(x_s)]$, else by ME, $r_k^s = \pi_{\theta_k}(\text{answer of }\hat y_j \mid x_s)$ (`FedGRPOClient.on_score`).
# **Eqs. 8–9 as printed** (eq. 7 repeats eq. 8), with learning rate $\eta$:
#
# $$\mu_r = \frac{1}{M}\sum_{k\in\mathcal{C}} r_k^s,\quad
# \sigma_r = \sqrt{\frac{1}{M}\sum_{k\in\mathcal{C}} (r_k^s-\mu_r)^2},\quad
# R_k = \frac{r_k^s - \mu_r}{\sigma_r + 10^{-6}},\quad
# \theta_g \leftarrow \theta_g + \eta\, R_k \nabla_{\theta_g}\log\pi_{\theta_g}(\hat y\mid x_s)$$
#
# **Why it cannot train as printed.** $\sum_k R_k = 0$ for every candidate: eq. 9 measures the experts'
# *disagreement* (`group_reward.group_relative_rewards`), and summed over experts the update vanishes. **What we
# train:** Remark 2 says eq. 9's "group" is the clients' reward signals and corresponds to GRPO's candidates; we read
# it as GRPO's group of $G$ candidates: the experts' mean score plus the **format reward** $f_j$ (1 if $\hat y_j$ is exactly `<think>…</think><answer>…</answer>`, else 0), weighted 8 and 1 as in
# the paper, then $A_j$:
#
# $$\tilde r_j = 8\,\mu_r(\hat y_j) + 1\cdot f_j \qquad\text{(`group_reward.candidate_advantages`, variant "paper")}$$
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$; $M$, $\mathcal{C}(x_s)$ | clients; experts per question, the chosen ones |
# | $L$, $\mathcal{G}(x_s)$; $\phi$ | neighbours per question, their set; the frozen encoder |
# | $\mathcal{D}_k$, $\theta_k$; $\theta_g$ | client $k$'s data, its domain model; the server's policy |
# | $\mathcal{D}_s$, $x_s$; $\mathcal{D}_p$ | training questions, one of them; auxiliary questions |
# | $r_k^p$; $r_k^s$; $\mu_r$, $\sigma_r$; $R_k$ | competence; a score; the experts' mean, std; eq. 9 |
# | $G$, $\hat y_j$; $Q$; $\tau$ | candidates, candidate $j$; questions per step; steps per round |
# | $f_j$, $\tilde r_j$, $A_j$ | format reward, trained reward, advantage |
# | hit rate | share of experts holding the question's topic (≥ 10 % of their data) |
#
# ## 3. Pseudocode
# Algorithm 1 as run here (the reward line is our reading); each line names its function in `fedrl_kit/fedgrpo/`:
# ```
# for round = 1..R:                                                    # algorithm.run_round
#   for step = 1..τ:                                                   # algorithm.server_step
#     draw Q questions x_s from D_s                                    # algorithm.sample_questions
#     G candidates ŷ ~ π_θg(·|x_s)                                     # algorithm.sample_candidates
#     G(x_s) = L nearest auxiliary questions            (eq. 5)        # expert_selection.nearest_exemplars
#     ask every client its competence on D_p, once                     # algorithm.ask_competence
#     C(x_s) = Top-M clients by r_k^p                   (eq. 6)        # algorithm.choose_experts
#     send (x_s, ŷ) to each expert; get G scores r_k^s                 # algorithm.collect_scores, client.on_score
#     A_j from r̃_j = 8·μ_r(ŷ_j) + f_j   (our reading of eqs. 8–9)     # algorithm.advantages_from_scores
#     one clipped-surrogate GRPO step on θ_g                           # algorithm.policy_step
# ```

# %% [markdown]
# ## 4. One question, step by step
# How the training questions $\mathcal{D}_s$ are split over the clients (topic counts):

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(tour.partitions)

# %% [markdown]
# `trace_question` runs training's `server_step` on one question, without the update. **Eq. 5**, neighbours:

# %%
tr = trace_question(tour.server, question, L=L, M=M, seed=seed, truth=tour.truth)
print(f"x_s = {tr['question']!r}   topic: {tr['topic']}   (answer {tr['answer']}: the server never sees it)")
pd.DataFrame(tr["neighbours"]).round(3).head(6)


# %% [markdown]
# **Eq. 6**: each client's competence $r_k^p$ and the $M$ experts. `topic share` (hidden from the server): the
# client's fraction of data in the question's topic.

# %%
def competence_table(tr, run):
    share = [sum(t == tr["topic"] for t in p["topic"]) / len(p) for p in run.partitions]
    return pd.DataFrame({"r_k^p": tr["competence"], "topic share": share,
                         "expert": ["✔" if k in tr["experts"] else "" for k in range(len(share))]},
                        index=[f"client_{k}" for k in range(len(share))]).round(3)


competence_table(tr, tour)


# %% [markdown]
# **Scores, eq. 9, advantage.** Each expert's score (AE or ME), eq. 9's $R_k$ (rows sum to zero) and the
# advantage $A_j$ that trains. `correct`: the truth, for you only.

# %%
def candidate_table(tr, run):
    cids = run.runtime.client_ids
    df = pd.DataFrame({"candidate": tr["candidates"], "correct": tr["correct"], "f_j": tr["format"]})
    for row, k in enumerate(tr["experts"]):
        df[f"r^s {cids[k]} ({tr['pathways'][row]})"] = tr["scores"][row]
    for row, k in enumerate(tr["experts"]):
        df[f"R_k {cids[k]}"] = tr["eq9"][row]
    df["A_j (our reading)"] = tr["advantages"]["paper"]  # the package's variant "paper": r̃_j = 8·μ_r + f_j, §2
    return df.round(3)


candidate_table(tr, tour)

# %% [markdown]
# **By hand**, the first candidate's advantage:

# %%
r_tilde = 8 * tr["scores"].mean(axis=0) + 1 * tr["format"]  # the trained reward r̃_j of every candidate
print(f"r̃ = {np.round(r_tilde, 3).tolist()}")
print(f"A_1 by hand = {(r_tilde[0] - r_tilde.mean()) / (r_tilde.std() + 1e-6):.4f}, "
      f"package = {tr['advantages']['paper'][0]:.4f}")

# %% [markdown]
# **Which candidate gains most?**

# %%
adv, right, fmt = tr["advantages"]["paper"], tr["correct"], tr["format"]
top = int(np.argmax(adv))
mu = tr["scores"].mean(axis=0)
said = [f"The top advantage, A = {adv[top]:.3f}, goes to the candidate in row {top} ({tr['candidates'][top]!r}), "
        "which is "
        f"{'right' if right[top] else 'WRONG'} and {'well' if fmt[top] else 'badly'} formatted (f = {fmt[top]:.0f})."]
if not right[top] and fmt[top]:
    said.append(f"{int(right.sum())} of {len(right)} candidates are right, and the experts' mean scores span only "
                f"{mu.min():.3f}–{mu.max():.3f}, so 8·μ_r separates the candidates by at most {8 * np.ptp(mu):.2f} "
                f"while the format bonus adds a full 1 to the formatted ones. **The reward is expert score × 8 + "
                "format**: when no expert can vouch for an answer, it teaches the format, right or wrong: one way the "
                "format rate can rise while accuracy stays (compare them in §5).")
elif right[top]:
    said.append("The experts' scores put the right answer first: this is the case the method is built for.")
Markdown(" ".join(said))

# %% [markdown]
# **The case the method is built for**: the next question where an AE expert scores a right candidate 1:

# %%
for q2 in range(question + 1, min(question + 80, len(tour.server.world.queries))):  # stops at the first such one
    tr2 = trace_question(tour.server, q2, L=L, M=M, seed=seed, truth=tour.truth)
    ae_rows = [i for i, p in enumerate(tr2["pathways"]) if p == "AE"]
    if 0 < tr2["correct"].sum() < len(tr2["correct"]) and any(tr2["scores"][i][tr2["correct"] > 0].max() == 1
                                                              for i in ae_rows):  # right and wrong ones, an AE 1
        break
display(candidate_table(tr2, tour))
ok, cids = tr2["correct"] > 0, tour.runtime.client_ids
adv2, f2 = tr2["advantages"]["paper"], tr2["format"] > 0
pick = lambda rows, best: (max if best else min)(rows, key=lambda i: adv2[i]) if len(rows) else None  # noqa: E731
ru = pick(np.flatnonzero(ok & ~f2), True)  # the right, unformatted candidate with the top advantage
wf = pick(np.flatnonzero(~ok & f2), False)  # the wrong, formatted one
Markdown(f"Question {q2}, {tr2['question']!r} ({tr2['topic']}, answer {tr2['answer']}): "
         + "; ".join(f"{cids[k]} ({p}) gives the right candidates {tr2['scores'][i][ok].mean():.3f} on average"
                     + (f" and the wrong ones {tr2['scores'][i][~ok].mean():.3f}" if (~ok).any() else "")
                     for i, (k, p) in enumerate(zip(tr2["experts"], tr2["pathways"])))
         + f". A right answer's 8·μ_r is then at least {8 * tr2['scores'][:, ok].mean(axis=0).min():.2f}, against "
         f"the format bonus of 1. "
         + (f"Row {ru} is right but unformatted (A = {adv2[ru]:+.3f}), row {wf} wrong but formatted "
            f"(A = {adv2[wf]:+.3f}): " + ("the experts' scores outvote the format reward." if adv2[ru] > adv2[wf]
                                          else "the format reward wins here.")
            if ru is not None and wf is not None else "")
         if ok.any() else "No question in this range had a right candidate in this run.")

# %% [markdown]
# ### The confidence graph: turn $L$, $M$ and the question
# The paper's **confidence graph**, drawn: clients left, topics right, edges the clients' mean competence $r_k^p$ per
# topic; red: the question's topic and experts. A picture only: the topics are the simulator's truth, which the
# algorithm never sees; it uses $r_k^p$ per question (eq. 6). Each change reruns eqs. 5–6.

# %%
import ipywidgets as widgets

n_queries = len(tour.server.world.queries)


def graph_for(question=question, L=L, M=M):
    """Experts for every question of D_s at (L, M), and the graph opened on ``question``."""
    sq = selection_quality(tour.server, tour.truth, L=L, M=M)  # eqs. 5–6 for every question of D_s
    shown = list(range(question, min(question + 30, n_queries)))
    return sq, confidence_graph(tour.server, tour.truth, shown, sq["experts"])


def show_graph(question, L, M):
    sq, g = graph_for(question, L, M)
    print(f"L = {L}, M = {M}: experts of question {question}: "
          f"{[tour.runtime.client_ids[k] for k in sq['experts'][question]]}; hit rate {sq['hit_rate_major']:.3f}, "
          f"random {sq['random_hit_rate_major']:.3f}")
    g.show(renderer="plotly_mimetype")


notebook.knobs(show_graph, question=widgets.IntSlider(question, 0, n_queries - 1, continuous_update=False),
               L=widgets.IntSlider(L, 1, len(tour.world.aux), continuous_update=False),
               M=widgets.IntSlider(M, 1, num_clients, continuous_update=False))

# %% [markdown]
# The default setting, stored for readers without a kernel:

# %%
sq, fig = graph_for()
viz.export(fig, "fedgrpo_confidence_graph", figures)
gap, half, n_gap = t_interval(hit_differences(tour.server, tour.truth, sq["experts"]).tolist())
print(f"hit rate at L = {L}, M = {M}, K = {num_clients}, dirichlet_alpha = {dirichlet_alpha}, seed {seed}: "
      f"{sq['hit_rate_major']:.3f} "
      f"(random: {sq['random_hit_rate_major']:.3f}); gap {gap:+.3f} (95 % t-interval ±{half:.3f} over {n_gap} "
      f"questions: {'excludes' if abs(gap) > half else 'contains'} 0)")
fig

# %% [markdown]
# ## 5. Run it: FedGRPO beside Fedpetuning+GRPO
# Same questions, budget and base model (first row); pass@1 averages `eval_samples` samples per problem.

# %%
other = run_root / "fedavg_grpo"
notebook.start_run_dir(other)
runs = {"FedGRPO": tour, "Fedpetuning+GRPO": Run(make_config(cfg.preset, "fedavg_grpo"), other, progress=False,
                                                 policy=policy)}
records = {name: run.run() for name, run in runs.items()}
head = pd.DataFrame({name: {**notebook.headline(recs), "bytes up": run.runtime.ledger.total_bytes("up"),
                            "bytes down": run.runtime.ledger.total_bytes("down")}
                     for (name, recs), run in zip(records.items(), runs.values())}).T
assert head["base pass@1"].nunique() == 1, "the two arms did not start from the same model"
shown = head.rename(columns={"final pass@1": "pass@1", "final format": "format", "change (points)": "over the base "
                             "(points)"})[["rounds", "pass@1", "format", "over the base (points)", "bytes up",
                                           "bytes down"]]
shown.loc["base model (before training)"] = [0, head["base pass@1"].iloc[0], head["base format"].iloc[0], 0.0, 0, 0]
display(shown.iloc[[-1, 0, 1]].astype({"rounds": int, "bytes up": int, "bytes down": int}))
step = 100 / (len(world.test) * cfg.eval_samples)  # one problem-sample, in points
p0 = head["base pass@1"].iloc[0]
se = 100 * np.sqrt(p0 * (1 - p0) / (len(world.test) * cfg.eval_samples))  # the base's standard error, points
plateaus_base = fedgrpo_plateaus().loc[FEDGRPO_BASE_ROW].get(f"seed {seed}", float("nan"))
stored_samples = fedgrpo_scale_down().loc["test set", "here"].split("× ")[1].split()[0]
n_train = cfg.rounds * cfg.local_steps * Q
Markdown(f"What this small run shows ({cfg.rounds} rounds, one seed, {n_train} training questions): FedGRPO's pass@1 "
         f"moved {head.loc['FedGRPO', 'change (points)']:+.1f} points, i.e. "
         f"{head.loc['FedGRPO', 'change (points)'] / step:+.0f} of {len(world.test) * cfg.eval_samples} "
         "problem-samples "
         f"(one is {step:.2f} points), Fedpetuning+GRPO's {head.loc['Fedpetuning+GRPO', 'change (points)']:+.1f}: too "
         "few to tell apart. The visible effect is FedGRPO's format rate, "
         f"{head.loc['FedGRPO', 'base format']:.3f} → {head.loc['FedGRPO', 'final format']:.3f} (§4's format "
         "reward at work). The stored 30-round runs are in §7. Its base model scores "
         f"{head['base pass@1'].iloc[0] * 100:.1f} points here and {plateaus_base:.2f} in the stored runs of seed {seed}: "
         f"the same model, sampled {cfg.eval_samples} times per problem here and {stored_samples} there, so other "
         f"samples; the difference is {abs(head['base pass@1'].iloc[0] * 100 - plateaus_base) / se:.1f} binomial "
         f"standard errors ({se:.2f} points at {len(world.test) * cfg.eval_samples} samples).")

# %%
fig = viz.curves(records, "pass@1", title=f"global pass@1 (K = {num_clients}, dirichlet_alpha = {dirichlet_alpha}, "
                                         f"seed {seed}; round 0: the base model)")
viz.export(fig, "fedgrpo_curves", figures)
fig

# %% [markdown]
# **The paper's Figure 2**: FedGRPO uploads scalars only, $Q \cdot M \cdot G$ scores of 8 bytes per step
# (`experiments/fedgrpo_comm.py`) plus a 6-byte key per message; the ledger agrees:

# %%
c, ledger = tour.config, tour.runtime.ledger
n_q = c.rounds * c.local_steps * questions_per_step(c)  # questions the server trained on
predicted = comm.fedgrpo_breakdown(n_samples=n_q, n_policies=c.num_generations, M=M, rounds=c.rounds,
                                   n_clients=c.num_clients, L=L, n_aux=c.n_aux, competence="cached",
                                   bytes_per_reward=8)["rewards_up"]
scores = [r for r in ledger.records if r["kind"] == "score_result" and r["round"] >= 1]  # training, not §4's trace
measured = sum(r["nbytes"] for r in scores) - 6 * len(scores)
assert predicted == measured, "the ledger does not match the protocol's count"
print(f"scores up: predicted {predicted:,} bytes, measured {measured:,}; FedAvg-GRPO's adapters (rank "
      f"{c.lora_rank}) up: {runs['Fedpetuning+GRPO'].runtime.ledger.total_bytes('up'):,} bytes")

# %% [markdown]
# ## 6. What the server sees
# Down: `properties` (data sizes), the auxiliary questions once, each question and its $G$ candidates to its
# experts. Up: scalars. **No gradient, adapter or private example leaves a client.**

# %%
pd.DataFrame(ledger.to_rows()).groupby(["kind", "direction"]).agg(messages=("nbytes", "size"), bytes=("nbytes", "sum"))

# %% [markdown]
# Scalars still leak: from competence replies the server guesses each client's topic (truth: the simulator's):

# %%
view = server_view(tour.server, tour.truth)
display(view)
ae = [r["ae_share"] for r in records["FedGRPO"] if r.get("client") == "server" and "ae_share" in r]
n_topics = len(notebook.client_table(tour.partitions).columns) - 1
Markdown(f"- The server names {int(view['guessed right'].sum())} of {len(view)} clients' largest topic right (a blind "
         f"guess among the {n_topics} topics would expect {len(view) / n_topics:.1f}).\n"
         f"- An AE expert's scores are exactly 0 or 1 (in §4, {tr['pathways']} for "
         f"{[tour.runtime.client_ids[k] for k in tr['experts']]}), so a row of 0s and 1s tells the server that this "
         "client holds the question's label, and a 1 marks the right answer"
         + (f"; {np.mean(ae):.0%} of the training scores came by AE." if ae else ".")
         + "\n- The paper's threat model is honest-but-curious: these are the inferences such a server can make.")

# %% [markdown]
# ## 7. What the stored runs show
# Stored runs (`benchmarks/results`, three seeds): 30 rounds, Central-GRPO 15.
# Beyond §5's two: **FedGRPO, random experts** (no competence), **FedGRPO, every client holds every label** (every
# score AE) and **DPSDA-FL+GRPO**, the paper's other federated baseline (the server GRPO-trains on synthetic
# questions the clients write from a private count of their topics; "no PE": without Private Evolution). **Plateau**: mean pass@1 of the last 5 rounds, in points; last row: the base model. The
# figure's band is ±1 SD over seeds; every table's ± is a 95 % t half-width:

# %%
plateaus = fedgrpo_plateaus()
display(plateaus)
traces = fedgrpo_traces()
from experiments.stats import t_quantile

n_seeds = traces["seed"].nunique()
print(f"band: ±1 SD over {n_seeds} seeds; a 95 % t half-width over {n_seeds} seeds is "
      f"{t_quantile(0.975, n_seeds - 1) / np.sqrt(n_seeds):.2f} SD")
fig = viz.seed_band_curves(traces, names=METHOD_NAMES, title=f"stored pass@1 traces (mean over {n_seeds} seeds ± 1 SD; "
                           "round 0: the base model)")
fig.update_layout(yaxis_title="pass@1")
viz.export(fig, "fedgrpo_stored_traces", figures)
fig

# %% [markdown]
# Findings (paired by seed; all tables: [report](11_fedgrpo_report.ipynb)):

# %%
notes, table, paper_gap = fedgrpo_finding_notes(), fedgrpo_findings(), paper.iloc[:, 4:6]
cut, central, random_arm, labels = (notes.loc[f"F{i}", "result"] for i in (1, 2, 3, 4))
answer_f3 = {"within noise": "Not measurably", "holds": "Yes", "does not hold": "No, random is ahead"}[
    table.iloc[2]["verdict"]]


def last5(arm):
    r = int(plateaus.loc[arm, "rounds"])
    return f"{r - 4}–{r}"


stored = notebook.repo_path("benchmarks/results")
diag = arm_diagnostics([json.loads((stored / n).read_text()) for n in ("fedgrpo_compare_pool_long.json",
                                                                      "fedgrpo_compare_pool_long30.json")],
                       load_arms(stored)).set_index("arm")  # per arm, the seeds' values "a / b / c"
AE, GAP = "share of AE (exact) scores", "experts' score gap, correct − wrong"
f3_half = table.iloc[2]["±95% t"]
Markdown(f"*Setting:* {notes.loc['F1', 'setting'].split('; ')[0]} (Fedpetuning+GRPO's batch; FedGRPO's server takes "
         "K times as many, its Q); plateau = mean pass@1 of the last 5 rounds.\n\n"
         f"- **F1** FedGRPO − Fedpetuning+GRPO: {cut}, where the paper has FedGRPO "
         f"{paper_gap.iloc[:, 0].min():.1f} to {paper_gap.iloc[:, 0].max():.1f} points above.\n"
         f"- **F2** FedGRPO − Central-GRPO: {central}, against the paper's {paper_gap.iloc[:, 1].min():+.1f} to "
         f"{paper_gap.iloc[:, 1].max():+.1f} (Central-GRPO's plateau is its rounds {last5('Central-GRPO')}, "
         f"FedGRPO's its rounds {last5('FedGRPO')}: Central-GRPO might have gone higher in 30; here this 'upper bound', "
         f"{plateaus.loc['Central-GRPO', 'mean']:.1f}, sits below Fedpetuning+GRPO's "
         f"{plateaus.loc['Fedpetuning+GRPO', 'mean']:.1f}).\n"
         f"- **F3** Does competence beat random selection? {answer_f3} at the plateau: competence-selected − random "
         f"experts is {random_arm}: a ±{f3_half:.2f} interval, the seeds disagree. Mid-run random selection leads: "
         f"{fedgrpo_window_note('fedgrpo_random')} A puzzle: competence picks label owners (AE scores) more often, "
         f"AE share {diag.loc['FedGRPO', AE]} per seed against random's "
         f"{diag.loc[METHOD_NAMES['fedgrpo_random'], AE]}, yet does not train better.\n"
         f"- **F4** Every client holding every label (AE for every score) − the owner only: {labels}.")

# %% [markdown]
# ## 8. Why FedGRPO loses here
# **Measured**, window by window over the traces (5 rounds each, paired by seed, points):

# %%
display(fedgrpo_window_table().rename_axis("rounds (k of n: seeds where the first arm leads)"))
mean_curve = traces.groupby(["method", "round"])["pass_at_1"].mean().unstack("method") * 100
peak = int(mean_curve["fedgrpo"].idxmax())
behind = fedgrpo_windows("fedgrpo", "fedavg_grpo")
behind = behind[behind["mean"] + behind["±95% t"] < 0]  # windows where FedGRPO is lower, the interval below 0
last_round = int(mean_curve["fedgrpo"].last_valid_index())
Markdown(f"FedGRPO{' peaks early' if peak <= last_round // 3 else ''}: its mean curve is highest at round {peak} of "
         f"{last_round} ({mean_curve['fedgrpo'][peak]:.1f} points), its plateau {plateaus.loc['FedGRPO', 'mean']:.1f}; "
         f"it is below Fedpetuning+GRPO, the interval below 0, in rounds {', '.join(behind['rounds'])}. Its experts' "
         f"scores separate a right candidate from a wrong one by {diag.loc['FedGRPO', GAP]} (per seed), against "
         f"{diag.loc[METHOD_NAMES['fedgrpo_allgt'], GAP].split(' / ')[0]} when every client holds every label.")

# %% [markdown]
# Shape or source? The baselines rerun on FedGRPO's reward shape, 8·accuracy + format; the every-label arm (every
# score exact). Last window:

# %%
gaps = fedgrpo_gap_sources()
if gaps is None:
    print(f"The same-reward rerun (benchmarks/results/{FEDGRPO_SAME_REWARD_FILE}) is not stored yet.")
else:
    display(gaps)
    gap, same_gap, shape, source, left = (gaps.iloc[i] for i in range(5))
    said = [f"On one reward shape the gap is {interval_words(same_gap['mean'], same_gap['±95% t'], same_gap['seeds'])};"
            f" the shape alone changed Fedpetuning+GRPO by "
            f"{interval_words(shape['mean'], shape['±95% t'], shape['seeds'])}."]
    if abs(shape["mean"]) + shape["±95% t"] < abs(gap["mean"]) - gap["±95% t"]:
        said.append("**The reward's shape is ruled out**: its whole interval is smaller than the gap's.")
    said.append(f"**The reward's source** (exact checks for every score) recovers {source['mean']:+.2f} of the "
                f"{gap['mean']:+.2f} points, {source['mean'] / -gap['mean']:.0%} of the gap; what is left, "
                f"{interval_words(left['mean'], left['±95% t'], left['seeds'])}, "
                + ("may be 0 at this power." if abs(left["mean"]) <= left["±95% t"] else "is not 0.")
                + " So the source accounts for most of the gap, not provably all: the two methods also differ in "
                "who trains (the clients, on their own questions, against the server) and in batch (4 prompts per "
                "client and step, against the server's Q).")
    display(Markdown(" ".join(said)))

# %% [markdown]
# **Inferred, not measured.**
#
# 1. **The source matters** because most scores are ME guesses (F3), which separate right from wrong far less
#    than exact checks. Random experts, with fewer exact scores, led mid-run: not the whole story.
# 2. **The paper sees no such gap** perhaps because its official code lets every client check every answer against
#    its label, like our every-label arm.

# %% [markdown]
# ## 9. Exercises: predict, then run
# Predict in the first cell; the second checks.
#
# ### Exercise 1
#
# With $M = 2$ experts disagreeing on a candidate, what is each one's $|R_k|$ (eq. 9)? Does
# the size of their gap matter?

# %%
prediction_1 = None  # a number

# %%
from fedrl_kit.fedgrpo.group_reward import candidate_advantages, group_relative_rewards

pair = np.array([[0.1, 0.0, 0.3], [0.2, 1.0, 0.31]])  # 2 experts × 3 candidates, three sizes of disagreement
two = group_relative_rewards(pair)
answer_1 = float(np.round(np.abs(two), 2).max())
why_1 = (f"with two scores a ≠ b, μ_r = (a + b)/2 and σ_r = |a − b|/2, so R_k = ±(|a − b|/2)/(|a − b|/2 + 10⁻⁶) ≈ ±1 "
         f"whatever the gap (gaps {np.round(np.abs(pair[0] - pair[1]), 2).tolist()} give "
         f"{np.round(two[0], 3).tolist()} and {np.round(two[1], 3).tolist()}): eq. 9 keeps the sign of the "
         "disagreement and drops its size")
if len(tr["experts"]) == 2:  # §4's first question, if it ran with two experts
    gaps = np.abs(tr["scores"][0] - tr["scores"][1])
    why_1 += (f"; in §4 the two experts' gaps run {gaps.min():.3f}–{gaps.max():.3f} and every |R_k| is "
              f"{np.abs(tr['eq9']).min():.3f}–{np.abs(tr['eq9']).max():.3f} (below 1 only where the gap nears 10⁻⁶)")
notebook.check(prediction_1, answer_1, why_1, tolerance=0.01) if prediction_1 is not None else \
    notebook.reveal(answer_1, why_1)

# %% [markdown]
# ### Exercise 2
#
# A formatted candidate ($f = 1$) scored $\mu_r = 0$, an unformatted one ($f = 0$) scored
# $\mu_r = d$: how large must $d$ be for the second to get the higher advantage?

# %%
prediction_2 = None  # a number: the μ_r difference

# %%
def beats_format(d):
    """True when the unformatted candidate scored d gets the higher advantage than the formatted one scored 0."""
    a = candidate_advantages(np.array([[0.0, d]] * M), "paper", 8.0, np.array([1.0, 0.0]), 1.0)
    return a[1] > a[0]


low, high = 0.0, 1.0
for _ in range(40):  # bisection on the package's own advantage
    low, high = (low, (low + high) / 2) if beats_format((low + high) / 2) else ((low + high) / 2, high)
answer_2 = round(high, 3)
why_2 = (f"r̃ = 8·μ_r + f, so 8·d must exceed the format's 1: d > 1/8 = {1 / 8:.3f} (the bisection on "
         f"candidate_advantages finds {high:.4f}). In §4's first question the experts' means spanned "
         f"{np.ptp(mu):.3f}, {'under' if np.ptp(mu) < 1 / 8 else 'over'} 1/8"
         + (f"; in the second, the right answers' μ_r exceed the wrong ones' by "
            f"{tr2['scores'][:, ok].mean() - tr2['scores'][:, ~ok].mean():.3f}" if ok.any() and (~ok).any() else ""))
notebook.check(prediction_2, answer_2, why_2, tolerance=0.005) if prediction_2 is not None else \
    notebook.reveal(answer_2, why_2)

# %% [markdown]
# ### Exercise 3
#
# An AE expert and an ME expert both score the same *right* candidate. Which gives the higher score?
# Predict `"AE"`, `"ME"` or `"equal"`.

# %%
prediction_3 = None  # "AE", "ME" or "equal"

# %%
ae_score = [tr2["scores"][i][ok].mean() for i, p in enumerate(tr2["pathways"]) if p == "AE" and ok.any()]
me_score = [tr2["scores"][i][ok].mean() for i, p in enumerate(tr2["pathways"]) if p == "ME" and ok.any()]
answer_3 = ("AE" if ae_score[0] > me_score[0] else "ME" if me_score[0] > ae_score[0] else "equal") \
    if ae_score and me_score else "AE"
why_3 = ("an AE expert checks the answer against the label it holds, so a right answer gets exactly 1; an ME expert "
         "only has its domain model's probability of that answer, at most 1 and lower whenever the model is unsure"
         + (f": in §4's second question {ae_score[0]:.3f} (AE) against {me_score[0]:.3f} (ME)"
            if ae_score and me_score else ""))
notebook.check(prediction_3, answer_3, why_3) if prediction_3 is not None else notebook.reveal(answer_3, why_3)

# %% [markdown]
# ### Exercise 4
#
# With $M = K$ (every client an expert), is the hit rate `"higher"`, `"equal"` or `"lower"` than
# random selection's?

# %%
prediction_4 = None  # "higher", "equal" or "lower"

# %%
every = selection_quality(tour.server, tour.truth, L=L, M=num_clients)
gap_all = every["hit_rate_major"] - every["random_hit_rate_major"]
answer_4 = "equal" if abs(gap_all) < 1e-9 else ("higher" if gap_all > 0 else "lower")
why_4 = (f"choosing all {num_clients} clients is what random choice does on average (both {every['hit_rate_major']:.3f}"
         f"), so selection only helps when M < K (at M = {M}: {sq['hit_rate_major']:.3f} against "
         f"{sq['random_hit_rate_major']:.3f})")
notebook.check(prediction_4, answer_4, why_4) if prediction_4 is not None else notebook.reveal(answer_4, why_4)

# %% [markdown]
# ### Exercise 5
#
# From §4's competence table: with $M + 1$ experts, which clients score §4's question? Predict a
# set, e.g. `{"client_0", "client_3", "client_5"}`.

# %%
prediction_5 = None  # a set of client names

# %%
M5 = min(M + 1, num_clients)
more = selection_quality(tour.server, tour.truth, L=L, M=M5)  # eqs. 5–6 again on the run in memory: no training
answer_5 = {tour.runtime.client_ids[k] for k in more["experts"][question]}
ranked = np.argsort(-np.asarray(tr["competence"]), kind="stable")  # the r_k^p column, highest first
table_5 = competence_table(tr, tour)
why_5 = (f"the experts are the Top-M of the r_k^p column, so one more keeps the {M} already chosen "
         f"({', '.join(f'client_{k}' for k in ranked[:M])}) and adds the next, client_{ranked[M5 - 1]} "
         f"(r_k^p = {table_5['r_k^p'].iloc[ranked[M5 - 1]]:.3f}, topic share "
         f"{table_5['topic share'].iloc[ranked[M5 - 1]]:.3f}); over all questions the hit rate goes "
         f"{sq['hit_rate_major']:.3f} → {more['hit_rate_major']:.3f} (random: {more['random_hit_rate_major']:.3f})"
         + (": the added experts hold the topic less often" if more["hit_rate_major"] < sq["hit_rate_major"] else ""))
notebook.check(prediction_5, answer_5, why_5) if prediction_5 is not None else notebook.reveal(answer_5, why_5)

# %% [markdown]
# ## 10. What holds, what does not, what is not tested
# The paper's claims as the stored runs decide them (points, 95 % t), then the scale-down:

# %%
with pd.option_context("display.max_colwidth", None):
    display(fedgrpo_closing_summary())
    display(fedgrpo_scale_down())
