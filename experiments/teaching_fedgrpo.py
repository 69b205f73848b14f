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
            "3 competence c_k: mean of step 0b's replies over them;",
            "   keep the M most competent clients (eq. 6)",
            "6 reward 8·(experts' mean score) + format → advantages",
            "7 one GRPO step on the server's own policy"),
    messages=(Message("down", "0a all of D_p (questions + labels), once, before round 1"),
              Message("up", "0b Pr[θ_k answers each one right], once (the server caches them)"),
              Message("down", "4 question x_s and its G candidate answers", "the M experts only"),
              Message("up", "5 G scalar scores s_k (exact check AE, or model ME)", "the M experts only")))


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
        # ME by probability (not the package's 0/1 agreement): the notebook shows the ownership leak it opens
        sections = dict(fedgrpo=dict(neighbours=ns["L"], num_experts=ns["M"], me_score="probability"),
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
    """This run in one paragraph (the policy, who holds what, the step's sizes, the GRPO settings), then the topic
    split."""
    display(setup_summary(lab.cfg, lab.tour, lab.Q, lab.policy), notebook.client_table(lab.tour.partitions))


def policy_size(policy) -> tuple[int, int]:
    """The base policy's layers and parameters, LoRA adapters left out."""
    layers = int(policy.model.config.num_hidden_layers)
    return layers, sum(p.numel() for n, p in policy.model.named_parameters() if "lora_" not in n)


def setup_summary(cfg, run, Q: int, policy=None) -> Markdown:
    """The run's sizes and settings in plain words, with the papers' symbols (and, given ``policy``, its size)."""
    world = run.server.world
    said = ""
    if policy is not None:
        layers, n = policy_size(policy)
        said = (f"The policy (the server's base model, which every LoRA adapter here sits on) is a {layers}-layer "
                f"transformer of {n / 1e6:.2f} M parameters, pretrained by SFT on the world's arithmetic. ")
    return Markdown(
        f"**This run** (preset `{cfg.preset}`, seed {cfg.seed}). {said}K = {cfg.num_clients} clients share "
        f"{len(world.queries):,} training questions D_s by topic (counts below). The server holds "
        f"{len(world.aux)} labelled auxiliary questions D_p and {len(world.test)} test problems "
        f"({cfg.eval_samples} samples each). A server step scores Q = {Q} questions × G = {cfg.num_generations} "
        f"candidates; T = {cfg.rounds} rounds of τ = {cfg.local_steps} step"
        f"{'s' if cfg.local_steps > 1 else ''}. Clip ε = {cfg.epsilon}, ε_high = {cfg.epsilon_high}, KL coefficient "
        f"{cfg.beta:g}; each θ_k: {cfg.evaluator.sft_steps} SFT steps.")


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


def round_diagram() -> diagrams.Diagram:
    """:data:`ROUND` with three client boxes: an expert that owns the question (it checks answers exactly: AE), an
    expert that does not (it scores with its model: ME), and one box for the K − M clients that only steps 0a–0b
    reach. Drawn before any run, so it names roles, not clients."""
    names = ["an expert that owns x_s (AE)", "K − M clients not chosen", "an expert that does not (ME)"]
    svg = diagrams.named_round_diagram(ROUND, names).svg.replace(f"… {names[-1]}<", f"{names[-1]}<", 1)
    return diagrams.Diagram(svg.replace("(not an expert here)", "(steps 0a–0b only)", 1))


# -- §4, the step-through ------------------------------------------------------------------------------------------
def topic_shares(tr: dict, run) -> list[float]:
    """Each client's share of its data in the traced question's topic (simulator truth)."""
    return [sum(t == tr["topic"] for t in p["topic"]) / len(p) for p in run.partitions]


def competence_table(tr: dict, run, r_p=None, experts=None) -> pd.DataFrame:
    """Eq. 6 for the traced question: each client's c_k (``r_p``, as the notebook computes it, checked against the
    trace's; the trace's when not given), its share of data in the question's topic (simulator truth), and whether it
    is an expert (``experts``, checked likewise)."""
    if r_p is None:
        r_p, experts = tr["competence"], tr["experts"]
    if not np.allclose(r_p, tr["competence"]) or [int(k) for k in experts] != [int(k) for k in tr["experts"]]:
        raise ValueError("eq. 6 computed here differs from the trace's server step")
    share = topic_shares(tr, run)
    return pd.DataFrame({"c_k": np.asarray(r_p), "topic share": share,
                         "expert": ["✔" if k in list(experts) else "" for k in range(len(share))]},
                        index=list(run.runtime.client_ids)).round(3)


def non_holder_note(tr: dict, run, policy) -> Markdown:
    """The competence of the clients that hardly hold the question's topic (< 10 % of their data), beside the base
    model's own score on the same L neighbours (no client's adapter): what a non-holder's c_k measures. Says how
    many of them beat the base, and why the heatmap's base score for the topic differs (it averages all of the
    topic's auxiliary questions, not the question's neighbours)."""
    from fedrl_kit.rewards import normalise_answer
    from fedrl_kit.sft import completion_logprob

    share = np.array(topic_shares(tr, run))
    low = np.asarray(tr["competence"])[share < 0.1]
    aux = run.server.world.aux
    nb = pd.DataFrame(tr["neighbours"])
    idx = nb["index"].astype(int).tolist()  # the L neighbours (eq. 5)
    qs, ys = [list(aux["prompt"])[j] for j in idx], [normalise_answer(str(list(aux["answer"])[j])) for j in idx]
    with policy.reference():  # the frozen base: every adapter off
        base = float(np.exp(completion_logprob(policy, qs, ys)).mean())
    above = int((low > base).sum())
    verdict = ("mostly the base model's own skill, not what the client learned" if low.max() - base <= 0.1 else
               "skill (the base model's, plus what SFT on any arithmetic adds), not whether a client holds the topic")
    topics, _, base_t = _topic_lift(run, policy)
    t = tr["topic"]
    n_topic, n_in = int((np.asarray(aux["topic"]) == t).sum()), int((nb["topic"] == t).sum())
    where = f"all {n_topic} `{t}` questions of D_p" if n_in == n_topic else f"{n_in} of D_p's {n_topic} `{t}` questions"
    said = (f"- **Non-holders** (under 10 % of their data in `{t}`, {len(low)} clients): competence "
            f"{low.min():.2f}–{low.max():.2f}; {'all' if above == len(low) else above} beat the base model.\n"
            f"- **Base model** (no adapter) on the same {len(idx)} neighbours: {base:.2f}. So a non-holder's "
            f"competence is {verdict}.\n"
            f"- **The {len(idx)} neighbours**: {where}, plus {len(idx) - n_in} of other topics. The heatmap below "
            f"averages the {n_topic} `{t}` questions only, so there the base scores {base_t[topics.index(t)]:.2f}.")
    return Markdown(said)


def candidate_table(tr: dict, run, mu=None, r_tilde=None, A=None) -> pd.DataFrame:
    """The traced question's G candidates: truth (for the reader), format f_j, each expert's score s_k (with its
    pathway), their mean μ_r, the trained reward r̃_j = 8·μ_r + f_j and its advantage A_j (GRPO's standardisation of
    r̃ over the G rows), so that A_j reads straight off the table. ``mu``, ``r_tilde``, ``A``: the chain as the
    notebook computes it, checked against the package's advantages (computed here when not given)."""
    cids = run.runtime.client_ids
    df = pd.DataFrame({"candidate": tr["candidates"], "correct": tr["correct"].astype(bool),
                       "f_j": tr["format"].astype(int)})
    for row, k in enumerate(tr["experts"]):
        df[f"s_k {cids[k]} ({tr['pathways'][row]})"] = tr["scores"][row]
    four = [c for c in df.columns if c.startswith("s_k ")]  # 4 significant figures: a 0.00005 is not a 0
    df[four] = df[four].map(lambda v: f"{v:.4g}")
    if mu is None:
        mu = np.asarray(tr["scores"]).mean(axis=0)  # [G]
        r_tilde = 8 * mu + tr["format"]
        A = tr["advantages"]["paper"]  # the package's variant "paper": r̃_j = 8·μ_r + f_j
    elif not np.allclose(A, tr["advantages"]["paper"], atol=1e-6):
        raise ValueError("A_j computed here differs from the package's server step")
    df["μ_r"] = [f"{v:.4g}" for v in mu]
    df["r̃_j"] = np.round(r_tilde, 3)
    df["A_j"] = np.round(A, 3)
    return df


def eq9_line(tr: dict) -> str:
    """Eq. 8 as printed, on the traced scores, in plain words: with two experts, each row the experts split gives one
    R_k ≈ +1 and the other ≈ −1 (0 where they agree). Whether they always sum to 0 is Exercise 5's question."""
    r, scores = np.asarray(tr["eq9"]), np.asarray(tr["scores"])  # [M, G], [M, G]
    split = np.ptp(scores, axis=0) > 0  # [G] the rows where the experts disagree
    said = "Eqs. 8–9 as printed would give "
    if split.any() and r.shape[0] == 2:
        a = np.abs(r[:, split])
        said += (f"R_k = +1 to the higher-scoring expert and −1 to the other on each of the {int(split.sum())} rows "
                 f"(of {len(split)}) where the two scores differ (two numbers always standardise to ±1; here |R_k| = "
                 f"{a.min():.2f}–{a.max():.2f}).")
        return said
    return said + f"R_k of at most {np.abs(r).max():.2f} in size."


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
    parts = [f"{cids[k]} ({p}) scores right candidates {tr['scores'][i][ok].mean():.3f} on average, wrong ones "
             f"{tr['scores'][i][~ok].mean():.3f}" for i, (k, p) in enumerate(zip(tr["experts"], tr["pathways"]))]
    said = f"Question {tr['index']}, {tr['question']!r} (label {tr['answer']}): " + "; ".join(parts) + "."
    ru, wf = np.flatnonzero(ok & ~f), np.flatnonzero(~ok & f)
    if len(ru) and len(wf):
        i, j = max(ru, key=lambda r: adv[r]), min(wf, key=lambda r: adv[r])
        said += (f" Row {i}, right but unformatted, gets A = {adv[i]:+.3f}; row {j}, wrong but formatted, gets "
                 f"{adv[j]:+.3f}: " + ("the experts outvote the format bonus." if adv[i] > adv[j]
                                       else "the format bonus wins here."))
    return Markdown(said + " " + eq9_line(tr))


def owner_rate(run, sq: dict) -> tuple[float, float]:
    """The share of D_s questions whose owner (the one client holding the label, so the only possible AE expert) is
    among the chosen experts, and the share random choice of as many experts would give (M/K)."""
    owner, experts = run.truth.fact("queries").owner, np.asarray(sq["experts"])  # [N_s], [N_s, M]
    return float(np.mean([o in e for o, e in zip(owner, experts)])), experts.shape[1] / len(run.runtime.client_ids)


@lru_cache(maxsize=None)
def stored_hit_rates() -> tuple[float, float]:
    """The stored runs' share of expert slots held by a client with ≥ 10 % of its data in the question's topic, over
    the questions they trained on (mean of the seeds): FedGRPO's, random experts'."""
    from experiments.fedgrpo_claims import METHOD_NAMES, arm_diagnostics, load_arms, load_long
    from experiments.findings import RESULTS

    diag = arm_diagnostics(load_long(RESULTS), load_arms(RESULTS)).set_index("arm")
    hit = "experts holding the topic (≥ 10 % of D_k)"
    return _per_seed_mean(diag.loc["FedGRPO", hit]), _per_seed_mean(diag.loc[METHOD_NAMES["fedgrpo_random"], hit])


def selection_line(run, sq: dict, L: int, M: int) -> str:
    """Eqs. 5–6 on every question of D_s at (L, M): topic hit rate and owner rate, each beside random choice's."""
    own, own_random = owner_rate(run, sq)
    n = len(sq["experts"])
    return (f"L = {L}, M = {M}, over all {n} questions of D_s: chosen experts holding the question's topic (≥ 10 % of their data) "
            f"{sq['hit_rate_major']:.3f} per expert slot (random choice: "
            f"{sq['random_hit_rate_major']:.3f}); owner among the chosen experts {own:.3f} per question (random "
            f"choice: {own_random:.3f}). §6's stored runs, whose θ_k had {_stored_sft_steps()} SFT steps (here "
            f"{run.config.evaluator.sft_steps}), reach {stored_hit_rates()[0]:.2f} per expert slot.")


def _topic_lift(run, policy) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The confidence graph's edge weights: each client's mean competence c_k per topic of D_p ``[K, T]``, and the
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
                               texttemplate="%{text}", colorbar=dict(title="mean p_kℓ − base")))
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
def _leak_rates() -> dict[str, tuple[int, int, int, int]]:
    """The stored measurement of the owner rule (benchmarks/results/fedgrpo_ownership_leak.json), by ME score
    ("probability", "agreement"): (owners' rows flagged, owners' rows, other experts' rows flagged, other rows)."""
    runs = _stored("fedgrpo_ownership_leak.json")["runs"]
    out = {}
    for arm in ("probability", "agreement"):
        rs = [r for r in runs if r["arm"] == arm]
        out[arm] = (sum(r["owners_flagged"] for r in rs), sum(r["owner_pairs"] for r in rs),
                    sum(r["others_flagged"] for r in rs), sum(r["pairs"] - r["owner_pairs"] for r in rs))
    return out


