"""Grids of runs: run (or resume) many configs, summarise them, and shape paper-style tables.

Every run lives in its own folder ``root/<name>``, so an interrupted sweep picks up where it
stopped (finished runs are read back, the interrupted one resumes from its last checkpoint).

:func:`pubswap_grid` is the PubSwap experiment design (Tables 1 and 4–6 of the PubSwap paper)
on a fixed budget of local GRPO steps, shared by ``benchmarks/pubswap_sweep.py`` and notebook 02.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedrl_kit.config import RunConfig, preset
from fedrl_kit.pubswap.args import PAPER_SETTING
from fedrl_kit.runs import Run


def run_grid(grid: dict[str, RunConfig], root: str | Path, progress: bool = True) -> dict[str, list[dict]]:
    """Run or resume every config of ``grid`` under ``root/<name>``; returns each run's metric records."""
    from tqdm.auto import tqdm

    out = {}
    for name, cfg in tqdm(grid.items(), desc="grid", disable=not progress, total=len(grid)):
        out[name] = Run(cfg, Path(root) / name, progress=progress).run()
    return out


def summarise(records: list[dict]) -> dict:
    """Final and best pass@1 of the global model, and end-of-round drift when traced.

    ``pass@1_best`` is the best evaluated checkpoint after training began (the paper's appendix B.2 reports it
    beside the final one), ``best_round`` the round it was evaluated at; both come from the run's "global"
    evaluation records, so they are only as fine as ``eval_every``.

    ``drift_end_*`` is the mean over rounds of the clients' mean pairwise adapter distance after the
    round's last local step, i.e. just before aggregation.
    """
    ev = [r for r in records if r["kind"] == "global"]
    if not ev:
        raise ValueError("records hold no global evaluation")
    trained = ev[1:] or ev  # the best checkpoint is one the run trained (round 0 is the base model)
    best = max(trained, key=lambda r: r["pass@1"])  # the first of equals: the earliest round that reached it
    out = {"pass@1_start": ev[0]["pass@1"], "pass@1_final": ev[-1]["pass@1"], "pass@1_best": best["pass@1"],
           "best_round": best["round"], "format_final": ev[-1].get("format", float("nan")), "rounds": ev[-1]["round"]}
    drift = [r for r in records if r["kind"] == "drift"]
    if drift:
        last = {}
        for d in drift:  # the last local step of each round
            if d["round"] not in last or d["step"] > last[d["round"]]["step"]:
                last[d["round"]] = d
        for key in ("pairwise_effective", "pairwise_factors", "to_global_effective"):
            out[f"drift_end_{key}"] = float(np.mean([d[key] for d in last.values()]))
        pub = [d["replacement_fraction"] for d in drift if "replacement_fraction" in d]
        if pub:
            out["replacement_fraction"] = float(np.mean(pub))
        for kind in ("private", "public"):
            g = [d["grad_dissimilarity"] for d in drift if d["step_kind"] == kind and "grad_dissimilarity" in d]
            if g:
                out[f"grad_dissimilarity_{kind}"] = float(np.mean(g))
    return out


def table(rows: list[dict], index: str, columns: str, value: str, digits: int = 1, scale: float = 100.0) -> pd.DataFrame:
    """A pivot of ``value`` as ``mean ± std (n=seeds)`` over seeds (a single seed shows its value alone)."""
    df = pd.DataFrame(rows)
    if df.empty:
        raise ValueError("no rows to tabulate")

    def cell(x):
        x = np.asarray(x, float) * scale
        return f"{x.mean():.{digits}f}" + (f" ± {x.std(ddof=1):.{digits}f} (n={len(x)})" if len(x) > 1 else "")

    return df.pivot_table(index=index, columns=columns, values=value, aggfunc=cell, sort=False)


