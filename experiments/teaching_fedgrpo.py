"""The sentences, tables and figures notebook 01 (FedGRPO) shows, built here so that each of its cells is a line or
three: the run's settings, the round diagram named after the step-through's experts, the step-through's tables and
notes, the quick run beside Fedpetuning+GRPO, the five findings, and the exercises' answers with their reasons.
Nothing here is algorithm code: it reads traces, runs and stored results (``experiments.findings``)."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from types import SimpleNamespace

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from fedrl_kit import diagrams, notebook, viz
from fedrl_kit.diagrams import Message

REPORT = "11_fedgrpo_report.ipynb"

#: FedGRPO's server step as notebook 01 draws it: the competence query happens once, before round 1 (the answers are
#: cached), so it is drawn as steps 0a (down) and 0b (up); step 3 averages the cached answers over the question's L
#: neighbours
ROUND = replace(
    diagrams.FEDGRPO_AS_TRAINED,
    server=("1 sample G candidate answers ŷ for a question x_s",
            "2 find its L nearest auxiliary questions (eq. 5)",
            "3 competence r_k^p: mean of step 0b's replies over them;",
            "   keep the M most competent clients (eq. 6)",
            "6 reward 8·(experts' mean score) + format → advantages",
            "7 one GRPO step on the server's own policy"),
    messages=(Message("down", "0a all of D_p (questions + labels), once, before round 1"),
              Message("up", "0b Pr[θ_k answers each one right], once (the server caches them)"),
              Message("down", "4 question x_s and its G candidate answers", "the M experts only"),
              Message("up", "5 G scalar scores r_k^s (exact check AE, or model ME)", "the M experts only")))


# -- the setup cell -----------------------------------------------------------------------------------------------
#: the budget of every run, by preset: rounds, server (or local) steps per round, questions per client and step, test
#: samples per problem
SIZES = {"quick": dict(rounds=3, local_steps=1, prompts_per_step=2, eval_samples=2),
         "full": dict(rounds=10, local_steps=2, prompts_per_step=8, eval_samples=4),
         "smoke": dict(rounds=1, local_steps=1, prompts_per_step=1, eval_samples=1)}
#: each client's domain model θ_k: SFT steps on its own data, by preset
SFT_STEPS = {"quick": 30, "full": 60, "smoke": 2}


def setup(ns: dict) -> SimpleNamespace:
    """Notebook 01's setup from its parameters (``ns``: the notebook's ``globals()``): the config, the base policy
    every run shares, and FedGRPO's run with each client's domain model θ_k trained (once). Returns ``cfg``, ``tour``
    (the FedGRPO run), ``policy``, ``run_root``, ``figures``, ``Q`` and ``make_config(preset, method)``, the config
    of another method on the same world, federation and budget."""
    import torch

    from fedrl_kit.config import preset
    from fedrl_kit.fedgrpo.algorithm import questions_per_step
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.runs import Run, resolve_base

    alpha, K = ns["dirichlet_alpha"], ns["num_clients"]

    def make_config(p, method="fedgrpo"):
        size = "smoke" if notebook.is_smoke(ns["preset_name"]) else p
        split = dict(partition="iid") if alpha == "iid" else dict(dirichlet_alpha=float(alpha))
        sections = dict(fedgrpo=dict(neighbours=ns["L"], num_experts=ns["M"]),
                        evaluator=dict(sft_steps=SFT_STEPS[size])) if method == "fedgrpo" else {}
        smoke = notebook.smoke_fields(ns["preset_name"], notebook.SMOKE_SIZES["fedgrpo"],
                                      fixed=("num_clients", *SIZES["quick"]))
        return preset(p, method=method, num_clients=K, seed=ns["seed"], **split, **sections, **SIZES[size], **smoke)

    cfg, run_root, figures = notebook.setup("fedgrpo", ns, make_config, runs="run_root",
                                            folder=dict(k=K, a=alpha, L=ns["L"], M=ns["M"], s=ns["seed"]),
                                            renamed={"beta": "dirichlet_alpha"})  # beta is GRPO's KL coefficient
    policy = Policy.load(resolve_base(cfg.base), cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.chat,
                         cfg.max_new_tokens, cfg.temperature, cfg.device, getattr(torch, cfg.dtype))
    notebook.start_run_dir(run_root / "fedgrpo")
    tour = Run(cfg, run_root / "fedgrpo", progress=False, policy=policy).build()  # the clients train their θ_k here
    return SimpleNamespace(cfg=cfg, tour=tour, policy=policy, run_root=run_root, figures=figures,
                           Q=questions_per_step(cfg), make_config=make_config, alpha=alpha)


def show_setup(lab: SimpleNamespace) -> None:
    """The run's knobs and who holds which data, whole sentences shown."""
    from IPython.display import display

    with pd.option_context("display.max_colwidth", None):
        display(settings_table(lab.cfg, lab.Q, lab.alpha), data_table(lab.tour, lab.policy, lab.Q))


def run_both(lab: SimpleNamespace) -> tuple[dict, dict]:
    """§5: FedGRPO's run and Fedpetuning+GRPO's on the same world, budget and base policy, trained; returns the runs
    and their records."""
    from fedrl_kit.runs import Run

    other = lab.run_root / "fedavg_grpo"
    notebook.start_run_dir(other)
    runs = {"FedGRPO": lab.tour, "Fedpetuning+GRPO": Run(lab.make_config(lab.cfg.preset, "fedavg_grpo"), other,
                                                          progress=False, policy=lab.policy)}
    return runs, {name: run.run() for name, run in runs.items()}


# -- the opening ---------------------------------------------------------------------------------------------------
def paper_gaps(paper: pd.DataFrame) -> Markdown:
    """One sentence: the range of FedGRPO's two gaps over the paper's six settings."""
    a, b = paper["FedGRPO − Fedpetuning+GRPO"], paper["FedGRPO − Central-GRPO"]
    return Markdown(f"In its six settings FedGRPO beats Fedpetuning+GRPO by {a.min():.1f} to {a.max():.1f} points "
                    f"and sits {b.min():+.1f} to {b.max():+.1f} points from Central-GRPO.")


def settings_table(cfg, Q: int, alpha) -> pd.DataFrame:
    """The run's knobs in the papers' symbols, integers as integers."""
    return pd.Series({
        "K clients": cfg.num_clients, "M experts per question": cfg.fedgrpo.num_experts,
        "L neighbours": cfg.fedgrpo.neighbours, "G candidates per question": cfg.num_generations,
        "Q questions per server step": Q, "τ server steps per round": cfg.local_steps, "rounds T": cfg.rounds,
        "ε, ε_high (clip)": f"{cfg.epsilon}, {cfg.epsilon_high}", "KL coefficient (config beta)": f"{cfg.beta:g}",
        "Dirichlet concentration of the split": str(alpha),
        "SFT steps of each domain model θ_k": cfg.evaluator.sft_steps}, name="this run").astype(str).to_frame()