def _leak_setting() -> str:
    """The stored leak measurement's setting: its clients and seeds."""
    st = _stored("fedgrpo_ownership_leak.json")["settings"]
    return f"K = {st['num_clients']}, {len(st['seeds'])} seeds"


def competence_note(run) -> Markdown:
    """What the competence replies alone tell the server about each client's data (:func:`server_view`): how often
    its guess of a client's main topic (where the client beats the average client most) is right, and for whom."""
    from fedrl_kit.fedgrpo.diagnostics import server_view

    v = server_view(run.server, run.truth)
    hits = [f"{c}: {v.loc[c, 'true largest topic']}" for c in v.index[v["guessed right"]]]
    return Markdown(f"**Competence replies.** Guessing each client's main topic as the one where it beats the average "
                    f"client most is right for {len(hits)} of {len(v)} clients"
                    + (f" ({', '.join(hits)})" if hits else "") + ": a hint, not a map.")


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
        f"reward pays only for a right answer, ends at {avg['format rate']:.3f}.")


def reward_terms(records: dict, cfg) -> pd.DataFrame:
    """What separates candidates in FedGRPO's trained reward r̃ = 8·μ_r + 1·f, per round, from the run's server
    records: the expert term's **edge** for a right answer, 8 × (mean μ_r of a question's right candidates − mean
    μ_r of its wrong ones), averaged over the questions that have both (the others have no right-wrong edge; the format
    term's edge is always its weight, 1); the share of candidates that are right; the share of questions with no
    right candidate."""
    rows = {int(r["round"]): {"expert edge for a right answer": 8 * r.get("reward_gap", float("nan")),
                              "candidates right": r.get("candidate_accuracy"),
                              "questions with no right candidate": r.get("no_right_share", float("nan"))}
            for r in records["FedGRPO"] if r.get("client") == "server" and "reward_mean" in r}
    return pd.DataFrame(rows).T.rename_axis("round").round(3)