# -- the PubSwap design ------------------------------------------------------------------------------------
PUBSWAP_SCALES = {
    # quick: the embedded world; 24 local steps per client in all (the paper's 360), τ ∈ {2, 8} (its 10 … 120)
    "quick": dict(total_steps=24, taus=(2, 8), period_taus=(8,), periods=(2, 4, 8), hetero_taus=(8,)),
    # quick_large_tau: the embedded world at the paper's ratio of τ to budget (its τ = 120 is a third of 360):
    # 96 local steps, τ up to 32 (3 rounds) and 48 (2 rounds), Table 1's arms only
    "quick_large_tau": dict(total_steps=96, taus=(2, 8, 32, 48), period_taus=(), periods=(), hetero_taus=()),
    # quick_tau64: τ = 64 too, on 192 local steps (3 rounds at τ = 64): twice the cost of quick_large_tau
    "quick_tau64": dict(total_steps=192, taus=(2, 8, 32, 64), period_taus=(), periods=(), hetero_taus=()),
    # smoke: the same grid at the smallest size that still has every table's arms (notebook 02's smoke preset, CI)
    "smoke": dict(total_steps=4, taus=(2, 4), period_taus=(4,), periods=(2, 4), hetero_taus=(4,)),
    # full: the paper's budget (Tables 1, 4–6) on a GPU
    "full": dict(total_steps=360, taus=(10, 40, 90, 120), period_taus=(90, 120), periods=(2, 4, 8),
                 hetero_taus=(40, 90, 120)),
}
PROX_MUS = (0.001, 0.01, 0.1)

SETTINGS = {
    # the paper's: FedIT (eq. 4) for every arm, AdamW with weight decay 0.01 (Tables 9–12), equal-size clients
    # (4 × 2,500 MATH problems, B.1; Table 4's split after Acar et al.)
    "paper": dict(PAPER_SETTING, equal_size=True),
    # the setting of the first stored sweep (benchmarks/results/pubswap_sweep*): FedAvg by examples, plain Adam,
    # Dirichlet clients of unequal size in Tables 1 and 5 (Table 4 equal-size)
    "fedavg_examples": dict(aggregator="fedavg", weight_decay=0.0, equal_size=False),
}
"""the experimental settings of :func:`pubswap_grid` (what every arm shares besides the method)"""


