"""The quickstart notebook's (00) tables, figures and sentences, built from its run so that each notebook cell is a
line or two: settings and results with integers printed as integers, the pass@1 curve with its noise and the paired
difference drawn, what the curve says in words, the client view, the takeaway box, the exercises' answers with their
reasons, and the optional section's agreement and stored α sweep.

One noise rule throughout: a difference counts only beyond two standard errors (about 95 %). The standard error is
taken over test problems, not sampled answers (a problem's samples are not independent): a pass@1 is the mean of
each problem's pass rate, its SE their standard deviation over sqrt(problems); a difference between two models on
the same problems is paired, its SE that of the per-problem differences. One seed: seed-to-seed variance is not in
it.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from IPython.display import Markdown

from experiments.stats import t_interval

NAMES = {"fedavg_grpo": "FedAvg-GRPO", "fedprox_grpo": "FedProx-GRPO", "central_grpo": "Central-GRPO"}
"""the methods the quickstart runs, as the papers name them (no zero-shot: the base model is round 0 of every run)"""

SETTINGS = {"num_clients": "K", "rounds": "R", "local_steps": "τ", "dirichlet_alpha": "α", "prompts_per_step": "b",
            "num_generations": "G", "aggregator": "", "lora_rank": "r", "lora_alpha": "", "eval_samples": ""}
"""the settings the quickstart shows, each with the symbol the text gives it"""


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
    returns the config, the run folder and the figures folder (:func:`fedrl_kit.notebook.setup`). Zero-shot is not a
    method here, nor are 0 rounds: the base model is round 0 of every run."""
    from fedrl_kit import notebook
    from fedrl_kit.config import REAL_LM

    g = namespace
    if type(g["rounds"]) is int and g["rounds"] == 0:  # before anything is written, as for any bad parameter
        raise notebook.NotebookStop("rounds=0 trains nothing: the quickstart needs rounds >= 1 (the base model is "
                                    "round 0 of every run)")
    return notebook.setup(
        "quickstart", g, smoke="quickstart", setting=REAL_LM if g["base"] == "smollm2" else None,
        choices={"method": NAMES, "base": ("",) if "full" in g["preset_name"] else ("", "smollm2")},
        words=(g["base"], g["method"]), folder=dict(k=g["num_clients"], r=g["rounds"], t=g["local_steps"],
                                                   a=g["dirichlet_alpha"], s=g["seed"], reference=g["reference_path"]))


def central_run(cfg):
    """Central-GRPO beside a federated method (same seed, sizes and budget), keeping its messages so that §4 can
    re-score each round; None for Central-GRPO itself."""
    import dataclasses

    from fedrl_kit.runs import Run

    if cfg.method == "central_grpo":
        return None
    central = Run(dataclasses.replace(cfg, method="central_grpo"), None, progress=False).build()
    central.runtime.keep_messages = True
    return central


def settings(cfg) -> pd.DataFrame:
    """The run's sizes (the knobs §1–2 explain), one row, each column headed by its name and, below, the symbol the
    text uses; FedProx's μ only where the method uses it."""
    values = cfg.to_dict()
    prox = {"fedprox μ": {"this run": values["fedprox"]["mu"]}} if cfg.method == "fedprox_grpo" else {}
    table = _table({**{k: {"this run": values[k]} for k in SETTINGS}, **prox})
    table.columns = pd.MultiIndex.from_tuples([(k, SETTINGS.get(k, "μ")) for k in table.columns])
    return table


# -- §1: the clip, token by token -------------------------------------------------------------------------------------
def grpo_settings(cfg) -> None:
    """The local step's settings that §1 explains, in one line: the clip range, the passes over each batch (ρ ≠ 1
    only after the first), the loss type, β, the learning rate and the sampling temperature (the same for training
    rollouts and for the test's sampled answers)."""
    k = cfg.num_iterations
    passes = ("only pass 2 sees ρ ≠ 1" if k == 2 else f"passes 2–{k} see ρ ≠ 1") if k > 1 else \
        "ρ = 1 always: the clip never acts"
    print(f"ε = {cfg.epsilon:g}, ε_high = {cfg.epsilon_high:g}: clip range [{1 - cfg.epsilon:.2f}, "
          f"{1 + cfg.epsilon_high:.2f}];  num_iterations = {k} ({passes});  loss_type = {cfg.loss_type!r};  "
          f"β = {cfg.beta:g};  learning_rate = {cfg.learning_rate:g};  temperature = {cfg.temperature:g} (training "
          "rollouts and test samples alike)")