def reward_terms_note(terms: pd.DataFrame) -> Markdown:
    """Plain sentences reading :func:`reward_terms`: where some candidate is right, which term separates more; and
    how often none is."""
    edge, right, none = (terms[c] for c in ("expert edge for a right answer", "candidates right",
                                            "questions with no right candidate"))
    said = (f"Where a question has right and wrong candidates, being right earns {edge.min():.2f}–{edge.max():.2f} "
            "from the experts and being formatted earns 1: ")
    said += "there the experts decide. " if (edge > 1).all() else "the format bonus is about as strong. "
    said += (f"But only {right.min():.2f}–{right.max():.2f} of the candidates are right, and on {none.min():.2f}–"
             f"{none.max():.2f} of the questions none is: there the experts can only rank wrong answers, and the "
             "format bonus decides.")
    return Markdown(said)


def quick_run_figure(records: dict, figures):
    """The format rate per round of the quick runs (the share of test answers in the expected format), axis 0–1."""
    fig = viz.curves(records, "format", title="format rate of the test answers per round (round 0: the base model)")
    fig.update_yaxes(range=[0, 1], title_text="format rate")
    fig.update_xaxes(dtick=1)  # rounds are whole numbers
    fig.update_layout(legend_title_text="method", height=330)
    viz.export(fig, "fedgrpo_format", figures)
    return fig


