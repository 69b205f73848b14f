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
# **The problem.** A server wants to improve its language model on questions that only its clients know how to
# judge: each client holds private labelled data of a few topics. Sending model updates (as FedAvg does) costs
# bandwidth and leaks information. FedGRPO turns the federation around: **the server trains, the clients only
# grade**. For each question the server samples $G$ candidate answers, picks the $M$ clients most *competent* on
# questions like it (the **experts**), sends them the candidates, and gets back one number per candidate. Those
# scores become GRPO advantages (notebook 00) for the server's own update. Two ideas to learn: **competence-based
# expert selection** (eqs. 5–6) and the **group-relative reward** (eqs. 8–9).
#
# Here you will see one server step drawn, written and traced on the embedded world, then train FedGRPO beside
# FedAvg-GRPO. What the reproduction found, with every table, is in the report,
# [11_fedgrpo_report.ipynb](11_fedgrpo_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p M 4`); a name it does not have stops the notebook in one line.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
num_clients = 8        # K clients (the paper's Appendix C: 8)
beta = 0.1             # Dirichlet concentration β of the topic split (the paper's non-IID setting), or "iid"
L = 20                 # neighbours per question, eq. 5 (paper: 20 of 100)
M = 2                  # experts per question, eq. 6 (paper: 2)
seed = 0               # one seed: one world, partition and run
question = 0           # the question of D_s the step-through follows
run_root = ""          # where the runs go ("": runs/fedgrpo/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import numpy as np
import pandas as pd

from experiments import fedgrpo_comm as comm
from experiments.findings import fedgrpo_findings
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.config import preset
from fedrl_kit.fedgrpo.diagnostics import selection_quality, trace_question
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
    split = dict(partition="iid") if beta == "iid" else dict(dirichlet_alpha=float(beta))
    sections = dict(fedgrpo=dict(neighbours=L, num_experts=M), evaluator=dict(sft_steps=SFT_STEPS[size])) \
        if method == "fedgrpo" else {}
    smoke = notebook.smoke_fields(preset_name, notebook.SMOKE_SIZES["fedgrpo"], fixed=("num_clients", *SIZES["quick"]))
    return preset(p, method=method, num_clients=num_clients, seed=seed, **split, **sections, **SIZES[size], **smoke)


cfg, run_root, figures = notebook.setup("fedgrpo", globals(), make_config, runs="run_root",
                                        folder=dict(k=num_clients, b=beta, L=L, M=M, s=seed))
policy = Policy.load(resolve_base(cfg.base), cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.chat, cfg.max_new_tokens,
                     cfg.temperature, cfg.device, getattr(__import__("torch"), cfg.dtype))  # shared by every run
notebook.start_run_dir(run_root / "fedgrpo")
tour = Run(cfg, run_root / "fedgrpo", progress=False, policy=policy).build()

# %% [markdown]
# ## 1. One server step, drawn
# The server repeats this step $\tau$ times a round on a batch of questions; clients 1 and $K$ are this
# question's experts, client 2 is not asked to score.

# %%
diagrams.round_diagram("fedgrpo")

