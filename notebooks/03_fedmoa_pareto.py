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
# # FedMOA: several rewards per client, weights that adapt, and their Pareto fronts
#
# *Wang, Jung, He, Sun, Shen, Lee, Li: FedMOA, Federated GRPO for Personalized Reasoning LLMs under Heterogeneous
# Rewards.*
#
# **The problem.** GRPO is rarely trained on one reward: a reasoning model is rewarded for the right answer
# (**accuracy**) and for well-formed output (a **format reward**: 1 when the answer is a `<think>…</think>` block
# then an `<answer>…</answer>` block, else 0; or a tag count, a length). In a federation every client has its *own*
# rewards and weights, so averaging their models mixes different mixtures. **FedMOA**: on each client the weights
# **adapt during training** by a *hypergradient* step (derived below); the server **clusters** clients by their
# accuracy reward, and inside a cluster a client with a *lower* accuracy weight (taken as nearer convergence) counts
# more. The paper's baseline "FedGRPO" (GRPO, then FedAvg) is **FedAvg-GRPO** here (FedGRPO is notebook 01). The
# reproduction's tables: [13_fedmoa_report.ipynb](13_fedmoa_report.ipynb).

# %% [markdown]
# ## Parameters
# Tagged `parameters` for papermill (`-p lam 0.5 -p normalise True`); a name it does not have stops the notebook in
# one line.

# %% tags=["parameters"]
preset_name = "quick"  # quick (2-core CPU) | smoke (tiny, seconds) | full (GPU, the paper's model) | full-smoke
seed = 0               # one seed: one world, plan and run
normalise = False      # True: Δ_k as the cosine of consecutive gradients, with λ from lam (ours; eq. 9 is unnormalised)
lam = 0.1              # λ when normalise is True
run_root = ""          # where the runs go ("": runs/fedmoa/<one folder per set of parameters>)
figures_dir = ""       # where figures go ("": the run folder's figures/)

# %%
import numpy as np
import pandas as pd
import plotly.express as px
from IPython.display import Markdown

from experiments import fedmoa_analysis as analysis
from experiments.findings import fedmoa_claim_interval, fedmoa_findings, fedmoa_setting, interval_words, labelled
from experiments.fedmoa_pareto import non_dominated, pareto_figure
from experiments.fedmoa_presets import setting_config
from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.fedmoa import evaluation, plan, probe
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, cluster_by_reward_names, hypergradient_step
from fedrl_kit.policy.pretrain_families import MISSING_MESSAGE
from fedrl_kit.runs import REPO_ROOT, Run
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

SCALE = {"quick": "quick", "smoke": "smoke", "full": "paper", "full-smoke": "paper-smoke"}  # fedmoa_presets' scales
SETTING, METHODS = "heter+heter", ["FedAvg-GRPO", "FedMOA"]  # every family and reward set in one federation
FEDMOA = dict(normalise=True, lam=lam, lam_rule="fixed") if normalise else {}


def make_config(p, variant="FedMOA"):
    """One run of the paper's Heter+Heter federation at this preset's scale."""
    scale = SCALE[preset_name]
    if not scale.startswith("paper") and not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
        raise notebook.NotebookStop(" ".join(MISSING_MESSAGE.format(path="data/base_moa").split()))
    return setting_config(scale, SETTING, variant, seed, fedmoa=FEDMOA)


cfg, run_root, figures = notebook.setup("fedmoa", globals(), make_config, runs="run_root",
                                        folder=dict(s=seed, normalise=normalise, lam=lam if normalise else None))

# %% [markdown]
# ## 1. One round, drawn

# %%
diagrams.round_diagram("fedmoa")

