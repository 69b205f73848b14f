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
# # FedMOA: the reproduction report
#
# The paper's Tables 1 and 2 and Figs. 3–5, measured on the embedded world's task families and read from the stored
# grid in `benchmarks/results` (papermill regenerates every table and figure here in seconds; nothing is trained).
# The method itself is taught in [03_fedmoa_pareto.ipynb](03_fedmoa_pareto.ipynb); the symbols are the same
# ($w_{\text{acc}}$, the weight on accuracy, is the paper's $w_0$, written `w_0` and `mean_w0` in the tables;
# α is eq. 11's aggregation weight; λ the step of eq. 10). FedAvg-GRPO is the paper's baseline, which it calls
# "FedGRPO".
#
# **How to read a verdict.** Each claim compares two variants on the same seed (same data, same clients); it *holds*
# when the 95 % Student-t interval of the mean difference over seeds (n − 1 degrees of freedom; `half_width`) lies
# above 0, *does not hold* when it lies below 0, and is *within noise* when it contains 0. Accuracy differences are
# in points, reward differences in the reward's own units (`unit`).

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
results_root = ""  # the stored results ("": benchmarks/results)
figures_dir = ""   # where figures go ("": runs/fedmoa_report/figures)

# %%
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from experiments import fedmoa_analysis as analysis
from experiments.fedmoa_pareto import pareto_figure
from fedrl_kit import notebook, viz
from fedrl_kit.fedmoa import plan

results_dir, figures = notebook.report_setup("fedmoa_report", globals())

# %% [markdown]
# ## 1. The `cpu` grid: the paper's federation, three to five seeds, λ tuned on validation
# The grid that can decide a claim is run from a shell (`benchmarks/fedmoa_compare.py`, commands in
# `docs/fedmoa.md`) and stored with every run's per-round records, so the figures below are drawn from it without
# retraining. Its setting is the paper's federation scaled down:
# 15 clients (five per family on reward configs A, B, C, A, B), 3 rounds of τ = 6 local steps, 128 samples per step,
# 200 test and 100 validation problems per family × 4 samples, the tiny `data/base_moa` policy, g_k the gradient of
# the middle layer's LoRA factors. λ is the paper's fixed step, its value chosen on validation accuracy from
# 0.01 (the paper's), 10 and 100 (at the default learning rate); FedAvg-GRPO's learning rate got a grid of the same
# size (1e-3, 2e-3, 4e-3), on the same tuning seed (10, not one of the seeds the verdicts pair), and every variant
# then takes the chosen learning rate, as the paper keeps its hyperparameters identical between its arms.
#
# **The tuning runs** (Heter+Heter, seed 10; the choice reads validation accuracy only — the test column is shown,
# not read):

# %%
import json

from IPython.display import display


def stored(name):
    path = results_dir / name
    if not path.exists():
        print(f"{name} not found: run benchmarks/fedmoa_compare.py (docs/fedmoa.md)")
        return None
    data = json.loads(path.read_text())
    print(f"{name} — {data['command']}")
    return data


def show_tuning(data, digits):
    """A tuning file's runs, one row each, and what validation chose."""
    display(pd.DataFrame([{"variant": r["variant"], "λ": r["lam"] if r["lambda_on"] else None,
                           "learning rate": r["learning_rate"], "best validation accuracy": r["best_val_accuracy"],
                           "best round": r["best_round"], "test accuracy (not read)": r["global_accuracy"],
                           "mean weight move per round": r["mean_w_move"]} for r in data["runs"]]).round(digits))
    print("chosen on validation:", {k: v["value"] for k, v in data["summary"]["selected"].items()})


tuning = stored("fedmoa_tuning_cpu.json")
if tuning:
    show_tuning(tuning, 4)

