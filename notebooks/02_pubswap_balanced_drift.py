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
# **The problem.** In FedAvg-GRPO each of $N$ clients takes $\tau$ **local steps** (GRPO steps on its own prompts)
# per round before the server averages the LoRA adapters. With many local steps the adapters **drift** apart and
# their average gets worse. **PubSwap** makes every $\tau_{\text{swap}}$-th local step a **public step**: all
# clients answer the same $b$ public prompts, $K$ answers each; the server hands each client a group of $K$,
# **swapping** in other clients' answers.
#
# **You will learn** how Balanced and Random swapping build a group; how to measure drift step by step and split a
# reduction with a no-swap control; which of the paper's claims a small reproduction confirms (in brief below the
# setup cell).

# %% [markdown]
# ## Parameters
# Change them here and rerun from the top.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, real model) | full-smoke (GPU, tiny)
seed = 0               # one seed: one world, partition and run
num_clients = 4        # N clients
dirichlet_alpha = 0.3  # Dirichlet concentration of the topic split (the paper's Table 1: 0.3)
taus = None            # local steps τ of the drift runs (None: 2 and 6 quick, 2 and 4 smoke, 10 and 120 full)
run_root = ""          # where the runs go ("": runs/pubswap/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from IPython.display import Markdown

pd.set_option("display.max_colwidth", None)  # the tables below hold sentences
from plotly.subplots import make_subplots

from experiments.findings import (interval_words, pubswap_arm_levels, pubswap_claims_verdicts, pubswap_drift_split,
                                   pubswap_paper_gains, pubswap_setting, pubswap_start_pass1, pubswap_teaching_tables)
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
METHODS = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_noswap": "no-swap control", "pubswap_random": "PubSwap Random",
           "pubswap_balanced": "PubSwap Balanced"}
probe_run = Run(cfg, progress=False).build()
world, policy = probe_run.world, probe_run.policy
shared = lambda a, b: len(set(a["prompt"]) & set(b["prompt"]))  # noqa: E731  prompts two splits have in common
arch, lora_n = policy.model.config, sum(p.numel() for n, p in policy.model.named_parameters() if "lora_" in n)
pd.Series({"world": f"{cfg.world}: {len(world.train)} private problems, {len(world.public)} public prompts (gold "
                    f"answers known to all), {len(world.test)} test problems; reward: {' + '.join(cfg.rewards)}",
           "public per topic": ", ".join(f"{t} {c}" for t, c in pd.Series(world.public["topic"]).value_counts().items()),
           "prompts shared: public∩test, public∩private, test∩private":
               f"{shared(world.public, world.test)}, {shared(world.public, world.train)}, "
               f"{shared(world.test, world.train)}",
           "policy": f"{arch.num_hidden_layers}-layer {arch.model_type} transformer, width {arch.hidden_size}, "
                     f"{arch.vocab_size}-character vocabulary, "
                     f"{(sum(p.numel() for p in policy.model.parameters()) - lora_n) / 1e6:.2f} M frozen parameters "
                     f"+ {lora_n / 1e6:.2f} M LoRA"}, name="this notebook's setting").to_frame()

# %% [markdown]
# **The answer in brief** (§7's stored runs; "within noise": the 95 % interval contains 0):

# %%
findings, random_rows = pubswap_teaching_tables()
setting, levels, gains = pubswap_setting(), pubswap_arm_levels(), pubswap_paper_gains()


def said(label, unit, table=findings):
    r = table.loc[label]
    return interval_words(r["difference"], r["±95% t"], int(r["seeds"]), unit)


f4 = findings.loc["F4"]
top = f4["difference"] + f4["±95% t"]  # the largest pass@1 gain the interval allows
Markdown(f"""At τ = {setting['tau']}, {setting['rounds']} rounds ({setting['steps']} local steps per client):
- **Drift**: PubSwap Balanced ends with δ_pair {said('F1', '‖ΔW‖')} than FedAvg-GRPO, and {said('F2', '‖ΔW‖')}
  than the no-swap control: the **swap** keeps clients closer.
- **Accuracy**: Balanced − FedAvg-GRPO pass@1 is {said('F4', 'points')}. Gains above {top:+.2f} points are ruled
  out at this scale; {int((gains > top).sum().sum())} of the paper's {gains.size} gains are larger (up to
  {gains.to_numpy().max():+.1f}), but they were measured on its 1.5B models, so their size is not tested here.
- **Random swapping**: pass@1 {said('F5', 'points')} than Balanced's.""")

# %% [markdown]
# ## 1. One round, drawn, and in time order
# **1** The server broadcasts the adapter, **2** every client takes $\tau$ local steps, every
# $\tau_{\text{swap}}$-th public (★), **3** the server averages the two LoRA factors separately (**FedIT**, §2), as
# in every arm here, FedAvg-GRPO included.

