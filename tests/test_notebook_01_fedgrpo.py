"""The helpers notebook 01 (FedGRPO) added: the paper's Table 1 gaps, the stored arms' absolute plateaus beside the
base model's, the stored traces, the window-by-window sentence and table, the same-reward comparison when its file
is stored, and a round diagram that names clients as the notebook's tables do."""

import json
import re
import shutil

import numpy as np
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
    assert (p.drop(FEDGRPO_BASE_ROW)["rounds"] == 30).all()  # every arm's plateau is rounds 26–30
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
    assert (rounds == 30).all()
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
    assert t.loc["rounds", "here"] == "30" and t.loc["repeats", "here"] == "3 seeds"


def test_the_closing_summary_quotes_the_findings_and_the_stored_traffic():
    from experiments.findings import fedgrpo_closing_summary

    t, f = fedgrpo_closing_summary(), fedgrpo_findings()
    assert len(t) <= 5 and list(t.columns) == ["paper", "here", "verdict"]
    for i in range(3):
        assert t.iloc[i]["here"].startswith(f"{f.iloc[i]['difference']:+.2f} ± {f.iloc[i]['±95% t']:.2f} points")
    assert t.iloc[0]["verdict"] == "does not hold" and t.iloc[-1]["verdict"] == "not tested"
    # the Central-GRPO row reads the 30-round curves, where Central-GRPO is still moving: no verdict either way
    assert f.iloc[1]["verdict"] == "not tested" and t.iloc[1]["verdict"].startswith("not tested: an arm had not")
    runs = json.loads((RESULTS / "fedgrpo_compare_pool_long30.json").read_text())["runs"]
    total = {(r["method"], r["seed"]): r["bytes_up"] + r["bytes_down"] for r in runs}
    ratio = min(total["fedavg_grpo", s] / total["fedgrpo", s] for s in (0, 1, 2))
    assert t.iloc[3]["here"].startswith(f"{ratio:.0f}× to") and t.iloc[3]["verdict"] == "holds"


# -- experiments.teaching_fedgrpo: what notebook 01 shows ------------------------------------------------------------
def test_the_teaching_round_diagram_names_roles_and_asks_competence_once():
    from experiments import teaching_fedgrpo as teaching

    svg = teaching.round_diagram().svg
    names = re.findall(r'bold">([^<]*)<', svg)
    assert names == ["server", "an expert that owns x_s (AE)", "K − M clients not chosen  (steps 0a–0b only)",
                     "an expert that does not (ME)"]
    assert "0a all of D_p (questions + labels), once, before round 1" in svg and "L auxiliary questions" not in svg
    assert "↑ 0b Pr[θ_k answers each one right]" in svg and "↑ 0 " not in svg  # one number per arrow


def test_the_findings_box_has_at_most_five_findings_each_linking_the_report():
    from experiments import teaching_fedgrpo as teaching

    text = teaching.findings_box().data
    items = re.findall(r"^> \d\. (.*)$", text, re.M)
    assert 3 <= len(items) <= 5 and all(f"]({teaching.REPORT})" in i for i in items)
    f = fedgrpo_findings()
    assert f"Fedpetuning+GRPO − FedGRPO is {-f.iloc[0]['difference']:+.2f} ± {f.iloc[0]['±95% t']:.2f} points" in items[0]
    assert items[0].startswith("**Negative") and items[-1].startswith("**Inferred")
    official = teaching.plateau_table(100 * _last5(teaching.stored_traces())).loc["FedGRPO, official protocol"]
    assert f"plateaus at {official['mean']:.2f}" in items[-1]  # the official-protocol row of the notebook's table