# -- what the reproduction found -----------------------------------------------------------------------------------
def _per_seed_mean(cell: str) -> float:
    return float(np.mean([float(x) for x in cell.split(" / ")]))


@lru_cache(maxsize=None)
def _stored(name: str) -> dict:
    """A stored result file of benchmarks/results, parsed once per kernel (several cells read the same file)."""
    from experiments.findings import RESULTS

    return json.loads((RESULTS / name).read_text())


#: the stored figure's pass@1 panel: FedGRPO and the two baselines, each with its colour
STORED_ARMS = {"fedgrpo": "#1f77b4", "fedavg_grpo": "#9467bd", "central_grpo": "#000000"}
#: the stored figure's second panel: paired differences a − b, window by window, each with its label and colour
STORED_PAIRS = (("fedgrpo_random", "fedgrpo", "random experts − FedGRPO", "#ff7f0e"),
                ("fedgrpo_allgt", "fedgrpo", "every client holds every label − FedGRPO", "#2ca02c"))
#: the left panel's control arms, dashed and without a band: the two that make FedGRPO's gap vanish
STORED_CONTROLS = {"fedgrpo_allgt": "#2ca02c", "fedgrpo_official": "#8c564b"}


def stored_traces() -> pd.DataFrame:
    """The stored pass@1 curves, one row per (method, seed, round), every arm to round 30 (Central-GRPO from its
    30-round file), each (arm, seed) from the file that trained it longest, on the seeds FedGRPO ran (the frame
    the report's plateau table reads). A copy: the files are read once per process."""
    return _stored_traces().copy()


@lru_cache(maxsize=1)
def _stored_traces() -> pd.DataFrame:
    from experiments.findings import RESULTS, _fedgrpo_long_frame

    return _fedgrpo_long_frame(RESULTS).reset_index(drop=True)


def _stored_sft_steps() -> int:
    """The SFT steps of the stored runs' domain models: FedGRPO's default, as their settings override nothing."""
    from fedrl_kit.fedgrpo.args import EvaluatorArgs

    st = _stored("fedgrpo_compare_pool_long30.json")["settings"]
    if any("sft_steps" in str(x) for x in st.get("set", [])):
        raise ValueError("the stored runs set the SFT steps: read them from the file")
    return EvaluatorArgs().sft_steps


