"""The real-LM demo's benchmark runs end to end (on the tiny policy here) and pairs its seeds as it says."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def test_the_benchmark_pairs_before_and_after_over_seeds(tiny_dir, tmp_path):
    import real_lm_learns

    out = real_lm_learns.main(["--seeds", "0", "1", "--run-dir", str(tmp_path / "runs"), "--out",
                               str(tmp_path / "r.json"), "--set", f"base={tiny_dir}", "chat=false", "rounds=2",
                               "eval_every=1", "n_train=30", "n_test=8", "num_generations=2", "prompts_per_step=2",
                               "max_new_tokens=4", "eval_samples=1", "lora_rank=2"])
    stored = json.loads((tmp_path / "r.json").read_text())
    assert stored["settings"]["world"] == "arith:add,max@1" and len(stored["runs"]) == 2
    for run in stored["runs"]:
        assert [c["round"] for c in run["curve"]] == [0, 1, 2] and run["seconds"] > 0
    s = out["summary"]["pass@1"]
    gains = [a - b for a, b in zip(s["after"], s["before"])]
    assert s["mean_gain"] == pytest.approx(sum(gains) / 2) and s["seeds"] == 2
    assert s["before"] == [r["curve"][0]["pass@1"] for r in stored["runs"]]


def test_the_band_measures_every_cell_and_marks_those_inside_it(tiny_dir, tmp_path):
    import real_lm_band

    out = real_lm_band.main(["--topics", "add", "max", "--difficulties", "1", "--problems", "6", "--samples", "2",
                             "--band", "0.1", "0.9", "--out", str(tmp_path / "band.json"), "--set",
                             f"base={tiny_dir}", "chat=false", "max_new_tokens=4", "lora_rank=2"])
    cells = json.loads((tmp_path / "band.json").read_text())["runs"]
    assert [(c["topic"], c["difficulty"], c["problems"]) for c in cells] == [("add", 1, 6), ("max", 1, 6)]
    for c in cells:
        assert c["in_band"] == (0.1 <= c["pass_at_1"] <= 0.9)
        assert c["pass_at_1"] * 12 == pytest.approx(round(c["pass_at_1"] * 12), abs=1e-3)  # 6 problems × 2 samples
    assert out["summary"]["in_band"] == [f"{c['topic']}@1" for c in cells if c["in_band"]]


def test_a_cell_with_a_small_pool_gives_all_it_has():
    import real_lm_band

    rows = real_lm_band.problems("sub", 1, 80, seed=0)  # a − b ≥ 0 with one-digit operands: 55 problems
    assert 40 < len(rows) <= 55 and len({r["prompt"] for r in rows}) == len(rows)
