"""What the reproduction found, in at most five rows per paper: the teaching notebooks' "findings" tables.

Each row is one of the paper's claims (or one of our control arms) as the stored benchmark files in
``benchmarks/results`` decide it: the mean paired difference over seeds, its 95 % Student-t half-width (n − 1
degrees of freedom) and the verdict, computed by the same functions as the reproduction reports
(``notebooks/1*_report.ipynb``), which hold every row and every table. Nothing is retyped: a re-run benchmark
changes these rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from fedrl_kit.runs import REPO_ROOT

RESULTS = REPO_ROOT / "benchmarks" / "results"
COLUMNS = ["finding", "difference", "±95% t", "seeds", "verdict"]


def _rows(claims: pd.DataFrame, picks: dict[str, str], mean: str = "mean", half: str = "±95% t",
          seeds: str = "seeds", verdict: str = "verdict") -> pd.DataFrame:
    """The rows of ``claims`` whose claim starts with each key of ``picks``, renamed to the value."""
    rows = []
    for start, name in picks.items():
        hit = claims[claims["claim"].str.startswith(start)]
        if len(hit):
            r = hit.iloc[0]
            rows.append({"finding": name, "difference": r[mean], "±95% t": r[half], "seeds": r[seeds],
                         "verdict": str(r[verdict]).split(" (")[0]})
    return pd.DataFrame(rows, columns=COLUMNS)


def fedgrpo_findings(results: str | Path = RESULTS) -> pd.DataFrame:
    """FedGRPO's plateaus (trained until flat) against its baselines, and its two control arms (pass@1 points)."""
    from experiments.fedgrpo_claims import arm_claims, load_arms, load_long, long_claims

    results = Path(results)
    long = load_long(results)
    claims = pd.concat([long_claims(long), arm_claims(long, load_arms(results))], ignore_index=True)
    return _rows(claims, {
        "FedGRPO beats Fedpetuning+GRPO": "FedGRPO − FedAvg-GRPO (Fedpetuning+GRPO)",
        "FedGRPO near Central-GRPO": "FedGRPO − Central-GRPO (all data pooled)",
        "competence-based selection beats random": "competence-selected − random experts",
        "every client holding every label beats": "every client holds every label − owner only",
    }).round(2)


def pubswap_findings(results: str | Path = RESULTS) -> pd.DataFrame:
    """PubSwap at its largest stored τ (the larger-τ grid, final checkpoint): where the drift reduction comes from,
    and what it does to accuracy (drift in ‖ΔW‖ units, accuracy in pass@1 points)."""
    from experiments.sweep import pubswap_claims

    rows = json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in rows)
    claims = pubswap_claims(rows)
    return _rows(claims, {
        f"public steps limit drift: τ = {tau}": f"drift, Balanced − FedAvg-GRPO (τ = {tau})",
        f"the swap limits drift (control, not a paper claim): τ = {tau}":
            f"drift, Balanced − no-swap control (τ = {tau})",
        f"on-policy public steps limit drift (control, not a paper claim): τ = {tau}":
            f"drift, no-swap control − FedAvg-GRPO (τ = {tau})",
        f"Balanced outperforms FedAvg+GRPO for most choices of τ: τ = {tau}":
            f"pass@1, Balanced − FedAvg-GRPO (τ = {tau})",
        f"this advantage does not persist at larger local-step values: τ = {tau}":
            f"pass@1, Random − Balanced (τ = {tau})",
    }, mean="diff", verdict="holds").round(2)


def fedmoa_findings(results: str | Path = RESULTS) -> pd.DataFrame:
    """FedMOA in the stored ``cpu`` grid (last round): against FedAvg-GRPO, where it helps, and where its accuracy
    weight goes (accuracy in pass@1 points, reward in its own units, weights as fractions)."""
    from experiments import fedmoa_analysis as analysis
    from experiments.stats import t_interval

    grid = json.loads((Path(results) / "fedmoa_compare_cpu.json").read_text())
    claims = pd.DataFrame([c for c in analysis.in_points(analysis.paired_claims(grid["runs"]))
                           if c["verdict"] != "not run"])
    claims["seeds"] = claims["seeds"].map(len)
    table = _rows(claims, {
        "FedMOA > FedAvg-GRPO on global accuracy (Heter+Heter":
            "global accuracy, FedMOA − FedAvg-GRPO (Heter+Heter)",
        "FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter":
            "aggregated reward, FedMOA − FedAvg-GRPO (Heter+Heter)",
        "FedMOA > FedAvg-GRPO on local accuracy (Homo+Heter, code":
            "clients' own accuracy, FedMOA − FedAvg-GRPO (Homo+Heter, code family)",
    }, mean="mean_difference", half="half_width")
    paths = pd.DataFrame(analysis.accuracy_weight_paths(grid["runs"]))
    for variant in ("FedMOA", "FedMOA, λ=100"):
        p = paths[paths.variant == variant].pivot_table(index="seed", columns="round", values="mean_w0")
        mean, half, n = t_interval((p[p.columns.max()] - p[0]).tolist())
        table.loc[len(table)] = {"finding": f"accuracy weight w_acc, last round − start ({variant})",
                                 "difference": mean, "±95% t": half, "seeds": n,
                                 "verdict": "falls" if mean + half < 0 else "within noise"}
    return table.round(3)


# -- the teaching notebooks' sentences: labels, intervals in words, the stored settings ------------------------------
def labelled(table: pd.DataFrame, prefix: str = "F") -> pd.DataFrame:
    """``table`` indexed ``F1``, ``F2``, …: the labels a notebook's prose cites, shown by the table's own output."""
    out = table.copy()
    out.index = pd.Index([f"{prefix}{i + 1}" for i in range(len(out))], name="label")
    return out


