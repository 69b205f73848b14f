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
# with $K$ **clients**, each holding a few topics, and no client shares data or model updates. The server sees the
# questions pooled, without labels or owners, and holds a small labelled **auxiliary set**.
#
# **The idea.** The server trains; the clients only grade. Each client fine-tunes (SFT) a LoRA **domain model** on its
# data, once. For each question the server samples $G$ candidate answers and sends them to $M$ **experts**: the
# clients whose domain models best answer similar auxiliary questions. An expert holding the question checks each
# answer against its label (1 or 0); the others give their model's probability of that answer. The scores become the
# GRPO reward.
#
# **Our reading.** The paper's reward equations as printed cannot train (§2 shows why). What runs here is our reading
# of its remarks: the experts' mean score plus a format bonus, standardised over the candidates as in GRPO.
#
# **The paper's claim** (Table 1; **pass@1**: the share of test problems one sampled answer solves): FedGRPO beats
# **Fedpetuning+GRPO** (clients GRPO-train LoRA adapters on their own data; the server averages them each round) and
# roughly matches **Central-GRPO** (GRPO on all the data pooled). We test it in the kit's simulated **embedded world**
# (arithmetic in seven topics, a tiny policy); report [11_fedgrpo_report.ipynb](11_fedgrpo_report.ipynb) has the rest.

# %%
from IPython.display import display

from experiments import teaching_fedgrpo as teaching
from experiments.findings import fedgrpo_paper_table

paper = fedgrpo_paper_table()  # pass@1 in points, copied from the paper's Table 1
display(paper[["Zero-shot", "Fedpetuning+GRPO", "Central-GRPO", "FedGRPO"]], teaching.paper_gaps(paper))

# %% [markdown]
# ## 1. One server step
# Steps 0a–0b happen once, before training. Steps 1–7 repeat for every question: a server step runs them on $Q$
# questions at once, a **round** is $\tau$ server steps, and the model is evaluated after each round.

# %%
teaching.round_diagram()

