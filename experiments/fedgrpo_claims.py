"""The FedGRPO paper's claims, checked on the stored benchmark result files.

:func:`fedgrpo_claims` reads the result dicts written by ``benchmarks/fedgrpo_compare.py`` (with and
without ground truth) and ``benchmarks/fedgrpo_ablation.py`` (M and K varied alone) and returns one row
per claim of the paper, each a comparison paired over the seeds both arms ran (the same seed is the same
world, partition and base start), as :func:`experiments.sweep.pubswap_claims` does for PubSwap.

These are the paper's claims **at this scale**: the embedded world's tiny policy, a few rounds (the stored
files: 5 rounds of τ = 2 steps, K = 8, β = 0.1, on a CPU); the ``setting`` column says which, from each
file's ``settings``. A verdict is never drawn from one seed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.stats import INTERVAL, claims_markdown, sign_verdict, t_interval  # noqa: F401 - claims_markdown: re-exported
from experiments.sweep import paired_diffs

#: the methods of ``benchmarks/fedgrpo_compare.py`` by the paper's names (§4.1)
METHOD_NAMES = {"fedgrpo": "FedGRPO", "central_grpo": "Central-GRPO", "fedavg_grpo": "Fedpetuning+GRPO",
                "fedpetuning_sft": "Fedpetuning+SFT", "dpsda_grpo": "DPSDA-FL (no PE)+GRPO", "dpsda_sft": "DPSDA-FL (no PE)+SFT",
                "zero_shot": "zero-shot base", "fedgrpo_allgt": "FedGRPO, every client holds every label",
                "fedgrpo_random": "FedGRPO, random experts", "fedgrpo_official": "FedGRPO, official protocol",
                "fedavg_grpo_same_reward": "Fedpetuning+GRPO (8·acc + 1·fmt)",
                "dpsda_grpo_same_reward": "DPSDA-FL (no PE)+GRPO (8·acc + 1·fmt)",
                "central_grpo_same_reward": "Central-GRPO (8·acc + 1·fmt)",
                "fedgrpo_nogt": "FedGRPO, no ground truth", "fedgrpo_nogt_subject": "FedGRPO, no ground truth, subject scorer"}
#: FedGRPO's control arms (``benchmarks/fedgrpo_compare.py --methods fedgrpo --set …``, a file each): arm → the
#: settings that make it, as its file records them under ``settings.set``
ARMS = {"fedgrpo_allgt": ["fedgrpo.ae_holders=all"], "fedgrpo_random": ["fedgrpo.selection=random"],
        "fedgrpo_official": ["fedgrpo.group_reward=official"]}
#: the control arms' result files (30 rounds, pass@1 every round), by arm
ARM_FILES = {"fedgrpo_allgt": "fedgrpo_compare_pool_long30_allgt.json",
             "fedgrpo_random": "fedgrpo_compare_pool_long30_random.json",
             "fedgrpo_official": "fedgrpo_compare_pool_long30_official.json"}
#: the stored result files :func:`fedgrpo_claims_from_files` reads, by argument of :func:`fedgrpo_claims`
RESULT_FILES = {"compare": "fedgrpo_compare_pool.json", "nogt": "fedgrpo_compare_nogt.json",
                "ablation_M": "fedgrpo_ablation_pool.json", "ablation_K": "fedgrpo_ablation_pool_k.json"}
COLUMNS = ["claim", "paper", "unit", "mean", "se", "±95% t", "seeds", "per_seed", "verdict", "setting"]
"""``se`` is the standard error over seeds, ``±95% t`` the half-width of the 95 % Student-t interval (n − 1 degrees
of freedom) that the verdicts read"""


def _runs(result: dict, name: str, keys: tuple[str, ...]) -> pd.DataFrame:
    """The ``runs`` of one result dict as a frame, checked for the fields the claims read."""
    if not isinstance(result, dict) or not isinstance(result.get("runs"), list):
        raise ValueError(f"{name}: expected a result dict with a 'runs' list")
    for i, r in enumerate(result["runs"]):
        missing = [k for k in keys if k not in r]
        if missing:
            raise ValueError(f"{name}: runs[{i}] lacks {missing}")
    return pd.DataFrame(result["runs"], columns=list(dict.fromkeys([*keys, *(k for r in result["runs"] for k in r)])))


def _setting(result: dict | None, rounds: str | None = None) -> str:
    """The scale of a result file in words; ``rounds`` replaces its number of rounds (e.g. "rounds until flat")."""
    s = (result or {}).get("settings", {})
    if not s:
        return "at this scale"
    beta = "IID" if "iid" in " ".join(s.get("set", [])) else f"β = {s.get('dirichlet_alpha')}"
    return (f"at this scale: embedded world, tiny policy, K = {s.get('num_clients')}, {beta}, "
            f"{rounds or str(s.get('rounds')) + ' rounds'} of τ = {s.get('local_steps')}")


#: the two parts of a reward that make its *shape*: a correctness term (an exact check, or FedGRPO's experts' scores
#: of it) and the rest, by weight; two arms whose rewards differ only in where correctness comes from share a shape
_CORRECTNESS = ("accuracy", "experts' score")


def arm_reward(result: dict | None, method: str) -> tuple[tuple[float, str], ...] | None:
    """What ``method`` of a ``benchmarks/fedgrpo_compare.py`` result file trained on, read from its ``settings.set``:
    ((weight, term), …). FedGRPO and its arms (``fedgrpo*``): ``fedgrpo.group_coef`` · experts' score +
    ``fedgrpo.format_coef`` · format (8 and 1 unless set); the SFT baselines: () (no reward); the GRPO baselines:
    ``rewards`` by ``reward_weights`` (accuracy alone unless set; equal weights when only ``rewards`` is set);
    None for an arm that does not train (the zero-shot base)."""
    if method == "zero_shot":
        return None
    made = dict(x.split("=", 1) for x in ((result or {}).get("settings") or {}).get("set") or [] if "=" in x)
    if method.startswith("fedgrpo"):
        return ((float(made.get("fedgrpo.group_coef", 8.0)), "experts' score"),
                (float(made.get("fedgrpo.format_coef", 1.0)), "format"))
    if method.endswith("_sft"):
        return ()
    if "rewards" not in made and "world" in made:
        return ((1.0, f"the {made['world']} world's own rewards"),)
    split = lambda v: [x.strip(" '\"") for x in v.strip("()[] ").split(",") if x.strip(" '\"")]  # noqa: E731
    terms = split(made.get("rewards", "accuracy"))
    weights = [float(w) for w in split(made.get("reward_weights", ""))] or [1.0] * len(terms)
    return tuple(zip(weights, terms))


def reward_words(reward: tuple[tuple[float, str], ...] | None) -> str:
    """:func:`arm_reward` in words: "accuracy only", "8·accuracy + 1·format", "8·experts' score + 1·format",
    "no reward (SFT)"."""
    if reward is None:
        return "no training"
    if not reward:
        return "no reward (SFT)"
    if len(reward) == 1:
        return f"{reward[0][1]} only"
    return " + ".join(f"{w:g}·{t}" for w, t in reward)


def _reward_note(rewards: dict[str, tuple | None], a: str, b: str) -> str:
    """The setting column's words on two arms' rewards: "" when they trained on the same one (or one did not train),
    else "; rewards differ — A: …, B: …", or "; the same reward shape — …" when only the source of the correctness
    term differs (FedGRPO's experts' scores against an exact check)."""
    ra, rb = rewards.get(a), rewards.get(b)
    if ra is None or rb is None or ra == rb:
        return ""
    shape = lambda r: tuple((w, "correctness" if t in _CORRECTNESS else t) for w, t in r)  # noqa: E731
    lead = "the same reward shape" if ra and shape(ra) == shape(rb) else "rewards differ"
    return f"; {lead} — {METHOD_NAMES.get(a, a)}: {reward_words(ra)}, {METHOD_NAMES.get(b, b)}: {reward_words(rb)}"


def _file_rewards(result: dict | None) -> dict[str, tuple | None]:
    """:func:`arm_reward` of every method a result file ran (and of the zero-shot base)."""
    methods = {r.get("method") for r in (result or {}).get("runs", []) if r.get("method")}
    return {m: arm_reward(result, m) for m in methods | {"zero_shot"}}


def _row(claim, paper, d: pd.Series, verdict, setting, unit="points", scale=100.0) -> dict:
    """One claim's row from its per-seed paired values ``d`` (already a − b)."""
    v = d.to_numpy(float) * scale
    se = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
    return {"claim": claim, "paper": paper, "unit": unit,
            "mean": round(float(v.mean()), 2) if len(v) else float("nan"), "se": round(se, 2),
            "±95% t": round(t_interval(v)[1], 2), "seeds": len(v),
            "per_seed": ", ".join(f"s{s} {x:+.2f}" for s, x in zip(d.index, v)), "verdict": verdict,
            "setting": setting}


