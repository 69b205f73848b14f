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

from experiments.stats import INTERVAL, detectable_effect, sign_verdict, t_interval
from fedrl_kit.config import REFERENCE_PATH, RunConfig, preset
from fedrl_kit.pubswap.args import PAPER_SETTING
from fedrl_kit.pubswap.presets import PAPER_PRESETS
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
        out[NORMALISED_DRIFT] = normalised_drift(out)
        pub = [d["replacement_fraction"] for d in drift if "replacement_fraction" in d]
        if pub:
            out["replacement_fraction"] = float(np.mean(pub))
        for kind in ("private", "public"):
            g = [d["grad_dissimilarity"] for d in drift if d["step_kind"] == kind and "grad_dissimilarity" in d]
            if g:
                out[f"grad_dissimilarity_{kind}"] = float(np.mean(g))
    return out


NORMALISED_DRIFT = "drift_end_normalised"
"""the summary column of :func:`normalised_drift`"""
UNALIGNED = float(np.sqrt(2.0))
"""the normalised drift of unaligned updates: two clients' moves u, u' of equal norm with u · u' = 0 are
‖u − u'‖ = √2 ‖u‖ apart"""


def normalised_drift(row: dict) -> float:
    """End-of-round pairwise drift ÷ end-of-round distance to the global model (both in ΔW space, each the mean over
    rounds that a summary row stores, so the ratio of the two means): how *differently* the clients moved, with how
    *far* divided out. Two clients that moved equally far from the broadcast adapter in unrelated directions give
    √2 (:data:`UNALIGNED`); a shared direction gives less (0 when they moved alike), opposed directions more (up to 2).
    A method that only shrinks every client's move (FedProx's proximal term) leaves it where it was. nan when the row
    lacks either drift."""
    pair, glob = row.get("drift_end_pairwise_effective"), row.get("drift_end_to_global_effective")
    if pair is None or glob is None or not np.isfinite(pair) or not np.isfinite(glob) or glob <= 0:
        return float("nan")
    return float(pair / glob)


def with_normalised_drift(rows: list[dict]) -> list[dict]:
    """``rows`` (summary rows) with :data:`NORMALISED_DRIFT` added where missing (rows stored before it existed hold
    both drifts it is computed from); the rows passed in are not changed."""
    return [r if NORMALISED_DRIFT in r else {**r, NORMALISED_DRIFT: normalised_drift(r)} for r in rows]


def drift_levels(rows: list[dict], tables=("table1", "control")) -> pd.DataFrame:
    """Each arm's end-of-round drift, absolute (pairwise ‖ΔW_n − ΔW_n′‖_F), its distance to the global model (``to
    global``) and the two's ratio (``normalised``, :func:`normalised_drift`), per method and τ of ``tables``: the mean over the arm's seeds ± the half-width of its 95 % Student-t interval
    (n − 1 degrees of freedom; the interval of the arm's mean, not paired), and the seeds. Numbers, one row per
    (method, τ); :func:`drift_levels_markdown` prints it."""
    df = pd.DataFrame(with_normalised_drift(rows))
    if "table" in df:
        df = df[df.table.isin(tables)]
    if df.empty or "drift_end_pairwise_effective" not in df:
        raise ValueError("no rows with drift to tabulate")
    out = []
    for (method, tau), g in df.groupby(["method", "tau"], sort=False):
        a, ha, n = t_interval(g.drift_end_pairwise_effective.dropna())
        r, hr, _ = t_interval(g[NORMALISED_DRIFT].dropna())
        d, hd, _ = (t_interval(g.drift_end_to_global_effective.dropna()) if "drift_end_to_global_effective" in g
                    else (float("nan"),) * 3)
        out.append({"method": method, "tau": int(tau), "seeds": n, "drift": a, "drift ±95% t": ha,
                    "to global": d, "to global ±95% t": hd, "normalised": r, "normalised ±95% t": hr})
    return pd.DataFrame(out).sort_values(["tau", "method"], kind="stable").reset_index(drop=True)