def pubswap_grid(preset_name: str = "quick", seeds=(0,), alpha: float = 0.3, hetero_alpha: float = 0.1,
                 tables=("table1", "table4", "table5"), setting: str = "paper", scale: str | None = None,
                 **overrides) -> dict[str, RunConfig]:
    """Configs of the PubSwap experiments, named ``<table>/<method>/tau<τ>[/…]/seed<s>``.

    - table1: FedAvg-GRPO, FedProx-GRPO (μ ∈ {0.001, 0.01, 0.1}), PubSwap Random and Balanced
      (τ_swap = 2) for each τ, Dirichlet(α = 0.3) over topics as in the paper's Table 1;
    - table4: FedAvg-GRPO vs Balanced on equal-size Dirichlet(α = 0.1) clients (Table 4);
    - table5: Balanced with τ_swap ∈ {4, 8} (Tables 5–6; τ_swap = 2 is table1's Balanced run).

    Every run does the same number of local steps per client (``total_steps``; rounds = total / τ),
    so methods and τ values get the same budget of rollouts. Drift is traced in every run.

    Args:
        preset_name: the config preset every run starts from (``quick``, ``full`` or a paper preset).
        seeds: one run per seed and arm.
        alpha, hetero_alpha: Dirichlet concentration of Tables 1/5 and of Table 4.
        tables: which tables' arms.
        setting: a key of :data:`SETTINGS`: ``"paper"`` (FedIT, weight decay 0.01, equal-size clients) or
            ``"fedavg_examples"`` (the first stored sweep's setting).
        scale: a key of :data:`PUBSWAP_SCALES` (default: ``quick`` for the quick preset, else ``full``).
        overrides: config fields set on every run (after the setting's).
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {tuple(SETTINGS)}, got {setting!r}")
    scale = scale or ("quick" if preset_name == "quick" else "full")
    if scale not in PUBSWAP_SCALES:
        raise ValueError(f"scale must be one of {tuple(PUBSWAP_SCALES)}, got {scale!r}")
    bad = sorted(set(tables) - {"table1", "table4", "table5"})
    if bad:
        raise ValueError(f"tables must be among ('table1', 'table4', 'table5'), got {bad}")
    spec = PUBSWAP_SCALES[scale]
    grid: dict[str, RunConfig] = {}

    def add(name, tau, seed, **kw):
        rounds = spec["total_steps"] // tau
        base = dict(local_steps=tau, rounds=rounds, eval_every=max(1, rounds // 4), seed=seed, trace_drift=True,
                    partition="dirichlet", dirichlet_alpha=alpha, **SETTINGS[setting])
        base.update(overrides)
        base.update(kw)
        grid[f"{name}/seed{seed}"] = preset(preset_name, **base)

    for seed in seeds:
        if "table1" in tables:
            for tau in spec["taus"]:
                add(f"table1/fedavg_grpo/tau{tau}", tau, seed, method="fedavg_grpo")
                for mu in PROX_MUS:
                    add(f"table1/fedprox_grpo_mu{mu}/tau{tau}", tau, seed, method="fedprox_grpo", fedprox={"mu": mu})
                for m in ("pubswap_random", "pubswap_balanced"):
                    add(f"table1/{m}/tau{tau}", tau, seed, method=m, pubswap={"period": 2})
        if "table4" in tables:
            for tau in spec["hetero_taus"]:
                for m in ("fedavg_grpo", "pubswap_balanced"):
                    add(f"table4/{m}/tau{tau}", tau, seed, method=m, pubswap={"period": 2}, dirichlet_alpha=hetero_alpha,
                        equal_size=True)
        if "table5" in tables:
            for tau in spec["period_taus"]:
                for period in spec["periods"]:
                    if period != 2 and period <= tau:  # τ_swap = 2 is table1's Balanced run
                        add(f"table5/pubswap_balanced_swap{period}/tau{tau}", tau, seed, method="pubswap_balanced",
                            pubswap={"period": period})
    return grid


def result_paths(setting: str, scale: str, root: str | Path) -> tuple[Path, Path]:
    """Where ``benchmarks/pubswap_sweep.py`` stores a setting and scale under ``root`` (benchmarks/results):
    (the folder of each run's metrics.jsonl copy, the summary JSON). The first stored sweep (setting
    ``fedavg_examples``, scale ``quick``) keeps its original names ``pubswap_sweep/`` and ``pubswap_sweep.json``."""
    root = Path(root)
    if setting == "fedavg_examples" and scale == "quick":
        return root / "pubswap_sweep", root / "pubswap_sweep.json"
    stem = "pubswap_paper" if setting == "paper" else f"pubswap_{setting}"
    return root / stem / scale, root / f"{stem}_{scale}.json"


def parse_name(name: str) -> dict:
    """``table1/fedprox_grpo_mu0.01/tau8/seed0`` → {table, method, tau, seed}."""
    parts = name.split("/")
    return {"table": parts[0], "method": parts[1], "tau": int(parts[2].removeprefix("tau")),
            "seed": int(parts[-1].removeprefix("seed"))}


def summary_row(name: str, cfg: RunConfig, records: list[dict], **labels) -> dict:
    """One run of a grid as a row of its summary: its name read as design (:func:`parse_name`), ``labels``
    (preset, scale, setting), the config fields the tables group by, :func:`summarise` of its records and its
    wall seconds (the sum over its rounds' ``comm`` records)."""
    return {"name": name, **parse_name(name), **labels, "aggregator": cfg.aggregator,
            "weight_decay": cfg.weight_decay, "equal_size": cfg.equal_size, "local_steps": cfg.local_steps,
            "rounds": cfg.rounds, "pubswap_period": cfg.pubswap.period, "dirichlet_alpha": cfg.dirichlet_alpha,
            **summarise(records), "seconds": round(sum(r["seconds"] for r in records if r["kind"] == "comm"), 1)}


def grid_coverage(rows: list[dict], scale: str, tables=("table1",), seeds=(0, 1, 2)) -> pd.DataFrame:
    """How much of a scale's grid the rows hold: one line per arm (table, method, τ) of ``pubswap_grid`` with
    the seeds the grid asks (``seeds_grid``) and those stored (``seeds_stored``); arms the rows hold but the
    grid does not are left out. A summary file is partial while any arm has fewer stored seeds than asked."""
    if scale not in PUBSWAP_SCALES:
        raise ValueError(f"scale must be one of {tuple(PUBSWAP_SCALES)}, got {scale!r}")
    grid = pd.DataFrame([parse_name(n) for n in pubswap_grid("quick", seeds=tuple(seeds), tables=tuple(tables),
                                                                  scale=scale)])
    keys = ["table", "method", "tau"]
    asked = grid.groupby(keys, sort=False).seed.nunique().rename("seeds_grid")
    have = pd.DataFrame(rows, columns=keys + ["seed"]).groupby(keys).seed.nunique().rename("seeds_stored")
    out = asked.to_frame().join(have).fillna({"seeds_stored": 0}).astype(int).reset_index()
    return out


def paired_diffs(df: pd.DataFrame, a: dict, b: dict, value: str) -> pd.Series:
    """Per seed that both arms ran, ``value`` of arm a minus arm b (each arm: the rows matching ``{column: value}``,
    averaged per seed). Indexed by seed, sorted; empty when the arms share no seed."""
    def pick(sel):
        m = np.ones(len(df), bool)
        for k, v in sel.items():
            m &= (df[k] == v).to_numpy()
        return df[m].groupby("seed")[value].mean()
    xa, xb = pick(a), pick(b)
    seeds = sorted(set(xa.index) & set(xb.index))
    return (xa[seeds] - xb[seeds]).astype(float)


def _compare(df: pd.DataFrame, a: dict, b: dict, value: str) -> tuple[float, float, int]:
    """Paired over the seeds both arms ran: (mean of a − b, standard error of that mean, number of seeds).

    Seeds pair naturally (the same seed is the same world, partition and base start), so the paired
    difference is the fair comparison; the SE is nan with fewer than 2 common seeds.
    """
    d = paired_diffs(df, a, b, value).to_numpy(float)  # [seeds]
    if not len(d):
        return float("nan"), float("nan"), 0
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return float(d.mean()), se, len(d)


def _verdict(diff: float, se: float, n: int, want_positive: bool = True) -> str:
    if np.isnan(diff):
        return "not measured"
    if n < 2 or np.isnan(se):
        return ("yes" if (diff > 0) == want_positive else "no") + " (one seed: no error bar)"
    if abs(diff) < 2 * se:
        return "within noise (|diff| < 2 SE)"
    return "yes" if (diff > 0) == want_positive else "no"


def swap_period(row) -> int:
    """τ_swap of a Balanced run: ``pubswap_balanced_swap<p>`` names it (Table 5); Table 1's Balanced run records it
    as ``pubswap_period`` (rows written before that column existed ran the grid's τ_swap = 2)."""
    name = row["method"]
    if "_swap" in name:
        return int(name.rsplit("_swap", 1)[1])
    period = row.get("pubswap_period")
    return 2 if period is None or pd.isna(period) else int(period)


def table5_arms(rows: list[dict]) -> pd.DataFrame:
    """The Balanced runs of Table 5 with their τ_swap (column ``tau_swap``): the table5 rows and, at the same τ,
    Table 1's Balanced runs (the grid's τ_swap = 2). Empty when the rows hold no table5 run."""
    df = pd.DataFrame(rows)
    if "table" not in df or not (df.table == "table5").any():
        return df.iloc[:0].assign(tau_swap=pd.Series(dtype=int))
    t5 = df[df.table == "table5"]
    arms = pd.concat([t5, df[(df.table == "table1") & (df.method == "pubswap_balanced") & df.tau.isin(set(t5.tau))]])
    return arms.assign(tau_swap=[swap_period(r) for r in arms.to_dict("records")])


def pubswap_claims(rows: list[dict], value: str = "pass@1_final") -> pd.DataFrame:
    """The PubSwap paper's claims checked on sweep summaries (rows as written by ``benchmarks/pubswap_sweep.py``).

    Each claim is a paired comparison over the seeds both arms ran: ``diff`` is the mean difference in
    pass@1 points (or drift units), ``se`` its standard error, ``seeds`` how many pairs; the verdict
    says "within noise" when |diff| < 2 SE. A claim the rows cannot test reads "not tested (why)" with no diff:
    the small-τ claims when table1 holds a single τ, and the Table 5 claims with one τ_swap or one seed.

    Table 5 (swap period τ_swap; §4.4, Tables 5–6) when table5 rows exist, at each of their τ, over the
    τ_swap values run there (Table 1's Balanced run is τ_swap = 2): Balanced beats FedAvg-GRPO at every
    τ_swap ("for PubSwap periods of 2, 4, and 8 … consistently outperforms the baselines"); more frequent
    public steps are not necessarily better (the smallest τ_swap minus each larger one, claimed not > 0);
    and the mechanism the paper names, more frequent public steps limit drift (end-of-round drift of the
    smallest τ_swap minus the largest, claimed < 0).

    Args:
        rows: one summary row per run (``table``, ``method``, ``tau``, ``seed`` and the summary's values).
        value: ``"pass@1_final"`` (the paper's main tables) or ``"pass@1_best"`` (its appendix B.2, Tables 7–8:
            the best evaluated checkpoint of each run); FedProx's best μ is picked on the same value.
    """
    if value not in ("pass@1_final", "pass@1_best"):
        raise ValueError(f"value must be 'pass@1_final' or 'pass@1_best', got {value!r}")
    which = value.removeprefix("pass@1_")
    df = pd.DataFrame(rows)
    t1 = df[df.table == "table1"] if "table" in df else df.iloc[:0]
    if t1.empty:
        raise ValueError("no table1 rows: run benchmarks/pubswap_sweep.py first")
    taus = sorted(t1.tau.unique())
    small, large = taus[0], taus[-1]
    out = []

    def claim(text, a, b, value=value, scale=100.0, want_positive=True, data=t1, min_seeds=1):
        diff, se, n = _compare(data, a, b, value)
        holds = _verdict(diff, se, n, want_positive)
        if 0 < n < min_seeds:
            holds = "not tested (one seed)"
        out.append({"claim": text, "diff": round(diff * scale, 2), "se": round(se * scale, 2), "seeds": n,
                    "holds": holds})

    def untested(text, why):
        out.append({"claim": text, "diff": float("nan"), "se": float("nan"), "seeds": 0, "holds": f"not tested ({why})"})

    claim(f"Balanced beats FedAvg-GRPO at large τ = {large} ({which} pass@1, points)",
          {"method": "pubswap_balanced", "tau": large}, {"method": "fedavg_grpo", "tau": large})
    if small == large:
        untested("Balanced beats FedAvg-GRPO at small τ", f"only one τ: {large}")
    else:
        claim(f"Balanced beats FedAvg-GRPO at small τ = {small}",
              {"method": "pubswap_balanced", "tau": small}, {"method": "fedavg_grpo", "tau": small})
    for tau in taus:
        prox = t1[(t1.tau == tau) & t1.method.str.startswith("fedprox")]
        if len(prox):  # the best μ as the paper picks it, judged on the seeds every μ ran
            common = set.intersection(*(set(g.seed) for _, g in prox.groupby("method")))
            best = prox[prox.seed.isin(common)].groupby("method")[value].mean().idxmax()
            claim(f"FedProx does not help at τ = {tau}: best μ ({best.split('_mu')[1]}) minus FedAvg-GRPO",
                  {"method": best, "tau": tau}, {"method": "fedavg_grpo", "tau": tau}, want_positive=False)
    if small == large:
        untested("Random beats Balanced at small τ", f"only one τ: {large}")
    else:
        claim(f"Random beats Balanced at small τ = {small}",
              {"method": "pubswap_random", "tau": small}, {"method": "pubswap_balanced", "tau": small})
    claim(f"Balanced beats Random at large τ = {large}",
          {"method": "pubswap_balanced", "tau": large}, {"method": "pubswap_random", "tau": large})
    claim(f"public steps reduce end-of-round drift at τ = {large}: Balanced minus FedAvg-GRPO (‖ΔW‖ units)",
          {"method": "pubswap_balanced", "tau": large}, {"method": "fedavg_grpo", "tau": large},
          value="drift_end_pairwise_effective", scale=1.0, want_positive=False)
    t4 = df[df.table == "table4"]
    if len(t4):
        for tau in sorted(t4.tau.unique()):
            claim(f"higher heterogeneity (α = 0.1, equal size), τ = {tau}: Balanced beats FedAvg-GRPO",
                  {"method": "pubswap_balanced", "tau": tau}, {"method": "fedavg_grpo", "tau": tau}, data=t4)
    t5 = table5_arms(rows)
    for tau in sorted(t5.tau.unique()):
        arms = t5[t5.tau == tau]
        data = pd.concat([arms, t1[(t1.tau == tau) & (t1.method == "fedavg_grpo")].assign(tau_swap=0)])
        periods = sorted(arms.tau_swap.unique())
        for p in periods:
            claim(f"Table 5, τ = {tau}: Balanced with τ_swap = {p} beats FedAvg-GRPO",
                  {"tau_swap": p}, {"method": "fedavg_grpo"}, data=data, min_seeds=2)
        if len(periods) < 2:
            untested(f"Table 5, τ = {tau}: more frequent public steps are not necessarily better",
                     f"only one τ_swap: {periods[0]}")
            continue
        lo, hi = periods[0], periods[-1]
        for p in periods[1:]:
            claim(f"Table 5, τ = {tau}: more frequent public steps are not necessarily better: "
                  f"τ_swap = {lo} minus τ_swap = {p}", {"tau_swap": lo}, {"tau_swap": p}, data=data, want_positive=False,
                  min_seeds=2)
        claim(f"Table 5, τ = {tau}: more frequent public steps limit drift: τ_swap = {lo} minus τ_swap = {hi} "
              "(‖ΔW‖ units)", {"tau_swap": lo}, {"tau_swap": hi}, value="drift_end_pairwise_effective", scale=1.0,
              want_positive=False, data=data, min_seeds=2)
    return pd.DataFrame(out)