# %% [markdown]
# ## 2. Key equations
# **GRPO in brief.** A client samples $G$ answers to a prompt from $\pi_{\text{old}}$ (its policy at the step's
# start), scores each ($r_i$), and with the group's mean $\bar r$ and deviation $\sigma_r$ and the per-token ratio
# $\rho_{i,t} = \pi_\theta / \pi_{\text{old}}$ (1 until $\theta$ moves) ascends
#
# $$\hat a_i = \frac{r_i - \bar r}{\sigma_r},\qquad J(\theta) = \frac{1}{G}\sum_{i=1}^{G}\frac{1}{|y_i|}\sum_t
# \min\Bigl(\rho_{i,t}\,\hat a_i,\ \operatorname{clip}(\rho_{i,t}, 1-\epsilon_{\text{lo}}, 1+\epsilon_{\text{hi}})
# \,\hat a_i\Bigr)$$
#
# with no KL penalty here. FedMOA's client $m$ has $K_m$ rewards $r_0,\dots,r_{K_m-1}$, accuracy first, weights on
# the simplex, and trains on their weighted sum:
#
# $$w_k \ge 0,\quad \sum_k w_k = 1\quad\text{(eq. 1, `weights.project_to_simplex`)},\qquad
# r_w = \sum_k w_k\, r_k\quad\text{(eqs. 2–4: } \hat a_i \text{ of } r_w\text{, `RewardSet.scalarise`)}$$
#
# After each step it measures, for every objective alone, the gradient $g_k$ of its own GRPO loss $L_k$ at one
# hidden layer $h$ (eq. 8, `client.objective_gradients`), and moves the weights:
#
# $$\Delta_k^{(t)} = g_k^{(t)\top} g_k^{(t-1)}\ \ \text{(eq. 9)},\qquad
# w_k \leftarrow \operatorname{Proj}_{\text{simplex}}\bigl(w_k + \lambda\,\Delta_k^{(t)}\bigr)\ \ \text{(eq. 10,
# `weights.hypergradient_step`)}$$
#
# **Where eq. 9 comes from.** Treat the weights as hyperparameters of $L_w(h) \approx \sum_j w_j L_j(h)$ (only
# near-linear: GRPO normalises $r_w$ in the group). A gradient step of size $\eta$ moves $h$; by the chain rule:
#
# $$h^{(t)} = h^{(t-1)} - \eta\sum_j w_j\, g_j^{(t-1)}
# \;\Rightarrow\; \frac{\partial h^{(t)}}{\partial w_k} = -\eta\, g_k^{(t-1)}
# \;\Rightarrow\; \frac{\partial L_k(h^{(t)})}{\partial w_k} = g_k^{(t)\top}\frac{\partial h^{(t)}}{\partial w_k}
# = -\eta\, g_k^{(t)\top} g_k^{(t-1)} = -\eta\,\Delta_k^{(t)} .$$
#
# A descent step of size $\kappa$ on $w_k$ is $w_k + \kappa\eta\,\Delta_k$: eq. 10 with $\lambda = \kappa\eta$, a
# dot product of gradients. $\Delta_k > 0$ (consecutive gradients agree: more weight lowers $L_k$ further) raises
# $w_k$; $\Delta_k < 0$ lowers it. Differentiating the accuracy loss $L_0$ instead gives $-\eta\, g_0^{(t)\top}
# g_k^{(t-1)}$, $k$'s gradient dotted with the accuracy gradient; eq. 9 keeps each objective's own term.
#
# **Server.** Clients form clusters $S_c$ by the name of their accuracy reward (`weights.cluster_by_reward_names`);
# inside a cluster, with $w_{\text{acc}}^{(m)}$ client $m$'s accuracy weight (the paper's $w_0$):
#
# $$s_m = \frac{1}{w_{\text{acc}}^{(m)} + \varepsilon},\qquad \alpha_m = \frac{e^{s_m}}{\sum_{m'\in S_c}
# e^{s_{m'}}}\qquad\text{(eq. 11, `weights.accuracy_aware_weights`)}$$
#
# $$\theta^{(c)} = \sum_{m\in S_c}\alpha_m\,\theta^{(m)},\quad w_k^{(c)} = \sum_{m\in S_c}\alpha_m\,w_k^{(m)}
# \ \ \text{(eq. 12; } k \text{ shared by the cluster)},\qquad
# \theta = \sum_c \frac{N_c}{\sum_{c'} N_{c'}}\,\theta^{(c)}\ \ \text{(eq. 13, `aggregate.fedavg`)}$$
#
# Eq. 11 reads the **level** of $w_{\text{acc}}$ at the round's end, not its drop: a client that started low and
# never moved outweighs one that fell from high. Clients resume from $\theta$ and their cluster's $w^{(c)}$, so
# weights **jump** at round boundaries: eq. 12's average moves them there, not eq. 10.
#
# | symbol | meaning |
# |---|---|
# | $M$, $m$, $\tau$ | number of clients; one client; local steps per round |
# | $G$, $\hat a_i$, $\rho$, $\epsilon_{\text{lo}}$, $\epsilon_{\text{hi}}$ | answers per prompt; advantage; ratio; clip range |
# | $K_m$, $k$, $r_k$ | client $m$'s number of rewards; one objective; its reward (accuracy is $k = 0$) |
# | $w_k$, $w_{\text{acc}}$ | weight of objective $k$; the weight on accuracy (the paper's $w_0$) |
# | $h$, $g_k$, $L_k$ | the hidden layer; the gradient there of objective $k$'s own GRPO loss $L_k$ |
# | $\Delta_k$, $\lambda$ ; $\eta$, $\kappa$ | eq. 9's agreement; eq. 10's step (code: `lam`) ; the derivation's steps |
# | $S_c$, $N_c$ | the clients of cluster $c$; their training examples |
# | $s_m$, $\alpha_m$, $\varepsilon$ | eq. 11's score; client $m$'s weight in its cluster; $10^{-6}$ |
# | $\theta^{(m)}$, $\theta^{(c)}$, $\theta$ | a client's, a cluster's and the global LoRA adapter |
#
# ## 3. Pseudocode
# `fedrl_kit/fedmoa/algorithm.py::run_round`, each line naming its function:
# ```
# for round = 1..R:
#   send θ and w^(c) (round 1: each client's own initial w) to every client   # algorithm.round_weights
#   each client m, for step t = 1..τ:                                        # client.MOAClient.on_fit
#     b prompts × G answers; every reward r_k on every answer               # RewardSet.scores
#     g_k for every k (eq. 8); Δ_k and w ← Proj(w + λΔ) (eqs. 9–10)          # objective_gradients, hypergradient_step
#     one GRPO step on r_w = Σ w_k r_k (eqs. 2–4)                            # grpo.grpo_step
#   clients reply θ^(m), reward names, w^(m), N_m
#   clusters by accuracy reward; α (eq. 11); θ^(c), w^(c) (eq. 12)          # algorithm.aggregate_round
#   θ = Σ_c N_c/N θ^(c) (eq. 13)                                             # aggregate.fedavg
# ```

