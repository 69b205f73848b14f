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
# # FedGRPO: the server learns from the scores of expert clients
#
# *Zhu, Gu, Fan, Yang, Han: FedGRPO, AAAI 2026 (arXiv:2602.12014).*
#
# **The problem.** A server wants to improve its language model with GRPO, but the labelled training questions sit
# with $K$ **clients** (a few topics each) that share neither data nor model updates. The server sees the
# questions pooled, without labels or owners, and holds a small labelled **auxiliary set**.
#
# **The idea.** The server trains; the clients only grade. Each client fine-tunes (SFT) a LoRA **domain model** on its
# data, once. For each question the server samples $G$ candidate answers and sends them to $M$ **experts**: the
# clients whose domain models best answer similar auxiliary questions. An expert holding the question checks each
# answer against its label (1 or 0); the others give their model's probability of it. The scores become the reward.
#
# **Why it should help.** A model fine-tuned on a topic puts more probability on right answers in that topic than on
# wrong ones, so even an expert without the label should score right candidates higher; and the clients best on
# similar questions should be the best judges. §6 tests both hopes.
#
# **The paper's claim** (Table 1; **pass@1**: the share of test problems one sampled answer solves): FedGRPO beats
# **Fedpetuning+GRPO** (clients GRPO-train LoRA adapters; the server averages them each round) and roughly matches
# **Central-GRPO** (GRPO on the pooled data). We test it on arithmetic questions in seven topics with a tiny
# pretrained transformer. The reward equations as printed cannot train, so we train our reading of the paper's
# remarks (§2). [Report 11](11_fedgrpo_report.ipynb) has the full reproduction.

# %%
import numpy as np
from IPython.display import display

from experiments import teaching_fedgrpo as teaching
from experiments.findings import fedgrpo_paper_table

paper = fedgrpo_paper_table()  # pass@1 in points, copied from the paper's Table 1
display(paper[["Zero-shot", "Fedpetuning+GRPO", "Central-GRPO", "FedGRPO"]], teaching.paper_gaps(paper))

# %% [markdown]
# ## 1. One server step
# Steps 0a–0b run once, before training; steps 1–7 run for every question. A server step handles $Q$ questions; a
# **round** is $\tau$ server steps, then an evaluation.

# %%
teaching.round_diagram()