# %%
diagrams.round_diagram("pubswap")

# %%
diagrams.step_timeline(max(TAUS), cfg.pubswap.period)

# %% [markdown]
# ## 2. Key equations
# **GRPO, every local step** (`grpo.group_advantages`, `grpo.grpo_loss`). For a prompt $x$ a client samples $K$
# answers $y_k$ from $\pi_{\text{old}}$ (its policy when the step starts); reward $r_k = 1$ if right, else 0:
#
# $$\hat a_k = \frac{r_k - \bar r}{\sigma_r},\qquad
# J(\theta) = \frac{1}{K}\sum_{k=1}^{K}\frac{1}{|y_k|}\sum_{t}\min\Bigl(\rho_{k,t}\,\hat a_k,\;
# \operatorname{clip}\bigl(\rho_{k,t},\,1-\varepsilon,\,1+\varepsilon_{\text{high}}\bigr)\,\hat a_k\Bigr),\qquad
# \rho_{k,t} = \frac{\pi_\theta(y_{k,t}\mid x, y_{k,<t})}{\pi_{\text{old}}(y_{k,t}\mid x, y_{k,<t})}$$
#
# ($\bar r$, $\sigma_r$: the group's mean and standard deviation.) A step makes $\mu$ updates on the same answers.
# **pass@1**: the fraction of test problems answered right. The run's values:

# %%
lora = {n: tuple(p.shape) for n, p in policy.model.named_parameters() if ".lora_A." in n or ".lora_B." in n}
a_name = next(n for n in lora if ".lora_A." in n)
pd.Series({"ε, ε_high (clip range)": f"{cfg.epsilon}, {cfg.epsilon_high}", "β_KL (KL weight)": cfg.beta,
           "μ (gradient updates per GRPO step)": cfg.num_iterations, "η (learning rate)": cfg.learning_rate,
           "N clients": cfg.num_clients, "b prompts per step, K answers per prompt":
               f"{cfg.prompts_per_step}, {cfg.num_generations}",
           "τ_swap": cfg.pubswap.period, "Dirichlet concentration (code: dirichlet_alpha)": cfg.dirichlet_alpha,
           "LoRA rank r_LoRA, code lora_alpha, scale s = lora_alpha / r_LoRA":
               f"{cfg.lora_rank}, {cfg.lora_alpha:g}, {cfg.lora_alpha / cfg.lora_rank:g}",
           f"A and B of {a_name.split('.lora_A')[0].split('model.')[-1]} (one of {len(lora) // 2} adapted layers)":
               f"{lora[a_name]}, {lora[a_name.replace('.lora_A.', '.lora_B.')]}",
           "pass@1: test problems × samples each (§5's runs: 1 sample)": f"{cfg.n_test} × {cfg.eval_samples}"},
          name="value").to_frame()

# %% [markdown]
# **LoRA and FedIT** (`aggregate.fedit`). A frozen layer $W_0$ becomes $W_0 + \Delta W$, $\Delta W = sBA$; only the
# factors $A, B$ train and travel. In round $p$, FedIT averages them **separately**: $A_{p+1} = \frac{1}{N}\sum_n
# A^{(n)}_{p+1}$, $B_{p+1} = \frac{1}{N}\sum_n B^{(n)}_{p+1}$, not the mean $\Delta W$.
#
# **Drift** (`drift.mean_pairwise_drift`, `drift.distance_to_global`): client $n$'s adapter $\Delta W_n = sB_nA_n$
# against the others' and the broadcast $\Delta W_p$ (Frobenius norms over all layers; unit "‖ΔW‖"):
#
# $$\delta_{\text{pair}} = \frac{2}{N(N-1)}\sum_{n<n'}\lVert \Delta W_n - \Delta W_{n'}\rVert_F,\qquad
# \delta_{\text{glob}} = \frac{1}{N}\sum_{n}\lVert \Delta W_n - \Delta W_p\rVert_F$$
#
# **Why public steps should help** (the paper's appendix A: a bound). With $\Delta_j = \lVert\theta_n -
# \theta_{n'}\rVert$ after local step $j$, a private and a Balanced public step give
#
# $$\Delta_{j+1} \le (1+\eta L_{\text{priv}})\Delta_j + \eta\,\zeta_{n,n'} + \text{noise},\qquad
# \Delta_{j+1} \le (1+\eta L_{\text{pub}})\Delta_j + \eta\,(\omega_n + \omega_{n'}) + \text{noise}$$
#
# $L$: how fast the gradient changes with $\theta$ (can be smaller on the shared public set); $\zeta_{n,n'}$: the
# gap between two clients' private gradients, large when topics differ; $\omega_n$: how far swapped-in answers bend
# $n$'s gradient, growing with $\alpha_n$ below. Read literally, the bound says swapping *adds* drift; §7 measures
# that it removes drift. An upper bound gives the swap no credit for pulling clients towards the same answers.
#
# **Why swap.** All $K$ answers wrong (or right) means every $\hat a_k = 0$: no gradient. Balanced adds others'
# right answers:

