"""benchmarks/generation_loop.py: both loops and both prompt passes are timed and sample the same completions
(not the timings)."""

import json

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("generation_loop")


def test_every_variant_is_measured_and_samples_the_same_completions(bench, tmp_path):
    out = tmp_path / "gl.json"
    summary = bench.main(["--models", "embedded", "--repetitions", "1", "--out", str(out)])
    row = json.loads(out.read_text())["runs"][0]
    assert set(summary) == {"embedded"} and row["model"] == "embedded"
    assert set(row["seconds"]) == {"hf/per_row", "compact/per_row", "hf/shared", "compact/shared"}
    assert all(len(v) == 1 and v[0] > 0 for v in row["seconds"].values())
    assert row["same_completions"] is True
    # 4 layers × 7 projections of the 1.6 M-parameter base, float32: most of its weights, copied once
    assert 1.0 < row["folded_copy_mb"] < 8.0