def clip_why(cfg) -> str:
    """Exercise 1's reason, with the run's clip range: which side of the range silences a token, and why the other
    side does not (the min keeps the smaller, pessimistic term)."""
    lo, hi = 1 - cfg.epsilon, 1 + cfg.epsilon_high
    return (f"the min keeps the smaller of ρ·A and clip(ρ)·A. Clipping makes the term smaller, and so replaces it by a "
            f"constant with zero gradient, only where the token has already moved past the range the way its "
            f"advantage pushes it: A > 0 and ρ > {hi:.2f}, or A < 0 and ρ < {lo:.2f}. ρ = 0.7 with A = +1 moved the "
            f"wrong way: ρ·A = 0.70 is below clip(ρ)·A = {lo:.2f}, the min keeps ρ·A, and its gradient pulls the token "
            f"back up; likewise ρ = 1.3 with A = −1 is pushed back down")


def clip_table(rho, A, grad, loss, cfg) -> pd.DataFrame:
    """§1's toy token by token: ρ·A, clip(ρ)·A, the smaller one that the loss keeps, and which way a step pushes the
    token's probability (``grad``: autograd's gradient of grpo_loss, 0 where the kept term is the clipped constant).
    Prints the loss rebuilt from the kept terms beside grpo_loss's ``loss``."""
    lo, hi = 1 - cfg.epsilon, 1 + cfg.epsilon_high
    rows, kept = {}, []
    for a, g in zip(A.tolist(), grad.tolist()):
        for p, x in zip(rho.tolist(), g):
            raw, cut = p * a, min(max(p, lo), hi) * a
            kept.append(min(raw, cut))
            rows[f"A = {a:+.0f}, ρ = {p:.1f}".replace("-", "−")] = {"ρ·A": round(raw, 2), "clip(ρ)·A": round(cut, 2),
                                                 "min: the term kept": round(min(raw, cut), 2),
                                                 "push on π(token)": "none (clipped)" if x == 0 else
                                                 ("up" if a > 0 else "down")}
    n = len(rho)
    sums = [sum(kept[i:i + n]) for i in range(0, len(kept), n)]  # one sum per answer
    terms = f"{sums[0]:.2f}" + "".join(f" {'+' if v >= 0 else '−'} {abs(v):.2f}" for v in sums[1:])
    print(f"loss = −(kept terms summed per answer) / tokens = −({terms}) / {len(kept)} = {-sum(kept) / len(kept):.4f}"
          f"   (grpo_loss: {loss.item():.4f})")
    return pd.DataFrame(rows).T


def adapter_line(run) -> None:
    """One line on what trains and travels: LoRA's rank and alpha, the adapted weights, one factor pair's shapes, the
    adapter's numbers beside the frozen base's."""
    cfg, state = run.config, run.initial_state
    downs = sorted(k for k in state if "lora_A" in k)
    first = next(k for k in downs if ".layers.0." in k and "q_proj" in k) if any("q_proj" in k for k in downs) \
        else downs[0]
    frozen = sum(p.numel() for name, p in run.policy.model.named_parameters() if "lora_" not in name)
    print(f"LoRA rank r = {cfg.lora_rank}, lora_alpha = {_plain(cfg.lora_alpha)}: ΔW = "
          f"({_plain(cfg.lora_alpha)}/{cfg.lora_rank})·UD on {len(downs)} weights (e.g. {first.split('.')[-3]}: "
          f"D {state[first].shape}, U {state[first.replace('lora_A', 'lora_B')].shape}). "
          f"Adapter: {sum(v.size for v in state.values()):,} numbers; frozen base: {frozen:,}.")


