"""How much of PubSwap's paired accuracy differences comes from the 140-problem test set: stored runs re-scored on a
larger held-out test set.

Each run folder's final global adapter (``checkpoint/global.npz``) is scored as the run scores it
(``Run.evaluate_global``: the run's ``eval_samples``, ``eval_seed(seed)``, ``eval_batch_size`` and its world's
accuracy reward), twice: on the run's own test split, on its own (this must give the final pass@1 its
``metrics.jsonl`` stored, to the last bit), and on a larger test set of ``n_full = EMBEDDED_HELDOUT − n_public −
n_aux`` held-out problems (1,260 beside 140 public and 100 auxiliary ones) whose first ``n_test`` problems are the
run's own and whose others are held-out problems the run never saw (none of its public or auxiliary prompts).

Why not ``n_test = n_full`` in the run's config: ``make_world`` draws the test split first, in batches whose size
depends on ``n_test``, so a larger ``n_test`` gives another carve. That carve keeps only part of the run's 140 and
takes problems the run used as public or auxiliary prompts (PubSwap trains on its public ones); the result file
records by how much (``carve``), and the larger set is built as described instead. Either way the larger set is
harder than the run's 140: the held-out region holds few one-digit problems, and the public and auxiliary splits
and the first 140 test problems take most of them, so the problems after the first 140 are mostly two-digit ones.

Per-problem pass rates are kept, so for each pair of arms at each τ, paired by seed (Balanced − FedAvg-GRPO,
control − FedAvg-GRPO, Balanced − control), the summary gives the difference on the run's 140, on all ``n_full``
and on ``K = n_full // n_test`` disjoint blocks of ``n_test`` problems (a fixed random shuffle of the larger set);
the seed-to-seed SD of the difference at 140 and at ``n_full``; the within-seed SD over the blocks (what drawing
140 test problems and their 4 samples adds), and as a check the standard error of the difference from the spread of
the per-problem differences on the run's own 140 (pooled over seeds); and the 95 % Student-t half-width (n − 1 df)
over these seeds at 140 and at ``n_full``. With ``--stored`` (sweep summaries holding more seeds at 140, e.g. the
τ = 48 ones) it adds the seed-to-seed SD and half-width over all the seeds stored at 140. No variance split is
made: an SD from 3–8 seeds is uncertain by about a factor of 2, and at τ = 48 the test-set estimates exceed the
whole seed-to-seed spread over the stored seeds (docs/pubswap.md, "How much the 140-problem test set adds").

    R=runs/pubswap/paper/quick_large_tau
    PYTHONHASHSEED=0 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/pubswap_eval_noise.py \\
        $R/*/*/tau48/seed[567] --stored benchmarks/results/pubswap_paper_quick_large_tau.json \\
        benchmarks/results/pubswap_power_tau48.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _machine import cpu_model, env_prefix, package_versions  # noqa: E402  (imports fedrl_kit before torch)

import numpy as np  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PAIRS = (("pubswap_balanced", "fedavg_grpo"), ("pubswap_noswap", "fedavg_grpo"), ("pubswap_balanced", "pubswap_noswap"))
SHORT = {"pubswap_balanced": "Balanced", "fedavg_grpo": "FedAvg-GRPO", "pubswap_noswap": "control"}
BLOCK_SEED = 0  # the shuffle that cuts the larger set into disjoint blocks of n_test
SETTLE_S = 120  # a folder written to less than this long ago may still be in use


def not_complete(run_dir: Path, settle_s: float = SETTLE_S, now: float | None = None) -> str | None:
    """Why ``run_dir`` is not a finished run to read (None when it is): its checkpoint's round is the config's last,
    metrics.jsonl holds that round's global evaluation, and nothing in it changed in the last ``settle_s`` seconds."""
    from fedrl_kit.report import load_run

    try:
        config, records, _ = load_run(run_dir)
    except (FileNotFoundError, ValueError) as e:
        return str(e)
    state = run_dir / "checkpoint" / "state.json"
    if not (state.exists() and (run_dir / "checkpoint" / "global.npz").exists()):
        return "no checkpoint"
    if json.loads(state.read_text()).get("round") != config["rounds"]:
        return f"checkpoint not at the last round ({config['rounds']})"
    if not any(r["kind"] == "global" and r["round"] == config["rounds"] for r in records):
        return "no final global evaluation"
    newest = max(p.stat().st_mtime for p in [run_dir, *run_dir.rglob("*")])
    if (time.time() if now is None else now) - newest < settle_s:
        return f"written to less than {settle_s:.0f} s ago"
    return None


