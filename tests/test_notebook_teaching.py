"""The teaching side of the notebooks: the exercises' check cells, the parameter checks that stop a notebook in one
line (a misspelt papermill parameter, a parameter edited since the setup cell), widgets that draw on first display
and that a test can drive, the round diagrams, and the shape every teaching notebook keeps (a diagram, the equations,
a notation table, exercises with check cells, a word budget, no long claims table)."""

import json
import re
from pathlib import Path

import ipywidgets as widgets
import pytest
from IPython.core.interactiveshell import InteractiveShell

from fedrl_kit import notebook
from fedrl_kit.diagrams import ROUNDS, Message, Round, round_diagram
from fedrl_kit.notebook import NotebookStop, check, check_parameters, drive_knobs, knobs, parameter_cells

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TEACHING = ["01_fedgrpo_expert_selection", "02_pubswap_balanced_drift", "03_fedmoa_pareto"]
EXERCISES = {"00_quickstart": 2, **{n: 3 for n in TEACHING}}  # the fewest each must have
REPORTS = {"01_fedgrpo_expert_selection": "11_fedgrpo_report", "02_pubswap_balanced_drift": "12_pubswap_report",
           "03_fedmoa_pareto": "13_fedmoa_report"}


# -- exercises ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prediction, answer, right", [
    (1.5, 1.5, True), (1.49, 1.5, False), ("Client_3 ", "client_3", True), ("client_2", "client_3", False),
    ([1, 0], [1, 0], True), ([0, 1], [1, 0], False), ({"a", "b"}, {"b", "a"}, True), ({"a"}, {"a", "b"}, False),
    ("equal", "equal", True), (0, 0.0, True), ("3", 3, True)])
def test_a_check_cell_says_right_or_not_quite(prediction, answer, right, capsys):
    check(prediction, answer, "because.")
    out = capsys.readouterr().out
    assert out.startswith("✔ Right") if right else out.startswith("✘ Not quite")
    assert ("because." in out) == right  # the explanation only after a right answer
    assert out.count("\n") == 1


def test_a_check_cell_without_a_prediction_gives_nothing_away(capsys):
    check(None, "client_3", "because client_3 holds the topic.")
    out = capsys.readouterr().out
    assert out.startswith("No prediction yet") and "client_3" not in out


def test_a_check_cell_takes_a_tolerance(capsys):
    check(0.33, 1 / 3, tolerance=0.01)
    assert capsys.readouterr().out.startswith("✔ Right")


# -- parameters -----------------------------------------------------------------------------------------------------
PARAMETERS_CELL = 'preset_name = "quick"  # a comment\nnum_clients = 8\ndirichlet_alpha = 0.1\n'


def test_papermills_injected_cell_is_told_from_the_notebooks_parameters():
    injected = '# Parameters\npreset_name = "smoke"\nnum_client = 4\n'
    history = ["", "import os", PARAMETERS_CELL, injected, "cfg = notebook.setup(...)"]
    declared = ["preset_name", "num_clients", "dirichlet_alpha"]
    assert parameter_cells(history) == (declared, ["preset_name", "num_client"])
    assert parameter_cells(["", PARAMETERS_CELL, "setup()"]) == (declared, [])
    assert parameter_cells(["", "x = f()", "setup()"]) == ([], [])  # a call is not a parameters cell


def test_a_misspelt_parameter_stops_in_one_line_naming_the_close_match():
    check_parameters(["preset_name", "num_clients"], ["preset_name"])  # nothing to say
    with pytest.raises(NotebookStop) as e:
        check_parameters(["preset_name", "num_clients", "dirichlet_alpha"], ["preset_name", "num_client"])
    msg = str(e.value)
    assert msg.startswith("not a parameter of this notebook: num_client (did you mean num_clients?)")
    assert "preset_name, num_clients, dirichlet_alpha" in msg and "\n" not in msg
    with pytest.raises(NotebookStop) as e:  # an old name says what it became
        check_parameters(["preset_name", "dirichlet_alpha"], ["beta"], renamed={"beta": "dirichlet_alpha"})
    assert str(e.value).startswith("not a parameter of this notebook: beta (renamed dirichlet_alpha); its parameters")