# %% [markdown]
# λ was tuned at the default learning rate 2e-3, before 4e-3 was chosen. **Re-tuned at the shared 4e-3** (same
# three λ, same seed), validation prefers the paper's λ = 0.01, at which the weights do not move, over λ = 10 — by 4
# of 1,200 validation samples, where the first tuning preferred λ = 10 by 2: within noise either way. FedMOA at
# λ = 0.01 is "λ off, α on" in effect, a row the grid below holds; the grid keeps λ = 10, at which λ acts at all
# (`docs/fedmoa.md`, step 1).

# %%
retuned = stored("fedmoa_tuning_cpu_lam_at_lr0.004.json")
if retuned:
    show_tuning(retuned, 5)

# %% [markdown]
# **λ = 1 and 3** at the same learning rate and seed, with λ = 0.01 re-run beside them (it reproduces the row above):
# λ = 1 comes first on validation, within noise (2 of 1,200 samples above λ = 3, 7 above λ = 0.01), and moves the
# weights 0.0009 per client and round, λ = 3 0.0031: both under the 0.01 below which a claim about λ reads "not
# tested". Where validation puts λ the weights barely move, so an intermediate λ does not make λ testable here.

# %%
between = stored("fedmoa_tuning_cpu_lam1_3.json")
if between:
    show_tuning(between, 5)

# %% [markdown]
# **A second tuning seed (11)**, the five λ at the same learning rate. By the mean validation accuracy over the two
# seeds λ = 3 comes first (0.4212), the grid's λ = 10 fourth (0.4117), within noise; only λ = 100 is worse on both
# seeds. At λ = 3 the weights move 0.0030 per client and round, under the rule's 0.01, so a grid at the chosen λ
# would read every λ claim "not tested"; the grid keeps λ = 10 (`docs/fedmoa.md`, "λ over two tuning seeds").

# %%
second = stored("fedmoa_tuning_cpu_seed11.json")
if second and retuned and between:
    show_tuning(second, 5)
    best = lambda data: {r["lam"]: r["best_val_accuracy"] for r in data["runs"] if r["lambda_on"]}  # noqa: E731
    seed10, seed11 = {**best(retuned), **best(between)}, best(second)
    moves = {r["lam"]: r["mean_w_move"] for r in second["runs"]}
    display(pd.DataFrame({"seed 10": seed10, "seed 11": seed11}).loc[sorted(seed11)].assign(
        **{"mean of the two": lambda t: t.mean(axis=1), "weight move per round (seed 11)": pd.Series(moves)})
        .rename_axis("λ").sort_values("mean of the two", ascending=False).round(4))

# %% [markdown]
# **Table 1 (Heter+Heter, and both Homo settings on each family) and Table 2**: mean ± sample std over the seeds
# (five for FedAvg-GRPO, FedMOA and uniform w_0 in Heter+Heter, whose verdicts sat at their intervals' edge with
# three; three for the rest, among them FedMOA at λ = 100 in Heter+Heter and "λ off, α on" in Homo+Heter on the
# code family, arms of ours). `math/…` is the MATH-like family's share of the same runs (the paper's Table 2 reports
# MATH); a Homo row is one family's own 10-client federation (`homo+heter (gsm)`: the GSM8K-like family), its global
# accuracy that family's pass@1; `mean_w_move` is the mean L1 distance the reward weights of a client moved in a
# round.

# %%
grid = stored("fedmoa_compare_cpu.json")
GRID_COLUMNS = ["global_accuracy", "aggregated_reward", "math/pass@1", "math/aggregated_reward", "local_accuracy",
                "local_reward", "mean_w_move"]
if grid:
    g = pd.DataFrame(grid["runs"])
    g["where"] = [analysis.setting_label(r) for r in grid["runs"]]
    stats = g.groupby(["where", "variant"], sort=False)[[c for c in GRID_COLUMNS if c in g]].agg(["mean", "std"])
    display(stats.round(4))