def stored_settings() -> Markdown:
    """The stored runs' setting in one paragraph beside this run's, read from their file; what a plateau and a
    difference are."""
    st = _stored("fedgrpo_compare_pool_long30.json")["settings"]
    t = stored_traces()
    n, end = t["seed"].nunique(), int(t["round"].max())
    per_round = st["prompts_per_step"] * st["num_clients"] * st["local_steps"]
    quick = SIZES["quick"]
    return Markdown(
        f"**Stored runs**: K = {st['num_clients']}, α = {st['dirichlet_alpha']}, {n} seeds, {end} rounds of "
        f"τ = {st['local_steps']} steps ({per_round} questions per round; §5: "
        f"{quick['prompts_per_step'] * st['num_clients'] * quick['local_steps']}), {st['eval_samples']} test samples "
        f"per problem (§5: {quick['eval_samples']}), domain models of {_stored_sft_steps()} SFT steps (§4: "
        f"{SFT_STEPS['quick']}). An arm's **plateau** is its mean pass@1 over rounds {end - 4}–{end}; a "
        f"**difference** is paired by seed, ± its 95 % t half-width ({n - 1} degrees of freedom). pass@1 is in "
        "points (% of test problems).")


def _band(fig, g: pd.DataFrame, y: str, name: str, colour: str, col: int, legend: bool = True, scale: float = 1.0,
          band: bool = True):
    import plotly.graph_objects as go

    st = (g.groupby("round")[y].agg(["mean", "std"]).fillna(0.0) * scale).reset_index()
    xs = st["round"].tolist()
    r, gr, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    if band:
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=(st["mean"] + st["std"]).tolist()
                                 + (st["mean"] - st["std"]).tolist()[::-1], fill="toself", line=dict(width=0),
                                 fillcolor=f"rgba({r},{gr},{b},0.1)", hoverinfo="skip", showlegend=False), 1, col)
    fig.add_trace(go.Scatter(x=xs, y=st["mean"], mode="lines", name=name, line=dict(color=colour, width=2),
                             showlegend=legend), 1, col)