# %% [markdown]
# ## 2. The equations
# **GRPO, the part FedGRPO keeps.** Candidate $\hat y_j$ of a group of $G$ gets a reward $r_j$ and the advantage
#
# $$A_j=\frac{r_j-\operatorname{mean}_i r_i}{\operatorname{std}_i r_i+10^{-6}}$$
#
# (std over the $G$ values). A step then raises the log-probability of $\hat y_j$'s tokens in proportion to $A_j$,
# with PPO's clipped probability ratio. The paper sets no clip or KL term; the kit clips to
# $[1-\epsilon,1+\epsilon_{\text{high}}]$ with $\epsilon_{\text{high}}>\epsilon$ (the "clip-higher" of DAPO, a GRPO
# variant) and uses no KL term. FedGRPO changes only **where $r_j$ comes from**.
#
# **Eq. 5, neighbours.** A frozen encoder $\phi$ (the base model's mean hidden state) maps a question to a unit vector
# $z$. A training question $x_s$'s neighbours are the $L$ auxiliary questions of highest cosine (the paper's
# $\mathcal{G}$):
#
# $$\mathcal{N}(x_s)=\operatorname{Top-}L_{\ell}\,\langle z_s,z_{p,\ell}\rangle$$
#
# **Eq. 6, competence.** Once (step 0b), client $k$ reports for each auxiliary question the probability $p_{k\ell}$
# that $\theta_k$ writes its label $y_{p,\ell}$ (the expected value of the paper's 0/1 check). Competence on $x_s$ is
# the mean over its neighbours; the $M$ most competent clients are its experts:
#
# $$r_k^p(x_s)=\frac{1}{L}\sum_{\ell\in\mathcal{N}(x_s)}p_{k\ell},\qquad
# \mathcal{C}(x_s)=\operatorname{Top-}M_k\,r_k^p(x_s)$$
#
# **Scores.** Each training question has one **owner**, the client holding it, so at most one expert owns it. With
# $a(\hat y_j)$ the candidate's answer (inside `<answer>…</answer>`, else its last number; none scores 0):
#
# $$r_k^s(\hat y_j)=\begin{cases}\mathbb{1}[a(\hat y_j)=y_s] & \text{the owner: answer-based evaluation (AE)}\\
# \Pr[\theta_k\text{ writes }a(\hat y_j)\text{ after }x_s] & \text{other experts: model-based evaluation (ME)}
# \end{cases}$$
#
# **Eqs. 7–9 as printed** average and standardise each candidate's scores **over the experts** $k$ ($\sigma_r$: their
# std; $\eta$: the learning rate):
#
# $$\mu_r(\hat y_j)=\frac{1}{M}\sum_{k\in\mathcal{C}}r_k^s(\hat y_j),\qquad
# R_k(\hat y_j)=\frac{r_k^s(\hat y_j)-\mu_r(\hat y_j)}{\sigma_r(\hat y_j)+10^{-6}},\qquad
# \theta_g\leftarrow\theta_g+\eta\,R_k\nabla_{\theta_g}\log\pi_{\theta_g}(\hat y_j\mid x_s)$$
#
# But $\sum_k R_k(\hat y_j)=0$ for every candidate: $R_k$ says which expert scored higher, not whether $\hat y_j$ is
# right, and summed over the experts the update vanishes.
#
# **What we train.** The paper's Remark 2 calls the group "the ensemble of candidate policies in GRPO", so we
# standardise **over the candidates** $j$. Its Remark 1 adds a format reward $f_j$ (1 for exactly
# `<think>…</think><answer>…</answer>`, else 0), and its appendix weights score and format 8 : 1:
#
# $$\tilde r_j=8\,\mu_r(\hat y_j)+f_j,\qquad A_j=\frac{\tilde r_j-\operatorname{mean}_i\tilde r_i}{\operatorname{std}_i
# \tilde r_i+10^{-6}}$$
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$; $\theta_k$ | clients; client $k$'s domain model |
# | $\mathcal{D}_s$, $x_s$, $y_s$ | training questions, one, its label (its owner's) |
# | $\mathcal{D}_p$, $x_{p,\ell}$, $y_{p,\ell}$ | the server's auxiliary questions, with labels |
# | $\pi_{\theta_g}$; $G$, $\hat y_j$ | the server's policy (LoRA adapter $\theta_g$); candidates per question, one |
# | $L$, $\mathcal{N}(x_s)$ | neighbours per question, the neighbours |
# | $M$, $\mathcal{C}(x_s)$ | experts per question, the experts |
# | $p_{k\ell}$, $r_k^p$; $r_k^s$, $\mu_r$ | competence on one auxiliary question, on $x_s$; score, experts' mean |
# | $f_j$, $\tilde r_j$, $A_j$ | format reward, trained reward, advantage |
# | $Q$, $\tau$, $T$ | questions per server step, server steps per round, rounds |
#
# ## 3. Pseudocode
# Algorithm 1 as run here; the comments name functions of `fedrl_kit/fedgrpo/`:
# ```
# each client k: θ_k = SFT on its own D_k                              # client.ensure_evaluator
# once: send D_p to every client; cache each p_kℓ                      # algorithm.ask_competence
# for round = 1..T, step = 1..τ:                                       # algorithm.server_step
#   draw Q questions x_s; sample G candidates ŷ_j ~ π_θg(·|x_s)
#   N(x_s) = the L nearest auxiliary questions   (eq. 5)               # expert_selection.nearest_exemplars
#   C(x_s) = the M clients of highest r_k^p      (eq. 6)               # algorithm.choose_experts
#   each expert scores ŷ_1..ŷ_G: r_k^s                                 # client.on_score
#   r̃_j = 8·μ_r(ŷ_j) + f_j; A_j = r̃_j standardised over j            # algorithm.advantages_from_scores
#   one clipped GRPO step on θ_g                                       # algorithm.policy_step
# ```

# %% [markdown]
# ## 4. One question, step by step
# The parameters (papermill can set them), then the setup: it splits $\mathcal{D}_s$ and trains every $\theta_k$.

