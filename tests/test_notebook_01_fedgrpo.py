"""The helpers notebook 01 (FedGRPO) added: the paper's Table 1 gaps, the stored arms' absolute plateaus beside the
base model's, the stored traces, the window-by-window sentence and table, the same-reward comparison when its file
is stored, and a round diagram that names clients as the notebook's tables do."""

import json
import re
import shutil

import pytest

from experiments.fedgrpo_claims import window_differences
from experiments.findings import (FEDGRPO_BASE_ROW, FEDGRPO_PAPER_TABLE1, FEDGRPO_SAME_REWARD_FILE,
                                  FEDGRPO_TRACE_ARMS, RESULTS, fedgrpo_findings, fedgrpo_paper_table,
                                  fedgrpo_plateaus, fedgrpo_same_reward_windows, fedgrpo_traces,
                                  fedgrpo_window_note, fedgrpo_window_table)
from fedrl_kit import diagrams


def test_the_paper_table_gives_fedgrpos_two_gaps_in_points():
    t = fedgrpo_paper_table()
    assert len(t) == len(FEDGRPO_PAPER_TABLE1) == 6
    row = t.loc[("Math-benchmark", "Qwen2.5-Math-7B")]
    assert row["FedGRPO"] == 36.9 and row["FedGRPO − Central-GRPO"] == pytest.approx(-0.1)
    assert t["FedGRPO − Fedpetuning+GRPO"].min() == pytest.approx(2.3)  # the 3B model on Math-benchmark


def test_the_plateaus_differ_by_the_findings_paired_differences():
    p, f = fedgrpo_plateaus(), fedgrpo_findings()
    assert list(p.index[:3]) == ["FedGRPO", "Fedpetuning+GRPO", "Central-GRPO"]
    assert p.loc["Central-GRPO", "rounds"] == 15 and p.loc["FedGRPO", "rounds"] == 30
    seeds = [c for c in p.columns if c.startswith("seed ")]
    assert p[seeds].notna().all().all()  # only the seeds FedGRPO ran, every arm has each
    pairs = [("FedGRPO", "Fedpetuning+GRPO"), ("FedGRPO", "Central-GRPO"), ("FedGRPO", "FedGRPO, random experts"),
             ("FedGRPO, every client holds every label", "FedGRPO")]
    for (a, b), diff in zip(pairs, f["difference"]):
        assert p.loc[a, "mean"] - p.loc[b, "mean"] == pytest.approx(diff, abs=0.02)


def test_the_plateaus_end_with_the_base_model_every_arm_starts_from():
    p, traces = fedgrpo_plateaus(), fedgrpo_traces()
    assert p.index[-1] == FEDGRPO_BASE_ROW and p.loc[FEDGRPO_BASE_ROW, "rounds"] == 0
    start = traces[traces["round"] == 0].groupby("seed")["pass_at_1"]
    assert (start.nunique() == 1).all()  # every arm of a seed starts from the same model
    for seed, value in start.first().items():
        assert p.loc[FEDGRPO_BASE_ROW, f"seed {seed}"] == pytest.approx(100 * value, abs=0.005)
    assert (p["over the base"] - (p["mean"] - p.loc[FEDGRPO_BASE_ROW, "mean"])).abs().max() <= 0.011
    assert "DPSDA-FL (no PE)+GRPO" in p.index and "over the base" not in fedgrpo_plateaus(base=False)


def test_the_traces_are_the_stored_curves_of_the_arms_on_fedgrpos_seeds():
    t = fedgrpo_traces()
    assert list(t["method"].unique()) == list(FEDGRPO_TRACE_ARMS)
    rounds = t.groupby("method")["round"].max()
    assert rounds["central_grpo"] == 15 and (rounds.drop("central_grpo") == 30).all()
    seeds = set(t.loc[t["method"] == "fedgrpo", "seed"])
    assert all(set(g["seed"]) == seeds for _, g in t.groupby("method"))


def test_the_window_table_agrees_with_the_stored_window_file():
    table, stored = fedgrpo_window_table(), json.loads((RESULTS / "fedgrpo_windows.json").read_text())
    random = next(r for r in stored["runs"] if r["arm"] == "fedgrpo_random")["windows"]
    column = table["FedGRPO, random experts − FedGRPO"]
    for w in random:
        assert column[w["rounds"]] == (f"{w['mean']:+.2f} ± {w['±95% t']:.2f} ({w['seeds_favouring_a']} of "
                                       f"{w['seeds']} seeds above 0)")
    assert column["6–10"].startswith("+3.10 ± 1.90 (3 of 3")


def test_the_same_reward_comparison_reads_its_file_only_when_stored(tmp_path):
    assert fedgrpo_same_reward_windows(tmp_path) is None
    long30 = json.loads((RESULTS / "fedgrpo_compare_pool_long30.json").read_text())
    shutil.copy(RESULTS / "fedgrpo_compare_pool_long30.json", tmp_path)
    baseline = [r for r in long30["runs"] if r["method"] == "fedavg_grpo"]
    (tmp_path / FEDGRPO_SAME_REWARD_FILE).write_text(json.dumps(dict(long30, runs=baseline)))
    got = fedgrpo_same_reward_windows(tmp_path)  # FedGRPO's runs from the 30-round file: the file has none
    want = window_differences([r for r in long30["runs"] if r["method"] == "fedgrpo"], baseline)
    assert got.equals(want)
    (tmp_path / FEDGRPO_SAME_REWARD_FILE).write_text(json.dumps(dict(long30, runs=[])))
    with pytest.raises(ValueError, match="no fedavg_grpo runs"):
        fedgrpo_same_reward_windows(tmp_path)