def test_the_findings_box_compares_every_arm_over_the_same_rounds():
    from experiments import teaching_fedgrpo as teaching
    from experiments.fedgrpo_claims import load_long, long_claims

    items = re.findall(r"^> \d\. (.*)$", teaching.findings_box().data, re.M)
    p, f = fedgrpo_plateaus()["mean"], fedgrpo_findings()
    assert f"{p['FedGRPO']:.2f}" in items[0] and f"{p['Fedpetuning+GRPO']:.2f}" in items[0]
    # Central-GRPO from its 30-round file, rounds 26–30 like FedGRPO's, paired by seed as report 11 pairs it
    t = teaching.stored_traces()
    central = t[(t["method"] == "central_grpo") & (t["round"] > 25)].groupby("seed")["pass_at_1"].mean().mean() * 100
    row = long_claims(load_long(RESULTS)).set_index("claim").loc["FedGRPO near Central-GRPO, trained until flat"]
    assert f"Central-GRPO − FedGRPO is {-row['mean']:+.2f} ± {row['±95% t']:.2f}" in items[1]
    assert f"its plateau, {central:.2f}, is not settled" in items[1] and row["verdict"].startswith("not tested")
    assert f"random experts − FedGRPO is {-f.iloc[2]['difference']:+.2f} ± {f.iloc[2]['±95% t']:.2f}" in items[2]


def test_every_difference_in_section_6_is_arm_minus_fedgrpo_as_the_table_prints_it():
    """One sign convention: each "X − FedGRPO is d ± h" of the findings box is the plateau table's row X."""
    from experiments import teaching_fedgrpo as teaching

    t = teaching.plateau_table(100 * _last5(teaching.stored_traces()))
    box = teaching.findings_box().data
    said = re.findall(r"(\S[^:;(]*?) − FedGRPO is ([+-]\d+\.\d\d) ± (\d+\.\d\d)", box)
    assert len(said) == 4
    for name, d, h in said:
        row = next(r for r in t.index if r.lower().endswith(name.strip(":* ").lower()))
        assert (t.loc[row, "arm − FedGRPO"], t.loc[row, "± 95 % t"]) == (d, h), name
    assert "over FedGRPO" in box and "owner only" not in box + teaching.stored_caption().data


def test_the_stored_runs_are_all_thirty_rounds_and_the_caption_reads_the_windows():
    from experiments import teaching_fedgrpo as teaching
    from experiments.findings import fedgrpo_windows

    t = teaching.stored_traces()
    rounds = t.groupby("method")["round"].max()
    assert (rounds[list(teaching.STORED_ARMS)] == 30).all()  # Central-GRPO from its 30-round file too
    assert set(t["seed"]) == set(t.loc[t["method"] == "fedgrpo", "seed"])
    caption = teaching.stored_caption().data
    assert not re.search(r"\(0\.\d{3}", caption)  # no fraction of pass@1 left
    w = fedgrpo_windows("fedgrpo_random", "fedgrpo")  # arm − FedGRPO, as the plateau table
    above = w.loc[w["mean"] - w["±95% t"] > 0, "rounds"].tolist()
    assert above and f"above 0 (random experts did better) in rounds {' and '.join(above)}" in caption
    o = teaching.plateau_diff("fedgrpo_official", "fedgrpo_allgt")  # the official protocol against every label
    assert f"official protocol − every label: {o[0]:+.2f} ± {o[1]:.2f} points, within noise" in caption
    assert abs(o[0]) < o[1]
    assert "Settings" not in caption and "plateau" in teaching.stored_settings().data


# -- the step-through's tables and the exercises, on a hand-made trace ---------------------------------------------
def _trace():
    from fedrl_kit.fedgrpo.group_reward import candidate_advantages, group_relative_rewards

    scores = np.array([[1.0, 0.0, 1.0, 0.0], [0.6, 0.1, 0.6, 0.0]])  # owner (AE) first, then an ME expert
    fmt = np.array([1.0, 0.0, 0.0, 0.0])
    return {"candidates": ["<think>2+3</think><answer>5</answer>", "7", "5", "x"], "correct": np.array([1, 0, 1, 0]),
            "format": fmt, "scores": scores, "experts": [2, 0], "pathways": ["AE", "ME"], "answer": "5", "index": 1,
            "question": "2+3=", "eq9": group_relative_rewards(scores),
            "advantages": {"paper": candidate_advantages(scores, "paper", 8.0, fmt, 1.0)}}


def _run(owner=(0, 2)):
    from types import SimpleNamespace

    facts = SimpleNamespace(owner=np.array(owner))
    return SimpleNamespace(runtime=SimpleNamespace(client_ids=["client_0", "client_1", "client_2"]),
                           truth=SimpleNamespace(fact=lambda name: facts))


