"""FedMOA's Fig. 3–5 claims as verdicts, read from a stored grid's per-round histories (nothing is trained).

The paper draws its Figs. 3–5 and says in words what they show (§4.2). :func:`figure_claims` turns each of those
sentences into a statistic computed per seed from the ``history`` a result row keeps (:func:`fedmoa_analysis.
round_history`), with the mean over seeds, its 95 % Student-t half-width (n − 1 degrees of freedom; paired by seed
where FedMOA is compared with FedAvg-GRPO) and a verdict in the project's words: "holds", "does not hold",
"within noise (95 % t interval contains 0)", or "not tested: …" with the reason.

The per-seed statistics are plain functions (:func:`accuracy_drops`, :func:`length_slope`,
:func:`within_round_rise`, :func:`final_point`) so that they can be checked on hand-made curves.
"""

from __future__ import annotations

import numpy as np

from experiments.fedmoa_analysis import as_records, not_tested, server_records
from experiments.fedmoa_pareto import non_dominated
from experiments.stats import INTERVAL, sign_verdict, t_interval
from fedrl_kit.fedmoa.plan import client_plan

SETTINGS = ("heter+heter", "homo+heter", "homo+homo")
FAMILIES = ("math", "gsm", "code")

CLAIMS = {
    "fig3": ("Fig. 3", "FedMOA's final server checkpoint lies closer to the Pareto front than FedGRPO's: higher "
                       "accuracy while preserving comparable auxiliary rewards"),
    "fig4_smooth": ("Fig. 4", "FedMOA's accuracy reward improves more smoothly and monotonically than FedGRPO's"),
    "fig4_length": ("Fig. 4", "FedMOA's mean response length remains stable or decreases over training"),
    "fig5": ("Fig. 5", "FedMOA's accuracy weight w_acc rises within each round (shown for Homo+Homo and "
                       "Heter+Heter)"),
}
"""claim key → (figure, the paper's claim in words, §4.2)"""

FIG5_CELLS = (("homo+homo", "gsm"), ("heter+heter", "gsm"))
"""the (setting, family) cells the paper's Fig. 5 draws: GSM8K, Homo+Homo on top, Heter+Heter below"""

VERDICT_WORDS = {1: "holds", -1: "does not hold", 0: f"within noise ({INTERVAL} contains 0)"}


def accuracy_drops(curve) -> float:
    """How far a curve falls on its way: the sum of its round-to-round decreases, as a positive number (0 for a
    curve that never falls; a monotone rise scores 0 whatever its steps)."""
    c = np.asarray(curve, float)
    return float(np.clip(-np.diff(c), 0.0, None).sum()) if len(c) > 1 else 0.0


def length_slope(lengths) -> float:
    """The least-squares slope of a curve per round (its points one round apart): below 0 it trends down."""
    y = np.asarray(lengths, float)
    if len(y) < 2:
        return float("nan")
    return float(np.polyfit(np.arange(len(y)), y, 1)[0])


def reward_names(records: list[dict], clients=None) -> list[str]:
    """The reward components of the given clients (None: all), accuracy first, then every auxiliary one any of
    them trains on, in order of first appearance (a client's names come from its weights, ``w/<name>``)."""
    names: list[str] = []
    for r in records:
        if r["kind"] != "client" or r.get("client") == "server" or (clients is not None and r["client"] not in clients):
            continue
        for k in r:
            if k.startswith("w/") and k[2:] not in names:
                names.append(k[2:])
    return names


def final_point(records: list[dict], family: str, names: list[str]) -> dict:
    """The global model's last evaluated round on ``family``: ``{name: value}`` for each of ``names`` the server
    recorded (``<family>/<name>``)."""
    last = server_records(records)[-1]
    return {n: last[f"{family}/{n}"] for n in names if f"{family}/{n}" in last}