def stored_figure(figures):
    """Two panels. Left: pass@1 in points of every arm (mean of the seeds; no bands, which overlapped). Right:
    the paired differences of :data:`STORED_PAIRS` over windows of 5 rounds, one dot per seed and the mean with its
    95 % t interval, so that whether an arm helps reads off the zero line, not off overlapping bands."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from experiments.fedgrpo_claims import METHOD_NAMES

    t = stored_traces()
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, column_widths=[0.5, 0.5],
                        subplot_titles=["pass@1, mean of the seeds (spread: right panel)",
                                        "arm − FedGRPO over 5-round windows (dot: a seed; bar: 95 % t)"])
    for arm, colour in STORED_ARMS.items():
        _band(fig, t[t["method"] == arm], "pass_at_1", METHOD_NAMES[arm], colour, 1, scale=100, band=False)
    for arm, colour in STORED_CONTROLS.items():  # dashed: the two protocol variants
        m = 100 * t[t["method"] == arm].groupby("round")["pass_at_1"].mean()
        fig.add_trace(go.Scatter(x=m.index.tolist(), y=m.tolist(), mode="lines", name=METHOD_NAMES[arm],
                                 line=dict(color=colour, width=1.5, dash="dash")), 1, 1)
    for i, (a, b, label, colour) in enumerate(STORED_PAIRS):
        w = fedgrpo_windows_cached(a, b)
        mid = [int(r.split("–")[0]) + 2 + (i - 0.5) * 1.2 for r in w["rounds"]]
        fig.add_trace(go.Scatter(x=[m for m, ps in zip(mid, w["per_seed"]) for _ in ps],
                                 y=[p for ps in w["per_seed"] for p in ps], mode="markers", showlegend=False,
                                 marker=dict(color=colour, size=6, opacity=0.45), hoverinfo="y"), 1, 2)
        fig.add_trace(go.Scatter(x=mid, y=w["mean"], mode="markers", name=label,
                                 marker=dict(color=colour, size=11, symbol="diamond"),
                                 error_y=dict(type="data", array=w["±95% t"], thickness=2, width=6)), 1, 2)
    fig.add_hline(y=0, line=dict(color="#555", width=1), row=1, col=2)
    ends = [int(r.split("–")[0]) + 2 for r in fedgrpo_windows_cached(*STORED_PAIRS[0][:2])["rounds"]]
    fig.update_xaxes(title_text="round", row=1, col=1)
    fig.update_xaxes(title_text="rounds", tickvals=ends, ticktext=[f"{e - 2}–{e + 2}" for e in ends], row=1, col=2)
    fig.update_yaxes(title_text="pass@1 (points)", row=1, col=1)
    fig.update_yaxes(title_text="arm − FedGRPO (points)", row=1, col=2)
    fig.update_layout(template=viz.TEMPLATE, height=470, margin=dict(t=70, l=60, r=30, b=40),
                      legend=dict(orientation="h", y=-0.22, x=0, font=dict(size=11)),
                      title=f"stored runs, {t['seed'].nunique()} seeds")
    for ann in fig.layout.annotations:
        ann.font.size = 12
    viz.export(fig, "fedgrpo_stored_traces", figures)
    return fig


def server_format_frame() -> pd.DataFrame:
    """FedGRPO's stored server curves: per (seed, round) the share of its training candidates in the expected
    format, on the seeds of the traces."""
    seeds = set(stored_traces()["seed"])
    runs = _stored("fedgrpo_compare_pool_long30.json")["runs"]
    rows = [{"method": "fedgrpo", "seed": r["seed"], "round": c["round"], "format": c["format"]}
            for r in runs if r["method"] == "fedgrpo" and r["seed"] in seeds for c in r.get("server_curve", [])]
    return pd.DataFrame(rows)


def _windows_said(a: str, b: str, below_means: str = "", above_means: str = "") -> str:
    """Which 5-round windows of a − b exclude 0, and with which sign, in words (``below_means``: what a window
    below 0 says, in brackets)."""
    w = fedgrpo_windows_cached(a, b)
    lo, hi = w["mean"] - w["±95% t"], w["mean"] + w["±95% t"]
    below, above = w.loc[hi < 0, "rounds"].tolist(), w.loc[lo > 0, "rounds"].tolist()
    join = lambda xs: ", ".join(xs[:-1]) + f" and {xs[-1]}" if len(xs) > 1 else xs[0]  # noqa: E731
    parts = ([f"above 0{f' ({above_means})' if above_means else ''} in rounds {join(above)}"] if above else []) + \
            ([f"below 0{f' ({below_means})' if below_means else ''} in rounds {join(below)}"] if below else [])
    rest = len(w) - len(above) - len(below)
    return ", ".join(parts + ([f"within noise in the other {rest} windows"] if parts and rest else
                              ["within noise in every window"] if not parts else []))


@lru_cache(maxsize=None)
def fedgrpo_windows_cached(a: str, b: str) -> pd.DataFrame:
    from experiments.findings import fedgrpo_windows

    return fedgrpo_windows(a, b)


def stored_caption() -> Markdown:
    """Short bullets under the stored figure, every pass@1 in points: each curve's course (FedGRPO's early rise
    beside its format rate), why Fedpetuning+GRPO's strength here is not explained, and what the right panel's
    windows show."""
    from experiments.findings import fedgrpo_paper_table

    t = stored_traces()
    paper = fedgrpo_paper_table()
    gain = paper["Fedpetuning+GRPO"] - paper["Zero-shot"]  # points, the paper's six settings
    mean = 100 * t.groupby(["method", "round"])["pass_at_1"].mean().unstack("method")  # [round, arm], points
    end = int(t["round"].max())
    plateau = mean.loc[end - 4:end].mean()
    rf, pf = mean["fedgrpo"].idxmax(), mean["fedgrpo"].max()
    rc, pc = mean["central_grpo"].idxmax(), mean["central_grpo"].max()
    fmt = server_format_frame().groupby("round")["format"].mean()
    full = int(fmt[fmt >= 0.95].index.min())
    (a, b, label_r, _), (c, d, label_l, _) = STORED_PAIRS
    o = plateau_diff("fedgrpo_official", "fedgrpo_allgt")
    return Markdown(
        f"- *Left:* FedGRPO rises to {pf:.1f} in round {rf}, while its training candidates learn the format "
        f"({fmt.iloc[0]:.2f} formatted in round {int(fmt.index[0])}, {fmt.loc[full]:.2f} by round {full}), then "
        f"settles at {plateau['fedgrpo']:.1f}. Central-GRPO peaks at {pc:.1f} in round {rc} and falls to "
        f"{plateau['central_grpo']:.1f} (why it falls, these runs do not say); Fedpetuning+GRPO climbs to {plateau['fedavg_grpo']:.1f}, "
        f"{plateau['fedavg_grpo'] - mean.loc[0, 'fedavg_grpo']:+.1f} over the base model, where the paper's gains "
        f"over zero-shot are {gain.min():+.1f} to {gain.max():+.1f}.\n"
        f"- *Right:* {label_r}: {_windows_said(a, b, above_means='random experts did better')}. "
        f"{label_l[0].upper() + label_l[1:]}: {_windows_said(c, d)}.\n"
        f"- *Dashed:* with every label held, every score is AE (0/1 against the label), so which clients score "
        f"cannot matter. The official protocol differs from that arm in its group (G·M candidates pooled, no std), "
        f"not in its experts; official protocol − every label: {o[0]:+.2f} ± {o[1]:.2f} points, within noise.")


def findings_box() -> Markdown:
    """Five one-sentence findings of the stored runs, negative ones said so, each linking the report; every
    difference is the plateau table's "arm − FedGRPO" (rounds 26–30, paired by seed), with its sign as there."""
    from experiments.findings import fedgrpo_closing_summary, fedgrpo_gap_sources

    paper, p = fedgrpo_closing_summary(), plateau_seeds()
    level = p.mean(axis=1)
    hit, hit_random = stored_hit_rates()
    d = lambda a: "{:+.2f} ± {:.2f}".format(*plateau_diff(a, "fedgrpo"))  # noqa: E731
    gap, allgt = plateau_diff("fedavg_grpo", "fedgrpo")[0], plateau_diff("fedgrpo_allgt", "fedgrpo")[0]
    off = plateau_diff("fedgrpo_official", "fedavg_grpo")
    t = stored_traces()
    central = 100 * t[t["method"] == "central_grpo"].groupby("round")["pass_at_1"].mean()
    shape = fedgrpo_gap_sources().iloc[2]  # Fedpetuning+GRPO on FedGRPO's reward shape − on accuracy alone
    items = [
        f"**Negative: FedGRPO trails Fedpetuning+GRPO:** Fedpetuning+GRPO − FedGRPO is {d('fedavg_grpo')} points "
        f"({level['fedavg_grpo']:.2f} against {level['fedgrpo']:.2f}), where the paper has FedGRPO "
        f"{paper.iloc[0]['paper']} ahead "
        f"([report §2]({REPORT})).",
        f"**No verdict against Central-GRPO:** Central-GRPO − FedGRPO is {d('central_grpo')}, but Central-GRPO peaked at {central.max():.1f} in "
        f"round {int(central.idxmax())} and was still falling at round {int(central.index.max())}: "
        f"its plateau, {level['central_grpo']:.2f}, is not settled ([report §2]({REPORT})).",
        f"**Better experts, no measurable gain:** random experts − FedGRPO is {d('fedgrpo_random')}, though "
        f"in the stored runs competence picks topic holders for {hit:.2f} of expert slots (random: {hit_random:.2f}) ([report §4]({REPORT})).",
        f"**The gap comes from who can check answers:** every client holds every label − FedGRPO is "
        f"{d('fedgrpo_allgt')}, {allgt / gap:.0%} of the gap to Fedpetuning+GRPO; FedGRPO's reward shape "
        f"(8·accuracy + format) changes Fedpetuning+GRPO by {shape['mean']:+.2f} ± {shape['±95% t']:.2f}"
        f"{', within noise' if abs(shape['mean']) < shape['±95% t'] else ''} "
        f"([report §8]({REPORT})).",
        f"**Inferred: why the paper sees no gap:** its released trainer (Liar-Mask/FedGRPO) lets every client "
        f"check answers against the label and draws experts at random; that official protocol plateaus at "
        f"{level['fedgrpo_official']:.2f} ({d('fedgrpo_official')} over FedGRPO), {-off[0]:.2f} ± {off[1]:.2f} "
        f"below Fedpetuning+GRPO (within noise), so "
        f"we infer Table 1 came from it ([report §4]({REPORT})).",
    ]
    return Markdown("> ### What the stored runs show (differences: arm − FedGRPO, as in the table)\n>\n"
                    + "\n".join(f"> {i}. {x}" for i, x in enumerate(items, 1)))