def test_the_window_note_names_the_windows_that_exclude_zero():
    note = fedgrpo_window_note()
    assert note.startswith("FedGRPO, random experts − FedGRPO (competence-selected)")
    assert "rounds 6–10 higher by 3.10 (±1.90, every seed)" in note
    assert "rounds 1–5" in note and note.endswith("the interval contains 0.")
    assert "26–30 higher" not in note  # −0.44 ± 15.71 contains 0


def test_a_named_round_diagram_uses_the_given_client_names():
    svg = diagrams.named_round_diagram(diagrams.FEDGRPO_AS_TRAINED, ["client_0", "client_1", "client_7"]).svg
    assert re.findall(r'bold">([^<]*)<', svg) == ["server", "client_0", "client_1  (not an expert here)",
                                                  "… client_7"]
    assert "client 1" not in svg and "8·(experts' mean score) + format" in svg
    assert "eqs. 8–9" not in svg


def test_the_gap_sources_are_the_stored_window_comparisons_and_add_up():
    from experiments.findings import (FEDGRPO_GAP_ROWS, fedgrpo_gap_sources, fedgrpo_reward_shape_windows,
                                      fedgrpo_windows)

    g = fedgrpo_gap_sources()
    assert list(g.index) == [r[0] for r in FEDGRPO_GAP_ROWS] and (g["rounds"] == "26–30").all()
    for row, t in ((0, fedgrpo_windows("fedgrpo", "fedavg_grpo")), (1, fedgrpo_same_reward_windows()),
                   (2, fedgrpo_reward_shape_windows()), (3, fedgrpo_windows("fedgrpo_allgt", "fedgrpo"))):
        assert (g.iloc[row]["mean"], g.iloc[row]["±95% t"]) == (t.iloc[-1]["mean"], t.iloc[-1]["±95% t"])
    # paired on the same seeds: (every label − FedGRPO) + (FedGRPO − baseline) = every label − baseline
    assert g.iloc[3]["mean"] + g.iloc[0]["mean"] == pytest.approx(g.iloc[4]["mean"], abs=0.02)
    assert fedgrpo_gap_sources(RESULTS / "nowhere") is None


def test_the_scale_down_sets_the_stored_runs_setting_beside_the_papers():
    from experiments.findings import FEDGRPO_PAPER_SETTING, fedgrpo_scale_down

    t, s = fedgrpo_scale_down(), json.loads((RESULTS / "fedgrpo_compare_pool_long30.json").read_text())["settings"]
    assert list(t.index) == list(FEDGRPO_PAPER_SETTING) and list(t["paper"]) == list(FEDGRPO_PAPER_SETTING.values())
    assert t.loc["clients K", "here"] == str(s["num_clients"]) and f"× {s['eval_samples']} samples" in t.loc[
        "test set", "here"]
    assert t.loc["rounds", "here"] == "30 (Central-GRPO 15)" and t.loc["repeats", "here"] == "3 seeds"


def test_the_closing_summary_quotes_the_findings_and_the_stored_traffic():
    from experiments.findings import fedgrpo_closing_summary

    t, f = fedgrpo_closing_summary(), fedgrpo_findings()
    assert len(t) <= 5 and list(t.columns) == ["paper", "here", "verdict"]
    for i in range(3):
        assert t.iloc[i]["here"].startswith(f"{f.iloc[i]['difference']:+.2f} ± {f.iloc[i]['±95% t']:.2f} points")
    assert t.iloc[0]["verdict"] == "does not hold" and t.iloc[-1]["verdict"] == "not tested"
    runs = json.loads((RESULTS / "fedgrpo_compare_pool_long30.json").read_text())["runs"]
    total = {(r["method"], r["seed"]): r["bytes_up"] + r["bytes_down"] for r in runs}
    ratio = min(total["fedavg_grpo", s] / total["fedgrpo", s] for s in (0, 1, 2))
    assert t.iloc[3]["here"].startswith(f"{ratio:.0f}× to") and t.iloc[3]["verdict"] == "holds"


# -- experiments.teaching_fedgrpo: what notebook 01 shows ------------------------------------------------------------
def test_the_teaching_round_diagram_names_the_step_throughs_experts_and_asks_competence_once():
    from experiments import teaching_fedgrpo as teaching

    ids = [f"client_{k}" for k in range(8)]
    svg = teaching.round_diagram({"experts": [0, 6]}, ids).svg
    names = re.findall(r'bold">([^<]*)<', svg)
    assert names == ["server", "client_0", "client_1  (not asked, nor are the 5 others)", "client_6"]
    assert "all of D_p (questions + labels), once, before round 1" in svg and "L auxiliary questions" not in svg


def test_the_findings_box_has_at_most_five_findings_each_linking_the_report():
    from experiments import teaching_fedgrpo as teaching

    text = teaching.findings_box().data
    items = re.findall(r"^> \d\. (.*)$", text, re.M)
    assert 3 <= len(items) <= 5 and all(f"]({teaching.REPORT})" in i for i in items)
    f = fedgrpo_findings()
    assert f"{-f.iloc[0]['difference']:.2f} ± {f.iloc[0]['±95% t']:.2f} points below" in items[0]
    assert items[0].startswith("**Negative") and "Inferred, not measured" in items[-1]


def test_the_exercises_answers_are_deterministic_quantities():
    from experiments import teaching_fedgrpo as teaching

    assert teaching.exercise_1({})[0] == 1.0
    assert teaching.exercise_2()[0] == 0.125