def drift_levels_markdown(rows: list[dict], tables=("table1", "control")) -> str:
    """:func:`drift_levels` as a markdown table, one row per method, one column per τ, each cell
    ``absolute ± t / normalised ± t (n)``."""
    t = drift_levels(rows, tables)
    taus = sorted(t.tau.unique())

    def pm(x, h, digits):
        return f"{x:.{digits}f}" + ("" if not np.isfinite(h) else f" ± {h:.{digits}f}")

    lines = ["| method | " + " | ".join(f"τ = {tau}" for tau in taus) + " |", "|---|" + "---|" * len(taus)]
    for method in dict.fromkeys(t.method):
        cells = []
        for tau in taus:
            r = t[(t.method == method) & (t.tau == tau)]
            cells.append("–" if r.empty else f"{pm(r['drift'].iloc[0], r['drift ±95% t'].iloc[0], 2)} / "
                         f"{pm(r['normalised'].iloc[0], r['normalised ±95% t'].iloc[0], 3)} (n={r.seeds.iloc[0]})")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    # 96 local steps, τ up to 32 (3 rounds) and 48 (2 rounds); Table 4 (α = 0.1) and Tables 5–6 (τ_swap ∈ {2, 4, 8})
    # at τ = 32 and 48, where every τ_swap lies below τ as in the paper
    "quick_large_tau": dict(total_steps=96, taus=(2, 8, 32, 48), period_taus=(32, 48), periods=(2, 4, 8),
                            hetero_taus=(32, 48)),
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
    - table5: Balanced with τ_swap ∈ {4, 8} (Tables 5–6; τ_swap = 2 is table1's Balanced run);
    - control (not in the paper): ``pubswap_noswap`` at table1's τ and τ_swap = 2 — the same private and public
      steps as Balanced, each client on its own responses, so drift and accuracy differences can be credited to
      the swap.

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
    bad = sorted(set(tables) - {"table1", "table4", "table5", "control"})
    if bad:
        raise ValueError(f"tables must be among ('table1', 'table4', 'table5', 'control'), got {bad}")
    if scale == "full" and preset_name not in PAPER_PRESETS:  # the generic full preset is not the paper's model
        raise ValueError(f"the full scale is the paper's budget on the paper's models: run it with one of "
                         f"{sorted(PAPER_PRESETS)} as the preset, not {preset_name!r}")
    spec = PUBSWAP_SCALES[scale]
    grid: dict[str, RunConfig] = {}

    def add(name, tau, seed, **kw):
        rounds = spec["total_steps"] // tau
        base = dict(local_steps=tau, rounds=rounds, eval_every=max(1, rounds // 4), seed=seed, trace_drift=True,
                    partition="dirichlet", dirichlet_alpha=alpha, **SETTINGS[setting],
                    **REFERENCE_PATH)  # the path the stored sweeps were made on
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
        if "control" in tables:
            for tau in spec["taus"]:
                add(f"control/pubswap_noswap/tau{tau}", tau, seed, method="pubswap_noswap", pubswap={"period": 2})
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


def curves(records: list[dict]) -> dict:
    """What a summary row keeps of its run's records for plots: every global evaluation as (round, pass@1, format)
    and every public step's replacement fraction α as (round, step, α)."""
    return {"global": [[r["round"], r["pass@1"], r.get("format", float("nan"))] for r in records
                       if r["kind"] == "global"],
            "alpha": [[r["round"], r["step"], r["replacement_fraction"]] for r in records
                      if r["kind"] == "drift" and "replacement_fraction" in r]}


def records_digest(records: list[dict]) -> str:
    """SHA-256 of a run's records without their wall-clock fields (``seconds``): two runs with equal digests wrote
    the same ``metrics.jsonl`` up to timings. A summary row stores it instead of the records themselves
    (``benchmarks/reproduce_stored.py`` re-runs a row and compares)."""
    import hashlib
    import json

    plain = [{k: v for k, v in r.items() if k != "seconds"} for r in records]
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()


def stored_records(row: dict) -> list[dict]:
    """The records a summary row keeps (:func:`curves`), in ``metrics.jsonl``'s shape: ``global`` records with
    round, pass@1 and format, ``drift`` records with round, step and replacement_fraction."""
    c = row.get("curves")
    if c is None:
        raise ValueError(f"summary row {row.get('name', '?')!r} has no curves: it was written before summaries kept "
                         "them; re-run its command (benchmarks/pubswap_sweep.py) to make them")
    return [{"kind": "global", "round": r, "pass@1": p, "format": f} for r, p, f in c["global"]] + \
        [{"kind": "drift", "round": r, "step": st, "replacement_fraction": a} for r, st, a in c["alpha"]]


def result_path(setting: str, scale: str, root: str | Path) -> Path:
    """Where ``benchmarks/pubswap_sweep.py`` stores the summary of a setting and scale under ``root``
    (benchmarks/results). The first stored sweep (setting ``fedavg_examples``, scale ``quick``) keeps its original
    name ``pubswap_sweep.json``."""
    root = Path(root)
    if setting == "fedavg_examples" and scale == "quick":
        return root / "pubswap_sweep.json"
    stem = "pubswap_paper" if setting == "paper" else f"pubswap_{setting}"
    return root / f"{stem}_{scale}.json"


def parse_name(name: str) -> dict:
    """``table1/fedprox_grpo_mu0.01/tau8/seed0`` → {table, method, tau, seed}."""
    parts = name.split("/")
    return {"table": parts[0], "method": parts[1], "tau": int(parts[2].removeprefix("tau")),
            "seed": int(parts[-1].removeprefix("seed"))}


def summary_row(name: str, cfg: RunConfig, records: list[dict], **labels) -> dict:
    """One run of a grid as a row of its summary: its name read as design (:func:`parse_name`), ``labels``
    (preset, scale, setting), the config fields the tables group by, :func:`summarise` of its records, its
    wall seconds (the sum over its rounds' ``comm`` records), its :func:`curves` and :func:`records_digest`."""
    return {"name": name, **parse_name(name), **labels, "aggregator": cfg.aggregator,
            "weight_decay": cfg.weight_decay, "equal_size": cfg.equal_size, "num_clients": cfg.num_clients,
            "prompts_per_step": cfg.prompts_per_step, "num_generations": cfg.num_generations,
            "local_steps": cfg.local_steps,
            "rounds": cfg.rounds, "pubswap_period": cfg.pubswap.period, "dirichlet_alpha": cfg.dirichlet_alpha,
            **summarise(records), "seconds": round(sum(r["seconds"] for r in records if r["kind"] == "comm"), 1),
            "curves": curves(records), "records_sha256": records_digest(records)}


def grid_coverage(rows: list[dict], scale: str, tables=("table1",), seeds=(0, 1, 2)) -> pd.DataFrame:
    """How much of a scale's grid the rows hold: one line per arm (table, method, τ) of ``pubswap_grid`` with
    the seeds the grid asks (``seeds_grid``) and those stored (``seeds_stored``); arms the rows hold but the
    grid does not are left out. A summary file is partial while any arm has fewer stored seeds than asked."""
    if scale not in PUBSWAP_SCALES:
        raise ValueError(f"scale must be one of {tuple(PUBSWAP_SCALES)}, got {scale!r}")
    like = "pubswap-qwen2.5-math-1.5b-math" if scale == "full" else "quick"  # only the names are read
    grid = pd.DataFrame([parse_name(n) for n in pubswap_grid(like, seeds=tuple(seeds), tables=tuple(tables),
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


def _compare(df: pd.DataFrame, a: dict, b: dict, value: str) -> tuple[float, float, float, int]:
    """Paired over the seeds both arms ran: (mean of a − b, standard error of that mean, half-width of its 95 %
    Student-t interval, number of seeds).

    Seeds pair naturally (the same seed is the same world, partition and base start), so the paired
    difference is the fair comparison; the SE and the interval are nan with fewer than 2 common seeds.
    """
    d = paired_diffs(df, a, b, value).to_numpy(float)  # [seeds]
    if not len(d):
        return float("nan"), float("nan"), float("nan"), 0
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    mean, half, n = t_interval(d)
    return mean, se, half, n


def _verdict(diff: float, half: float, n: int, want_positive: bool = True) -> str:
    """The verdict on a paired difference: "yes" when its 95 % t interval (diff ± half) lies on the claimed side
    of 0, "no" when on the other, "within noise" when it contains 0."""
    if np.isnan(diff):
        return "not measured"
    if n < 2 or np.isnan(half):
        return ("yes" if (diff > 0) == want_positive else "no") + " (one seed: no error bar)"
    sign = sign_verdict(diff, half)
    if sign == 0:
        return f"within noise ({INTERVAL} contains 0)"
    return "yes" if (sign > 0) == want_positive else "no"


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


PAPER_SHAPE = {"num_clients": 4, "prompts_per_step": 8, "num_generations": 8}
"""the paper's N clients, b prompts per step and K responses per prompt (Tables 9–12; Table 11's 4B run: b = 4)"""


def _setting_of(df: pd.DataFrame) -> tuple[str, str | None]:
    """(a description of the rows' setting, why it is not the paper's or None). The paper's setting is FedIT
    aggregation, AdamW with weight decay 0.01 and equal-size clients (``setting="paper"``, scaled down) with the
    paper's N = 4 clients, b = 8 prompts per step and K = 8 responses (:data:`PAPER_SHAPE`; rows written before
    those columns existed are read from their preset: ``full`` is the generic 8-client, b = 32 preset); rows
    written before the ``setting`` column existed ran ``fedavg_examples``."""
    settings = set(df["setting"].dropna()) if "setting" in df else set()
    settings = settings or {"fedavg_examples"}
    scales = sorted(set(df["scale"].dropna())) if "scale" in df else []
    text = "/".join(sorted(settings)) + (f", {'/'.join(scales)} scale" if scales else "")
    if settings != {"paper"}:
        return text, "FedAvg by examples, plain Adam, unequal clients"
    off = [f"{k} {sorted(set(df[k].dropna().astype(int)))} (the paper: {v})" for k, v in PAPER_SHAPE.items()
           if k in df and set(df[k].dropna().astype(int)) - {v}]
    if "preset" in df and (df["preset"] == "full").any():
        off.append("the generic full preset (8 clients, b = 32, not a PubSwap model)")
    if off:
        return text, "not the paper's N, b, K: " + ", ".join(off)
    return text, None


def _tau_slope(df: pd.DataFrame, a: str, b: str, value: str) -> tuple[float, float, float, int]:
    """The τ trend of a − b: per seed, the least-squares slope of (a − b) against log₂ τ over the τ values both
    arms ran on every kept seed; then (mean, SE, 95 % t half-width, seeds) of those slopes."""
    t = df[df.method.isin([a, b])].pivot_table(index=["seed", "tau"], columns="method", values=value)
    if a not in t or b not in t:
        return float("nan"), float("nan"), float("nan"), 0
    d = (t[a] - t[b]).dropna().unstack("tau").dropna(axis=0)  # [seeds, taus], seeds that ran every τ
    if d.shape[1] < 2 or not len(d):
        return float("nan"), float("nan"), float("nan"), 0
    x = np.log2(np.asarray(d.columns, float))
    slopes = np.array([np.polyfit(x, row, 1)[0] for row in d.to_numpy(float)])  # [seeds]
    se = float(slopes.std(ddof=1) / np.sqrt(len(slopes))) if len(slopes) > 1 else float("nan")
    mean, half, n = t_interval(slopes)
    return mean, se, half, n


def pubswap_claims(rows: list[dict], value: str = "pass@1_final") -> pd.DataFrame:
    """The PubSwap paper's claims checked on sweep summaries (rows as written by ``benchmarks/pubswap_sweep.py``).

    One row per claim, in the paper's own words (``claim``, with where it says so in ``paper``), tested as a paired
    comparison over the seeds both arms ran: ``diff`` is the mean difference in pass@1 points (drift in ‖ΔW‖ units,
    the τ trend in points per doubling of τ), ``se`` its standard error, ``±95% t`` the half-width of its 95 %
    Student-t interval (n − 1 degrees of freedom), ``detectable`` the smallest true difference these seeds would
    show 4 times in 5 (:func:`experiments.stats.detectable_effect`: a verdict "within noise" says nothing of effects
    below it), ``seeds`` how many pairs; ``holds`` is "yes" or "no" when that
    interval lies wholly on one side of 0 and "within noise" when it contains 0. ``setting`` names the rows'
    setting and scale.

    "not tested (why)" instead of a verdict, with the difference still shown where it was measured:

    - every claim, when the rows are not the paper's setting (FedIT, AdamW 0.01, equal clients; the first stored
      sweep ran FedAvg by examples with plain Adam on unequal clients): a difference measured elsewhere neither
      confirms nor refutes the paper;
    - a claim that needs two τ (the τ trend, small-τ claims) when table1 holds one; a Table 5 claim with one
      τ_swap or one seed; a Table 5 arm whose τ_swap is not below τ (the paper's periods 2, 4, 8 all lie below its
      τ, and a period of τ makes the round's only public step its last one).

    The claims (Table 1 unless noted): Balanced outperforms FedAvg+GRPO, and FedProx, "for most choices of the
    local step parameter" (one row per τ, FedProx at its best μ as the paper tunes it — "the only μ run" when one
    ran); "the gains are larger at higher values of τ" (the paired slope of Balanced − FedAvg-GRPO against log₂ τ);
    "FedProx does not improve performance" (best μ − FedAvg-GRPO, claimed not > 0); "Random can outperform
    Balanced when the number of local steps is small", and "this advantage does not persist at larger τ" (Random −
    Balanced at the smallest and at the largest τ both ran, the latter claimed not > 0); public steps limit drift
    (§4.4, appendix A; end-of-round drift of Balanced − FedAvg-GRPO at the largest τ both ran — confounded here: a
    Balanced round has fewer private steps); beside it, two rows not in the paper on the normalised drift
    (:func:`normalised_drift`, pairwise ÷ distance to the global model, √2 for unaligned updates), which separates
    aligning the clients' updates from shrinking them: Balanced − FedAvg-GRPO and FedProx (best μ) − FedAvg-GRPO at
    that τ; Table 4,
    higher heterogeneity: "outperforms FedAvg across different local-step configurations"; Table 5 (§4.4): Balanced
    beats the baselines at every τ_swap, "smaller PubSwap periods are not necessarily always beneficial", and
    "more frequent public steps can in principle help limit drift". With ``control`` rows (``pubswap_noswap``, not
    in the paper: Balanced's private and public steps, each client on its own responses), five control rows at
    each of their τ: the swap's share of the drift reduction (Balanced − control), the on-policy public steps'
    share (control − FedAvg-GRPO), the same two on the normalised drift, and the swap's effect on accuracy
    (Balanced − control).

    FedProx's μ is picked on the same test pass@1 the claim then reads (``value``), as the paper reports its best μ;
    the claim says so. A μ picked that way flatters FedProx, so "Balanced outperforms FedProx" is if anything harder
    to show than with μ chosen on held-out data.

    Args:
        rows: one summary row per run (``table``, ``method``, ``tau``, ``seed`` and the summary's values).
        value: ``"pass@1_final"`` (the paper's main tables) or ``"pass@1_best"`` (its appendix B.2, Tables 7–8:
            the best evaluated checkpoint of each run); FedProx's best μ is picked on the same value.
    """
    if value not in ("pass@1_final", "pass@1_best"):
        raise ValueError(f"value must be 'pass@1_final' or 'pass@1_best', got {value!r}")
    df = pd.DataFrame(with_normalised_drift(rows))
    t1 = df[df.table == "table1"] if "table" in df else df.iloc[:0]
    if t1.empty:
        raise ValueError("no table1 rows: run benchmarks/pubswap_sweep.py first")
    aligned = NORMALISED_DRIFT in df and df[NORMALISED_DRIFT].notna().any()  # rows that stored both drifts
    setting, not_paper = _setting_of(df)
    taus = sorted(t1.tau.unique())
    small, large = taus[0], taus[-1]
    out = []

    def add(text, paper, stats, want_positive=True, untested=None, scale=100.0, digits=2):
        diff, se, half, n = stats
        holds = _verdict(diff, half, n, want_positive)
        why = untested or (f"not the paper's setting: {not_paper}" if not_paper else None)
        if why and not np.isnan(diff):
            holds = f"not tested ({why}; measured: {holds})"
        elif why:
            holds = f"not tested ({why})"
        out.append({"claim": text, "paper": paper, "diff": round(diff * scale, digits),
                    "se": round(se * scale, digits), "±95% t": round(half * scale, digits),
                    "detectable": round(detectable_effect(half, n) * scale, digits), "seeds": n, "holds": holds,
                    "setting": setting})

    def claim(text, paper, a, b, val=value, scale=100.0, want_positive=True, data=t1, min_seeds=1, untested=None):
        stats = _compare(data, a, b, val)
        if 0 < stats[3] < min_seeds and untested is None:
            untested = "one seed"
        add(text, paper, stats, want_positive, untested, scale, digits=3 if val == NORMALISED_DRIFT else 2)

    def none(text, paper, why):
        add(text, paper, (float("nan"),) * 3 + (0,), untested=why, scale=1.0)

    def best_prox(tau):
        prox = t1[(t1.tau == tau) & t1.method.str.startswith("fedprox")]
        if not len(prox):
            return None, ""
        common = set.intersection(*(set(g.seed) for _, g in prox.groupby("method")))
        mus = sorted(prox.method.unique())
        best = prox[prox.seed.isin(common)].groupby("method")[value].mean().idxmax()
        mu = best.split("_mu")[1]
        return best, (f"best μ = {mu} of {', '.join(m.split('_mu')[1] for m in mus)}, picked on the test pass@1 "
                      "compared here, as the paper picks it" if len(mus) > 1 else f"μ = {mu}, the only μ run")

    for tau in taus:
        claim(f"Balanced outperforms FedAvg+GRPO for most choices of τ: τ = {tau}", "§4.1, Table 1",
              {"method": "pubswap_balanced", "tau": tau}, {"method": "fedavg_grpo", "tau": tau})
        best, which = best_prox(tau)
        if best:
            claim(f"Balanced outperforms FedProx for most choices of τ: τ = {tau} (FedProx at {which})",
                  "§4.1, Table 1", {"method": "pubswap_balanced", "tau": tau}, {"method": best, "tau": tau})
    if small == large:
        none("the gains are larger at higher values of τ", "§4.1, Table 1", f"only one τ: {large}")
    else:
        add(f"the gains are larger at higher values of τ: slope of Balanced − FedAvg-GRPO over log₂ τ "
            f"(τ = {', '.join(str(t) for t in taus)}; points per doubling)", "§4.1, Table 1",
            _tau_slope(t1, "pubswap_balanced", "fedavg_grpo", value))
    for tau in taus:
        best, which = best_prox(tau)
        if best:
            claim(f"FedProx does not improve performance: τ = {tau}, FedProx ({which}) − FedAvg-GRPO",
                  "§4.1, Table 1", {"method": best, "tau": tau}, {"method": "fedavg_grpo", "tau": tau},
                  want_positive=False)
    # the small-τ and large-τ claims read the smallest and largest τ that both of their arms ran (a τ added for
    # some arms only, such as the τ trend's two, leaves the others' claims where their arms are)
    ran = lambda *methods: sorted(set.intersection(*(set(t1[t1.method == m].tau) for m in methods)))  # noqa: E731
    both = ran("pubswap_random", "pubswap_balanced") or taus
    if len(both) < 2:
        none("Random can outperform Balanced when the number of local steps is small", "§4.2",
             f"only one τ: {both[-1]}")
        none("this advantage does not persist at larger local-step values", "§4.2", f"only one τ: {both[-1]}")
    else:
        claim(f"Random can outperform Balanced when the number of local steps is small: τ = {both[0]}, "
              "Random − Balanced", "§4.2", {"method": "pubswap_random", "tau": both[0]},
              {"method": "pubswap_balanced", "tau": both[0]})
        claim(f"this advantage does not persist at larger local-step values: τ = {both[-1]}, Random − Balanced",
              "§4.2", {"method": "pubswap_random", "tau": both[-1]}, {"method": "pubswap_balanced", "tau": both[-1]},
              want_positive=False)
    drift_tau = (ran("pubswap_balanced", "fedavg_grpo") or [large])[-1]
    claim(f"public steps limit drift: τ = {drift_tau}, end-of-round drift of Balanced − FedAvg-GRPO (‖ΔW‖ units; "
          "confounded: a Balanced round takes fewer private steps)", "§4.4, appendix A",
          {"method": "pubswap_balanced", "tau": drift_tau}, {"method": "fedavg_grpo", "tau": drift_tau},
          val="drift_end_pairwise_effective", scale=1.0, want_positive=False)
    if aligned:
        claim(f"Balanced's public steps align the clients' updates (not a paper claim): τ = {drift_tau}, normalised "
              f"drift (pairwise ÷ distance to the global model; √2 ≈ {UNALIGNED:.2f} for unaligned updates) of "
              "Balanced − FedAvg-GRPO", "not in the paper", {"method": "pubswap_balanced", "tau": drift_tau},
              {"method": "fedavg_grpo", "tau": drift_tau}, val=NORMALISED_DRIFT, scale=1.0, want_positive=False)
        best, which = best_prox(drift_tau)
        if best:
            claim(f"FedProx aligns the clients' updates (not a paper claim): τ = {drift_tau}, normalised drift of "
                  f"FedProx ({which}) − FedAvg-GRPO", "not in the paper", {"method": best, "tau": drift_tau},
                  {"method": "fedavg_grpo", "tau": drift_tau}, val=NORMALISED_DRIFT, scale=1.0, want_positive=False)
    ctl = df[df.table == "control"] if "table" in df else df.iloc[:0]
    for tau in sorted(set(ctl.tau.unique()) & set(taus)):
        data = pd.concat([t1[t1.tau == tau], ctl[ctl.tau == tau]])
        claim(f"the swap limits drift (control, not a paper claim): τ = {tau}, end-of-round drift of Balanced − "
              "no-swap control, the same private and public steps (‖ΔW‖ units)", "control",
              {"method": "pubswap_balanced"}, {"method": "pubswap_noswap"}, data=data,
              val="drift_end_pairwise_effective", scale=1.0, want_positive=False)
        claim(f"on-policy public steps limit drift (control, not a paper claim): τ = {tau}, no-swap control − "
              "FedAvg-GRPO (‖ΔW‖ units)", "control", {"method": "pubswap_noswap"}, {"method": "fedavg_grpo"},
              data=data, val="drift_end_pairwise_effective", scale=1.0, want_positive=False)
        if aligned:
            claim(f"the swap aligns the clients' updates (control, not a paper claim): τ = {tau}, normalised drift of "
                  "Balanced − no-swap control", "control", {"method": "pubswap_balanced"}, {"method": "pubswap_noswap"},
                  data=data, val=NORMALISED_DRIFT, scale=1.0, want_positive=False)
            claim(f"on-policy public steps align the clients' updates (control, not a paper claim): τ = {tau}, "
                  "normalised drift of no-swap control − FedAvg-GRPO", "control", {"method": "pubswap_noswap"},
                  {"method": "fedavg_grpo"}, data=data, val=NORMALISED_DRIFT, scale=1.0, want_positive=False)
        claim(f"the swap helps accuracy (control, not a paper claim): τ = {tau}, Balanced − no-swap control",
              "control", {"method": "pubswap_balanced"}, {"method": "pubswap_noswap"}, data=data)
    t4 = df[df.table == "table4"] if "table" in df else df.iloc[:0]
    for tau in sorted(t4.tau.unique()):
        claim(f"higher heterogeneity (α = 0.1, equal size): outperforms FedAvg across local-step configurations: "
              f"τ = {tau}", "§4.3, Table 4", {"method": "pubswap_balanced", "tau": tau},
              {"method": "fedavg_grpo", "tau": tau}, data=t4)
    t5 = table5_arms(rows)
    for tau in sorted(t5.tau.unique()):
        arms = t5[t5.tau == tau]
        data = pd.concat([arms, t1[(t1.tau == tau) & (t1.method == "fedavg_grpo")].assign(tau_swap=0)])
        periods = sorted(arms.tau_swap.unique())
        below = [p for p in periods if p < tau]
        for p in periods:
            claim(f"Table 5, τ = {tau}: Balanced with τ_swap = {p} beats FedAvg-GRPO", "§4.4, Tables 5–6",
                  {"tau_swap": p}, {"method": "fedavg_grpo"}, data=data, min_seeds=2,
                  untested=None if p < tau else f"τ_swap = {p} is not below τ = {tau}")
        if len(below) < 2:
            why = (f"only one τ_swap below τ = {tau}: {below[0]}" if below else f"no τ_swap below τ = {tau}")
            none(f"Table 5, τ = {tau}: smaller PubSwap periods are not necessarily always beneficial",
                 "§4.4, Tables 5–6", why)
            none(f"Table 5, τ = {tau}: more frequent public steps can help limit drift", "§4.4, Tables 5–6", why)
            continue
        lo, hi = below[0], below[-1]
        for p in below[1:]:
            claim(f"Table 5, τ = {tau}: smaller PubSwap periods are not necessarily always beneficial: "
                  f"τ_swap = {lo} minus τ_swap = {p}", "§4.4, Tables 5–6", {"tau_swap": lo}, {"tau_swap": p},
                  data=data, want_positive=False, min_seeds=2)
        claim(f"Table 5, τ = {tau}: more frequent public steps can help limit drift: τ_swap = {lo} minus "
              f"τ_swap = {hi} (‖ΔW‖ units)", "§4.4, Tables 5–6", {"tau_swap": lo}, {"tau_swap": hi},
              val="drift_end_pairwise_effective", scale=1.0, want_positive=False, data=data, min_seeds=2)
    return pd.DataFrame(out)


def pubswap_claims_both(rows: list[dict]) -> pd.DataFrame:
    """:func:`pubswap_claims` on the final and on the best checkpoint side by side (the paper reports both: Table 1
    and appendix B.2), with ``flips`` True where the two verdicts differ (a "not tested" reason aside)."""
    final = pubswap_claims(rows, "pass@1_final")
    best = pubswap_claims(rows, "pass@1_best")
    keep = ["diff", "±95% t", "detectable", "holds"]
    out = final[["claim", "paper", "seeds"]].copy()
    for name, t in (("final", final), ("best", best)):
        for k in keep:
            out[f"{name} {k}"] = t[k].to_numpy()
    verdict = (lambda v: v.split(";")[-1].strip() if v.startswith("not tested") else v)  # noqa: E731
    out["flips"] = [verdict(a) != verdict(b) for a, b in zip(final.holds, best.holds)]
    out["setting"] = final["setting"].to_numpy()
    return out


def pubswap_claims_markdown(rows: list[dict]) -> str:
    """:func:`pubswap_claims_both` as a markdown table for the docs: each checkpoint's paired difference ± the
    half-width of its 95 % t interval, the smallest true difference its seeds detect 4 times in 5 (``detectable``:
    a "within noise" verdict says nothing of effects below it) and its verdict ("within noise" for "within noise
    (95 % t interval contains 0)"), the flips marked; the rows' setting in the caption line below the table."""
    t = pubswap_claims_both(rows)
    short = (lambda v: v.replace(f"within noise ({INTERVAL} contains 0)", "within noise"))  # noqa: E731

    def cell(diff, half, d=2):
        if np.isnan(diff):
            return "–"
        return f"{diff:+.{d}f}" + ("" if np.isnan(half) else f" ± {half:.{d}f}")

    def detectable(x, d=2):
        return "–" if np.isnan(x) else f"{x:.{d}f}"

    lines = ["| claim (the paper's words) | where | seeds | final: diff ± 95 % t | final: detectable | final | "
             "best: diff ± 95 % t | best: detectable | best |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in t.to_dict("records"):
        flip = " **(flips)**" if r["flips"] else ""
        d = 3 if "normalised drift" in r["claim"] else 2  # a ratio near √2: its differences are hundredths
        lines.append(f"| {r['claim']} | {r['paper']} | {r['seeds']} | "
                     f"{cell(r['final diff'], r['final ±95% t'], d)} | {detectable(r['final detectable'], d)} | "
                     f"{short(r['final holds'])} | {cell(r['best diff'], r['best ±95% t'], d)} | "
                     f"{detectable(r['best detectable'], d)} | {short(r['best holds'])}{flip} |")
    lines.append(f"\nSetting of the rows: {t.setting.iloc[0]}; {int(t.flips.sum())} of {len(t)} verdicts differ between the "
                 "final and the best checkpoint.")
    return "\n".join(lines)