# %% tags=["parameters"]
num_clients = 8        # K clients (the paper: 4 to 20)
dirichlet_alpha = 0.1  # the topic split: smaller gives each client fewer topics ("iid": an even split)
L = 20                 # neighbours per question, eq. 5 (the paper: 20)
M = 2                  # experts per question, eq. 6 (the paper: 2)
seed = 0
question = 0           # the question of D_s this section follows
preset_name = "quick"  # the run's size: quick | smoke | full | full-smoke
run_root = ""          # where runs go ("": the default)
figures_dir = ""       # where figures go ("": the default)

# %%
import numpy as np
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
# **Eq. 6**: each client's competence $r_k^p$, and the experts. `topic share` (the client's share of data in the
# question's topic) is simulator truth, for you only.

# %%
display(teaching.competence_table(tr, tour))
teaching.non_holder_note(tr, tour, lab.policy)

# %% [markdown]
# Eqs. 5–6 by hand, from the server's cached unit vectors and step 0b's replies:

# %%
st = server_state(tour.server)
cosine = st.aux_emb @ st.query_emb[question]                  # ⟨z_s, z_p,ℓ⟩ for every auxiliary question
neighbours = np.argsort(-cosine, kind="stable")[:L]           # eq. 5: the L nearest
r_p = st.cache.as_matrix()[:, neighbours].mean(axis=1)        # eq. 6: each client's mean p_kℓ over them
experts = np.argsort(-r_p, kind="stable")[:M]                 # Top-M
print(f"experts by hand: {experts.tolist()}, trace: {tr['experts']}; "
      f"r_k^p {'identical' if np.allclose(r_p, tr['competence']) else 'DIFFERENT'}")

# %% [markdown]
# ### The confidence graph
# The paper names a **confidence graph** of client expertise without defining it. We draw one per topic: a client's
# mean $p_{k\ell}$ over the topic's auxiliary questions, minus the base model's. Selection ignores topics: eq. 6
# averages over the question's own neighbours, so its experts (boxed) need not top the dotted column. The printed line
# applies eqs. 5–6 to all of $\mathcal{D}_s$, against random choice. Sliders: the question, $L$, $M$.

# %%
show_graph, sliders = teaching.selection_knobs(tour, lab.policy, question, L, M, figures)
notebook.static_default(lambda **v: show_graph(**v, static=True), **sliders)
notebook.knobs(show_graph, **sliders)

# %% [markdown]
# ### From scores to advantages
# One row per candidate; the columns follow §2's chain: each expert's score $r_k^s$, their mean $\mu_r$,
# $\tilde r_j = 8\mu_r + f_j$, and $A_j$ ($\tilde r_j$ standardised over the rows). `correct` is simulator truth.
# First, the next question whose owner is an expert and whose candidates are partly right:

# %%
tr2 = teaching.find_ae_case(tour, question, L, M, seed)
display(teaching.candidate_table(tr2, tour))
teaching.ae_case_note(tr2, tour)

# %% [markdown]
# Then the question traced above, where no candidate is right:

# %%
display(teaching.candidate_table(tr, tour))
teaching.top_advantage_note(tr)

# %% [markdown]
# **By hand**: one ME score (the answer's token log-probabilities under $\theta_k$, summed, then exponentiated), and
# the $A_j$ column from the scores:

# %%
row = tr["pathways"].index("ME")                              # the ME expert of this question
k, j = tr["experts"][row], next(i for i, c in enumerate(tr["candidates"]) if extract_answer(c))
answer_j = normalise_answer(extract_answer(tr["candidates"][j]))
log_p = sequence_logprob(lab.policy, f"eval_{tour.runtime.client_ids[k]}", [tr["question"]], [answer_j])
print(f"ME score of candidate {j} ({answer_j!r}): by hand {np.exp(log_p[0]):.4g}, trace {tr['scores'][row][j]:.4g}")
r_tilde = 8 * tr["scores"].mean(axis=0) + tr["format"]       # r̃_j = 8·μ_r(ŷ_j) + f_j, one per candidate
A = (r_tilde - r_tilde.mean()) / (r_tilde.std() + 1e-6)       # standardised over the G candidates
same = np.allclose(A, tr["advantages"]["paper"])
print(f"A_j by hand: {np.round(A, 3)}; the package's: {'the same' if same else 'DIFFERENT'}")