# %% [markdown]
# ## 2. Key equations
# For a question $x_s$ (without its answer) the server embeds it with a frozen encoder $\phi$ and finds its $L$
# nearest auxiliary questions, whose answers it knows:
#
# $$\mathcal{G}(x_s) = \{(x_{p,\ell}, y_{p,\ell})\}_{\ell=1}^{L},\qquad
# \langle z_s, z_{p,1}\rangle \ge \dots \ge \langle z_s, z_{p,L}\rangle,\quad z = \phi(x)/\lVert\phi(x)\rVert
# \qquad\text{(eq. 5, `expert_selection.nearest_exemplars`)}$$
#
# A client's **competence** on $x_s$ is how often its domain model $\theta_k$ answers those neighbours right
# (we use the probability of the right answer, the expectation of the paper's 0/1 indicator):
#
# $$r_k^p(x_s) = \frac{1}{L}\sum_{\ell=1}^{L} \Pr\bigl[\theta_k \text{ answers } x_{p,\ell} \text{ with }
# y_{p,\ell}\bigr],\qquad \mathcal{C}(x_s) = \operatorname{Top-}M_k\; r_k^p(x_s)
# \qquad\text{(eq. 6, `expert_selection.select_experts`)}$$
#
# Each expert $k \in \mathcal{C}(x_s)$ scores each candidate $\hat y_g$: exactly if it holds the label of
# $x_s$ (**AE**, answer-based: $r_k^s = \mathbb{1}[\text{answer of }\hat y_g = y(x_s)]$), otherwise with its
# domain model (**ME**, model-based: $r_k^s = \pi_{\theta_k}(\text{answer of }\hat y_g \mid x_s)$;
# `FedGRPOClient.on_score`). The paper standardises the scores across the experts:
#
# $$\mu_r = \frac{1}{M}\sum_{k\in\mathcal{C}} r_k^s,\quad
# \sigma_r = \sqrt{\frac{1}{M}\sum_{k\in\mathcal{C}} (r_k^s-\mu_r)^2}\quad\text{(eq. 8)},\qquad
# R_k = \frac{r_k^s - \mu_r}{\sigma_r + \epsilon}\quad\text{(eq. 9, `group_reward.group_relative_rewards`)}$$
#
# Taken literally, $\sum_k R_k = 0$ for every candidate: eq. 9 measures how much the experts *disagree*, and the
# update $\eta \sum_k R_k \nabla\log\pi$ vanishes. So the advantage that trains (our reading of Remark 2, variant
# `paper`) compares *candidates*, as GRPO does: the experts' mean score plus the format reward $f_g$ (Remark 1,
# weights 8 and 1 from Appendix A), normalised over the $G$ candidates:
#
# $$s_g = 8\,\mu_r(\hat y_g) + 1\cdot f_g,\qquad A_g = \frac{s_g - \operatorname{mean}_g s}{\operatorname{std}_g s
# + \epsilon}\qquad\text{(`group_reward.candidate_advantages`)}$$
#
# and the server takes GRPO's clipped-surrogate step on its own adapter with $A_g$ (`algorithm.policy_step`).
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$ | number of clients; one client |
# | $\mathcal{D}_k$, $\theta_k$ | client $k$'s private labelled data; its domain model (a LoRA adapter trained on $\mathcal{D}_k$), its judge |
# | $\theta_g$ | the server's policy (its global LoRA adapter), the only model that learns |
# | $\mathcal{D}_s$, $x_s$ | the server's training questions (no answers); one of them |
# | $\mathcal{D}_p$, $(x_{p,j}, y_{p,j})$ | the server's small labelled auxiliary set (100 questions) |
# | $\phi$, $z$ | the frozen encoder (the base model's first layer, averaged); a unit-length embedding |
# | $L$, $\mathcal{G}(x_s)$ | neighbours per question; the neighbourhood (eq. 5) |
# | $r_k^p$ | client $k$'s competence on $x_s$'s neighbourhood, in $[0,1]$ |
# | $M$, $\mathcal{C}(x_s)$ | experts per question; the experts chosen (eq. 6) |
# | $G$, $\hat y_g$ | candidates per question; candidate $g$ |
# | $r_k^s$ | expert $k$'s score of a candidate (AE or ME) |
# | $f_g$, $s_g$, $A_g$ | format reward, combined reward, advantage of candidate $g$ |
# | $R_k$ | eq. 9's standardised score of expert $k$ (a disagreement measure) |
# | $\tau$, $\beta$ | server steps per round; Dirichlet concentration of the topic split |
# | hit rate | fraction of chosen experts holding the question's topic (≥ 10 % of their data) |
#
# ## 3. Pseudocode
# Algorithm 1; each line names its function in `fedrl_kit/fedgrpo/`:
# ```
# for round = 1..R:                                                    # algorithm.run_round
#   for step = 1..τ:                                                   # algorithm.server_step
#     draw Q questions x_s from D_s                                    # algorithm.sample_questions
#     G candidates ŷ ~ π_θg(·|x_s)                          (line 3)    # algorithm.sample_candidates
#     G(x_s) = L nearest auxiliary questions            (eq. 5, 4–5)   # expert_selection.nearest_exemplars
#     ask every client its competence on them, once     (lines 6–10)   # algorithm.ask_competence
#     C(x_s) = Top-M clients by r_k^p                   (eq. 6, 11)    # algorithm.choose_experts
#     send (x_s, ŷ) to each expert; get G scores r_k^s  (lines 12–17)  # algorithm.collect_scores, client.on_score
#     A_g from the scores and the format reward         (eqs. 8–9)     # algorithm.advantages_from_scores
#     one clipped-surrogate GRPO step on θ_g            (line 21)      # algorithm.policy_step
# ```

# %% [markdown]
# ## 4. One question, step by step
# Who holds what: $\mathcal{D}_s$ is the training pool split over the clients by topic (Dirichlet β), so most
# clients hold one or two topics. A question's owner holds its label.

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(tour.partitions)

