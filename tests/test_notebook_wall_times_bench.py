"""benchmarks/notebook_wall_times.py: the kernel-side switch and the scratch layout (not the timings)."""

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


def test_the_reference_mode_puts_every_run_on_the_reference_path_in_a_fresh_interpreter(bench, tmp_path):
    code = "from fedrl_kit.config import RunConfig, preset; print(RunConfig().speed_path()['prompt_pass'], " \
           "preset('quick').grpo_settings().score)"
    seen = {}
    for mode, source in bench.MODES.items():
        (tmp_path / mode).mkdir()
        (tmp_path / mode / "sitecustomize.py").write_text(source)
        env = {"PYTHONPATH": f"{tmp_path / mode}:{ROOT}", "PATH": "/usr/bin:/bin"}
        seen[mode] = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                    check=True).stdout.split()
    assert seen["reference"] == ["per_row", "None"]  # None: grpo's own reference scoring pass
    assert seen["default"][0] == "shared"


def test_scratch_project_has_empty_runs_and_the_results_the_notebooks_read(bench, tmp_path):
    project = bench.scratch_project(tmp_path / "p", ["00_quickstart"])
    assert [p.name for p in (project / "notebooks").iterdir()] == ["00_quickstart.ipynb"]
    assert list((project / "runs").iterdir()) == []
    assert (project / "benchmarks" / "results").resolve() == (ROOT / "benchmarks" / "results").resolve()
