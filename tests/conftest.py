"""Shared fixtures: a tiny policy built in the test session (no checkpoint needed), a small world."""

import os

import pytest

import fedrl_kit  # noqa: F401  (before torch: pins its CPU kernels as `make test` does, for this process and the
#                   processes it starts, e.g. Ray's actors in the Flower tests, so they compute the same floats)
import torch  # noqa: E402

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
torch.set_num_threads(2)


def import_benchmark(name: str):
    """Yield the module ``benchmarks/<name>.py`` with benchmarks/ on sys.path (its own imports, such as ``_machine``,
    resolve), and take benchmarks/ off the path afterwards; for a module-scoped ``bench`` fixture."""
    import importlib
    import sys
    from pathlib import Path

    folder = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, folder)
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(folder)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    """A freshly initialised (untrained) tiny policy saved like any HF model."""
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

    path = tmp_path_factory.mktemp("tiny")
    tok = build_tokenizer()
    model = build_tiny_model(tok, seed=0, hidden_size=64, num_layers=2)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """A test that sets torch's thread count (a benchmark's ``main`` does) leaves it as it found it: a count leaked into
    the next tests makes their float sums differ from those of a thread that never had it set (OpenMP keeps the count
    per thread, so Flower's ServerApp thread and its ClientApp actor would not share it)."""
    threads = torch.get_num_threads()
    yield
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def small_config(tiny_dir, **kw):
    """A seconds-long run on the untrained tiny policy."""
    from fedrl_kit.config import migrate, preset

    base = dict(base=tiny_dir, n_train=80, n_test=14, n_public=8, n_aux=8, num_clients=3, rounds=2, local_steps=1,
                prompts_per_step=2, num_generations=4, max_new_tokens=8, eval_samples=1, lora_rank=2)
    base.update(kw)
    return preset("quick", **migrate(base))


NOTEBOOK_NAMES = ("00_quickstart", "01_fedgrpo_expert_selection", "02_pubswap_balanced_drift", "03_fedmoa_pareto")
"""the notebooks in notebooks/, each run by the parameter-path tests (test_notebook_params, test_notebook_smoke)"""


def interrupted_and_resumed(cfg, tmp_path):
    """``cfg`` run whole in ``tmp_path/whole``, and stopped after round 1 in ``tmp_path/cut`` then resumed there;
    returns the two finished Runs (the resumed one's checkpoint said round 1 when it was cut)."""
    import json

    from fedrl_kit.runs import Interrupted, Run

    whole = Run(cfg, tmp_path / "whole", progress=False)
    whole.run()
    try:
        Run(cfg, tmp_path / "cut", progress=False).run(stop_after=1)
        raise AssertionError("stop_after=1 did not interrupt the run")
    except Interrupted:
        pass
    assert json.loads((tmp_path / "cut" / "checkpoint" / "state.json").read_text())["round"] == 1
    resumed = Run(cfg, tmp_path / "cut", progress=False)
    resumed.run()
    return whole, resumed


CELL_TIMEOUT_S = 600
"""a notebook cell still running after this long is hung (no cell takes a minute on the 2-core CPU): fail, don't wait"""


def run_notebook(name: str, tmp_path, **parameters):
    """Execute ``notebooks/<name>.ipynb`` with papermill as a user does, with ``parameters``, in ``tmp_path`` as its
    working folder (the output notebook goes there too); return the executed notebook. A cell that fails raises
    papermill's PapermillExecutionError (``ename``, ``evalue``: the notebook's error). The engine is the project's
    (``fedrl_kit.notebook_engine``), as ``make demo`` runs it."""
    import papermill
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "notebooks" / f"{name}.ipynb"
    return papermill.execute_notebook(str(src), str(tmp_path / f"{name}.out.ipynb"), parameters=parameters,
                                      kernel_name="python3", engine_name="fedrl", cwd=str(tmp_path), progress_bar=False,
                                      execution_timeout=CELL_TIMEOUT_S)
