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
    from experiments.fedgrpo_claims import arm_claims, load_arms, long_claims

    results = Path(results)
    long = [json.loads((results / n).read_text()) for n in ("fedgrpo_compare_pool_long.json",
                                                            "fedgrpo_compare_pool_long30.json")]
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
            "clients' own accuracy, FedMOA − FedAvg-GRPO (code family)",
    }, mean="mean_difference", half="half_width")
    paths = pd.DataFrame(analysis.accuracy_weight_paths(grid["runs"]))
    for variant in ("FedMOA", "FedMOA, λ=100"):
        p = paths[paths.variant == variant].pivot_table(index="seed", columns="round", values="mean_w0")
        mean, half, n = t_interval((p[p.columns.max()] - p[0]).tolist())
        table.loc[len(table)] = {"finding": f"accuracy weight w_acc, last round − start ({variant})",
                                 "difference": mean, "±95% t": half, "seeds": n,
                                 "verdict": "falls" if mean + half < 0 else "within noise"}
    return table.round(3)


def interval_words(difference: float, half_width: float, seeds: int, unit: str = "pass@1 points") -> str:
    """A paired difference and its 95 % Student-t half-width in words that agree with the interval: "higher (lower)
    by X … which excludes 0" when mean ± half-width lies on one side of 0, else "… contains 0: no difference is
    established" (never "within noise" for an interval that excludes 0)."""
    low, high = difference - half_width, difference + half_width
    interval = f"95 % t-interval ±{half_width:.2f} over {seeds} seeds, {low:+.2f} to {high:+.2f}"
    if low > 0 or high < 0:
        return f"{'higher' if difference > 0 else 'lower'} by {abs(difference):.2f} {unit} ({interval}: excludes 0)"
    return f"{difference:+.2f} {unit} ({interval}: contains 0, so no difference is established)"


#: the two arms each row of :func:`fedgrpo_findings` compares (a − b), in its row order (fedgrpo_claims' names)
FEDGRPO_FINDING_ARMS = [("fedgrpo", "fedavg_grpo"), ("fedgrpo", "central_grpo"), ("fedgrpo", "fedgrpo_random"),
                        ("fedgrpo_allgt", "fedgrpo")]


def fedgrpo_finding_notes(results: str | Path = RESULTS) -> pd.DataFrame:
    """:func:`fedgrpo_findings` as sentences a notebook can quote: one row per finding, labelled F1, F2, …, with the
    difference in words (:func:`interval_words`) and its setting (clients, β, τ, prompts per step, seeds and each
    arm's rounds), all read from the stored files."""
    from experiments.fedgrpo_claims import METHOD_NAMES, load_arms, long_curves, with_arms

    results = Path(results)
    long = [json.loads((results / n).read_text()) for n in ("fedgrpo_compare_pool_long.json",
                                                            "fedgrpo_compare_pool_long30.json")]
    rounds = long_curves(with_arms(long, load_arms(results))).set_index("method")["rounds"]
    s = long[0]["settings"]
    table = fedgrpo_findings(results)
    rows = []
    for i, ((a, b), r) in enumerate(zip(FEDGRPO_FINDING_ARMS, table.to_dict("records")), 1):
        arms = " against ".join(f"{METHOD_NAMES[x]} ({int(rounds[METHOD_NAMES[x]])} rounds)" for x in (a, b))
        rows.append({"label": f"F{i}", "finding": r["finding"],
                     "result": interval_words(r["difference"], r["±95% t"], int(r["seeds"])),
                     "setting": (f"K = {s['num_clients']} clients, β = {s['dirichlet_alpha']}, τ = {s['local_steps']}, "
                                 f"{s['prompts_per_step']} prompts per client and step, {int(r['seeds'])} seeds; {arms}; "
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
FEDGRPO_PLATEAU_ARMS = ("fedgrpo", "fedavg_grpo", "central_grpo", "fedgrpo_random", "fedgrpo_allgt")


def fedgrpo_plateaus(results: str | Path = RESULTS, window: int = 5) -> pd.DataFrame:
    """Each arm's absolute plateau (mean pass@1 of its last ``window`` evaluated rounds, in points) per seed, their
    mean, and the rounds the arm trained, read from the stored files :func:`fedgrpo_finding_notes` reads (each
    (arm, seed) from the file that trained it longest). Only the seeds FedGRPO ran, so that two rows' means differ
    by the paired differences of :func:`fedgrpo_findings`. One row per arm of :data:`FEDGRPO_PLATEAU_ARMS`."""
    from experiments.fedgrpo_claims import METHOD_NAMES, curve_frame, load_arms, with_arms

    results = Path(results)
    long = [json.loads((results / n).read_text()) for n in ("fedgrpo_compare_pool_long.json",
                                                            "fedgrpo_compare_pool_long30.json")]
    df = curve_frame(with_arms(long, load_arms(results)))
    df = df[df["method"].isin(FEDGRPO_PLATEAU_ARMS) & df["seed"].isin(df.loc[df["method"] == "fedgrpo", "seed"])]
    last = df.sort_values("round").groupby(["method", "seed"])
    plateau = last.tail(window).groupby(["method", "seed"])["pass_at_1"].mean().unstack("seed") * 100
    plateau.columns = [f"seed {s}" for s in plateau.columns]
    plateau["mean"] = plateau.mean(axis=1)
    plateau.insert(0, "rounds", last["round"].max().groupby("method").min())
    plateau = plateau.reindex([a for a in FEDGRPO_PLATEAU_ARMS if a in plateau.index])
    plateau.index = [METHOD_NAMES[a] for a in plateau.index]
    plateau.index.name = "arm"
    return plateau.round(2)


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
