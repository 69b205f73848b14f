"""benchmarks/prompt_pass.py: both passes are timed and compared on the same rollouts (not the timings)."""

import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_both_passes_are_measured_and_agree(tmp_path):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import prompt_pass

        out = tmp_path / "pp.json"
        summary = prompt_pass.main(["--models", "embedded", "--repetitions", "1", "--out", str(out)])
    finally:
        sys.path.remove(str(BENCHMARKS))
    row = json.loads(out.read_text())["runs"][0]
    assert set(summary) == {"embedded"} and row["model"] == "embedded"
    for part in ("generate", "score"):
        assert all(len(row["seconds"][part][pp]) == 1 for pp in ("per_row", "shared"))
        assert row["speedup"][part] > 0
    assert row["same_completions"] is True
    assert 0 < row["grad_max_abs"] and row["grad_max_abs_diff"] < 1e-4 * row["grad_max_abs"] + 1e-7
    assert row["logp_max_abs_diff"] < 1e-4