def _untested(d: pd.Series, missing: str | None) -> str | None:
    if missing:
        return f"not tested ({missing} not run)"
    if len(d) < 2:
        return "not tested (one seed)" if len(d) == 1 else "not tested (no common seed)"
    return None


def _beats(d: pd.Series, missing: str | None = None) -> str:
    """a beats b: holds when the 95 % t interval of the paired mean lies above 0, does not hold when below,
    within noise when it contains 0."""
    if (u := _untested(d, missing)) is not None:
        return u
    sign = sign_verdict(*t_interval(d)[:2])
    return {1: "holds", -1: "does not hold", 0: f"within noise ({INTERVAL} contains 0)"}[sign]


def _near(d: pd.Series, tol: float, missing: str | None = None) -> str:
    """a is near b: holds when the whole 95 % t interval of the paired mean lies within ± ``tol`` (in d's
    units), does not hold when it lies wholly outside, within noise otherwise."""
    if (u := _untested(d, missing)) is not None:
        return u
    mean, half = t_interval(d)[:2]
    if abs(mean) + half <= tol:
        return "holds"
    if abs(mean) - half > tol:
        return "does not hold"
    return f"within noise ({INTERVAL} straddles ±{tol * 100:g} points)"


def _missing(df: pd.DataFrame, col: str, *arms) -> str | None:
    names = [a for a in arms if not (df[col] == a).any()]
    return " and ".join(METHOD_NAMES.get(str(a), f"{col} = {a}") for a in names) or None


