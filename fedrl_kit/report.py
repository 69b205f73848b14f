"""What a run folder holds, at a glance: a one-page text summary and the run's own figures.

``fedrl report RUN_DIR`` prints :func:`summary`; ``fedrl plot RUN_DIR`` writes :func:`plot_run`'s
figures into ``RUN_DIR/figures`` (or a folder the caller names). Both only read the folder.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} line {i} is not JSON ({e.msg}); the run folder is damaged") from None
    return rows


def load_run(run_dir: str | Path) -> tuple[dict, list[dict], list[dict]]:
    """(config dict, metric records, ledger rows) of a run folder; a clear error naming what is missing."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run folder at {run_dir}")
    missing = [n for n in ("config.json", "metrics.jsonl") if not (run_dir / n).exists()]
    if missing:
        raise FileNotFoundError(f"{run_dir} is not a run folder: {', '.join(missing)} missing")
    try:
        config = json.loads((run_dir / "config.json").read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{run_dir / 'config.json'} is not JSON ({e.msg}); the run folder is damaged") from None
    ledger = _read_jsonl(run_dir / "ledger.jsonl") if (run_dir / "ledger.jsonl").exists() else []
    return config, _read_jsonl(run_dir / "metrics.jsonl"), ledger


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def summary(run_dir: str | Path) -> str:
    """A one-page text summary: setting, the global curve (start, best, last), clients, failures, bytes."""
    config, records, ledger = load_run(run_dir)
    g = [r for r in records if r["kind"] == "global"]
    lines = [f"run folder  {Path(run_dir)}",
             f"method      {config.get('method')}  (preset {config.get('preset')}, seed {config.get('seed')})",
             f"setting     {config.get('num_clients')} clients, {config.get('rounds')} rounds, τ = "
             f"{config.get('local_steps')} local steps, b = {config.get('prompts_per_step')} prompts × G = "
             f"{config.get('num_generations')}, base {config.get('base')}, world {config.get('world', 'arith')}"]
    if g:
        done = max(r["round"] for r in g)
        best = max(g, key=lambda r: r["pass@1"])
        lines.append(f"progress    evaluated up to round {done} of {config.get('rounds')}")
        lines.append(f"pass@1      round 0: {g[0]['pass@1']:.3f}   best: {best['pass@1']:.3f} (round {best['round']})"
                     f"   last: {g[-1]['pass@1']:.3f} (round {g[-1]['round']})   [test split, n = {g[-1].get('n')}]")
        lines.append("curve       " + "  ".join(f"r{r['round']}:{r['pass@1']:.3f}" for r in g))
    clients = defaultdict(list)
    for r in records:
        if r["kind"] == "client":
            clients[r["client"]].append(r)
    if clients:
        lines.append("clients     last round's local metrics")
        keys = [k for k in ("accuracy", "reward_mean", "loss", "kl") if any(k in rs[-1] for rs in clients.values())]
        lines.append("            " + f"{'client':<10}" + "".join(f"{k:>13}" for k in ["round", *keys]))
        for cid, rs in sorted(clients.items()):
            last = rs[-1]
            vals = "".join(f"{last[k]:>13.4f}" if isinstance(last.get(k), (int, float)) else f"{'–':>13}" for k in keys)
            lines.append("            " + f"{cid:<10}" + f"{last['round']:>13}" + vals)
    fails = [r for r in records if r["kind"] == "failure"]
    if fails:
        lines.append(f"failures    {len(fails)}: " + "; ".join(
            f"{c} ×{n}" for c, n in sorted(Counter(f["client"] for f in fails).items())))
        first = fails[0]
        lines.append(f"            first: round {first['round']} {first['client']}: "
                     f"{str(first.get('error', '')).splitlines()[0][:120]}")
    else:
        lines.append("failures    none")
    if ledger:
        up = sum(r["nbytes"] for r in ledger if r["direction"] == "up")
        down = sum(r["nbytes"] for r in ledger if r["direction"] == "down")
        lines.append(f"bytes       {_human(up)} up, {_human(down)} down, {len(ledger)} messages")
    return "\n".join(lines)


def plot_run(run_dir: str | Path, out: str | Path | None = None, png: bool = True) -> dict[str, dict]:
    """The run's figures — global curve, per-client curves, bytes by message kind — into ``out``
    (default ``RUN_DIR/figures``). Returns {figure name: {"html": path[, "png": path]}}."""
    from fedrl_kit import viz

    config, records, ledger = load_run(run_dir)
    out = Path(out) if out is not None else Path(run_dir) / "figures"
    name = f"{config.get('method')} (seed {config.get('seed')})"
    figs = {"pass_at_1": viz.curves({name: records}, title=f"{name}: global pass@1 on the test split")}
    client_metrics = [m for m in ("accuracy", "reward_mean")
                      if any(m in r for r in records if r["kind"] == "client" and r.get("client") != "server")]
    if client_metrics:
        figs["clients"] = viz.client_curves(records, metrics=tuple(client_metrics))
    if ledger:
        by_kind: dict[tuple[str, str], int] = defaultdict(int)
        for r in ledger:
            by_kind[(r["kind"], r["direction"])] += int(r["nbytes"])
        figs["communication"] = viz.communication_bars(dict(by_kind), title=f"{name}: bytes by message kind")
    return {k: viz.export(f, k, out, png=png) for k, f in figs.items()}