# %% [markdown]
# **The paper's claims, paired by seed** (accuracy in points, rewards in their own units; `paper`: the paper's
# difference). A claim about λ reads *not tested* when the λ-on runs took λ from a scale rule or their weights moved
# less than 0.01 (L1) per client and round on average over their seeds (the reason quotes that mean with its 95 %
# t interval; `experiments.fedmoa_analysis.not_tested`); otherwise the 95 % Student-t interval decides as above.
# Claims whose runs are not in the grid are left out.

# %%
CLAIM_COLUMNS = ["claim", "seeds", "unit", "differences", "mean_difference", "half_width", "paper", "verdict"]
if grid:
    for prefix, what in (("", "last round"), ("best/", "best round by validation")):
        print(f"claims, {what}:")
        claims = [c for c in analysis.in_points(analysis.paired_claims(grid["runs"], prefix)) if c["verdict"] != "not run"]
        with pd.option_context("display.max_colwidth", None):
            display(pd.DataFrame(claims)[CLAIM_COLUMNS].round(3))

# %% [markdown]
# **Table 1's parentheses: the clients' own models, per family** (Heter+Heter). Each family's clients' own models
# after the last round, scored on that family's test split: mean ± sample std over seeds, beside the paper's
# parenthesised numbers on the test set the family stands for (the embedded families' levels are not the paper's;
# only the differences compare). §4.2 quotes HumanEval's client-level gain, 45.73 → 49.02; the paired differences
# and their verdicts are the "client-level" rows of the claims above.

# %%
if grid:
    display(pd.DataFrame(analysis.client_level_table(grid["runs"], ("FedAvg-GRPO", "λ off, α on", "FedMOA"))).round(4))

# %% [markdown]
# **Do the weights move, and does α follow progress?** The first table: per round, the mean (over clients, then
# seeds) and the largest L1 move of a client's reward weights. The second: Pearson's r between a client's α × its
# cluster's size (1 = an equal share) and the training-batch accuracy it gained within the round (its last three
# local steps minus its first three), and between α and its accuracy weight w_0, over every client and round of a
# seed; then the mean over seeds with its 95 % t half-width. Eq. 11 computes α from w_0 alone, so r with w_0 is
# strongly negative by construction; the paper reads a low w_0 as progress on accuracy.

# %%
VARIANT_COLORS = {"FedAvg-GRPO": "#636EFA", "FedMOA": "#EF553B", "λ off, α on": "#00CC96", "λ on, α off": "#AB63FA",
                  "FedMOA, uniform w_0": "#FFA15A", "FedMOA, λ=100": "#19D3F3"}
if grid:
    display(pd.DataFrame(analysis.weight_move_table(grid["runs"])).round(4))
    display(pd.DataFrame(analysis.alpha_progress_table(grid["runs"])).round(3))

# %% [markdown]
# **Which way eq. 9 pushes each objective.** The stored grid was made before clients recorded eq. 9's
# $\Delta_k = g_k^{(t)} \cdot g_k^{(t-1)}$ of every local step; one round of the grid's FedMOA (seed 0, λ = 10, the
# same federation; a small test split and no validation, since only the weights are read) was run again to record
# it. Per objective (rank 0 is accuracy): how many step signals, the share with $\Delta_k > 0$, the mean
# $\Delta_k$, and `relative`, the mean $\Delta_k$ minus the mean over the step's objectives — eq. 10's projection
# moves $w_k$ by λ times that while the weights stay inside the simplex, so it is what raises or lowers a weight.

# %%
trace = stored("fedmoa_delta_trace_cpu.json")
if trace:
    trace_records = analysis.as_records(trace["runs"][0]["history"])
    display(pd.DataFrame(analysis.delta_signs(trace_records)).round(6))

# %% [markdown]
# **Where a larger λ takes the weights.** Validation chose λ = 10, at which the weights barely move; the grid also
# ran FedMOA at λ = 100 (three seeds, an arm of ours). Left: the mean accuracy weight w_0 of the Heter+Heter clients
# at each round's end (round 0: the plan's), one line per seed. Right: the largest α in each task cluster per round
# (1 = the cluster's aggregated model is one client's) — eq. 11 gives the most weight to the client with the lowest
# w_0, so when λ drains one client's accuracy weight, that client's model becomes its cluster's.