def fedgrpo_claims(compare: dict, nogt: dict | None = None, ablation_M: dict | None = None,
                   ablation_K: dict | None = None, near_tol: float = 3.0) -> pd.DataFrame:
    """The FedGRPO paper's claims checked on stored result dicts, one row per claim.

    Every row pairs two arms over the seeds both ran: ``mean`` is the mean over seeds of a − b in pass@1
    points (final pass@1 × 100; for the communication rows, the ratio of total bytes, unit "×"), ``se``
    its standard error over seeds, ``±95% t`` the half-width of its 95 % Student-t interval (n − 1 degrees of
    freedom), ``seeds`` how many pairs, ``per_seed`` the values seed by seed.

    Verdicts:

    - "FedGRPO beats X", "M = 2 beats M = m", "more clients help": **holds** when the 95 % t interval of
      the paired mean lies above 0, **does not hold** when it lies below 0, **within noise** when it
      contains 0.
    - "FedGRPO is near Central-GRPO" (Tables 1, 2) and "no-GT FedGRPO is near with-GT FedGRPO":
      *near* means within ``near_tol`` pass@1 points (default 3; the paper's Table 1 gaps to
      Central-GRPO are about 1 point at its scale; a method's seed-to-seed std here is several points):
      **holds** when the 95 % t interval lies inside ±``near_tol``, **does not hold** when wholly outside,
      **within noise** otherwise.
    - Communication (Fig. 2): **holds** when Fedpetuning's total bytes (up + down) are at least 10×
      FedGRPO's on every seed, **does not hold** otherwise.
    - With one seed the verdict is "not tested (one seed)", and with an arm absent (a baseline, a no-GT
      file, an M or K value not run) "not tested (… not run)": never a verdict from one seed.

    These are the paper's claims at this scale (the embedded world's tiny policy, few rounds, CPU); the
    ``setting`` column names each file's scale from its ``settings``, and, where the two arms of a row trained on
    different rewards (FedGRPO on 8 · experts' score + 1 · format, the stored baselines on accuracy alone), each
    arm's reward (:func:`arm_reward`).

    Args:
        compare: ``benchmarks/results/fedgrpo_compare_pool.json`` (with ground truth): ``runs`` rows
            with ``method``, ``seed``, ``final_pass_at_1``, ``base_pass_at_1``, ``bytes_up``, ``bytes_down``.
        nogt: ``fedgrpo_compare_nogt.json`` (``--no-gt``), the same row layout; None if not run.
        ablation_M: ``fedgrpo_ablation_pool.json`` (``runs`` rows with ``K``, ``M``, ``seed``,
            ``final_pass_at_1``); None if not run.
        ablation_K: ``fedgrpo_ablation_pool_k.json``, the same layout; None if not run.
        near_tol: the tolerance of "near", in pass@1 points.
    """
    arm_keys = ("method", "seed", "final_pass_at_1", "base_pass_at_1")
    cmp = _runs(compare, "compare", arm_keys)
    tol = near_tol / 100.0
    out = []
    s_cmp, s_nogt = _setting(compare), _setting(nogt)
    r_cmp, r_nogt = _file_rewards(compare), _file_rewards(nogt)  # each arm's reward, by method: the setting names them

    def with_base(df):  # the zero-shot base as an arm: each seed's base pass@1
        base = df.groupby("seed", as_index=False)["base_pass_at_1"].first().rename(
            columns={"base_pass_at_1": "final_pass_at_1"}).assign(method="zero_shot")
        return pd.concat([df, base], ignore_index=True)

    def pair(df, a, b, col="method", value="final_pass_at_1"):
        return paired_diffs(df, {col: a}, {col: b}, value), _missing(df, col, a, b)

    # (a) near Central-GRPO, with and without ground truth (Tables 1 and 2)
    d, miss = pair(cmp, "fedgrpo", "central_grpo")
    out.append(_row("FedGRPO near Central-GRPO, with ground truth", "Table 1", d, _near(d, tol, miss),
                    s_cmp + _reward_note(r_cmp, "fedgrpo", "central_grpo")))
    ng = _runs(nogt, "nogt", arm_keys) if nogt is not None else None
    if ng is not None:
        d, miss = pair(ng, "fedgrpo", "central_grpo")
    else:
        d, miss = pd.Series(dtype=float), "the no-GT comparison"
    out.append(_row("FedGRPO near Central-GRPO, without ground truth", "Table 2", d, _near(d, tol, miss),
                    s_nogt + _reward_note(r_nogt, "fedgrpo", "central_grpo")))

    # (b) above the FedFM baselines (Table 1)
    for b in ("fedavg_grpo", "fedpetuning_sft", "dpsda_grpo", "dpsda_sft"):
        d, miss = pair(cmp, "fedgrpo", b)
        out.append(_row(f"FedGRPO beats {METHOD_NAMES[b]}", "Table 1", d, _beats(d, miss),
                        s_cmp + _reward_note(r_cmp, "fedgrpo", b)))

    # (c) works without ground truth (Table 2): above zero-shot, and near the with-GT run
    if ng is not None:
        d, miss = pair(with_base(ng), "fedgrpo", "zero_shot")
        both = pd.concat([cmp[cmp.method == "fedgrpo"].assign(gt="with"),
                          ng[ng.method == "fedgrpo"].assign(gt="without")], ignore_index=True)
        d2, miss2 = pair(both, "without", "with", col="gt")
        miss2 = miss2 and "FedGRPO " + miss2.replace("gt = ", "") + " ground truth"
    else:
        d = d2 = pd.Series(dtype=float)
        miss = miss2 = "the no-GT comparison"
    out.append(_row("FedGRPO without ground truth beats the zero-shot base", "Table 2", d, _beats(d, miss), s_nogt))
    out.append(_row("FedGRPO without ground truth near FedGRPO with it", "Tables 1, 2", d2, _near(d2, tol, miss2),
                    s_nogt))

    # (d) M = 2 experts is best (Fig. 4): M = 2 against each other M, at the file's K
    if ablation_M is not None:
        abl = _runs(ablation_M, "ablation_M", ("K", "M", "seed", "final_pass_at_1"))
        k = abl.loc[abl.M == 2, "K"].max() if (abl.M == 2).any() else abl.K.max()
        abl = abl[abl.K == k]
        for m in sorted(set(abl.M) - {2}):
            d, miss = pair(abl, 2, m, col="M")
            out.append(_row(f"M = 2 experts beats M = {m} (K = {k})", "Fig. 4", d, _beats(d, miss),
                            _setting(ablation_M)))
        if set(abl.M) <= {2}:
            d = pd.Series(dtype=float)
            out.append(_row("M = 2 experts is best", "Fig. 4", d, _beats(d, "any M other than 2"), _setting(ablation_M)))
    else:
        out.append(_row("M = 2 experts is best", "Fig. 4", pd.Series(dtype=float),
                        _beats(pd.Series(dtype=float), "the M ablation"), "at this scale"))

    # (e) more clients help (Fig. 3): each K against the next smaller one, at M = 2
    if ablation_K is not None:
        abl = _runs(ablation_K, "ablation_K", ("K", "M", "seed", "final_pass_at_1"))
        abl = abl[abl.M == 2]
        ks = sorted(set(abl.K))
        for lo, hi in zip(ks, ks[1:]):
            d, miss = pair(abl, hi, lo, col="K")
            out.append(_row(f"more clients help: K = {hi} beats K = {lo} (M = 2)", "Fig. 3", d, _beats(d, miss),
                            _setting(ablation_K)))
        if len(ks) < 2:
            out.append(_row("more clients help", "Fig. 3", pd.Series(dtype=float),
                            _beats(pd.Series(dtype=float), "a second K"), _setting(ablation_K)))
    else:
        out.append(_row("more clients help", "Fig. 3", pd.Series(dtype=float),
                        _beats(pd.Series(dtype=float), "the K ablation"), "at this scale"))

    # (f) communication: Fedpetuning's bytes over FedGRPO's, per seed (Fig. 2)
    for b in ("fedavg_grpo", "fedpetuning_sft"):
        if not {"bytes_up", "bytes_down"} <= set(cmp.columns):
            raise ValueError("compare: runs lack 'bytes_up'/'bytes_down'")
        logb = cmp.assign(log10_bytes=np.log10(cmp.bytes_up.astype(float) + cmp.bytes_down.astype(float)))
        ld, miss = pair(logb, b, "fedgrpo", value="log10_bytes")
        ratio = 10.0 ** ld
        verdict = _untested(ratio, miss) or ("holds" if (ratio >= 10).all() else "does not hold")
        row = _row(f"FedGRPO's traffic orders of magnitude below {METHOD_NAMES[b]} (bytes ratio)", "Fig. 2",
                   ratio, verdict, s_cmp + _reward_note(r_cmp, b, "fedgrpo"), unit="× (total bytes)", scale=1.0)
        row["mean"] = round(float(ratio.mean()), 1) if len(ratio) else float("nan")
        row["se"] = (round(float(ratio.std(ddof=1) / np.sqrt(len(ratio))), 1) if len(ratio) > 1 else float("nan"))
        row["±95% t"] = round(t_interval(ratio)[1], 1)
        row["per_seed"] = ", ".join(f"s{s} {x:.1f}×" for s, x in ratio.items())
        out.append(row)
    return pd.DataFrame(out, columns=COLUMNS)


def load_results(results_dir: str | Path = "benchmarks/results") -> dict[str, dict | None]:
    """The four stored result files as dicts, by argument of :func:`fedgrpo_claims` (None for an absent
    optional file). The with-GT comparison must exist."""
    results_dir = Path(results_dir)
    out = {}
    for arg, name in RESULT_FILES.items():
        p = results_dir / name
        if not p.exists():
            if arg == "compare":
                raise FileNotFoundError(f"{p} not found: run benchmarks/fedgrpo_compare.py first")
            out[arg] = None
            continue
        try:
            out[arg] = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}: not valid JSON ({e})") from e
    return out


def result_commands(results: dict[str, dict | None]) -> dict[str, list[str]]:
    """The commands that wrote each loaded result file (its ``commands`` list, else its ``command``)."""
    return {arg: list(r.get("commands") or [r["command"]]) for arg, r in results.items()
            if r is not None and (r.get("commands") or r.get("command"))}