# %% [markdown]
# ## 2. The equations
# | symbol | meaning |
# |---|---|
# | $K$, $k$; $\theta_k$ | clients; client $k$'s domain model |
# | $\mathcal{D}_s$, $x_s$, $y_s$ | training questions, one, its label (its owner's) |
# | $\mathcal{D}_p$, $x_{p,\ell}$, $y_{p,\ell}$ | the server's auxiliary questions, with labels |
# | $\pi_{\theta_g}$; $G$, $\hat y_j$ | server policy (LoRA adapter $\theta_g$); candidates per question, one |
# | $L$, $\mathcal{N}(x_s)$; $M$, $\mathcal{C}(x_s)$ | number and set of neighbours; of experts |
# | $p_{k\ell}$; $c_k(x_s)$ | client $k$'s reply on auxiliary question $\ell$; its **competence** (paper: $r_k^p$) |
# | $s_k(\hat y_j)$; $\mu_r$; $R_k$ | expert $k$'s **score** (paper: $r_k^s$); the experts' mean; eq. 8's standardised $s_k$ |
# | $f_j$, $\tilde r_j$, $A_j$ | format reward, trained reward, advantage |
# | $\rho_{j,t}$; $\varepsilon$, $\varepsilon_{\text{high}}$ | new/old probability of token $t$; its lower, upper clip |
# | $Q$, $\tau$, $T$ | questions per server step, server steps per round, rounds |
#
# **GRPO, the part FedGRPO keeps.** Candidate $\hat y_j$ of a group of $G$ gets a reward $r_j$ and the advantage
#
# $$A_j=\frac{r_j-\operatorname{mean}_i r_i}{\operatorname{std}_i r_i+10^{-6}}$$
#
# (std over the $G$ values). A step maximises PPO's clipped objective, averaged over all candidate tokens $t$ as in
# DAPO (no KL term):
#
# $$\mathcal{J}(\theta_g)=\frac{1}{\sum_j|\hat y_j|}\sum_{j,t}\min\big(\rho_{j,t}A_j,\;
# \operatorname{clip}(\rho_{j,t},1-\varepsilon,1+\varepsilon_{\text{high}})\,A_j\big),\qquad
# \rho_{j,t}=\frac{\pi_{\theta_g}(\hat y_{j,t}\mid\cdot)}{\pi_{\text{old}}(\hat y_{j,t}\mid\cdot)}$$
#
# The clip stops pushing a token once its ratio leaves $[1-\varepsilon,1+\varepsilon_{\text{high}}]$ in $A_j$'s
# direction. FedGRPO changes only **where $r_j$ comes from**.
#
# **Eq. 5, neighbours.** The server's frozen base model embeds a question as a unit vector $z$ (its mean hidden
# state); $x_s$'s neighbours are the $L$ auxiliary questions of highest cosine (the paper's $\mathcal{G}$):
#
# $$\mathcal{N}(x_s)=\operatorname{Top-}L_{\ell}\,\langle z_s,z_{p,\ell}\rangle$$
#
# **Eq. 6, competence.** Once (step 0b), client $k$ replies for each auxiliary question with $p_{k\ell}$: in the paper
# a 0/1 check of $\theta_k$'s answer against $y_{p,\ell}$; **in this notebook** (our change) the probability that
# $\theta_k$ writes $y_{p,\ell}$, that check's expected value. Competence on $x_s$ is the mean over its neighbours; the
# $M$ most competent clients are its experts:
#
# $$c_k(x_s)=\frac{1}{L}\sum_{\ell\in\mathcal{N}(x_s)}p_{k\ell},\qquad
# \mathcal{C}(x_s)=\operatorname{Top-}M_k\,c_k(x_s)$$
#
# **Scores.** Each training question has one **owner**, the client whose data holds it with its label (here
# exactly one per question). The server does not know the owner, so the owner is an expert only when eq. 6
# picks it. With $a(\hat y_j)$ the candidate's bare answer (inside `<answer>…</answer>`, else its last number; none
# scores 0; tags and reasoning are not scored):
#
# $$s_k(\hat y_j)=\begin{cases}\mathbb{1}[a(\hat y_j)=y_s] & \text{the owner: answer-based evaluation (AE)}\\
# \Pr[\theta_k\text{ writes }a(\hat y_j)\text{ after }x_s] & \text{other experts: model-based evaluation (ME)}
# \end{cases}$$
#
# **Eqs. 7–9 as printed.** The paper averages and standardises each candidate's scores
# **over the experts** $k$ ($\sigma_r$: their std; $\eta$: the learning rate):
#
# $$\mu_r(\hat y_j)=\frac{1}{M}\sum_{k\in\mathcal{C}}s_k(\hat y_j),\qquad
# R_k(\hat y_j)=\frac{s_k(\hat y_j)-\mu_r(\hat y_j)}{\sigma_r(\hat y_j)+10^{-6}},\qquad
# \theta_g\leftarrow\theta_g+\eta\,R_k\nabla_{\theta_g}\log\pi_{\theta_g}(\hat y_j\mid x_s)$$
#
# A right candidate, scored 1 by its owner and 0.93 by an ME expert:

# %%
s = np.array([1.0, 0.93])                      # s_k of one candidate: the owner's (AE), then the ME expert's
R = (s - s.mean()) / (s.std() + 1e-6)            # eq. 8: standardised over the M = 2 experts
print(f"μ_r = {s.mean():.3f}, R_k = {np.round(R, 3)}")