def within_round_rise(records: list[dict], clients=None) -> tuple[float, str]:
    """Fig. 5's within-round change of the accuracy weight: the mean over the given clients (None: all) and their
    rounds of w_acc after the round's last local step minus after its first (``w@<last>/…`` − ``w@0/…``; step 0
    has no previous gradient, so its weights are the round's start). Records without per-step weights fall back to
    the round's end minus its start (``w/…`` − ``w_start/…``). Returns (the mean, which of the two it is)."""
    rises, kind = [], None
    for r in records:
        if r["kind"] != "client" or r.get("client") == "server" or (clients is not None and r["client"] not in clients):
            continue
        names = [k[2:] for k in r if k.startswith("w/")]
        if not names:
            continue
        acc = names[0]
        steps = sorted(int(k[2:].split("/")[0]) for k in r if k.startswith("w@") and k.endswith(f"/{acc}"))
        if steps:
            rises.append(r[f"w@{steps[-1]}/{acc}"] - r[f"w@{steps[0]}/{acc}"])
            kind = kind or "per-step"
        elif f"w_start/{acc}" in r:
            rises.append(r[f"w/{acc}"] - r[f"w_start/{acc}"])
            kind = "round-level"
    return (float(np.mean(rises)) if rises else float("nan")), (kind or "none")


def _fmt(mean: float, half: float) -> str:
    return f"{mean:+.4f}" + ("" if np.isnan(half) else f" ± {half:.4f}")


def _interval(values, direction: int = 1) -> tuple[float, float, str]:
    """mean, 95 % t half-width and verdict of per-seed values; ``direction`` −1: the claim predicts values below 0."""
    mean, half, n = t_interval(values)
    if n == 0:
        return mean, half, "not tested: not run"
    if n == 1:
        return mean, half, "one seed only: no verdict"
    return mean, half, VERDICT_WORDS[sign_verdict(direction * mean, half)]


def _family_clients(records: list[dict], setting: str, family: str) -> list[str]:
    """Ids of the clients that hold ``family`` under ``setting`` (the plan: a Homo run's clients are all its own)."""
    ids = sorted({r["client"] for r in records if r["kind"] == "client" and r.get("client") != "server"})
    plan = client_plan(setting, len(ids), family if setting != "heter+heter" else "math")
    return [c for c in ids if plan[int(c.rsplit("_", 1)[1])][0] == family]


