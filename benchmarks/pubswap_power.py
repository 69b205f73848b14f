"""PubSwap's drift and accuracy contrasts at one τ over every seed stored for it, with each contrast's power.

The large-τ summary (``benchmarks/results/pubswap_paper_quick_large_tau.json``) holds 3–5 seeds per arm; more seeds
of Table 1's FedAvg-GRPO and Balanced and of the no-swap control were run into a file of their own (``--extra``),
so the rows the notebooks and the claims table read stay as they were. This reads both, keeps Table 1's and the
control's rows at ``--tau`` and prints, for Balanced − FedAvg-GRPO, control − FedAvg-GRPO and Balanced − control,
the paired difference (by seed, over the seeds both arms ran), its 95 % Student-t half-width (n − 1 df), the seeds,
and the smallest effect those seeds would detect with 80 % power (``experiments.stats.detectable_effect``), for the
end-of-round drift δ_pair (‖ΔW‖ units) and the final pass@1 (points), as a markdown table.

    .venv/bin/python benchmarks/pubswap_power.py --tau 48 --extra benchmarks/results/pubswap_power_tau48.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
PAIRS = (("pubswap_balanced", "fedavg_grpo"), ("pubswap_noswap", "fedavg_grpo"), ("pubswap_balanced", "pubswap_noswap"))
MEASURES = (("drift_end_pairwise_effective", "drift δ_pair", 1.0), ("pass@1_final", "final pass@1 (points)", 100.0))


def contrasts(rows: list[dict], tau: int) -> pd.DataFrame:
    """One row per (pair, measure): difference, ±95 % t, the interval, seeds, detectable effect, verdict (numbers
    as text, two decimals)."""
    from experiments.stats import detectable_effect, sign_verdict
    from experiments.sweep import _compare

    df = pd.DataFrame(rows)
    df = df[(df.tau == tau) & df.table.isin(["table1", "control"])]
    out = []
    for a, b in PAIRS:
        for key, name, scale in MEASURES:
            mean, _, half, n = _compare(df.assign(v=df[key] * scale), {"method": a}, {"method": b}, "v")
            out.append({"contrast": f"{a} − {b}", "measure": name, "difference": f"{mean:+.2f}",
                        "±95% t": f"{half:.2f}", "interval": f"[{mean - half:+.2f}, {mean + half:+.2f}]", "seeds": n,
                        "detectable": f"{detectable_effect(half, n):.2f}",
                        "verdict": {1: "above 0", -1: "below 0", 0: "cannot tell"}[sign_verdict(mean, half)]})
    return pd.DataFrame(out)


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tau", type=int, default=48)
    ap.add_argument("--extra", nargs="*", default=[], help="further sweep summaries (pubswap_sweep.py --out)")
    args = ap.parse_args(argv)
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    for path in args.extra:
        rows += json.loads(Path(path).read_text())
    seen = [(r["name"], r["seed"]) for r in rows if r["tau"] == args.tau]
    if len(seen) != len(set(seen)):
        raise SystemExit("pubswap_power: a run appears twice across the files; give each seed once")
    table = contrasts(rows, args.tau)
    from experiments.stats import claims_markdown

    print(claims_markdown(table))
    return table


if __name__ == "__main__":
    main()