def data_table(run, policy, Q: int) -> pd.DataFrame:
    """Who holds which data and who sees it, with the sizes of this run."""
    cfg, world = run.config, run.server.world
    n_params = sum(w.numel() for n, w in policy.model.named_parameters() if "lora_" not in n)  # the base only
    rows = {
        "training questions D_s": (f"{len(world.queries):,} questions",
                                   "split over the clients by topic; each question's owner (the client holding it) "
                                   "has its label; the server gets the questions pooled, with no label and no owner"),
        "auxiliary questions D_p": (f"{len(world.aux)} labelled questions",
                                    "the server's; sent with their labels to every client once, to measure "
                                    "competence"),
        "test set": (f"{len(world.test)} problems × {cfg.eval_samples} samples", "the server's; pass@1 is measured "
                     f"on it, in steps of 1/{len(world.test) * cfg.eval_samples}"),
        "Q": (f"{Q} = {cfg.prompts_per_step} × {cfg.num_clients}",
              f"questions per server step: {cfg.prompts_per_step} per client × K, as many as one local step of "
              "Fedpetuning+GRPO's K clients takes (the same budget)"),
        "φ": ("a vector per question", "the frozen encoder: the base policy's hidden states after decoder layer "
              f"{cfg.fedgrpo.encoder_layer}, averaged over tokens, unit length"),
        "server policy π_θg": (f"{n_params / 1e6:.1f} M parameters", "the tiny transformer of notebook 00; θ_g is "
                               "its LoRA adapter, the only thing trained during the rounds"),
    }
    return pd.DataFrame(rows, index=["size", "who holds it, who sees it"]).T


def round_diagram(tr: dict, client_ids: list[str]) -> diagrams.Diagram:
    """:data:`ROUND` with three client boxes: the step-through question's two experts and one client that only steps
    0a–0b reach (hence its line to the server)."""
    experts = [client_ids[k] for k in tr["experts"]]
    idle = next(c for c in client_ids if c not in experts)
    first, last = (experts + experts)[:2]
    svg = diagrams.named_round_diagram(ROUND, [first, idle, last]).svg.replace(f"… {last}<", f"{last}<", 1)
    others = len(client_ids) - 3
    return diagrams.Diagram(svg.replace("(not an expert here)", f"(steps 0a–0b only, like the {others} others)", 1))


# -- §4, the step-through ------------------------------------------------------------------------------------------
def competence_table(tr: dict, run) -> pd.DataFrame:
    """Eq. 6 for the traced question: each client's r_k^p, its share of data in the question's topic (simulator
    truth), and whether it is an expert."""
    share = [sum(t == tr["topic"] for t in p["topic"]) / len(p) for p in run.partitions]
    return pd.DataFrame({"r_k^p": tr["competence"], "topic share": share,
                         "expert": ["✔" if k in tr["experts"] else "" for k in range(len(share))]},
                        index=list(run.runtime.client_ids)).round(3)


def non_holder_note(tr: dict, run, policy) -> Markdown:
    """The competence of the clients that hardly hold the question's topic (< 10 % of their data), beside the base
    model's own score on the same L neighbours (no client's adapter): what a non-holder's r_k^p measures."""
    from fedrl_kit.rewards import normalise_answer
    from fedrl_kit.sft import completion_logprob

    share = np.array([sum(t == tr["topic"] for t in p["topic"]) / len(p) for p in run.partitions])
    low = np.asarray(tr["competence"])[share < 0.1]
    aux = run.server.world.aux
    idx = pd.DataFrame(tr["neighbours"])["index"].astype(int).tolist()  # the L neighbours (eq. 5)
    qs, ys = [list(aux["prompt"])[j] for j in idx], [normalise_answer(str(list(aux["answer"])[j])) for j in idx]
    with policy.reference():  # the frozen base: every adapter off
        base = float(np.exp(completion_logprob(policy, qs, ys)).mean())
    said = (f"The {len(low)} clients with under 10 % of their data in `{tr['topic']}` still score r_k^p = "
            f"{low.min():.2f}–{low.max():.2f}. The base model alone scores {base:.2f} on the same {len(idx)} "
            "neighbours. ")
    if low.max() - base <= 0.1:
        said += "So a non-holder's competence mostly measures the base model's own skill, not what the client learned."
    else:
        said += ("So a non-holder's competence measures general skill, the base model's plus what SFT on other "
                 "arithmetic adds. It does not show knowledge of the question's topic.")
    return Markdown(said)


def candidate_table(tr: dict, run) -> pd.DataFrame:
    """The traced question's G candidates: truth (for the reader), format f_j, each expert's score r_k^s (with its
    pathway), their mean μ_r, the trained reward r̃_j = 8·μ_r + f_j and its advantage A_j (GRPO's standardisation of
    r̃ over the G rows), so that A_j reads straight off the table."""
    cids = run.runtime.client_ids
    df = pd.DataFrame({"candidate": tr["candidates"], "correct": tr["correct"].astype(bool),
                       "f_j": tr["format"].astype(int)})
    for row, k in enumerate(tr["experts"]):
        df[f"r^s {cids[k]} ({tr['pathways'][row]})"] = tr["scores"][row]
    four = [c for c in df.columns if c.startswith("r^s")]  # 4 significant figures: a 0.00005 is not a 0
    df[four] = df[four].map(lambda v: f"{v:.4g}")
    mu = np.asarray(tr["scores"]).mean(axis=0)  # [G]
    df["μ_r"] = [f"{v:.4g}" for v in mu]
    df["r̃_j"] = np.round(8 * mu + tr["format"], 3)
    df["A_j"] = np.round(tr["advantages"]["paper"], 3)  # the package's variant "paper": r̃_j = 8·μ_r + f_j
    return df


def eq9_line(tr: dict) -> str:
    """Eq. 9 as printed, on the traced scores: the range of |R_k| over the rows where the experts disagree (0 where
    they agree) and the largest row sum (≈ 0)."""
    r, scores = np.asarray(tr["eq9"]), np.asarray(tr["scores"])  # [M, G], [M, G]
    split = np.ptp(scores, axis=0) > 0  # [G] the rows where the experts disagree
    said = "Eq. 9 as printed, on these scores: "
    if split.any():
        a = np.abs(r[:, split])
        said += (f"|R_k| = {a.min():.2f}–{a.max():.2f} on the {int(split.sum())} of {len(split)} rows the experts "
                 "split, ")
    said += (f"and each row's R_k sum to {np.abs(r.sum(axis=0)).max():.0f}: they say only which expert scored higher, "
             "not whether the answer is right.")
    return said


