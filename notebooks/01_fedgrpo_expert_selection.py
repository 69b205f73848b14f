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
# **The problem.** A server wants to improve its language model with GRPO. The training questions are split over $K$
# **clients**, each holding labelled questions of a few topics. The server sees the questions pooled, with no labels
# and no owners; no client shares data or a model update. The server owns a small labelled **auxiliary set**
# $\mathcal{D}_p$.
#
# **The method.** The server trains; the clients only grade. Each client first fine-tunes (SFT) a LoRA **domain
# model** $\theta_k$ on its own data, once. For each question the server samples $G$ candidate answers and sends them
# to $M$ **experts**: the clients whose $\theta_k$ best answers similar $\mathcal{D}_p$ questions (**competence**).
# An expert that owns the question (at most one does) holds its label and checks each answer exactly:
# **answer-based evaluation (AE)**, 0 or 1. The others score by **model-based evaluation (ME)**: the probability
# their $\theta_k$ gives that answer. The experts' mean score, plus a bonus for the answer format, is the GRPO reward.
#
# **What the server can learn about the clients.** It receives only numbers, but they tell. An AE score is exactly 0
# or 1 and an ME score almost never is, so a row of 0s and 1s says that this expert owns the question, and its 1s
# mark the label. The competence replies hint at each client's topic mix. §4 measures both and names a setting that
# hides ownership.
#
# **The paper's claim** (Table 1; **pass@1**: the share of test problems one sampled answer solves). FedGRPO beats
# **Fedpetuning+GRPO**, where each client GRPO-trains a LoRA adapter on its own data (reward 1 for a right answer,
# else 0) and the server averages the adapters each round. It roughly matches **Central-GRPO**: GRPO on all the data
# pooled, with no privacy.

# %%
from IPython.display import display

from experiments import teaching_fedgrpo as teaching
from experiments.findings import fedgrpo_paper_table

paper = fedgrpo_paper_table()  # points; copied from the paper
display(paper)
teaching.paper_gaps(paper)

# %% [markdown]
# Runs use the **embedded world**, the kit's built-in simulated task: arithmetic questions in seven topics and a
# tiny policy. §6's tables are in [11_fedgrpo_report.ipynb](11_fedgrpo_report.ipynb).

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
num_clients = 8        # K clients (the paper: 4 to 20)
dirichlet_alpha = 0.1  # Dirichlet concentration of the topic split (smaller: fewer topics per client), or "iid"
L = 20                 # neighbours per question, eq. 5 (paper: 20 of 100)
M = 2                  # experts per question, eq. 6 (paper: 2)
seed = 0               # one seed: one world, partition and run
question = 0           # the question of D_s the step-through follows

# for papermill: the run's size (quick | smoke | full | full-smoke) and where runs and figures go ("": the default)
preset_name = "quick"
run_root = ""
figures_dir = ""

# %%
import numpy as np
import pandas as pd

from fedrl_kit import notebook
from fedrl_kit.fedgrpo.algorithm import server_state
from fedrl_kit.fedgrpo.diagnostics import trace_question
from fedrl_kit.rewards import extract_answer, normalise_answer
from fedrl_kit.sft import sequence_logprob

lab = teaching.setup(globals())  # the config, the shared base policy, FedGRPO's run with each client's θ_k trained
cfg, tour, figures = lab.cfg, lab.tour, lab.figures
teaching.show_setup(lab)

# %% [markdown]
# ## 1. One server step, drawn
# Steps 0a–0b happen once, before round 1. Steps 1–7 repeat on $Q$ questions at a time; a **round** is $\tau$ such
# steps, and we evaluate after each. The experts drawn are those of §4's question.

# %%
tr = trace_question(tour.server, question, L=L, M=M, seed=seed, truth=tour.truth)  # §4 follows this question
teaching.round_diagram(tr, tour.runtime.client_ids)