# %% [markdown]
# ## 4. Who holds what
# Three task families of the *embedded world* (the toolkit's small synthetic tasks and policy, for a CPU) stand for
# the paper's datasets; each client holds one family and one reward configuration (Table 3). `tag_count`: 0.25 per
# think/answer tag present once; `code_format`: 0.5 for the format, 0.5 for a program that parses; `length_short`
# favours short programs; `char_repetition`: minus the share of repeated character n-grams.

# %%
# NBVAL_CHECK_OUTPUT
world = make_family_world(seed, 10, 4)
pd.DataFrame([dict(family=f, stands_for=PAPER_NAMES[f], prompt=r["prompt"], answer=r["answer"])
              for f in FAMILIES for r in world.test_by_family[f].select(range(1))])

# %%
# NBVAL_CHECK_OUTPUT
pd.DataFrame({f"{PAPER_NAMES[f]}-like": {c: ", ".join(n) for c, n in cfgs.items()}
              for f, cfgs in plan.reward_configs(cfg.world).items()})

# %% [markdown]
# The base policy (`data/base_moa`, warm-started on all three families; on a GPU, Qwen2.5-1.5B-Instruct) per family
# (pass@1: the share of test problems whose sampled answer is right, averaged over samples):

# %%
base_eval = evaluation.evaluate_base(cfg)
pd.DataFrame({f: {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith(f + "/")}
              for f in FAMILIES}).round(3)

# %% [markdown]
# ## 5. Run it: FedAvg-GRPO and FedMOA on the same federation
# Heter+Heter: every family and reward configuration in one federation. FedAvg-GRPO is FedMOA's code with both parts
# off (weights fixed, FedAvg by examples). The clients, then their round-1 weights $w^{(0)}$ (not the paper's $w_0$):

# %%
runs = {}
for name in METHODS:
    run_dir = run_root / name
    notebook.start_run_dir(run_dir)  # empties only a run folder this toolkit wrote
    run = Run(make_config(cfg.preset, name), run_dir, progress=False)
    runs[name] = (run, run.run())