def interval_words(diff: float, half: float, n: int, unit: str = "pass@1 points", digits: int = 2) -> str:
    """A paired difference in words that agree with its 95 % t-interval: "lower by X unit (95 % t-interval ±Y over
    n seeds)" when diff ± half excludes 0, "within noise: ±X ± Y unit (… contains 0)" when it does not."""
    from experiments.stats import sign_verdict

    unit = f" {unit}" if unit else ""
    if n < 2 or half != half:
        return f"{diff:+.{digits}f}{unit} (one seed: no interval)"
    sign = sign_verdict(diff, half)
    if sign == 0:
        return f"within noise: {diff:+.{digits}f} ± {half:.{digits}f}{unit} (95 % t-interval over {n} seeds, " \
               "contains 0)"
    return f"{'higher' if sign > 0 else 'lower'} by {abs(diff):.{digits}f}{unit} (95 % t-interval " \
           f"±{half:.{digits}f} over {n} seeds)"


def pubswap_setting(results: str | Path = RESULTS) -> dict:
    """The setting of :func:`pubswap_findings`' rows (its largest τ): τ, rounds, local steps per client in all,
    τ_swap, clients, prompts per step b, answers per prompt K, and the seeds each arm ran there."""
    from fedrl_kit.config import preset

    rows = json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in rows)
    at = [r for r in rows if r["tau"] == tau]
    head = next(r for r in at if r["table"] == "table1")  # Table 5's rows change τ_swap
    base = preset(head["preset"])  # the sweep's runs keep the preset's clients, b and K
    seeds = {m: sorted({r["seed"] for r in at if r["method"] == m}) for m in dict.fromkeys(r["method"] for r in at)}
    return dict(tau=tau, rounds=head["rounds"], steps=tau * head["rounds"], period=head["pubswap_period"],
                clients=base.num_clients, b=base.prompts_per_step, K=base.num_generations, seeds=seeds)


def pubswap_random_findings(results: str | Path = RESULTS, digits: int = 2) -> pd.DataFrame:
    """PubSwap Random against Balanced and FedAvg-GRPO at the largest stored τ: end-of-round drift (‖ΔW‖ units) and
    pass@1 (points), paired over the seeds both arms ran, in :data:`COLUMNS`, rounded to ``digits``."""
    from experiments.stats import sign_verdict
    from experiments.sweep import _compare

    rows = pd.DataFrame(json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text()))
    t1 = rows[rows.table == "table1"]
    tau = int(t1.tau.max())
    names = {"pubswap_balanced": "Balanced", "fedavg_grpo": "FedAvg-GRPO"}
    out = []
    for value, what, scale in (("drift_end_pairwise_effective", "drift", 1.0), ("pass@1_final", "pass@1", 100.0)):
        for other, name in names.items():
            mean, _, half, n = _compare(t1, {"method": "pubswap_random", "tau": tau}, {"method": other, "tau": tau},
                                        value)
            sign = sign_verdict(mean, half)
            out.append({"finding": f"{what}, Random − {name} (τ = {tau})", "difference": mean * scale,
                        "±95% t": half * scale, "seeds": n,
                        "verdict": {1: "higher", -1: "lower", 0: "within noise"}[sign]})
    return pd.DataFrame(out, columns=COLUMNS).round(digits)


def fedmoa_setting(results: str | Path = RESULTS, setting: str = "heter+heter") -> dict:
    """The ``cpu`` grid's fields for ``setting`` (clients, rounds, τ, b, G, λ rule, g_k) as :func:`fedmoa_findings`
    read them, and the λ each variant ran with (the tuned one, fixed)."""
    grid = json.loads((Path(results) / "fedmoa_compare_cpu.json").read_text())
    s = grid["settings"][setting]
    lams = {r["variant"]: r.get("lam") for r in grid["runs"] if r["setting"] == setting and r.get("lam") is not None}
    return dict(clients=s["num_clients"], rounds=s["rounds"], tau=s["local_steps"], b=s["prompts_per_step"],
                G=s["num_generations"], hyper_grad=s["fedmoa"]["hyper_grad"], lam=lams)


def fedmoa_claim_interval(claim_start: str, results: str | Path = RESULTS) -> tuple[float, float, int, str]:
    """(mean difference, 95 % t half-width, seeds, verdict) of the first ``cpu``-grid claim starting with
    ``claim_start``, unrounded (:func:`fedmoa_findings` rounds to three decimals, which can hide whether a small
    interval touches 0)."""
    from experiments import fedmoa_analysis as analysis

    grid = json.loads((Path(results) / "fedmoa_compare_cpu.json").read_text())
    for c in analysis.in_points(analysis.paired_claims(grid["runs"])):
        if c["claim"].startswith(claim_start) and c["verdict"] != "not run":
            return c["mean_difference"], c["half_width"], len(c["seeds"]), c["verdict"].split(" (")[0]
    raise KeyError(f"no cpu-grid claim starts with {claim_start!r}")


#: the two arms each row of :func:`fedgrpo_findings` compares (a − b), in its row order (fedgrpo_claims' names)
FEDGRPO_FINDING_ARMS = [("fedgrpo", "fedavg_grpo"), ("fedgrpo", "central_grpo"), ("fedgrpo", "fedgrpo_random"),
                        ("fedgrpo_allgt", "fedgrpo")]


def fedgrpo_finding_notes(results: str | Path = RESULTS) -> pd.DataFrame:
    """:func:`fedgrpo_findings` as sentences a notebook can quote: one row per finding, labelled F1, F2, …, with the
    difference in words (:func:`interval_words`) and its setting (clients, Dirichlet concentration, τ, prompts per
    step, seeds and each arm's rounds), all read from the stored files."""
    from experiments.fedgrpo_claims import METHOD_NAMES, load_arms, load_long, long_curves, with_arms

    results = Path(results)
    long = load_long(results)
    rounds = long_curves(with_arms(long, load_arms(results))).set_index("method")["rounds"]
    s = long[0]["settings"]
    table = fedgrpo_findings(results)
    rows = []
    for i, ((a, b), r) in enumerate(zip(FEDGRPO_FINDING_ARMS, table.to_dict("records")), 1):
        arms = " against ".join(f"{METHOD_NAMES[x]} ({int(rounds[METHOD_NAMES[x]])} rounds)" for x in (a, b))
        rows.append({"label": f"F{i}", "finding": r["finding"],
                     "result": interval_words(r["difference"], r["±95% t"], int(r["seeds"])),
                     "setting": (f"K = {s['num_clients']} clients, dirichlet_alpha = {s['dirichlet_alpha']}, "
                                 f"τ = {s['local_steps']}, {s['prompts_per_step']} prompts per client and step, "
                                 f"{int(r['seeds'])} seeds; {arms}; "
                                 "plateau = mean pass@1 of the last 5 rounds")})
    return pd.DataFrame(rows).set_index("label")