# %% [markdown]
# ## 2. Key equations
# **GRPO.** A policy answers a question $x$ $G$ times, giving answers $\hat y_j$ with rewards $r_j$. Each reward is
# standardised within the group (population std) to an advantage $A_j$; PPO's clipped surrogate is then maximised
# over answer tokens $t$:
#
# $$A_j = \frac{r_j - \operatorname{mean}(r)}{\operatorname{std}(r) + 10^{-6}},\qquad
# \max_\theta\ \frac{1}{\sum_j |\hat y_j|}\sum_{j,t}\min\bigl(\rho_{j,t}A_j,\ \operatorname{clip}(\rho_{j,t},
# 1-\epsilon, 1+\epsilon_{\text{high}})A_j\bigr),\qquad \rho_{j,t} = \frac{\pi_\theta(\hat y_{j,t}\mid x,
# \hat y_{j,<t})}{\pi_{\text{old}}(\hat y_{j,t}\mid x, \hat y_{j,<t})}$$
#
# $\pi_{\text{old}}$ sampled the answers. The paper gives no normalisation or clip: these are the kit's defaults
# (from DAPO), with no KL term. FedGRPO changes only **where $r_j$ comes from**.
#
# **Eq. 5.** A frozen encoder $\phi$ embeds $x_s$; its neighbours are the $L$ nearest labelled auxiliary questions:
#
# $$\mathcal{G}(x_s) = \{(x_{p,\ell}, y_{p,\ell})\}_{\ell=1}^{L},\qquad
# \langle z_s, z_{p,1}\rangle \ge \dots \ge \langle z_s, z_{p,L}\rangle,\quad z = \phi(x)/\lVert\phi(x)\rVert
# $$
#
# **Eq. 6.** Client $k$'s **competence** on $x_s$ is its average over those neighbours; the $M$ most competent
# clients are the experts:
#
# $$r_k^p(x_s) = \frac{1}{L}\sum_{\ell=1}^{L} \Pr\bigl[\theta_k \text{ answers } x_{p,\ell} \text{ with }
# y_{p,\ell}\bigr],\qquad \mathcal{C}(x_s) = \operatorname{Top-}M_k\; r_k^p(x_s)
# $$
#
# ($\Pr$: of $\theta_k$ writing exactly $y$ after $x$, one forward pass; the expected value of the paper's 0/1
# check.)
#
# **Dual evaluation.** The *answer of* $\hat y_j$ is the text inside `<answer>…</answer>`, else its last number; a
# candidate with no answer scores 0. The owner uses AE, $r_k^s = \mathbb{1}[\text{answer of }\hat y_j = y(x_s)]$;
# any other expert uses ME, $r_k^s = \Pr[\theta_k \text{ answers } x_s \text{ with the answer of } \hat y_j]$.
#
# **Eqs. 7–9 as printed**, with learning rate $\eta$:
#
# $$\underbrace{\mu_r = \frac{1}{M}\sum_{k\in\mathcal{C}} r_k^s,\quad
# \sigma_r = \sqrt{\frac{1}{M}\sum_{k\in\mathcal{C}} (r_k^s-\mu_r)^2}}_{\text{eqs. 7, 8}},\qquad
# \underbrace{R_k = \frac{r_k^s - \mu_r}{\sigma_r + 10^{-6}}}_{\text{eq. 9}},\qquad
# \underbrace{\theta_g \leftarrow \theta_g + \eta\, R_k \nabla_{\theta_g}\log\pi_{\theta_g}(\hat y\mid x_s)}_{
# \text{update}}$$
#
# **Why it cannot train as printed.** For every candidate $\sum_k R_k = 0$: eq. 9 measures how much the experts
# *disagree*, and summed over the experts the update vanishes. (With $M = 2$, each $R_k$ is about $\pm 1$ whatever
# the gap.)
#
# **What we train (our reading).** Remark 2 calls the "group" *"the ensemble of candidate policies in GRPO"*, so we
# standardise over GRPO's $G$ candidates, not over the experts. Remark 1 adds a **format reward** $f_j$: 1 if
# $\hat y_j$ is exactly `<think>…</think><answer>…</answer>`, else 0. The appendix weights the experts' mean score 8
# and the format 1, so GRPO's $A_j$ follows from:
#
# $$\tilde r_j = 8\,\mu_r(\hat y_j) + 1\cdot f_j \qquad\text{(our reading)}$$
#
# | symbol | meaning |
# |---|---|
# | $K$, $k$; $M$, $\mathcal{C}(x_s)$ | clients; experts per question, the experts |
# | $L$, $\mathcal{G}(x_s)$; $\phi$ | neighbours per question, the neighbours; encoder |
# | $\mathcal{D}_k$, $\theta_k$; $\theta_g$ | client $k$'s data, its domain model; the server's policy |
# | $\mathcal{D}_s$, $x_s$; $\mathcal{D}_p$ | training questions, one of them; auxiliary questions |
# | $r_j$; $r_k^p$; $r_k^s$; $\mu_r$, $\sigma_r$; $R_k$ | GRPO reward; competence; score; experts' mean, std; eq. 9 |
# | $G$, $\hat y_j$; $Q$; $\tau$; $T$ | candidates (not $\mathcal{G}$), candidate $j$; questions per step; steps per round; rounds |
# | $f_j$, $\tilde r_j$, $A_j$ | format reward, trained reward, advantage |
#
# ## 3. Pseudocode
# Algorithm 1 as run here. Each line names its function in `fedrl_kit/fedgrpo/`:
# ```
# each client k: θ_k = SFT on its own D_k                               # client.ensure_evaluator
# once: send D_p to every client; cache Pr[θ_k answers x_p right]       # algorithm.ask_competence
# for round = 1..T:                                                     # algorithm.run_round
#   for step = 1..τ:                                                    # algorithm.server_step
#     draw Q questions x_s from D_s                                     # algorithm.sample_questions
#     G candidates ŷ ~ π_θg(·|x_s)                                      # algorithm.sample_candidates
#     G(x_s) = L nearest auxiliary questions             (eq. 5)        # expert_selection.nearest_exemplars
#     r_k^p(x_s) from the cache; C(x_s) = Top-M          (eq. 6)        # algorithm.choose_experts
#     send (x_s, ŷ) to each expert; get G scores r_k^s                  # algorithm.collect_scores, client.on_score
#     A_j from r̃_j = 8·μ_r(ŷ_j) + f_j    (our reading of eqs. 7–9)     # algorithm.advantages_from_scores
#     one clipped-surrogate GRPO step on θ_g                            # algorithm.policy_step
# ```