# %% [markdown]
# Two different scores always standardise to +1 and −1: eq. 9 pushes this right answer up through the owner's term
# and down, as hard, through the ME expert's. $R_k$ ranks the experts, not the candidates (Exercise 5: any $M$).
#
# **What we train.** Remark 2 calls the group "the ensemble of candidate policies in GRPO", so we standardise **over
# the candidates** $j$; Remark 1 adds a format reward $f_j$ (1 for exactly `<think>…</think><answer>…</answer>`, else
# 0), weighted 8 : 1 in the appendix:
#
# $$\tilde r_j=8\,\mu_r(\hat y_j)+f_j,\qquad A_j=\frac{\tilde r_j-\operatorname{mean}_i\tilde r_i}{\operatorname{std}_i
# \tilde r_i+10^{-6}}$$
#
# ## 3. Pseudocode
# Algorithm 1 as run here (code: `fedrl_kit/fedgrpo/algorithm.py`):
# ```
# each client k: θ_k = SFT on its own D_k
# once: send D_p to every client; cache each p_kℓ
# for round = 1..T, step = 1..τ:
#   draw Q questions x_s; sample G candidates ŷ_j ~ π_θg(·|x_s)
#   N(x_s) = the L nearest auxiliary questions   (eq. 5)
#   C(x_s) = the M clients of highest c_k        (eq. 6)
#   each expert scores ŷ_1..ŷ_G: s_k
#   r̃_j = 8·μ_r(ŷ_j) + f_j; A_j = r̃_j standardised over j
#   one clipped GRPO step on θ_g                 (J above)
# ```

# %% [markdown]
# ## 4. One question, step by step
# Each client's topic mix is drawn from Dirichlet($\alpha$): `dirichlet_alpha` = 0.1 gives most clients one or two
# topics. Then every client trains its $\theta_k$.

# %% tags=["parameters"]
num_clients = 8        # K clients (the paper: 4 to 20)
dirichlet_alpha = 0.1  # the topic split: smaller gives each client fewer topics ("iid": an even split)
L = 20                 # neighbours per question, eq. 5 (the paper: 20)
M = 2                  # experts per question, eq. 6 (the paper: 2)
seed = 0
question = 0           # the question of D_s this section follows
preset_name = "quick"  # quick | smoke | full | full-smoke
run_root = figures_dir = ""

# %%
import pandas as pd

from fedrl_kit import notebook
from fedrl_kit.fedgrpo.algorithm import server_state
from fedrl_kit.fedgrpo.diagnostics import trace_question
from fedrl_kit.rewards import extract_answer, normalise_answer
from fedrl_kit.sft import sequence_logprob

lab = teaching.setup(globals())  # the config, the base policy, and FedGRPO's run with every θ_k trained
cfg, tour, figures = lab.cfg, lab.tour, lab.figures
teaching.show_setup(lab)

# %% [markdown]
# `trace_question` runs training's own server step on one question, without updating $\theta_g$. **Eq. 5**, its
# nearest auxiliary questions:

# %%
tr = trace_question(tour.server, question, L=L, M=M, seed=seed, truth=tour.truth)
print(f"x_s = {tr['question']!r}, topic {tr['topic']} (label {tr['answer']}: the server never sees it)")
pd.DataFrame(tr["neighbours"]).round(3).head(4)

# %% [markdown]
# **Eqs. 5–6 in code**, from the server's cached vectors and replies $p_{k\ell}$. `topic share` (simulator truth, for
# you only): the client's share of data in the question's topic.

# %%
st = server_state(tour.server)
cosine = st.aux_emb @ st.query_emb[question]                  # ⟨z_s, z_p,ℓ⟩ for every auxiliary question
neighbours = np.argsort(-cosine, kind="stable")[:L]           # eq. 5: the L nearest
c = st.cache.as_matrix()[:, neighbours].mean(axis=1)          # eq. 6: each client's mean p_kℓ over them
experts = np.argsort(-c, kind="stable")[:M]                   # Top-M
assert np.allclose(c, tr["competence"])                       # the same as training's server step
display(pd.DataFrame({"c_k": c, "topic share": teaching.topic_shares(tr, tour),
                      "expert": np.isin(np.arange(num_clients), experts)}, index=tour.runtime.client_ids).round(3))
teaching.non_holder_note(tr, tour, lab.policy)

# %% [markdown]
# ### The confidence graph
# The paper's **confidence graph** of client expertise is undefined; ours plays no part in the algorithm: per topic, each client's mean $p_{k\ell}$ over the topic's auxiliary questions, minus the base model's.
# Eq. 6 averages over the question's neighbours instead, so its experts (boxed) need not top the dotted column.

