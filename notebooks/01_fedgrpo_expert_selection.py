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
# scores become GRPO advantages for the server's own update. Two ideas to learn: **competence-based expert
# selection** (eqs. 5–6) and the **group-relative reward** (eqs. 8–9).
#
# Below: one server step drawn, written and traced on the embedded world (the package's generated arithmetic
# problems and tiny policy, notebook 00), then FedGRPO trained beside FedAvg-GRPO. The reproduction is the report,
# [11_fedgrpo_report.ipynb](11_fedgrpo_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p M 4`); a name it does not have stops the notebook in one line.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
num_clients = 8        # K clients (the paper's Appendix C: 8)
beta = 0.1             # Dirichlet concentration β of the topic split (config field: dirichlet_alpha), or "iid"
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
from IPython.display import Markdown

from experiments.findings import fedgrpo_finding_notes
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
pd.Series({"K clients": cfg.num_clients, "M experts per question": M, "L neighbours": L,
           "G candidates per question": cfg.num_generations, "Q questions per server step": questions_per_step(cfg),
           "τ server steps per round": cfg.local_steps, "rounds R": cfg.rounds, "num_iterations (passes per step)":
           cfg.num_iterations, "ε, ε_high (clip)": f"{cfg.epsilon}, {cfg.epsilon_high}", "KL coefficient (config beta)":
           cfg.beta, "LoRA rank r": cfg.lora_rank, "Dirichlet β (config dirichlet_alpha)": beta,
           "SFT steps of each domain model": cfg.evaluator.sft_steps,
           "eval_samples (pass@1)": cfg.eval_samples}, name="this run").to_frame()

# %% [markdown]
# ## 1. One server step, drawn
# The server repeats this step $\tau$ times a round on a batch of $Q$ questions; clients 1 and $K$ are this
# question's experts, client 2 is not asked to score.

# %%
diagrams.round_diagram("fedgrpo")

