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
# # PubSwap: shared public prompts and swapped answers against client drift
#
# *Nayak, Askin, Ustaomeroglu, Joe-Wong, Joshi (Carnegie Mellon University): PubSwap.*
#
# **The problem.** In FedAvg-GRPO (notebook 00) every client takes $\tau$ local GRPO steps on its own problems
# before the server averages the adapters. More local steps mean fewer rounds, so less communication; but each
# client fits its own topics, the adapters **drift** apart, and the average of drifted adapters is a worse model.
# **PubSwap** adds a small public dataset that every client may see. Every $\tau_{\text{swap}}$-th local step is a
# **public step**: all clients answer the same $b$ public prompts, send their answers and whether each is right (text
# and 0/1, no parameters), and the server hands each client back a group of $K$ answers to train on, **swapping**
# answers between clients. The *Balanced* rule gives a client that got few answers right some correct answers of
# the others, so that its group has something to learn from.
#
# Here: one round drawn and written out, one swap step by step, drift measured step by step, and what the
# reproduction found. Every table of the reproduction is in the report,
# [12_pubswap_report.ipynb](12_pubswap_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p num_clients 8`); a name it does not have stops the notebook in one line.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
seed = 0               # one seed: one world, partition and run
num_clients = 4        # N clients
beta = 0.3             # Dirichlet concentration β of the topic split (the paper's Table 1)
taus = None            # local steps τ of the drift runs (None: 2 and 8 quick, 2 and 4 smoke, 10 and 120 full)
run_root = ""          # where the runs go ("": runs/pubswap/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from experiments.findings import pubswap_findings
from experiments.sweep import SETTINGS
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.config import preset
from fedrl_kit.pubswap.method import is_public_step
from fedrl_kit.pubswap.public_step import generate_public, group_table, swap_public
from fedrl_kit.runs import Run
from fedrl_kit.world.partition import topic_matrix


def make_config(p):
    """The paper's setting (FedIT, AdamW with weight decay 0.01, equal-size clients), τ_swap = 2."""
    smoke = notebook.smoke_fields(preset_name, notebook.SMOKE_SIZES["pubswap"], fixed=("num_clients", "rounds",
                                                                                       "local_steps"))
    return preset(p, num_clients=num_clients, seed=seed, dirichlet_alpha=beta, pubswap={"period": 2},
                  **SETTINGS["paper"], **smoke)


cfg, run_root, figures = notebook.setup("pubswap", globals(), make_config, runs="run_root",
                                        folder=dict(n=num_clients, b=beta, s=seed))