def base_by_topic(run, base_eval: dict) -> pd.DataFrame:
    """The base's pass@1 per topic on the test problems (round 0) and how many test problems each topic has."""
    counts = pd.Series(run.world.test["topic"]).value_counts().sort_index()
    topics = {k.split("/", 1)[1]: round(v, 3) for k, v in base_eval.items() if k.startswith("topic/")}
    return _table({t: {"base pass@1": topics.get(t, float("nan")), "test problems": int(counts[t])} for t in counts.index})


def bubbles(run, alpha, folder=None):
    """Who holds what, as bubbles whose area grows with the problems held, each labelled with its count (the size
    key: a legend cannot draw bubble sizes). Written to ``folder`` when given."""
    from fedrl_kit import viz
    from fedrl_kit.world.partition import topic_matrix

    names, counts = topic_matrix(run.partitions)
    fig = viz.heterogeneity_bubbles(names, counts, title=f"training problems per client and topic (Dirichlet α = "
                                                         f"{alpha}; bubble area ∝ problems, number printed)")
    held = [int(counts[k, t]) for k in range(counts.shape[0]) for t in range(counts.shape[1]) if counts[k, t] > 0]
    fig.update_traces(mode="markers+text", text=[str(n) for n in held], textposition="middle center",
                      textfont=dict(size=11, color="#222"), hovertemplate="%{x}, %{y}: %{text} problems<extra></extra>")
    if folder is not None:
        viz.export(fig, "quickstart_heterogeneity", folder)
    return fig


def sampled_vs_greedy(run, base_eval: dict) -> Markdown:
    """The base's greedy test accuracy next to its sampled pass@1, with no word on what training will do to either
    (the greedy-accuracy exercise asks the reader to predict it)."""
    from fedrl_kit.evaluate import answers, eval_seed

    cfg = run.config
    _, right = answers(run.policy, {"base": run.initial_state}, run.world.test, seed=eval_seed(cfg.seed),
                       batch_size=cfg.eval_batch_size, accuracy_fn=run.accuracy_fn)["base"]
    return Markdown(f"The base: greedy test accuracy {100 * np.mean(right):.1f} %, sampled pass@1 "
                    f"{100 * base_eval['pass@1']:.1f} %.")


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
    """Each method's base and final pass@1 and format rate (%), its change with the paired ± 2 SE (over problems), and
    Central-GRPO's paired final lead over the other method, with its ± 2 SE."""
    from fedrl_kit.notebook import headline

    rows = {}
    for name, recs in runs.items():
        h, s = headline(recs), scores[name]
        rows[name] = {"base pass@1 (%)": round(100 * h["base pass@1"], 1),
                      "final pass@1 (%)": round(100 * h["final pass@1"], 1),
                      "change (points, ± 2 SE paired)": f"{h['change (points)']:+.1f} ± "
                                                        f"{200 * _se(s.iloc[:, -1] - s.iloc[:, 0]):.1f}",
                      **{f"{k} (%)": round(100 * h[k], 1) for k in ("base format", "final format")}}
    others = [n for n in runs if n != "Central-GRPO"]
    if "Central-GRPO" in scores and others:
        lead = _leads(scores, others[0]).iloc[-1]
        for name in runs:
            rows[name]["Central's lead, final (points, ± 2 SE paired)"] = (
                f"{lead['lead']:+.1f} ± {lead['2 SE']:.1f}" if name == "Central-GRPO" else "")
    return _table(rows).map(lambda v: v.replace("-", "−") if isinstance(v, str) else v)


