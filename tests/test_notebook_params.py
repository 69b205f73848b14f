"""fedrl_kit.notebook's parameter checks: a preset the notebook knows, the GPU a preset wants, one run folder per
set of parameters, and a run folder emptied only when a run wrote it, each stopping a notebook in one line."""

import json
import shutil
import subprocess
import sys
import time

import pytest
import torch
from conftest import NOTEBOOK_NAMES, run_notebook
from IPython.core.interactiveshell import InteractiveShell
from papermill.exceptions import PapermillExecutionError

from fedrl_kit.notebook import (NotebookStop, check_choice, check_preset, check_run_root, repo_path, require_gpu,
                                run_folder, shown_path, start_run_dir)
from fedrl_kit.runs import REPO_ROOT, mark_run_folder


def test_an_unknown_preset_names_the_valid_ones():
    assert check_preset("smoke", ("quick", "smoke", "full")) == "smoke"
    with pytest.raises(NotebookStop, match=r"preset_name='tiny' .* 'quick', 'smoke', 'full'$"):
        check_preset("tiny", ("quick", "smoke", "full"))


def test_an_unknown_choice_names_the_parameter_and_the_valid_values():
    assert check_choice("method", "zero_shot", ("fedavg_grpo", "zero_shot")) == "zero_shot"
    with pytest.raises(NotebookStop, match=r"^method='sft' is not one this notebook runs; use one of 'fedavg_grpo'"):
        check_choice("method", "sft", ("fedavg_grpo", "zero_shot"))


def test_a_gpu_preset_stops_in_one_line_without_a_gpu(monkeypatch):
    require_gpu("cpu", "quick")  # nothing to check
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(NotebookStop) as e:
        require_gpu("cuda", "full")
    assert "wants a CUDA GPU" in str(e.value) and "'quick'" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    require_gpu("cuda:0", "full")


def test_ipython_shows_a_stop_as_its_one_line_not_a_traceback(capsys):
    err = NotebookStop("preset_name='x' is not a preset of this notebook")
    assert err._render_traceback_() == ["NotebookStop: preset_name='x' is not a preset of this notebook"]
    shell = InteractiveShell.instance()
    result = shell.run_cell("from fedrl_kit.notebook import check_preset\ncheck_preset('x', ('quick',))")
    assert isinstance(result.error_in_exec, NotebookStop)
    shown = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert shown == ["NotebookStop: preset_name='x' is not a preset of this notebook; use one of 'quick'"]


def test_run_folders_come_from_the_parameters_under_the_repository():
    a = run_folder("quickstart", "quick", "fedavg_grpo", k=4, r=10, t=2, s=0)
    assert a == REPO_ROOT / "runs" / "quickstart" / "quick-fedavg_grpo-k4-r10-t2-s0"
    assert run_folder("quickstart", "quick", "fedavg_grpo", k=4, r=12, t=2, s=0) != a
    assert run_folder("x", "quick", faster=True, lam=None, seeds=[0, 1], off=False).name == "quick-faster-seeds0_1"
    assert run_folder("x", "quick", run_dir="somewhere/else") == repo_path("somewhere/else").relative_to(REPO_ROOT)
    assert repo_path("benchmarks/results") == REPO_ROOT / "benchmarks" / "results"


def test_a_folder_that_is_not_a_run_folder_is_refused_and_kept(tmp_path):
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("precious")
    with pytest.raises(NotebookStop, match="not a run folder"):
        start_run_dir(mine)
    assert (mine / "chapter1.tex").read_text() == "precious"
    with pytest.raises(NotebookStop):
        start_run_dir(mine / "chapter1.tex")  # a file
    assert start_run_dir(tmp_path / "new") == tmp_path / "new"  # missing: left to the run to make


def test_a_run_folder_is_emptied(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"method": "fedavg_grpo"}))
    (run / "metrics.jsonl").write_text("")
    mark_run_folder(run)  # what a run writes first: without it the folder is not a run's (a user's config.json)
    start_run_dir(run)
    assert list(run.iterdir()) == []


def test_a_folder_of_runs_takes_runs_and_figures_only(tmp_path):
    root = tmp_path / "runs"
    assert check_run_root(root) == root  # new
    (root / "fedgrpo_s0").mkdir(parents=True)
    (root / "fedgrpo_s0" / "config.json").write_text("{}")
    (root / "fedgrpo_s0" / "checkpoint").mkdir()
    (root / "fedgrpo_s0" / "checkpoint" / "state.json").write_text("{}")
    (root / "figures").mkdir()
    (root / "figures" / "curves.html").write_text("")
    assert check_run_root(root) == root
    (root / "notes.txt").write_text("mine")
    with pytest.raises(NotebookStop, match="notes.txt"):
        check_run_root(root)
    assert (root / "notes.txt").read_text() == "mine"
    with pytest.raises(NotebookStop, match="is a file"):
        check_run_root(root / "notes.txt")


def test_paths_are_shown_relative_to_the_repository():
    assert shown_path(REPO_ROOT / "benchmarks" / "results" / "x.json") == "benchmarks/results/x.json"
    assert shown_path("/elsewhere/x.json") == "/elsewhere/x.json"