def test_the_candidate_table_reads_the_advantage_from_its_reward_column():
    from experiments import teaching_fedgrpo as teaching

    tr = _trace()
    t = teaching.candidate_table(tr, _run())
    assert list(t.columns) == ["candidate", "correct", "f_j", "s_k client_2 (AE)", "s_k client_0 (ME)", "μ_r", "r̃_j",
                               "A_j"]
    r = 8 * tr["scores"].mean(axis=0) + tr["format"]
    assert t["r̃_j"].tolist() == pytest.approx(r.round(3).tolist())
    assert t["A_j"].tolist() == pytest.approx(((r - r.mean()) / (r.std() + 1e-6)).round(3).tolist(), abs=1e-3)
    line = teaching.eq9_line(tr)  # the last row: both experts score 0, so eq. 9 gives 0 there
    assert "sum to" not in line and "on each of the 3 rows (of 4) where the two scores differ" in line
    assert "here |R_k| = 1.00–1.00" in line
    mu = tr["scores"].mean(axis=0)  # the notebook's chain, given: the same table, checked against the package
    given = teaching.candidate_table(tr, _run(), mu, 8 * mu + tr["format"], tr["advantages"]["paper"])
    assert given.equals(t)
    with pytest.raises(ValueError, match="differs from the package"):
        teaching.candidate_table(tr, _run(), mu, 8 * mu, -tr["advantages"]["paper"])


def _last5(curves):
    return curves[curves["round"] > curves["round"].max() - 5].pivot_table("pass_at_1", "method", "seed")


def test_the_plateau_table_is_each_arms_mean_of_its_last_five_rounds_beside_fedgrpos():
    from experiments import teaching_fedgrpo as teaching

    t, f = teaching.plateau_table(100 * _last5(teaching.stored_traces())), fedgrpo_findings()
    assert list(t.index) == ["FedGRPO", "FedGRPO, random experts", "FedGRPO, every client holds every label",
                             "FedGRPO, official protocol", "Fedpetuning+GRPO", "Central-GRPO"]
    assert list(t.columns) == ["seed 0", "seed 1", "seed 2", "mean", "arm − FedGRPO", "± 95 % t"]
    diff, half = t["arm − FedGRPO"], t["± 95 % t"]  # on the same seeds: the findings' paired differences
    assert diff["FedGRPO"] == half["FedGRPO"] == "–"
    assert diff["Fedpetuning+GRPO"] == f"{-f.iloc[0]['difference']:+.2f}" and half["Fedpetuning+GRPO"] == f"{f.iloc[0]['±95% t']:.2f}"
    assert diff["FedGRPO, random experts"] == f"{-f.iloc[2]['difference']:+.2f}"
    assert diff["FedGRPO, every client holds every label"] == f"{f.iloc[3]['difference']:+.2f}"
    assert float(diff["Fedpetuning+GRPO"]) == pytest.approx(t.loc["Fedpetuning+GRPO", "mean"] - t.loc["FedGRPO", "mean"],
                                                            abs=0.011)


def test_with_the_format_learnt_the_experts_scores_pick_the_top_answer():
    from experiments import teaching_fedgrpo as teaching

    tr = dict(_trace(), correct=np.zeros(4, int), scores=np.array([[0.0] * 4, [0.2, 0.5, 0.2, 0.0]]))
    answer, why = teaching.exercise_format_learnt(tr)
    assert answer == "7" and "wrong (label 5)" in why and "cancels" in why  # the ME expert's favourite, though wrong


def test_the_printed_eqs_7_to_9_sum_to_zero_over_the_experts_for_every_candidate():
    from experiments import teaching_fedgrpo as teaching

    answer, why = teaching.exercise_printed_sum(np.array([[1.0, 0.0, 1.0], [0.6, 0.2, 0.5], [0.1, 0.0, 0.0]]))
    assert answer == 0.0 and "always sum to 0" in why and "R_k = +1.18, +0.09, -1.27" in why


def test_the_server_table_shows_each_experts_scores_and_no_label():
    from experiments import teaching_fedgrpo as teaching

    tr, run = _trace(), _run()
    shown = teaching.server_scores(tr, run)
    assert list(shown.columns) == ["answer of ŷ_j", "score from client_2", "score from client_0"]
    assert shown["answer of ŷ_j"].tolist() == ["5", "7", "5", "(none)"] and "correct" not in shown