# %% [markdown]
# ## 2. Key equations
# **GRPO, recapped** (notebook 00 works it by hand). For a question the policy samples a group of $G$ answers
# $\hat y_1,\dots,\hat y_G$ with rewards $r_1,\dots,r_G$; each answer's advantage is its reward standardised within
# the group, and the update maximises PPO's clipped surrogate, averaged over all answer tokens $t$:
#
# $$A_j = \frac{r_j - \operatorname{mean}(r)}{\operatorname{std}(r) + 10^{-6}},\qquad
# \max_\theta\ \frac{1}{\sum_j |\hat y_j|}\sum_{j,t}\min\bigl(\rho_{j,t}A_j,\ \operatorname{clip}(\rho_{j,t},
# 1-\epsilon, 1+\epsilon_{\text{high}})A_j\bigr),\qquad \rho_{j,t} = \frac{\pi_\theta(\hat y_{j,t}\mid x,
# \hat y_{j,<t})}{\pi_{\text{old}}(\hat y_{j,t}\mid x, \hat y_{j,<t})}$$
#
# $\pi_{\text{old}}$ sampled the answers; a step makes `num_iterations` passes over them, so $\rho = 1$ in the first
# and the clip bites in the next. There is no KL term (config `beta` = 0): in this notebook β is only the Dirichlet
# concentration. FedGRPO keeps this update and changes **where $r_j$ comes from**.
#
# **Eq. 5.** For a question $x_s$ (without its answer) the server embeds it with a frozen encoder $\phi$ and finds its
# $L$ nearest auxiliary questions, whose answers it knows:
#
# $$\mathcal{G}(x_s) = \{(x_{p,\ell}, y_{p,\ell})\}_{\ell=1}^{L},\qquad
# \langle z_s, z_{p,1}\rangle \ge \dots \ge \langle z_s, z_{p,L}\rangle,\quad z = \phi(x)/\lVert\phi(x)\rVert
# \qquad\text{(`expert_selection.nearest_exemplars`)}$$
#
# **Eq. 6.** A client's **competence** on $x_s$ is how often its domain model $\theta_k$ answers those neighbours
# right (we use the probability of the right answer, the expectation of the paper's 0/1 indicator):
#
# $$r_k^p(x_s) = \frac{1}{L}\sum_{\ell=1}^{L} \Pr\bigl[\theta_k \text{ answers } x_{p,\ell} \text{ with }
# y_{p,\ell}\bigr],\qquad \mathcal{C}(x_s) = \operatorname{Top-}M_k\; r_k^p(x_s)
# \qquad\text{(`expert_selection.select_experts`)}$$
#
# Each expert $k \in \mathcal{C}(x_s)$ scores each candidate $\hat y_j$: exactly if it holds the label of
# $x_s$ (**AE**, answer-based: $r_k^s = \mathbb{1}[\text{answer of }\hat y_j = y(x_s)]$), otherwise with its
# domain model (**ME**, model-based: $r_k^s = \pi_{\theta_k}(\text{answer of }\hat y_j \mid x_s)$;
# `FedGRPOClient.on_score`). **Eqs. 8–9** standardise the scores across the experts:
#
# $$\mu_r = \frac{1}{M}\sum_{k\in\mathcal{C}} r_k^s,\quad
# \sigma_r = \sqrt{\frac{1}{M}\sum_{k\in\mathcal{C}} (r_k^s-\mu_r)^2},\qquad
# R_k = \frac{r_k^s - \mu_r}{\sigma_r + 10^{-6}}\qquad\text{(`group_reward.group_relative_rewards`)}$$
#
# Literally, $\sum_k R_k = 0$ for every candidate: eq. 9 measures the experts' *disagreement*, and the update
# $\eta \sum_k R_k \nabla\log\pi$ vanishes. So the reward that trains (our reading of Remark 2) compares
# *candidates*: the experts' mean score plus the **format reward** $f_j$ (Remark 1: 1 if $\hat y_j$ is exactly
# `<think>…</think><answer>…</answer>`, else 0; the server computes it), weighted 8 and 1 (Appendix A), then the
# recap's $A_j$ with the population std:
#
# $$\tilde r_j = 8\,\mu_r(\hat y_j) + 1\cdot f_j \qquad\text{(`group_reward.candidate_advantages`)}$$
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$; $M$, $\mathcal{C}(x_s)$ | clients; experts per question, the chosen ones |
# | $\mathcal{D}_k$, $\theta_k$ | client $k$'s private labelled data; its domain model (a LoRA adapter), its judge |
# | $\theta_g$ | the server's policy (its LoRA adapter), the only model that learns |
# | $\mathcal{D}_s$, $x_s$; $\mathcal{D}_p$ | training questions (no answers), one of them; 100 labelled auxiliary ones |
# | $r_k^p$; $r_k^s$; $R_k$ | competence; an expert's score of a candidate; eq. 9 |
# | $G$, $\hat y_j$; $Q$; $\tau$ | candidates per question, candidate $j$; questions per step; steps per round |
# | $f_j$, $\tilde r_j$, $A_j$ | format reward, combined reward, advantage of candidate $j$ |
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
#     A_j from the scores and the format reward         (eqs. 8–9)     # algorithm.advantages_from_scores
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
# sums to zero over the experts), and the advantage $A_j$ that trains. `correct` is the truth, for you only.

# %%
def candidate_table(tr, run):
    cids = run.runtime.client_ids
    df = pd.DataFrame({"candidate": tr["candidates"], "correct": tr["correct"], "f_j": tr["format"]})
    for row, k in enumerate(tr["experts"]):
        df[f"r^s {cids[k]} ({tr['pathways'][row]})"] = tr["scores"][row]
    for row, k in enumerate(tr["experts"]):
        df[f"R_k {cids[k]}"] = tr["eq9"][row]
    df["A_j"] = tr["advantages"]["paper"]
    return df.round(3)


