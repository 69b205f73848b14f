"""FedGRPO's control arms against the competence arm over the whole 30-round curve, window by window.

The plateau verdicts read each arm's last five rounds only; this prints arm − competence arm for every window of
``--window`` rounds (rounds 1–5, 6–10, …), paired over the seeds both ran, with 95 % Student-t intervals
(:func:`experiments.fedgrpo_claims.window_differences`). With the baselines rerun on FedGRPO's own reward
(8 · accuracy + 1 · format, ``fedgrpo_compare_pool_long30_samereward.json``) it prints FedGRPO − each of them, and
what that reward changes in each baseline. It trains nothing: it reads the stored 30-round files.

Run (from the repo root)::

    .venv/bin/python benchmarks/fedgrpo_windows.py

writes ``benchmarks/results/fedgrpo_windows.json``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _machine import save_result  # noqa: E402

from experiments.fedgrpo_claims import ARM_FILES, METHOD_NAMES, window_differences  # noqa: E402

COMPETENCE = "fedgrpo_compare_pool_long30.json"  # the competence arm's runs (method fedgrpo) among the baselines'
SAME_REWARD = "fedgrpo_compare_pool_long30_samereward.json"  # baselines trained on 8 · accuracy + 1 · format
#: the 30-round accuracy-only runs of each baseline, where the same-reward runs' "what the reward alone changes" reads
#: them: the competence file, then Central-GRPO's and DPSDA-FL (no PE)+SFT's own 30-round file
ACCURACY_ONLY = (COMPETENCE, "fedgrpo_compare_pool_long30_central.json")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=str(ROOT / "benchmarks" / "results"), help="folder of stored result files")
    p.add_argument("--window", type=int, default=5, help="rounds per window")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fedgrpo_windows.json"))
    args = p.parse_args(argv)
    folder = Path(args.results)
    competence = [r for r in json.loads((folder / COMPETENCE).read_text())["runs"] if r["method"] == "fedgrpo"]
    runs, summary = [], {}
    for arm, name in ARM_FILES.items():
        other = json.loads((folder / name).read_text())["runs"]
        table = window_differences(other, competence, window=args.window)
        print(f"\n{METHOD_NAMES[arm]} − FedGRPO (competence), points of pass@1 ({name} vs {COMPETENCE}):")
        print(table.to_string(index=False))
        runs.append({"arm": arm, "file": name, "windows": table.to_dict("records")})
        summary[arm] = {row["rounds"]: f"{row['mean']:+.2f} ± {row['±95% t']:.2f} (n={row['seeds']})"
                        for row in table.to_dict("records")}
    same = folder / SAME_REWARD
    if same.is_file():  # the baselines on FedGRPO's own reward weighting: the comparison without the reward confound
        baselines = json.loads(same.read_text())["runs"]
        first = [r for name in ACCURACY_ONLY if (folder / name).is_file()
                 for r in json.loads((folder / name).read_text())["runs"]]
        for method in dict.fromkeys(r["method"] for r in baselines):
            mine = [r for r in baselines if r["method"] == method]
            pairs = [(f"fedgrpo−{method}@8acc+1fmt", competence, mine)]
            before = [r for r in first if r["method"] == method and max(x for x, _ in r["curve"]) >= 30]
            if before:  # what the reward alone changes in that baseline
                pairs.append((f"{method}@8acc+1fmt−{method}@acc", mine, before))
            for label, a, b in pairs:
                table = window_differences(a, b, window=args.window)
                print(f"\n{label}, points of pass@1 ({SAME_REWARD}):")
                print(table.to_string(index=False))
                runs.append({"arm": label, "file": SAME_REWARD, "windows": table.to_dict("records")})
                summary[label] = {row["rounds"]: f"{row['mean']:+.2f} ± {row['±95% t']:.2f} (n={row['seeds']})"
                                  for row in table.to_dict("records")}
    # the arguments only: save_result writes the script's path before them
    return save_result(args.out, "fedgrpo_windows", sys.argv[1:] if argv is None else argv,
                       {"window": args.window, "competence_file": COMPETENCE}, runs, summary, quiet=True)


if __name__ == "__main__":
    main()