def top_advantage_note(tr: dict) -> Markdown:
    """Which candidate the traced step pushes up most, and why (expert scores or the format bonus)."""
    adv, right, fmt = tr["advantages"]["paper"], tr["correct"], tr["format"]
    top, mu = int(np.argmax(adv)), tr["scores"].mean(axis=0)
    said = f"The top advantage, {adv[top]:.3f}, goes to row {top}: {'right' if right[top] else 'wrong'} and " \
           f"{'formatted' if fmt[top] else 'unformatted'}."
    if not right[top] and fmt[top]:
        said += (f" The experts' mean scores span only {mu.min():.3f}–{mu.max():.3f}, so 8·μ_r moves a candidate by "
                 f"at most {8 * np.ptp(mu):.2f} while formatting adds 1: **when no expert can vouch for an answer, "
                 "the reward teaches the format, right or wrong.**")
    elif right[top]:
        said += " The experts' scores put the right answer first: the case the method is built for."
    return Markdown(said)


def find_ae_case(run, question: int, L: int, M: int, seed: int, tries: int = 80) -> dict:
    """The trace of the first question after ``question`` with right and wrong candidates where an AE expert
    scores a right one 1 (the case the method is built for)."""
    from fedrl_kit.fedgrpo.diagnostics import trace_question

    last = None
    for q in range(question + 1, min(question + tries, len(run.server.world.queries))):
        last = trace_question(run.server, q, L=L, M=M, seed=seed, truth=run.truth)
        ok = last["correct"] > 0
        if 0 < ok.sum() < len(ok) and any(p == "AE" and last["scores"][i][ok].max() == 1
                                          for i, p in enumerate(last["pathways"])):
            last["index"] = q
            return last
    last["index"] = q
    return last


def ae_case_note(tr: dict, run) -> Markdown:
    """Each expert's mean score on right and wrong candidates, and a right-unformatted against a wrong-formatted
    candidate's advantage: do the experts outvote the format bonus?"""
    ok, f, adv, cids = tr["correct"] > 0, tr["format"] > 0, tr["advantages"]["paper"], run.runtime.client_ids
    if not ok.any():
        return Markdown("No question in this range had a right candidate in this run.")
    parts = [f"{cids[k]} ({p}) gives right candidates {tr['scores'][i][ok].mean():.3f} on average, wrong ones "
             f"{tr['scores'][i][~ok].mean():.3f}" for i, (k, p) in enumerate(zip(tr["experts"], tr["pathways"]))]
    said = f"Question {tr['index']}, {tr['question']!r} (answer {tr['answer']}): " + "; ".join(parts) + "."
    ru, wf = np.flatnonzero(ok & ~f), np.flatnonzero(~ok & f)
    if len(ru) and len(wf):
        i, j = max(ru, key=lambda r: adv[r]), min(wf, key=lambda r: adv[r])
        said += (f" Row {i} is right but unformatted (A = {adv[i]:+.3f}), row {j} wrong but formatted "
                 f"(A = {adv[j]:+.3f}): " + ("the experts outvote the format bonus." if adv[i] > adv[j]
                                             else "the format bonus wins here."))
    return Markdown(said + " " + eq9_line(tr))


def owner_rate(run, sq: dict) -> tuple[float, float]:
    """The share of D_s questions whose owner (the one client holding the label, so the only possible AE expert) is
    among the chosen experts, and the share random choice of as many experts would give (M/K)."""
    owner, experts = run.truth.fact("queries").owner, np.asarray(sq["experts"])  # [N_s], [N_s, M]
    return float(np.mean([o in e for o, e in zip(owner, experts)])), experts.shape[1] / len(run.runtime.client_ids)


def selection_line(run, sq: dict, L: int, M: int) -> str:
    """Eqs. 5–6 on every question of D_s at (L, M): topic hit rate and owner rate, each beside random choice's."""
    own, own_random = owner_rate(run, sq)
    n = len(sq["experts"])
    return (f"L = {L}, M = {M}, over all {n} questions of D_s: chosen experts holding the question's topic (≥ 10 % of their data) "
            f"{sq['hit_rate_major']:.3f} per expert slot (random choice: "
            f"{sq['random_hit_rate_major']:.3f}); owner among the chosen experts {own:.3f} per question (random "
            f"choice: {own_random:.3f})")


def _topic_lift(run, policy) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The confidence graph's edge weights: each client's mean competence r_k^p per topic of D_p ``[K, T]``, and the
    base model's own score per topic ``[T]`` (no adapter), computed once per run."""
    if getattr(run, "_topic_lift", None) is None:
        from fedrl_kit.fedgrpo.algorithm import server_state
        from fedrl_kit.fedgrpo.expert_selection import topic_competence
        from fedrl_kit.rewards import normalise_answer
        from fedrl_kit.sft import completion_logprob

        aux = run.server.world.aux
        topics, comp = topic_competence(server_state(run.server).cache.as_matrix(), list(aux["topic"]))  # [K, T]
        with policy.reference():  # the frozen base: every adapter off
            base = np.exp(completion_logprob(policy, list(aux["prompt"]),
                                             [normalise_answer(str(a)) for a in aux["answer"]]))
        base_t = np.array([base[np.asarray(aux["topic"]) == t].mean() for t in topics])  # [T]
        run._topic_lift = (list(topics), comp, base_t)
    return run._topic_lift


def selection_figure(run, policy, question: int, experts) -> object:
    """The confidence graph as a heatmap: each client's mean competence per topic of D_p minus the base model's score
    there (so an easy topic does not look like expertise; within a column the shift is the same for every client, so
    the column's ranking is competence's), the question's topic column outlined and its experts' cells boxed."""
    import plotly.graph_objects as go

    topics, comp, base_t = _topic_lift(run, policy)
    lift, cids = comp - base_t[None, :], list(run.runtime.client_ids)
    row = run.truth.fact("queries").rows[int(question)]
    t = topics.index(row["topic"])
    fig = go.Figure(go.Heatmap(z=lift, x=topics, y=cids, zmid=0, colorscale="RdBu", text=np.round(lift, 2),
                               texttemplate="%{text}", colorbar=dict(title="r_k^p − base")))
    fig.add_shape(type="rect", x0=t - 0.5, x1=t + 0.5, y0=-0.5, y1=len(cids) - 0.5, line=dict(width=2, dash="dot"))
    for k in experts:
        fig.add_shape(type="rect", x0=t - 0.5, x1=t + 0.5, y0=int(k) - 0.5, y1=int(k) + 0.5, line=dict(width=4))
    fig.update_yaxes(autorange="reversed", title_text="client")
    fig.update_xaxes(title_text="topic of D_p (base model's score: "
                     + ", ".join(f"{n} {b:.2f}" for n, b in zip(topics, base_t)) + ")")
    fig.update_layout(height=400, margin=dict(t=60), title=f"question {question}, {row['prompt']!r} (topic "
                      f"{row['topic']}, dotted): its experts by eq. 6 (boxed) "
                      + ", ".join(cids[int(k)] for k in experts))
    return fig