def fedgrpo_claims_from_files(results_dir: str | Path = "benchmarks/results", **kw) -> pd.DataFrame:
    """:func:`fedgrpo_claims` on the stored result files of ``results_dir`` (see :data:`RESULT_FILES`)."""
    return fedgrpo_claims(**load_results(results_dir), **kw)


def arms_table(result: dict, by: str = "method", value: str = "final_pass_at_1", base: bool = True) -> pd.DataFrame:
    """One stored result file as the docs' per-seed table: one row per arm (``by``: "method", or "M" / "K"
    for an ablation file), a column per seed, ``mean ± std`` (population std over seeds, as the files'
    ``summary``), and, where the rows have them, the final format share and one run's bytes (up + down).

    ``base`` adds the zero-shot base as a first row (each seed's ``base_pass_at_1``; compare files only).
    Values are pass@1 rounded to 3 places. The docs' tables are printed by this function, not typed.
    """
    from fedrl_kit.report import _human

    runs = _runs(result, "result", (by, "seed", value))
    seeds = sorted(runs.seed.unique())
    rows = []

    def add(name, sub):
        per = sub.groupby("seed")[value].first()
        row = {by: name, **{f"seed {s}": (f"{per[s]:.3f}" if s in per.index else "–") for s in seeds}}
        row["mean ± std"] = f"{per.mean():.3f} ± {per.std(ddof=0):.3f}"
        if "final_format" in sub and sub.final_format.notna().any() and name != "zero-shot base":
            row["format"] = f"{sub.final_format.mean():.2f}"
        if {"bytes_up", "bytes_down"} <= set(sub.columns) and name != "zero-shot base":
            row["bytes up + down"] = _human(float((sub.bytes_up + sub.bytes_down).iloc[0]))
        rows.append(row)

    if base and by == "method" and "base_pass_at_1" in runs:
        add("zero-shot base", runs.groupby("seed", as_index=False)["base_pass_at_1"].first()
            .rename(columns={"base_pass_at_1": value}))
    arms = list(dict.fromkeys(runs[by])) if by == "method" else sorted(set(runs[by]))
    for arm in arms:
        add(METHOD_NAMES.get(arm, arm) if by == "method" else arm, runs[runs[by] == arm])
    return pd.DataFrame(rows).fillna("")


SERVER_KEYS = {"candidate_accuracy": "true accuracy of the G candidates", "reward_mean": "experts' mean score",
               "ae_share": "share of AE (exact) scores", "frac_zero_adv": "groups with zero advantage",
               "completion_length": "completion length (tokens)"}


def server_phases(result: dict, split: int = 7, keys: dict = SERVER_KEYS) -> pd.DataFrame:
    """A long run's server diagnostics (each row's ``server_curve``, ``benchmarks/fedgrpo_compare.py`` with
    ``--eval-every 1``): per key and seed, the mean over rounds 1..``split`` → the mean over the later rounds,
    as "a / b / c → d / e / f" (seeds in file order), one row per key."""
    runs = [r for r in result.get("runs", []) if r.get("server_curve")]
    if not runs:
        raise ValueError("result: no run has a 'server_curve' (run benchmarks/fedgrpo_compare.py with --eval-every 1)")

    def phase(r, key, early):
        vals = [c[key] for c in r["server_curve"] if key in c and ((c["round"] <= split) == early)]
        return float(np.mean(vals)) if vals else float("nan")

    rows = []
    for key, label in keys.items():
        digits = 1 if key == "completion_length" else 2
        fmt = lambda early: " / ".join(f"{phase(r, key, early):.{digits}f}" for r in runs)  # noqa: E731
        rows.append({"server, per round": label, f"rounds 1–{split} → later": f"{fmt(True)} → {fmt(False)}"})
    return pd.DataFrame(rows)


#: what a result file records of its environment: (key, in words, how one value reads)
_ENVIRONMENT = (("packages", "package versions", lambda p: ", ".join(f"{k} {v}" for k, v in p.items() if v)),
                ("cpu_kernels", "torch CPU kernels", lambda k: f"torch CPU kernels {k}"))


def environment_note(results: dict[str, dict | None]) -> str:
    """One line on where the loaded result files ran: one environment (package versions and torch's CPU
    kernels, as recorded) or which files differ. Runs are paired within a file; a claim that pairs two files
    (no-GT against with-GT) also needs them to share one."""
    loaded = {arg: r for arg, r in results.items() if r is not None}
    if not loaded:
        return "no result files loaded"
    problems = []
    for key, what, _ in _ENVIRONMENT:
        problems += [f"{RESULT_FILES[a]} records no {what}" for a, r in loaded.items() if r.get(key) is None]
        known = [a for a, r in loaded.items() if r.get(key) is not None]
        if len({json.dumps(loaded[a][key], sort_keys=True) for a in known}) > 1:
            problems.append(f"{what} differ between " + ", ".join(RESULT_FILES[a] for a in known))
    if problems:
        return "mixed environments: " + "; ".join(problems)
    first = next(iter(loaded.values()))
    return "all files ran in one environment: " + ", ".join(say(first[key]) for key, _, say in _ENVIRONMENT)


# -- training until the curves flatten ---------------------------------------------------------------------------


#: the stored trained-until-flat files (pass@1 after every round), in the order :func:`load_long` reads them: every
#: arm to 15 rounds; the four arms still moving at round 15 to 30; Central-GRPO and DPSDA-FL (no PE)+SFT to 30 on the
#: same seeds (a later run, on another CPU model, AVX2 kernels both). :func:`curve_frame` takes each (arm, seed) from
#: the file that trained it longest, so every arm's plateau is rounds 26–30
LONG_FILES = ("fedgrpo_compare_pool_long.json", "fedgrpo_compare_pool_long30.json",
              "fedgrpo_compare_pool_long30_central.json")


def load_long(results_dir: str | Path = "benchmarks/results", files: tuple[str, ...] = LONG_FILES) -> list[dict]:
    """The stored trained-until-flat result dicts (:data:`LONG_FILES`, those present), for :func:`long_curves`,
    :func:`long_claims`, :func:`arm_claims` and :func:`same_reward_claims`."""
    results_dir = Path(results_dir)
    return [json.loads((results_dir / n).read_text()) for n in files if (results_dir / n).exists()]


def _curve_cpus(results: dict | list[dict]) -> dict[str, set[str]]:
    """The CPU model(s) of the file each method's curves come from, by :func:`curve_frame`'s rule (each (method,
    seed) from the file that trained it longest); a file that records no ``cpu`` adds nothing."""
    length, cpu = {}, {}
    for result in results if isinstance(results, list) else [results]:
        for r in result.get("runs", []):
            pts = r.get("curve") or []
            last = max((int(a) for a, _ in pts), default=-1)
            key = (r.get("method"), int(r.get("seed", -1)))
            if pts and last > length.get(key, -1):
                length[key], cpu[key] = last, result.get("cpu")
    out: dict[str, set[str]] = {}
    for (method, _), c in cpu.items():
        out.setdefault(method, set()).update({c} if c else set())
    return out