TAUS = tuple(taus or {"quick": (2, 8), "smoke": (2, 4), "full": (10, 120), "full-smoke": (2, 4)}[preset_name])
METHODS = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_random": "PubSwap Random", "pubswap_balanced": "PubSwap Balanced"}
probe_run = Run(cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy

# %% [markdown]
# ## 1. One round, drawn

# %%
diagrams.round_diagram("pubswap")

# %% [markdown]
# ## 2. Key equations
# Private and public steps are both GRPO steps (notebook 00): the group-relative advantage (eq. 1) and the clipped
# surrogate (eq. 2), `fedrl_kit.grpo`. A client's LoRA adapter changes each layer by $\Delta W = s\,BA$ (eq. 3,
# $s$ = LoRA's scale), and the server averages the two factors **separately** (FedIT):
#
# $$B_{p+1} = \frac{1}{N}\sum_{n=1}^{N} B^{(n)}_{p+1},\qquad A_{p+1} = \frac{1}{N}\sum_{n=1}^{N} A^{(n)}_{p+1}
# \qquad\text{(eq. 4, `fedrl_kit.aggregate.fedit`)}$$
#
# **The swap**, for one public prompt $x$: client $n$ answered $K$ times and got $c_n(x)$ right; the other clients
# got $D_n(x)$ right between them. *Balanced* keeps client $n$'s own group when $c_n \ge K/2$, and otherwise
# replaces
#
# $$M_n(x) = \min\bigl(\lfloor K/2\rfloor - c_n(x),\ D_n(x)\bigr)$$
#
# of its wrong answers by right answers of other clients (`fedrl_kit.pubswap.swap.balanced_swap`); the fraction
# swapped in is
#
# $$\alpha_n(x) = M_n(x)/K \le 1/2 .$$
#
# *Random* gives every client the same $K$ answers drawn uniformly from the $N K$ pooled ones
# (`swap.random_swap`). **Drift** is measured on what the layers compute, the mean over client pairs of
#
# $$\lVert \Delta W_n - \Delta W_{n'} \rVert_F = \lVert s B_n A_n - s B_{n'} A_{n'} \rVert_F
# \qquad\text{(`fedrl_kit.drift.mean_pairwise_drift`)}$$
#
# | symbol | meaning |
# |---|---|
# | $N$, $n$ | number of clients; one client |
# | $\tau$, $\tau_{\text{swap}}$ | local steps per round; every $\tau_{\text{swap}}$-th one is public |
# | $b$, $K$ | prompts per step; answers per prompt (the group) |
# | $c_n(x)$, $D_n(x)$ | client $n$'s right answers to public prompt $x$; the other clients' right answers |
# | $M_n(x)$, $\alpha_n(x)$ | answers Balanced swaps into client $n$'s group; that number over $K$ |
# | $A$, $B$, $s$ | LoRA's factors of a layer and its scale; $\Delta W = sBA$ |
# | drift | mean over client pairs of $\lVert \Delta W_n - \Delta W_{n'}\rVert_F$ |
# | $\beta$ | Dirichlet concentration of the topic split (small β: few topics per client) |
#
# ## 3. Pseudocode
# `fedrl_kit/pubswap/method.py::run_round`, each line naming its function:
# ```
# for round p = 1..R:
#   send (A_p, B_p) to every client                                  # fit_begin message
#   for step s = 0..τ−1:
#     if (s + 1) is a multiple of τ_swap:                             # method.is_public_step
#       the same b public prompts to every client                     # method.sample_public_batch
#       each client: K answers per prompt, and which are right        # client's public_generate handler
#       server: one group of K per client and prompt (Balanced/Random)# method.swap_prompts → swap.balanced_swap
#       each client: one GRPO step on its group                       # client's public_step handler
#     else:
#       each client: one GRPO step on b of its private prompts        # client's private_step handler
#   each client sends (A_n, B_n); A = mean A_n, B = mean B_n          # aggregate.fedit
# ```

# %% [markdown]
# ## 4. Who holds what
# The paper splits its data over the clients with a Dirichlet distribution over topics (β = 0.3), every client the
# same size; ours does the same with the embedded world's topics.

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(probe_run.partitions)

# %%
fig = viz.heterogeneity_bubbles(*topic_matrix(probe_run.partitions),
                                title=f"topics per client (Dirichlet β = {beta}; bubble area ∝ examples)")
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown]
# ## 5. Run it: drift within a round
# One round from the same start for each method and each τ, with a probe after every local step (it measures the
# adapters and changes nothing the run trains or sends). ★ marks a public step.

# %%
drift_runs = {}
for tau in TAUS:
    for m in METHODS:
        run = Run(cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, eval_samples=1), progress=False,
                  policy=policy)
        drift_runs[(m, tau)] = (run, run.run())
drift = pd.DataFrame([{"method": METHODS[m], "tau": tau, **{k: v for k, v in r.items() if k != "replacement_per_prompt"}}
                      for (m, tau), (_, recs) in drift_runs.items() for r in recs if r["kind"] == "drift"])

# %%
fig = make_subplots(rows=1, cols=len(TAUS), subplot_titles=[f"τ = {t}" for t in TAUS], shared_yaxes=True)
colors = {"FedAvg-GRPO": "#636efa", "PubSwap Random": "#00cc96", "PubSwap Balanced": "#ef553b"}
for j, tau in enumerate(TAUS, 1):
    for name, color in colors.items():
        d = drift[(drift.method == name) & (drift.tau == tau)]
        marker = dict(symbol=["circle" if k == "private" else "star" for k in d.step_kind], size=9)
        fig.add_trace(go.Scatter(x=d.step + 1, y=d.pairwise_effective, name=name, legendgroup=name,
                                 showlegend=j == 1, mode="lines+markers", line=dict(color=color), marker=marker),
                      row=1, col=j)