#: the methods of :data:`FEDGRPO_PAPER_TABLE1`, in its column order
FEDGRPO_PAPER_METHODS = ("Zero-shot", "Fedpetuning+GRPO", "Central-GRPO", "FedGRPO")
#: FedGRPO's Table 1 (the paper), column "Avg." (mean pass@1 over its six math test sets) of the four methods the
#: teaching notebook compares, by (training set, server model); copied from the paper, not measured here
FEDGRPO_PAPER_TABLE1 = {
    ("Math-benchmark", "Qwen2.5-Math-1.5B"): (0.163, 0.183, 0.323, 0.338),
    ("Math-benchmark", "Qwen2.5-3B"): (0.055, 0.137, 0.168, 0.160),
    ("Math-benchmark", "Qwen2.5-Math-7B"): (0.199, 0.186, 0.370, 0.369),
    ("OpenR1-Math", "Qwen2.5-Math-1.5B"): (0.163, 0.172, 0.316, 0.327),
    ("OpenR1-Math", "Qwen2.5-3B"): (0.055, 0.139, 0.225, 0.227),
    ("OpenR1-Math", "Qwen2.5-Math-7B"): (0.199, 0.215, 0.379, 0.388),
}


def fedgrpo_paper_table() -> pd.DataFrame:
    """:data:`FEDGRPO_PAPER_TABLE1` in pass@1 points (× 100), one row per (training set, server model), with
    FedGRPO's two gaps the paper reports: against Fedpetuning+GRPO and against Central-GRPO."""
    index = pd.MultiIndex.from_tuples(FEDGRPO_PAPER_TABLE1, names=["training set", "server model"])
    df = pd.DataFrame(list(FEDGRPO_PAPER_TABLE1.values()), index=index, columns=list(FEDGRPO_PAPER_METHODS)) * 100
    df["FedGRPO − Fedpetuning+GRPO"] = df["FedGRPO"] - df["Fedpetuning+GRPO"]
    df["FedGRPO − Central-GRPO"] = df["FedGRPO"] - df["Central-GRPO"]
    return df.round(1)


#: the arms of the stored trained-until-flat runs whose plateaus :func:`fedgrpo_plateaus` shows, in its row order
FEDGRPO_PLATEAU_ARMS = ("fedgrpo", "fedavg_grpo", "central_grpo", "fedgrpo_random", "fedgrpo_allgt", "dpsda_grpo")
#: the row :func:`fedgrpo_plateaus` adds for the model every arm starts from
FEDGRPO_BASE_ROW = "base model (before training)"


def _fedgrpo_long_frame(results: Path) -> pd.DataFrame:
    """:func:`~experiments.fedgrpo_claims.curve_frame` of the stored trained-until-flat runs and the control arms,
    each (arm, seed) from the file that trained it longest, on the seeds FedGRPO ran only."""
    from experiments.fedgrpo_claims import curve_frame, load_arms, load_long, with_arms

    long = load_long(results)
    df = curve_frame(with_arms(long, load_arms(results)))
    return df[df["seed"].isin(df.loc[df["method"] == "fedgrpo", "seed"])]


def fedgrpo_plateaus(results: str | Path = RESULTS, window: int = 5, base: bool = True) -> pd.DataFrame:
    """Each arm's absolute plateau (mean pass@1 of its last ``window`` evaluated rounds, in points) per seed, their
    mean, and the rounds the arm trained, read from the stored files :func:`fedgrpo_finding_notes` reads (each
    (arm, seed) from the file that trained it longest). Only the seeds FedGRPO ran, so that two rows' means differ
    by the paired differences of :func:`fedgrpo_findings`. One row per arm of :data:`FEDGRPO_PLATEAU_ARMS`; with
    ``base``, a last row :data:`FEDGRPO_BASE_ROW` (each seed's round-0 pass@1: every arm of a seed starts from that
    model) and a column ``over the base``: the mean minus the base row's mean, what each arm learned."""
    from experiments.fedgrpo_claims import METHOD_NAMES

    df = _fedgrpo_long_frame(Path(results))
    df = df[df["method"].isin(FEDGRPO_PLATEAU_ARMS)]
    last = df.sort_values("round").groupby(["method", "seed"])
    plateau = last.tail(window).groupby(["method", "seed"])["pass_at_1"].mean().unstack("seed") * 100
    plateau.columns = [f"seed {s}" for s in plateau.columns]
    plateau["mean"] = plateau.mean(axis=1)
    plateau.insert(0, "rounds", last["round"].max().groupby("method").min())
    plateau = plateau.reindex([a for a in FEDGRPO_PLATEAU_ARMS if a in plateau.index])
    plateau.index = [METHOD_NAMES[a] for a in plateau.index]
    if base:
        start = df[(df["method"] == "fedgrpo") & (df["round"] == 0)].set_index("seed")["pass_at_1"] * 100
        row = {"rounds": 0, **{f"seed {s}": v for s, v in start.items()}, "mean": start.mean()}
        plateau.loc[FEDGRPO_BASE_ROW] = pd.Series(row)
        plateau["over the base"] = plateau["mean"] - row["mean"]
    plateau.index.name = "arm"
    return plateau.round(2)


#: the arms whose stored pass@1 traces :func:`fedgrpo_traces` returns, in legend order
FEDGRPO_TRACE_ARMS = ("fedgrpo", "fedgrpo_random", "fedgrpo_allgt", "fedavg_grpo", "dpsda_grpo", "central_grpo")


def fedgrpo_traces(results: str | Path = RESULTS) -> pd.DataFrame:
    """The stored pass@1 traces, one row per (method, seed, round), of :data:`FEDGRPO_TRACE_ARMS` (30 rounds each,
    :func:`experiments.fedgrpo_claims.load_long`'s files), on the seeds FedGRPO ran: the frame :func:`fedrl_kit.viz.seed_band_curves`
    draws."""
    df = _fedgrpo_long_frame(Path(results))
    df = df[df["method"].isin(FEDGRPO_TRACE_ARMS)]
    order = {a: i for i, a in enumerate(FEDGRPO_TRACE_ARMS)}
    return df.sort_values(["method", "seed", "round"], key=lambda c: c.map(order) if c.name == "method" else c,
                          ignore_index=True)


