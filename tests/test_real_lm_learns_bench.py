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