def pass_curve(scores: dict[str, pd.DataFrame], folder=None):
    """Top: global pass@1 per round for each method, each point with its ± 2 SE bar over problems (the methods' points
    set a little apart so that their bars do not overlap). Bottom, when Central-GRPO ran beside another method: the
    paired difference Central − other per round with its ± 2 SE bar, and the zero line: a bar that clears zero is a
    lead beyond the noise. Written to ``folder`` (HTML, and PNG where possible) when given."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from fedrl_kit import viz

    others = [n for n in scores if n != "Central-GRPO"]
    paired = "Central-GRPO" in scores and bool(others)
    fig = make_subplots(rows=2 if paired else 1, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        row_heights=[0.6, 0.4] if paired else None,
                        subplot_titles=["pass@1 on the test problems (bars: ± 2 SE over problems)"]
                        + ([f"Central-GRPO − {others[0]}, paired on the same problems (bars: ± 2 SE)"] if paired else []))
    shift = {name: 0.1 * (i - (len(scores) - 1) / 2) for i, name in enumerate(scores)}
    for name, s in scores.items():
        fig.add_trace(go.Scatter(x=[c + shift[name] for c in s.columns], y=s.mean().tolist(), name=name,
                                 mode="lines+markers", customdata=list(s.columns),
                                 hovertemplate="round %{customdata}: %{y:.3f}<extra>" + name + "</extra>",
                                 error_y=dict(type="data", array=[2 * _se(s[c]) for c in s.columns], thickness=1)),
                      row=1, col=1)
    top = max(float(s.mean().max()) for s in scores.values())
    fig.update_yaxes(title_text="pass@1", range=[0, min(1.0, top + 0.15)], row=1, col=1)
    if paired:
        lead = _leads(scores, others[0])
        fig.add_trace(go.Scatter(x=list(lead.index), y=(lead["lead"] / 100).tolist(), name="Central − " + others[0],
                                 mode="markers", marker=dict(color="black", size=7), showlegend=False,
                                 error_y=dict(type="data", array=(lead["2 SE"] / 100).tolist(), thickness=1.5)),
                      row=2, col=1)
        fig.add_hline(y=0, line=dict(color="grey", dash="dash"), row=2, col=1)
        fig.update_yaxes(title_text="difference", row=2, col=1)
    fig.update_xaxes(title_text="round", dtick=1, row=2 if paired else 1, col=1)
    fig.update_layout(template=viz.TEMPLATE, height=560 if paired else 420, margin=dict(t=40),
                      legend=dict(x=0.99, xanchor="right", y=0.5 if paired else 0.05, yanchor="bottom",
                                  bgcolor="rgba(255,255,255,0.8)"))
    if folder is not None:
        viz.export(fig, "quickstart_pass_at_1", folder)
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
    """What the curve shows: the rounds where Central-GRPO leads beyond 2 SE of the paired difference (the lower
    panel's bar clears zero), why that panel can clear zero where the upper panel's bars overlap, and why neighbouring
    rounds are not separate evidence."""
    if "Central-GRPO" not in scores or name == "Central-GRPO":
        return Markdown("- One method ran: nothing to compare it with (Central-GRPO runs beside FedAvg-GRPO and "
                        "FedProx-GRPO).")
    leads = _leads(scores, name).iloc[1:]
    ahead = leads[leads["lead"] > leads["2 SE"]]
    if len(ahead):
        first = (f"- Central-GRPO led beyond the noise (lower panel: the bar clears zero) in "
                 f"round{'s' if len(ahead) > 1 else ''} {_rounds(ahead.index)}, by at most "
                 f"{ahead['lead'].max():.1f} points. In the other rounds the difference is within the noise.\n"
                 "- The upper bars overlap even there: both models face the same problems, and the paired difference "
                 "cancels how hard each problem is, so it is less noisy than either curve.")
    else:
        first = (f"- Central-GRPO never led beyond the noise (lower panel: every bar reaches zero). Its largest lead "
                 f"was {leads['lead'].max():.1f} points (± {leads.loc[leads['lead'].idxmax(), '2 SE']:.1f}).")
    return Markdown(first + "\n- Neighbouring rounds are not independent checks: each model is the last one plus one "
                    "round, so a lead over several rounds is one finding, not several.")


def agreement(run) -> Markdown:
    """How far the clients' updates agreed, per round (:func:`fedrl_kit.notebook.round_factor_gaps`, from the kept
    messages), beside √Σ_k w_k², what updates of equal length at right angles would give with the server's weights."""
    from fedrl_kit.notebook import round_factor_gaps

    a = round_factor_gaps(run)["agreement of updates"].dropna()
    ref = right_angle_reference(list(run.server.sizes.values()))
    return Markdown(f"- Per round the agreement was {a.min():.2f}–{a.max():.2f}: the server's step was about "
                    f"{a.mean():.0%} as long as a client's own, which acts like a smaller learning rate.\n"
                    f"- Updates of equal length at right angles would give √Σw_k² = {ref:.2f} with this run's weights: "
                    "the clients' updates were "
                    + ("nearly orthogonal." if a.max() - ref < 0.15 else "more alike than that."))