fig.update_layout(template="plotly_white", height=420, title="pairwise client drift after each local step (★ public)")
fig.update_yaxes(title_text="mean ‖ΔW_n − ΔW_n′‖_F", row=1, col=1)
fig.update_xaxes(title_text="local step")
viz.export(fig, "pubswap_drift_within_round", figures)
fig

# %%
end = drift.sort_values("step").groupby(["method", "tau"]).last().reset_index()
end_table = end.pivot(index="method", columns="tau", values="pairwise_effective").round(3)
end_table.columns = [f"drift at the end of the round, τ = {t}" for t in end_table.columns]
end_table

# %% [markdown]
# The end-of-round drift is what the server averages. One round of one seed shows the mechanism, not a verdict: the
# findings below read many rounds of three seeds.

# %% [markdown]
# ## 6. One swap, step by step
# Take the clients at the end of the Balanced round with the largest τ and replay its last public step: the same
# $b$ public prompts and the same random streams (`generate_public`; on the adapters that step saw it reproduces
# its swap exactly, a test checks it). First, how many of its $K$ answers each client got right on each prompt:

# %%
run, _ = drift_runs[("pubswap_balanced", max(TAUS))]
round_ledger = pd.DataFrame(run.runtime.ledger.to_rows())  # the round as trained, before the replay below
last_public = max(s for s in range(run.config.local_steps) if is_public_step(s, run.config.pubswap.period))
gen = generate_public(run.server, round=1, step=last_public)
K, batch, cids = gen.num_generations, gen.batch, gen.client_ids
correct = pd.DataFrame({cid: [sum(c) for c in g["correct"]] for cid, g in zip(cids, gen.generated)},
                       index=[f"{p} (gold {a})" for p, a in zip(batch["prompt"], batch["answer"])])
correct.index.name = f"c_n: right answers out of K = {K}"
correct

# %% [markdown]
# Then Balanced's group for client 0 on a prompt where it has few right answers and the others have some, slot by
# slot: which slots were replaced, and by whose answer. **By hand**: $M = \min(\lfloor K/2\rfloor - c, D)$ from the
# table above, beside the package's $\alpha K$.