# %% [markdown]
# `trace_question` runs the very `server_step` that training runs, on one question, without updating the policy.
# Its first call trains every client's domain model and fills the competence table (one number per client and
# auxiliary question). **Eq. 5**: the nearest auxiliary questions, by cosine of the embeddings.

# %%
tr = trace_question(tour.server, question, L=L, M=M, seed=seed, truth=tour.truth)
print(f"x_s = {tr['question']!r}   topic: {tr['topic']}   (answer {tr['answer']}: the server never sees it)")
pd.DataFrame(tr["neighbours"]).round(3).head(6)


# %% [markdown]
# **Eq. 6**: each client's competence $r_k^p$ over those $L$ neighbours, and the $M$ experts. `topic share` is the
# fraction of the client's data in the question's topic, which the server cannot see: a good choice has a high one.

# %%
def competence_table(tr, run):
    share = [sum(t == tr["topic"] for t in p["topic"]) / len(p) for p in run.partitions]
    return pd.DataFrame({"r_k^p": tr["competence"], "topic share": share,
                         "expert": ["✔" if k in tr["experts"] else "" for k in range(len(share))]},
                        index=[f"client_{k}" for k in range(len(share))]).round(3)


competence_table(tr, tour)


# %% [markdown]
# **Eqs. 8–9 and the advantage.** Each expert's score of each candidate (AE or ME), eq. 9's $R_k$ (note each row
# sums to zero over the experts), and the advantage $A_g$ that trains. `correct` is the truth, for you only.

# %%
def candidate_table(tr, run):
    cids = run.runtime.client_ids
    df = pd.DataFrame({"candidate": tr["candidates"], "correct": tr["correct"], "f_g": tr["format"]})
    for row, k in enumerate(tr["experts"]):
        df[f"r^s {cids[k]} ({tr['pathways'][row]})"] = tr["scores"][row]
    for row, k in enumerate(tr["experts"]):
        df[f"R_k {cids[k]}"] = tr["eq9"][row]
    df["A_g"] = tr["advantages"]["paper"]
    return df.round(3)


candidate_table(tr, tour)

# %% [markdown]
# **By hand.** The first candidate's advantage from the table's scores, with the formula of §2 (population std,
# $\epsilon = 10^{-6}$), beside the package's:

# %%
s = 8 * tr["scores"].mean(axis=0) + 1 * tr["format"]  # s_g for every candidate
print(f"s = {np.round(s, 3).tolist()}")
print(f"A_1 by hand = {(s[0] - s.mean()) / (s.std() + 1e-6):.4f}, package = {tr['advantages']['paper'][0]:.4f}")

# %% [markdown]
# ### The confidence graph: turn $L$, $M$ and the question
# Clients left, topics right; an edge is a client's mean competence on that topic's auxiliary questions. The red
# topic is the question's, the red clients its experts. Each change reruns eqs. 5–6 for *every* question from the
# competence the server already holds, and prints the **hit rate** against choosing $M$ clients at random.

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

# %%
sq, fig = graph_for()  # the default setting, stored for readers without a kernel
viz.export(fig, "fedgrpo_confidence_graph", figures)
print(f"hit rate at L = {L}, M = {M}: {sq['hit_rate_major']:.3f} (random: {sq['random_hit_rate_major']:.3f})")
fig

# %% [markdown]
# ## 5. Run it: FedGRPO beside FedAvg-GRPO
# Both train on the same questions with the same budget; FedAvg-GRPO (the paper's "Fedpetuning+GRPO") has every
# client train on its own questions and send its adapter, FedGRPO trains the server from the experts' scores.

# %%
other = run_root / "fedavg_grpo"
notebook.start_run_dir(other)
runs = {"FedGRPO": tour, "Fedpetuning+GRPO": Run(make_config(cfg.preset, "fedavg_grpo"), other, progress=False,
                                                 policy=policy)}
records = {name: run.run() for name, run in runs.items()}
pd.DataFrame({name: {**notebook.headline(recs), "bytes up": run.runtime.ledger.total_bytes("up"),
                     "bytes down": run.runtime.ledger.total_bytes("down")}
              for (name, recs), run in zip(records.items(), runs.values())}).T

# %%
fig = viz.curves(records, "pass@1", title=f"global pass@1 (K = {num_clients}, β = {beta}, seed {seed})")
viz.export(fig, "fedgrpo_curves", figures)
fig

# %% [markdown]
# **The paper's Figure 2** is about bytes: FedGRPO uploads scalars only. The ledger's upload of scores matches what
# the protocol predicts, $Q \cdot M \cdot G$ scores of 8 bytes per step (`experiments/fedgrpo_comm.py`; each message
# also carries its 6-byte key):