def selection_knobs(run, policy, question: int, L: int, M: int, figures) -> tuple:
    """The update function and the sliders (question, L, M) of the confidence-graph view: eqs. 5–6 on every question
    of D_s at (L, M), one line of how often the experts hold the topic or own the question, and the heatmap of
    :func:`selection_figure` for the chosen question. ``update(..., static=True)`` displays the figure with its PNG and
    stores it under ``figures`` (for a notebook read without a kernel)."""
    import ipywidgets as widgets

    from fedrl_kit.fedgrpo.diagnostics import selection_quality

    n, K = len(run.server.world.queries), len(run.runtime.client_ids)

    def update(question, L, M, static=False):
        sq = selection_quality(run.server, run.truth, L=L, M=M)  # eqs. 5–6 for every question of D_s
        print(selection_line(run, sq, L, M))
        fig = selection_figure(run, policy, question, sq["experts"][question])
        if static:
            viz.export(fig, "fedgrpo_confidence_graph", figures)
            display(fig)
        else:
            fig.show(renderer="plotly_mimetype")

    slider = lambda v, lo, hi: widgets.IntSlider(v, lo, hi, continuous_update=False)  # noqa: E731
    return update, dict(question=slider(question, 0, n - 1), L=slider(L, 1, len(run.world.aux)), M=slider(M, 1, K))


# -- §4, what the server learns about the clients ---------------------------------------------------------------------
def _all_zero_one(row) -> bool:
    row = np.asarray(row, dtype=float)
    return bool(np.all((row == 0.0) | (row == 1.0)))


def privacy_note(traces: dict, run) -> Markdown:
    """What a curious server reads in the scores of the traced questions (a row of exact 0s and 1s: its expert owns
    the question, and its 1s mark the label), checked against the simulator's owners; and the stored measurement of
    that rule under the default ME score and under 0/1 agreement (benchmarks/results/fedgrpo_ownership_leak.json).
    ``traces``: {index into D_s: its ``trace_question``}."""
    from fedrl_kit.rewards import extract_answer, normalise_answer

    cids, owner = run.runtime.client_ids, run.truth.fact("queries").owner
    parts = []
    for q, tr in traces.items():
        flagged = [cids[k] for row, k in zip(tr["scores"], tr["experts"]) if _all_zero_one(row)]
        ones = sorted({normalise_answer(extract_answer(c) or "") for row, k in zip(tr["scores"], tr["experts"])
                       if _all_zero_one(row) for c, v in zip(tr["candidates"], row) if v == 1.0})
        who = cids[int(owner[q])]
        said = (f"in question {q} only {who}'s row is all 0s and 1s, and {who} owns it" if flagged == [who] else
                f"in question {q} the all-0/1 rows are {', '.join(flagged) or 'none'}'s and the owner is {who}")
        if ones:
            said += f"; its 1s mark answer {', '.join(ones)}, the label ({tr['answer']})"
        parts.append(said)
    runs = _stored("fedgrpo_ownership_leak.json")["runs"]

    def rate(arm):
        rs = [r for r in runs if r["arm"] == arm]
        own, oth = sum(r["owner_pairs"] for r in rs), sum(r["pairs"] - r["owner_pairs"] for r in rs)
        return (f"{sum(r['owners_flagged'] for r in rs)} of {own} owners' rows and "
                f"{sum(r['others_flagged'] for r in rs)} of {oth} other experts' rows")

    return Markdown("**Scores.** The rule *a row of exact 0s and 1s comes from the owner*: " + "; ".join(parts)
                    + f". On a stored run (K = 4, 2 seeds) this rule flags {rate('probability')}. With "
                    "`fedgrpo.me_score = \"agreement\"` an ME score is 1 if the answer is θ_k's own greedy answer, "
                    f"else 0; the rule then flags {rate('agreement')}, so it no longer singles out owners.")


def topic_guess_table(run) -> pd.DataFrame:
    """What the competence replies alone tell the server about each client's data (:func:`server_view`), with a
    one-line count of how often its guess of a client's main topic is right."""
    from fedrl_kit.fedgrpo.diagnostics import server_view

    v = server_view(run.server, run.truth)
    right = int(v["guessed right"].sum())
    display(Markdown(f"**Competence replies.** The server's guess of each client's main topic (where the client beats "
                     f"the average client most) is right for {right} of {len(v)} clients here:"))
    return v[["server's guess: its topic", "true largest topic", "its share of the data", "guessed right"]]


# -- §5, run it ----------------------------------------------------------------------------------------------------
def quick_run_table(runs: dict, records: dict) -> pd.DataFrame:
    """Base model, then each run's rounds and final format rate (pass@1 is left out: a few rounds move it by a few
    test samples, within noise)."""
    head = {name: notebook.headline(recs) for name, recs in records.items()}
    first = next(iter(head.values()))
    if len({h["base format"] for h in head.values()}) != 1:
        raise ValueError("the runs did not start from the same model")
    rows = {"base model (before training)": dict(rounds=0, fmt=first["base format"])}
    for name in runs:
        rows[name] = dict(rounds=head[name]["rounds"], fmt=head[name]["final format"])
    df = pd.DataFrame(rows).T.rename(columns={"fmt": "format rate"})
    return df.astype({"rounds": int, "format rate": float})


def quick_run_note(table: pd.DataFrame, cfg) -> Markdown:
    """The lesson a few rounds do show: FedGRPO's reward teaches the format first."""
    base, fed, avg = table.iloc[0], table.loc["FedGRPO"], table.loc["Fedpetuning+GRPO"]
    return Markdown(
        f"In {cfg.rounds} rounds FedGRPO's format rate rises from {base['format rate']:.3f} to "
        f"{fed['format rate']:.3f}: its reward pays +1 for the format on every question. Fedpetuning+GRPO's, whose "
        f"reward pays only for a right answer, ends at {avg['format rate']:.3f}. pass@1 is left out: a few rounds "
        "move it by a few test samples, which is noise.")