#: the plateau table's arms, in its order: FedGRPO, its three control arms, the two baselines
PLATEAU_ARMS = ("fedgrpo", "fedgrpo_random", "fedgrpo_allgt", "fedgrpo_official", "fedavg_grpo", "central_grpo")


def plateau_seeds() -> pd.DataFrame:
    """Each arm's plateau per seed: pass@1 in points, mean over the last 5 stored rounds. ``[method, seed]``"""
    t = stored_traces()
    return 100 * t[t["round"] > t["round"].max() - 5].pivot_table("pass_at_1", "method", "seed")


def plateau_diff(a: str, b: str, plateau: pd.DataFrame | None = None) -> tuple[float, float]:
    """Arm ``a``'s plateau − arm ``b``'s, paired by seed: (mean, 95 % t half-width), points."""
    from experiments.stats import t_interval

    p = plateau_seeds() if plateau is None else plateau
    mean, half, _ = t_interval((p.loc[a] - p.loc[b]).dropna())
    return float(mean), float(half)


def plateau_table(plateau: pd.DataFrame) -> pd.DataFrame:
    """The notebook's plateaus (pass@1 in points, ``[method, seed]``, over the last 5 rounds) as a table: the arms
    of :data:`PLATEAU_ARMS` by name, one column per seed, their mean, and the arm minus FedGRPO (paired by seed, the
    mean of the per-seed differences) with its 95 % t half-width: the one sign convention of §6."""
    from experiments.fedgrpo_claims import METHOD_NAMES

    t = plateau.loc[list(PLATEAU_ARMS)].copy()
    t.columns = [f"seed {c}" for c in t.columns]
    t["mean"] = t.mean(axis=1)
    diffs = [plateau_diff(a, "fedgrpo", plateau) if a != "fedgrpo" else (0.0, float("nan")) for a in PLATEAU_ARMS]
    t = t.round(2)
    t["arm − FedGRPO"] = [f"{d:+.2f}" if a != "fedgrpo" else "–" for a, (d, _) in zip(PLATEAU_ARMS, diffs)]
    t["± 95 % t"] = [f"{h:.2f}" if a != "fedgrpo" else "–" for a, (_, h) in zip(PLATEAU_ARMS, diffs)]
    return t.rename(index=METHOD_NAMES).rename_axis("arm")