# %%
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b groups per rule
c0 = correct[cids[0]].to_numpy()
others = correct.drop(columns=cids[0]).sum(axis=1).to_numpy()
wanted = (c0 < K // 2) & (others > 0)  # Balanced has something to do here
example_prompt = int(np.argmax(wanted * (K - c0))) if wanted.any() else 0
view = group_table(gen, swaps["balanced"], 0, example_prompt)
M_by_hand = min(max(K // 2 - int(c0[example_prompt]), 0), int(others[example_prompt]))
print(f"c = {c0[example_prompt]}, D = {others[example_prompt]}: M by hand = {M_by_hand}, "
      f"package α·K = {view.attrs['alpha'] * K:.0f} (α = {view.attrs['alpha']:.3f})")
view

# %% [markdown]
# **Turn the knobs**: the rule, the group size $K$ (the first $K$ of each client's answers are pooled, so Balanced's
# threshold $K/2$ moves with it), the client and the prompt. Only the swap is recomputed, with the round's own random
# stream. The second table is each client's $\alpha_n$, averaged over the $b$ prompts.

# %%
import ipywidgets as widgets


def show_swap(rule, K, client, prompt):
    res = swap_public(gen, rule, K)
    v = group_table(gen, res, client, prompt)
    print(f"{rule}, K = {K}: {cids[client]} on {batch['prompt'][prompt]!r}: α = {v.attrs['alpha']:.3f} swapped in")
    display(v)
    display(pd.DataFrame({"α_n (mean over prompts)": np.mean([r.replacement_fraction for r in res], axis=0).round(3),
                          "right answers in the group (mean)": np.mean([r.correct.sum(axis=1) for r in res], axis=0)
                          .round(2)}, index=cids).T)


notebook.knobs(show_swap, rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")]),
               K=widgets.IntSlider(K, 2, K, continuous_update=False),
               client=widgets.Dropdown(options=[(c, i) for i, c in enumerate(cids)], value=0),
               prompt=widgets.Dropdown(options=[(p, i) for i, p in enumerate(batch["prompt"])], value=example_prompt))

# %% [markdown]
# Under **Random** every client trains on the same $K$ answers, mostly other clients' (off-policy for it). Under
# **Balanced** a client keeps its group unless fewer than half are right, and then only wrong slots are replaced,
# only by right answers from elsewhere. Swapped-in answers are scored by the client's current policy as
# $\pi_{\text{old}}$, so their importance ratio starts at 1 (the paper does not say; `pubswap/method.py` explains).
#
# **What crossed the wire** in that round: the public step's answers are short texts, far smaller than the adapters.

# %%
per_kind = round_ledger[round_ledger["round"] == 1].groupby(["kind", "direction"]).nbytes.sum()
adapter = int(per_kind.get(("fit_end_result", "up"), 0))
public = int(sum(v for (k, d), v in per_kind.items() if k.startswith("public")))
print(f"LoRA factors up (all clients): {adapter:,} bytes; public-step messages (both ways): {public:,} bytes")

# %% [markdown]
# ## 7. What the reproduction found
# The stored larger-τ grid (three to five seeds, the final checkpoint): drift in $\lVert\Delta W\rVert$ units,
# accuracy in pass@1 points, each a paired difference with its 95 % Student-t half-width.

# %%
findings = pubswap_findings()
findings

# %% [markdown]
# - PubSwap Balanced ends its rounds with less drift than FedAvg-GRPO at the largest τ (row 1)
#   ([report: the larger-τ grid](12_pubswap_report.ipynb)).
# - **Surprise:** it is the *swap* that does it. A control with the same private and public steps but no swap
#   drifts as much as FedAvg-GRPO (row 3), while Balanced drifts less than that control (row 2): answering the same
#   prompts alone does not anchor the clients ([report: the no-swap control](12_pubswap_report.ipynb)).
# - Less drift does not show up as accuracy at this scale: Balanced is within noise of FedAvg-GRPO (row 4)
#   ([report: the paper's claims](12_pubswap_report.ipynb)).
# - At large τ Random falls behind Balanced (row 5), as the paper says ([report](12_pubswap_report.ipynb)).

# %% [markdown]
# ## 8. Exercises: predict, then run
# **Exercise 1.** In the table of right answers of §6, look at client 1 on the example prompt. How many of its
# answers will Balanced replace?

# %%
prediction_1 = None  # a whole number

# %%
answer_1 = int(swaps["balanced"][example_prompt].num_replaced[1])
notebook.check(prediction_1, answer_1, "M = min(⌊K/2⌋ − c, D): nothing when c ≥ K/2, else up to the right answers "
                                       "the others have.")

# %% [markdown]
# **Exercise 2.** Under *Random*, what fraction of a client's group is its own answers, on average over clients and
# prompts? Predict to one decimal.

# %%
prediction_2 = None  # a fraction, e.g. 0.5

# %%
answer_2 = round(1 - float(np.mean([r.replacement_fraction for r in swaps["random"]])), 1)
notebook.check(prediction_2, answer_2, f"About 1/N = {1 / num_clients:.2f}: a uniform draw from N·K answers takes "
                                       "each client's share.", tolerance=0.1)

# %% [markdown]
# **Exercise 3.** Set $K = 2$ in the widget. On these prompts, what is the largest number of answers Balanced
# replaces in any client's group?

# %%
prediction_3 = None  # a whole number

# %%
answer_3 = int(max(r.num_replaced.max() for r in swap_public(gen, "balanced", 2)))
notebook.check(prediction_3, answer_3, "⌊K/2⌋ − c ≤ 1 with K = 2: a group of two gets at most one right answer "
                                       "swapped in.")

# %% [markdown]
# **Exercise 4.** A client with at least $K/2$ right answers on a prompt: what is its $\alpha_n$ under Balanced?

# %%
prediction_4 = None  # a number

# %%
res = swaps["balanced"]
kept = [r.replacement_fraction[n] for r in res for n in range(len(cids)) if r.own_correct[n] >= K / 2]
answer_4 = float(max(kept)) if kept else 0.0
notebook.check(prediction_4, answer_4, "Balanced leaves a group with half or more right answers as it is.")