first = runs["FedMOA"][0]
pd.DataFrame(analysis.client_info(first))

# %%
w_init = pd.DataFrame({cid: dict(zip(c.names, c.initial_weights)) for cid, c in first.clients.items()}).T
print(f"Initial weights (init_weights = {cfg.fedmoa.init_weights!r}, `plan.initial_weights`): a family's j-th client "
      f"starts with w_acc = {plan.W0_SPREAD}[j mod {len(plan.W0_SPREAD)}], its other rewards share 1 − w_acc equally; "
      "blank: a reward the client does not have.")
w_init.round(3).astype(object).fillna("")

# %% [markdown]
# $g_k$ has three choices (`fedmoa.hyper_grad`): **lora**, the gradient of $L_k$ with respect to layer $h$'s LoRA
# factors (each coordinate the same parameter at every step, so eq. 9 compares like with like); **sequence**, with
# respect to one shift of $h$'s output per answer (row $i$ of one batch meets row $i$ of the next, another prompt);
# **shared**, one shift for every token (the tokens' gradients partly cancel). The **scale rule**
# (`lam_rule = "target"`) sets λ at a round's first step to target $/\ \text{mean}_k \lVert g_k\rVert^2$, so a step
# whose consecutive gradients agree exactly moves $w_k$ by about the **target**, whatever the gradients' size.

# %%
print(f"this run: g_k = {cfg.fedmoa.hyper_grad!r}, λ rule = {cfg.fedmoa.lam_rule!r}"
      + (f", target = {cfg.fedmoa.lam_target}" if cfg.fedmoa.lam_rule == "target" else f", λ = {cfg.fedmoa.lam}")
      + f"; LoRA rank r = {cfg.lora_rank}; {cfg.rounds} rounds of τ = {cfg.local_steps} local steps, "
        f"b = {cfg.prompts_per_step} prompts × "
        f"G = {cfg.num_generations} answers; {cfg.n_test // len(FAMILIES)} test problems per family × "
        f"{cfg.eval_samples} samples")
summary = pd.DataFrame({name: analysis.summary(recs) for name, (run, recs) in runs.items()}).T
summary[[c for c in ("global_accuracy", "aggregated_reward", "local_accuracy", "local_reward", "best_round")
         if c in summary]].round(3)

# %% [markdown]
# **The paper's Fig. 5.** Each client's weights after every local step (x = round + step/τ); a round's first step
# leaves $w$ as sent (eq. 9 needs a previous gradient). The table after it separates eq. 10's moves from the jumps.

# %%
wh = pd.DataFrame(analysis.weight_history(runs["FedMOA"][1]))
fig = px.line(wh, x="t", y="weight", color="reward", facet_col="client", facet_col_wrap=6, markers=True,
              title="FedMOA reward weights per client; x = round + local step / τ")