# %%
show_graph, sliders = teaching.selection_knobs(tour, lab.policy, question, L, M, figures)
notebook.static_default(lambda **v: show_graph(**v, static=True), **sliders)
notebook.knobs(show_graph, **sliders)

# %% [markdown]
# ### From scores to advantages
# One row per candidate: each expert's score $s_k$, then §2's chain (`chain`); `correct` is simulator truth. First, a
# question where the owner scores a right candidate 1 and some candidates are wrong:

# %%
def chain(tr):                                                # §2 for one traced question; tr["scores"]: [M, G]
    mu = tr["scores"].mean(axis=0)                            # eq. 7: μ_r(ŷ_j), the experts' mean score
    r_tilde = 8 * mu + tr["format"]                           # r̃_j = 8·μ_r + f_j
    A = (r_tilde - r_tilde.mean()) / (r_tilde.std() + 1e-6)   # A_j: standardised over the G candidates
    return teaching.candidate_table(tr, tour, mu, r_tilde, A)  # checks A against the package's server step


tr2 = teaching.find_ae_case(tour, question, L, M, seed)  # the next question where an AE expert scores a right one 1
display(chain(tr2))
teaching.ae_case_note(tr2, tour)

# %% [markdown]
# Then the question traced above, where no candidate is right:

# %%
display(chain(tr))
teaching.top_advantage_note(tr)

# %% [markdown]
# **One ME score by hand**: the answer's token log-probabilities under $\theta_k$, summed, exponentiated:

# %%
row = tr["pathways"].index("ME")                              # the ME expert of this question
k, j = tr["experts"][row], next(i for i, c in enumerate(tr["candidates"]) if extract_answer(c))
answer_j = normalise_answer(extract_answer(tr["candidates"][j]))
log_p = sequence_logprob(lab.policy, f"eval_{tour.runtime.client_ids[k]}", [tr["question"]], [answer_j])
print(f"ME score of candidate {j} ({answer_j!r}): by hand {np.exp(log_p[0]):.4g}, trace {tr['scores'][row][j]:.4g}")

# %% [markdown]
# ### What the server learns about the clients
# All it receives for the first question above:

# %%
display(teaching.server_scores(tr2, tour))

# %% [markdown]
# An AE row is all 0s and 1s; an ME probability almost never is. So such a row names the owner, and its 1s the
# label. Tested on this run's first 40 questions:

# %%
owner = tour.truth.fact("queries").owner                      # simulator truth: who holds each question
rows = [(np.isin(row, (0.0, 1.0)).all(), owner[q] == k)       # (row all 0s and 1s?, its expert owns x_s?)
        for q in range(40) for t in [trace_question(tour.server, q, L=L, M=M, seed=seed, truth=tour.truth)]
        for row, k in zip(t["scores"], t["experts"])]
flag, own = np.array(rows).T
print(f"rows of exact 0s and 1s: {flag[own].sum()} of {own.sum()} owners' rows, "
      f"{flag[~own].sum()} of {(~own).sum()} other experts' rows")
teaching.competence_note(tour)

# %% [markdown]
# ## 5. Run it: FedGRPO beside Fedpetuning+GRPO
# Same base model, questions and budget; a few server steps: enough to learn the format (**format rate**: the share
# of test answers in the expected format), too few to move pass@1 (§6 does).

# %%
runs, records = teaching.run_both(lab)  # trains both
display(teaching.quick_run_note(teaching.quick_run_table(runs, records), cfg))
teaching.quick_run_figure(records, figures)

# %% [markdown]
# **What separates candidates.** Where a question has right and wrong candidates, being right adds the experts'
# **edge** $8(\bar\mu_r^{\text{right}} - \bar\mu_r^{\text{wrong}})$ to $\tilde r_j$ (bars: means over those
# candidates); being formatted adds 1. Per round:

# %%
terms = teaching.reward_terms(records, cfg)
display(terms, teaching.reward_terms_note(terms))

