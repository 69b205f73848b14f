"""Each paper notebook's `smoke` preset end to end through papermill on a CPU: the code path of its `full` preset
(every loop, table and figure) at the smallest size, so that a parameter path that breaks fails here, not on a
GPU hours in. (The quickstart's smoke run is in test_notebook_params, twice.)"""

import json

import pytest
from conftest import run_notebook

SMOKE = {  # beyond preset_name="smoke"
    "01_fedgrpo_expert_selection": {},
    "02_pubswap_balanced_drift": dict(run_sweep=True, sweep_seeds=[0]),  # the grid run here, as `full` runs it
    "03_fedmoa_pareto": {},
}


@pytest.mark.parametrize("name", SMOKE)
def test_the_smoke_preset_runs_end_to_end(name, tmp_path):
    runs = tmp_path / "runs"
    nb = run_notebook(name, tmp_path, preset_name="smoke", run_root=str(runs), **SMOKE[name])
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    configs = [json.loads(p.read_text()) for p in runs.rglob("config.json")]
    assert configs, "no run was written under run_root"
    assert (runs / "figures").is_dir()  # figures go to the run folder, not to the working folder
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.out.ipynb", "runs"]
