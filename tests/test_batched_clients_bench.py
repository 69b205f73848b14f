"""benchmarks/batched_clients.py: the method argument, its checks before anything runs, and the outcome check."""

import math

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("batched_clients")


def test_a_method_without_a_lockstep_path_is_refused(bench, tmp_path):
    with pytest.raises(SystemExit, match="--method must be one of .*fedmoa.*got 'central_grpo'"):
        bench.main(["--method", "central_grpo", "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()


def test_every_k_is_validated_before_any_round_runs(bench, tmp_path, monkeypatch):
    import fedrl_kit.runs

    monkeypatch.setattr(fedrl_kit.runs.Run, "build", lambda self: pytest.fail("a round was built"))
    with pytest.raises(ValueError, match="num_clients must be >= 3 for fedmoa.setting = 'heter\\+heter'"):
        bench.main(["--method", "fedmoa", "--clients", "3", "2", "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()


def test_default_outputs_follow_the_method(bench):
    assert bench.parse_args([]).out.endswith("batched_clients.json")
    assert bench.parse_args(["--method", "fedgrpo"]).out.endswith("batched_clients_fedgrpo.json")


def test_same_outcome_compares_reward_and_accuracy_metrics_only(bench):
    a = {"c0": {"reward_mean": 0.5, "accuracy": math.nan, "loss": 1.0}, "c1": {"reward_mean": 0.25}}
    assert bench.same_outcome(a, {"c0": {"reward_mean": 0.5, "accuracy": math.nan, "loss": 2.0},
                                  "c1": {"reward_mean": 0.25}})
    assert not bench.same_outcome(a, {"c0": {"reward_mean": 0.5, "accuracy": 0.1}, "c1": {"reward_mean": 0.25}})
    assert not bench.same_outcome(a, {"c0": a["c0"]})  # a client missing
    close = {"c0": {"reward_mean": 0.5 * (1 + 1e-7), "accuracy": math.nan}, "c1": {"reward_mean": 0.25}}
    assert bench.same_outcome(a, close)  # float-level (an evaluator's probabilities in another batch)
    assert not bench.same_outcome(a, {"c0": {"reward_mean": 0.5 + 1 / 64}, "c1": {"reward_mean": 0.25}})


def test_a_round_whose_clients_failed_claims_no_speedup(bench, tmp_path, monkeypatch):
    """A lockstep round whose batched step raised does less work than a sequential one: its time is no speedup."""
    import json

    import fedrl_kit.federation.lockstep as lockstep

    def broken(*args, **kwargs):
        raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")

    monkeypatch.setattr(lockstep, "grpo_step_lockstep", broken)
    out = tmp_path / "x.json"
    rc = bench.main(["--clients", "2", "--repetitions", "1", "--set", "prompts_per_step=2", "num_generations=2",
                     "max_new_tokens=4", "n_test=4", "--out", str(out)])
    assert rc == 1
    run = json.loads(out.read_text())["runs"][0]
    assert run["speedup"] is None and run["cpu_speedup"] is None
    assert run["failed"]["sequential"] == []
    assert len(run["failed"]["lockstep"]) == 4  # both clients, in the warm-up round and the timed one
    assert "same device" in run["failed"]["lockstep"][0]["error"]