# %%
K_run = cfg.num_generations
M_demo = K_run // 2
groups = {"all wrong (own answers)": [0.0] * K_run,
          f"after Balanced swaps in M = {M_demo} right answers": [1.0] * M_demo + [0.0] * (K_run - M_demo)}
pd.DataFrame({name: group_advantages(torch.tensor(r), K_run).numpy().round(2) for name, r in groups.items()},
             index=[f"answer {k + 1}" for k in range(K_run)]).T.assign(
    rewards=[" ".join(f"{v:g}" for v in r) for r in groups.values()])

# %% [markdown]
# **The swap rules**, for public prompt $x$: client $n$ got $c_n(x)$ of its $K$ right, the other clients
# $D_n(x)$ together. *Balanced* (`swap.balanced_swap`) replaces $M_n(x)$ of $n$'s wrong answers by others' right
# ones:
#
# $$M_n(x) = \min\bigl((\lfloor K/2\rfloor - c_n(x))_+,\ D_n(x)\bigr),\qquad \alpha_n(x) = \frac{M_n(x)}{K} \le
# \frac{1}{2}$$
#
# (which wrong answers go, and donors: uniform, our choice). *Random* (`swap.random_swap`): $K$ of the pooled $NK$
# answers, the **same** group for every client; $\alpha_n(x)$: the share not from $n$. *No-swap control*
# (`swap.no_swap`, ours): own groups.
#
# **Shortcut.** Only texts travel: a swapped-in answer is scored as if self-sampled ($\pi_{\text{old}}$ = the
# receiver's policy). The paper does not say how it scores them.
#
# **A confound.** With $\tau_{\text{swap}} = 2$ PubSwap takes $\tau/2$ private steps per round, FedAvg-GRPO $\tau$:
# fewer private steps alone may lower drift. The no-swap control, with PubSwap's steps, separates the two.
#
# | symbol | meaning |
# |---|---|
# | $N$; $n$, $n'$ | clients: number; one |
# | $p$; $\tau$; $j$; $\tau_{\text{swap}}$ | round; local steps per round; one local step; public-step period |
# | $x$, $b$; $y_k$, $K$ | prompt, prompts per step; answer, answers per prompt |
# | $r_k$; $\bar r$, $\sigma_r$; $\hat a_k$ | reward (0/1); group mean, standard deviation; advantage |
# | $\theta$; $\pi_\theta$; $\pi_{\text{old}}$ | trainable parameters; policy; policy at the step's start |
# | $A$, $B$; $s$ | LoRA factors; scale |
# | $\delta_{\text{pair}}$, $\delta_{\text{glob}}$ | drift between clients, from the broadcast (unit ‖ΔW‖) |
# | $\Delta_j$; $L$; $\zeta_{n,n'}$; $\omega_n$ | parameter distance; smoothness; private-gradient gap; swap distortion |
# | $c_n(x)$, $D_n(x)$ | right answers of client $n$, of the others |
# | $M_n(x)$, $\alpha_n(x)$ | answers swapped into $n$'s group, as a fraction of $K$ |
#
# ## 3. Pseudocode
# `fedrl_kit/pubswap/method.py::run_round`:
# ```
# for round p = 1, 2, …:
#   send (A_p, B_p) to every client
#   for local step j = 1..τ:
#     if j is a multiple of τ_swap:                                   # method.is_public_step
#       the same b public prompts to every client                     # method.sample_public_batch
#       each client: K answers per prompt, and which are right
#       server, per prompt x and client n:                            # method.swap_prompts
#         Balanced: M_n = min((⌊K/2⌋ − c_n)+, D_n)                    # swap.balanced_swap
#                   M_n of n's wrong answers ← others' right ones
#         Random:   one group of K drawn from all N·K answers, to all # swap.random_swap
#       each client: one GRPO step on its group
#     else:
#       each client: one GRPO step on b of its private prompts
#   each client sends (A_n, B_n); A = mean A_n, B = mean B_n          # aggregate.fedit
# ```

# %% [markdown]
# ## 4. Who holds what
# The **embedded world**: the package's built-in task generator, seven arithmetic topics standing in for MATH's
# subjects. The **policy**: a small character-level transformer pretrained to be right sometimes, so groups have
# mixed rewards on a CPU (size: the setup table). A Dirichlet draw over topics splits the private data, equal sizes
# per client, as in the paper.