def larger_test(cfg, world):
    """The run's test rows followed by held-out rows outside all its server splits, ``n_full`` in all, and how the
    carve ``make_world`` makes at ``n_test = n_full`` relates to the run's splits."""
    import datasets

    from fedrl_kit.config import EMBEDDED_HELDOUT
    from fedrl_kit.world.registry import arith_selection, build_world
    from fedrl_kit.world.world import draw

    selection = arith_selection(cfg.world)
    if selection is None:
        raise ValueError(f"only the embedded arith world is handled here, not {cfg.world!r}")
    n_full = EMBEDDED_HELDOUT - cfg.n_public - cfg.n_aux
    own = list(world.test["prompt"])
    used = set(own) | set(world.public["prompt"]) | set(world.aux["prompt"])
    try:
        carved = list(build_world(cfg.replace(n_test=n_full, n_train=cfg.num_clients)).test["prompt"])
        carve = {"n_full": n_full, "own_in_carve": len(set(own) & set(carved)),
                 "own_prefix_of_carve": carved[:len(own)] == own,
                 "carve_in_own_public_or_aux": len((used - set(own)) & set(carved))}
    except ValueError as e:  # make_world cannot draw that many in one split
        carve = {"n_full": n_full, "error": str(e)}
    extra = draw(n_full - len(own), cfg.seed * 4 + 1, True, *selection, exclude=used)
    rows = world.test.to_list() + [{k: r[k] for k in world.test.column_names} for r in extra]
    big = datasets.Dataset.from_list(rows)
    assert big["prompt"][:len(own)] == own and len(set(big["prompt"])) == n_full and not (
        set(big["prompt"][len(own):]) & used)
    return big, carve


def per_problem(policy, dataset, cfg, accuracy_fn) -> tuple[dict, np.ndarray]:
    """``fedrl_kit.evaluate.evaluate`` as a run calls it, and each problem's pass rate over its samples (recorded
    from the accuracy function's calls, in the order ``evaluate`` makes them)."""
    from fedrl_kit.evaluate import eval_seed, evaluate
    from fedrl_kit.policy.adapters import GLOBAL

    seen = []

    def recording(prompts, completions, **kw):
        values = accuracy_fn(prompts, completions, **kw)
        seen.extend(v or 0.0 for v in values)
        return values

    res = evaluate(policy, GLOBAL, dataset, cfg.eval_samples, seed=eval_seed(cfg.seed),
                   batch_size=cfg.eval_batch_size, accuracy_fn=recording)
    rates = np.asarray(seen, float).reshape(len(dataset), cfg.eval_samples).mean(axis=1)  # [n_problems]
    assert float(rates.mean()) == res["pass@1"], "the recorded rates do not give evaluate's pass@1"
    return res, rates


def score_run(run_dir: Path) -> dict:
    """One run folder: its stored final pass@1, the same re-scored on its own test split, and per-problem rates on
    the larger set."""
    import torch

    from fedrl_kit.config import RunConfig
    from fedrl_kit.policy.adapters import GLOBAL
    from fedrl_kit.report import load_run
    from fedrl_kit.rewards import REWARDS
    from fedrl_kit.runs import check_kernels, load_policy, recorded_kernels
    from fedrl_kit.world.registry import build_world

    config, records, _ = load_run(run_dir)
    cfg = RunConfig.from_dict(config)
    check_kernels(run_dir, recorded_kernels(run_dir))
    stored = next(r for r in records if r["kind"] == "global" and r["round"] == cfg.rounds)
    torch.manual_seed(cfg.seed)
    world = build_world(cfg)
    policy = load_policy(cfg)
    with np.load(run_dir / "checkpoint" / "global.npz", allow_pickle=False) as z:
        policy.set_state(GLOBAL, {k: z[k] for k in z.files})  # as a resumed run loads it
    accuracy_fn = REWARDS[world.accuracy_reward]
    big, carve = larger_test(cfg, world)
    t0 = time.perf_counter()
    own, own_rates = per_problem(policy, world.test, cfg, accuracy_fn)
    full, full_rates = per_problem(policy, big, cfg, accuracy_fn)
    return {"run": str(run_dir), "method": cfg.method, "seed": cfg.seed, "tau": cfg.local_steps,
            "n_test": cfg.n_test, "n_full": len(big), "stored_pass@1": stored["pass@1"], "pass@1_own": own["pass@1"],
            "reproduces": own["pass@1"] == stored["pass@1"], "pass@1_full": full["pass@1"],
            "pass@1_full_first_n_test": float(full_rates[:cfg.n_test].mean()), "carve": carve,
            "test_prompts_sha": _sha(big["prompt"]), "eval_s": round(time.perf_counter() - t0, 1),
            "rates_own": own_rates.tolist(), "rates_full": full_rates.tolist()}