def reward_terms(records: dict, cfg) -> pd.DataFrame:
    """FedGRPO's trained reward r̃ = 8·μ_r + 1·f split into its two terms, per round, from the run's server records
    (means over the round's training candidates): the expert term 8·μ_r, the format term 1·f, and the expert term's
    edge for a right answer, 8 × (μ_r of right − μ_r of wrong candidates of the same question) (the format term's
    edge is always 1)."""
    rows = {int(r["round"]): {"expert term 8·μ_r": 8 * r["reward_mean"], "format term 1·f": r["format"],
                              "expert edge 8·(μ̄_r right − μ̄_r wrong)": 8 * r.get("reward_gap", float("nan")),
                              "right candidates": r.get("candidate_accuracy"),
                              "questions with no right candidate": r.get("no_right_share", float("nan"))}
            for r in records["FedGRPO"] if r.get("client") == "server" and "reward_mean" in r}
    return pd.DataFrame(rows).T.rename_axis("round").round(3)


def reward_terms_note(terms: pd.DataFrame) -> Markdown:
    """Plain sentences reading :func:`reward_terms`: which term is larger on average, and which separates
    candidates."""
    e, f, edge = (terms.iloc[:, i] for i in range(3))
    bigger = "larger than" if (e > f).all() else "smaller than" if (e < f).all() else "about as large as"
    said = (f"On average the expert term ({e.min():.2f}–{e.max():.2f}) is {bigger} the format term "
            f"({f.min():.2f}–{f.max():.2f}). But an advantage depends only on how candidates of one question differ. "
            f"There a right answer gains {edge.min():.2f}–{edge.max():.2f} from the experts, ")
    said += "while a formatted one gains 1. "
    right = terms["right candidates"]
    none = terms["questions with no right candidate"]
    if (edge > 1).all():
        said += (f"So the experts do pay more for being right. But only {right.min():.2f}–{right.max():.2f} of the "
                 "candidates are right. ")
    else:
        said += "So the format pays more than being right. "
    said += (f"On {none.min():.2f}–{none.max():.2f} of the questions no candidate is right: there the experts can only "
             "rank wrong answers, and the format bonus, while some candidates still lack the format, decides the "
             "advantage.")
    return Markdown(said)


def quick_run_figure(records: dict, figures):
    """The format rate per round of the quick runs (the share of test answers in the expected format), axis 0–1."""
    fig = viz.curves(records, "format", title="format rate of the test answers per round (round 0: the base model)")
    fig.update_yaxes(range=[0, 1], title_text="format rate")
    fig.update_xaxes(dtick=1)  # rounds are whole numbers
    fig.update_layout(legend_title_text="method", height=330)
    viz.export(fig, "fedgrpo_format", figures)
    return fig


def score_bytes(run, other, M: int) -> Markdown:
    """The paper's Figure 2 for this run in one sentence: both methods' bytes (up and down), and FedGRPO's score
    bytes by the formula T·τ·Q·M·G·8, checked against the ledger."""
    from fedrl_kit.fedgrpo.algorithm import questions_per_step

    c, ledger = run.config, run.runtime.ledger
    Q, G = questions_per_step(c), c.num_generations
    formula = c.rounds * c.local_steps * Q * M * G * 8
    scores = [r for r in ledger.records if r["kind"] == "score_result" and r["round"] >= 1]
    if formula != sum(r["nbytes"] for r in scores) - 6 * len(scores):  # each score message carries a 6-byte key
        raise ValueError(f"the ledger's score bytes differ from T·τ·Q·M·G·8 = {formula}")
    ours, theirs = ledger.total_bytes(), other.runtime.ledger.total_bytes()
    return Markdown(f"Traffic (the paper's Figure 2), up and down together: Fedpetuning+GRPO moved {theirs:,} bytes "
                    f"of adapters, {theirs / ours:,.0f}× FedGRPO's {ours:,}, whose experts send back only scores: "
                    f"T·τ·Q·M·G = {c.rounds}·{c.local_steps}·{Q}·{M}·{G} numbers of 8 bytes, {formula:,} bytes.")


# -- what the reproduction found -----------------------------------------------------------------------------------
def _per_seed_mean(cell: str) -> float:
    return float(np.mean([float(x) for x in cell.split(" / ")]))


#: the stored figure's pass@1 panel: every arm, each with its own colour
STORED_ARMS = {"fedgrpo": "#1f77b4", "fedgrpo_random": "#ff7f0e", "fedgrpo_allgt": "#2ca02c",
               "fedavg_grpo": "#9467bd", "central_grpo": "#000000"}


@lru_cache(maxsize=None)
def _stored(name: str) -> dict:
    """A stored result file of benchmarks/results, parsed once per kernel (several cells read the same file)."""
    from experiments.findings import RESULTS

    return json.loads((RESULTS / name).read_text())


def stored_settings() -> pd.DataFrame:
    """One row: the setting of the stored 30-round runs, read from their file."""
    from experiments.findings import fedgrpo_plateaus

    st = _stored("fedgrpo_compare_pool_long30.json")["settings"]
    rounds = fedgrpo_plateaus()["rounds"]
    return pd.DataFrame([{
        "clients K": st["num_clients"], "Dirichlet α": st["dirichlet_alpha"],
        "τ steps per round": st["local_steps"], "Q questions per step": st["prompts_per_step"] * st["num_clients"],
        "questions per round (τ·Q)": st["prompts_per_step"] * st["num_clients"] * st["local_steps"],
        "test samples per problem": st["eval_samples"], "seeds": len(fedgrpo_traces_seeds()),
        "rounds": int(rounds.loc["FedGRPO"]), "rounds, Central-GRPO": int(rounds.loc["Central-GRPO"]),
        "plateau": "mean pass@1 of the last 5 rounds"}], index=["stored runs"])


def fedgrpo_traces_seeds() -> list[int]:
    from experiments.findings import fedgrpo_traces

    return sorted(fedgrpo_traces()["seed"].unique())


def server_format_frame() -> pd.DataFrame:
    """FedGRPO's stored server curves: per (seed, round) the share of its training candidates in the expected
    format, on the seeds of the traces."""
    seeds = set(fedgrpo_traces_seeds())
    runs = _stored("fedgrpo_compare_pool_long30.json")["runs"]
    rows = [{"method": "fedgrpo", "seed": r["seed"], "round": c["round"], "format": c["format"]}
            for r in runs if r["method"] == "fedgrpo" and r["seed"] in seeds for c in r.get("server_curve", [])]
    return pd.DataFrame(rows)


def _band(fig, g: pd.DataFrame, y: str, name: str, colour: str, col: int, legend: bool = True, scale: float = 1.0):
    import plotly.graph_objects as go

    st = (g.groupby("round")[y].agg(["mean", "std"]).fillna(0.0) * scale).reset_index()
    xs = st["round"].tolist()
    r, gr, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    fig.add_trace(go.Scatter(x=xs + xs[::-1], y=(st["mean"] + st["std"]).tolist()
                             + (st["mean"] - st["std"]).tolist()[::-1], fill="toself", line=dict(width=0),
                             fillcolor=f"rgba({r},{gr},{b},0.15)", hoverinfo="skip", showlegend=False), 1, col)
    fig.add_trace(go.Scatter(x=xs, y=st["mean"], mode="lines", name=name, line=dict(color=colour, width=2),
                             showlegend=legend), 1, col)


