"""The quickstart notebook's (00) tables, figures and sentences, built from its run so that each notebook cell is a
line or two: settings and results with integers printed as integers, the pass@1 curve with its noise drawn, what
the curve and the round measurements say in words, the client view with its widget, the takeaway box, and the
exercises' answers with their reasons.

One noise rule throughout: a difference counts only beyond two standard errors (about 95 %). The standard error is
taken over test problems, not sampled answers (a problem's samples are not independent): a pass@1 is the mean of
each problem's pass rate, its SE their standard deviation over sqrt(problems); a difference between two models on
the same problems is paired, its SE that of the per-problem differences. One seed: seed-to-seed variance is not in
it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from IPython.display import Markdown

from experiments.stats import t_interval

NAMES = {"fedavg_grpo": "FedAvg-GRPO", "fedprox_grpo": "FedProx-GRPO", "central_grpo": "Central-GRPO",
         "zero_shot": "Zero-shot"}
"""the methods the quickstart runs, as the papers name them"""

SETTINGS = ("num_clients", "rounds", "local_steps", "dirichlet_alpha", "prompts_per_step", "num_generations",
            "aggregator", "lora_rank", "eval_samples")


def _plain(value):
    """A number as a reader expects it: an integral value without decimals."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    return value


def _table(data: dict, **kwargs) -> pd.DataFrame:
    """A DataFrame of mixed values kept as objects, so that a column of integers and fractions prints each as is."""
    return pd.DataFrame({k: pd.Series({i: _plain(v) for i, v in col.items()}, dtype=object) for k, col in data.items()},
                        **kwargs)


def setup(namespace: dict):
    """The quickstart's setup cell in one call: checks the parameters cell (a bad value stops here, in one line) and
    returns the config, the run folder and the figures folder (:func:`fedrl_kit.notebook.setup`)."""
    from fedrl_kit import notebook
    from fedrl_kit.config import REAL_LM

    g = namespace
    return notebook.setup(
        "quickstart", g, smoke="quickstart", setting=REAL_LM if g["base"] == "smollm2" else None,
        choices={"method": NAMES, "base": ("",) if "full" in g["preset_name"] else ("", "smollm2")},
        words=(g["base"], g["method"]), folder=dict(k=g["num_clients"], r=g["rounds"], t=g["local_steps"],
                                                   a=g["dirichlet_alpha"], s=g["seed"], reference=g["reference_path"]))


def central_run(cfg):
    """Central-GRPO beside a federated method (same seed, sizes and budget), keeping its messages so that §4 can
    re-score each round; None for Central-GRPO and zero-shot themselves."""
    import dataclasses

    from fedrl_kit.runs import Run

    if cfg.method not in ("fedavg_grpo", "fedprox_grpo"):
        return None
    central = Run(dataclasses.replace(cfg, method="central_grpo"), None, progress=False).build()
    central.runtime.keep_messages = True
    return central


def settings(cfg) -> pd.DataFrame:
    """The run's sizes (the knobs §1–2 explain), one row."""
    values = cfg.to_dict()
    return _table({**{k: {"this run": values[k]} for k in SETTINGS}, "fedprox μ": {"this run": values["fedprox"]["mu"]}})


def base_by_topic(run, base_eval: dict) -> pd.DataFrame:
    """The base's pass@1 per topic on the test problems (round 0) and how many test problems each topic has."""
    counts = pd.Series(run.world.test["topic"]).value_counts().sort_index()
    topics = {k.split("/", 1)[1]: round(v, 3) for k, v in base_eval.items() if k.startswith("topic/")}
    return _table({t: {"base pass@1": topics.get(t, float("nan")), "test problems": int(counts[t])} for t in counts.index})


def bubbles(run, alpha):
    """Who holds what, as bubbles whose area grows with the problems held, each labelled with its count (the size
    key: a legend cannot draw bubble sizes)."""
    from fedrl_kit import viz
    from fedrl_kit.world.partition import topic_matrix

    names, counts = topic_matrix(run.partitions)
    fig = viz.heterogeneity_bubbles(names, counts, title=f"training problems per client and topic (Dirichlet α = "
                                                         f"{alpha}; bubble area ∝ problems, number printed)")
    held = [int(counts[k, t]) for k in range(counts.shape[0]) for t in range(counts.shape[1]) if counts[k, t] > 0]
    fig.update_traces(mode="markers+text", text=[str(n) for n in held], textposition="middle center",
                      textfont=dict(size=11, color="#222"), hovertemplate="%{x}, %{y}: %{text} problems<extra></extra>")
    return fig