# %%
if grid:
    paths = pd.DataFrame(analysis.accuracy_weight_paths(grid["runs"]))
    conc = pd.DataFrame(analysis.alpha_concentration(grid["runs"]))
    lam_variants = ["FedMOA", "FedMOA, λ=100"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("mean accuracy weight w_0 at the round's end",
                                                        "largest α in a cluster (mean over clusters)"))
    for name in lam_variants:
        for seed, p in paths[paths.variant == name].groupby("seed"):
            fig.add_trace(go.Scatter(x=p["round"], y=p["mean_w0"], mode="lines+markers", name=name,
                                     legendgroup=name, showlegend=bool(seed == 0),
                                     line=dict(color=VARIANT_COLORS[name])), row=1, col=1)
        for seed, c in conc[conc.variant == name].groupby("seed"):
            top = c.groupby("round")["max_alpha"].mean()
            fig.add_trace(go.Scatter(x=top.index, y=top.values, mode="lines+markers", name=name, legendgroup=name,
                                     showlegend=False, line=dict(color=VARIANT_COLORS[name])), row=1, col=2)
    fig.update_xaxes(dtick=1, title_text="round")
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)
    fig.update_layout(template="plotly_white", height=360, title="cpu grid, Heter+Heter, one line per seed")
    viz.export(fig, "fedmoa_cpu_lambda100", figures)
    display(fig)
    conc["cluster"] = [f"largest α, cluster of {n}" for n in conc["size"]]
    display(conc[conc.variant.isin(lam_variants)].pivot_table(index=["variant", "seed", "round"], columns="cluster",
                                                       values="max_alpha").round(3))

# %% [markdown]
# **The paper's Fig. 4, 5 and 3 from the `cpu` runs.** Reward components of the global model on the MATH-like family
# per round (mean over seeds, bars: sample std), each variant its own colour; FedMOA's reward weights for the five
# MATH-like clients of seed 0; the Pareto plane accuracy–format on the MATH-like family (server points: mean over
# seeds per round; grey: the local models of seed 0 after the last round).

# %%
if grid:
    curves = pd.DataFrame(analysis.mean_server_curves(grid["runs"], "heter+heter",
                                                      ["math/accuracy", "math/format", "math/tag_count", "math/length"]))
    fig = px.line(curves, x="round", y="mean", error_y="std", color="variant", facet_col="key", markers=True,
                  color_discrete_map=VARIANT_COLORS,
                  title="global model on the MATH-like family per round (cpu grid, mean over seeds ± std)")
    fig.update_yaxes(matches=None, showticklabels=True)
    fig.update_xaxes(dtick=1)  # rounds are whole numbers
    fig.update_layout(template="plotly_white", height=380)
    viz.export(fig, "fedmoa_cpu_rewards", figures)
    display(fig)

# %%
if grid:
    cpu_runs = analysis.grid_records(grid["runs"])
    moa0 = cpu_runs[("heter+heter", "FedMOA", 0)]
    n_clients = len({r["client"] for r in moa0 if r.get("client") != "server"})
    math_clients = [f"client_{m}" for m, (fam, _) in enumerate(plan.client_plan("heter+heter", n_clients))
                    if fam == "math"]  # the plan: client m holds family m mod 3
    wh = pd.DataFrame([w for w in analysis.weight_history(moa0) if w["client"] in math_clients])
    fig = px.line(wh, x="t", y="weight", color="reward", facet_col="client", markers=True,
                  title="FedMOA reward weights of the MATH-like clients, cpu grid, seed 0; x = round + step / τ")
    fig.update_layout(template="plotly_white", height=340)
    viz.export(fig, "fedmoa_cpu_weights", figures)
    display(fig)

