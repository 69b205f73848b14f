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
# before the server averages the adapters. More local steps mean fewer rounds (less communication), but each client
# fits its own topics, the adapters **drift** apart, and their average is a worse model. **PubSwap** adds a small
# public dataset. Every $\tau_{\text{swap}}$-th local step is a **public step**: all clients answer the same $b$
# public prompts, send the answers and whether each is right (no parameters), and the server hands each client a
# group of $K$ answers to train on, **swapping** answers between clients. The reproduction's tables are in
# [12_pubswap_report.ipynb](12_pubswap_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p num_clients 8`); a name it does not have stops the notebook in one line.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
seed = 0               # one seed: one world, partition and run
num_clients = 4        # N clients
dirichlet_alpha = 0.3  # α_Dir, Dirichlet concentration of the topic split (the paper's Table 1: α = 0.3)
taus = None            # local steps τ of the drift runs (None: 2 and 6 quick, 2 and 4 smoke, 10 and 120 full)
run_root = ""          # where the runs go ("": runs/pubswap/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from IPython.display import Markdown
from plotly.subplots import make_subplots

from experiments.findings import interval_words, labelled, pubswap_findings, pubswap_random_findings, pubswap_setting
from experiments.sweep import SETTINGS
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.config import preset
from fedrl_kit.grpo import group_advantages
from fedrl_kit.pubswap.method import is_public_step
from fedrl_kit.pubswap.public_step import generate_public, group_table, swap_public
from fedrl_kit.runs import Run
from fedrl_kit.world.partition import topic_matrix


def make_config(p):
    """The paper's setting (FedIT, AdamW with weight decay 0.01, equal-size clients), τ_swap = 2."""
    smoke = notebook.smoke_fields(preset_name, notebook.SMOKE_SIZES["pubswap"], fixed=("num_clients", "rounds",
                                                                                       "local_steps"))
    return preset(p, num_clients=num_clients, seed=seed, dirichlet_alpha=dirichlet_alpha, pubswap={"period": 2},
                  **SETTINGS["paper"], **smoke)


cfg, run_root, figures = notebook.setup("pubswap", globals(), make_config, runs="run_root",
                                        folder=dict(n=num_clients, a=dirichlet_alpha, s=seed))
