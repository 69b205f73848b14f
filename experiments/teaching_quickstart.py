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

import functools

import numpy as np
import pandas as pd
from IPython.display import Markdown

from experiments.stats import t_interval

NAMES = {"fedavg_grpo": "FedAvg-GRPO", "fedprox_grpo": "FedProx-GRPO", "central_grpo": "Central-GRPO",
         "zero_shot": "Zero-shot"}
"""the methods the quickstart runs, as the papers name them"""

SETTINGS = ("num_clients", "rounds", "local_steps", "dirichlet_alpha", "prompts_per_step", "num_generations",
            "aggregator", "lora_rank", "lora_alpha", "eval_samples")


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
    """The run's sizes (the knobs §1–2 explain), one row; FedProx's μ only where the method uses it."""
    values = cfg.to_dict()
    prox = {"fedprox μ": {"this run": values["fedprox"]["mu"]}} if cfg.method == "fedprox_grpo" else {}
    return _table({**{k: {"this run": values[k]} for k in SETTINGS}, **prox})


# -- §1: the clip, token by token -------------------------------------------------------------------------------------
def grpo_settings(cfg) -> None:
    """The local step's settings that §1 explains, in one line: the clip range, the passes over each batch (ρ ≠ 1
    only after the first), the loss type, β, the learning rate and whether Adam restarts each round."""
    k = cfg.num_iterations
    passes = ("only pass 2 sees ρ ≠ 1" if k == 2 else f"passes 2–{k} see ρ ≠ 1") if k > 1 else \
        "ρ = 1 always: the clip never acts"
    print(f"ε = {cfg.epsilon:g}, ε_high = {cfg.epsilon_high:g}: clip range [{1 - cfg.epsilon:.2f}, "
          f"{1 + cfg.epsilon_high:.2f}];  num_iterations = {k} ({passes});  loss_type = {cfg.loss_type!r};  "
          f"β = {cfg.beta:g};  learning_rate = {cfg.learning_rate:g};  reset_optimizer = {cfg.reset_optimizer}")


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


def update_geometry(run) -> pd.DataFrame:
    """Per round, from the kept messages: how the clients' updates Δ_k = U_k D_k − U D (every adapted weight's
    product, concatenated, as :func:`fedrl_kit.lora_factors.factor_round` takes them) lie to each other. Columns: the
    mean, smallest and largest cosine between two clients' updates; the longest update over the shortest, minus 1;
    and √Σ_k w_k², the agreement that updates of equal length at right angles give with the server's weights."""
    replies = [m for m in run.runtime.messages if m.kind == "fit_result"]
    sent = {m.round: m.payload["adapter"] for m in run.runtime.messages if m.kind == "fit"}
    rows = {}
    for r in sorted({m.round for m in replies}):
        mine = [m for m in replies if m.round == r]
        w = np.array([run.server.sizes[m.sender] for m in mine], dtype=np.float64)
        w /= w.sum()
        start = sent[r]
        downs = sorted(k for k in start if "lora_A" in k)

        def product(state, kd):
            return state[kd.replace("lora_A", "lora_B")].astype(np.float64) @ state[kd].astype(np.float64)

        base = {kd: product(start, kd) for kd in downs}
        V = np.array([np.concatenate([(product(m.payload["adapter"], kd) - base[kd]).ravel() for kd in downs])
                      for m in mine])  # [clients, every UD entry]
        length = np.linalg.norm(V, axis=1)
        moved = V[length > 0] / length[length > 0, None]  # a client none of whose groups had spread did not move
        pairs = np.triu_indices(len(moved), 1)
        cos = (moved @ moved.T)[pairs] if len(moved) > 1 else np.array([np.nan])
        rows[r] = {"cosine, mean of pairs": cos.mean(), "cosine, smallest": cos.min(), "cosine, largest": cos.max(),
                   "length spread": length.max() / length.min() - 1 if length.min() > 0 else np.nan,
                   "√Σw_k²": float(np.sqrt((w ** 2).sum()))}
    return pd.DataFrame(rows).T.rename_axis("round")


def round_table(gaps, geometry: pd.DataFrame) -> pd.DataFrame:
    """Per round (columns): the clients' agreement, the mean cosine between two clients' updates, and the factor gap
    over the round's mean update."""
    rows = {"agreement a": gaps["agreement of updates"], "cosine of two clients' updates (mean)":
            geometry["cosine, mean of pairs"], "‖gap‖ / ‖mean update‖": gaps["gap / round's update"]}
    return pd.DataFrame(rows).round(3).T.rename_axis(columns="round")