# %%
if grid:
    series = {}
    for name in [v for v in VARIANT_COLORS if ("heter+heter", v, 0) in cpu_runs]:
        rounds = pd.DataFrame(analysis.mean_server_curves(
            [r for r in grid["runs"] if r["variant"] == name], "heter+heter", ["math/accuracy", "math/format"]))
        path = rounds.pivot(index="round", columns="key", values="mean")
        local = analysis.pareto_points(cpu_runs[("heter+heter", name, 0)], "accuracy", "format", "math", math_clients)
        series[name] = {"server": path[["math/accuracy", "math/format"]].values.tolist(), "clients": local["clients"],
                        "rounds": list(path.index)}
    fig = pareto_figure(series, "accuracy", "format", title="format vs accuracy — cpu grid, Heter+Heter, MATH-like "
                                                            "(server: mean over seeds)")
    fig.update_layout(legend_title_text="round order: r1 → last round")  # the grid keeps no base point
    viz.export(fig, "fedmoa_cpu_pareto", figures)
    display(fig)

# %% [markdown]
# **The figures' sentences as verdicts, every setting and family.** From the same histories, per seed: FedMOA −
# FedAvg-GRPO in final accuracy (points; the auxiliary differences and the seeds on which FedMOA's final point is
# non-dominated in `detail`, Fig. 3), in the sum of the server accuracy's round-to-round falls (Fig. 4), FedMOA's
# length slope per round (Fig. 4) and its mean within-round rise of $w_{\text{acc}}$ (Fig. 5), each as mean ± 95 %
# t half-width over seeds (`experiments.fedmoa_figure_claims.figure_claims`, whose docstring gives each rule).

# %%
from experiments import fedmoa_figure_claims as figure_claims

if grid:
    with pd.option_context("display.max_colwidth", None):
        display(pd.DataFrame(list(figure_claims.CLAIMS.values()), columns=["figure", "the paper's claim (§4.2)"]))
        display(pd.DataFrame(figure_claims.verdict_table(figure_claims.figure_claims(
            grid["runs"], lr_schedule=figure_claims.lr_schedule_of(grid)))))

# %% [markdown]
# **Fig. 5 under the paper's cosine decay.** The grid above runs a constant learning rate, so its Fig. 5 rows read
# "not tested". `fedmoa_compare_cpu_cosine_homo+homo_gsm.json` runs the figure's top panel (Homo+Homo, GSM8K-like)
# with the paper's cosine decay for both arms, 3 seeds (its command in `docs/fedmoa.md`); the cells it ran:

# %%
cosine = stored("fedmoa_compare_cpu_cosine_homo+homo_gsm.json")
if cosine:
    with pd.option_context("display.max_colwidth", None):
        display(pd.DataFrame(figure_claims.verdict_table(figure_claims.figure_claims(
            cosine["runs"], settings=("homo+homo",), families=("gsm",),
            lr_schedule=figure_claims.lr_schedule_of(cosine)))))

# %% [markdown]
# **Fig. 5's rise, constant rate against cosine decay** (notebook 03's finding 3). FedMOA's $w_{\text{acc}}$ after a
# round's last local step minus after its first, in Fig. 5's own cell (Homo+Homo, GSM8K-like), in the main grid
# (constant learning rate) and in the cosine-decay grid, each read by the rule above. In Homo+Homo every client
# holds part of one dataset and the same reward set (10 clients, all on config A; the table gives each grid's seeds).
# Why the schedule matters: eq. 9's $\Delta_k$ keeps only the part of the gradient that repeats from one step to the
# next, about $\lVert s\rVert^2$ for the signal $s$ (notebook 03 §5); the batch noise is new each step either way.
# Late in a cosine decay the steps barely move θ, so the signal at step $t$ nearly equals that at $t-1$ and
# $\Delta_k$ keeps its full size; at a constant rate consecutive signals can part. Only under the decay does
# $w_{\text{acc}}$ rise within rounds, by less than a tenth of the boundary jumps notebook 03's live run prints.

