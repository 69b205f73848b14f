"""fedrl_kit.notebook's before/after views: the base and the trained model's answers to the same questions, and a
stored measurement over seeds as a table."""

import json

import pytest
from conftest import small_config

from experiments.stats import t_interval
from fedrl_kit.evaluate import eval_seed, evaluate
from fedrl_kit.notebook import NotebookStop, before_after, require_model, stored_before_after
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.runs import REPO_ROOT, Run


def test_before_and_after_answer_the_same_questions_greedily_as_evaluate_scores_them(tiny_dir):
    cfg = small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base"), rounds=1, learning_rate=2e-2)
    run = Run(cfg, progress=False)
    run.build()
    table, accuracy = before_after(run, n=5)  # round 0: the global adapter is the initial one
    assert (table["base answer"] == table["trained answer"]).all()
    assert list(table["question"]) == list(run.world.test["prompt"][:5])
    assert list(table["gold"]) == list(run.world.test["answer"][:5])
    run.run()
    table, accuracy = before_after(run, n=5)
    assert len(table) == 5 and accuracy.name == f"accuracy on all {cfg.n_test} test problems"
    assert not any(name.startswith("answers/") for name in run.policy.model.peft_config)  # scratch adapters dropped
    for label, state in (("base", run.initial_state), ("trained", run.server.global_state)):
        run.policy.set_state(GLOBAL, state)
        greedy = evaluate(run.policy, GLOBAL, run.world.test, 1, seed=eval_seed(cfg.seed),
                          batch_size=cfg.eval_batch_size, greedy=True)["greedy"]
        assert accuracy[f"{label} (greedy)"] == round(greedy, 3)
        assert table[f"{label} right"].dtype == bool


def test_the_stored_measurement_reads_as_a_table_with_its_t_interval(tmp_path):
    before, after = [0.2, 0.1, 0.3], [0.6, 0.7, 0.5]
    stored = {"runs": [{"seed": s, "seconds": 10.0 + s} for s in range(3)],
              "summary": {"pass@1": {"before": before, "after": after, "mean_gain": 0.4, "half_width_95": 0.5,
                                     "seeds": 3},
                          "format": {"before": [0.0] * 3, "after": [0.1] * 3, "mean_gain": 0.1, "half_width_95": 0,
                                     "seeds": 3}}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(stored))
    df = stored_before_after(path)
    assert list(df.index) == ["seed 0", "seed 1", "seed 2", "mean of 3 (t, 2 df)"]
    assert list(df["gain"][:3]) == [0.4, 0.6, 0.2]
    assert df.loc["mean of 3 (t, 2 df)", "pass@1 after"] == 0.6
    assert df.loc["mean of 3 (t, 2 df)", "± (95 % t)"] == 0.5 and df.loc["seed 0", "± (95 % t)"] == ""


def test_the_stored_real_model_file_agrees_with_its_own_seeds():
    """The demo's stored file: its paired gain and interval are the t interval of its seeds' gains (n − 1 df)."""
    stored = json.loads((REPO_ROOT / "benchmarks" / "results" / "real_lm_learns_cpu.json").read_text())
    p = stored["summary"]["pass@1"]
    mean, half, n = t_interval([a - b for a, b in zip(p["after"], p["before"])])
    assert (n, mean, half) == (p["seeds"], pytest.approx(p["mean_gain"]), pytest.approx(p["half_width_95"]))
    df = stored_before_after("benchmarks/results/real_lm_learns_cpu.json")
    shown = df.loc["mean of 3 (t, 2 df)"]
    assert abs(shown["gain"] - mean) <= 5e-4 + 1e-9 and abs(shown["± (95 % t)"] - half) <= 5e-4 + 1e-9  # 3 decimals


def test_a_missing_model_stops_a_notebook_in_one_line(tmp_path):
    cfg = small_config(str(tmp_path / "no-such-model"))
    with pytest.raises(NotebookStop, match="does not exist") as e:
        require_model(cfg)
    assert "\n" not in str(e.value)