# -- the notebooks' own parameter paths, through papermill (a kernel each: seconds) --------------------------------
RUN_FOLDER_PARAMETER = {"00_quickstart": "run_dir", "01_fedgrpo_expert_selection": "run_root",
                        "02_pubswap_balanced_drift": "run_root", "03_fedmoa_pareto": "run_root"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has the GPU the full presets want")
@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_full_without_a_gpu_stops_at_once_in_one_line_of_the_papermill_cli(name, tmp_path):
    t0 = time.time()
    done = subprocess.run([sys.executable, "-m", "papermill", str(REPO_ROOT / "notebooks" / f"{name}.ipynb"),
                           str(tmp_path / "out.ipynb"), "-p", "preset_name", "full", "--cwd", str(tmp_path),
                           "-k", "python3", "--no-progress-bar"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    last = [line for line in done.stderr.splitlines() if line.strip()][-1]
    assert last.startswith("NotebookStop: preset_name='full' wants a CUDA GPU"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr.split("Exception encountered at")[-1]  # the notebook's part: one line
    assert time.time() - t0 < 120  # before any model is loaded (a loaded 2-core machine takes ~30 s to import)
    assert list(tmp_path.iterdir()) == [tmp_path / "out.ipynb"]  # nothing written


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_an_unknown_preset_stops_naming_the_valid_ones(name, tmp_path):
    with pytest.raises(PapermillExecutionError) as e:
        run_notebook(name, tmp_path, preset_name="tiny")
    assert e.value.ename == "NotebookStop"
    assert e.value.evalue.startswith("preset_name='tiny' is not a preset of this notebook; use one of 'quick'")
    assert "'smoke'" in e.value.evalue and "'full'" in e.value.evalue


def test_the_fedgrpo_notebooks_old_parameter_name_stops_naming_its_new_one(tmp_path):
    """``beta`` was the Dirichlet concentration's name, which GRPO's KL coefficient also has: ``-p beta`` stops."""
    with pytest.raises(PapermillExecutionError) as e:
        run_notebook("01_fedgrpo_expert_selection", tmp_path, preset_name="smoke", beta=0.1)
    assert e.value.ename == "NotebookStop"
    assert e.value.evalue.startswith("not a parameter of this notebook: beta (renamed dirichlet_alpha)")


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_a_folder_that_is_not_a_run_folder_is_refused_not_emptied(name, tmp_path):
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("precious")
    with pytest.raises(PapermillExecutionError) as e:
        run_notebook(name, tmp_path, preset_name="smoke", **{RUN_FOLDER_PARAMETER[name]: str(mine)})
    assert e.value.ename == "NotebookStop"
    assert "chapter1.tex" in e.value.evalue or "not a run folder" in e.value.evalue
    assert [p.name for p in mine.iterdir()] == ["chapter1.tex"] and (mine / "chapter1.tex").read_text() == "precious"


def test_two_parameter_sets_give_two_run_folders_in_the_repository_whatever_the_working_folder(tmp_path):
    """The quickstart's smoke run, twice: its run folders come from the parameters, under the repository's runs/
    (not under papermill's working folder), and the second run leaves the first in place."""
    made = [REPO_ROOT / "runs" / "quickstart" / f"smoke-fedavg_grpo-k2-r1-t1-s{s}" for s in (7001, 7002)]
    fresh = [not d.exists() for d in made]
    try:
        for s in (7001, 7002):
            run_notebook("00_quickstart", tmp_path, preset_name="smoke", num_clients=2, rounds=1, local_steps=1,
                         seed=s)
        for d in made:
            assert (d / "config.json").is_file() and (d / "metrics.jsonl").is_file(), d
        assert sorted(p.name for p in tmp_path.iterdir()) == ["00_quickstart.out.ipynb"]
    finally:
        for d, new in zip(made, fresh):
            if new and d.exists():
                shutil.rmtree(d)  # only what this test made


BAD_VALUES = [("num_clients", "four", "num_clients must be an integer, got 'four'"),
              ("num_clients", 2.5, "num_clients must be an integer, got 2.5"),
              ("num_clients", -3, "num_clients must be in [1, 1000], got -3"),
              ("num_clients", 100000, "num_clients must be in [1, 1000], got 100000"),
              ("rounds", 10 ** 12, "rounds must be in [0, 100000], got 1000000000000"),
              ("local_steps", 0, "local_steps must be in [1, 10000], got 0"),
              ("seed", "abc", "seed must be"),
              ("seed", -1, "seed must be an integer in [0, 2**32), got -1"),
              ("seed", 2 ** 63, "seed must be an integer in [0, 2**32), got 9223372036854775808"),
              ("reference_path", "no", "reference_path='no' must be True or False")]


@pytest.mark.parametrize("name,value,message", BAD_VALUES, ids=[f"{n}={v!r}" for n, v, _ in BAD_VALUES])
def test_a_bad_parameter_value_stops_the_quickstart_in_one_line_naming_it_before_anything_is_written(
        name, value, message, tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(PapermillExecutionError) as e:
        run_notebook("00_quickstart", tmp_path, preset_name="smoke", run_dir=str(run_dir), **{name: value})
    assert e.value.ename == "NotebookStop", e.value.evalue
    assert e.value.evalue.startswith(message) and "\n" not in e.value.evalue
    assert not run_dir.exists()


def test_an_unusable_run_folder_stops_in_one_line(tmp_path):
    with pytest.raises(PapermillExecutionError) as e:
        run_notebook("00_quickstart", tmp_path, preset_name="smoke", run_dir="/proc/self/fedrl-run")
    assert e.value.ename == "NotebookStop"
    assert e.value.evalue.startswith("run_dir='/proc/self/fedrl-run' cannot be used as a run folder")