TAUS = tuple(taus or {"quick": (2, 6), "smoke": (2, 4), "full": (10, 120), "full-smoke": (2, 4)}[preset_name])
METHODS = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_random": "PubSwap Random", "pubswap_balanced": "PubSwap Balanced"}
probe_run = Run(cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy

# %% [markdown]
# ## 1. One round, drawn, and in time order
# Who sends what (top), and the same round along time (below): **1** the server broadcasts the global adapter,
# **2** every client takes $\tau$ local steps, a public one (★) every $\tau_{\text{swap}}$-th, **3** the clients
# send their adapters and the server averages them (FedIT).

# %%
diagrams.round_diagram("pubswap")

# %%
diagrams.step_timeline(max(TAUS), cfg.pubswap.period)

# %% [markdown]
# ## 2. Key equations
# **GRPO, every step's update.** For a prompt $x$ a client samples $K$ answers $y_k$ from $\pi_{\text{old}}$ (its
# policy when the step starts); a verifier scores each, $r_k = 1$ if right, else 0 (the only reward here):
#
# $$\hat a_k = \frac{r_k - \bar r}{\sigma_r},\qquad
# J(\theta) = \frac{1}{K}\sum_{k=1}^{K}\frac{1}{|y_k|}\sum_{t}\min\Bigl(\rho_{k,t}\,\hat a_k,\;
# \operatorname{clip}\bigl(\rho_{k,t},\,1-\varepsilon,\,1+\varepsilon_{\text{high}}\bigr)\,\hat a_k\Bigr),\qquad
# \rho_{k,t} = \frac{\pi_\theta(y_{k,t}\mid x, y_{k,<t})}{\pi_{\text{old}}(y_{k,t}\mid x, y_{k,<t})}$$
#
# (eqs. 1–2, `fedrl_kit.grpo`; $\bar r$, $\sigma_r$ the group's mean and standard deviation). A step makes $\mu$
# gradient updates on the same answers: $\rho = 1$ at the first, $\rho \ne 1$ after, as $\theta$ has moved and
# $\pi_{\text{old}}$ has not. The clip bounds how far one step moves $\rho$ ($\varepsilon_{\text{high}} >
# \varepsilon$: "clip-higher"). No KL penalty: its weight $\beta_{\text{KL}}$ is 0. **pass@1**: the fraction of
# test problems whose sampled answer is right, averaged over samples. The run's values:

# %%
lora = {n: tuple(p.shape) for n, p in policy.model.named_parameters() if ".lora_A." in n or ".lora_B." in n}
a_name = next(n for n in lora if ".lora_A." in n)
pd.Series({"ε, ε_high (clip range)": f"{cfg.epsilon}, {cfg.epsilon_high}", "β_KL (KL weight)": cfg.beta,
           "μ (gradient updates per GRPO step)": cfg.num_iterations, "N clients": cfg.num_clients,
           "b prompts per step, K answers per prompt": f"{cfg.prompts_per_step}, {cfg.num_generations}",
           "τ_swap": cfg.pubswap.period, "α_Dir (code: dirichlet_alpha)": cfg.dirichlet_alpha,
           "LoRA rank r_LoRA, α_LoRA, s = α_LoRA / r_LoRA":
               f"{cfg.lora_rank}, {cfg.lora_alpha:g}, {cfg.lora_alpha / cfg.lora_rank:g}",
           f"A and B of {a_name.split('.lora_A')[0].split('model.')[-1]} (one of {len(lora) // 2} adapted layers)":
               f"{lora[a_name]}, {lora[a_name.replace('.lora_A.', '.lora_B.')]}",
           "pass@1: test problems × samples each": f"{cfg.n_test} × {cfg.eval_samples}"}, name="value").to_frame()

# %% [markdown]
# **LoRA and FedIT.** A frozen layer $W_0 \in \mathbb{R}^{m\times d}$ is adapted as $W_0 + \Delta W$, $\Delta W =
# s\,BA$, with $B \in \mathbb{R}^{m\times r_{\text{LoRA}}}$, $A \in \mathbb{R}^{r_{\text{LoRA}}\times d}$, rank
# $r_{\text{LoRA}} \ll m, d$ and scale $s$
# (eq. 3); only $A$ and $B$ train and travel. The server averages the two factors **separately** (FedIT):
#
# $$B_{p+1} = \frac{1}{N}\sum_{n=1}^{N} B^{(n)}_{p+1},\qquad A_{p+1} = \frac{1}{N}\sum_{n=1}^{N} A^{(n)}_{p+1}
# \qquad\text{(eq. 4, `fedrl_kit.aggregate.fedit`)}$$
#
# That is not the average of the $\Delta W$: with $1\times 1$ factors, clients $(B, A) = (1, 1)$ and $(3, 3)$
# have $\Delta W = 1$ and $9$, mean 5, but FedIT gives $\bar B \bar A = 2 \cdot 2 = 4$; the gap grows as the
# clients' factors drift apart.
#
# **Drift**, with $\Delta W_n = s B_n A_n$ client $n$'s change (norms summed in squares over all adapted layers)
# and $\Delta W_p$ the round's broadcast (`fedrl_kit.drift`):
#
# $$\delta_{\text{pair}} = \frac{2}{N(N-1)}\sum_{n<n'}\lVert \Delta W_n - \Delta W_{n'}\rVert_F,\qquad
# \delta_{\text{glob}} = \frac{1}{N}\sum_{n}\lVert \Delta W_n - \Delta W_p\rVert_F$$
#
# *Mechanism:* on private steps each client follows its own topics' gradient, so the $\Delta W_n$ diverge and $\delta$
# grows with $\tau$; on a public step all clients see the same prompts and, after a swap, partly the same answers,
# so their gradients share a part that pulls the $\Delta W_n$ the same way.
#
# **Why swap: a group with no spread teaches nothing.** All $K$ answers wrong (or all right) means $r_k = \bar r$,
# every $\hat a_k = 0$ and a zero gradient. Balanced puts other clients' right answers into such a group:

# %%
K_run = cfg.num_generations
M_demo = K_run // 2
groups = {"all wrong (own answers)": [0.0] * K_run,
          f"after Balanced swaps in M = {M_demo} right answers": [1.0] * M_demo + [0.0] * (K_run - M_demo)}
pd.DataFrame({name: group_advantages(torch.tensor(r), K_run).numpy().round(2) for name, r in groups.items()},
             index=[f"answer {k + 1}" for k in range(K_run)]).T.assign(
    rewards=[" ".join(f"{v:g}" for v in r) for r in groups.values()])

# %% [markdown]
# **The two swap rules**, for one public prompt $x$: client $n$ answered $K$ times and got $c_n(x)$ right; the
# other clients got $D_n(x)$ right between them.
#
# *Balanced* (`swap.balanced_swap`): keep client $n$'s own group when $c_n(x) \ge K/2$; otherwise replace
#
# $$M_n(x) = \min\bigl(\lfloor K/2\rfloor - c_n(x),\ D_n(x)\bigr)\qquad\text{(fraction swapped in: }
# f_n(x) = M_n(x)/K \le 1/2\text{)}$$
#
# of its wrong answers by other clients' right ones, so the group ends at most half right and keeps its spread.
#
# *Random* (`swap.random_swap`): draw $K$ of the pooled $N K$ answers uniformly without replacement; every client
# gets that **same** group, $G_n(x) = G(x)$. Swapped-in answers are scored by the receiving client's policy as
# $\pi_{\text{old}}$, so their $\rho$ starts at 1 (the paper does not say; `pubswap/method.py` explains).
#
# **A confound.** With $\tau_{\text{swap}} = 2$ a PubSwap client takes $\tau/2$ private steps per round where
# FedAvg-GRPO takes $\tau$ (§5 counts them): less drift may come from fewer private steps alone; a no-swap control
# (§7) separates the two.
#
# | symbol | meaning |
# |---|---|
# | $N$, $n$ | number of clients; one client |
# | $\tau$, $\tau_{\text{swap}}$ | local steps per round; every $\tau_{\text{swap}}$-th one is public |
# | $b$, $K$ | prompts per step; answers per prompt (the group) |
# | $r_k$, $\hat a_k$ | reward of answer $k$ (0/1); its group-relative advantage |
# | $\rho$, $\varepsilon$, $\varepsilon_{\text{high}}$, $\mu$ | probability ratio; clip range; updates per step |
# | $\beta_{\text{KL}}$ | weight of a KL penalty (0 here) |
# | $c_n(x)$, $D_n(x)$ | client $n$'s right answers to public prompt $x$; the other clients' right answers |
# | $M_n(x)$, $f_n(x)$ | answers Balanced swaps into client $n$'s group; that number over $K$ (code: `alpha`) |
# | $W_0$, $A$, $B$, $r_{\text{LoRA}}$, $s$ | frozen weight; LoRA's factors, rank and scale; $\Delta W = sBA$ |
# | $\delta_{\text{pair}}$, $\delta_{\text{glob}}$ | drift between clients; drift from the broadcast |
# | $\alpha_{\text{Dir}}$ | Dirichlet concentration of the topic split (small: few topics per client) |
#
# ## 3. Pseudocode
# `fedrl_kit/pubswap/method.py::run_round`, each line naming its function:
# ```
# for round p = 1..R:
#   send (A_p, B_p) to every client                                  # fit_begin message
#   for local step j = 1..τ:
#     if j is a multiple of τ_swap:                                   # method.is_public_step
#       the same b public prompts to every client                     # method.sample_public_batch
#       each client: K answers per prompt, and which are right        # client's public_generate handler
#       server, per prompt x and client n:                            # method.swap_prompts
#         Balanced: if c_n ≥ K/2: own group                           # swap.balanced_swap
#                   else: M_n of its wrong answers ← others' right ones
#         Random:   one group of K drawn from all N·K answers, to all # swap.random_swap
#       each client: one GRPO step on its group                       # client's public_step handler
#     else:
#       each client: one GRPO step on b of its private prompts        # client's private_step handler
#   each client sends (A_n, B_n); A = mean A_n, B = mean B_n          # aggregate.fedit
# ```

# %% [markdown]
# ## 4. Who holds what
# The *embedded world* is the toolkit's small task world: seven arithmetic-style topics with exact answers and a
# small pretrained policy, so everything runs on a CPU. As in the paper, a Dirichlet distribution over topics splits
# the data, every client the same size.

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(probe_run.partitions)

# %%
fig = viz.heterogeneity_bubbles(*topic_matrix(probe_run.partitions),
                                title=f"topics per client (Dirichlet α_Dir = {dirichlet_alpha}; bubble area ∝ "
                                      "examples)")
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown]
# ## 5. Run it: drift within a round
# One round from the same start per method and τ, a probe measuring the adapters after every local step (it changes
# nothing). To fit in three minutes on a 2-core CPU the quick preset runs one round at two small τ; §7's stored
# grid goes further.