#: the 30-round file of the baselines rerun on FedGRPO's own reward (8·accuracy + 1·format); absent until run
FEDGRPO_SAME_REWARD_FILE = "fedgrpo_compare_pool_long30_samereward.json"
#: the window-by-window comparisons :func:`fedgrpo_window_table` shows: (arm a, arm b), a − b
FEDGRPO_WINDOW_PAIRS = (("fedgrpo_random", "fedgrpo"), ("fedgrpo", "fedavg_grpo"))


def _fedgrpo_30_round_runs(results: Path, arm: str, file: str | None = None) -> list[dict]:
    """The stored 30-round runs of ``arm``: a control arm from its own file, a baseline or FedGRPO from
    ``fedgrpo_compare_pool_long30.json`` (or from ``file``)."""
    from experiments.fedgrpo_claims import ARM_FILES

    name = file or ARM_FILES.get(arm, "fedgrpo_compare_pool_long30.json")
    method = "fedgrpo" if arm in ARM_FILES and file is None else arm
    return [r for r in json.loads((results / name).read_text())["runs"] if r["method"] == method]


def fedgrpo_windows(a: str, b: str, results: str | Path = RESULTS, window: int = 5) -> pd.DataFrame:
    """Arm ``a`` − arm ``b`` on the stored 30-round runs, window by window
    (:func:`experiments.fedgrpo_claims.window_differences`; arms by :data:`experiments.fedgrpo_claims.METHOD_NAMES`
    keys)."""
    from experiments.fedgrpo_claims import window_differences

    results = Path(results)
    return window_differences(_fedgrpo_30_round_runs(results, a), _fedgrpo_30_round_runs(results, b), window)


def fedgrpo_window_table(results: str | Path = RESULTS, pairs=FEDGRPO_WINDOW_PAIRS, window: int = 5) -> pd.DataFrame:
    """Each pair's difference a − b over the 30-round curves, window by window
    (:func:`experiments.fedgrpo_claims.window_differences`, paired over the seeds both ran): one row per window of
    ``window`` rounds, one column per pair, each cell "mean ± 95 % t half-width (k of n seeds above 0)", points."""
    from experiments.fedgrpo_claims import METHOD_NAMES

    cols = {}
    for a, b in pairs:
        t = fedgrpo_windows(a, b, results, window)
        cols[f"{METHOD_NAMES[a]} − {METHOD_NAMES[b]}"] = {
            r["rounds"]: f"{r['mean']:+.2f} ± {r['±95% t']:.2f} ({r['seeds_favouring_a']} of {r['seeds']} seeds above 0)"
            for r in t.to_dict("records")}
    out = pd.DataFrame(cols)
    out.index.name = "rounds"
    return out


def fedgrpo_same_reward_windows(results: str | Path = RESULTS, baseline: str = "fedavg_grpo",
                                window: int = 5) -> pd.DataFrame | None:
    """FedGRPO − ``baseline`` window by window when the baseline was rerun on FedGRPO's own reward (8·accuracy +
    1·format; :data:`FEDGRPO_SAME_REWARD_FILE`), as :func:`~experiments.fedgrpo_claims.window_differences` gives it;
    None when that file is not stored. FedGRPO's runs are the file's own if it has any, else the stored 30-round
    ones (its reward is the same either way)."""
    from experiments.fedgrpo_claims import window_differences

    results = Path(results)
    if not (results / FEDGRPO_SAME_REWARD_FILE).exists():
        return None
    other = _fedgrpo_30_round_runs(results, baseline, FEDGRPO_SAME_REWARD_FILE)
    if not other:
        raise ValueError(f"{FEDGRPO_SAME_REWARD_FILE}: no {baseline} runs")
    ours = _fedgrpo_30_round_runs(results, "fedgrpo", FEDGRPO_SAME_REWARD_FILE) or \
        _fedgrpo_30_round_runs(results, "fedgrpo")
    return window_differences(ours, other, window)


def fedgrpo_reward_shape_windows(results: str | Path = RESULTS, baseline: str = "fedavg_grpo",
                                 window: int = 5) -> pd.DataFrame | None:
    """What FedGRPO's reward shape alone changes in ``baseline``: the baseline on 8·accuracy + 1·format
    (:data:`FEDGRPO_SAME_REWARD_FILE`) − the same baseline on accuracy alone (the stored 30-round runs), window by
    window; None when the same-reward file is not stored."""
    from experiments.fedgrpo_claims import window_differences

    results = Path(results)
    if not (results / FEDGRPO_SAME_REWARD_FILE).exists():
        return None
    return window_differences(_fedgrpo_30_round_runs(results, baseline, FEDGRPO_SAME_REWARD_FILE),
                              _fedgrpo_30_round_runs(results, baseline), window)


def fedgrpo_window_note(arm: str = "fedgrpo_random", results: str | Path = RESULTS) -> str:
    """One sentence on a control arm minus the competence arm, 5-round window by window, from
    ``benchmarks/results/fedgrpo_windows.json`` (``benchmarks/fedgrpo_windows.py``): the windows whose 95 %
    t-interval excludes 0 with their difference, half-width and how many seeds favour the arm; the others named as
    containing 0."""
    from experiments.fedgrpo_claims import METHOD_NAMES

    stored = json.loads((Path(results) / "fedgrpo_windows.json").read_text())
    run = next(r for r in stored["runs"] if r["arm"] == arm)
    shown, noise = [], []
    for w in run["windows"]:
        mean, half, n = w["mean"], w["±95% t"], w["seeds"]
        if abs(mean) > half:
            seeds = "every seed" if w["seeds_favouring_a"] in (0, n) else f"{w['seeds_favouring_a']} of {n} seeds"
            shown.append(f"rounds {w['rounds']} {'higher' if mean > 0 else 'lower'} by {abs(mean):.2f} "
                         f"(±{half:.2f}, {seeds})")
        else:
            noise.append(w["rounds"])
    n = run["windows"][0]["seeds"]
    return (f"{METHOD_NAMES[arm]} − {METHOD_NAMES['fedgrpo']} (competence-selected), pass@1 points by "
            f"{stored['settings']['window']}-round window, 95 % t-intervals over {n} seeds: "
            + ("; ".join(shown) if shown else "no window excludes 0")
            + (f"; rounds {', '.join(noise)}: the interval contains 0" if noise else "") + ".")