def curve_frame(results: dict | list[dict], name: str = "long") -> pd.DataFrame:
    """One row per (method, seed, round) of result files whose runs carry a ``curve`` of [round, pass@1].

    With several files (e.g. one arm trained longer in a file of its own), each (method, seed) takes the
    longest curve any file has for it.
    """
    rows, length = {}, {}
    for j, result in enumerate(results if isinstance(results, list) else [results]):
        runs = _runs(result, f"{name}[{j}]" if isinstance(results, list) else name, ("method", "seed", "curve"))
        for i, r in runs.iterrows():
            try:
                pts = [(int(a), float(b)) for a, b in r["curve"]]
            except (TypeError, ValueError) as e:
                raise ValueError(f"{name}: runs[{i}].curve is not a list of [round, pass@1] pairs ({e})") from e
            key = (r["method"], int(r["seed"]))
            if pts and max(a for a, _ in pts) > length.get(key, -1):
                length[key] = max(a for a, _ in pts)
                rows[key] = [{"method": key[0], "seed": key[1], "round": a, "pass_at_1": b} for a, b in pts]
    return pd.DataFrame([x for v in rows.values() for x in v], columns=["method", "seed", "round", "pass_at_1"])


def _slope(points: pd.DataFrame) -> float:
    """Least-squares slope of pass@1 (points, i.e. × 100) per round."""
    x, y = points["round"].to_numpy(float), points["pass_at_1"].to_numpy(float) * 100
    if len(x) < 2 or np.ptp(x) == 0:
        return float("nan")
    return round(float(np.polyfit(x, y, 1)[0]), 9)  # a constant curve's fit leaves ~1e-16, which is 0


def long_curves(result: dict | list[dict], window: int = 5, trend_window: int = 10) -> pd.DataFrame:
    """Has each arm's pass@1 curve flattened? One row per method of ``--eval-every 1`` result files.

    Per seed, the curve's last ``window`` evaluated rounds give a *plateau* (their mean pass@1), and its last
    ``trend_window`` rounds a *slope* (least-squares, points per round; a longer window than the plateau's,
    because one evaluation's sampling noise, about 1.4 points on 280 questions × 4 samples, makes a 5-round
    slope uncertain by about ±0.4 points per round). Columns: the rounds run, pass@1 at rounds 5 and 10 and
    at the last round, the plateau and the slope (mean and std over seeds), and ``trend``: **still rising**
    when the 95 % t interval of the mean slope over seeds lies above 0, **still falling** when below 0,
    **flat** when it contains 0 (no trend the seeds can tell apart from 0: read the slope beside it).

    Args:
        result: a ``benchmarks/fedgrpo_compare.py`` result dict whose runs have ``curve`` ([round, pass@1]),
            or a list of them (each arm and seed from the file that trained it longest).
        window: how many of the last evaluated rounds make the plateau (≥ 1).
        trend_window: how many of the last evaluated rounds make the slope (≥ 2).
    """
    if window < 1 or trend_window < 2:
        raise ValueError(f"window must be at least 1 and trend_window at least 2 evaluated rounds, got {window} and "
                         f"{trend_window}")
    df = curve_frame(result)
    out = []
    for method, m in df.groupby("method", sort=False):
        per_seed = []
        for seed, s in m.groupby("seed"):
            s = s.sort_values("round")
            at = dict(zip(s["round"], s["pass_at_1"]))
            per_seed.append(dict(seed=seed, rounds=int(s["round"].max()), r5=at.get(5, np.nan), r10=at.get(10, np.nan),
                                 last=float(s["pass_at_1"].iloc[-1]), plateau=float(s.tail(window)["pass_at_1"].mean()),
                                 slope=_slope(s.tail(trend_window))))
        p = pd.DataFrame(per_seed)
        n = len(p)
        sd = (lambda c: float(p[c].std(ddof=1)) if n > 1 else float("nan"))  # noqa: E731
        slope, half = t_interval(p.slope)[:2]
        trend = ("one seed: no trend test" if n < 2 else
                 {1: "still rising", -1: "still falling", 0: "flat"}[sign_verdict(slope, half)])
        out.append({"method": METHOD_NAMES.get(method, method), "seeds": n, "rounds": int(p.rounds.min()),
                    "round 5": round(float(p.r5.mean()), 3), "round 10": round(float(p.r10.mean()), 3),
                    "last round": round(float(p["last"].mean()), 3),
                    f"plateau (last {window})": round(float(p.plateau.mean()), 3), "plateau std": round(sd("plateau"), 3),
                    f"slope, last {trend_window} (points/round)": round(slope, 2),
                    "slope std": round(sd("slope"), 2), "slope ±95% t": round(half, 2), "trend": trend})
    return pd.DataFrame(out)


def curves_view(results: dict | list[dict], shown: list[str], title: str):
    """The pass@1 curves of the methods ``shown`` (mean over seeds ± one std, a band per method) and their
    :func:`long_curves` rows: (figure, table)."""
    from fedrl_kit import viz

    frame = curve_frame(results)
    fig = viz.seed_band_curves(frame[frame.method.isin(shown)], names=METHOD_NAMES,
                               title=f"{title}: pass@1 after every round (mean over seeds ± one std)")
    fig.update_layout(yaxis_title="pass@1")
    table = long_curves(results)
    return fig, table[table.method.isin([METHOD_NAMES[m] for m in shown])]


LONG_PAIRS = ([("FedGRPO near Central-GRPO, trained until flat", "Table 1", "fedgrpo", "central_grpo", "near")]
              + [(f"FedGRPO beats {METHOD_NAMES[b]}, trained until flat", "Table 1", "fedgrpo", b, "beats")
                 for b in ("fedavg_grpo", "fedpetuning_sft", "dpsda_grpo", "dpsda_sft")])
""":func:`long_claims`' rows: (claim, paper, arm a, arm b, "near" or "beats")"""

ARM_PAIRS = ([("FedGRPO, every client holding every label, near Central-GRPO, trained until flat",
               "Table 1 (the official trainer's reward source)", "fedgrpo_allgt", "central_grpo", "near")]
             + [(f"FedGRPO, every client holding every label, beats {METHOD_NAMES[b]}, trained until flat",
                 "Table 1 (the official trainer's reward source)", "fedgrpo_allgt", b, "beats")
                for b in ("fedavg_grpo", "fedpetuning_sft", "dpsda_grpo", "dpsda_sft")]
             + [("FedGRPO's official protocol near Central-GRPO, trained until flat",
                 "Table 1 (as the official code runs it)", "fedgrpo_official", "central_grpo", "near"),
                ("FedGRPO's official protocol beats Fedpetuning+GRPO, trained until flat",
                 "Table 1 (as the official code runs it)", "fedgrpo_official", "fedavg_grpo", "beats")]
             + [("competence-based selection beats random selection (same M, FedGRPO's accuracy), trained until flat",
                 "§3.2 (the method's premise; no table)", "fedgrpo", "fedgrpo_random", "beats"),
                ("every client holding every label beats the owner alone holding it (FedGRPO), trained until flat",
                 "– (which reward source Table 1 used)", "fedgrpo_allgt", "fedgrpo", "beats"),
                ("the official protocol beats the paper's (both: every client holds every label), trained until flat",
                 "– (the official code against Algorithm 1)", "fedgrpo_official", "fedgrpo_allgt", "beats")])