# %%
from experiments import teaching_fedmoa as tf

if grid and cosine:
    display(tf.fig5_rise_table())  # FedMOA, GSM8K-like: w_acc after a round's last local step − after its first

# %% [markdown]
# Two more stored grids, in other settings (`docs/fedmoa.md` describes each): `fedmoa_compare_cpu_scale_rule.json`
# (the same federation with λ from a scale rule and the per-sequence g_k: its claims about λ read "not tested" by
# the rule above) and `fedmoa_compare.json` (3 clients, an earlier setting).

# %% [markdown]
# ## 2. The teaching notebook's findings, in detail
# Notebook 03 ends on four plain findings; here are the stored findings behind them, with their intervals. Paired
# differences over seeds ± the 95 % Student-t half-width $h$ (accuracy in points). `detectable`: the true effect
# these seeds catch 4 times in 5, about $h\,(1 + t_{0.8}/t_{0.975})$ with $n - 1$ degrees of freedom. F4 measures
# the last round's $w_{\text{acc}}$ minus the start, boundary jumps included; the paper's Fig. 5 shows only
# within-round moves, so the split below compares like with like.

# %%
from experiments.findings import fedmoa_weight_split_findings

if grid:
    display(tf.findings_detail())
    display(fedmoa_weight_split_findings().round(4))
    display(tf.split_words())
    display(tf.boundary_split().round(4))  # the boundary change per seed: eq. 12's α-average + its renormalisation

# %% [markdown]
# **$w_{\text{acc}}$ by reward config** (notebook 03's finding 2). The grid's cluster of MATH- and GSM8K-like
# clients holds all three configs, which share only accuracy, so a client gets back the cluster's α-average
# $\bar w_{\text{acc}}$ beside its own other weights (summing to $1-w_{\text{acc}}$): $u$ sums to
# $\bar w_{\text{acc}}+1-w_{\text{acc}}$, and the new $w_{\text{acc}}$ lands between $\bar w_{\text{acc}}$ and its own.
# Eq. 11 pulls $\bar w_{\text{acc}}$ toward config C's low start, so A, which started highest, falls most and C
# rises. Per config: its rewards, clients and starting $w_{\text{acc}}$ (the plan's), and $w_{\text{acc}}$'s change
# from round 1's start to the last round's end (per seed the mean over the config's clients, then mean ± 95 % t
# over seeds); above the table, eq. 10's mean L1 move of a client's weights a round, for scale.

# %%
if grid:
    grid_runs = tf.stored_runs()
    move, by_config = tf.grid_w_acc_change(grid_runs[grid_runs.variant == "FedMOA"])
    print(f"eq. 10's move of a client's weights per round (L1, all rewards): {move:.4f}")
    display(by_config)

# %% [markdown]
# **The paper's Fig. 3 over seeds.** Each seed's final global model on the MATH-like family as one point, each
# method's mean ± one standard deviation as a star; `on_front` counts a method's seeds on the front of all points.

# %%
if grid:
    fig, spread = tf.seeds_final_figure(grid)
    viz.export(fig, "fedmoa_pareto_seeds", figures)
    display(fig)
    display(spread)

# %% [markdown]
# **Which part does what.** Table 2's one-component arms against FedAvg-GRPO (`paper`: its Table 2, MATH).

# %%
if grid:
    abl, words = tf.ablation_detail()
    display(abl)
    display(words)

# %% [markdown]
# **Every λ.** λ appears in several versions; the teaching notebook's live run reuses the grid's. How $g_k$ is
# taken (`fedmoa.hyper_grad`: the LoRA factors, a per-answer or a shared shift of the layer's output) changes its
# size, hence λ's: `docs/fedmoa.md` measures the three.

# %%
tf.lambda_versions()