def test_a_cell_run_after_a_parameter_was_edited_stops_saying_what_to_rerun(capsys):
    shell = InteractiveShell.instance()
    for source in ("rounds = 10\nseed = 0\n", "from fedrl_kit import notebook\n"
                   "notebook._watch(notebook.parameter_cells(notebook._cell_history())[0])  # what .setup( does\n",
                   "x = rounds * 2\nprint('ran', x)"):
        shell.run_cell(source, store_history=True)
    assert "ran 20" in capsys.readouterr().out
    shell.run_cell("rounds = 3\nseed = 0\n", store_history=True)  # the parameters cell, edited: never stopped
    result = shell.run_cell("print('ran', rounds)", store_history=True)
    assert isinstance(result.error_in_exec, NotebookStop)
    shown = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert shown == ["NotebookStop: parameters changed since the setup cell ran (rounds 10 → 3): run the setup cell "
                     "(the one calling notebook.setup) again, then the cells after it"]
    shell.run_cell("rounds = 10\nseed = 0\n", store_history=True)  # back as the setup cell saw it: runs again
    assert shell.run_cell("print('ran', rounds)", store_history=True).error_in_exec is None
    notebook._WATCHED.update(names=[], values=None)


# -- widgets --------------------------------------------------------------------------------------------------------
def test_knobs_draw_on_first_display_and_on_each_change():
    calls = []
    a, b = widgets.IntSlider(2, 0, 5), widgets.Dropdown(options=["x", "y"], value="x")
    box = knobs(lambda **kw: calls.append(kw), a=a, b=b)
    assert calls == [] and a.description == "a" and "fedrl-knobs" in box._dom_classes
    box._repr_mimebundle_()  # what displaying it does
    box._repr_mimebundle_()  # a second display draws nothing new
    assert calls == [{"a": 2, "b": "x"}]
    a.value = 4
    b.value = "y"
    assert calls[1:] == [{"a": 4, "b": "x"}, {"a": 4, "b": "y"}]
    with pytest.raises(ValueError, match="control"):
        knobs(lambda: None)


def test_driving_the_knobs_turns_every_control_and_names_a_setting_that_fails():
    seen = []

    def update(rule, K):
        seen.append((rule, K))
        if rule == "balanced" and K == 2:
            raise AttributeError("'list' object has no attribute 'fedmoa'")

    box = knobs(update, rule=widgets.ToggleButtons(options=[("Balanced", "balanced"), ("Random", "random")]),
                K=widgets.IntSlider(8, 2, 8))
    with pytest.raises(AssertionError) as e:
        drive_knobs([box])
    assert ("random", 8) in seen and ("balanced", 2) in seen and ("balanced", 5) in seen
    assert "K=2: AttributeError" in str(e.value) and "rule=" not in str(e.value)
    ok = knobs(lambda rule, K: None, rule=widgets.ToggleButtons(options=["a", "b"]), K=widgets.IntSlider(1, 0, 2))
    table = drive_knobs([ok])
    assert table.loc[0, "failures"] == 0 and table.loc[0, "settings drawn"] == 1 + 2 + 3


# -- diagrams -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(ROUNDS))
def test_every_method_has_a_round_diagram_naming_its_messages(method):
    svg = round_diagram(method)._repr_svg_()
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    for m in ROUNDS[method].messages:
        assert ("↓ " if m.direction == "down" else "↑ ") + m.carries.replace("&", "&amp;").split("<")[0] in svg


def test_a_round_diagram_escapes_its_text_and_refuses_bad_input(tmp_path):
    r = Round("a & b", ("x < y",), ("c",), (Message("down", "A&B"),))
    d = round_diagram(r, clients=2)
    assert "a &amp; b" in d.svg and "x &lt; y" in d.svg and "A&amp;B" in d.svg
    assert d.save(tmp_path, "r").read_text() == d.svg
    with pytest.raises(ValueError, match="method"):
        round_diagram("nope")
    with pytest.raises(ValueError, match="clients"):
        round_diagram("fedmoa", clients=1)
    with pytest.raises(ValueError, match="direction"):
        Message("sideways", "x")