# %% [markdown]
# ### What the server learns about the clients
# It receives only numbers, but they tell. This is all it receives for the first question above:

# %%
display(teaching.server_scores(tr2, tour), teaching.privacy_note({tr2["index"]: tr2, question: tr}, tour),
        teaching.competence_note(tour))

# %% [markdown]
# ## 5. Run it: FedGRPO beside Fedpetuning+GRPO
# Same base model, questions and budget. A few rounds cannot show accuracy (§6 does), but they show the reward at
# work. **Format rate**: the share of test answers in the expected format.

# %%
runs, records = teaching.run_both(lab)  # trains both
display(teaching.quick_run_note(teaching.quick_run_table(runs, records), cfg))
teaching.quick_run_figure(records, figures)

# %% [markdown]
# **Traffic** (the paper's Figure 2), in bytes, up and down together:

# %%
other = runs["Fedpetuning+GRPO"]
display(teaching.traffic_table(tour, other), teaching.traffic_note(tour, other, M))

# %% [markdown]
# **What separates candidates.** For a question with right and wrong candidates, the experts' **edge** is
# $8(\bar\mu_r^{\text{right}} - \bar\mu_r^{\text{wrong}})$: the mean $\mu_r$ of its right candidates minus that of its
# wrong ones, times 8. The table averages it over each round's questions that have both; the format's edge is its
# weight, 1.

# %%
terms = teaching.reward_terms(records, cfg)
display(terms, teaching.reward_terms_note(terms))

# %% [markdown]
# ## 6. What the stored runs show
# Longer runs, stored in `benchmarks/results`, with two arms of ours that each change one thing in FedGRPO: **random
# experts** (no eq. 6) and **every client holds every label** (every score AE).

# %%
display(teaching.stored_settings())
teaching.stored_figure(figures)

# %%
display(teaching.stored_caption(), teaching.findings_box())

# %% [markdown]
# ## 7. Exercises: predict, then run
# ### Exercise 1
#
# Which $M = 2$ clients will be the experts of the first `mod` question of $\mathcal{D}_s$, most competent first?
# Read the heatmap's `mod` column. Then, from the topic table: why is the second one chosen?

# %%
prediction_1 = None  # two names, e.g. ["client_0", "client_1"]

# %%
answer_1, why_1 = teaching.exercise_experts(tour, L, M, seed)
notebook.check(prediction_1, answer_1, why_1) if prediction_1 is not None else notebook.reveal(answer_1, why_1)

# %% [markdown]
# ### Exercise 2
#
# In the first candidate table of §4, set the format weight to 0, so $\tilde r_j = 8\,\mu_r$. What advantage $A_j$
# does the wrong candidate get? Hint: the right candidates all score alike.

# %%
prediction_2 = None  # a number

# %%
answer_2, why_2 = teaching.exercise_no_format(tr2)
notebook.check(prediction_2, answer_2, why_2, tolerance=0.01) if prediction_2 is not None else \
    notebook.reveal(answer_2, why_2)

# %% [markdown]
# ### Exercise 3
#
# In the second candidate table of §4 (no candidate right), suppose the format were learnt: every $f_j = 1$. Which
# answer gets the top advantage? Is it right?

# %%
prediction_3 = None  # an answer, e.g. "42"

# %%
answer_3, why_3 = teaching.exercise_format_learnt(tr)
notebook.check(prediction_3, answer_3, why_3) if prediction_3 is not None else notebook.reveal(answer_3, why_3)

# %% [markdown]
# ### Exercise 4
#
# Suppose ME scored by **agreement** instead: 1 if a candidate's answer is the expert model's own greedy answer, else
# 0. Could the server still pick out a question's owner from the score rows alone?

# %%
prediction_4 = None  # "yes" or "no"

# %%
answer_4, why_4 = teaching.exercise_agreement()
notebook.check(prediction_4, answer_4, why_4) if prediction_4 is not None else notebook.reveal(answer_4, why_4)