# %%
drift_runs = {}
for tau in TAUS:
    for m in METHODS:
        run = Run(cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, eval_samples=1), progress=False,
                  policy=policy)
        drift_runs[(m, tau)] = (run, run.run())
drift = pd.DataFrame([{"method": METHODS[m], "tau": tau, **{k: v for k, v in r.items() if k != "replacement_per_prompt"}}
                      for (m, tau), (_, recs) in drift_runs.items() for r in recs if r["kind"] == "drift"])
steps_taken = drift.pivot_table(index="method", columns=["tau", "step_kind"], values="step", aggfunc="count",
                                fill_value=0)
steps_taken.columns = [f"τ = {t}: {kind} steps" for t, kind in steps_taken.columns]
print(f"drift runs: τ ∈ {TAUS}, one round each, τ_swap = {cfg.pubswap.period}; steps each client took:")
steps_taken

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
fig.update_yaxes(title_text="δ_pair = mean ‖ΔW_n − ΔW_n′‖_F", row=1, col=1)
fig.update_xaxes(title_text="local step")
viz.export(fig, "pubswap_drift_within_round", figures)
fig

# %%
end = drift.sort_values("step").groupby(["method", "tau"]).last().reset_index()
end_table = end.pivot(index="method", columns="tau", values=["pairwise_effective", "to_global_effective"]).round(3)
end_table.columns = [f"{'δ_pair' if v == 'pairwise_effective' else 'δ_glob'}, τ = {t}" for v, t in end_table.columns]
last = end[end.tau == max(TAUS)].set_index("method").pairwise_effective
print(f"At τ = {max(TAUS)} the round ends with δ_pair lowest for {last.idxmin()} ({last.min():.3f}) and highest for "
      f"{last.idxmax()} ({last.max():.3f}). One round of one seed shows the mechanism, not a verdict (§7 reads "
      "many rounds of three to five seeds); and the PubSwap arms took half as many private steps.")
