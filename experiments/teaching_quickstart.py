"""The quickstart notebook's (00) tables, figures and sentences, built from its run so that each notebook cell is a
line or two: settings and results with integers printed as integers, the pass@1 curve with its noise drawn, what
the curve and the round measurements say in words, the client view with its widget, the takeaway box, and the
exercises' answers with their reasons.

One noise rule throughout: a difference counts only beyond two standard errors (about 95 %), where a pass@1 over
``n`` sampled answers has the binomial standard error sqrt(p (1 − p) / n) and a difference of two independent ones
sqrt(2) times that.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from IPython.display import Markdown

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


def settings(cfg) -> pd.DataFrame:
    """The run's sizes (the knobs §1–2 explain), one row."""
    values = cfg.to_dict()
    return _table({k: {"this run": values[k]} for k in SETTINGS})


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


def _se(p: float, n: int) -> float:
    return float(np.sqrt(p * (1 - p) / n))


def results(runs: dict[str, list[dict]], n_answers: int) -> pd.DataFrame:
    """Each method's base and final pass@1 and format rate, its change, and the noise of the final pass@1."""
    from fedrl_kit.notebook import headline

    rows = {}
    for name, recs in runs.items():
        h = headline(recs)
        h["± 2 SE of final pass@1"] = round(2 * _se(h["final pass@1"], n_answers), 3)
        rows[name] = h
    return _table(rows)


def pass_curve(runs: dict[str, list[dict]], n_answers: int):
    """Global pass@1 per round for each method, each point with its ± 2 SE bar, the y axis from 0."""
    from fedrl_kit import viz

    fig = viz.curves(runs, "pass@1", title="global pass@1 on the held-out test split (bars: ± 2 standard errors)")
    for trace in fig.data:
        trace.error_y = dict(type="data", array=[2 * _se(p, n_answers) for p in trace.y], thickness=1)
    top = max(max(t.y) for t in fig.data)
    fig.update_yaxes(range=[0, min(1.0, top + 0.15)], title_text="pass@1 (fraction right)")
    return fig


def _curve(runs: dict[str, list[dict]]) -> pd.DataFrame:
    return pd.DataFrame({name: {r["round"]: r["pass@1"] for r in recs if r["kind"] == "global"}
                         for name, recs in runs.items()})


def reading_the_curve(runs: dict[str, list[dict]], name: str, cfg, n_answers: int, gaps) -> Markdown:
    """What the curve shows, in two or three sentences: where Central-GRPO leads beyond noise, and why the averaged
    step is shorter (the clients' agreement)."""
    curve, lines = _curve(runs), []
    if "Central-GRPO" in curve and name in curve and name != "Central-GRPO":
        lead = 100 * (curve["Central-GRPO"] - curve[name]).iloc[1:]  # points, rounds 1..R
        noise = 100 * 2 * np.sqrt(2) * _se(float(curve.iloc[-1].max()), n_answers)  # 2 SE of a difference
        ahead = lead[lead > noise]
        if len(ahead):
            after = [r for r in lead.index if r > ahead.index.max()]
            lines.append(f"- Central-GRPO led by more than the noise (±{noise:.1f} points, two standard errors of a "
                         f"difference) at round{'s' if len(ahead) > 1 else ''} {', '.join(map(str, ahead.index))}, by "
                         f"up to {lead.max():.1f} points; "
                         + (f"from round {after[0]} on the two curves stay within that noise." if after else
                            "it still did at the last round."))
        else:
            lines.append(f"- The two curves never differ by more than the noise (±{noise:.1f} points, two standard "
                         "errors of a difference).")
        lines.append("- Neighbouring rounds are not independent checks: each model is the last one plus one round, "
                     "so a lead over several rounds is one finding, not several.")
    if gaps is not None and len(gaps) and name != "Central-GRPO":
        agree = gaps["agreement of updates"].dropna()
        lines.append(f"- Why federation starts slower: the server's step is the *average* of the clients' updates, "
                     f"and they point partly apart. Their agreement (length of the mean update over the mean length, "
                     f"1 when all move alike) was {agree.min():.2f}–{agree.max():.2f}, so each round's step was about "
                     f"{agree.mean():.0%} as long as a client's own, like a smaller learning rate. Central-GRPO's step "
                     f"on {cfg.num_clients * cfg.prompts_per_step} prompts has nothing to average away.")
    return Markdown("\n".join(lines) or "- One method ran: nothing to compare it with (Central-GRPO runs beside "
                    "FedAvg-GRPO and FedProx-GRPO).")


def round_table(gaps) -> pd.DataFrame:
    """Per round (columns): the factor gap over the whole adapter and over the round's mean update, and the
    clients' agreement."""
    rows = {"gap / ‖adapter‖": gaps["gap, n_k weights"], "gap / ‖mean update‖": gaps["gap / round's update"],
            "agreement": gaps["agreement of updates"]}
    return pd.DataFrame(rows).round(3).T.rename_axis(columns="round")


def round_words(gaps) -> Markdown:
    """The factor gap in one sentence: how large against the round's step."""
    u = gaps["gap / round's update"].dropna()
    return Markdown(f"- Averaging factors missed the clients' mean update by {u.min():.0%}–{u.max():.0%} of its "
                    "length each round: a real but second-order error next to the shortening by agreement above.")