# %% [markdown]
# ## 4. One question, step by step
# How the training questions $\mathcal{D}_s$ are split over the clients (topic counts):

# %% tags=["nbval-check-output"]
notebook.client_table(tour.partitions)

# %% [markdown]
# `trace_question` runs training's `server_step` on one question, without the update. **Eq. 5**, neighbours:

# %%
print(f"x_s = {tr['question']!r}   topic: {tr['topic']}   (answer {tr['answer']}: the server never sees it)")
pd.DataFrame(tr["neighbours"]).round(3).head(6)

# %% [markdown]
# **Eq. 6**: each client's competence $r_k^p$ and the $M$ experts. `topic share` is the client's fraction of data in
# the question's topic; the server never sees it.

# %%
display(teaching.competence_table(tr, tour))
teaching.non_holder_note(tr, tour, lab.policy)

# %% [markdown]
# **By hand**, eqs. 5–6 from the server's cached embeddings and step 0b's replies:

# %%
st = server_state(tour.server)             # z_s, z_p (unit vectors) and the cache of step 0b's replies
cosine = st.aux_emb @ st.query_emb[question]                  # ⟨z_s, z_p⟩ for every auxiliary question
neighbours = np.argsort(-cosine, kind="stable")[:L]           # eq. 5: the L nearest
r_p = st.cache.as_matrix()[:, neighbours].mean(axis=1)        # eq. 6: each client's mean over them
experts = np.argsort(-r_p, kind="stable")[:M]                 # Top-M
print(f"experts by hand: {experts.tolist()}, trace: {tr['experts']}; "
      f"r_k^p {'identical' if np.allclose(r_p, tr['competence']) else 'DIFFERENT'}")

# %% [markdown]
# ### The confidence graph, as a heatmap
# The paper names, but never defines, a **confidence graph** of client expertise built from $\mathcal{D}_p$. Here:
# each client's mean competence on a topic's auxiliary questions, minus the base model's score there (an easy topic
# is not expertise; the shift is the same down a column, so a column still ranks clients by competence). Dotted: the
# question's topic; boxed: its experts. Sliders: the question, $L$, $M$.

# %%
show_graph, sliders = teaching.selection_knobs(tour, lab.policy, question, L, M, figures)
notebook.static_default(lambda **v: show_graph(**v, static=True), **sliders)
notebook.knobs(show_graph, **sliders)

# %% [markdown]
# ### Scores to advantage
# Each expert's score $r_k^s$ (AE or ME), their mean $\mu_r$, the reward $\tilde r_j = 8\mu_r + f_j$, and $A_j$:
# $\tilde r_j$ standardised over the $G$ rows. `correct` is the truth, for you only. First, the next question where
# the owner (AE) vouches for a right candidate:

# %%
tr2 = teaching.find_ae_case(tour, question, L, M, seed)
display(teaching.candidate_table(tr2, tour))
teaching.ae_case_note(tr2, tour)

# %% [markdown]
# Then the traced question, where no candidate is right:

# %%
display(teaching.candidate_table(tr, tour))
teaching.top_advantage_note(tr)