#: the rows of :func:`fedgrpo_gap_sources`: (what it measures, arm a, arm b, which stored comparison), a − b
FEDGRPO_GAP_ROWS = (
    ("the gap: FedGRPO − Fedpetuning+GRPO, each on its own reward", "fedgrpo", "fedavg_grpo", "windows"),
    ("the gap on one reward shape: both on 8·accuracy + format", "fedgrpo", "fedavg_grpo", "same reward"),
    ("the shape alone: Fedpetuning+GRPO on 8·accuracy + format − on accuracy", "fedavg_grpo", "fedavg_grpo",
     "shape"),
    ("the source: every client holds every label − FedGRPO", "fedgrpo_allgt", "fedgrpo", "windows"),
    ("what is left: every client holds every label − Fedpetuning+GRPO", "fedgrpo_allgt", "fedavg_grpo", "windows"),
)


def fedgrpo_gap_sources(results: str | Path = RESULTS, window: int = 5) -> pd.DataFrame | None:
    """Where FedGRPO's gap to Fedpetuning+GRPO comes from, at the last ``window`` rounds of the stored 30-round runs
    (paired by seed, :func:`~experiments.fedgrpo_claims.window_differences`, points): one row per
    :data:`FEDGRPO_GAP_ROWS`, the gap, the gap when both train on FedGRPO's reward shape, what that shape alone
    changes in the baseline, what every client holding every label (every score exact) adds to FedGRPO, and what
    is left between that arm and the baseline. None when :data:`FEDGRPO_SAME_REWARD_FILE` is not stored."""
    results = Path(results)
    if not (results / FEDGRPO_SAME_REWARD_FILE).exists():
        return None
    rows = []
    for name, a, b, kind in FEDGRPO_GAP_ROWS:
        t = {"windows": lambda: fedgrpo_windows(a, b, results, window),
             "same reward": lambda: fedgrpo_same_reward_windows(results, b, window),
             "shape": lambda: fedgrpo_reward_shape_windows(results, b, window)}[kind]()
        last = t.iloc[-1]
        rows.append({"comparison (a − b)": name, "rounds": last["rounds"], "mean": last["mean"],
                     "±95% t": last["±95% t"], "seeds": int(last["seeds"]),
                     "seeds where a leads": int(last["seeds_favouring_a"])})
    return pd.DataFrame(rows).set_index("comparison (a − b)")


#: FedGRPO's own setting, copied from the paper (§4.1, the appendix's hyperparameters), beside which
#: :func:`fedgrpo_scale_down` sets the stored runs'
FEDGRPO_PAPER_SETTING = {
    "server model": "Qwen2.5-Math-1.5B, Qwen2.5-3B, Qwen2.5-Math-7B",
    "training questions": "2,000 of Math-benchmark or OpenR1-Math",
    "test set": "six math benchmarks (MATH500, Minerva, OlympiadBench, AIME 2024, AIME 2025, AMC)",
    "clients K": "4 to 20",
    "split": "Dirichlet 0.1 (non-IID) and IID",
    "rounds": "up to 320",
    "repeats": "3",
    "reward weights (expert score, format)": "8, 1",
}


def fedgrpo_scale_down(results: str | Path = RESULTS) -> pd.DataFrame:
    """The paper's setting (:data:`FEDGRPO_PAPER_SETTING`) beside the stored runs' (read from
    ``fedgrpo_compare_pool_long30.json``'s settings, the quick preset it ran and :func:`fedgrpo_plateaus`' rounds and
    seeds): one row per aspect, columns ``paper`` and ``here``."""
    from fedrl_kit.config import preset

    results = Path(results)
    s = json.loads((results / "fedgrpo_compare_pool_long30.json").read_text())["settings"]
    cfg = preset("quick")
    p = fedgrpo_plateaus(results, base=False)
    seeds = sum(c.startswith("seed ") for c in p.columns)
    rounds = p["rounds"].astype(int)
    fewer = ", ".join(f"{a} {r}" for a, r in rounds.items() if r != rounds.max())
    here = {
        "server model": f"the embedded tiny transformer (notebook 00), LoRA rank {cfg.lora_rank}",
        "training questions": f"{cfg.n_train:,} arithmetic questions of the embedded world",
        "test set": f"{cfg.n_test} arithmetic problems × {s['eval_samples']} samples",
        "clients K": str(s["num_clients"]),
        "split": f"Dirichlet {s['dirichlet_alpha']}",
        "rounds": f"{rounds.max()}" + (f" ({fewer})" if fewer else ""),
        "repeats": f"{seeds} seeds",
        "reward weights (expert score, format)": "8, 1",
    }
    return pd.DataFrame({"paper": FEDGRPO_PAPER_SETTING, "here": here})