def figure_claims(rows: list[dict], better: str = "FedMOA", worse: str = "FedAvg-GRPO",
                  settings=SETTINGS, families=FAMILIES, lr_schedule: str = "constant") -> list[dict]:
    """FedMOA's Fig. 3–5 claims as verdicts: one row per (setting, family, claim) over a stored grid.

    Args:
        rows: a grid's result rows (``setting``, ``variant``, ``seed``, ``homo_family`` for the Homo settings,
            ``history``; the fields of :func:`fedmoa_analysis.summary_row_fields`, which the "not tested" rule reads).
        better, worse: the two arms (FedMOA and the paper's baseline, FedGRPO, here FedAvg-GRPO).
        settings, families: the cells to report; a Heter+Heter run holds every family (its ``<family>/…`` server
        keys, that family's clients), a Homo run one (``homo_family``).
        lr_schedule: the runs' learning-rate schedule (the paper's: "cosine"), which Fig. 5's rule reads.

    Returns:
        Rows with ``figure``, ``setting``, ``family``, ``claim`` (the paper's, in words), ``statistic`` (what one
        seed contributes), ``unit``, ``seeds``, ``values`` (one per seed), ``mean``, ``half_width`` (95 % t,
        n − 1 degrees of freedom), ``detail`` (the conditions and context) and ``verdict``:

        - **Fig. 3** (Pareto): per seed, FedMOA − FedAvg-GRPO at the last round in accuracy (points) and in each
          auxiliary reward the family's clients train on (format and tag count; the code cluster's code format,
          tag count, length and repetition rewards), and whether FedMOA's final point is non-dominated among the
          two arms' final points (in the space of accuracy and those rewards). Rule: "does not hold" when the
          accuracy interval lies below 0 or any auxiliary interval lies below 0 (auxiliary rewards not preserved);
          else "holds" when the accuracy interval lies above 0; else within noise.
        - **Fig. 4, smoothness**: per seed, the sum of the server accuracy curve's round-to-round falls
          (:func:`accuracy_drops`, points), FedMOA − FedAvg-GRPO; the claim holds when the interval lies below 0
          (FedMOA falls less), does not hold above 0; "not tested" when neither arm's curve falls on any seed
          (there is no fluctuation to be smoother than: too few rounds).
        - **Fig. 4, length**: per seed, the least-squares slope per round of FedMOA's mean response length on the
          family (:func:`length_slope`); holds below 0, does not hold above 0; "within noise" is what "stable"
          predicts. "not tested: length not recorded" without ``<family>/length``.
        - **Fig. 5** (weights): per seed, FedMOA's mean over the family's clients and rounds of w_acc after the
          round's last local step minus after its first (:func:`within_round_rise`); holds above 0. "Not tested"
          outside the figure's cells (:data:`FIG5_CELLS`) and under a schedule other than the paper's cosine decay:
          a step size that shrinks brings consecutive gradients closer, which is what raises Δ_k (eq. 9).

        Every other verdict is replaced by "not tested: …" (interval still given) when :func:`fedmoa_analysis.not_tested`
        says FedMOA's λ did not act (its weights moved less than ``MIN_WEIGHT_MOVE`` per client and round, mean
        over seeds); "not tested: not run" when the rows lack the cell or an arm; "not tested: no per-round
        history" when the cell's rows keep none (result files written before histories were kept).
    """
    out = []
    for setting in settings:
        for fam in families:
            cell = [r for r in rows if r["setting"] == setting
                    and (setting == "heter+heter" or r.get("homo_family", "math") == fam)]
            arms = {v: [r for r in cell if r["variant"] == v] for v in (better, worse)}
            base = dict(setting=setting, family=fam, seeds=[], values=[], mean=float("nan"),
                        half_width=float("nan"), detail="")
            if not arms[better] or not arms[worse]:
                missing = " and ".join(v for v in (better, worse) if not arms[v])
                out += [dict(base, figure=f, claim=c, statistic="", unit="", verdict="not tested: not run",
                             detail=f"{missing} not in the rows") for f, c in CLAIMS.values()]
                continue
            hist = {v: {r["seed"]: r for r in rs if "history" in r} for v, rs in arms.items()}
            seeds = sorted(set(hist[better]) & set(hist[worse]))
            if not seeds:
                out += [dict(base, figure=f, claim=c, statistic="", unit="",
                             verdict="not tested: no per-round history stored in these rows",
                             detail="the result file predates the histories") for f, c in CLAIMS.values()]
                continue
            recs = {v: {s: as_records(hist[v][s]["history"]) for s in seeds} for v in (better, worse)}
            why = not_tested([hist[better][s] for s in seeds], [hist[worse][s] for s in seeds])
            out += _cell_rows(setting, fam, seeds, recs[better], recs[worse], why, base, lr_schedule)
    return out