# %% [markdown]
# **By hand**, one ME score: the answer's summed token log-probabilities under $\theta_k$, exponentiated:

# %%
row = tr["pathways"].index("ME")                              # an ME expert of this question
k, j = tr["experts"][row], next(i for i, c in enumerate(tr["candidates"]) if extract_answer(c))
answer_j = normalise_answer(extract_answer(tr["candidates"][j]))
log_p = sequence_logprob(lab.policy, f"eval_{tour.runtime.client_ids[k]}", [tr["question"]], [answer_j])
print(f"candidate {j}, answer {answer_j!r}: exp(log p) = {np.exp(log_p[0]):.4g}, trace: {tr['scores'][row][j]:.4g}")

# %% [markdown]
# **By hand**, the traced question's $A_0$ from its $\tilde r_j$ column:

# %%
r_tilde = 8 * tr["scores"].mean(axis=0) + 1 * tr["format"]  # the trained reward r̃_j of every candidate
print(f"A_0 by hand = {(r_tilde[0] - r_tilde.mean()) / (r_tilde.std() + 1e-6):.4f}, "
      f"package = {tr['advantages']['paper'][0]:.4f}")

# %% [markdown]
# ### What the server learns about the clients
# Read as a curious server would: the score rows of the two questions above, then the competence replies:

# %%
display(teaching.privacy_note({question: tr, tr2["index"]: tr2}, tour))
teaching.topic_guess_table(tour)

# %% [markdown]
# ## 5. Run it: FedGRPO beside Fedpetuning+GRPO
# Same base model, questions and budget. A quick run shows the format being learned, not accuracy (§6 has pass@1).
# **Format rate**: the share of test answers in the expected format.

# %%
runs, records = teaching.run_both(lab)  # trains both
quick = teaching.quick_run_table(runs, records)
display(quick, teaching.quick_run_note(quick, cfg))
teaching.score_bytes(tour, runs["Fedpetuning+GRPO"], M)

# %%
teaching.quick_run_figure(records, figures)

# %% [markdown]
# **The two reward terms per round**, averaged over the training candidates. The expert term's **edge** is
# $8(\bar\mu_r^{\text{right}} - \bar\mu_r^{\text{wrong}})$ over a question's candidates; the format term's is always 1:

# %%
terms = teaching.reward_terms(records, cfg)
display(terms)
teaching.reward_terms_note(terms)

# %% [markdown]
# ## 6. What the reproduction found
# Longer stored runs. Two arms are ours: **random experts** and **every client holds every label** (every score AE).

# %%
teaching.stored_settings()

# %%
teaching.stored_figure(figures)

# %%
teaching.stored_caption()

# %%
teaching.findings_box()

# %% [markdown]
# ## 7. Exercises: predict, then run
# ### Exercise 1
#
# Which $M = 2$ clients will be the experts of the first `mod` question of $\mathcal{D}_s$, most competent first?
# Read them off the heatmap's `mod` column. Then: why is the second one chosen? (§4's topic table.)

# %%
prediction_1 = None  # two names, e.g. ["client_0", "client_1"]

# %%
answer_1, why_1 = teaching.exercise_experts(tour, L, M, seed)
notebook.check(prediction_1, answer_1, why_1) if prediction_1 is not None else notebook.reveal(answer_1, why_1)

# %% [markdown]
# ### Exercise 2
#
# In §4's first table (the AE case), set the format weight to 0, so $\tilde r_j = 8\,\mu_r$. What advantage $A_j$
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
# In §4's traced question (no candidate right), suppose the format were learnt: every $f_j = 1$. Which answer gets
# the top advantage? Is it right?

# %%
prediction_3 = None  # an answer, e.g. "42"

# %%
answer_3, why_3 = teaching.exercise_format_learnt(tr)
notebook.check(prediction_3, answer_3, why_3) if prediction_3 is not None else notebook.reveal(answer_3, why_3)

# %% [markdown]
# ### Exercise 4
#
# This is all the server receives for another question: its candidates' answers and its two experts' scores. Which
# expert owns the question, and what is its label?

# %%
tr3 = teaching.find_ae_case(tour, tr2["index"], L, M, seed)  # the next question whose owner vouches for an answer
print(f"x_s = {tr3['question']!r}")
teaching.server_scores(tr3, tour)

# %%
prediction_4 = None  # a client and an answer, e.g. ("client_0", "42")

# %%
answer_4, why_4 = teaching.exercise_owner(tr3, tour)
notebook.check(prediction_4, answer_4, why_4) if prediction_4 is not None else notebook.reveal(answer_4, why_4)