def fedgrpo_closing_summary(results: str | Path = RESULTS) -> pd.DataFrame:
    """The paper's claims as the stored runs decide them, five rows: FedGRPO against Fedpetuning+GRPO and
    Central-GRPO and competence against random experts (:func:`fedgrpo_findings`, plateaus paired by seed, points,
    beside the paper's Table 1 range), the traffic claim (Fig. 2: every seed's total bytes of Fedpetuning+GRPO over
    FedGRPO's in ``fedgrpo_compare_pool_long30.json``; holds when every seed's ratio is at least 10, as
    :func:`~experiments.fedgrpo_claims.fedgrpo_claims` decides it) and what no stored run tests."""
    import numpy as np

    results = Path(results)
    paper, f = fedgrpo_paper_table(), fedgrpo_findings(results)

    def span(col: str) -> str:
        return f"{paper[col].min():+.1f} to {paper[col].max():+.1f} points"

    def here(r: pd.Series) -> str:
        return f"{r['difference']:+.2f} ± {r['±95% t']:.2f} points ({int(r['seeds'])} seeds)"

    total: dict[str, dict[int, int]] = {}
    for r in json.loads((results / "fedgrpo_compare_pool_long30.json").read_text())["runs"]:
        total.setdefault(r["method"], {})[r["seed"]] = r["bytes_up"] + r["bytes_down"]
    seeds = sorted(set(total["fedgrpo"]) & set(total["fedavg_grpo"]))
    ratio = np.array([total["fedavg_grpo"][s] / total["fedgrpo"][s] for s in seeds])
    mb = {m: np.mean([total[m][s] for s in seeds]) / 1e6 for m in ("fedgrpo", "fedavg_grpo")}
    verdict = {"holds": "holds", "does not hold": "does not hold", "within noise": "not settled (within noise)",
               "not tested": "not tested: an arm had not flattened by its last round"}

    def near_words(r: pd.Series) -> str:  # "near" is decided against a ±3-point band, not against 0
        if r["verdict"] == "within noise" and abs(r["difference"]) > r["±95% t"]:
            side = "lower" if r["difference"] < 0 else "higher"
            return f"not settled: {side}, but the interval reaches into the ±3-point band that counts as near"
        return verdict[r["verdict"]]
    rows = [
        ("FedGRPO beats Fedpetuning+GRPO (Table 1)", span("FedGRPO − Fedpetuning+GRPO"), here(f.iloc[0]),
         verdict[f.iloc[0]["verdict"]]),
        ("FedGRPO nearly matches Central-GRPO (Table 1)", span("FedGRPO − Central-GRPO"), here(f.iloc[1]),
         near_words(f.iloc[1])),
        ("competence-selected experts beat random ones (the method's premise)", "no random arm", here(f.iloc[2]),
         verdict[f.iloc[2]["verdict"]]),
        ("scalars only: 2–3 orders of magnitude less traffic (Fig. 2)", "2.4 MB against 6.1 GB (7B)",
         f"{ratio.min():.0f}× to {ratio.max():.0f}× less ({mb['fedgrpo']:.2f} MB against "
         f"{mb['fedavg_grpo']:.0f} MB, {len(seeds)} seeds)", "holds" if (ratio >= 10).all() else "does not hold"),
        ("real LLMs, math benchmarks, K = 4 to 20, 320 rounds, DPSDA-FL with Private Evolution, formal privacy",
         "Tables 1–2, Figs. 2–4", "no stored run", "not tested"),
    ]
    return pd.DataFrame(rows, columns=["the paper says", "paper", "here", "verdict"]).set_index("the paper says")