""":func:`arm_claims`' rows: the control arms against the baselines and against FedGRPO as the paper describes it"""


def with_arms(results: list[dict], arms: dict[str, dict | None], spec: dict = ARMS,
              files: dict = ARM_FILES) -> list[dict]:
    """``results`` plus each arm's file with its FedGRPO rows renamed to the arm (``spec``'s keys: the control arms
    :data:`ARMS` unless given), so that :func:`long_curves` and :func:`long_claims` read the arms beside the
    baselines. An arm's file must record the settings that make it (``settings.set``): a file made otherwise is
    refused, naming it (``files``)."""
    out = list(results)
    for arm, result in arms.items():
        if result is None:
            continue
        if arm not in spec:
            raise ValueError(f"unknown FedGRPO arm {arm!r}; arms: {list(spec)}")
        made = (result.get("settings") or {}).get("set", [])
        if not set(spec[arm]) <= set(made):
            raise ValueError(f"{files[arm]}: made with --set {made}, not with {spec[arm]} (the {arm} arm)")
        runs = [dict(r, method=arm) for r in result.get("runs", []) if r.get("method") == "fedgrpo"]
        out.append(dict(result, runs=runs))
    return out


def load_arms(results_dir: str | Path = "benchmarks/results", files: dict = ARM_FILES) -> dict[str, dict | None]:
    """The arms' stored files (``files``: the control arms' :data:`ARM_FILES` unless given), None for one not run."""
    results_dir = Path(results_dir)
    return {arm: (json.loads((results_dir / name).read_text()) if (results_dir / name).exists() else None)
            for arm, name in files.items()}


def arm_claims(results: list[dict], arms: dict[str, dict | None], window: int = 5, trend_window: int = 10,
               near_tol: float = 3.0) -> pd.DataFrame:
    """:func:`long_claims` for the control arms (:data:`ARM_PAIRS`): FedGRPO with every expert holding every
    label against the baselines, competence against random selection, and the official protocol; an arm not run
    leaves its rows "not tested"."""
    return long_claims(with_arms(results, arms), window, trend_window, near_tol, pairs=ARM_PAIRS)


#: FedGRPO without ground truth (Table 2) trained until flat (30 rounds, pass@1 every round; ``fedgrpo_compare.py
#: --no-gt``): arm → the settings its file must record under ``settings.set``, then the files, by arm
NOGT_ARMS = {"fedgrpo_nogt": ["fedgrpo.mode=no_gt", "evaluator.training=grpo"],
             "fedgrpo_nogt_subject": ["fedgrpo.mode=no_gt", "evaluator.training=grpo", "fedgrpo.no_gt_scorer=subject"]}
NOGT_FILES = {"fedgrpo_nogt": "fedgrpo_compare_nogt_expert30.json",
              "fedgrpo_nogt_subject": "fedgrpo_compare_nogt_subject30.json"}
NOGT_PAIRS = [("FedGRPO without ground truth beats the zero-shot base, trained until flat", "Table 2", "fedgrpo_nogt",
               "zero_shot", "beats"),
              ("FedGRPO without ground truth beats the zero-shot base, the official code's scorer, trained until flat",
               "Table 2 (as the official code scores)", "fedgrpo_nogt_subject", "zero_shot", "beats"),
              ("FedGRPO without ground truth near Central-GRPO, trained until flat", "Table 2", "fedgrpo_nogt",
               "central_grpo", "near"),
              ("FedGRPO without ground truth near Central-GRPO, the official code's scorer, trained until flat",
               "Table 2 (as the official code scores)", "fedgrpo_nogt_subject", "central_grpo", "near"),
              ("FedGRPO without ground truth near Central-GRPO, same reward shape, trained until flat",
               "Table 2 (Central-GRPO on 8·correctness + 1·format)", "fedgrpo_nogt", "central_grpo_same_reward", "near"),
              ("FedGRPO without ground truth near Central-GRPO, the official code's scorer, same reward shape, trained "
               "until flat", "Table 2 (as the official code scores; Central-GRPO on 8·correctness + 1·format)",
               "fedgrpo_nogt_subject", "central_grpo_same_reward", "near"),
              ("FedGRPO without ground truth near FedGRPO with it, trained until flat", "Tables 1, 2", "fedgrpo_nogt",
               "fedgrpo", "near"),
              ("the experts' own evaluators beat the official code's subject reward models (no ground truth), "
               "trained until flat", "– (our scorer against the official code's)", "fedgrpo_nogt",
               "fedgrpo_nogt_subject", "beats")]
""":func:`nogt_claims`' rows: Table 2 on plateaus, under both scorers"""


def load_nogt(results_dir: str | Path = "benchmarks/results") -> dict[str, dict | None]:
    """The no-ground-truth 30-round files (:data:`NOGT_FILES`), None for one not run."""
    return load_arms(results_dir, NOGT_FILES)


def nogt_claims(results: list[dict], nogt: dict[str, dict | None], same: dict | None = None, window: int = 5,
                trend_window: int = 10, near_tol: float = 3.0) -> pd.DataFrame:
    """:func:`long_claims` for Table 2 (:data:`NOGT_PAIRS`): FedGRPO without ground truth, scored by the experts'
    own evaluators or by the question's subject reward model, against Central-GRPO (on accuracy alone, and on
    FedGRPO's reward shape from ``same``, :func:`load_same_reward`), FedGRPO with ground truth (``results``: the
    stored trained-until-flat files), the zero-shot base (each seed's round 0, held flat over the same rounds: the
    base does not train) and each other; an arm or file not given leaves its rows "not tested"."""
    both = with_arms(with_same_reward(results, same), nogt, NOGT_ARMS, NOGT_FILES)
    ran = [r for arm, r in nogt.items() if r is not None]
    if ran:  # the base of the seeds the no-GT runs start from (the same in both files)
        base = [dict(r, method="zero_shot", curve=[[a, r["curve"][0][1]] for a, _ in r["curve"]])
                for r in ran[0]["runs"] if r.get("method") == "fedgrpo" and r.get("curve")]
        both.append(dict(ran[0], runs=base))
    return long_claims(both, window, trend_window, near_tol, pairs=NOGT_PAIRS)