TRAIN = {"accuracy": "train reward"}
"""the client records' ``accuracy`` (mean reward on the client's own rollouts), as the notebook names it"""


def client_grid(records: list[dict], folder=None):
    """Every client's local training by round, one column each, one quantity per row: on top its train reward (the
    records' ``accuracy``: mean reward on its own rollouts) with the global test pass@1 dashed for reference (both
    fractions of answers right), below its frac_zero_std (a fraction of groups). Written to ``folder`` when given."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from fedrl_kit import viz

    clients = sorted({r["client"] for r in records if r["kind"] == "client"})
    fig = make_subplots(rows=2, cols=len(clients), subplot_titles=clients, shared_yaxes=True, shared_xaxes=True,
                        vertical_spacing=0.1)
    g = [r for r in records if r["kind"] == "global"]
    for j, c in enumerate(clients, 1):
        mine = [r for r in records if r["kind"] == "client" and r["client"] == c]
        for row, metric, colour in ((1, "accuracy", "#636efa"), (2, "frac_zero_std", "#ef553b")):
            fig.add_trace(go.Scatter(x=[r["round"] for r in mine], y=[r[metric] for r in mine],
                                     name=f"{TRAIN.get(metric, metric)} (own rollouts)", mode="lines+markers",
                                     legendgroup=metric, showlegend=j == 1, line=dict(color=colour),
                                     marker=dict(size=4)), row=row, col=j)
        fig.add_trace(go.Scatter(x=[r["round"] for r in g], y=[r["pass@1"] for r in g], name="global pass@1 (test)",
                                 legendgroup="global", showlegend=j == 1, line=dict(dash="dash", color="black")),
                      row=1, col=j)
        fig.update_xaxes(title_text="round", row=2, col=j)
    fig.update_yaxes(title_text="fraction right", range=[-0.03, 0.83], row=1, col=1)
    fig.update_yaxes(title_text="frac_zero_std", range=[-0.03, 1.03], row=2, col=1)
    fig.update_layout(template=viz.TEMPLATE, height=480, title="each client's own rollouts per round",
                      legend=dict(orientation="h", y=-0.18))
    if folder is not None:
        viz.export(fig, "quickstart_clients", folder)
    return fig


def takeaways(runs: dict[str, list[dict]], name: str, scores: dict[str, pd.DataFrame], greedy: pd.Series,
              answers: pd.DataFrame) -> Markdown:
    """What this run shows, three points in one box, each built from the run's numbers and each shown earlier in the
    notebook: what was learnt and how (sampled pass@1 beside greedy accuracy: sharpening or new answers), what
    federation cost against Central-GRPO, and the unrewarded format. Every ± is two SE over problems, paired where two
    models answer the same problems."""
    from fedrl_kit.notebook import headline

    h, s = headline(runs[name]), scores[name]
    federated = name != "Central-GRPO"  # Central-GRPO alone: one client holding all the data, nothing averaged
    gain, noise = 100 * (h["final pass@1"] - h["base pass@1"]), 200 * _se(s.iloc[:, -1] - s.iloc[:, 0])
    g = greedy_change(answers, greedy)
    up, learnt_anything = g["verdict"] == "higher", gain > noise
    head = (f"{name} learnt, " + ("and not only by sharpening." if up else "mostly by sharpening.") if learnt_anything
            else f"{name} did not clearly learn.")
    sampled = (f" Sampled pass@1 went from {100 * h['base pass@1']:.1f} % to {100 * h['final pass@1']:.1f} % "
               f"({gain:+.1f} ± {noise:.1f} points)"
               + (", though no client sent a problem or an answer." if federated else "."))
    tail = (f" Greedy test accuracy rose too ({g['words']})." if up else
            f" Greedy test accuracy did not rise ({g['words']})"
            + (": sampling now finds answers the model could already give." if learnt_anything else "."))
    lines = [head + sampled + tail]
    if "Central-GRPO" in scores and federated:
        leads = _leads(scores, name)
        ahead = leads.iloc[1:][leads["lead"].iloc[1:] > leads["2 SE"].iloc[1:]]
        d, dn = leads["lead"].iloc[-1], leads["2 SE"].iloc[-1]
        early = (f"Central-GRPO, on the pooled data, led beyond the noise in round{'s' if len(ahead) > 1 else ''} "
                 f"{_rounds(ahead.index)}." if len(ahead) else "Central-GRPO, on the pooled data, never led beyond "
                 "the noise.")
        end = f" It ended {d:+.1f} ± {dn:.1f} points ahead, " + ("within" if abs(d) <= dn else "beyond") + " the noise"
        end += (": no final cost of federation shown by this seed." if abs(d) <= dn else
                ": here federation cost final pass@1." if d > 0 else ": here federation ended ahead.")
        lines.append(early + end)
    if h["final format"] > h["base format"]:
        lines.append(f"The format rate rose from {100 * h['base format']:.1f} % to {100 * h['final format']:.1f} %, "
                     "though format earns no reward.")
    return Markdown("> **What this run shows** (one seed; ± is two SE over test problems, in points)\n>\n"
                    + "\n".join(f"> {i}. {x}" for i, x in enumerate(lines, 1)).replace("+-", "−").replace(" -", " −"))


def greedy_change(answers: pd.DataFrame, greedy: pd.Series) -> dict:
    """Greedy test accuracy before and after (``greedy``, :func:`fedrl_kit.notebook.before_after`) with its paired
    noise over problems (``answers``: every test problem's base and trained right/wrong): "higher", "lower" or "same"
    (within ± 2 SE), and the change in words."""
    g0, g1 = greedy["base (greedy)"], greedy["trained (greedy)"]
    diff = answers["trained right"].astype(float) - answers["base right"].astype(float)
    n, change, noise = len(answers), int(diff.sum()), 2 * _se(diff)
    verdict = "same" if abs(g1 - g0) <= noise else "higher" if g1 > g0 else "lower"
    words = (f"{100 * g0:.1f} % → {100 * g1:.1f} %, {change:+d} of {n} problems, "
             f"{'within' if verdict == 'same' else 'beyond'} ± {100 * noise:.1f} points").replace("-", "−")
    return {"verdict": verdict, "words": words, "better": int((diff > 0).sum()), "worse": int((diff < 0).sum()),
            "change": change, "n": n}


def greedy_answer(answers: pd.DataFrame, greedy: pd.Series, sampled: pd.DataFrame) -> tuple[str, str]:
    """The greedy-accuracy exercise: its answer ("higher", "same" or "lower") and why, from the run (``sampled``: the
    method's per-problem pass rates by round, :func:`per_problem`)."""
    g = greedy_change(answers, greedy)
    gain = 100 * (sampled.iloc[:, -1].mean() - sampled.iloc[:, 0].mean())
    final = 100 * sampled.iloc[:, -1].mean()
    why = (f"greedy test accuracy went {g['words']}, while sampled pass@1 rose {gain:+.1f} points to {final:.1f} %, "
           f"{'still below' if final < 100 * greedy['trained (greedy)'] else 'now above'} greedy accuracy. "
           + ("Training raised the probability of answers the base could already give, so sampling finds them more "
              "often (sharpening); the single likeliest answer changed on few problems" if g["verdict"] != "higher" else
              "So training also changed which answer is likeliest on some problems: it learnt answers, not only "
              "sharpened")).replace("+-", "−")
    return g["verdict"], why


def _false_equation(answer: str) -> bool:
    """Whether an answer's reasoning (inside <think>…</think>) states an arithmetic equation that is false, such as
    83=17*5+3: both sides digits joined by +, − or *, evaluated; anything else is not judged."""
    import re

    m = re.search(r"<think>(.*?)</think>", answer)
    sides = m.group(1).split("=") if m else []
    if len(sides) != 2 or not all(re.fullmatch(r"\d+(?:[+\-*]\d+)*", x) for x in sides):
        return False
    return eval(sides[0], {"__builtins__": {}}) != eval(sides[1], {"__builtins__": {}})  # digits and + − * only


def answers_reading(answers: pd.DataFrame, shown: pd.DataFrame) -> Markdown:
    """What the before/after table shows: whether the greedy answers of its rows changed (sharpening, seen directly),
    how many greedy answers over all test problems turned right or wrong, and right answers whose reasoning is false
    (the verifier reads only the answer)."""
    rows = answers.loc[shown.index]
    both = rows[rows["base right"] & rows["trained right"]]  # both give the gold answer: the same answer
    zero = shown.columns[shown.columns.str.startswith("base: right of")][0]
    none_before = (shown.loc[both.index, zero] == 0).sum()
    g = {"better": int((~answers["base right"] & answers["trained right"]).sum()),
         "worse": int((answers["base right"] & ~answers["trained right"]).sum())}
    lines = [("In all" if len(both) == len(shown) else f"In {len(both)} of the") + f" {len(shown)} rows both models "
             "give the right greedy answer" + (f", even in the {none_before} where the base got 0 of "
                                               f"{zero.split()[-2]} samples right" if none_before else "")
             + ". The base could already give the answer; training made sampling find it: sharpening, seen directly.",
             f"Over all {len(answers)} test problems, {g['better']} greedy answers turned right and {g['worse']} turned "
             f"wrong (net {g['better'] - g['worse']:+d}).".replace("-", "−")]
    right = answers[answers["trained right"]]
    false = right[right["trained answer"].map(_false_equation)]
    worked = right["trained answer"].str.contains(r"<think>[^<]*=", regex=True).sum()
    if len(false):
        pick = false.loc[false.index.isin(shown.index)]
        ex = (pick if len(pick) else false).iloc[0]
        reasoning = ex["trained answer"].split("<think>")[1].split("</think>")[0]
        lines.append(f"Row {(pick if len(pick) else false).index[0]} ({ex['question']}): the trained model reasons "
                     f"`{reasoning}`, which is false, yet its answer is right and earns reward 1: the verifier reads "
                     f"only the answer. Of the trained model's {worked} right greedy answers that show an equation, "
                     f"{len(false)} show a false one.")
    return Markdown("\n".join(f"- {x}" for x in lines))


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


@functools.lru_cache(maxsize=None)
def split_reference(preset_name: str, alpha: float, seed: int) -> float:
    """√Σ_k w_k² for the clients a run of ``preset_name`` at Dirichlet ``alpha`` and ``seed`` trains (w_k = n_k / n, the
    split rebuilt as :meth:`fedrl_kit.runs.Run.build` makes it, without the model): the agreement that updates of
    equal length at right angles would give with those weights; 1/√K for equal sizes, higher the more uneven."""
    from fedrl_kit.config import preset
    from fedrl_kit.world.partition import partition
    from fedrl_kit.world.registry import build_world

    cfg = preset(preset_name, dirichlet_alpha=alpha, seed=seed)
    parts = partition(build_world(cfg).train, cfg.num_clients, cfg.partition, cfg.dirichlet_alpha,
                      cfg.topics_per_client, cfg.equal_size, cfg.seed)
    return right_angle_reference([len(p) for p in parts])


def right_angle_reference(sizes) -> float:
    """√Σ_k w_k² with w_k = n_k / n: the agreement of equal-length updates at right angles."""
    w = np.asarray(sizes, dtype=np.float64)
    return float(np.sqrt(((w / w.sum()) ** 2).sum()))


def _sweep(path: str = ALPHA_FILE):
    """The stored α sweep: the file, Central-GRPO's final pass@1 by seed, and per α FedAvg-GRPO's runs (those with a
    Central-GRPO run of the same seed) with each run's mean agreement and its right-angle reference."""
    import json

    from fedrl_kit.notebook import repo_path

    stored = json.loads(repo_path(path).read_text())
    central = {r["seed"]: r["final pass@1"] for r in stored["runs"] if r["method"] == "central_grpo"}
    runs = {}
    for alpha in stored["alphas"]:
        mine = [r for r in stored["runs"] if r["method"] == "fedavg_grpo" and r["dirichlet_alpha"] == alpha
                and r["seed"] in central]
        runs[alpha] = [{**r, "a": float(np.mean(list(r["agreement per round"].values()))),
                        "reference": split_reference(stored["preset"], alpha, r["seed"])} for r in mine]
    return stored, central, runs


def alpha_sweep(path: str = ALPHA_FILE) -> pd.DataFrame:
    """The stored sweep of the split's Dirichlet α, one row per α (means over seeds): the agreement a of FedAvg-GRPO's
    clients (mean over rounds), its right-angle reference √Σw_k² (:func:`split_reference`), and Central-GRPO's final
    pass@1 minus FedAvg-GRPO's on the same seed (points) with its 95 % Student-t half-width over seeds; the seeds."""
    _, central, runs = _sweep(path)
    rows = {}
    for alpha, mine in runs.items():
        mean, half, _ = t_interval([100 * (central[r["seed"]] - r["final pass@1"]) for r in mine])
        rows[f"{alpha:g}"] = {"agreement a": round(float(np.mean([r["a"] for r in mine])), 2),
                              "√Σw_k² (right angles)": round(float(np.mean([r["reference"] for r in mine])), 2),
                              "Central − FedAvg, final (points, 95 % t)": f"{mean:+.1f} ± {half:.1f}".replace("-", "−"),
                              "seeds": len(mine)}
    return _table(rows).T.rename_axis("Dirichlet α")


def alpha_reading(path: str = ALPHA_FILE) -> str:
    """The stored α sweep read in two sentences: how far the agreement sits above its right-angle reference √Σw_k² at
    each end of the sweep, and whether that excess rises from the smallest α to the largest beyond the 95 % Student-t
    interval of the per-seed paired difference (what heterogeneity predicts); then whether Central-GRPO's final lead
    over FedAvg-GRPO is within its interval at every α."""
    _, central, runs = _sweep(path)
    lo_a, hi_a = min(runs), max(runs)
    by_seed = {x: {r["seed"]: r for r in runs[x]} for x in (lo_a, hi_a)}
    seeds = sorted(set(by_seed[lo_a]) & set(by_seed[hi_a]))
    excess = {x: np.array([by_seed[x][s]["a"] - by_seed[x][s]["reference"] for s in seeds]) for x in (lo_a, hi_a)}
    d = excess[hi_a] - excess[lo_a]
    half = t_interval(d)[1]  # the 95 % Student-t half-width over seeds (n − 1 degrees of freedom)
    near = max(abs(excess[lo_a].mean()), abs(excess[hi_a].mean())) < 0.1
    trend = ("rose" if len(d) > 1 and d.mean() > half else "fell" if len(d) > 1 and d.mean() < -half else
             "did not change clearly")
    points = [(f"a sat just above √Σw_k² at every α ({excess[lo_a].mean():+.2f} at α = {_plain(lo_a)}, "
               f"{excess[hi_a].mean():+.2f} at α = {_plain(hi_a)}), and the excess {trend} with α "
               f"({d.mean():+.2f} ± {half:.2f}, 95 % t over {len(seeds)} seeds)."
               + (" Batch noise, not the split, keeps the agreement low." if near and trend != "fell" else ""))]
    gaps = {x: t_interval([100 * (central[r["seed"]] - r["final pass@1"]) for r in mine]) for x, mine in runs.items()}
    if all(abs(m) <= h for m, h, _ in gaps.values()):
        points.append("Central − FedAvg is the same seed's Central-GRPO final pass@1 minus FedAvg-GRPO's; its interval "
                      "contains 0 at every α: at this size, no final cost of federation is measurable, whatever the "
                      "split.")
    else:
        points.append("Central − FedAvg is the same seed's Central-GRPO final pass@1 minus FedAvg-GRPO's; its interval "
                      "excludes 0 at α = " + ", ".join(f"{_plain(x)}" for x, (m, h, _) in gaps.items() if abs(m) > h)
                      + ".")
    return "\n".join(f"- {x}" for x in points).replace("-0.", "−0.").replace("+-", "−")


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