# -- notebook 02: one verdict vocabulary, no row twice, the arms' own levels, and the paper's Table 1 ----------------
def pubswap_teaching_tables(results: str | Path = RESULTS, digits: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`pubswap_findings` labelled F1, F2, … and :func:`pubswap_random_findings` labelled R1, R2, … without the
    comparisons the F table already has, both with the verdict read from each row's own interval ("higher",
    "lower" or "within noise"), so that one comparison is never listed twice under two verdict words. ``digits``:
    the R rows' rounding (the F rows keep the claims table's two digits)."""
    from experiments.stats import sign_verdict

    f, r = pubswap_findings(results), pubswap_random_findings(results, digits)
    r = r[~r.finding.isin(f.finding)]
    out = []
    for table, prefix in ((f, "F"), (r, "R")):
        t = labelled(table, prefix)
        t["verdict"] = [{1: "higher", -1: "lower", 0: "within noise"}[sign_verdict(d, h)]
                        for d, h in zip(t["difference"], t["±95% t"])]
        out.append(t)
    return out[0], out[1]


PUBSWAP_ARM_NAMES = {"fedavg_grpo": "FedAvg-GRPO", "pubswap_balanced": "PubSwap Balanced",
                     "pubswap_noswap": "no-swap control", "pubswap_random": "PubSwap Random"}


def pubswap_arm_levels(results: str | Path = RESULTS) -> pd.DataFrame:
    """Each arm's own levels at the largest stored τ of the larger-τ grid (the setting of :func:`pubswap_findings`):
    seeds, mean ± sample standard deviation over seeds (divisor seeds − 1; the spread of single runs, not an interval
    of the mean) of the final round's pairwise drift δ_pair (‖ΔW‖ units) and of the final pass@1 (points), and
    pass@1 at the start (points), one row per arm of :data:`PUBSWAP_ARM_NAMES`."""
    rows = pd.DataFrame(json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text()))
    t1 = rows[rows.table.isin(["table1", "control"]) & (rows.tau == rows.tau.max())]
    out = []
    for m, name in PUBSWAP_ARM_NAMES.items():
        a = t1[t1.method == m]
        if a.empty:
            continue
        out.append({"arm": name, "seeds": len(a),
                    "δ_pair at the end, mean ± SD": f"{a.drift_end_pairwise_effective.mean():.2f} ± "
                                         f"{a.drift_end_pairwise_effective.std(ddof=1):.2f}",
                    "pass@1 at the start": round(100 * a["pass@1_start"].mean(), 1),
                    "pass@1 at the end, mean ± SD": f"{100 * a['pass@1_final'].mean():.1f} ± "
                                         f"{100 * a['pass@1_final'].std(ddof=1):.1f}"})
    return pd.DataFrame(out).set_index("arm")


PUBSWAP_RESULTS = ("pubswap_paper_quick.json", "pubswap_paper_quick_large_tau.json")
"""the stored PubSwap grids, smaller τ (2, 8) and larger τ (32, 48)"""


def pubswap_drift_split(results: str | Path = RESULTS) -> pd.DataFrame:
    """Where Balanced's drift reduction comes from, at every stored τ that ran the no-swap control: the public steps
    (no-swap control − FedAvg-GRPO) and the swap (Balanced − no-swap control), each the paired mean difference of the
    final round's δ_pair (‖ΔW‖ units) and its 95 % Student-t half-width over the seeds both arms ran, as
    :func:`experiments.sweep.pubswap_claims` computes them; and the swap's share of their sum (%). One row per τ, with
    its rounds and its training length (local steps per client, rounds × τ): the rows differ in both."""
    from experiments.sweep import pubswap_claims

    out = []
    for name in PUBSWAP_RESULTS:
        rows = json.loads((Path(results) / name).read_text())
        claims = pubswap_claims(rows).set_index("claim")
        for tau in sorted({r["tau"] for r in rows if r["method"] == "pubswap_noswap"}):
            def pick(start):
                return claims.loc[next(c for c in claims.index if c.startswith(f"{start}: τ = {tau},"))]

            pub = pick("on-policy public steps limit drift (control, not a paper claim)")
            swap = pick("the swap limits drift (control, not a paper claim)")
            rounds = {r["rounds"] for r in rows if r["tau"] == tau and r["method"] == "pubswap_noswap"}
            out.append({"τ": tau, "rounds": min(rounds), "local steps per client": tau * min(rounds),
                        "seeds": int(min(pub["seeds"], swap["seeds"])),
                        "public steps: control − FedAvg-GRPO": pub["diff"], "±95% t (public steps)": pub["±95% t"],
                        "swap: Balanced − control": swap["diff"], "±95% t (swap)": swap["±95% t"],
                        "swap's share (%)": round(100 * swap["diff"] / (swap["diff"] + pub["diff"]))})
    return pd.DataFrame(out).set_index("τ").sort_index()


#: the PubSwap paper's Table 1 (pass@1 %, 360 GRPO steps, 4 clients, Balanced with τ_swap = 2), as printed there
PUBSWAP_PAPER_TABLE1 = {
    ("Qwen3-1.7B", "MATH"): {"FedAvg-GRPO": (77.9, 75.6, 75.5, 75.9), "PubSwap Balanced": (77.0, 76.7, 76.9, 76.6)},
    ("Qwen3-1.7B", "DeepMath"): {"FedAvg-GRPO": (48.9, 52.7, 50.4, 50.7), "PubSwap Balanced": (51.1, 53.0, 53.3, 55.8)},
    ("Qwen2.5-Math-1.5B", "MATH"): {"FedAvg-GRPO": (73.5, 72.3, 71.9, 71.1),
                                    "PubSwap Balanced": (72.4, 71.6, 72.5, 71.9)},
    ("Qwen2.5-Math-1.5B", "DeepMath"): {"FedAvg-GRPO": (51.0, 52.3, 50.5, 49.3),
                                        "PubSwap Balanced": (52.4, 53.1, 50.8, 53.1)},
}
PUBSWAP_PAPER_TAUS = (10, 40, 90, 120)


def pubswap_paper_gains() -> pd.DataFrame:
    """Balanced − FedAvg-GRPO in the paper's Table 1 (pass@1 points), one row per model and benchmark, one column per
    τ of :data:`PUBSWAP_PAPER_TAUS`."""
    rows = {f"{model}, {bench}": {f"τ = {t}": round(b - f, 1) for t, f, b in
                                  zip(PUBSWAP_PAPER_TAUS, arms["FedAvg-GRPO"], arms["PubSwap Balanced"])}
            for (model, bench), arms in PUBSWAP_PAPER_TABLE1.items()}
    return pd.DataFrame(rows).T.rename_axis("Balanced − FedAvg-GRPO (paper, points)")


def pubswap_start_pass1(seed: int, results: str | Path = RESULTS) -> dict:
    """pass@1 (points) of the untrained policy in the larger-τ grid at its largest τ: at ``seed`` and the mean over
    that grid's seeds, with how it was scored (test problems × samples each, from the grid's preset)."""
    from fedrl_kit.config import preset

    rows = json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text())
    at = [r for r in rows if r["tau"] == max(r["tau"] for r in rows) and r["method"] == "fedavg_grpo"
          and r.get("table", "table1") == "table1"]  # Table 4's rows (α = 0.1) share the seeds, not the split
    base = preset(at[0]["preset"])
    mine = [r["pass@1_start"] for r in at if r["seed"] == seed]
    return dict(at_seed=round(100 * mine[0], 1) if mine else None, seeds=len(at),
                mean=round(100 * sum(r["pass@1_start"] for r in at) / len(at), 1), n_test=base.n_test,
                samples=base.eval_samples)


def pubswap_claims_verdicts(results: str | Path = RESULTS) -> pd.DataFrame:
    """The paper's claims in five rows, each with a verdict read from the stored grids' intervals: "holds" (the 95 %
    t-interval lies on the claimed side of 0), "does not hold" (it lies on the other side), "not reproduced" (it
    contains 0), "not tested" (no stored run can decide it); and the evidence, in words. The accuracy claim is read
    at every τ the larger-τ grid ran, with the largest paper gain its interval at the largest τ still allows."""
    from experiments.stats import sign_verdict
    from experiments.sweep import pubswap_claims

    rows = json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text())
    claims = pubswap_claims(rows).set_index("claim")
    tau = max(r["tau"] for r in rows)
    taus = sorted({r["tau"] for r in rows if r["method"] == "pubswap_balanced"})

    def pick(start):
        r = claims.loc[next(c for c in claims.index if c.startswith(start))]
        return float(r["diff"]), float(r["±95% t"]), int(r["seeds"])

    def verdict(diff, half, claimed_sign):
        s = sign_verdict(diff, half)
        return "not reproduced" if s == 0 else "holds" if s == claimed_sign else "does not hold"

    out = []
    d = pick(f"public steps limit drift: τ = {tau}")
    out.append(("Balanced's public steps keep clients closer than private steps: lower drift (appendix A's upper "
                "bounds, not a measurement: the paper measures no drift)", verdict(d[0], d[1], -1),
                f"τ = {tau}: Balanced − FedAvg-GRPO δ_pair {interval_words(*d, '‖ΔW‖')}"))
    acc = {t: pick(f"Balanced outperforms FedAvg+GRPO for most choices of τ: τ = {t}") for t in taus}
    wins = [t for t, a in acc.items() if sign_verdict(a[0], a[1]) > 0]
    at_taus = f"τ = {', '.join(map(str, taus))}"
    slope = pick("the gains are larger at higher values of τ")
    top = acc[tau][0] + acc[tau][1]
    gains = pubswap_paper_gains().to_numpy().ravel()
    out.append(("Balanced beats FedAvg-GRPO in pass@1 for most τ, by more at larger τ",
                "holds" if len(wins) > len(taus) / 2 else "not reproduced" if all(
                    sign_verdict(*a[:2]) == 0 for a in acc.values()) else "does not hold",
                (f"no gain outside noise at any of {at_taus}" if not wins else
                 f"a gain outside noise at {len(wins)} of {at_taus}") + f"; at τ = {tau} "
                f"{interval_words(*acc[tau], 'points')}, so gains above {top:+.2f} points are ruled out at this scale "
                f"({int((gains > top).sum())} of the paper's {gains.size} gains, up to {gains.max():+.1f}, are larger: "
                f"another model and data, their size not tested); slope per "
                f"doubling of τ {interval_words(*slope, 'points')}"))
    small_tau, *small = pubswap_small_tau_random(results)
    out.append(("Random can beat Balanced at small τ", verdict(small[0], small[1], 1),
                f"τ = {small_tau}: Random − Balanced {interval_words(*small, 'points', 3)}"))
    large = pick(f"this advantage does not persist at larger local-step values: τ = {tau}")
    out.append(("…but not at large τ (Random no better than Balanced)",
                "does not hold" if sign_verdict(large[0], large[1]) > 0 else "holds",
                f"τ = {tau}: Random − Balanced {interval_words(*large, 'points')}"))
    out.append((f"the gains' size on Qwen models, MATH and DeepMath, τ up to {max(PUBSWAP_PAPER_TAUS)}",
                "not tested", f"our runs: a small policy on arithmetic topics, τ ≤ {tau}; only directions compare"))
    return pd.DataFrame(out, columns=["the paper's claim", "verdict", "evidence here (paired over seeds)"])


def pubswap_small_tau_random(results: str | Path = RESULTS) -> tuple[int, float, float, int]:
    """The paper's "Random can outperform Balanced when the number of local steps is small", read at the smallest τ
    of the larger-τ grid: (τ, Random − Balanced pass@1 in points, its 95 % t half-width, seeds), unrounded (the
    claims table rounds to two digits)."""
    from experiments.sweep import _compare, pubswap_claims

    rows = json.loads((Path(results) / "pubswap_paper_quick_large_tau.json").read_text())
    name = next(c for c in pubswap_claims(rows).claim if c.startswith("Random can outperform Balanced when the number "
                                                                      "of local steps is small: τ = "))
    tau = int(name.split("τ = ")[1].split(",")[0])
    t1 = pd.DataFrame(rows).query("table == 'table1'")
    mean, _, half, n = _compare(t1, {"method": "pubswap_random", "tau": tau}, {"method": "pubswap_balanced", "tau": tau},
                                "pass@1_final")
    return tau, 100 * mean, 100 * half, n


def fedmoa_ablation_findings(results: str | Path = RESULTS) -> pd.DataFrame:
    """The stored ``cpu`` grid's one-component arms against FedAvg-GRPO (Heter+Heter, all families, last round):
    "λ off, α on" (eq. 11's α alone) and "λ on, α off" (eqs. 9–10 alone), on global accuracy (pass@1 points) and
    aggregated reward, in :data:`COLUMNS` with the verdict as "higher", "lower" or "within noise" (the 95 % t
    interval's sign) and ``paper``, the paper's Table 2 difference on MATH (None: it has no "λ on, α off" row)."""
    from experiments import fedmoa_analysis as analysis
    from experiments.stats import sign_verdict

    grid = json.loads((Path(results) / "fedmoa_compare_cpu.json").read_text())
    claims = {c["claim"]: c for c in analysis.in_points(analysis.paired_claims(grid["runs"]))}
    out = []
    for arm, start, rest in (("λ off, α on", "α helps", "Table 2, "), ("λ on, α off", "λ alone",
                                                                       "ablation row the paper lacks, ")):
        for what, unit in (("accuracy", "points"), ("reward", "reward")):
            head = f"{start}: {arm} > FedAvg-GRPO on {what} ({rest}"
            c = claims[head + "all families, ours)"]
            paper = claims.get(head + "MATH, as the paper)", {}).get("paper")
            out.append({"finding": f"{'global accuracy' if what == 'accuracy' else 'aggregated reward'}, {arm} − "
                                   f"FedAvg-GRPO (Heter+Heter)", "difference": c["mean_difference"],
                        "±95% t": c["half_width"], "seeds": len(c["seeds"]),
                        "verdict": {1: "higher", -1: "lower", 0: "within noise"}[
                            sign_verdict(c["mean_difference"], c["half_width"])],
                        "unit": unit, "paper": paper})
    return pd.DataFrame(out, columns=COLUMNS + ["unit", "paper"])


def fedmoa_weight_split_findings(results: str | Path = RESULTS) -> pd.DataFrame:
    """Where the stored ``cpu`` grid's accuracy weight goes (Heter+Heter), split like for like with the paper's
    Fig. 5: the change of w_acc *within* rounds (eq. 10's moves, what Fig. 5 shows rising) and *at* round
    boundaries (eqs. 11–12's jumps), for FedMOA and for the "λ on, α off" arm (the same jumps with data-size α),
    mean over clients summed over rounds (:func:`experiments.fedmoa_analysis.accuracy_weight_split`), in
    :data:`COLUMNS` with the verdict as "higher", "lower" or "within noise" (the 95 % t interval's sign)."""
    from experiments import fedmoa_analysis as analysis
    from experiments.stats import sign_verdict, t_interval

    grid = json.loads((Path(results) / "fedmoa_compare_cpu.json").read_text())
    split = pd.DataFrame(analysis.accuracy_weight_split(grid["runs"]))
    out = []
    for variant, part, words in (("FedMOA", "within", "within rounds (eq. 10)"),
                                 ("FedMOA", "boundary", "at round boundaries (eqs. 11–12)"),
                                 ("λ on, α off", "boundary", "at round boundaries (eq. 12, data-size α)")):
        mean, half, n = t_interval(split.loc[split.variant == variant, part].tolist())
        out.append({"finding": f"w_acc change {words}, {variant}", "difference": mean, "±95% t": half, "seeds": n,
                    "verdict": {1: "higher", -1: "lower", 0: "within noise"}[sign_verdict(mean, half)]})
    return pd.DataFrame(out, columns=COLUMNS)
