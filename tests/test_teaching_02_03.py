"""The helpers notebooks 02 (PubSwap) and 03 (FedMOA) teach with: exercise checks that always end with the answer and
why, a widget's default drawn as a static output, the findings' labels and interval sentences, the stored settings
the findings ran in, and PubSwap's round as a time line."""

import json
import re

import ipywidgets as widgets
import pytest

from experiments import findings
from fedrl_kit import notebook
from fedrl_kit.diagrams import step_timeline
from fedrl_kit.runs import REPO_ROOT

RESULTS = REPO_ROOT / "benchmarks" / "results"


# -- exercises ------------------------------------------------------------------------------------------------------
def test_an_explained_check_shows_the_answer_and_why_even_without_a_prediction(capsys):
    notebook.check_explained(None, 3, "M = min(4 − 1, 3).")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("No prediction set") and out[1] == "Answer: 3. Why: M = min(4 − 1, 3)."


@pytest.mark.parametrize("prediction, right", [(0.26, True), (0.4, False), ("x", False)])
def test_an_explained_check_says_right_or_not_and_always_why(prediction, right, capsys):
    notebook.check_explained(prediction, 0.25, "1/N.", tolerance=0.05)
    first, second = capsys.readouterr().out.splitlines()
    expected = "✔ Right: 0.25" if right else f"✘ Not quite: you predicted {prediction!r}"
    assert first.startswith(expected)
    assert second == "Why: 1/N."


def test_an_explained_check_matches_sets_as_check_does(capsys):
    notebook.check_explained({"b", "a"}, {"a", "b"}, "same cluster.")
    assert capsys.readouterr().out.startswith("✔ Right")


# -- widgets --------------------------------------------------------------------------------------------------------
def test_a_static_default_draws_the_controls_current_values_once(capsys):
    calls = []
    a, b = widgets.IntSlider(3, 0, 5), widgets.Dropdown(options=[("x", 1), ("y", 2)], value=2)
    notebook.static_default(lambda a, b: calls.append((a, b)), a=a, b=b)
    assert calls == [(3, 2)]
    assert capsys.readouterr().out.startswith("Default setting (a = 3, b = 2), drawn once as a static output")


# -- findings -------------------------------------------------------------------------------------------------------
def test_findings_are_labelled_in_order():
    table = findings.labelled(findings.pubswap_findings(), "F")
    assert list(table.index) == [f"F{i + 1}" for i in range(len(table))] and table.index.name == "label"
    assert table.reset_index(drop=True).equals(findings.pubswap_findings())


@pytest.mark.parametrize("diff, half, n, start", [
    (-1.56, 0.55, 5, "lower by 1.56 ‖ΔW‖ (95 % t-interval ±0.55 over 5 seeds)"),
    (2.0, 1.0, 3, "higher by 2.00 ‖ΔW‖"),
    (-0.61, 1.26, 5, "within noise: -0.61 ± 1.26 ‖ΔW‖ (95 % t-interval over 5 seeds, contains 0)"),
    (0.5, float("nan"), 1, "+0.50 ‖ΔW‖ (one seed: no interval)")])
def test_interval_words_agree_with_the_interval(diff, half, n, start):
    assert findings.interval_words(diff, half, n, "‖ΔW‖").startswith(start)


def test_interval_words_without_a_unit_leave_no_double_space():
    assert findings.interval_words(-0.03, 0.006, 5, "", 3) == "lower by 0.030 (95 % t-interval ±0.006 over 5 seeds)"


def test_pubswap_setting_is_the_stored_grid_at_its_largest_tau():
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    s = findings.pubswap_setting()
    tau = max(r["tau"] for r in rows)
    assert s["tau"] == tau and s["steps"] == s["tau"] * s["rounds"]
    assert all(r["rounds"] == s["rounds"] and r["pubswap_period"] == s["period"] for r in rows if r["tau"] == tau)
    assert s["seeds"]["pubswap_random"] == sorted({r["seed"] for r in rows
                                                    if r["tau"] == tau and r["method"] == "pubswap_random"})


def test_random_findings_share_the_findings_tables_pass_at_1_row():
    random_rows = findings.pubswap_random_findings().set_index("finding")
    tau = findings.pubswap_setting()["tau"]
    mine = random_rows.loc[f"pass@1, Random − Balanced (τ = {tau})"]
    theirs = findings.pubswap_findings().set_index("finding").loc[f"pass@1, Random − Balanced (τ = {tau})"]
    assert (mine["difference"], mine["±95% t"], mine["seeds"]) == (theirs["difference"], theirs["±95% t"],
                                                                  theirs["seeds"])
    assert list(random_rows.columns) == findings.COLUMNS[1:] and (random_rows["seeds"] >= 3).all()
    for _, r in random_rows.iterrows():  # each verdict agrees with its interval
        inside = abs(r["difference"]) <= r["±95% t"]
        assert (r["verdict"] == "within noise") == inside


def test_fedmoa_setting_and_an_unrounded_claim_match_the_findings_table():
    s = findings.fedmoa_setting()
    grid = json.loads((RESULTS / "fedmoa_compare_cpu.json").read_text())
    assert s["clients"] == grid["settings"]["heter+heter"]["num_clients"] and s["lam"]["FedMOA, λ=100"] == 100.0
    mean, half, n, verdict = findings.fedmoa_claim_interval("FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter")
    row = findings.fedmoa_findings().iloc[1]
    assert (round(mean, 3), round(half, 3), n) == (row["difference"], row["±95% t"], row["seeds"])
    assert verdict == row["verdict"]
    with pytest.raises(KeyError):
        findings.fedmoa_claim_interval("no such claim")


# -- diagrams -------------------------------------------------------------------------------------------------------
def test_a_step_timeline_marks_every_public_step_and_ends_with_the_average():
    svg = step_timeline(6, 2).svg
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    boxes = re.findall(r'font-weight="bold" text-anchor="middle">(\d+)</text><text [^>]*>(public|private)<', svg)
    assert boxes == [(str(j), "public" if j % 2 == 0 else "private") for j in range(1, 7)]
    assert "★" not in svg  # a glyph some plotting fonts lack
    assert svg.index("start: server sends") < svg.index(">public<") < svg.index("end: each client sends")
    with pytest.raises(ValueError, match="tau"):
        step_timeline(0, 2)