def _sha(prompts) -> str:
    import hashlib

    return hashlib.sha256("\n".join(prompts).encode()).hexdigest()[:16]


def _var(v) -> float:
    v = np.asarray(v, float)
    return float(v.var(ddof=1)) if len(v) > 1 else float("nan")


def contrasts(runs: list[dict], stored_rows: list[dict] = ()) -> list[dict]:
    """Per τ and pair of arms (paired by seed; points, i.e. pass@1 × 100): see the module docstring."""
    from experiments.stats import t_interval

    out = []
    for tau in sorted({r["tau"] for r in runs}):
        by = {(r["method"], r["seed"]): r for r in runs if r["tau"] == tau}
        for a, b in PAIRS:
            seeds = sorted(s for (m, s) in by if m == a and (b, s) in by)
            if not seeds:
                continue
            d_own, d_full, within, se_own, blocks = [], [], [], [], []
            for s in seeds:
                ra, rb = by[(a, s)], by[(b, s)]
                if ra["test_prompts_sha"] != rb["test_prompts_sha"]:
                    raise ValueError(f"{ra['run']} and {rb['run']} were scored on different test sets")
                n, diff = ra["n_test"], 100 * (np.asarray(ra["rates_full"]) - np.asarray(rb["rates_full"]))
                k = len(diff) // n
                # K disjoint random blocks of n problems (one fixed shuffle, the same for every run): the larger
                # set's later problems are harder than its first n (see the module docstring), so contiguous
                # blocks would differ by their mix as well as by chance
                order = np.random.default_rng(BLOCK_SEED).permutation(len(diff))[:k * n]
                per_block = diff[order].reshape(k, n).mean(axis=1)  # [K]
                own_diff = 100 * (np.asarray(ra["rates_own"]) - np.asarray(rb["rates_own"]))  # [n]
                d_own.append(100 * (ra["pass@1_own"] - rb["pass@1_own"]))
                d_full.append(float(diff.mean()))
                within.append(_var(per_block))
                se_own.append(_var(own_diff) / n)
                blocks.append([round(float(x), 3) for x in per_block])
            n_full = len(diff)
            w_own = float(np.mean(within))  # test-set variance of a 140-problem difference, pooled over seeds
            m_own, h_own, _ = t_interval(d_own)
            m_full, h_full, _ = t_interval(d_full)
            row = {"tau": tau, "contrast": f"{SHORT[a]} − {SHORT[b]}", "seeds": seeds, "n_test": n, "n_full": n_full,
                   "K": len(blocks[0]), "difference_own": d_own, "difference_full": d_full, "difference_blocks": blocks,
                   "mean_own": m_own, "mean_full": m_full, "sd_seeds_own": math.sqrt(_var(d_own)),
                   "sd_seeds_full": math.sqrt(_var(d_full)), "sd_within_blocks": math.sqrt(w_own),
                   "se_own_problems": math.sqrt(float(np.mean(se_own))), "half_own": h_own, "half_full": h_full}
            stored = [r for r in stored_rows if r["tau"] == tau and r.get("table") in ("table1", "control")]
            if stored:
                pa = {r["seed"]: r["pass@1_final"] for r in stored if r["method"] == a}
                pb = {r["seed"]: r["pass@1_final"] for r in stored if r["method"] == b}
                d = [100 * (pa[s] - pb[s]) for s in sorted(set(pa) & set(pb))]
                m, h, ns = t_interval(d)
                row.update(stored_seeds=ns, stored_mean=m, stored_half=h, stored_sd=math.sqrt(_var(d)))
            out.append(row)
    return out


