"""benchmarks/fedgrpo_compare.py: the per-round server curve kept for long runs."""

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("fedgrpo_compare")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_server_curve_means_each_round_and_leaves_out_what_a_round_lacks(bench):
    server = [dict(round=1, reward_mean=0.2, reward_gap=0.5), dict(round=1, reward_mean=0.4, reward_gap=0.3),
              dict(round=2, reward_mean=0.9, ae_share=0.25), dict(round=3, loss=1.0)]
    curve = bench.server_curve(server)
    assert [c["round"] for c in curve] == [1, 2, 3]
    assert curve[0] == pytest.approx(dict(round=1, reward_mean=0.3, reward_gap=0.4))
    assert curve[1] == dict(round=2, reward_mean=0.9, ae_share=0.25)
    assert curve[2] == dict(round=3)  # loss is not a curve key