#: the stored figure's two pass@1 panels: FedGRPO against the baselines, and against our two arms of it
STORED_PANELS = (("FedGRPO against the baselines", ("fedgrpo", "fedavg_grpo", "central_grpo")),
                 ("FedGRPO against our two arms of it", ("fedgrpo", "fedgrpo_random", "fedgrpo_allgt")))


def stored_figure(figures):
    """The stored runs in three panels, pass@1 in points (mean of the seeds, band ±1 SD): FedGRPO beside the two
    baselines, FedGRPO beside its random-experts and every-label arms, and the share of FedGRPO's training candidates
    in the expected format."""
    from plotly.subplots import make_subplots

    from experiments.fedgrpo_claims import METHOD_NAMES
    from experiments.findings import fedgrpo_traces

    t = fedgrpo_traces()
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.05, column_widths=[0.37, 0.37, 0.26],
                        subplot_titles=[title for title, _ in STORED_PANELS] + ["FedGRPO: candidates formatted"])
    shown = set()
    for col, (_, arms) in enumerate(STORED_PANELS, 1):
        for arm in arms:
            _band(fig, t[t["method"] == arm], "pass_at_1", METHOD_NAMES[arm], STORED_ARMS[arm], col,
                  legend=arm not in shown, scale=100)
            shown.add(arm)
    _band(fig, server_format_frame(), "format", "FedGRPO, format", "#1f77b4", 3, legend=False)
    fig.update_yaxes(range=[15, 45], row=1, col=1, title_text="pass@1 (points)")
    fig.update_yaxes(range=[15, 45], row=1, col=2, showticklabels=False)
    fig.update_yaxes(range=[0, 1.05], row=1, col=3, side="right", title_text="share of training candidates")
    fig.update_xaxes(title_text="round")
    fig.update_layout(template=viz.TEMPLATE, height=420, margin=dict(t=80, l=60, r=60, b=40),
                      legend=dict(orientation="h", y=-0.22, x=0, font=dict(size=11)),
                      title=f"stored runs: mean of {t['seed'].nunique()} seeds, band ±1 SD over seeds")
    for a in fig.layout.annotations:
        a.font.size = 12
    viz.export(fig, "fedgrpo_stored_traces", figures)
    return fig


def _central_long30() -> tuple[int, float, float]:
    """The later 30-round Central-GRPO file (same seeds): its seeds, and its rounds 11–15 and 26–30 means, points."""
    runs = [r for r in _stored("fedgrpo_compare_pool_long30_central.json")["runs"] if r["method"] == "central_grpo"]
    def at(lo, hi):
        return 100 * np.mean([np.mean([p for r_, p in r["curve"] if lo <= r_ <= hi]) for r in runs])

    return len(runs), float(at(11, 15)), float(at(26, 30))


def stored_caption() -> Markdown:
    """Plain sentences under the stored figure, every pass@1 in points: which Central-GRPO run is plotted and where a
    longer one ends, Fedpetuning+GRPO still rising, and the early rise and fall of FedGRPO beside its format rate;
    why Fedpetuning+GRPO is strong here."""
    from experiments.findings import fedgrpo_paper_table, fedgrpo_traces

    t = fedgrpo_traces()
    paper = fedgrpo_paper_table()
    gain = paper["Fedpetuning+GRPO"] - paper["Zero-shot"]  # points, the paper's six settings
    mean = 100 * t.groupby(["method", "round"])["pass_at_1"].mean().unstack("method")  # [round, arm], points
    last_c = int(t.loc[t["method"] == "central_grpo", "round"].max())
    at = lambda arm: mean.loc[last_c - 4:last_c, arm].mean()  # noqa: E731  (rounds last_c − 4 … last_c)
    end = int(t["round"].max())
    rf, pf = mean["fedgrpo"].idxmax(), mean["fedgrpo"].max()
    fall = mean.loc[end - 4:end, "fedgrpo"].mean()
    fmt = server_format_frame().groupby("round")["format"].mean()
    full = int(fmt[fmt >= 0.95].index.min())
    n, c_early, c_late = _central_long30()
    return Markdown(
        f"*pass@1 in points (% of test problems); bands ±1 SD over the seeds.*\n\n"
        f"- *Left:* the Central-GRPO curve is the {last_c}-round run of the findings. Its plateau (rounds "
        f"{last_c - 4}–{last_c}), {at('central_grpo'):.1f}, is level with Fedpetuning+GRPO's {at('fedavg_grpo'):.1f} "
        f"there (FedGRPO: {at('fedgrpo'):.1f}). A later {n}-seed Central-GRPO run to round {end}, not plotted, gives "
        f"{c_early:.1f} over rounds 11–15 and {c_late:.1f} over rounds {end - 4}–{end}. Fedpetuning+GRPO is still "
        f"rising: {mean.loc[last_c, 'fedavg_grpo']:.1f} at round {last_c}, {mean.loc[end, 'fedavg_grpo']:.1f} at "
        f"round {end}.\n"
        f"- *Right:* FedGRPO peaks at {pf:.1f} in round {rf} and ends at {fall:.1f} (rounds {end - 4}–{end}); its "
        f"training candidates are {fmt.iloc[0]:.2f} formatted in round {int(fmt.index[0])} and {fmt.loc[full]:.2f} "
        f"by round {full}. So its rise comes while the format is learned; once nearly every candidate is formatted "
        "the format bonus no longer separates candidates, and the gain is not kept.\n"
        f"- *Why Fedpetuning+GRPO is strong here:* it climbs from the base model's {mean.loc[0, 'fedavg_grpo']:.1f} "
        f"to {mean.loc[end, 'fedavg_grpo']:.1f}, while in the paper it gains only {gain.min():+.1f} to "
        f"{gain.max():+.1f} over zero-shot. Likely, from these runs: averaging the clients' adapters costs nothing "
        "at this scale (it is level with Central-GRPO), and each of its rewards is an exact check against a "
        "client's own label. Why averaging costs so much in the paper, our runs do not explain.")


def central_vs_fedgrpo(window: int = 5) -> tuple[int, int, float, float]:
    """Central-GRPO − FedGRPO over Central-GRPO's last ``window`` rounds: the first and last round, the mean of the
    seeds' paired differences in points and its 95 % t half-width."""
    from experiments.findings import fedgrpo_traces
    from experiments.stats import t_interval

    t = fedgrpo_traces()
    hi = int(t.loc[t["method"] == "central_grpo", "round"].max())
    w = t[t["round"].between(hi - window + 1, hi)].groupby(["method", "seed"])["pass_at_1"].mean().unstack("method")
    mean, half, _ = t_interval(100 * (w["central_grpo"] - w["fedgrpo"]).dropna())  # points, paired by seed
    return hi - window + 1, hi, float(mean), float(half)