# -- the shape of each teaching notebook ------------------------------------------------------------------------------
def _cells(name):
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def _markdown(name):
    return ["".join(c["source"]) for c in _cells(name) if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_a_teaching_notebook_stays_within_its_word_budget(name):
    words = sum(len(text.split()) for text in _markdown(name))
    assert words <= 1500, f"{name}: {words} words of markdown (at most 1,500)"


@pytest.mark.parametrize("name", list(EXERCISES))
def test_a_teaching_notebook_draws_a_round_writes_its_equations_and_defines_its_symbols(name):
    text = "\n".join(_markdown(name))
    code = ["".join(c["source"]) for c in _cells(name) if c["cell_type"] == "code"]
    assert any("round_diagram(" in c for c in code), "no round diagram"
    assert any("image/svg+xml" in o.get("data", {}) for c in _cells(name) for o in c.get("outputs", [])), \
        "the diagram is not in the stored outputs"
    assert text.count("$$") >= 4, "fewer than two displayed equations"
    assert re.search(r"^\| symbol \| meaning \|$", text, re.M), "no notation table"
    assert "```" in text, "no pseudocode block"


@pytest.mark.parametrize("name", list(EXERCISES))
def test_a_teaching_notebook_has_exercises_each_followed_by_its_check_cell(name):
    cells = _cells(name)
    predictions = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
                   and re.match(r"prediction_\d+ = None", "".join(c["source"]))]
    assert len(predictions) >= EXERCISES[name]
    for i in predictions:
        n = re.match(r"prediction_(\d+)", "".join(cells[i]["source"])).group(1)
        after = "".join(cells[i + 1]["source"])
        assert cells[i + 1]["cell_type"] == "code" and re.search(rf"notebook\.check(_explained)?\(prediction_{n}, "
                                                                 rf"answer_{n}\b", after)


@pytest.mark.parametrize("name", TEACHING)
def test_a_teaching_notebook_shows_no_long_claims_table_and_links_its_report(name):
    for c in _cells(name):
        for o in c.get("outputs", []):
            html = "".join(o.get("data", {}).get("text/html", ""))
            if "claim" in html or "verdict" in html:
                rows = html.count("<tr>") - html.count("<thead>")  # body rows (one header row per table)
                assert rows <= 5, f"{name}: a claims table of {rows} rows"
    assert f"({REPORTS[name]}.ipynb" in "\n".join(_markdown(name)), "the findings do not link the report"


@pytest.mark.parametrize("name", list(EXERCISES) + list(REPORTS.values()))
def test_a_notebook_tells_no_implementation_history(name):
    text = "\n".join(_markdown(name)).lower()
    for phrase in ("first implementation", "kept for the record", "was changed", "issue #"):
        assert phrase not in text, f"{name}: {phrase!r}"


def test_one_group_is_a_local_steps_group_with_its_advantages(tiny_dir):
    import torch
    from conftest import small_config

    from fedrl_kit.grpo import group_advantages
    from fedrl_kit.runs import REPO_ROOT, Run

    run = Run(small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base")), progress=False).build()
    group = notebook.one_group(run, rows=8)
    G = run.config.num_generations
    assert len(group) == G and set(group["reward r_i"]) <= {0.0, 1.0}
    expected = group_advantages(torch.tensor(group["reward r_i"].tolist(), dtype=torch.float64), G).numpy()
    assert group["advantage A_i"].tolist() == pytest.approx(expected.round(4).tolist())
    assert group.attrs["question"] in list(run.world.test["prompt"][:8])
    assert not any(name.startswith("answers/") for name in run.policy.model.peft_config)  # its adapter dropped


def test_a_report_stops_in_one_line_on_a_misspelt_parameter_or_a_missing_results_folder(tmp_path):
    from conftest import run_notebook
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as e:
        run_notebook("12_pubswap_report", tmp_path, results_rot="x")
    assert e.value.ename == "NotebookStop"
    assert e.value.evalue.startswith("not a parameter of this notebook: results_rot (did you mean results_root?)")
    with pytest.raises(PapermillExecutionError) as e:
        run_notebook("12_pubswap_report", tmp_path, results_root=str(tmp_path / "nowhere"))
    assert e.value.ename == "NotebookStop" and "is not a folder of stored results" in e.value.evalue