def sampled_vs_greedy(run, base_eval: dict) -> Markdown:
    """The base's greedy test accuracy next to its sampled pass@1: the gap that sharpening closes."""
    from fedrl_kit.evaluate import answers, eval_seed

    cfg = run.config
    _, right = answers(run.policy, {"base": run.initial_state}, run.world.test, seed=eval_seed(cfg.seed),
                       batch_size=cfg.eval_batch_size, accuracy_fn=run.accuracy_fn)["base"]
    return Markdown(f"The base's greedy test accuracy is {np.mean(right):.0%}, its sampled pass@1 only "
                    f"{base_eval['pass@1']:.0%}. Early RL mostly closes this gap (sharpening).")


# -- noise over problems ---------------------------------------------------------------------------------------------
def _round_states(run) -> dict[int, dict]:
    """Each evaluated round's global adapter: the one the server sent at the start of the next round (kept
    messages), the last one the server's own."""
    sent = {m.round - 1: m.payload["adapter"] for m in run.runtime.messages if m.kind == "fit"}
    return {**sent, max(sent, default=0) + (1 if sent else 0): run.server.global_state}


def per_problem(runs: dict) -> dict[str, pd.DataFrame]:
    """Each run's global model of every round re-scored on the test split problem by problem ([problems × rounds]:
    a problem's pass rate over its ``eval_samples`` samples). The records keep only each round's mean; the same
    sampling seed gives the same answers, which the check against the records confirms."""
    from fedrl_kit.evaluate import eval_seed, evaluate

    out = {}
    for name, (run, records) in runs.items():
        cfg, test = run.config, run.world.test
        logged = {r["round"]: r["pass@1"] for r in records if r["kind"] == "global"}
        columns = {}
        for r, state in _round_states(run).items():
            seen: list[float] = []

            def scorer(*args, **kwargs):
                values = run.accuracy_fn(*args, **kwargs)
                seen.extend(v or 0.0 for v in values)
                return values

            run.policy.set_state("per_problem", state)
            try:
                mean = evaluate(run.policy, "per_problem", test, cfg.eval_samples, seed=eval_seed(cfg.seed),
                                batch_size=cfg.eval_batch_size, accuracy_fn=scorer)["pass@1"]
            finally:
                run.policy.drop("per_problem")
            if r in logged and abs(mean - logged[r]) > 1e-9:
                raise RuntimeError(f"{name} round {r}: re-scored pass@1 {mean} is not the record's {logged[r]}")
            columns[r] = np.asarray(seen).reshape(len(test), cfg.eval_samples).mean(axis=1)
        out[name] = pd.DataFrame(columns).rename_axis(columns="round")
    return out


