"""benchmarks/pubswap_sweep.py's summary file: rows merged under a lock, so sweeps side by side keep each other's."""

import json
import multiprocessing

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def sweep():
    yield from import_benchmark("pubswap_sweep")


def test_a_rerun_replaces_its_own_row_and_keeps_the_others(sweep, tmp_path):
    path = tmp_path / "summary.json"
    sweep.merge_row(path, {"name": "a", "v": 1}, tmp_path / "runs")
    sweep.merge_row(path, {"name": "b", "v": 2}, tmp_path / "runs")
    sweep.merge_row(path, {"name": "a", "v": 3}, tmp_path / "runs")
    assert json.loads(path.read_text()) == [{"name": "b", "v": 2}, {"name": "a", "v": 3}]
    assert not list(tmp_path.glob("*.tmp"))


def _writer(path, runs, prefix, n):  # in a fresh process: the benchmark imported by its path
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "pubswap_sweep", Path(__file__).resolve().parents[1] / "benchmarks" / "pubswap_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for i in range(n):
        mod.merge_row(path, {"name": f"{prefix}{i}"}, runs)


def test_two_sweeps_side_by_side_lose_no_row(tmp_path):
    path, runs = tmp_path / "summary.json", tmp_path / "runs"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, runs, p, 25)) for p in ("x", "y")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    names = sorted(r["name"] for r in json.loads(path.read_text()))
    assert names == sorted([f"x{i}" for i in range(25)] + [f"y{i}" for i in range(25)])
