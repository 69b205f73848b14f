"""benchmarks/logits_memory.py: one method measured in its own process, the largest logits named by call site."""

import json

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("logits_memory")


def test_one_method_is_measured_with_its_peak_estimate_and_logits(bench, tmp_path):
    out = tmp_path / "x.json"
    assert bench.main(["--methods", "fedavg_grpo", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["runs"]
    assert row["method"] == "fedavg_grpo" and row["peak_rss_gib"] > 0 and row["estimate_gib"] > 0
    assert row["estimate_evaluators_gib"] == 0
    top = row["largest_logits"][0]
    assert top["shape"][-1] == 151936 and top["site"].count("<") <= 2
