"""benchmarks/length_buckets.py: every k is measured on the same completions and computes fewer positions (not the
timings)."""

import json

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("length_buckets")


def test_every_k_is_measured_on_the_same_completions(bench, tmp_path):
    out = tmp_path / "lb.json"
    result = bench.main(["--buckets", "1", "2", "--mu", "1", "--repetitions", "1", "--out", str(out)])
    stored = json.loads(out.read_text())
    assert stored["summary"] == json.loads(json.dumps(result["summary"]))
    rows = {r["length_buckets"]: r for r in stored["runs"]}
    assert set(rows) == {1, 2} and all(len(r["seconds"]) == 1 and r["seconds"][0] > 0 for r in rows.values())
    assert stored["summary"]["same_completions"] is True
    assert rows[1]["passes"] == 1 and rows[2]["passes"] == 2
    real = stored["summary"]["real_completion_tokens"]
    assert real <= rows[2]["completion_positions"] < rows[1]["completion_positions"]  # less padding, none lost


def test_bad_arguments_are_refused(bench, tmp_path):
    with pytest.raises(SystemExit, match="must include 1"):
        bench.main(["--buckets", "2", "3", "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()