def client_view(records: list[dict], figures) -> object:
    """Each client's local training by round: the first client drawn as a static figure (exported), then a widget
    that redraws it for any client in a running kernel."""
    import ipywidgets as widgets
    from IPython.display import display

    from fedrl_kit import notebook, viz

    clients = sorted({r["client"] for r in records if r["kind"] == "client"})
    if not clients:
        print("no client trains (zero-shot)")
        return None

    def figure(client):
        mine = [r for r in records if r["kind"] == "global" or r.get("client") == client]
        fig = viz.client_curves(mine, metrics=("accuracy", "frac_zero_std"))
        fig.update_layout(title=f"{client}: its own rollouts per round (global test pass@1 dashed)", height=360)
        fig.update_xaxes(title_text="round")
        fig.update_yaxes(title_text="fraction", range=[-0.03, 1.03])
        return fig

    def show(client):
        figure(client).show(renderer="plotly_mimetype")

    first = figure(clients[0])
    viz.export(first, "quickstart_first_client", figures)
    display(first)
    return notebook.knobs(show, client=widgets.Dropdown(options=clients))


def wire(run) -> pd.DataFrame:
    """The runtime's ledger by message kind and direction: how many messages, and their bytes in all."""
    rows: dict[str, dict] = {}
    for r in run.runtime.ledger.records:
        row = rows.setdefault(f"{r['kind']} ({r['direction']})", {"messages": 0, "bytes": 0})
        row["messages"] += 1
        row["bytes"] += int(r["nbytes"])
    return pd.DataFrame(rows).T.astype(int)


def takeaways(runs: dict[str, list[dict]], name: str, n_answers: int, gaps, greedy: pd.Series,
              answers: pd.DataFrame) -> Markdown:
    """What this run shows, at most five sentences in one box, each built from the run's numbers: what was learnt,
    what federation cost against Central-GRPO, why (the agreement), the unrewarded format, and greedy accuracy."""
    from fedrl_kit.notebook import headline
    from fedrl_kit.rewards.format import is_well_formatted

    h = headline(runs[name])
    federated = name != "Central-GRPO"  # Central-GRPO alone: one client holding all the data, nothing averaged
    lines = [f"{name} took sampled pass@1 from {h['base pass@1']:.3f} to {h['final pass@1']:.3f}"
             + (", though no client sent a problem or an answer." if federated else ".")]
    curve = _curve(runs)
    if "Central-GRPO" in runs and name in curve and federated:
        c = float(curve["Central-GRPO"].iloc[-1])
        noise = 100 * 2 * np.sqrt(2) * _se(float(curve.iloc[-1].max()), n_answers)
        lead = 100 * (curve["Central-GRPO"] - curve[name]).iloc[1:]
        ahead = lead[lead > noise]
        d = 100 * (c - h["final pass@1"])
        early = (f"Central-GRPO, on the pooled data, led beyond the noise at round{'s' if len(ahead) > 1 else ''} "
                 f"{', '.join(map(str, ahead.index))}" if len(ahead) else "Central-GRPO, on the pooled data, never "
                 "led beyond the noise")
        if abs(d) > noise:
            cost = "here federation cost final accuracy." if d > 0 else "here federation ended ahead."
        else:
            cost = "here federation cost speed, not final accuracy." if len(ahead) else "no cost shows at this noise."
        lines.append(early + f" and ended {abs(d):.1f} points {'higher' if d > 0 else 'lower'}, "
                     + ("within the noise" if abs(d) <= noise else "beyond the noise") + f" (±{noise:.1f}): " + cost)
    if gaps is not None and len(gaps) and federated:
        a = gaps["agreement of updates"].dropna()
        lines.append(f"The clients' updates agreed only {a.min():.2f}–{a.max():.2f}, so the averaged step was shorter "
                     "than each client's; whether the non-IID split or the small noisy batches cause that, one seed "
                     "cannot say.")
    formatted = answers["base answer"].map(is_well_formatted)
    right = answers["base right"]
    if formatted.any() and (~formatted).any() and h["final format"] > h["base format"]:
        lines.append(f"The format rate rose {h['base format']:.3f} → {h['final format']:.3f} though format earns no "
                     f"reward: the base's formatted greedy answers were right {right[formatted].mean():.0%} of the "
                     f"time, its unformatted ones {right[~formatted].mean():.0%}"
                     + (", so formatted answers collected more of the positive advantages."
                        if right[formatted].mean() > right[~formatted].mean() else "."))
    g0, g1 = greedy["base (greedy)"], greedy["trained (greedy)"]
    n = len(answers)
    change, noise = round((g1 - g0) * n), 2 * np.sqrt(2) * _se(max(g0, g1), n)
    if g1 - g0 > noise:
        lines.append(f"Greedy accuracy rose too, {g0:.3f} → {g1:.3f} ({change:+d} of {n} problems): the model learnt "
                     "answers it did not give before, not only to sample its best ones more often.")
    else:
        lines.append(f"Negative result: greedy accuracy did not rise ({g0:.3f} → {g1:.3f}, {change:+d} of {n} problems, "
                     f"within ±{noise:.3f}): the sampled gain is sharpening onto answers the model could already give, "
                     "not new problems solved.")
    return Markdown("> **What this run shows** (one seed)\n>\n" + "\n".join(f"> {i}. {s}" for i, s in
                                                                          enumerate(lines[:5], 1)))


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
