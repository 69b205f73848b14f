"""benchmarks/run_options.py: every variant runs, rotated, and the options answer like the reference path in the
first round (not the timings)."""

import json

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("run_options")


def test_every_variant_runs_and_starts_like_the_reference(bench, tmp_path):
    out = tmp_path / "ro.json"
    result = bench.main(["--rounds", "1", "--clients", "1", "--repetitions", "1", "--n-test", "14",
                         "--out", str(out)])
    stored = json.loads(out.read_text())
    assert stored["summary"] == json.loads(json.dumps(result["summary"]))
    rows = {r["variant"]: r for r in stored["runs"]}
    assert set(rows) == {"reference", "shared", "shared+compact", "default"}
    assert rows["default"]["options"] == dict(prompt_pass="shared", generation_loop="compact", length_buckets=2)
    assert all(len(r["seconds"]) == 1 and r["seconds"][0] > 0 for r in rows.values())
    assert rows["reference"]["speedup"] == 1.0 and all(r["speedup"] > 0 for r in rows.values())
    assert stored["summary"]["first_round_rewards_equal"] == {n: True for n in rows}
    assert all(0.0 <= r["final_pass_at_1"] <= 1.0 for r in rows.values())


def test_bad_arguments_are_refused(bench, tmp_path):
    with pytest.raises(SystemExit, match="must be >= 1"):
        bench.main(["--repetitions", "0", "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()


def test_lockstep_variants_run_with_the_options_lockstep_takes(bench, tmp_path):
    out = tmp_path / "ro.json"
    bench.main(["--rounds", "1", "--clients", "2", "--repetitions", "1", "--n-test", "14",
                "--variants", "lockstep-reference", "lockstep", "--out", str(out)])
    rows = {r["variant"]: r for r in json.loads(out.read_text())["runs"]}
    assert list(rows) == ["reference", "lockstep-reference", "lockstep"]  # the reference runs whatever is asked
    assert rows["lockstep-reference"]["options"] == dict(client_batching="lockstep")
    assert rows["lockstep"]["options"] == dict(client_batching="lockstep", length_buckets=2)
    # lockstep keeps each client's sampling stream: the first round samples what the sequential clients sample
    assert json.loads(out.read_text())["summary"]["first_round_rewards_equal"] == {n: True for n in rows}