def round_words(gaps, geometry: pd.DataFrame, cfg) -> Markdown:
    """The agreement beside its right-angle reference √Σw_k², the cosines that explain it, the server's shorter step,
    and the factor gap, in short sentences."""
    a, u = gaps["agreement of updates"].dropna(), gaps["gap / round's update"].dropna()
    ref, steps = geometry["√Σw_k²"], cfg.local_steps
    near = a.max() - ref.max() < 0.15
    cos = (f"{geometry['cosine, smallest'].min():.2f} to {geometry['cosine, largest'].max():.2f} "
           f"(mean {geometry['cosine, mean of pairs'].mean():.2f})").replace("-", "−")
    points = [f"The agreement was {a.min():.2f}–{a.max():.2f}, {'just above' if near else 'well above'} √Σw_k² = "
              f"{ref.mean():.2f}: what updates of equal length at right angles give with this run's weights (the "
              f"clients' update lengths differed by at most {geometry['length spread'].max():.0%}).",
              f"Two clients' updates had cosine {cos}"
              + (": nearly orthogonal, as noise-dominated updates are (§2)." if near else "."),
              f"The server's step was therefore about {a.mean():.0%} as long as a client's own. That acts like a "
              "smaller learning rate.",
              f"Central-GRPO takes {steps} step{'s' if steps > 1 else ''} per round on "
              f"{cfg.num_clients * cfg.prompts_per_step} prompts each. It has nothing to average away. This is one "
              "simple reason federation starts slower.",
              f"Averaging factors missed the mean update by {u.min():.0%}–{u.max():.0%} of its length. That error is "
              "real but second order."]
    return Markdown("\n".join(f"- {x}" for x in points))


TRAIN = {"accuracy": "train reward"}
"""the client records' ``accuracy`` (mean reward on the client's own rollouts), as the notebook names it"""


def client_grid(records: list[dict]):
    """Every client's local training by round, one column each, one quantity per row: on top its train reward (the
    records' ``accuracy``: mean reward on its own rollouts) with the global test pass@1 dashed for reference (both
    fractions of answers right), below its frac_zero_std (a fraction of groups)."""
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


def takeaways(runs: dict[str, list[dict]], name: str, scores: dict[str, pd.DataFrame], gaps, greedy: pd.Series,
              answers: pd.DataFrame, geometry: pd.DataFrame | None = None) -> Markdown:
    """What this run shows, at most five points in one box, each built from the run's numbers: what was learnt and how
    (sampled pass@1 beside greedy accuracy: sharpening or new answers), what federation cost against Central-GRPO,
    why (the agreement), and the unrewarded format. Every ± is two SE over problems, paired where two models answer
    the same problems."""
    from fedrl_kit.notebook import headline
    from fedrl_kit.rewards.format import is_well_formatted

    h, s = headline(runs[name]), scores[name]
    federated = name != "Central-GRPO"  # Central-GRPO alone: one client holding all the data, nothing averaged
    gain, noise = 100 * (h["final pass@1"] - h["base pass@1"]), 200 * _se(s.iloc[:, -1] - s.iloc[:, 0])
    g = greedy_change(answers, greedy)
    up, learnt_anything = g["verdict"] == "higher", gain > noise
    head = (f"{name} learnt, " + ("and not only by sharpening." if up else "mostly by sharpening.") if learnt_anything
            else f"{name} did not clearly learn.")
    sampled = (f" Sampled pass@1 went from {100 * h['base pass@1']:.1f} % to {100 * h['final pass@1']:.1f} % "
               f"({gain:+.1f} ± {noise:.1f} points, {'beyond' if learnt_anything else 'within'} the noise)"
               + (", though no client sent a problem or an answer." if federated else "."))
    if up:
        tail = f" Greedy test accuracy rose too ({g['words']}). So it also learnt answers it did not give before."
    else:
        tail = (f" Greedy test accuracy did not rise ({g['words']}), a negative result. The model samples answers it "
                "could already give more often; it learnt few new ones.")
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
        near = (f", just above the {geometry['√Σw_k²'].mean():.2f} of updates at right angles"
                if geometry is not None and a.max() - geometry["√Σw_k²"].max() < 0.15 else "")
        lines.append(f"The clients' updates agreed only {a.min():.2f}–{a.max():.2f}{near}: the averaged step was about "
                     f"{a.mean():.0%} as long as a client's own. {alpha_reading(short=True)}")
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
    why = (f"greedy test accuracy went {g['words']}, while sampled pass@1 rose {gain:+.1f} points. "
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
             f"wrong (net {g['better'] - g['worse']:+d}); those that turned wrong are below.".replace("-", "−")]
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