def _arm_rewards(results: dict | list[dict]) -> dict[str, tuple | None]:
    """:func:`arm_reward` of every method of one or more result files, by method. A method that trained on two
    different rewards in two files is refused, naming it: :func:`curve_frame` would pair whichever curve is longer
    (rename one first, as :func:`with_arms` and :func:`with_same_reward` do)."""
    out: dict[str, tuple | None] = {}
    for result in results if isinstance(results, list) else [results]:
        for m, r in _file_rewards(result).items():
            if m != "zero_shot" and m in out and out[m] != r:
                raise ValueError(f"{METHOD_NAMES.get(m, m)} ({m}) trained on {reward_words(out[m])} in one file and "
                                 f"on {reward_words(r)} in another: rename one arm before pairing them")
            out[m] = r
    return out


#: the GRPO baselines rerun on FedGRPO's own reward shape, 8 · accuracy + 1 · format (30 rounds, pass@1 every round):
#: the file, the settings it must record under ``settings.set``, and the arm key each of its methods takes, so that
#: its runs sit beside the accuracy-only runs of the same methods
SAME_REWARD_FILE = "fedgrpo_compare_pool_long30_samereward.json"
SAME_REWARD_SET = ["rewards=accuracy,format", "reward_weights=8,1"]
SAME_REWARD = {"fedavg_grpo": "fedavg_grpo_same_reward", "central_grpo": "central_grpo_same_reward",
               "dpsda_grpo": "dpsda_grpo_same_reward"}

SAME_REWARD_PAIRS = [("FedGRPO beats Fedpetuning+GRPO, same reward", "Table 1 (every arm on 8·correctness + 1·format)",
                      "fedgrpo", "fedavg_grpo_same_reward", "beats"),
                     ("FedGRPO near Central-GRPO, same reward", "Table 1 (every arm on 8·correctness + 1·format)",
                      "fedgrpo", "central_grpo_same_reward", "near"),
                     ("FedGRPO beats DPSDA-FL (no PE)+GRPO, same reward",
                      "Table 1 (every arm on 8·correctness + 1·format)", "fedgrpo", "dpsda_grpo_same_reward", "beats")]
""":func:`same_reward_claims`' rows: Table 1's verdicts redone with every baseline on FedGRPO's reward shape"""


def with_same_reward(results: list[dict], same: dict | None) -> list[dict]:
    """``results`` plus the same-reward file (:data:`SAME_REWARD_FILE`) with its baselines renamed to their arm keys
    (:data:`SAME_REWARD`) and its other methods left out (FedGRPO's runs are the stored ones: ``--set rewards`` does
    not change its reward). The file must record :data:`SAME_REWARD_SET` under ``settings.set``: a file made
    otherwise is refused, naming it. ``same`` None: ``results`` unchanged (its rows read "not tested")."""
    if same is None:
        return list(results)
    made = (same.get("settings") or {}).get("set") or []
    if not set(SAME_REWARD_SET) <= set(made):
        raise ValueError(f"{SAME_REWARD_FILE}: made with --set {made}, not with {SAME_REWARD_SET} (the baselines on "
                         "FedGRPO's reward shape)")
    runs = [dict(r, method=SAME_REWARD[r["method"]]) for r in same.get("runs", []) if r.get("method") in SAME_REWARD]
    return [*results, dict(same, runs=runs)]


def load_same_reward(results_dir: str | Path = "benchmarks/results") -> dict | None:
    """The stored same-reward file (:data:`SAME_REWARD_FILE`), None when it is not there."""
    p = Path(results_dir) / SAME_REWARD_FILE
    return json.loads(p.read_text()) if p.exists() else None


def same_reward_claims(results: list[dict], same: dict | None, window: int = 5, trend_window: int = 10,
                       near_tol: float = 3.0) -> pd.DataFrame:
    """:func:`long_claims` for FedGRPO against each GRPO baseline trained on FedGRPO's own reward shape
    (:data:`SAME_REWARD_PAIRS`; 8 · accuracy + 1 · format against FedGRPO's 8 · experts' score + 1 · format): the
    plateaus paired by seed, the same verdict and trend rules. ``results``: the stored trained-until-flat files
    (FedGRPO's runs); ``same``: the same-reward file (:func:`load_same_reward`), refused unless made with
    :data:`SAME_REWARD_SET`; None leaves the rows "not tested"."""
    return long_claims(with_same_reward(results, same), window, trend_window, near_tol, pairs=SAME_REWARD_PAIRS)


def long_claims(result: dict | list[dict], window: int = 5, trend_window: int = 10,
                near_tol: float = 3.0, pairs: list[tuple] = LONG_PAIRS) -> pd.DataFrame:
    """Table 1's claims on the trained-until-flat curves: each arm's plateau (mean pass@1 of its last
    ``window`` evaluated rounds), paired by seed, with the verdict rules of :func:`fedgrpo_claims`.

    An arm that has not flattened (:func:`long_curves`: still rising or falling at the end of its run) leaves a
    claim "not tested", unless more training could only widen the gap the verdict rests on — a decisive
    verdict ("holds" / "does not hold" for "beats", "does not hold" for "near") where the moving arm moves away
    from the other (e.g. the baseline ahead and still rising). Such a verdict stands and names the moving arm.

    The ``setting`` column says when a row's two plateaus end after different numbers of rounds ("plateaus of
    different lengths — …"), when its two arms' curves were computed on different CPU models (each file's ``cpu``:
    float sums differ, so a seed's run is not the one the other CPU would give, though it is the same world, split
    and start) and when its two arms trained on different rewards (each arm's reward, :func:`arm_reward`, read from
    the settings of the file it came from).
    """
    df = curve_frame(result)
    rewards = _arm_rewards(result)
    cpus = _curve_cpus(result)
    flat = long_curves(result, window, trend_window).set_index("method")
    tail = (df.sort_values("round").groupby(["method", "seed"], as_index=False).tail(window)
            .groupby(["method", "seed"], as_index=False)["pass_at_1"].mean())
    first = result[0] if isinstance(result, list) else result
    tol = near_tol / 100.0
    setting = (_setting(first, "each arm's rounds") + f"; plateau = mean of the last {window} evaluated rounds, "
               f"trend over the last {trend_window}")
    move = {"still rising": 1, "still falling": -1}
    out = []

    def verdict(rule, d, a, b, decisive):
        miss = _missing(tail, "method", a, b)
        if miss:
            return rule(d, miss)
        v = rule(d, None)
        moving = [(x, sign * move[flat.loc[METHOD_NAMES[x], "trend"]]) for x, sign in ((a, 1), (b, -1))
                  if flat.loc[METHOD_NAMES[x], "trend"] in move]
        if not moving:
            return v
        said = "; ".join(f"{METHOD_NAMES[x]} {flat.loc[METHOD_NAMES[x], 'trend']} after "
                         f"{flat.loc[METHOD_NAMES[x], 'rounds']} rounds" for x, _ in moving)
        if v in decisive and all(np.sign(d.mean()) == push for _, push in moving):
            return f"{v} ({said}, which widens the gap)"
        return f"not tested ({said})"

    labels = {"fedgrpo": "the owner alone holds each label", "fedgrpo_random": "the owner alone holds each label",
              "fedgrpo_official": "every client holds every label",  # (the all-labels arm's name says it)
              "fedgrpo_nogt": "no labels, the experts' GRPO-trained evaluators score",
              "fedgrpo_nogt_subject": "no labels, the question's subject reward model scores"}
    for claim, paper, a, b, kind in pairs:
        d = paired_diffs(tail, {"method": a}, {"method": b}, "pass_at_1")
        rule = ((lambda x, miss: _near(x, tol, miss)) if kind == "near" else (lambda x, miss: _beats(x, miss)))
        decisive = ("does not hold",) if kind == "near" else ("holds", "does not hold")
        said = "; ".join(f"{METHOD_NAMES[x]}: {labels[x]}" for x in dict.fromkeys((a, b)) if x in labels)
        rounds = {x: int(flat.loc[METHOD_NAMES[x], "rounds"]) for x in (a, b) if METHOD_NAMES[x] in flat.index}
        lengths = ("; plateaus of different lengths — " + ", ".join(f"{METHOD_NAMES[x]}: {n} rounds"
                                                                  for x, n in rounds.items())
                   if len(set(rounds.values())) > 1 else "")
        ca, cb = (", ".join(sorted(cpus.get(x, ()))) for x in (a, b))
        machines = (f"; curves from different CPU models — {METHOD_NAMES[a]}: {ca}, {METHOD_NAMES[b]}: {cb}"
                    if ca and cb and ca != cb else "")
        out.append(_row(claim, paper, d, verdict(rule, d, a, b, decisive),
                        setting + (f"; {said}" if said else "") + lengths + machines + _reward_note(rewards, a, b)))
    return pd.DataFrame(out, columns=COLUMNS)