def findings_box() -> Markdown:
    """At most five one-sentence findings of the stored runs, negative ones said so, each linking the report; every
    comparison names its sign and both plateaus, and a plateau from other rounds says which."""
    from experiments.fedgrpo_claims import METHOD_NAMES, arm_diagnostics, load_arms
    from experiments.findings import (RESULTS, fedgrpo_closing_summary, fedgrpo_findings, fedgrpo_gap_sources,
                                      fedgrpo_plateaus)

    f, paper, plat = fedgrpo_findings(), fedgrpo_closing_summary(), fedgrpo_plateaus()
    rounds, level = plat["rounds"].astype(int), plat["mean"]
    diag = arm_diagnostics([_stored(n) for n in ("fedgrpo_compare_pool_long.json", "fedgrpo_compare_pool_long30.json")],
                           load_arms(RESULTS)).set_index("arm")
    rnd, hit = METHOD_NAMES["fedgrpo_random"], "experts holding the topic (≥ 10 % of D_k)"
    src = fedgrpo_gap_sources()
    d = lambda i: f"{f.iloc[i]['difference']:+.2f} ± {f.iloc[i]['±95% t']:.2f}"  # noqa: E731
    below = lambda i: f"{-f.iloc[i]['difference']:.2f} ± {f.iloc[i]['±95% t']:.2f} points below"  # noqa: E731
    n = int(f.iloc[0]["seeds"])
    end, c_end = int(rounds["FedGRPO"]), int(rounds["Central-GRPO"])
    _, _, c_late = _central_long30()
    st = _stored("fedgrpo_compare_pool_long30.json")["settings"]
    per_round = st["prompts_per_step"] * st["num_clients"] * st["local_steps"]
    quick_round = SIZES["quick"]["prompts_per_step"] * st["num_clients"] * SIZES["quick"]["local_steps"]
    gap_pts = -src.iloc[0]["mean"]  # Fedpetuning+GRPO − FedGRPO, plateau points (the gap finding 4 splits)
    every = "FedGRPO, every client holds every label"
    items = [
        f"**Negative: FedGRPO trails both baselines.** Its plateau, {level['FedGRPO']:.2f}, is {below(0)} "
        f"Fedpetuning+GRPO's {level['Fedpetuning+GRPO']:.2f} (the paper reports {paper.iloc[0]['paper']} above). "
        f"Central-GRPO's plateau, {level['Central-GRPO']:.2f}, is over rounds {c_end - 4}–{c_end}, the last it ran; "
        f"on the same rounds {end - 4}–{end} as FedGRPO, a later Central-GRPO run sits at {c_late:.1f}, still above. "
        f"At this scale keeping data private this way costs accuracy ([report §2]({REPORT})).",
        f"**The traffic claim holds.** Fedpetuning+GRPO sends "
        f"{paper.iloc[3]['here'].split(' (')[0].replace(' less', '')} FedGRPO's bytes, up and down together, "
        "because FedGRPO's clients send back scalar scores instead of adapters; the ratio grows as fewer "
        f"questions are scored per round ({per_round} here, {quick_round} in §5, hence §5's larger ratio) "
        f"([report §6]({REPORT})).",
        f"**Surprising: better experts, no measurable gain.** Competence picks experts who hold the question's topic "
        f"{_per_seed_mean(diag.loc['FedGRPO', hit]):.2f} of the time (random experts: "
        f"{_per_seed_mean(diag.loc[rnd, hit]):.2f}), yet FedGRPO's plateau minus the random-experts arm's is only "
        f"{d(2)} points ({level['FedGRPO']:.2f} against {level[rnd]:.2f}), so with {n} seeds we cannot tell whether "
        "better experts help; our untested guess is that both arms learn little beyond the format bonus they share "
        f"([report §4]({REPORT})).",
        f"**The gap comes from who can check answers.** Letting every client check every answer (all scores AE) "
        f"raises FedGRPO's plateau by {d(3)} points (to {level[every]:.2f}), {src.iloc[3]['mean'] / gap_pts:.0%} of "
        "its gap to Fedpetuning+GRPO, while giving Fedpetuning+GRPO FedGRPO's reward shape (8·accuracy + format) "
        f"changes it within noise: the reward's source matters, not its form ([report §8]({REPORT})).",
        "**Inferred, not measured: why the paper may see no gap.** The paper's released trainer (Liar-Mask/FedGRPO) "
        "starts every client with `training_mode='gt'`, which, as we read its code, scores each candidate against "
        "the dataset's own answer on every client: that is finding 4's every-label arm, not the owner-only "
        f"protocol the paper describes. We read this in the code; we did not run it ([report §4]({REPORT})).",
    ]
    return Markdown("> ### What the reproduction found\n> *Points of pass@1. An arm's plateau is its mean over its "
                    f"last 5 rounds. A difference is the mean over the {n} seeds of each seed's paired difference "
                    f"(same seed, both arms); ± is its 95 % Student-t half-width ({n - 1} degrees of freedom). "
                    "Finding 3's expert rates are the stored runs', averaged over seeds and the questions drawn in "
                    "training, not §4's quick domain models on all of D_s.*\n>\n"
                    + "\n".join(f"> {i}. {t}" for i, t in enumerate(items, 1)))


# -- the exercises' answers and reasons ----------------------------------------------------------------------------
def exercise_experts(run, L: int, M: int, seed: int, topic: str = "mod") -> tuple[list[str], str]:
    """The M experts of the first D_s question of ``topic`` (eqs. 5–6, ``trace_question``), most competent first, and
    why: each one's share of data in the topic (simulator truth) and the question's r_k^p column."""
    from fedrl_kit.fedgrpo.diagnostics import trace_question

    q = int(np.flatnonzero(np.asarray(run.truth.fact("queries").rows["topic"]) == topic)[0])
    tr = trace_question(run.server, q, L=L, M=M, seed=seed, truth=run.truth)
    cids = run.runtime.client_ids
    share = {c: sum(t == topic for t in p["topic"]) / len(p) for c, p in zip(cids, run.partitions)}
    experts = [cids[k] for k in tr["experts"]]
    said = (f"question {q}, {tr['question']!r}, has experts {experts} (most competent first); their shares of data in "
            f"`{topic}`: " + ", ".join(f"{c} {share[c]:.0%}" for c in experts) + ". ")
    outsiders = [c for c in experts if share[c] < 0.1]
    if outsiders:
        said += (f"{' and '.join(outsiders)} {'holds' if len(outsiders) == 1 else 'hold'} almost no `{topic}` data: "
                 "eq. 6 ranks clients by measured skill on the neighbours, and a general skill that SFT on other "
                 "arithmetic gave counts as much as owning the topic")
    from fedrl_kit.fedgrpo.algorithm import server_state
    from fedrl_kit.fedgrpo.expert_selection import topic_competence

    topics, by_topic = topic_competence(server_state(run.server).cache.as_matrix(), list(run.server.world.aux["topic"]))
    column = [cids[k] for k in np.argsort(-by_topic[:, list(topics).index(topic)], kind="stable")[:M]]
    said += (f". The heatmap's `{topic}` column ranks the same top {M}" if column == experts else
             f". The heatmap's `{topic}` column ranks {column} on top instead: it averages all of the topic's "
             f"auxiliary questions, eq. 6 only the question's L = {L} nearest")
    comp = ", ".join(f"{c} {v:.3f}" for c, v in zip(cids, tr["competence"]))
    return experts, said + f". The question's r_k^p (eq. 6): {comp}"