# %%
# NBVAL_CHECK_OUTPUT
notebook.client_table(probe_run.partitions)

# %%
fig = viz.heterogeneity_bubbles(*topic_matrix(probe_run.partitions),
                                title=f"topics per client (Dirichlet concentration {dirichlet_alpha}; bubble area ∝ "
                                      "examples)")
viz.export(fig, "pubswap_heterogeneity", figures)
fig

# %% [markdown]
# ## 5. Run it: drift within a round
# One round per arm and τ from the same start, drift measured after each local step; one seed: the mechanism, not
# a verdict (§7 has longer runs, several seeds).
#
# ### Exercise 1 (predict first)
#
# At the larger τ, which arm ends with the lowest $\delta_{\text{pair}}$? Set
# `prediction_1` below the run cell, then check.

# %%
drift_runs = {}
for tau in TAUS:
    for m in METHODS:
        run = Run(cfg.replace(method=m, rounds=1, local_steps=tau, trace_drift=True, eval_samples=1), progress=False,
                  policy=policy)
        drift_runs[(m, tau)] = (run, run.run())
drift = pd.DataFrame([{"method": METHODS[m], "tau": tau, **{k: v for k, v in r.items() if k != "replacement_per_prompt"}}
                      for (m, tau), (_, recs) in drift_runs.items() for r in recs if r["kind"] == "drift"])
after = pd.DataFrame([{"method": METHODS[m], "tau": tau, "pass@1": g["pass@1"], "n": g["n"]}
                      for (m, tau), (_, recs) in drift_runs.items() for g in recs
                      if g["kind"] == "global" and g["round"] == 1])
T = max(TAUS)
end = drift.sort_values("step").groupby(["method", "tau"]).last().reset_index().merge(after, on=["method", "tau"])
end["se"] = np.sqrt(end["pass@1"] * (1 - end["pass@1"]) / end["n"])
last = end[end.tau == T].set_index("method")
print(f"Ran {len(drift_runs)} one-round runs: τ ∈ {TAUS} × {len(METHODS)} arms ({', '.join(METHODS.values())}).")

# %%
prediction_1 = None  # an arm's name, e.g. "PubSwap Balanced"

# %%
answer_1 = lowest = last.pairwise_effective.idxmin()
best = last["pass@1"].idxmax()
notebook.check_explained(prediction_1, answer_1, f"at τ = {T}, {lowest} ends with δ_pair {last.pairwise_effective.min():.3f} "
                         f"(FedAvg-GRPO {last.loc['FedAvg-GRPO', 'pairwise_effective']:.3f}); "
                         + ("it also has the best pass@1" if last.loc[lowest, "pass@1"] == last["pass@1"].max() else
                            f"the best pass@1 is {best}'s ({100 * last.loc[best, 'pass@1']:.1f} % against "
                            f"{100 * last.loc[lowest, 'pass@1']:.1f} %)")
                         + f"; each pass@1 has a standard error of about {last.se.mean() * 100:.1f} points, so lowest "
                         "drift is not shown to mean best accuracy. One short run of one seed: §7 checks the ranking.")

# %%
steps_taken = drift.pivot_table(index="method", columns=["tau", "step_kind"], values="step", aggfunc="count",
                                fill_value=0)
steps_taken = steps_taken.reindex(list(METHODS.values()))
steps_taken.columns = [f"τ = {t}: {kind} steps" for t, kind in steps_taken.columns]
print(f"τ_swap = {cfg.pubswap.period}; local steps each client took:")
steps_taken

# %%
fig = make_subplots(rows=1, cols=len(TAUS), subplot_titles=[f"τ = {t}" for t in TAUS], shared_yaxes=True)
colors = {"FedAvg-GRPO": "#636efa", "no-swap control": "#ab63fa", "PubSwap Random": "#00cc96",
          "PubSwap Balanced": "#ef553b"}
for j, tau in enumerate(TAUS, 1):
    for name, color in colors.items():
        d = drift[(drift.method == name) & (drift.tau == tau)]
        marker = dict(symbol=["circle" if k == "private" else "star" for k in d.step_kind], size=9)
        fig.add_trace(go.Scatter(x=d.step + 1, y=d.pairwise_effective, name=name, legendgroup=name,
                                 showlegend=j == 1, mode="lines+markers", line=dict(color=color), marker=marker),
                      row=1, col=j)
fig.update_layout(template="plotly_white", height=420, title="pairwise client drift after each local step (★ public)")
fig.update_yaxes(title_text="δ_pair = mean ‖ΔW_n − ΔW_n′‖_F", row=1, col=1)
fig.update_xaxes(title_text="local step j")
viz.export(fig, "pubswap_drift_within_round", figures)
fig

# %% [markdown]
# What each step adds to $\delta_{\text{pair}}$ at the larger τ (★: public, except for FedAvg-GRPO):