def test_agreement_scores_hide_the_owner_as_the_stored_measurement_says():
    from experiments import teaching_fedgrpo as teaching

    runs = json.loads((RESULTS / "fedgrpo_ownership_leak.json").read_text())["runs"]
    agree = [r for r in runs if r["arm"] == "agreement"]
    answer, why = teaching.exercise_agreement()
    others = sum(r["pairs"] - r["owner_pairs"] for r in agree)
    assert answer == "no" and sum(r["others_flagged"] for r in agree) == others
    assert f"{others} of {others} other experts' rows" in why and "me_score" in why


def test_the_reward_edge_is_eight_times_the_right_wrong_score_gap():
    from experiments import teaching_fedgrpo as teaching

    records = {"FedGRPO": [{"client": "server", "round": 1, "reward_mean": 0.2, "reward_gap": 0.5,
                            "candidate_accuracy": 0.25, "no_right_share": 0.5}, {"client": "client_0", "round": 1}]}
    t = teaching.reward_terms(records, None)
    assert t.loc[1].to_dict() == {"expert edge for a right answer": 4.0, "candidates right": 0.25,
                                  "questions with no right candidate": 0.5}
    note = teaching.reward_terms_note(t).data
    assert "being right earns 4.00–4.00 from the experts" in note and "there the experts decide" in note


def test_the_confidence_heatmap_boxes_the_experts_in_the_questions_topic_column(tiny_dir):
    from test_fedgrpo_method import fg_config

    from experiments import teaching_fedgrpo as teaching
    from fedrl_kit.runs import Run

    run = Run(fg_config(tiny_dir, fedgrpo={"num_experts": 2}), progress=False).build()
    update, sliders = teaching.selection_knobs(run, run.policy, 0, 3, 2, tiny_dir)
    assert {n: w.value for n, w in sliders.items()} == {"question": 0, "L": 3, "M": 2}
    fig = teaching.selection_figure(run, run.policy, 0, [1, 0])
    topics, comp, base = teaching._topic_lift(run, run.policy)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (len(run.runtime.client_ids), len(topics))
    np.testing.assert_allclose(z, comp - base[None, :])  # a column's shift is the same for every client
    t = topics.index(run.truth.fact("queries").rows[0]["topic"])
    boxed = [(s.x0 + 0.5, s.y0 + 0.5) for s in fig.layout.shapes if s.line.dash != "dot"]
    assert boxed == [(t, 1), (t, 0)] and "client_1, client_0" in fig.layout.title.text
    from fedrl_kit.fedgrpo.algorithm import server_state
    from fedrl_kit.fedgrpo.diagnostics import server_view, trace_question

    # exercise 1: its table is step 0b's cache at the question's L nearest, and its answer the top M row means
    tr = trace_question(run.server, 0, L=3, M=2, seed=0, truth=run.truth)  # (it caches the questions' embeddings)
    st, topic = server_state(run.server), run.truth.fact("queries").rows[0]["topic"]
    q = teaching.first_of_topic(run, topic)
    near = np.argsort(-(st.aux_emb @ st.query_emb[q]), kind="stable")[:3]
    m = teaching.p_matrix(run, q, near)
    np.testing.assert_allclose(m.to_numpy(), st.cache.as_matrix()[:, near].round(3))
    experts, why = teaching.exercise_experts(run, 3, 2, 0, topic)
    means = st.cache.as_matrix()[:, near].mean(axis=1)
    assert experts == [run.runtime.client_ids[k] for k in np.argsort(-means, kind="stable")[:2]]
    assert "each row's mean over the 3 columns" in why
    with pytest.raises(ValueError, match="eq. 6 computed here differs"):
        teaching.competence_table(tr, run, np.asarray(tr["competence"]) + 0.1, tr["experts"])
    assert list(teaching.competence_table(tr, run)["c_k"]) == list(np.round(tr["competence"], 3))

    right = server_view(run.server, run.truth)["guessed right"]
    assert f"right for {int(right.sum())} of {len(right)} clients" in teaching.competence_note(run).data
