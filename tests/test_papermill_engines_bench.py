"""benchmarks/papermill_engines.py: what a run's outcome is read from (not the hang rates themselves)."""

import json
import subprocess
import sys

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("papermill_engines")


def test_the_running_cell_is_read_from_papermills_output(bench, tmp_path):
    out = tmp_path / "o.ipynb"
    assert bench.running_cell(out) is None  # no notebook yet
    cells = [{"metadata": {"papermill": {"status": s}}} for s in ("completed", "completed", "running", "pending")]
    out.write_text(json.dumps({"cells": cells}))
    assert bench.running_cell(out) == 2


def test_a_run_past_its_timeout_is_killed_and_counted_hung(bench, tmp_path, monkeypatch):
    sleeper, popen = [sys.executable, "-c", "import time; time.sleep(60)"], subprocess.Popen
    monkeypatch.setattr(bench.subprocess, "Popen", lambda cmd, **kw: popen(sleeper, **kw))
    row = bench.run_once("01_fedgrpo_expert_selection", "fedrl", tmp_path, {}, timeout=1.0, nice=0)
    assert row["outcome"] == "hung" and row["engine"] == "fedrl" and row["running_cell"] is None


def test_tally_and_bad_arguments(bench, tmp_path):
    rows = [dict(outcome="finished", seconds=s) for s in (50.0, 70.0, 60.0)] + [dict(outcome="hung", seconds=300.0)]
    assert bench.tally(rows) == dict(runs=4, hung=1, failed=0, median_finished_s=60.0)
    with pytest.raises(SystemExit):
        bench.main(["--runs", "0", "--out", str(tmp_path / "o.json")])
    assert not (tmp_path / "o.json").exists()
