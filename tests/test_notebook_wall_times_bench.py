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


def test_parameters_reach_papermill_and_a_malformed_one_is_refused(bench, tmp_path, monkeypatch, capsys):
    seen = []

    def fake_run(cmd, **kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    project = bench.scratch_project(tmp_path / "p", ["00_quickstart"])
    bench.execute(project, "00_quickstart", "default", tmp_path, {"base": "smollm2", "rounds": "2"})
    runs = project / "runs"
    assert seen[0][-12:] == ["-p", "run_dir", str(runs / "00_quickstart"), "-p", "figures_dir",
                             str(runs / "00_quickstart" / "figures"), "-p", "base", "smollm2", "-p", "rounds", "2"]
    # the run and its figures go to the scratch project, not the repository's runs/
    bench.execute(project, "03_fedmoa_pareto", "default", tmp_path, {})
    assert seen[1][-6:] == ["-p", "run_root", str(runs / "03_fedmoa_pareto"), "-p", "figures_dir",
                            str(runs / "03_fedmoa_pareto" / "figures")]
    bench.execute(project, "12_pubswap_report", "default", tmp_path, {})  # a report trains nothing: no run folder
    assert seen[2][-3:] == ["-p", "figures_dir", str(runs / "12_pubswap_report" / "figures")]
    assert "run_root" not in seen[2] and bench.BUDGET_S["12_pubswap_report"] == 60.0
    with pytest.raises(SystemExit):
        bench.main(["--notebooks", "00_quickstart", "--parameters", "base:smollm2", "--out", str(tmp_path / "o.json")])
    assert "--parameters takes KEY=VALUE items" in capsys.readouterr().err and not (tmp_path / "o.json").exists()
