"""benchmarks/notebook_wall_times.py: the kernel-side switches and the scratch layout (not the timings)."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("notebook_wall_times")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_sitecustomize_sets_the_before_switches_in_a_fresh_interpreter(bench, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(bench.sitecustomize(
        {"fedrl_kit.policy.adapters": {"USE_CACHE": False, "NO_SUCH_SWITCH": 1}}))
    code = "import fedrl_kit.policy.adapters as a; print(a.USE_CACHE, hasattr(a, 'NO_SUCH_SWITCH'))"
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]  # set where it exists, a missing switch is not invented


def test_scratch_project_has_empty_runs_and_the_results_the_notebooks_read(bench, tmp_path):
    project = bench.scratch_project(tmp_path / "p", ["00_quickstart"])
    assert [p.name for p in (project / "notebooks").iterdir()] == ["00_quickstart.ipynb"]
    assert list((project / "runs").iterdir()) == []
    assert (project / "benchmarks" / "results").resolve() == (ROOT / "benchmarks" / "results").resolve()
