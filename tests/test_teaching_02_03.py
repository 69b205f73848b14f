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


# -- notebook 03's predictions and its λ section ----------------------------------------------------------------------
def test_a_new_model_pushes_off_the_front_exactly_the_points_it_dominates():
    from experiments import teaching_fedmoa as tf

    assert tf.leaves_front([0.46, 0.82]) == {"P2", "P3"}  # Exercise 2: better than (0.30, 0.80) and (0.45, 0.60)
    assert tf.leaves_front([0.1, 0.1]) == set()  # dominated itself: the front stays
    assert tf.leaves_front([0.6, 0.95]) == {"P1", "P2", "P3", "P4"}


def test_at_the_grids_first_boundary_the_lowest_config_rises_and_the_highest_falls():
    """Exercise 4's answer: eq. 12 pulls every client toward the α-average, which sits below the plain mean."""
    from experiments import teaching_fedmoa as tf

    moves = tf.boundary_moves()
    assert list(moves.index) == ["A", "B", "C"]
    assert (moves.rises == (moves["sent for round 2"] > moves["end of round 1"])).all()
    assert moves.rises[moves["end of round 1"].idxmin()] and not moves.rises[moves["end of round 1"].idxmax()]


def test_consecutive_cosines_skip_a_vanished_gradient():
    import numpy as np

    from experiments import teaching_fedmoa as tf

    grads = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]]])  # [T=2, K=2, d=2]; objective 1 vanishes
    assert tf.consecutive_cosines({"c": {"grads": grads}}) == pytest.approx([1 / np.sqrt(2)])


def _probes_and_cfg():
    from types import SimpleNamespace

    import numpy as np

    rng = np.random.default_rng(0)
    probes = {f"client_{i}": dict(reward_names=["accuracy", "format"], w0=[0.5 - 0.1 * i, 0.5 + 0.1 * i],
                                  num_examples=10, grads=rng.normal(size=(3, 2, 50))) for i in range(3)}
    cfg = SimpleNamespace(fedmoa=SimpleNamespace(lam_target=0.05, cluster_key="accuracy", eps=1e-6,
                                                 softmax_temperature=1.0))
    return probes, cfg


def test_the_lambda_table_holds_every_lambda_the_notebook_meets():
    from experiments import teaching_fedmoa as tf

    probes, cfg = _probes_and_cfg()
    lams = tf.replay_lambdas(probes)
    text = tf.lambda_table(cfg, lams, 0.1, False).data
    rows = text.splitlines()[2:]
    hh = findings.fedmoa_setting()
    assert len(rows) == 6 and rows[0].startswith("| the paper (§4.1) | 0.01 |")
    assert f"≈ {list(lams.values())[1]:.3g}" in rows[1] and "scale rule 0.05" in rows[1]
    assert f"| {hh['lam']['FedMOA']:g} |" in rows[3] and f"| {hh['lam']['FedMOA, λ=100']:g} |" in rows[4]
    assert "| 0.1 | read only with normalise" in rows[5]
    assert "| 0.3 | fixed, with normalise" in tf.lambda_table(cfg, lams, 0.3, True).data


def test_the_replay_words_quote_the_measured_cosines_and_moves():
    import numpy as np

    from experiments import teaching_fedmoa as tf

    probes, cfg = _probes_and_cfg()
    words = tf.replay_words(probes, cfg, tf.replay_lambdas(probes)).data
    cos = np.abs(tf.consecutive_cosines(probes))
    assert f"{np.median(cos):.2f} in the median and at most {cos.max():.2f}" in words
    assert "eq. 10 moves w_acc by at most" in words and "eq. 12 then moves it by up to" in words


def test_the_accuracy_finding_is_finding_one():
    from experiments import teaching_fedmoa as tf

    verdict, why = tf.accuracy_finding()
    f1 = findings.fedmoa_findings().iloc[0]
    assert verdict == f1.verdict and f"{f1['±95% t']:.2f} points" in why


def test_the_grids_front_is_starred_and_its_words_compare_the_arms_spread():
    from experiments import teaching_fedmoa as tf

    fig, words = tf.grid_pareto()
    front = [t for t in fig.data if t.name == "the Pareto front"]
    assert len(front) == 1 and front[0].marker.symbol == "star"
    assert f"holds {len(front[0].x)} of the" in words.data and "mean ± sd" in words.data