candidate_table(tr, tour)

# %% [markdown]
# **By hand.** The first candidate's advantage from the table's scores, with the formulas of §2 (population std,
# $+10^{-6}$), beside the package's:

# %%
r_tilde = 8 * tr["scores"].mean(axis=0) + 1 * tr["format"]  # the combined reward of every candidate
print(f"r̃ = {np.round(r_tilde, 3).tolist()}")
print(f"A_1 by hand = {(r_tilde[0] - r_tilde.mean()) / (r_tilde.std() + 1e-6):.4f}, "
      f"package = {tr['advantages']['paper'][0]:.4f}")

# %% [markdown]
# **Which candidate does this step push up most?** Read from the table:

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
# ### The confidence graph: turn $L$, $M$ and the question
# Clients left, topics right; an edge is a client's mean competence on the topic's auxiliary questions; red marks
# the question's topic and experts. Each change reruns eqs. 5–6 for every question and prints the **hit rate**
# against a random choice of $M$ clients.

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
# The default setting, stored for readers without a kernel; the gap's interval is over this seed's questions, not
# over partitions:

# %%
sq, fig = graph_for()
viz.export(fig, "fedgrpo_confidence_graph", figures)
gap, half, n_gap = t_interval(hit_differences(tour.server, tour.truth, sq["experts"]).tolist())
print(f"hit rate at L = {L}, M = {M}, K = {num_clients}, β = {beta}, seed {seed}: {sq['hit_rate_major']:.3f} "
      f"(random: {sq['random_hit_rate_major']:.3f}); gap {gap:+.3f} (95 % t-interval ±{half:.3f} over {n_gap} "
      f"questions: {'excludes' if abs(gap) > half else 'contains'} 0)")
fig

# %% [markdown]
# ## 5. Run it: FedGRPO beside FedAvg-GRPO
# Same questions, same budget (the setup cell's table). The baseline **Fedpetuning** (Zhang et al., 2023): every
# client LoRA-tunes on its own data and uploads its adapter to be averaged; with GRPO locally, "Fedpetuning+GRPO" is
# notebook 00's FedAvg-GRPO. **pass@1**: the fraction right of one sampled answer, averaged over the test problems
# (`eval_samples` samples each). One seed: the curves show what happens, not its significance (§7).

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
# Every message of the FedGRPO run. Down go questions (the auxiliary ones once; each training question with its $G$
# candidates, to its $M$ experts); up come scalars only: competences and scores. **No gradient, adapter or private
# example leaves a client.**

# %%
pd.DataFrame(ledger.to_rows()).groupby(["kind", "direction"]).agg(messages=("nbytes", "size"), bytes=("nbytes", "sum"))

# %% [markdown]
# Scalars still say something. From the competence replies alone the server can guess each client's specialty (the
# truth columns are the simulator's):

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
# ## 7. What the reproduction found
# The stored runs (`benchmarks/results`): each arm trained until its curve flattens, plateaus paired seed by seed.
# **Central-GRPO** is plain GRPO on all clients' data pooled in one place, the paper's upper bound. Each sentence is
# printed from the stored numbers, with its label and setting; every table is in the [report](11_fedgrpo_report.ipynb).

# %%
notes = fedgrpo_finding_notes()
Markdown("\n".join(f"- **{label}** {row.finding}: {row.result}. *Setting:* {row.setting}."
                   for label, row in notes.iterrows()))

# %% [markdown]
# Read together: FedGRPO stays below FedAvg-GRPO (F1) and below Central-GRPO (F2). Selection beats chance at finding
# topic holders (§4), yet three seeds see no accuracy gain over random experts (F3); who can check answers *exactly*
# matters more (F4).

# %% [markdown]
# ## 8. Exercises: predict, then run
# Predict in the first cell; the second shows the answer and, once you have predicted, checks you.
#
# **Exercise 1.** Set $M = 1$. What is eq. 9's $R_k$ for every candidate?