# %% [markdown]
# ## What the grid shows
# * The hypergradient signal of eq. 9 is scale-dependent: unnormalised, with λ = 0.01, it does nothing
#   on a small model. The toolkit's g_k is the gradient of one layer's LoRA factors (the same parameters at every
#   step, whatever the batch's order); the stored grid takes λ from a validation grid (the teaching notebook's quick
#   run reuses it), a scale rule (λ from the measured |g_k|²) is another way, the cosine (our option) a third.
# * The weights travel between rounds (the server broadcasts each cluster's w^(c), eq. 12), yet the accuracy weight
#   does not build up: it drains in the grid (the figure of §1, "Where a larger λ takes the weights").
# * In the stored `cpu` grid (Heter+Heter, λ and the shared learning rate tuned on validation; the claims printed
#   above), the weights move by about 0.0095 (L1) per client and round at the tuned λ, mean over seeds, below the
#   0.01 at which the rule counts λ as acting, so every claim comparing λ on with λ off reads "not tested"; its
#   interval is still printed. By those intervals FedMOA is within noise of FedAvg-GRPO on the MATH-like and code
#   accuracy over five seeds, and below it on the GSM8K-like accuracy and on the aggregated reward over all families;
#   of Table 2 (three seeds), neither α nor λ helps measurably. The paper's gains on MATH in Table 1 (+2.2 points,
#   +0.052 reward), its HumanEval client-level gain (45.73 → 49.02 points) and λ's reward gain in Table 2 (+0.051) lie
#   outside their intervals; the Table 2 accuracy gains lie inside theirs, which three seeds cannot rule out. α
#   follows the plan's initial weights about as much with λ on as with λ off (the correlations above). Of the two
#   arms of ours, λ alone ("λ on, α off") gains nothing over FedAvg-GRPO, and FedMOA from uniform initial weights
#   (1/K_m per configuration, against a baseline on the plan's weights: not a matched comparison) falls below it
#   ("does not hold"), its α then uncorrelated with a client's progress.
# * A larger λ does not rescue it. At λ = 100 (three seeds, ours) the weights move by about 0.1 a round, the
#   accuracy weights drain towards the format and tag rewards, and eq. 11 hands a task cluster's aggregation to the
#   client that dropped accuracy furthest (the table above: on one seed the 10-client cluster's largest α is
#   0.94–1.0 in every round, and in the last round the code cluster's is 0.97–1.0 on every seed); on that seed the
#   global accuracy fell in the last round. Against FedAvg-GRPO the aggregated reward is lower on every seed, within
#   noise over three.
# * In Homo+Heter, run on each family as the paper runs it, FedMOA's global model is within noise of FedAvg-GRPO's on
#   every family; on the MATH-like and GSM8K-like families the intervals lie below the paper's gains (those claims
#   read "not tested": the weights moved below 0.01 a round there), on the code family they contain them. The one contrast that holds is of ours: on the code family the clients' own models
#   are ahead under FedMOA on every seed (local accuracy and local reward), with the weights moving about as little
#   as in Heter+Heter. "λ off, α on" on that family (three seeds) says it is mostly α: α alone raises the clients'
#   local reward on every seed ("holds"), and adding λ to it is within noise.
# * In Homo+Homo (one reward function, uniform initial weights), FedMOA is below FedAvg-GRPO on the MATH-like family
#   on every seed, within noise but with the paper's gain outside the interval, indistinguishable on the GSM8K-like
#   one, and "not tested" on the code family, where the weights moved less than 0.01 a round.
#
# The same runs from a shell: `fedrl run --method fedmoa --set fedmoa.setting=heter+heter` (the quick preset gives
# `fedmoa` its world, `families`, its base, `data/base_moa`, and 6 clients; a homo setting also sets
# `world=families:math`); the paper's grid: `benchmarks/fedmoa_compare.py --scale cpu` (or `--scale paper`).
# Details and measured numbers: `docs/fedmoa.md`.