def _cell_rows(setting, fam, seeds, moa, avg, why, base, lr_schedule) -> list[dict]:
    rows = []

    def add(key, statistic, unit, values, verdict, detail, seeds_=seeds):
        figure, claim = CLAIMS[key]
        mean, half, _ = t_interval(values) if values else (float("nan"), float("nan"), 0)
        if why and not verdict.startswith("not tested"):  # the setting's own reason first, then λ's
            verdict = why
        rows.append(dict(base, figure=figure, claim=claim, statistic=statistic, unit=unit, seeds=list(seeds_),
                         values=list(values), mean=mean, half_width=half, detail=detail, verdict=verdict))

    clients = {s: _family_clients(moa[s], setting, fam) for s in seeds}
    names = reward_names(moa[seeds[0]], clients[seeds[0]])
    acc, aux = names[0], names[1:]
    # Fig. 3: final points, paired by seed
    pm = {s: final_point(moa[s], fam, names) for s in seeds}
    pa = {s: final_point(avg[s], fam, names) for s in seeds}
    aux = [n for n in aux if all(n in pm[s] and n in pa[s] for s in seeds)]
    d_acc = [100 * (pm[s][acc] - pa[s][acc]) for s in seeds]
    _, _, v_acc = _interval(d_acc)
    parts, lower = [], []
    for n in aux:
        m, h, _ = _interval([pm[s][n] - pa[s][n] for s in seeds])
        parts.append(f"{n} {_fmt(m, h)}")
        if len(seeds) > 1 and sign_verdict(m, h) == -1:
            lower.append(n)
    front = [bool(non_dominated([[pm[s][n] for n in [acc] + aux], [pa[s][n] for n in [acc] + aux]])[0])
             for s in seeds]
    if lower and len(seeds) > 1:
        verdict = f"does not hold: lower {', '.join(lower)}"
    else:
        verdict = v_acc
    add("fig3", f"FedMOA − FedAvg-GRPO in final {acc}", "points", d_acc, verdict,
        "auxiliary differences (reward units, mean ± 95 % t): " + "; ".join(parts)
        + f". FedMOA's final point non-dominated on {sum(front)} of {len(seeds)} seeds")
    # Fig. 4: smoothness of the server accuracy curve, paired
    curve = {v: {s: [r[f"{fam}/{acc}"] for r in server_records(rr[s])] for s in seeds} for v, rr in
             (("moa", moa), ("avg", avg))}
    dm = [100 * accuracy_drops(curve["moa"][s]) for s in seeds]
    da = [100 * accuracy_drops(curve["avg"][s]) for s in seeds]
    n_rounds = len(curve["moa"][seeds[0]])
    flat = not any(dm) and not any(da)
    add("fig4_smooth", f"FedMOA − FedAvg-GRPO in the sum of falls of the server {acc} over {n_rounds} rounds",
        "points", [a - b for a, b in zip(dm, da)],
        f"not tested: neither arm's server {acc} fell between any two of its {n_rounds} rounds on any seed"
        if flat else _interval([a - b for a, b in zip(dm, da)], -1)[2],
        f"FedMOA falls {np.mean(dm):.2f}, FedAvg-GRPO {np.mean(da):.2f} points (mean over seeds); a fall on "
        f"{sum(x > 0 for x in dm)} and {sum(x > 0 for x in da)} of {len(seeds)} seeds")
    # Fig. 4: FedMOA's length trend
    key = f"{fam}/length"
    if all(key in r for s in seeds for r in server_records(moa[s])):
        sm = [length_slope([r[key] for r in server_records(moa[s])]) for s in seeds]
        sa = [length_slope([r[key] for r in server_records(avg[s])]) for s in seeds
              if all(key in r for r in server_records(avg[s]))]
        ma, ha, _ = t_interval(sa) if sa else (float("nan"), float("nan"), 0)
        add("fig4_length", f"slope of FedMOA's mean response length on {fam} per round", "length units per round",
            sm, _interval(sm, -1)[2], f"FedAvg-GRPO's slope {_fmt(ma, ha)}; \"within noise\" is what \"stable\" "
            "predicts")
    else:
        add("fig4_length", "", "", [], "not tested: length not recorded", f"no {key} in the server records")
    # Fig. 5: within-round rise of w_acc
    rises = [within_round_rise(moa[s], clients[s]) for s in seeds]
    kinds = {k for _, k in rises}
    vals = [v for v, _ in rises if not np.isnan(v)]
    if not vals:
        add("fig5", "", "", [], "not tested: no reward weights recorded", "the FedMOA rows keep no w/… keys")
    else:
        what = ("w_acc after the round's last local step − after its first" if kinds == {"per-step"}
                else "w_acc at the round's end − at its start (no per-step weights stored)")
        verdict = _interval(vals)[2]
        if (setting, fam) not in FIG5_CELLS:
            verdict = "not tested: outside the paper's Fig. 5 (GSM8K in Homo+Homo and Heter+Heter)"
        elif lr_schedule != "cosine":
            verdict = f"not tested: {lr_schedule} learning rate (the paper's: cosine decay, which aligns consecutive g_k)"
        add("fig5", f"FedMOA's mean over {fam} clients and rounds of {what}", "weight", vals,
            verdict, f"per-step weights w@… of {len(clients[seeds[0]])} clients per seed"
            if kinds == {"per-step"} else "round-level weights only")
    return rows