# %%
prediction_1 = None  # a number

# %%
one = trace_question(tour.server, question, L=L, M=1, seed=seed, truth=tour.truth)
answer_1 = float(np.unique(one["eq9"]).item()) if np.unique(one["eq9"]).size == 1 else None
why_1 = (f"with one expert μ_r = r^s and σ_r = 0, so R = 0 / (0 + 10⁻⁶) for every candidate: eq. 9 carries no "
         f"signal, while A_j still ranks the candidates (here from {one['advantages']['paper'].min():.2f} to "
         f"{one['advantages']['paper'].max():.2f})")
notebook.check(prediction_1, answer_1, why_1) if prediction_1 is not None else notebook.reveal(answer_1, why_1)

# %% [markdown]
# **Exercise 2.** With $M = K$ (every client an expert), what is the hit rate, compared with random selection's?
# Predict `"higher"`, `"equal"` or `"lower"`.

# %%
prediction_2 = None  # "higher", "equal" or "lower"

# %%
every = selection_quality(tour.server, tour.truth, L=L, M=num_clients)
gap_all = every["hit_rate_major"] - every["random_hit_rate_major"]
answer_2 = "equal" if abs(gap_all) < 1e-9 else ("higher" if gap_all > 0 else "lower")
why_2 = (f"choosing all {num_clients} clients is what random choice does on average (both {every['hit_rate_major']:.3f}"
         f"), so selection only helps when M < K (at M = {M}: {sq['hit_rate_major']:.3f} against "
         f"{sq['random_hit_rate_major']:.3f})")
notebook.check(prediction_2, answer_2, why_2) if prediction_2 is not None else notebook.reveal(answer_2, why_2)

# %% [markdown]
# **Exercise 3.** Look at the client table of §4. Which client will be the top expert (most competent) for
# question 0? Predict a name like `"client_3"`.

# %%
prediction_3 = None  # a client's name

# %%
q0 = trace_question(tour.server, 0, L=L, M=M, seed=seed, truth=tour.truth)
answer_3 = tour.runtime.client_ids[sq["experts"][0][0]]  # eq. 6 for question 0, from the graph cell
k3 = sq["experts"][0][0]
held = notebook.client_table(tour.partitions)
share_3 = held.loc[answer_3, q0["topic"]] / held.loc[answer_3, "total"]
why_3 = (f"question 0 ({q0['question']!r}) is a {q0['topic']} question; {answer_3} has the highest competence "
         f"r_k^p = {q0['competence'][k3]:.3f} on its {L} neighbours, and {q0['topic']} is {share_3:.0%} of its data "
         f"(the largest holder, {held[q0['topic']].idxmax()}, has {held[q0['topic']].max()} {q0['topic']} examples): "
         + ("competence finds the topic's holder" if share_3 >= 0.1 else "competence is measured on neighbours, not "
            "on topics, and weak domain models can rank a non-holder first"))
notebook.check(prediction_3, answer_3, why_3) if prediction_3 is not None else notebook.reveal(answer_3, why_3)

# %% [markdown]
# **Exercise 4.** If all $M$ experts give every candidate the same score and all candidates have the same format,
# what advantage does each candidate get?

# %%
prediction_4 = None  # a number

# %%
from fedrl_kit.fedgrpo.group_reward import candidate_advantages

flat = candidate_advantages(np.full((M, cfg.num_generations), 0.7), "paper", 8.0, np.ones(cfg.num_generations), 1.0)
answer_4 = float(np.round(flat, 6).max())
why_4 = (f"every combined reward is 8 × 0.7 + 1 = {8 * 0.7 + 1:.1f}, equal to their mean, so every A_j = 0 / (0 + "
         "10⁻⁶) = 0: an all-equal group teaches nothing, exactly as in notebook 00")
notebook.check(prediction_4, answer_4, why_4) if prediction_4 is not None else notebook.reveal(answer_4, why_4)