# -- the exercises' answers and reasons ----------------------------------------------------------------------------
def first_of_topic(run, topic: str) -> int:
    """The index into D_s of its first question of ``topic`` (simulator truth: the server does not see topics)."""
    return int(np.flatnonzero(np.asarray(run.truth.fact("queries").rows["topic"]) == topic)[0])


def p_matrix(run, q: int, near) -> pd.DataFrame:
    """Step 0b's replies p_kℓ (the server's cache) for the auxiliary questions ``near``: one row per client, one
    column per auxiliary question (its text), named after D_s question ``q``."""
    from fedrl_kit.fedgrpo.algorithm import server_state

    aux = list(run.server.world.aux["prompt"])
    df = pd.DataFrame(server_state(run.server).cache.as_matrix()[:, list(near)], index=list(run.runtime.client_ids),
                      columns=[aux[int(j)] for j in near]).round(3)
    return df.rename_axis(columns=f"p_kℓ; x_s = {list(run.server.world.queries['prompt'])[q]!r}")


def exercise_experts(run, L: int, M: int, seed: int, topic: str = "mod") -> tuple[list[str], str]:
    """The M experts of the first D_s question of ``topic`` at L neighbours (eqs. 5–6, ``trace_question``), most
    competent first, and why: the question's c_k (each row's mean in the exercise's table) and each expert's share
    of data in the topic (simulator truth)."""
    from fedrl_kit.fedgrpo.diagnostics import trace_question

    q = first_of_topic(run, topic)
    tr = trace_question(run.server, q, L=L, M=M, seed=seed, truth=run.truth)
    cids = run.runtime.client_ids
    share = {c: sum(t == topic for t in p["topic"]) / len(p) for c, p in zip(cids, run.partitions)}
    experts = [cids[k] for k in tr["experts"]]
    comp = ", ".join(f"{c} {v:.3f}" for c, v in zip(cids, tr["competence"]))
    said = (f"c_k is each row's mean over the {L} columns (eq. 6): {comp}. The top {M}: {experts}. Their shares of "
            f"data in `{topic}`: " + ", ".join(f"{c} {share[c]:.0%}" for c in experts) + ". ")
    outsiders = [c for c in experts if share[c] < 0.1]
    if outsiders:
        said += (f"{' and '.join(outsiders)} {'holds' if len(outsiders) == 1 else 'hold'} almost no `{topic}` data: "
                 "eq. 6 ranks clients by measured skill on the neighbours, and skill that SFT on other arithmetic "
                 "gave counts as much as holding the topic")
    else:
        said += "Both hold the topic: here measured skill and ownership agree"
    return experts, said


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


def exercise_agreement() -> tuple[str, str]:
    """Exercise 4: with ME scores of 0/1 agreement, can the server still pick out the owner from the score rows? The
    answer and the stored measurement of the owner rule under both ME scores."""
    rates = _leak_rates()
    (of, on, xf, xn), (af, an, bf, bn) = rates["probability"], rates["agreement"]
    hides = bf == bn and xf < xn
    said = ("with agreement every expert's row is 0s and 1s, so a row of exact 0s and 1s no longer marks the owner. "
            f"On a stored run ({_leak_setting()}) the rule flags {af} of {an} owners' rows and {bf} of {bn} other "
            f"experts' rows (with probabilities: {of} of {on} and {xf} of {xn}). The 1s blur the label too: an ME "
            "expert's 1s mark its own model's answer, right or wrong. Agreement is the package's default "
            "(`fedgrpo.me_score`); this notebook sets \"probability\" to show the leak")
    return ("no" if hides else "yes"), said


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


def exercise_printed_sum(scores) -> tuple[float, str]:
    """Exercise 5: eqs. 7–9 as printed: each candidate's scores ``[M, G]`` standardised over its M experts (the
    package's group_relative_rewards), and the largest |Σ_k R_k| over the candidates."""
    from fedrl_kit.fedgrpo.group_reward import group_relative_rewards

    R = group_relative_rewards(np.asarray(scores, float))  # [M, G], eq. 8
    total = np.abs(R.sum(axis=0))                            # |Σ_k R_k(ŷ_j)| per candidate
    why = (f"standardising over the experts subtracts their mean, so whatever the scores the R_k of one candidate "
           f"always sum to 0 (here R_k = {', '.join(f'{v:+.2f}' for v in R[:, 0])}). Summed over its experts, eq. 9's "
           f"update vanishes for every candidate, right or wrong: the printed reward cannot train.")
    return round(float(total.max()), 3), why


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