def lr_schedule_of(grid: dict) -> str:
    """A stored grid's learning-rate schedule, from its settings per setting ("mixed" if they differ)."""
    found = {v.get("lr_schedule", "constant") for k, v in grid.get("settings", {}).items() if k in SETTINGS}
    found = found or {"constant"}
    return found.pop() if len(found) == 1 else "mixed"


def verdict_table(rows: list[dict]) -> list[dict]:
    """:func:`figure_claims` rows as the report prints them: mean ± half-width in one column, no per-seed values."""
    return [dict(setting=r["setting"], family=r["family"], figure=r["figure"], statistic=r["statistic"],
                 unit=r["unit"], seeds=len(r["seeds"]),
                 **{"mean ± 95 % t": "" if np.isnan(r["mean"]) else _fmt(r["mean"], r["half_width"])},
                 detail=r["detail"], verdict=r["verdict"]) for r in rows]


MEASURES = {"fig3": "final accuracy, FedMOA − FedAvg-GRPO (points)",
            "fig4_smooth": "sum of accuracy falls, FedMOA − FedAvg-GRPO (points)",
            "fig4_length": "FedMOA's length slope (tokens per round)",
            "fig5": "FedMOA's within-round rise of w_acc"}
"""each claim's statistic in a few words, for the docs' table"""

STORED = ("fedmoa_compare_cpu.json", "fedmoa_compare_cpu_homo+homo.json", "fedmoa_compare_cpu_homo+heter.json",
          "fedmoa_compare_cpu_cosine_homo+homo_gsm.json")
"""the stored grids whose rows the docs' table reads (benchmarks/results)"""


def markdown(rows: list[dict]) -> str:
    """:func:`figure_claims` rows as a markdown table with short statistic names, then each Fig. 3 row's detail."""
    from experiments.stats import claims_markdown
    import pandas as pd

    key = {v: k for k, v in CLAIMS.items()}
    table = pd.DataFrame([{"setting": r["setting"], "family": r["family"], "figure": r["figure"],
                           "statistic": MEASURES[key[(r["figure"], r["claim"])]], "seeds": len(r["seeds"]),
                           "mean ± 95 % t": "" if np.isnan(r["mean"]) else _fmt(r["mean"], r["half_width"]),
                           "verdict": r["verdict"]} for r in rows])
    details = [f"- {r['setting']}, {r['family']}: {r['detail']}" for r in rows if r["figure"] == "Fig. 3" and r["seeds"]]
    return claims_markdown(table) + ("\n\nFig. 3 conditions:\n" + "\n".join(details) if details else "")


if __name__ == "__main__":  # the docs' table: python -m experiments.fedmoa_figure_claims
    import json
    from pathlib import Path

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    for name in STORED:
        data = json.loads((results / name).read_text())
        rows = figure_claims(data["runs"], lr_schedule=lr_schedule_of(data))
        print(f"## {name}\n")
        if all(r["verdict"].startswith("not tested: n") and not r["seeds"] for r in rows):
            print("; ".join(sorted({f"{r['setting']} ({r['family']}): {r['verdict']}" for r in rows
                                    if r["verdict"] != "not tested: not run"})) or "every cell not run",
                  "; every other cell: not tested: not run\n")
        else:
            ran = [r for r in rows if r["verdict"] != "not tested: not run"]
            print(markdown(ran) + ("\n\nevery other cell: not tested: not run" if len(ran) < len(rows) else "") + "\n")