# %%
c, ledger = tour.config, tour.runtime.ledger
n_q = c.rounds * c.local_steps * c.prompts_per_step * c.num_clients  # questions the server trained on
predicted = comm.fedgrpo_breakdown(n_samples=n_q, n_policies=c.num_generations, M=M, rounds=c.rounds,
                                   n_clients=c.num_clients, L=L, n_aux=c.n_aux, competence="cached",
                                   bytes_per_reward=8)["rewards_up"]
scores = [r for r in ledger.records if r["kind"] == "score_result" and r["round"] >= 1]  # training, not §4's trace
measured = sum(r["nbytes"] for r in scores) - 6 * len(scores)
assert predicted == measured, "the ledger does not match the protocol's count"
print(f"scores up: predicted {predicted:,} bytes, measured {measured:,}; FedAvg-GRPO's adapters up: "
      f"{runs['Fedpetuning+GRPO'].runtime.ledger.total_bytes('up'):,} bytes")

# %% [markdown]
# ## 6. What the reproduction found
# The stored runs (three seeds, each arm trained until its curve flattens, at this scale), read from
# `benchmarks/results`: the paired difference in pass@1 points with its 95 % Student-t half-width.

# %%
findings = fedgrpo_findings()
findings

# %% [markdown]
# - FedGRPO does **not** beat FedAvg-GRPO here: −11.19 ± 3.13 pass@1 points, below zero on every seed
#   ([report: trained until the curves flatten](11_fedgrpo_report.ipynb)).
# - Against Central-GRPO (all data pooled, the paper's upper bound) it is −8.07 ± 7.15: within noise, but the
#   interval reaches far below the ±3-point band of "near" ([report](11_fedgrpo_report.ipynb)).
# - **Surprise:** experts drawn at random end within noise of competence-selected ones (+0.44 ± 15.71): selection
#   finds topic holders better than chance (the hit rate of §4), but three seeds cannot see it in accuracy
#   ([report: who holds the labels](11_fedgrpo_report.ipynb)).
# - What matters more is who can check exactly: with every client holding every label the plateau rises by
#   7.56 ± 5.74 points ([report: who holds the labels](11_fedgrpo_report.ipynb)).

# %% [markdown]
# ## 7. Exercises: predict, then run
# **Exercise 1.** Set $M = 1$. What is eq. 9's $R_k$ for every candidate? (Think: one expert, $\sigma_r = 0$.)

# %%
prediction_1 = None  # a number

# %%
one = trace_question(tour.server, question, L=L, M=1, seed=seed, truth=tour.truth)
answer_1 = float(np.unique(one["eq9"]).item()) if np.unique(one["eq9"]).size == 1 else None
notebook.check(prediction_1, answer_1, "With one expert, r − μ = 0 for every candidate: eq. 9 carries no signal, "
                                       "while A_g still ranks the candidates.")

# %% [markdown]
# **Exercise 2.** With $M = K$ (every client an expert), what is the hit rate, compared with random selection's?
# Predict `"higher"`, `"equal"` or `"lower"`.

# %%
prediction_2 = None  # "higher", "equal" or "lower"

# %%
every = selection_quality(tour.server, tour.truth, L=L, M=num_clients)
gap = every["hit_rate_major"] - every["random_hit_rate_major"]
answer_2 = "equal" if abs(gap) < 1e-9 else ("higher" if gap > 0 else "lower")
notebook.check(prediction_2, answer_2, "Choosing everyone is what random choice does on average: selection only "
                                       "helps when M < K.")

# %% [markdown]
# **Exercise 3.** Look at the client table of §4. Which client will be the top expert (most competent) for
# question 0? Predict a name like `"client_3"`.

# %%
prediction_3 = None  # a client's name

# %%
answer_3 = tour.runtime.client_ids[sq["experts"][0][0]]  # eq. 6 for question 0, from the graph cell
notebook.check(prediction_3, answer_3, "The most competent client usually holds the question's topic: the "
                                       "competence table measures what the bubble of the topic shows.")

# %% [markdown]
# **Exercise 4.** If all $M$ experts give every candidate the same score and all candidates have the same format,
# what advantage does each candidate get?

# %%
prediction_4 = None  # a number

# %%
from fedrl_kit.fedgrpo.group_reward import candidate_advantages

flat = candidate_advantages(np.full((M, cfg.num_generations), 0.7), "paper", 8.0, np.ones(cfg.num_generations), 1.0)
answer_4 = float(np.round(flat, 6).max())
notebook.check(prediction_4, answer_4, "An all-equal group teaches nothing, exactly as in notebook 00.")