# %%
at_T = drift[drift.tau == T].sort_values("step")
rise = at_T.pivot(index="step", columns="method", values="pairwise_effective").diff().fillna(
    at_T.pivot(index="step", columns="method", values="pairwise_effective").iloc[0])[list(colors)]
kind_of = at_T[at_T.method == "PubSwap Balanced"].set_index("step").step_kind
rise.index = [f"{s + 1}{' ★' if kind_of[s] == 'public' else ''}" for s in rise.index]
rise.index.name = "local step j"
pub = [i for i in rise.index if i.endswith("★")]
priv = [i for i in rise.index[1:] if not i.endswith("★")]  # private steps after the first, where all arms agree
rise.round(3)

# %%
b_pub, f_pub = rise.loc[pub, "PubSwap Balanced"], rise.loc[pub, "FedAvg-GRPO"]
Markdown(f"""- Balanced's public steps (★) {'still raise δ_pair' if (b_pub > 0).all() else 'can lower δ_pair'}
  ({', '.join(f'{v:.3f}' for v in b_pub)}), less than FedAvg-GRPO's private steps at the same positions
  ({', '.join(f'{v:.3f}' for v in f_pub)}): public steps slow divergence{'; they do not reverse it' if (b_pub > 0).all() else ''}.
- But the control's *private* steps also add less than FedAvg-GRPO's ({', '.join(f'{v:.3f}' for v in rise.loc[priv, 'no-swap control'])}
  against {', '.join(f'{v:.3f}' for v in rise.loc[priv, 'FedAvg-GRPO'])}): a step's rise depends on where the clients
  already are, so single steps mislead; compare the round's end (next table).""")

# %%
end_table = end.pivot(index="method", columns="tau", values=["pairwise_effective", "to_global_effective"]).round(3)
end_table = end_table.reindex(list(METHODS.values()))
end_table.columns = [f"{'δ_pair' if v == 'pairwise_effective' else 'δ_glob'}, τ = {t}" for v, t in end_table.columns]
for t in TAUS:
    e = end[end.tau == t].set_index("method")
    end_table[f"pass@1 % ± SE, τ = {t}"] = [f"{100 * e.loc[m, 'pass@1']:.1f} ± {100 * e.loc[m, 'se']:.1f}"
                                          for m in end_table.index]
start_pass = next(g["pass@1"] for g in drift_runs[("fedavg_grpo", T)][1] if g["kind"] == "global" and g["round"] == 0)
end_table

# %% [markdown]
# Clients moving far in a *shared* direction have a large $\delta_{\text{glob}}$ and a small $\delta_{\text{pair}}$.
# SE $=\sqrt{p(1-p)/n}$ over $n$ test problems, one sample each.

# %%
small_tau = end[end.tau == min(TAUS)]
Markdown(f"""- At τ = {T}: δ_pair lowest for **{last.pairwise_effective.idxmin()}** ({last.pairwise_effective.min():.3f}),
  highest for {last.pairwise_effective.idxmax()} ({last.pairwise_effective.max():.3f}); δ_glob ranks them
  {'the same way' if list(last.pairwise_effective.sort_values().index) == list(last.to_global_effective.sort_values().index) else 'otherwise'}.
- pass@1 starts at {100 * start_pass:.1f} % and after the round the arms differ by at most
  {100 * (last['pass@1'].max() - last['pass@1'].min()):.1f} points, about
  {(last['pass@1'].max() - last['pass@1'].min()) / last.se.mean():.1f} SE: one round moves accuracy by noise.""" + (f"""
- At τ = {min(TAUS)} all four arms score {100 * small_tau['pass@1'].iloc[0]:.1f} %,
  {round((small_tau['pass@1'].iloc[0] - start_pass) * last.n.iloc[0]):+d} of {int(last.n.iloc[0])} problems against the
  start: {min(TAUS)} local steps barely move the policy.""" if small_tau["pass@1"].nunique() == 1 else ""))

# %% [markdown]
# **Where the drift reduction comes from**: the public steps' part (control − FedAvg-GRPO) plus the swap's part
# (Balanced − control). Sign convention here and in §7: negative means less drift.

# %%
d = last.pairwise_effective
split_here = pd.Series({"Balanced − FedAvg-GRPO (the whole change)": d["PubSwap Balanced"] - d["FedAvg-GRPO"],
                        "public steps: control − FedAvg-GRPO": d["no-swap control"] - d["FedAvg-GRPO"],
                        "swap: Balanced − control": d["PubSwap Balanced"] - d["no-swap control"]},
                       name=f"δ_pair, τ = {T}, one seed, one round")