# %% [markdown]
# ## 6. What the stored runs show
# Longer stored runs, with three variants of FedGRPO: **random experts** (no eq. 6), **every client holds every
# label** (every score AE), and the **official protocol** of the paper's released code: random experts, every label
# held, and $G$ fresh candidates $\hat y_{kj}$ **per expert** $k$ ($G\cdot M$ in all), each scored by its own expert
# only, in one group, centred without the std:
#
# $$A_{kj}=\tilde r_{kj}-\operatorname{mean}_{k',j'}\tilde r_{k'j'},\qquad \tilde r_{kj}=8\,s_k(\hat y_{kj})+f_{kj}$$
#
# Differences are **arm − FedGRPO**: positive means the arm did better.

# %%
display(teaching.stored_settings())
curves = teaching.stored_traces()                             # pass@1 per arm, seed and round
last5 = curves[curves["round"] > curves["round"].max() - 5]
plateau = 100 * last5.pivot_table("pass_at_1", "method", "seed")  # mean over the last 5 rounds, in points
teaching.plateau_table(plateau)

# %%
display(teaching.stored_figure(figures), teaching.stored_caption(), teaching.findings_box())

# %% [markdown]
# ## 7. Exercises: predict, then run
# ### Exercise 1
#
# Eq. 6 with a pencil: below, the replies $p_{k\ell}$ for the first `mod` question's $L = 4$ nearest auxiliary
# questions. Which $M = 2$ clients become its experts, most competent first? Do both hold `mod` data (§4's
# topic counts)?

# %%
q1 = teaching.first_of_topic(tour, "mod")                                 # the first `mod` question of D_s
teaching.p_matrix(tour, q1, np.argsort(-(st.aux_emb @ st.query_emb[q1]), kind="stable")[:4])  # eq. 5, L = 4

# %%
prediction_1 = None  # two names, e.g. ["client_0", "client_1"]

# %%
answer_1, why_1 = teaching.exercise_experts(tour, 4, M, seed)
notebook.check(prediction_1, answer_1, why_1) if prediction_1 is not None else notebook.reveal(answer_1, why_1)

# %% [markdown]
# ### Exercise 2
#
# In §4's first candidate table, drop the format: $\tilde r_j = 8\,\mu_r$. What advantage $A_j$ does the wrong
# candidate get? Hint: the right candidates all score alike.

# %%
prediction_2 = None  # a number

# %%
answer_2, why_2 = teaching.exercise_no_format(tr2)
notebook.check(prediction_2, answer_2, why_2, tolerance=0.01) if prediction_2 is not None else \
    notebook.reveal(answer_2, why_2)

# %% [markdown]
# ### Exercise 3
#
# In §4's second candidate table (no candidate right), suppose every $f_j = 1$. Which answer gets the top
# advantage? Is it right?

# %%
prediction_3 = None  # an answer, e.g. "42"

# %%
answer_3, why_3 = teaching.exercise_format_learnt(tr)
notebook.check(prediction_3, answer_3, why_3) if prediction_3 is not None else notebook.reveal(answer_3, why_3)

# %% [markdown]
# ### Exercise 4
#
# Suppose ME scored by **agreement**: 1 if a candidate's answer is the expert model's own greedy answer, else 0.
# Could the server still pick out a question's owner from the score rows?

# %%
prediction_4 = None  # "yes" or "no"

# %%
answer_4, why_4 = teaching.exercise_agreement()
notebook.check(prediction_4, answer_4, why_4) if prediction_4 is not None else notebook.reveal(answer_4, why_4)


# %% [markdown]
# ### Exercise 5
#
# Eqs. 7–9 as printed: $M = 3$ experts score one candidate 1, 0.6 and 0.1. What is $\sum_k R_k$? For any scores?

# %%
prediction_5 = None  # a number

# %%
answer_5, why_5 = teaching.exercise_printed_sum(np.array([[1.0], [0.6], [0.1]]))  # [M, G] = [3, 1]
notebook.check(prediction_5, answer_5, why_5, tolerance=0.01) if prediction_5 is not None else \
    notebook.reveal(answer_5, why_5)