end_table

# %% [markdown]
# ## 6. One swap, step by step
# Replay the last public step of the Balanced round with the largest τ: the same $b$ prompts and random streams
# (`generate_public`; a test checks it reproduces the swap). First, each client's right answers per prompt:

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
# Then Balanced's group for client 0 on a prompt where it has few right answers and the others some, slot by slot.
# **By hand**: $M = \min(\lfloor K/2\rfloor - c, D)$ from the table above, beside the package's $f K$.

# %%
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b groups per rule
c0 = correct[cids[0]].to_numpy()
others = correct.drop(columns=cids[0]).sum(axis=1).to_numpy()
wanted = (c0 < K // 2) & (others > 0)  # Balanced has something to do here
example_prompt = int(np.argmax(wanted * (K - c0))) if wanted.any() else 0
view = group_table(gen, swaps["balanced"], 0, example_prompt)
M_by_hand = min(max(K // 2 - int(c0[example_prompt]), 0), int(others[example_prompt]))
print(f"c = {c0[example_prompt]}, D = {others[example_prompt]}: M by hand = {M_by_hand}, "
      f"package f·K = {view.attrs['alpha'] * K:.0f} (f = {view.attrs['alpha']:.3f})")
view

# %% [markdown]
# **Turn the knobs**: the rule, the group size $K$ (the first $K$ answers of each client are pooled), the client
# and the prompt; only the swap is recomputed. The second table: each client's $f_n$, averaged over prompts.

# %%
import ipywidgets as widgets


def show_swap(rule, K, client, prompt):
    res = swap_public(gen, rule, K)
    v = group_table(gen, res, client, prompt)
    print(f"{rule}, K = {K}: {cids[client]} on {batch['prompt'][prompt]!r}: f = {v.attrs['alpha']:.3f} swapped in")
    display(v)
    display(pd.DataFrame({"f_n (mean over prompts)": np.mean([r.replacement_fraction for r in res], axis=0).round(3),
                          "right answers in the group (mean)": np.mean([r.correct.sum(axis=1) for r in res], axis=0)
                          .round(2)}, index=cids).T)


controls = dict(rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")]),
                K=widgets.IntSlider(K, 2, K, continuous_update=False),
                client=widgets.Dropdown(options=[(c, i) for i, c in enumerate(cids)], value=0),
                prompt=widgets.Dropdown(options=[(p, i) for i, p in enumerate(batch["prompt"])], value=example_prompt))
notebook.static_default(show_swap, **controls)
notebook.knobs(show_swap, **controls)

# %% [markdown]
# **What crossed the wire** in that round: the public step's answers are short texts, far smaller than the adapters.

# %%
per_kind = round_ledger[round_ledger["round"] == 1].groupby(["kind", "direction"]).nbytes.sum()
adapter = int(per_kind.get(("fit_end_result", "up"), 0))
public = int(sum(v for (k, d), v in per_kind.items() if k.startswith("public")))
print(f"LoRA factors up (all clients): {adapter:,} bytes; public-step messages (both ways): {public:,} bytes")

# %% [markdown]
# ## 7. What the reproduction found
# The stored larger-τ grid (final checkpoint): paired differences over seeds with 95 % Student-t half-widths,
# drift in $\lVert\Delta W\rVert$ units, pass@1 in points. The *no-swap control* (ours) takes Balanced's private and
# public steps, each client on its own answers: the same budget, no swap. The setting, findings F1–F5, Random's R1–R4:

# %%
setting = pubswap_setting()
print(f"Setting: τ = {setting['tau']}, {setting['rounds']} rounds ({setting['steps']} local steps per client), "
      f"{setting['clients']} clients, τ_swap = {setting['period']}, b = {setting['b']}, K = {setting['K']}; seeds: "
      + ", ".join(f"{m} {len(s)}" for m, s in setting["seeds"].items()) + ". A PubSwap client takes "
      f"{setting['steps'] // setting['period']} private steps of the {setting['steps']}.")
findings = labelled(pubswap_findings())
random_rows = labelled(pubswap_random_findings(), "R")
display(findings)
random_rows

# %%
def said(label, unit, table=findings):
    r = table.loc[label]
    return interval_words(r["difference"], r["±95% t"], int(r["seeds"]), unit)


Markdown(f"""- **F1**: Balanced ends its rounds with drift {said('F1', '‖ΔW‖')} than FedAvg-GRPO.
- **F2, F3**: it is the *swap* that does it: Balanced's drift is {said('F2', '‖ΔW‖')} than the no-swap
  control's, while the control, with the same half budget of private steps, against FedAvg-GRPO is
  {said('F3', '‖ΔW‖')}.
- **F4**: less drift does not show up as accuracy here: Balanced − FedAvg-GRPO in pass@1 is {said('F4', 'points')}.
- **F5 = R3**: Random's pass@1 is {said('F5', 'points')} than Balanced's, as the paper says for large τ; against
  FedAvg-GRPO it is {said('R4', 'points', random_rows)} (R4).
- **R1, R2**: Random's drift against Balanced is {said('R1', '‖ΔW‖', random_rows)}, and against FedAvg-GRPO
  {said('R2', '‖ΔW‖', random_rows)}. In the one-round run of §5 it ended {'lowest' if last.idxmin() == 'PubSwap Random'
  else 'not lowest'}: every client trains on the same group, which pulls them together within a round; but over
  {setting['rounds']} rounds at τ = {setting['tau']} its drift is not shown lower than Balanced's, and it loses
  accuracy, training on answers that are mostly other clients'.

Details: [the larger-τ grid, the no-swap control and the paper's claims in the report](12_pubswap_report.ipynb).""")

# %% [markdown]
# ## 8. Exercises: predict, then run
# Each check cell prints the answer and why; set your prediction first to test yourself.
#
# **Exercise 1.** In the table of right answers of §6, look at client 1 on the example prompt. How many of its
# answers will Balanced replace?

# %%
prediction_1 = None  # a whole number

# %%
answer_1 = int(swaps["balanced"][example_prompt].num_replaced[1])
c1, D1 = int(correct[cids[1]].iloc[example_prompt]), int(correct.drop(columns=cids[1]).iloc[example_prompt].sum())
notebook.check_explained(prediction_1, answer_1, f"{cids[1]} has c = {c1} right of K = {K} and the others D = {D1}; "
                         + (f"c ≥ K/2, so Balanced keeps its own group." if c1 >= K / 2 else
                            f"c < K/2, so M = min(⌊K/2⌋ − c, D) = min({K // 2 - c1}, {D1}) = {answer_1}."))

# %% [markdown]
# **Exercise 2.** Under *Random*, what fraction of a client's group is its own answers, on average over clients and
# prompts? Two decimals.

# %%
prediction_2 = None  # a fraction, e.g. 0.5

# %%
own_share = 1 - float(np.mean([r.replacement_fraction for r in swaps["random"]]))
answer_2 = round(own_share, 2)
notebook.check_explained(prediction_2, answer_2, f"each slot is drawn from the N·K = {len(cids) * K} pooled answers, "
                         f"K = {K} of them the client's own: expected share K/(N·K) = 1/N = {1 / len(cids):.2f}; "
                         f"measured here over {len(cids)} clients and {len(batch['prompt'])} prompts: {own_share:.3f}.",
                         tolerance=0.05)

# %% [markdown]
# **Exercise 3.** Set $K = 2$ in the widget. On these prompts, what is the largest number of answers Balanced
# replaces in any client's group?

# %%
prediction_3 = None  # a whole number

# %%
small = swap_public(gen, "balanced", 2)
answer_3 = int(max(r.num_replaced.max() for r in small))
zero = sum(int(((r.own_correct == 0) & (r.num_replaced > 0)).sum()) for r in small)
notebook.check_explained(prediction_3, answer_3, f"with K = 2, M = min(⌊2/2⌋ − c, D) ≤ 1 − c ≤ 1; it reaches 1 for "
                         f"a client with c = 0 when another client has a right answer ({zero} client–prompt pairs "
                         "here).")

# %% [markdown]
# **Exercise 4.** A client with at least $K/2$ right answers on a prompt: what is its $f_n$ under Balanced?

# %%
prediction_4 = None  # a number

# %%
res = swaps["balanced"]
kept = [r.replacement_fraction[n] for r in res for n in range(len(cids)) if r.own_correct[n] >= K / 2]
answer_4 = float(max(kept)) if kept else 0.0
notebook.check_explained(prediction_4, answer_4, f"Balanced swaps only when c < K/2 = {K / 2:g}; a group with half or "
                         f"more right already has spread. Of the {len(kept)} client–prompt pairs here with c ≥ K/2, "
                         f"the largest f is {answer_4:g}.")