fig.update_layout(template="plotly_white", height=300 * ((wh.client.nunique() + 5) // 6))
viz.export(fig, "fedmoa_weights", figures)
fig

# %%
acc = wh[wh.reward.isin(["accuracy", "code_accuracy"])].pivot_table(index=["client", "round"], columns="step",
                                                                       values="weight")
moves = pd.DataFrame({"eq. 10 inside round p": acc[acc.columns.max()] - acc[acc.columns.min()],
                      "jump into round p + 1 (eq. 12)": acc[acc.columns.min()].groupby(level=0).shift(-1)
                      - acc[acc.columns.max()]})
print(f"w_acc moves: median |eq. 10 within a round| = {moves.iloc[:, 0].abs().median():.2g}, median |jump at a "
      f"boundary| = {moves.iloc[:, 1].abs().median():.2g}")
moves.unstack("round").round(4).dropna(axis=1, how="all")

# %% [markdown]
# **The paper's Fig. 3: Pareto fronts.** Each point is a model scored on the MATH-like test problems: lines, the
# global model round by round from the base (r0); grey, the clients' own models; stars, the **Pareto front** (the
# points no other beats on both rewards). A point off it is *dominated*: another is as good on both, better on one.

# %%
def pareto(x="accuracy", y="format", family="math"):
    acc, fmt = evaluation.eval_components(cfg.world)[family][:2]
    x, y = {"accuracy": acc, "format": fmt}.get(x, x), {"accuracy": acc, "format": fmt}.get(y, y)
    series = {}
    for name, (run, recs) in runs.items():
        ids = [c["client"] for c in analysis.client_info(run) if c["family"] == family]
        pts = analysis.pareto_points(recs, x, y, family, ids)
        pts["server"] = [[base_eval[f"{family}/{x}"], base_eval[f"{family}/{y}"]]] + pts["server"]
        pts["rounds"] = [0] + [r["round"] for r in analysis.server_records(recs)]
        series[name] = pts
    return pareto_figure(series, x, y, title=f"{y} vs {x}, {PAPER_NAMES[family]}-like"), series


fig, series = pareto()
viz.export(fig, "fedmoa_pareto_accuracy_format", figures)
fig

# %%
points = pd.DataFrame([dict(method=name, model=f"global r{r}", accuracy=a, format=f)
                       for name, s_ in series.items() for r, (a, f) in zip(s_["rounds"], s_["server"])]
                      + [dict(method=name, model="a client", accuracy=a, format=f)
                         for name, s_ in series.items() for a, f in s_["clients"]])
points["on the front"] = non_dominated(points[["accuracy", "format"]].to_numpy())
final = points[points.model == f"global r{cfg.rounds}"].set_index("method")
fa, fm = final.loc["FedAvg-GRPO"], final.loc["FedMOA"]
xy = lambda p: (round(float(p.accuracy), 3), round(float(p.format), 3))  # noqa: E731
beats = lambda p, q: min(np.subtract(xy(p), xy(q))) >= 0 and xy(p) != xy(q)  # noqa: E731
verdict = ("they score the same" if xy(fa) == xy(fm) else "FedAvg-GRPO's dominates FedMOA's" if beats(fa, fm)
           else "FedMOA's dominates FedAvg-GRPO's" if beats(fm, fa) else "neither dominates: each is better on one")
front = points[points["on the front"]]
step = 1 / ((cfg.n_test // len(FAMILIES)) * cfg.eval_samples)
display(front.round(3))
shape = (f"a single model ({front.iloc[0].method}, {front.iloc[0].model}) is at least as good as every other on both "
         "rewards, so no trade-off between accuracy and format shows here"
         if len(front) == 1 else f"the {len(front)} models on the front trade one reward for the other: moving "
         "along it buys format with accuracy")
Markdown(f"""**Reading the figure.** {len(front)} of the {len(points)} models {'is' if len(front) == 1 else 'are'} on
the front (the table); the other {len(points) - len(front)} are dominated. Of the two final global models (round {cfg.rounds}), {verdict}:
FedAvg-GRPO at {xy(fa)}, FedMOA at {xy(fm)} (accuracy, format). {shape[0].upper() + shape[1:]}. What to conclude:
one seed, scored on {cfg.n_test // len(FAMILIES)} problems × {cfg.eval_samples} samples, where one answer more or less
moves a score by {step:.3f}; gaps of that size are noise, and what the method does is decided over seeds in §7.""")

# %% [markdown]
# ## 6. One round of weights, step by step
# Eqs. 9–12 need only gradients and weights, so a round replays in milliseconds from $g_k$ measured once (each
# client's first three batches at the base, policy fixed; `fedmoa.probe`). **Turn λ** and the
# reward pair: arrows show each client's weights step by step, crosses what its cluster would send (eq. 12), the
# table each client's α (eq. 11). The first table shows why λ matters: eq. 9's $\Delta_k$ is the square of the
# gradients' size, so the paper's λ = 0.01 barely moves a small model's weights.

# %%
import ipywidgets as widgets

federation = Run(make_config(cfg.preset), policy=first.policy, progress=False).build()  # untrained clients
probes = probe.probe_clients(federation, "global", steps=3)
client_0 = federation.clients["client_0"]
print("how big eq. 9's Δ_k is, and one step of eq. 10 on client_0 at the base (three ways to take g_k):")
display(pd.DataFrame(probe.lambda_scales(client_0, "global", target=0.05), index=list(client_0.names)).T
        .map(lambda v: f"{v:.3g}"))
rule = float(np.median([probe.replay_weights(c["grads"], c["w0"], target=0.05)[1] for c in probes.values()]))
LAMS = {"each client's scale rule": None, "0.01 (the paper's)": 0.01}
LAMS |= {f"{m:g} × the median scale rule = {m * rule:.3g}": m * rule for m in (0.1, 1.0, 10.0, 100.0)}
PAIRS = {"accuracy–format": ("accuracy", "format"), "accuracy–tag count": ("accuracy", "tag_count")}


def replay(lam, pair="accuracy–format"):
    moa = cfg.fedmoa
    rows = probe.replay_round(probes, lam=LAMS[lam], target=0.05, cluster_key=moa.cluster_key, eps=moa.eps,
                              temperature=moa.softmax_temperature)
    fig = probe.replay_figure(rows, *PAIRS[pair], title=f"one round of reward weights, λ: {lam}",
                              aliases={"accuracy": "code_accuracy", "format": "code_format"})
    table = pd.DataFrame([{"client": r["client"], "cluster": r["cluster"], "rewards": ", ".join(r["reward_names"]),
                           "w_acc start": r["trajectory"][0][0], "w_acc end": r["trajectory"][-1][0],
                           "α (eq. 11)": r["alpha"], "w_acc sent (eq. 12)": r["broadcast"][0]} for r in rows])
    return fig, table.set_index("client")


def show_replay(lam, pair, static=False):
    fig, table = replay(lam, pair)
    display(fig) if static else fig.show(renderer="plotly_mimetype")  # static: with its PNG, for a stored notebook
    display(table.round(4))


controls = dict(lam=widgets.Dropdown(options=list(LAMS)), pair=widgets.Dropdown(options=list(PAIRS)))
notebook.static_default(lambda lam, pair: show_replay(lam, pair, static=True), **controls)
notebook.knobs(show_replay, **controls)

# %% [markdown]
# **By hand: the α table.** For the first cluster at λ = 10 × the scale rule (the weights move), eq. 11 from the
# end-of-round accuracy weights, beside the package's α.

# %%
strong = [k for k in LAMS if k.startswith("10 ×")][0]
fig, table = replay(strong)
viz.export(fig, "fedmoa_weights_replay", figures)
cluster = table[table.cluster == 0]
s = 1 / (cluster["w_acc end"].to_numpy() + cfg.fedmoa.eps)  # eq. 11's scores
by_hand = np.exp(s - s.max()) / np.exp(s - s.max()).sum()  # softmax over the cluster
display(table.round(4))
pd.DataFrame({"w_acc end": cluster["w_acc end"], "α by hand": by_hand, "α package": cluster["α (eq. 11)"]}).round(4)

# %% [markdown]
# A small difference in $w_{\text{acc}}$ becomes a large one in α: the scores $1/w$ are large, the softmax peaked.

# %% [markdown]
# ## 7. What the reproduction found
# The stored `cpu` grid (the paper's settings on the embedded world, λ tuned on validation, final round): paired
# differences over seeds with 95 % Student-t half-widths; accuracy in pass@1 points, reward in its units, weights as
# fractions. Settings, then findings F1–F5:

# %%
hh, homo = fedmoa_setting(), fedmoa_setting(setting="homo+heter")
print(f"Heter+Heter (F1, F2, F4, F5): {hh['clients']} clients, {hh['rounds']} rounds of τ = {hh['tau']}, "
      f"b = {hh['b']} × G = {hh['G']}, g_k = {hh['hyper_grad']!r}, λ fixed at the tuned {hh['lam']['FedMOA']:g} "
      f"(F5's variant: {hh['lam']['FedMOA, λ=100']:g}); Homo+Heter (F3): {homo['clients']} clients, "
      f"{homo['rounds']} rounds of τ = {homo['tau']}.")
findings = labelled(fedmoa_findings())
findings

# %%
def said(label, unit, digits=2, claim=None):
    r = findings.loc[label]
    d, h, n = (fedmoa_claim_interval(claim)[:3] if claim else (r["difference"], r["±95% t"], int(r["seeds"])))
    return interval_words(d, h, n, unit, digits)


Markdown(f"""- **F1, F2**: FedMOA's global accuracy against FedAvg-GRPO is {said('F1', 'points')}; its aggregated
  reward is {said('F2', '', 4, 'FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter')}
  ([report: the paper's claims](13_fedmoa_report.ipynb)).
- **F3**: where it helps is the clients' own models on the code family (Homo+Heter): {said('F3', 'points')}
  ([report: Homo+Heter](13_fedmoa_report.ipynb)).
- **F4**: the accuracy weight does not build up over rounds, it drains: {said('F4', '', 3)}.
- **F5**: at λ = {hh['lam']['FedMOA, λ=100']:g} the change of w_acc over the run is {said('F5', '', 3)}: these
  {int(findings.loc['F5', 'seeds'])} seeds do not show that a larger λ drains it further
  ([report: where a larger λ takes the weights](13_fedmoa_report.ipynb)).""")

# %% [markdown]
# ## 8. Exercises: predict, then run
# Each check cell prints the answer and why; set your prediction first to test yourself.
#
# **Exercise 1.** Which clients share `client_0`'s cluster? Predict a set of names, e.g. `{"client_0", "client_3"}`
# (clusters: §2).

# %%
prediction_1 = None  # a set of client names

# %%
info = analysis.client_info(first)
clusters = cluster_by_reward_names([c["rewards"].split(", ") for c in info], key=cfg.fedmoa.cluster_key)
answer_1 = {info[m]["client"] for c in clusters if 0 in c for m in c}
acc_name = info[0]["rewards"].split(", ")[0]
notebook.check_explained(prediction_1, answer_1, f"clusters follow the accuracy reward's name alone (cluster_key = "
                         f"{cfg.fedmoa.cluster_key!r}): client_0's is `{acc_name}`, and so is that of "
                         f"{', '.join(sorted(answer_1 - {'client_0'}))} (families "
                         f"{', '.join(sorted({c['family'] for c in info if c['client'] in answer_1}))}); the others' "
                         f"is a different name.")

# %% [markdown]
# **Exercise 2.** Two clients of one cluster end a round with $w_{\text{acc}} = 0.5$ and $0.3$. What α does eq. 11
# give the second one? Two decimals.

# %%
prediction_2 = None  # a number between 0 and 1

# %%
pair_w = [0.5, 0.3]
answer_2 = round(float(accuracy_aware_weights(pair_w)[1]), 2)
s1, s2 = (1 / (w + cfg.fedmoa.eps) for w in pair_w)
notebook.check_explained(prediction_2, answer_2, f"scores s = 1/(w + ε) = {s1:.2f} and {s2:.2f}; α₂ = e^{s2:.2f} / "
                         f"(e^{s1:.2f} + e^{s2:.2f}) = 1 / (1 + e^({s1:.2f} − {s2:.2f})) = {answer_2}: the lower "
                         "accuracy weight gets most of the say.", tolerance=0.01)

# %% [markdown]
# **Exercise 3.** In the replay of §6 with λ = 0, how far (L1) does any client's weight vector move in a round?

# %%
prediction_3 = None  # a number

# %%
still = probe.replay_round(probes, lam=0.0)
answer_3 = float(max(np.abs(r["trajectory"][-1] - r["trajectory"][0]).sum() for r in still))
notebook.check_explained(prediction_3, answer_3, f"eq. 10 adds λ·Δ_k = 0 at every step, so w stays at w^(0) (the "
                         f"largest L1 move over the {len(still)} clients is {answer_3:g}); λ = 0 is the paper's "
                         "'λ off' ablation. In a real round eq. 12 could still move w at the boundary.")

# %% [markdown]
# **Exercise 4.** If every objective has the same $\Delta_k$, how far do the weights move?

# %%
prediction_4 = None  # a number

# %%
w = np.array([0.5, 0.3, 0.2])
g = np.ones((3, 4))  # the same gradient for every objective: every Δ_k equal
moved, delta = hypergradient_step(w, g, g, lr=0.1)
answer_4 = round(float(np.abs(moved - w).sum()), 6)
notebook.check_explained(prediction_4, answer_4, f"Δ = {delta.tolist()}: w + λΔ adds {0.1 * delta[0]:g} to every "
                         "weight, and projecting back onto the simplex subtracts the same amount from each (the sum "
                         "must be 1 again), so nothing changes; only differences between the Δ_k move w.")