def _se(x) -> float:
    """Standard error of a mean over problems (x: one value per problem, or per-problem paired differences)."""
    x = np.asarray(x, dtype=np.float64)
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def results(runs: dict[str, list[dict]], scores: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each method's base and final pass@1 and format rate in points (percent), its change with the paired ± 2 SE,
    the ± 2 SE of the final pass@1 (both over problems), and Central-GRPO's paired final lead over the other."""
    from fedrl_kit.notebook import headline

    rows = {}
    for name, recs in runs.items():
        h, s = headline(recs), scores[name]
        rows[name] = {"rounds": h["rounds"],
                      **{f"{k} (points)": round(100 * h[k], 1) for k in ("base pass@1", "final pass@1")},
                      "change (points)": h["change (points)"],
                      "± 2 SE of change (paired: same problems)": round(200 * _se(s.iloc[:, -1] - s.iloc[:, 0]), 1),
                      "± 2 SE of final pass@1": round(200 * _se(s.iloc[:, -1]), 1),
                      **{f"{k} (points)": round(100 * h[k], 1) for k in ("base format", "final format")}}
    others = [n for n in runs if n != "Central-GRPO"]
    if "Central-GRPO" in scores and others:
        lead = _leads(scores, others[0]).iloc[-1]
        for name in runs:
            rows[name][f"Central − {others[0]}, final (paired)"] = (
                f"{lead['lead']:.1f} ± {lead['2 SE']:.1f}" if name == "Central-GRPO" else "")
    return _table(rows)


def pass_curve(scores: dict[str, pd.DataFrame]):
    """Global pass@1 per round for each method, each point with its ± 2 SE bar (over problems), the y axis from 0."""
    import plotly.graph_objects as go

    from fedrl_kit import viz

    fig = go.Figure([go.Scatter(x=list(s.columns), y=s.mean().tolist(), name=name, mode="lines+markers",
                                error_y=dict(type="data", array=[2 * _se(s[c]) for c in s.columns], thickness=1))
                     for name, s in scores.items()])
    top = max(float(s.mean().max()) for s in scores.values())
    fig.update_layout(template=viz.TEMPLATE, title="global pass@1 on the held-out test split (bars: each point's ± 2 SE "
                      "over problems)", xaxis_title="round", yaxis_title="pass@1 (fraction right)")
    fig.update_yaxes(range=[0, min(1.0, top + 0.15)])
    return fig


def _rounds(index) -> str:
    """Round numbers as a reader writes them: runs of consecutive rounds as ranges ("1–5, 8")."""
    rs, parts = sorted(int(r) for r in index), []
    for r in rs:
        if parts and r == parts[-1][1] + 1:
            parts[-1][1] = r
        else:
            parts.append([r, r])
    return ", ".join(f"{a}–{b}" if b > a else f"{a}" for a, b in parts)


def _leads(scores: dict[str, pd.DataFrame], name: str) -> pd.DataFrame:
    """Central-GRPO minus ``name`` per round (points): the mean of the paired per-problem differences and 2 SE."""
    d = scores["Central-GRPO"] - scores[name]
    return pd.DataFrame({"lead": 100 * d.mean(), "2 SE": [200 * _se(d[c]) for c in d.columns]})


def reading_the_curve(scores: dict[str, pd.DataFrame], name: str) -> Markdown:
    """What the curve shows, in two sentences: the rounds where Central-GRPO leads beyond 2 SE of the paired
    difference, and why neighbouring rounds are not separate evidence."""
    if "Central-GRPO" not in scores or name == "Central-GRPO":
        return Markdown("- One method ran: nothing to compare it with (Central-GRPO runs beside FedAvg-GRPO and "
                        "FedProx-GRPO).")
    leads = _leads(scores, name).iloc[1:]
    ahead = leads[leads["lead"] > leads["2 SE"]]
    if len(ahead):
        first = (f"- Central-GRPO led by more than two SE of the paired difference in round{'s' if len(ahead) > 1 else ''}"
                 f" {_rounds(ahead.index)}. Its largest lead was {ahead['lead'].max():.1f} points "
                 f"(± {ahead['2 SE'].max():.1f}). In the other rounds the curves are within noise.\n"
                 "- The bars show each point's own noise. A paired difference is less noisy, so it can clear 2 SE even "
                 "where the bars overlap.")
    else:
        first = (f"- Central-GRPO never led by more than two SE of the paired difference. Its largest lead was "
                 f"{leads['lead'].max():.1f} points (± {leads.loc[leads['lead'].idxmax(), '2 SE']:.1f}).")
    return Markdown(first + "\n- Neighbouring rounds are not independent checks. Each model is the last one plus "
                    "one round, so a lead over several rounds is one finding, not several.")


def round_table(gaps) -> pd.DataFrame:
    """Per round (columns): the factor gap over the round's mean update, and the clients' agreement."""
    rows = {"‖gap‖ / ‖mean update‖": gaps["gap / round's update"], "agreement a": gaps["agreement of updates"]}
    return pd.DataFrame(rows).round(3).T.rename_axis(columns="round")


def round_words(gaps, cfg) -> Markdown:
    """The agreement and the factor gap in short sentences: how much shorter the server's step is, and how small the
    error of averaging factors is next to that."""
    a, u = gaps["agreement of updates"].dropna(), gaps["gap / round's update"].dropna()
    k, steps = cfg.num_clients, cfg.local_steps
    return Markdown(f"- The agreement was {a.min():.2f}–{a.max():.2f}. For K = {k} clients moving at right angles it "
                    f"would be 1/√K = {1 / np.sqrt(k):.2f} (§2). So the clients' updates were nearly orthogonal.\n"
                    f"- The server's step was therefore about {a.mean():.0%} as long as a client's own. That acts like a "
                    "smaller learning rate.\n"
                    f"- Central-GRPO takes {steps} step{'s' if steps > 1 else ''} per round on "
                    f"{cfg.num_clients * cfg.prompts_per_step} prompts each. It has nothing to average away. This is "
                    "one simple reason federation starts slower.\n"
                    f"- Averaging factors missed the mean update by {u.min():.0%}–{u.max():.0%} of its length. That error "
                    "is real but second order.")


TRAIN = {"accuracy": "train reward"}
"""the client records' ``accuracy`` (mean reward on the client's own rollouts), as the notebook names it"""


def client_grid(records: list[dict]):
    """Every client's local training by round, one small panel each: train reward (the records' ``accuracy``: mean
    reward on its own rollouts) and frac_zero_std, with the global test pass@1 dashed for reference."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from fedrl_kit import viz

    clients = sorted({r["client"] for r in records if r["kind"] == "client"})
    fig = make_subplots(rows=1, cols=len(clients), subplot_titles=clients, shared_yaxes=True)
    g = [r for r in records if r["kind"] == "global"]
    for j, c in enumerate(clients, 1):
        mine = [r for r in records if r["kind"] == "client" and r["client"] == c]
        for metric, colour in (("accuracy", "#636efa"), ("frac_zero_std", "#ef553b")):
            fig.add_trace(go.Scatter(x=[r["round"] for r in mine], y=[r[metric] for r in mine], name=TRAIN.get(metric, metric),
                                     mode="lines+markers", legendgroup=metric, showlegend=j == 1,
                                     line=dict(color=colour), marker=dict(size=4)), row=1, col=j)
        fig.add_trace(go.Scatter(x=[r["round"] for r in g], y=[r["pass@1"] for r in g], name="global pass@1 (test)",
                                 legendgroup="global", showlegend=j == 1, line=dict(dash="dash", color="black")),
                      row=1, col=j)
        fig.update_xaxes(title_text="round", row=1, col=j)
    fig.update_yaxes(title_text="fraction", range=[-0.03, 1.03], row=1, col=1)
    fig.update_layout(template=viz.TEMPLATE, height=330, title="each client's own rollouts per round",
                      legend=dict(orientation="h", y=-0.3))
    return fig


def client_spike(records: list[dict], cfg) -> Markdown:
    """The largest one-round jump of a client's train reward above its own median, and the likely reason: a round's
    train reward averages only a few prompts."""
    df = pd.DataFrame([r for r in records if r["kind"] == "client"])
    if df.empty:
        return Markdown("")
    jump = df.accuracy - df.groupby("client").accuracy.transform("median")
    top = df.loc[jump.idxmax()]
    prompts = cfg.local_steps * cfg.prompts_per_step
    return Markdown(f"{top.client}'s train reward jumped at round {top['round']} ({top.accuracy:.3f}, against its "
                    f"median {top.accuracy - jump.max():.3f}). This is likely batch noise. It averages only "
                    f"{prompts} prompts ({cfg.local_steps} steps × {cfg.prompts_per_step}). The global pass@1 does "
                    "not jump with it.")


def client_view(records: list[dict]) -> object:
    """A widget that draws one client's local training (train reward and frac_zero_std) in a running kernel."""
    import ipywidgets as widgets

    from fedrl_kit import notebook, viz

    clients = sorted({r["client"] for r in records if r["kind"] == "client"})
    if not clients:
        return None

    def show(client):
        mine = [r for r in records if r["kind"] == "global" or r.get("client") == client]
        fig = viz.client_curves(mine, metrics=("accuracy", "frac_zero_std"))
        fig.update_layout(title=f"{client}: its own rollouts per round (global test pass@1 dashed)", height=360)
        fig.update_xaxes(title_text="round")
        fig.update_yaxes(title_text="fraction", range=[-0.03, 1.03])
        fig.for_each_trace(lambda t: t.update(name=TRAIN.get(t.name, t.name)))
        fig.show(renderer="plotly_mimetype")

    return notebook.knobs(show, client=widgets.Dropdown(options=clients))


def wire(run) -> pd.DataFrame:
    """The runtime's ledger by message kind and direction: how many messages, and their bytes in all."""
    rows: dict[str, dict] = {}
    for r in run.runtime.ledger.records:
        row = rows.setdefault(f"{r['kind']} ({r['direction']})", {"messages": 0, "bytes": 0})
        row["messages"] += 1
        row["bytes"] += int(r["nbytes"])
    return pd.DataFrame(rows).T.astype(int)


def takeaways(runs: dict[str, list[dict]], name: str, scores: dict[str, pd.DataFrame], gaps, greedy: pd.Series,
              answers: pd.DataFrame) -> Markdown:
    """What this run shows, at most five points in one box, each built from the run's numbers: what was learnt and how
    (sampled pass@1 beside greedy accuracy: sharpening or new answers), what federation cost against Central-GRPO,
    why (the agreement), and the unrewarded format. Every ± is two SE over problems, paired where two models answer
    the same problems."""
    from fedrl_kit.notebook import headline
    from fedrl_kit.rewards.format import is_well_formatted

    h, s = headline(runs[name]), scores[name]
    federated = name != "Central-GRPO"  # Central-GRPO alone: one client holding all the data, nothing averaged
    gain, noise = 100 * (h["final pass@1"] - h["base pass@1"]), 200 * _se(s.iloc[:, -1] - s.iloc[:, 0])
    g0, g1 = greedy["base (greedy)"], greedy["trained (greedy)"]
    diff = answers["trained right"].astype(float) - answers["base right"].astype(float)
    n, change, gnoise = len(answers), int(diff.sum()), 2 * _se(diff)
    up, learnt_anything = g1 - g0 > gnoise, gain > noise
    head = (f"{name} learnt, " + ("and not only by sharpening." if up else "mostly by sharpening.") if learnt_anything
            else f"{name} did not clearly learn.")
    sampled = (f" Sampled pass@1 went from {100 * h['base pass@1']:.1f} % to {100 * h['final pass@1']:.1f} % "
               f"({gain:+.1f} ± {noise:.1f} points, {'beyond' if learnt_anything else 'within'} the noise)"
               + (", though no client sent a problem or an answer." if federated else "."))
    greedy_words = (f"{100 * g0:.1f} % → {100 * g1:.1f} %, {change:+d} of {n} problems, "
                    f"{'within' if abs(g1 - g0) <= gnoise else 'beyond'} ± {100 * gnoise:.1f} points").replace("-", "−")
    if up:
        tail = f" Greedy test accuracy rose too ({greedy_words}). So it also learnt answers it did not give before."
    else:
        tail = (f" Greedy test accuracy did not rise ({greedy_words}), a negative result. The model samples answers it could "
                "already give more often; it learnt few new ones.")
    learnt = head + sampled + tail
    lines = [learnt]
    if "Central-GRPO" in scores and federated:
        leads = _leads(scores, name)
        ahead = leads.iloc[1:][leads["lead"].iloc[1:] > leads["2 SE"].iloc[1:]]
        d, dn = leads["lead"].iloc[-1], leads["2 SE"].iloc[-1]
        early = (f"Central-GRPO trains on the pooled data. It led beyond the noise in round{'s' if len(ahead) > 1 else ''} "
                 f"{_rounds(ahead.index)}." if len(ahead) else "Central-GRPO trains on the pooled data. It never led "
                 "beyond the noise.")
        end = (f" It ended {abs(d):.1f} ± {dn:.1f} points {'higher' if d > 0 else 'lower'}, "
               + ("within" if abs(d) <= dn else "beyond") + " the noise.")
        if abs(d) > dn:
            cost = " Here federation cost final pass@1." if d > 0 else " Here federation ended ahead."
        else:
            cost = f" So this seed shows no final cost, but a gap of up to about {abs(d) + dn:.0f} points is not ruled out."
        lines.append(early + end + cost)
    if gaps is not None and len(gaps) and federated:
        a = gaps["agreement of updates"].dropna()
        sweep = alpha_reading()
        lines.append(f"The clients' updates agreed only {a.min():.2f}–{a.max():.2f}. So the averaged step was shorter "
                     f"than each client's own. In stored runs of this preset, {sweep[0].lower()}{sweep[1:]}")
    formatted = answers["base answer"].map(is_well_formatted)
    right = answers["base right"]
    if formatted.any() and (~formatted).any() and h["final format"] > h["base format"]:
        better = right[formatted].mean() > right[~formatted].mean()
        lines.append(f"The format rate rose from {100 * h['base format']:.1f} % to {100 * h['final format']:.1f} %, though "
                     f"format earns no reward. The base's formatted greedy answers were right {right[formatted].mean():.0%} "
                     f"of the time, its unformatted ones {right[~formatted].mean():.0%}."
                     + (" So formatted answers likely collected more of the positive advantages." if better else ""))
    return Markdown("> **What this run shows** (one seed; pass@1 and rates in %; ± is two SE over test problems, in points)\n>\n"
                    + "\n".join(f"> {i}. {s}" for i, s in enumerate(lines[:5], 1)))


def answers_changed(answers: pd.DataFrame, sampled: pd.DataFrame, samples: int, n: int = 8) -> pd.DataFrame:
    """The ``n`` test questions whose sampled success changed most from the base (round 0) to the trained model (last
    round): "k of G samples right" before and after (``sampled``: a problem's pass rate per round, in test order,
    :func:`per_problem`), beside each model's greedy answer."""
    before, after = (np.rint(samples * sampled.iloc[:, i].to_numpy()).astype(int) for i in (0, -1))
    right = {f"base: right of {samples} samples": before, f"trained: right of {samples} samples": after}
    table = answers.assign(**right)
    order = np.argsort(-np.abs(after - before), kind="stable")[:n]
    columns = ["question", "gold", *right, "base answer", "trained answer"]
    return table.iloc[order][columns]


# -- what the stored α sweep found (benchmarks/quickstart_alpha.py) --------------------------------------------------
ALPHA_FILE = "benchmarks/results/quickstart_alpha.json"


def alpha_sweep(path: str = ALPHA_FILE) -> pd.DataFrame:
    """The stored sweep of the split's Dirichlet α, one row per α: the agreement a of FedAvg-GRPO's clients (mean over
    rounds and seeds), its final sampled pass@1, and its gap to Central-GRPO of the same seed (points, mean over
    seeds); the seeds it averages."""
    import json

    from fedrl_kit.notebook import repo_path

    stored = json.loads(repo_path(path).read_text())
    central = {r["seed"]: r["final pass@1"] for r in stored["runs"] if r["method"] == "central_grpo"}
    rows = {}
    for alpha in stored["alphas"]:
        mine = [r for r in stored["runs"] if r["method"] == "fedavg_grpo" and r["dirichlet_alpha"] == alpha
                and r["seed"] in central]
        agreement = [np.mean(list(r["agreement per round"].values())) for r in mine]
        rows[f"{alpha:g}"] = {"mean agreement a": round(float(np.mean(agreement)), 2),
                               "a, each seed": ", ".join(f"{a:.2f}" for a in agreement),
                               "final pass@1 (%)": round(100 * float(np.mean([r["final pass@1"] for r in mine])), 1),
                               "Central − FedAvg (points)": round(100 * float(np.mean(
                                   [central[r["seed"]] - r["final pass@1"] for r in mine])), 1),
                               "seeds": len(mine)}
    return _table(rows).T.rename_axis("Dirichlet α")


def alpha_reading(path: str = ALPHA_FILE) -> str:
    """One sentence reading the stored α sweep: does the agreement rise from α = 0.1 to α = 100 beyond the 95 %
    Student-t interval of the per-seed paired difference, and is it near 1/√K even at α = 100 (noise) or well above it."""
    import json

    from fedrl_kit.notebook import repo_path

    stored = json.loads(repo_path(path).read_text())
    lo_a, hi_a, k = min(stored["alphas"]), max(stored["alphas"]), stored["runs"][0]["num_clients"]

    def mean_a(alpha):
        return {r["seed"]: float(np.mean(list(r["agreement per round"].values()))) for r in stored["runs"]
                if r["method"] == "fedavg_grpo" and r["dirichlet_alpha"] == alpha}

    lo, hi = mean_a(lo_a), mean_a(hi_a)
    seeds = sorted(set(lo) & set(hi))
    d = np.array([hi[s] - lo[s] for s in seeds])
    half = t_interval(d)[1]  # the 95 % Student-t half-width over seeds (n − 1 degrees of freedom)
    rises, falls = len(d) > 1 and d.mean() > half, len(d) > 1 and d.mean() < -half
    floor = 1 / np.sqrt(k)
    a_lo, a_hi = np.mean([lo[s] for s in seeds]), np.mean([hi[s] for s in seeds])
    ends = f"{a_lo:.2f} at α = {_plain(lo_a)}", f"{a_hi:.2f} at α = {_plain(hi_a)}"
    stats = f"{d.mean():+.2f} ± {half:.2f}, 95 % t interval over {len(seeds)} seeds".replace("-", "−")
    trend = (f"rose from {ends[0]} to {ends[1]} ({stats}), so the non-IID split does lower it" if rises else
             f"fell from {ends[0]} to {ends[1]} ({stats}), the opposite of what heterogeneity predicts" if falls else
             f"did not change clearly with α ({ends[0]}, {ends[1]}; {stats})")
    level = (f"; even nearly IID it stays close to 1/√K = {floor:.2f}, so batch noise explains most of the shortfall"
             if a_hi - floor < (a_hi - a_lo if rises else 0.15) else
             f"; nearly IID it sits well above 1/√K = {floor:.2f}")
    return f"The agreement {trend}{level}."


def alpha_words(path: str = ALPHA_FILE) -> Markdown:
    """:func:`alpha_reading` as the notebook shows it."""
    return Markdown(alpha_reading(path))


# -- the exercises' answers ------------------------------------------------------------------------------------------
def frac_zero_answer(records: list[dict], run, base_eval: dict) -> tuple[str | None, str]:
    """Exercise 2: the client whose groups had no spread most often, and why (its main topics' base pass@1)."""
    from fedrl_kit.notebook import client_table

    client_df = pd.DataFrame([r for r in records if r["kind"] == "client"])
    if not len(client_df):
        return None, "zero-shot trains no client"
    zero = client_df.groupby("client").frac_zero_std.mean()
    answer = zero.idxmax()
    held = client_table(run.partitions).drop(columns="total")
    if len(zero) < 2 or answer not in held.index:  # Central-GRPO: one client holding everything
        return answer, f"{answer} is the only client; its groups had no spread {zero.max():.0%} of the time"
    mine = held.loc[answer]
    base = {k.split("/", 1)[1]: v for k, v in base_eval.items() if k.startswith("topic/")}
    mix = ", ".join(f"{t} {n / mine.sum():.0%} (base pass@1 {base.get(t, float('nan')):.2f})"
                    for t, n in mine.sort_values(ascending=False).head(2).items())
    others = zero.drop(answer)
    return answer, (f"{answer}'s groups had no spread {zero.max():.0%} of the time (the others {others.min():.0%}–"
                    f"{others.max():.0%}); its data is mostly {mix}: topics where most groups of G answers are all "
                    "wrong (or all right) give every answer A = 0")


def bytes_answer(run, gaps) -> tuple[int | None, str]:
    """Exercise 3: the bytes of one client's reply, and what they hold."""
    if gaps is None or not len(gaps):
        return None, "zero-shot sends no adapters"
    answer = int(gaps["bytes up per client"].max())
    numbers = sum(v.size for v in run.initial_state.values())
    return answer, (f"the ledger counts {answer:,} bytes per client reply: {numbers:,} adapter numbers × 4 bytes = "
                    f"{4 * numbers:,}, plus {answer - 4 * numbers:,} bytes of tensor names, n_k and metrics")


def adapter_shapes(state: dict) -> pd.DataFrame:
    """Layer 0's LoRA factors (module, D and U shapes, numbers), after a line saying how many numbers the whole
    adapter holds: what each client sends up each round."""
    downs = [k for k in state if "lora_A" in k]
    rows = [{"module": k.split(".")[-3], "D (lora_A)": state[k].shape,
             "U (lora_B)": state[k.replace("lora_A", "lora_B")].shape,
             "numbers": int(state[k].size + state[k.replace("lora_A", "lora_B")].size)}
            for k in downs if ".layers.0." in k]
    per_layer = len(rows)
    print(f"{per_layer} modules × {len(downs) // per_layer} layers = {len(downs)} adapted weights, "
          f"{sum(v.size for v in state.values()):,} adapter numbers in all: what each client sends up each round")
    return pd.DataFrame(rows).set_index("module")