def markdown(rows: list[dict]) -> str:
    head = ["τ", "contrast", "seeds", "difference at 140", "at all", "SD over seeds at 140", "at all",
            "SD within seed (blocks of 140)", "SE from the own 140", "±95% t at 140", "at all"]
    has_stored = any("stored_half" in r for r in rows)
    if has_stored:
        head += ["stored seeds at 140: SD", "±95% t"]
    n_full = rows[0]["n_full"] if rows else 0
    head[4], head[6], head[10] = f"at {n_full:,}", f"at {n_full:,}", f"at {n_full:,}"
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    f = lambda x, sign=False: (f"{x:+.2f}" if sign else f"{x:.2f}").replace("-", "−")  # noqa: E731
    for r in rows:
        s = r["seeds"]
        cells = [str(r["tau"]), r["contrast"], f"{s[0]}–{s[-1]}" if len(s) > 1 else str(s[0]),
                 f(r["mean_own"], True), f(r["mean_full"], True), f(r["sd_seeds_own"]), f(r["sd_seeds_full"]),
                 f(r["sd_within_blocks"]), f(r["se_own_problems"]), f(r["half_own"]),
                 f(r["half_full"])]
        if has_stored:
            cells += ([f(r["stored_sd"]), f"{f(r['stored_half'])} ({r['stored_seeds']} seeds)"] if "stored_half" in r
                      else ["", ""])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="run folders (config.json, metrics.jsonl, checkpoint/global.npz)")
    ap.add_argument("--stored", nargs="*", default=[], help="sweep summaries with more seeds at 140 (their seed-to-seed SD and interval)")
    ap.add_argument("--out", default=str(RESULTS / "pubswap_eval_noise.json"))
    ap.add_argument("--settle", type=float, default=SETTLE_S, help="skip folders written to less than this ago (s)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    old = json.loads(out.read_text()) if out.exists() else {}
    scored = {r["run"]: r for r in old.get("runs", [])}  # runs scored earlier (another τ) stay
    skipped = {}
    for d in map(Path, args.runs):
        why = not_complete(d, args.settle)
        if why:
            skipped[str(d)] = why
            print(f"skip {d}: {why}", flush=True)
            continue
        r = score_run(d)
        scored[r["run"]] = r
        print(f"{d}: stored {r['stored_pass@1']:.6f}, re-scored {r['pass@1_own']:.6f} "
              f"({'same' if r['reproduces'] else 'DIFFERS'}), at {r['n_full']}: {r['pass@1_full']:.4f} "
              f"({r['eval_s']} s); make_world's own carve at n_test = {r['n_full']}: " + (
                  f"keeps {r['carve']['own_in_carve']} of its {r['n_test']} and takes "
                  f"{r['carve']['carve_in_own_public_or_aux']} of its public/auxiliary prompts"
                  if "error" not in r["carve"] else r["carve"]["error"]), flush=True)
    stored_rows = [row for p in args.stored for row in json.loads(Path(p).read_text())]
    runs = sorted(scored.values(), key=lambda r: (r["tau"], r["method"], r["seed"]))
    rows = contrasts(runs, stored_rows)
    import shlex

    from fedrl_kit.seeding import cpu_kernels

    commands = old.get("commands", [])
    import os

    hashseed = f"PYTHONHASHSEED={os.environ['PYTHONHASHSEED']} " if "PYTHONHASHSEED" in os.environ else ""
    command = (f"{hashseed}{env_prefix()}.venv/bin/python benchmarks/pubswap_eval_noise.py "
               + shlex.join(argv if argv is not None else sys.argv[1:]))
    result = {"benchmark": "pubswap_eval_noise", "commands": [c for c in commands if c != command] + [command],
              "cpu_model": cpu_model(), "cpu_kernels": cpu_kernels(), "packages": package_versions(),
              "skipped": skipped, "contrasts": rows, "runs": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(markdown(rows))
    return result


if __name__ == "__main__":
    main()