public_share = round(100 * split_here.iloc[1] / split_here.iloc[0])
split_here.round(3).to_frame().assign(**{"share (%)": [100, public_share, 100 - public_share]})

# %% [markdown]
# ## 6. One swap, step by step
# Replay of the last public step of Balanced's larger-τ round (`generate_public`). Each client's right answers
# $c_n(x)$ per prompt:

# %%
run, _ = drift_runs[("pubswap_balanced", max(TAUS))]
round_ledger = pd.DataFrame(run.runtime.ledger.to_rows())  # the round as trained, before the replay below
last_public = max(s for s in range(run.config.local_steps) if is_public_step(s, run.config.pubswap.period))
gen = generate_public(run.server, round=1, step=last_public)
K, batch, cids = gen.num_generations, gen.batch, gen.client_ids
correct = pd.DataFrame({cid: [sum(c) for c in g["correct"]] for cid, g in zip(cids, gen.generated)},
                       index=[f"{x} (gold {a})" for x, a in zip(batch["prompt"], batch["answer"])])
correct.index.name = f"c_n(x): right answers out of K = {K}"
correct

# %% [markdown]
# Balanced's group for client 0 on a prompt where it has few right answers, slot by slot, with $M_0(x)$ by hand:

# %%
swaps = {rule: swap_public(gen, rule) for rule in ("balanced", "random")}  # b groups per rule
c0 = correct[cids[0]].to_numpy()
others = correct.drop(columns=cids[0]).sum(axis=1).to_numpy()
wanted = (c0 < K // 2) & (others > 0)  # Balanced has something to do here
example_prompt = int(np.argmax(wanted * (K - c0))) if wanted.any() else 0
view = group_table(gen, swaps["balanced"], 0, example_prompt)
M_by_hand = min(max(K // 2 - int(c0[example_prompt]), 0), int(others[example_prompt]))
print(f"c_0(x) = {c0[example_prompt]}, D_0(x) = {others[example_prompt]}: M_0(x) by hand = min(({K // 2} − "
      f"{c0[example_prompt]})+, {others[example_prompt]}) = {M_by_hand}; package α_0(x)·K = "
      f"{view.attrs['alpha'] * K:.0f} (α_0(x) = {view.attrs['alpha']:.3f})")
view

# %% [markdown]
# **Turn the knobs**: rule, group size $K$ (each client's first $K$ answers), client, prompt. Second table: each
# client's $\alpha_n$, averaged over prompts.

# %%
import ipywidgets as widgets


def show_swap(rule, K, client, prompt):
    res = swap_public(gen, rule, K)
    v = group_table(gen, res, client, prompt)
    print(f"{rule}, K = {K}: {cids[client]} on {batch['prompt'][prompt]!r}: α_n = {v.attrs['alpha']:.3f} swapped in")
    display(v)
    display(pd.DataFrame({"α_n (mean over prompts)": np.mean([r.replacement_fraction for r in res], axis=0).round(3),
                          "right answers in the group (mean)": np.mean([r.correct.sum(axis=1) for r in res], axis=0)
                          .round(3)}, index=cids).T)


controls = dict(rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")]),
                K=widgets.IntSlider(K, 2, K, continuous_update=False),
                client=widgets.Dropdown(options=[(c, i) for i, c in enumerate(cids)], value=0),
                prompt=widgets.Dropdown(options=[(x, i) for i, x in enumerate(batch["prompt"])], value=example_prompt))
notebook.static_default(show_swap, **controls)
print("\nThe same prompt under Random (static too): every client gets this one group.")
show_swap("random", K, 0, example_prompt)
notebook.knobs(show_swap, **controls)

# %%
group = swap_public(gen, "random", K)[example_prompt].correct[0]  # [K] the one Random group, as drawn above
pool = int(correct.iloc[example_prompt].sum())
Markdown(f"On {batch['prompt'][example_prompt]!r} the clients' {len(cids) * K} answers held {pool} right ones; "
         f"Random's group of {K} holds {int(group.sum())}. "
         + ("All its rewards are equal, so every advantage is 0 and this prompt gives **no client any gradient**; "
            "Balanced gives each client at least min(⌊K/2⌋, the right answers in the pool), so one right answer "
            "anywhere reaches every client's group."
            if group.all() or not group.any() else "Its rewards differ, so the group has a gradient."))

# %% [markdown]
# **What crossed the wire** in that round, beside FedAvg-GRPO's:

# %%
fed_ledger = pd.DataFrame(drift_runs[("fedavg_grpo", max(TAUS))][0].runtime.ledger.to_rows())
msgs = pd.concat({name: l[l["round"] == 1].groupby(["kind", "direction"]).nbytes.agg(["count", "sum"])
                  for name, l in (("FedAvg-GRPO", fed_ledger), ("PubSwap Balanced", round_ledger))}, axis=1).fillna(0)
msgs.columns = [f"{arm}: {'messages' if v == 'count' else 'bytes'}" for arm, v in msgs.columns]
n_pub = sum(is_public_step(s, run.config.pubswap.period) for s in range(run.config.local_steps))
trips = int(msgs.loc[[k for k in msgs.index if k[0] in ("public_generate", "public_step") and k[1] == "down"],
                     "PubSwap Balanced: messages"].sum()) // len(cids)
adapter = int(msgs.loc[("fit_end_result", "up"), "PubSwap Balanced: bytes"])
public = int(msgs.loc[[k for k in msgs.index if k[0].startswith("public")], "PubSwap Balanced: bytes"].sum())
sync = {arm: int(msgs[f"{arm}: messages"].drop(index=[k for k in msgs.index if k[0].startswith("private_step")]).sum())
        for arm in ("FedAvg-GRPO", "PubSwap Balanced")}
print(f"Messages in the round, without the simulation's private_step ones: FedAvg-GRPO {sync['FedAvg-GRPO']}, "
      f"PubSwap Balanced {sync['PubSwap Balanced']}. "
      f"Bytes: LoRA factors up {adapter:,}; public-step messages both ways {public:,}. But each of the {n_pub} public "
      f"steps is {trips // n_pub} round trips with the server (prompts down, answers up; groups down, a reply up): "
      f"{trips} per client per round besides the adapter exchange, each a barrier where every client waits for the "
      "slowest. More local steps cut adapter exchanges, not these. (`private_step` messages are this simulation "
      "driving the clients in lockstep; a deployment needs none.)")
msgs.astype(int)

# %% [markdown]
# ## 7. The paper's claims, and what the reproduction found
# **The paper** (Table 1: two Qwen models, MATH and DeepMath, 360 GRPO steps): Balanced beats FedAvg-GRPO "for
# most choices of τ", more at larger τ; Random beats Balanced at small τ only. Its gains (points):

# %%
gains

# %% [markdown]
# **The reproduction** (stored): this world, final checkpoint. **Arm levels**: mean ± standard deviation over the
# arm's seeds. **F, R rows**: differences paired seed by seed, mean ± 95 % t half-width over the seeds *both* arms
# ran. Every table is in the report notebook beside this one, [12_pubswap_report](12_pubswap_report.ipynb).

# %%
print(f"Setting: τ = {setting['tau']} × {setting['rounds']} rounds = {setting['steps']} local steps per client "
      f"({setting['steps'] // setting['period']} of them private for PubSwap), {setting['clients']} clients, "
      f"τ_swap = {setting['period']}, b = {setting['b']}, K = {setting['K']}.")
display(levels)
display(findings)
random_rows

# %% [markdown]
# **The paper's claims, decided**: *holds*; *does not hold* (interval on the other side of 0); *not reproduced*
# (interval contains 0); *not tested*:

# %%
pubswap_claims_verdicts()

# %% [markdown]
# **§5's split over seeds**, wherever the control ran; rows differ in τ *and* training length (rounds × τ):

# %%
split = pubswap_drift_split()
split

# %%
lvl = {a: float(levels.loc[a, "δ_pair at the end, mean ± SD"].split(" ± ")[0]) for a in levels.index}
f2, start = findings.loc["F2"], pubswap_start_pass1(seed)
share = split["swap's share (%)"]
Markdown(f"""**Reading §5 against these tables.**
- **Seeds.** The levels give Balanced − control = {lvl['PubSwap Balanced']:.2f} − {lvl['no-swap control']:.2f} =
  {lvl['PubSwap Balanced'] - lvl['no-swap control']:.2f}, F2 gives {f2['difference']:.2f}: Balanced's level
  averages {levels.loc['PubSwap Balanced', 'seeds']} seeds, F2 pairs the {int(f2['seeds'])} both ran.
- **Ranking.** Drift, lowest first: §5's one-seed round {' < '.join(last.pairwise_effective.sort_values().index)};
  the stored runs {' < '.join(sorted(lvl, key=lvl.get))} (Random {lvl['PubSwap Random']:.2f}, FedAvg-GRPO
  {lvl['FedAvg-GRPO']:.2f}). Why they can disagree: one seed, a small τ = {T}, {T} local steps against
  {setting['steps']}. Neither ranking of Random is firm: R1, Random − Balanced, is {said('R1', '‖ΔW‖', random_rows)}.
- **Split.** §5 gave the swap {100 - public_share} % of the drop. Stored, the swap's share is
  {', '.join(f"{share[t]} % at τ = {t} ({split.loc[t, 'local steps per client']} steps)" for t in split.index)};
  at τ = {setting['tau']} the public steps' own part, F3, is {said('F3', '‖ΔW‖')}. A first round of {T} steps is
  shorter than every stored run and has no interval: it does not decide the split.
- **Start.** §5 starts at {100 * start_pass:.1f} % with one sample per test problem (SE about
  {last.se.mean() * 100:.1f} points) on {int(last.n.iloc[0])} problems; the stored runs score {start['samples']}
  samples on each of {start['n_test']}: {start['at_seed']} % at this seed, {start['mean']} % over {start['seeds']}
  seeds. At this seed the two scores of the untrained policy differ by
  {abs(100 * start_pass - start['at_seed']) / (100 * last.se.mean()):.1f} SE of §5's one-sample score.""")

# %% [markdown]
# ## 8. Exercises
# Set each prediction first; its check prints the answer and why.
#
# ### Exercise 2
#
# In §6's example prompt, how many of client 1's answers does Balanced replace?

# %%
prediction_2 = None  # a whole number

# %%
answer_2 = int(swaps["balanced"][example_prompt].num_replaced[1])
c1, D1 = int(correct[cids[1]].iloc[example_prompt]), int(correct.drop(columns=cids[1]).iloc[example_prompt].sum())
notebook.check_explained(prediction_2, answer_2, f"{cids[1]} has c_1(x) = {c1} right of K = {K} and the others "
                         f"D_1(x) = {D1}; " + (f"c_1(x) ≥ ⌊K/2⌋, so Balanced keeps its own group." if c1 >= K // 2 else
                                               f"c_1(x) < ⌊K/2⌋, so M_1(x) = min(⌊K/2⌋ − c_1(x), D_1(x)) = "
                                               f"min({K // 2 - c1}, {D1}) = {answer_2}."))

# %% [markdown]
# ### Exercise 3
#
# Under *Random*, averaged over the $N$ clients, what fraction of the one group is a client's own
# answers, $1 - \alpha_n$? Two decimals.

# %%
prediction_3 = None  # a fraction, e.g. 0.5

# %%
own = np.array([1 - r.replacement_fraction for r in swaps["random"]])  # [b, N] each client's own share per prompt
answer_3 = round(float(own.mean()), 2)
notebook.check_explained(prediction_3, answer_3, f"the K = {K} answers of the one group each belong to one of the "
                         f"N = {len(cids)} clients, so the clients' own shares sum to exactly K/K = 1 and their mean "
                         f"is exactly 1/N = {1 / len(cids):.2f}, whatever the draw (here {own.mean():.3f}). One "
                         f"client's own share varies: from {own.min():.3f} to {own.max():.3f} on these prompts.",
                         tolerance=0.005)

# %% [markdown]
# ### Exercise 4
#
# With $K = 2$ (each client's first two answers, tabled below), what is the largest $M_n(x)$?

# %%
small_K = swap_public(gen, "balanced", 2)
two = pd.DataFrame([r.own_correct for r in small_K], index=correct.index, columns=cids)
two.index.name = "c_n(x) of the first 2 answers"
two

# %%
prediction_4 = None  # a whole number

# %%
answer_4 = int(max(r.num_replaced.max() for r in small_K))
zero = sum(int(((r.own_correct == 0) & (r.num_replaced > 0)).sum()) for r in small_K)
notebook.check_explained(prediction_4, answer_4, f"with K = 2, M_n(x) = min((⌊2/2⌋ − c_n(x))+, D_n(x)) ≤ 1; it "
                         f"reaches 1 for a client with c_n(x) = 0 when another client has a right answer among its "
                         f"two ({zero} client–prompt pairs in the table above).")

# %% [markdown]
# ### Exercise 5
#
# A client with at least $K/2$ right answers: what is its $\alpha_n(x)$ under Balanced?

# %%
prediction_5 = None  # a number

# %%
res = swaps["balanced"]
kept = [r.replacement_fraction[n] for r in res for n in range(len(cids)) if r.own_correct[n] >= K / 2]
answer_5 = float(max(kept)) if kept else 0.0
notebook.check_explained(prediction_5, answer_5, f"Balanced swaps only when c_n(x) < ⌊K/2⌋ = {K // 2}; a group with "
                         f"half or more right already has spread. Of the {len(kept)} client–prompt pairs here with "
                         f"c_n(x) ≥ K/2, the largest α_n(x) is {answer_5:g}.")

# %% [markdown]
# ## What to remember
# - A **public step**: GRPO on shared prompts, groups mixed across clients; two server round trips per step.
# - **Balanced** tops a group up to half right with others' right answers; **Random** gives all one mostly foreign
#   group, sometimes with no spread.
# - Split a drift reduction with a **no-swap control**: fewer private steps alone lower drift too.
# - Stored runs: Balanced lowers drift, mostly via the swap; its accuracy gain is not reproduced. One short seed
#   can rank arms differently.