ARM_DIAGNOSTICS = {"ae_share": "share of AE (exact) scores", "reward_gap": "experts' score gap, correct − wrong",
                   "expert_hit_rate_major": "experts holding the topic (≥ 10 % of D_k)",
                   "random_hit_rate_major": "the same for a uniform choice"}


def arm_diagnostics(results: list[dict], arms: dict[str, dict | None]) -> pd.DataFrame:
    """What FedGRPO's server saw in each arm, averaged over its rounds (the row fields of ``fedgrpo_compare.py``):
    one row per arm (FedGRPO as stored first), one column per :data:`ARM_DIAGNOSTICS` key, the seeds' values
    as "a / b / c" (seeds in order)."""
    rows = []
    for result in with_arms(results, arms):
        for method in dict.fromkeys(r["method"] for r in result.get("runs", [])):
            if not method.startswith("fedgrpo") or any(x["arm"] == METHOD_NAMES[method] for x in rows):
                continue
            runs = sorted((r for r in result["runs"] if r["method"] == method), key=lambda r: r["seed"])
            rows.append({"arm": METHOD_NAMES[method], "seeds": len(runs),
                         **{label: " / ".join(f"{r[k]:.2f}" if k in r else "–" for r in runs)
                            for k, label in ARM_DIAGNOSTICS.items()}})
    return pd.DataFrame(rows)


def signals_table(result: dict) -> pd.DataFrame:
    """``benchmarks/fedgrpo_selection_signals.py``'s file as one row per seed: φ's neighbour purity (layer 1, the
    default, and the last layer, L = 5 and 20), the correlation of competence with topic shares (soft and greedy
    cells), and the judges: their greedy accuracy on their own questions and on other clients' (mean over the
    clients, [min, max]) and the mean ME score a correct candidate gets on others' questions."""
    rows = []
    for i, r in enumerate(result.get("runs", [])):
        try:
            ev, pur = r["evaluators"], r["purity"]
            row = {"seed": r["seed"]}
            for key, label in (("layer 1, L = 5", "purity, layer 1, L = 5"), ("layer 1, L = 20", "purity, layer 1, L = 20"),
                               ("layer -1, L = 5", "purity, last layer, L = 5")):
                row[label] = round(pur[key], 3)
            row["competence ~ topic share (soft)"] = round(r["competence_vs_topic_share_probability"], 2)
            row["(greedy)"] = round(r["competence_vs_topic_share_greedy"], 2)
            for key, label in (("accuracy_own", "judges' accuracy, own questions"),
                               ("accuracy_others", "judges' accuracy, others' questions")):
                v = [e[key] for e in ev]
                row[label] = f"{np.mean(v):.2f} [{min(v):.2f}, {max(v):.2f}]"
            row["ME score of a correct candidate, others' questions"] = round(float(np.mean([e["p_true_others"]
                                                                                           for e in ev])), 2)
        except (KeyError, TypeError) as e:
            raise ValueError(f"selection signals: runs[{i}] lacks {e}") from e
        rows.append(row)
    return pd.DataFrame(rows)


def window_differences(a: list[dict], b: list[dict], window: int = 5, per_round: bool = True) -> pd.DataFrame:
    """Arm ``a`` − arm ``b`` over the whole curve, not at its last window only: per seed both arms ran, the mean
    pass@1 of each window of ``window`` rounds (rounds 1–5, 6–10, …; round 0, the shared base, left out), then the
    paired difference's mean, 95 % Student-t half-width over seeds (n − 1 degrees of freedom), the seeds and how
    many of them favour ``a``, in points.

    Args:
        a, b: runs of ``benchmarks/fedgrpo_compare.py`` (each with ``seed`` and ``curve``: [[round, pass@1], …]),
            one arm each.
        window: rounds per window (≥ 1).
        per_round: True: every window is mean pass@1 over its rounds; the curves must be evaluated every round.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1 round, got {window}")
    def windows(run: dict) -> dict[int, float]:
        pts = {int(r): float(p) for r, p in run["curve"] if int(r) >= 1}
        last = max(pts) if pts else 0
        if per_round and sorted(pts) != list(range(1, last + 1)):
            raise ValueError(f"seed {run['seed']}: its curve is not evaluated every round")
        return {w: float(np.mean([pts[r] for r in range(w, w + window)]))
                for w in range(1, last - window + 2, window)}
    wa, wb = ({r["seed"]: windows(r) for r in runs} for runs in (a, b))
    seeds = sorted(set(wa) & set(wb))
    rows = []
    for w in sorted(set.intersection(*(set(wa[s]) & set(wb[s]) for s in seeds))) if seeds else []:
        d = np.array([wa[s][w] - wb[s][w] for s in seeds]) * 100  # [seeds], points
        mean, half, n = t_interval(d)
        rows.append({"rounds": f"{w}–{w + window - 1}", "mean": round(mean, 2), "±95% t": round(half, 2),
                     "seeds": n, "seeds_favouring_a": int((d > 0).sum()), "per_seed": [round(x, 2) for x in d]})
    return pd.DataFrame(rows, columns=["rounds", "mean", "±95% t", "seeds", "seeds_favouring_a", "per_seed"])