def turned_wrong(answers: pd.DataFrame) -> pd.DataFrame:
    """The test problems the base answered right greedily and the trained model wrong, with both answers."""
    worse = answers[answers["base right"] & ~answers["trained right"]]
    return worse[["question", "gold", "base answer", "trained answer"]]


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
    w = np.array([len(p) for p in parts], dtype=np.float64)
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
    clients (mean over rounds), its right-angle reference √Σw_k² (:func:`split_reference`) and a's excess over it, the
    final sampled pass@1 with its 95 % Student-t half-width over seeds, the gap to Central-GRPO of the same seed
    (points); the seeds it averages."""
    _, central, runs = _sweep(path)
    rows = {}
    for alpha, mine in runs.items():
        final = [100 * r["final pass@1"] for r in mine]
        rows[f"{alpha:g}"] = {"agreement a": round(float(np.mean([r["a"] for r in mine])), 2),
                              "√Σw_k² (right angles)": round(float(np.mean([r["reference"] for r in mine])), 2),
                              "a − √Σw_k²": round(float(np.mean([r["a"] - r["reference"] for r in mine])), 2),
                              "final pass@1 (%)": round(float(np.mean(final)), 1),
                              "± (95 % t)": round(t_interval(final)[1], 1),
                              "Central − FedAvg (points)": round(100 * float(np.mean(
                                  [central[r["seed"]] - r["final pass@1"] for r in mine])), 1),
                              "seeds": len(mine)}
    return _table(rows).T.rename_axis("Dirichlet α")


def alpha_reading(path: str = ALPHA_FILE, short: bool = False) -> str:
    """The stored α sweep read in sentences: how far the agreement sits above its right-angle reference √Σw_k² at each
    end of the sweep, whether that excess rises from the smallest α to the largest beyond the 95 % Student-t interval
    of the per-seed paired difference (what heterogeneity predicts), and how the reference itself moves with α
    (uneven client sizes raise it). ``short``: the first point alone, in one sentence (the takeaway box)."""
    _, _, runs = _sweep(path)
    lo_a, hi_a = min(runs), max(runs)
    by_seed = {x: {r["seed"]: r for r in runs[x]} for x in (lo_a, hi_a)}
    seeds = sorted(set(by_seed[lo_a]) & set(by_seed[hi_a]))

    def mean(x, f):
        return np.array([f(by_seed[x][s]) for s in seeds])

    excess = {x: mean(x, lambda r: r["a"] - r["reference"]) for x in (lo_a, hi_a)}
    ref, a = ({x: mean(x, lambda r, k=k: r[k]).mean() for x in (lo_a, hi_a)} for k in ("reference", "a"))
    d = excess[hi_a] - excess[lo_a]
    half = t_interval(d)[1]  # the 95 % Student-t half-width over seeds (n − 1 degrees of freedom)
    near = max(abs(excess[lo_a].mean()), abs(excess[hi_a].mean())) < 0.1
    ends = f"{excess[lo_a].mean():+.2f} at α = {_plain(lo_a)}, {excess[hi_a].mean():+.2f} at α = {_plain(hi_a)}"
    if short:
        return ((f"In the stored α sweep it stayed just above its right-angle reference at every α ({ends}): batch "
                 "noise, not the split, keeps it low." if near else
                 f"In the stored α sweep it sat well above its right-angle reference ({ends}).").replace("-0", "−0"))
    points = [(f"At every α the agreement sat just above √Σw_k², its value for equal-length updates at right angles: "
               f"{ends}. The clients' updates were nearly orthogonal whatever the split: batch noise, not "
               "heterogeneity, keeps a low." if near else
               f"The agreement sat well above √Σw_k², its value for equal-length updates at right angles: {ends}.")]
    trend = ("rose" if len(d) > 1 and d.mean() > half else "fell" if len(d) > 1 and d.mean() < -half else
             "did not change clearly")
    points.append(f"The excess {trend} with α ({d.mean():+.2f} ± {half:.2f}, 95 % t interval over {len(seeds)} "
                  "seeds).")
    if a[lo_a] > a[hi_a] and ref[lo_a] > ref[hi_a]:
        points.append(f"a was highest at α = {_plain(lo_a)} ({a[lo_a]:.2f} against {a[hi_a]:.2f}) because uneven client "
                      f"sizes raise √Σw_k² ({ref[lo_a]:.2f} against {ref[hi_a]:.2f}), not because the clients agreed "
                      "more.")
    return "\n".join(f"- {x}" for x in points).replace("-0.", "−0.")


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