def exercise_format_learnt(tr: dict) -> tuple[str, str]:
    """§4's traced question with every candidate formatted (f_j = 1): the answer of the candidate with the top
    advantage (the package's candidate_advantages), and why (the format term cancels, the experts' scores rank)."""
    from fedrl_kit.fedgrpo.group_reward import candidate_advantages
    from fedrl_kit.rewards import extract_answer, normalise_answer

    scores = np.asarray(tr["scores"])  # [M, G]
    adv = candidate_advantages(scores, "paper", 8.0, np.ones(scores.shape[1]), 1.0)
    top = int(np.argmax(adv))
    answer = normalise_answer(extract_answer(tr["candidates"][top]) or "")
    mu = scores.mean(axis=0)
    said = (f"with every f_j = 1 the format term is the same for every candidate and cancels in A_j, so only "
            f"8·μ_r ranks them: the top μ_r, {mu[top]:.4g}, goes to answer {answer!r} (A = {adv[top]:+.3f}), which is "
            f"{'right' if tr['correct'][top] else 'wrong'} (label {tr['answer']})")
    if not tr["correct"].any():
        said += (". No candidate is right, so an AE expert scores all 0 and the ME expert's probabilities decide: "
                 "once the format is learnt, on such a question the reward pushes up the answer the experts' models "
                 "find most plausible, right or not")
    return answer, said


def server_scores(tr: dict, run) -> pd.DataFrame:
    """What the server receives for one question: each candidate's answer and each expert's G scores, named by
    client (the server knows whom it asked); no truth, no pathway."""
    from fedrl_kit.rewards import extract_answer, normalise_answer

    df = pd.DataFrame({"answer of ŷ_j": [normalise_answer(extract_answer(c) or "") or "(none)"
                                          for c in tr["candidates"]]})
    for row, k in zip(tr["scores"], tr["experts"]):
        df[f"score from {run.runtime.client_ids[k]}"] = [f"{v:.4g}" for v in row]
    df.attrs["question"] = tr["question"]
    return df


def exercise_owner(tr: dict, run) -> tuple[tuple[str, str], str]:
    """Of a question's experts, which one owns it (simulator truth), and its label; why the scores give both away."""
    cids, owner = run.runtime.client_ids, int(run.truth.fact("queries").owner[int(tr["index"])])
    rows = {cids[k]: row for k, row in zip(tr["experts"], tr["scores"])}
    flagged = [c for c, row in rows.items() if _all_zero_one(row)]
    mine = "all exact 0s and 1s (the AE check)" if cids[owner] in flagged else "not all 0 or 1"
    other = "also all 0 or 1" if len(flagged) > 1 else "probabilities strictly between (ME)"
    said = (f"{cids[owner]} owns it. Its row is {mine}; the other expert's row is {other}. The owner scores 1 exactly "
            f"the candidates whose answer is the label, {tr['answer']}: a curious server learns who holds this "
            "question and its label from scalars alone")
    return (cids[owner], str(tr["answer"])), said


def exercise_no_format(tr2: dict) -> tuple[float, str]:
    """§4's AE case with the format weight 0: the wrong candidate's advantage A_j (from the package's own
    candidate_advantages)."""
    from fedrl_kit.fedgrpo.group_reward import candidate_advantages

    wrong = int(np.flatnonzero(tr2["correct"] == 0)[0])
    adv = candidate_advantages(np.asarray(tr2["scores"]), "paper", 8.0, np.asarray(tr2["format"], float), 0.0)
    ok, mu = tr2["correct"] > 0, np.asarray(tr2["scores"]).mean(axis=0)  # [G], [G]
    right = int(ok.sum())
    why = f"with no format reward r̃_j = 8·μ_r, and the experts score only the answer, not its format"
    if right == len(ok) - 1 and np.ptp(mu[ok]) < 1e-9 and mu[~ok].max() < 1e-3:  # one wrong, rights alike
        why += (f": the {right} right candidates get the same r̃, the wrong one about 0, so after standardising the "
                f"wrong one gets −√{right} = {-np.sqrt(right):.3f}, whatever the scores' size")
    why += (f" (candidate_advantages gives {adv[wrong]:.3f}; with the format reward it was "
            f"{tr2['advantages']['paper'][wrong]:.3f})")
    return round(float(adv[wrong]), 3), why


# -- report 11's reading of the gap ----------------------------------------------------------------------------------
def gap_sources_note(gaps: pd.DataFrame) -> Markdown:
    """What :func:`experiments.findings.fedgrpo_gap_sources` says, in words that agree with its intervals: is the
    reward's shape ruled out, how much of the gap the reward's source recovers, and what is left."""
    from experiments.findings import interval_words

    gap, same_gap, shape, source, left = (gaps.iloc[i] for i in range(5))
    words = lambda r: interval_words(r["mean"], r["±95% t"], r["seeds"])  # noqa: E731
    said = [f"On one reward shape the gap is {words(same_gap)}; the shape alone changed Fedpetuning+GRPO by "
            f"{words(shape)}."]
    if abs(shape["mean"]) + shape["±95% t"] < abs(gap["mean"]) - gap["±95% t"]:
        said.append("**The reward's shape is ruled out**: its whole interval is smaller than the gap's.")
    said.append(f"**The reward's source** (exact checks for every score) recovers {source['mean']:+.2f} of the "
                f"{gap['mean']:+.2f} points, {source['mean'] / -gap['mean']:.0%} of the gap; what is left, "
                f"{words(left)}, " + ("may be 0 at this power." if abs(left["mean"]) <= left["±95% t"] else
                                      "is not 0.")
                + " So the source accounts for most of the gap, not provably all: the two methods also differ in "
                "who trains (the clients on their own questions, against the server) and in batch.")
    return Markdown(" ".join(said))
