"""The helpers notebook 02 (PubSwap) adds: findings with one verdict vocabulary and no comparison twice, each arm's
own levels in the stored grid, and the paper's Table 1 gains."""

import json

import numpy as np

from experiments import findings
from fedrl_kit.runs import REPO_ROOT

RESULTS = REPO_ROOT / "benchmarks" / "results"


def test_teaching_tables_list_each_comparison_once_with_verdicts_from_their_intervals():
    f, r = findings.pubswap_teaching_tables()
    assert list(f.index) == [f"F{i + 1}" for i in range(len(f))] and list(r.index) == [f"R{i + 1}" for i in range(len(r))]
    assert not set(f.finding) & set(r.finding)
    assert len(f) + len(r) == len(findings.pubswap_findings()) + len(findings.pubswap_random_findings()) - 1
    for t in (f, r):
        for d, h, v in zip(t["difference"], t["±95% t"], t["verdict"]):
            assert v == ("within noise" if d - h <= 0 <= d + h else "lower" if d < 0 else "higher")


def test_arm_levels_are_the_stored_grids_means_at_its_largest_tau():
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in rows)
    fedavg = [r for r in rows if r["table"] == "table1" and r["tau"] == tau and r["method"] == "fedavg_grpo"]
    levels = findings.pubswap_arm_levels()
    assert levels.loc["FedAvg-GRPO", "seeds"] == len(fedavg)
    mean = np.mean([r["drift_end_pairwise_effective"] for r in fedavg])
    assert levels.loc["FedAvg-GRPO", "δ_pair at the end, mean ± SD"].startswith(f"{mean:.2f} ± ")
    assert levels.loc["FedAvg-GRPO", "pass@1 at the start"] == round(100 * np.mean([r["pass@1_start"] for r in fedavg]), 1)
    assert "no-swap control" in levels.index and "PubSwap Random" in levels.index


def test_paper_gains_are_balanced_minus_fedavg_of_table1():
    g = findings.pubswap_paper_gains()
    assert g.loc["Qwen3-1.7B, DeepMath", "τ = 120"] == 5.1  # 55.8 − 50.7
    assert g.loc["Qwen3-1.7B, MATH", "τ = 10"] == -0.9  # 77.0 − 77.9: the paper's own "most choices of τ"
    assert list(g.columns) == [f"τ = {t}" for t in findings.PUBSWAP_PAPER_TAUS] and len(g) == 4


def test_drift_split_reads_each_control_tau_from_the_claims_and_its_share_from_them():
    from experiments.sweep import pubswap_claims

    split = findings.pubswap_drift_split()
    control_taus = sorted({r["tau"] for name in findings.PUBSWAP_RESULTS for r in json.loads((RESULTS / name).read_text())
                           if r["method"] == "pubswap_noswap"})
    assert list(split.index) == control_taus
    large = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in large)
    claims = pubswap_claims(large).set_index("claim")
    swap = claims.loc[[c for c in claims.index if c.startswith(f"the swap limits drift (control, not a paper claim): "
                                                                 f"τ = {tau},")][0]]
    pub = claims.loc[[c for c in claims.index if c.startswith("on-policy public steps limit drift (control, not a "
                                                                f"paper claim): τ = {tau},")][0]]
    assert (split.loc[tau, "swap: Balanced − control"], split.loc[tau, "±95% t (swap)"]) == (swap["diff"],
                                                                                            swap["±95% t"])
    assert (split.loc[tau, "public steps: control − FedAvg-GRPO"], split.loc[tau, "±95% t (public steps)"]) == (
        pub["diff"], pub["±95% t"])
    assert split.loc[tau, "swap's share (%)"] == round(100 * swap["diff"] / (swap["diff"] + pub["diff"]))
    assert (split["seeds"] >= 2).all()


def test_claims_verdicts_are_five_rows_whose_verdicts_follow_the_stored_intervals():
    from experiments.sweep import pubswap_claims

    table = findings.pubswap_claims_verdicts()
    assert len(table) == 5 and set(table.verdict) <= {"holds", "does not hold", "not reproduced", "not tested"}
    large = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in large)
    claims = pubswap_claims(large).set_index("claim")
    drift = claims.loc[[c for c in claims.index if c.startswith(f"public steps limit drift: τ = {tau}")][0]]
    assert table.verdict[0] == ("holds" if drift["diff"] + drift["±95% t"] < 0 else
                                "does not hold" if drift["diff"] - drift["±95% t"] > 0 else "not reproduced")
    acc = claims.loc[[c for c in claims.index if c.startswith("Balanced outperforms FedAvg+GRPO for most choices of τ: "
                                                              f"τ = {tau}")][0]]
    top = acc["diff"] + acc["±95% t"]
    assert f"gains above {top:+.2f} points are ruled out" in table.iloc[1, 2]
    gains = findings.pubswap_paper_gains().to_numpy().ravel()
    assert f"({(gains > top).sum()} of the paper's {gains.size} gains" in table.iloc[1, 2]
    small = claims.loc[[c for c in claims.index if c.startswith("Random can outperform Balanced")][0]]
    assert table.verdict[2] == ("holds" if small["diff"] - small["±95% t"] > 0 else
                                "does not hold" if small["diff"] + small["±95% t"] < 0 else "not reproduced")
    assert table.verdict[4] == "not tested"


def test_start_pass1_is_the_stored_grids_untrained_score_at_a_seed_and_over_seeds():
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in rows)
    fedavg = [r for r in rows if r["tau"] == tau and r["method"] == "fedavg_grpo"]
    s = findings.pubswap_start_pass1(0)
    assert s["at_seed"] == round(100 * next(r["pass@1_start"] for r in fedavg if r["seed"] == 0), 1)
    assert s["mean"] == round(100 * np.mean([r["pass@1_start"] for r in fedavg]), 1) and s["seeds"] == len(fedavg)
    assert findings.pubswap_start_pass1(999)["at_seed"] is None


def test_drift_split_states_each_rows_training_length():
    split = findings.pubswap_drift_split()
    assert (split["local steps per client"] == split.index * split["rounds"]).all()


# -- the teaching helpers notebook 02 calls (experiments.teaching_pubswap) ------------------------------------------
def _stored_arm(method):
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in rows)
    return [r for r in rows if r["tau"] == tau and r["table"] in ("table1", "control") and r["method"] == method]


def test_update_sizes_are_each_arms_mean_distance_from_the_broadcast_and_the_mean_ratio():
    from experiments import teaching_pubswap as teach

    t = teach.update_sizes()
    assert list(t.index) == teach.ORDER
    for method, arm in teach.ARMS.items():
        runs = _stored_arm(method)
        assert t.loc[arm, "seeds"] == len(runs)
        assert t.loc[arm, "update size u"] == round(np.mean([r["drift_end_to_global_effective"] for r in runs]), 2)
        ratio = np.mean([r["drift_end_pairwise_effective"] / r["drift_end_to_global_effective"] for r in runs])
        assert t.loc[arm, "δ_pair / u"] == round(ratio, 2) and 0 < ratio < np.sqrt(2) + 0.05


def test_the_update_size_exercise_asks_for_the_direction_of_u_and_shows_it_read_off_and_measured():
    from experiments import teaching_pubswap as teach

    answer, why = teach.exercise_update_size()
    t = teach.update_sizes()
    r, f = t.loc["PubSwap Random"], t.loc["FedAvg-GRPO"]
    assert r["δ_pair / u"] < f["δ_pair / u"] and r["final δ_pair"] > f["final δ_pair"]  # the question's premise
    measured = r["update size u"] / f["update size u"]
    assert answer == ("larger" if measured > 1.02 else "smaller" if measured < 1 / 1.02 else "equal")
    assert f"{r['final δ_pair']:.2f} ÷ {r['δ_pair / u']:.2f}" in why
    assert f"measured directly: {r['update size u']:.2f} against {f['update size u']:.2f}" in why


def test_the_fedit_demo_is_aggregate_fedit_on_two_one_by_one_adapters():
    from experiments import teaching_pubswap as teach

    demo = teach.fedit_demo()
    assert demo.loc["different factors", "mean of ΔW_n"] == "2"
    assert demo.loc["different factors", "FedIT: mean(B) · mean(A)"] == "1.5 · 1.5 = 2.25"  # (2·1 + 2·2 + 1·1 + 1·2)/4
    assert demo.loc["same ΔW, signs flipped", "FedIT: mean(B) · mean(A)"] == "0 · 0 = 0"
    # δ_pair reads ΔW only: both pairs have ΔW_1 = ΔW_2, so it is 0 where the factors (and FedIT's average) differ
    assert list(demo["δ_pair"]) == ["0", "0"] and list(demo["factor distance"]) == ["1.41", "2.83"]


def test_the_shared_pull_table_averages_the_live_rounds_gradient_spread_and_lost_groups_by_step_kind():
    import pandas as pd

    from experiments import teaching_pubswap as teach

    rows = []
    for a in teach.ARMS.values():
        for j in range(4):
            public = j % 2 == 1 and a != "FedAvg-GRPO"
            spread = 3.0 if not public else {"no-swap control": 1.0, "PubSwap Random": 0.2}.get(a, 0.6)
            rows.append({"arm": a, "tau": 4, "step": j, "step_kind": "public" if public else "private",
                         "δ_pair": 1.0 + j, "u": 1.0 + j, "spread": spread,
                         "no_gradient": (0.4 if a == "no-swap control" else 0.2) if public else 0.5})
    table, note = teach.shared_pull(pd.DataFrame(rows))
    assert table.loc["FedAvg-GRPO", "gradient spread, public steps"] == "—"
    assert table.loc["no-swap control", "gradient spread, public steps"] == "1.00"
    assert table.loc["PubSwap Random", "gradient spread, private steps"] == "3.00"
    assert table.loc["PubSwap Balanced", "groups without gradient, public steps"] == "20%"
    assert "already without a swap" in note.data and "Random and Balanced pull them more alike still" in note.data
    assert "and both leave fewer groups without gradient" in note.data


def test_the_last_private_order_compares_the_arms_after_the_last_step_and_after_the_last_private_one():
    import pandas as pd

    from experiments import teaching_pubswap as teach

    order = {"FedAvg-GRPO": 4, "no-swap control": 3, "PubSwap Random": 1, "PubSwap Balanced": 2}
    drift = pd.DataFrame([{"arm": a, "tau": 4, "step": j, "step_kind": "public" if j % 2 else "private",
                           "δ_pair": order[a] * (1 + j) + (10 * (a == "PubSwap Random") if j == 2 else 0), "u": 1.0}
                          for a in teach.ARMS.values() for j in range(4)])
    text = teach.last_private_order(drift).data
    assert "after the last step (j = 4, public): Random < Balanced < no-swap control < FedAvg-GRPO" in text
    assert "after the last private step (j = 3): Balanced < no-swap control < FedAvg-GRPO < Random" in text
    assert text.endswith("a different order.")


def test_the_gradient_exercise_picks_a_prompt_a_swap_rescues_and_reads_both_sets_off_the_groups():
    import pandas as pd

    from experiments import teaching_pubswap as teach
    from fedrl_kit.pubswap.swap import ResponsePool, balanced_swap

    K = 8
    c = [[0, 1, 0, 1], [2, 1, 0, 8], [5, 2, 4, 3], [8, 8, 8, 8]]  # [prompts, clients] right answers
    correct = pd.DataFrame(c, columns=[f"client_{n}" for n in range(4)], index=[f"p{x} (gold 1)" for x in range(4)])
    # prompt 1: one all-wrong client rescued and one all-right client left without a gradient
    assert teach.gradient_prompt(correct, K, avoid=(0,)) == 1
    assert teach.gradient_prompt(correct, K, avoid=(0, 1)) == 2  # nothing to rescue: the first prompt left
    rng = np.random.default_rng(0)
    swaps = {"balanced": [balanced_swap(ResponsePool([["a"] * K] * 4, np.arange(K)[None, :] < np.array(row)[:, None]),
                                        K, rng) for row in c]}
    (own, swapped), why = teach.exercise_gradient(swaps, correct, 1, K)
    assert own == {"client_0", "client_1"} and swapped == {"client_0", "client_1", "client_2"}
    assert repr(swapped) == "{'client_0', 'client_1', 'client_2'}"  # sorted: a stored answer reads the same each run
    assert "client_2: 0 right + 4 swapped in = 4 of 8 → a gradient" in why and "client_3: 8 right of 8 → none" in why
    assert "'p3' (client_0, client_1, client_2, client_3)" in why


def test_the_accuracy_claims_list_every_tau_and_call_a_gap_inconclusive_unless_it_rules_out_the_papers_size():
    import pandas as pd

    from experiments import teaching_pubswap as teach
    from experiments.sweep import _compare

    rows = pd.DataFrame(json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())).query(
        "table == 'table1'")
    taus = sorted(set(rows.query("method == 'pubswap_random'").tau))
    median = float(np.median(findings.pubswap_paper_gains().to_numpy()))
    table, note = teach.accuracy_claims()
    assert list(table.index) == [f"τ = {t}" for t in taus] and len(table) <= 5
    for tau in taus:
        for column, (a, b) in (("Balanced − FedAvg-GRPO", ("pubswap_balanced", "fedavg_grpo")),
                               ("Random − Balanced", ("pubswap_random", "pubswap_balanced"))):
            mean, _, half, n = _compare(rows, {"method": a, "tau": tau}, {"method": b, "tau": tau}, "pass@1_final")
            m, h = 100 * mean, 100 * half
            cell = table.loc[f"τ = {tau}", column]
            assert cell.startswith(f"{m:+.2f} ± {h:.2f} ({n} seeds): ")
            inside = m - h <= 0 <= m + h
            if column.startswith("Balanced"):
                assert cell.endswith("no paper-size gain" if inside and m + h < median else
                                     "inconclusive" if inside else "a gain" if m > 0 else "a loss")
            else:
                assert cell.endswith("inconclusive" if inside else "Random better" if m > 0 else "Random worse")
    steps = {int(r.tau * r.rounds) for r in rows.itertuples()}
    assert note.data.startswith(f"Every row here ran {' or '.join(map(str, sorted(steps)))} local steps per client")
    assert f"median gain: {median:+.2f} points" in note.data


def test_the_live_round_note_reads_mechanics_and_the_direction_measure_not_a_ranking():
    import pandas as pd

    from experiments import teaching_pubswap as teach

    arms = list(teach.ARMS.values())  # FedAvg-GRPO, control, Random, Balanced
    rows = []
    for a in arms:
        for j in range(4):
            same = j == 0  # step 1 private and the same for every arm; they part at step 2 (public)
            rows.append({"arm": a, "tau": 4, "step": j, "step_kind": "public" if j % 2 else "private",
                         "δ_pair": 1.0 if same else 1.0 + j * (1.0 if a == "FedAvg-GRPO" else 0.8), "u": 1.0 + j})
    drift = pd.DataFrame(rows)
    end = pd.DataFrame({"arm": arms, "tau": 4, "δ_pair": [4.4, 3.9, 3.6, 3.8], "u": [3.1, 3.0, 3.2, 3.0]})
    text = teach.live_round_note(drift, end).data
    assert "Every arm is the same through step 1" in text and "part at step 2, the first public step" in text
    assert "δ_pair / u: FedAvg-GRPO 1.42, no-swap control 1.30, Balanced 1.27, Random 1.12" in text
    assert "Every arm with public steps ends pointing more alike than FedAvg-GRPO" in text
    assert "lowest δ_pair" not in text and "ranks nothing" in text and text.count(". ") <= 3


def test_the_bound_exercise_names_the_control_and_quotes_the_stored_swap_part():
    from experiments import teaching_pubswap as teach

    answer, why = teach.exercise_bound()
    f, _ = findings.pubswap_teaching_tables()
    row = f.loc["F2"]
    assert answer == "no-swap control" and "ω_n = 0" in why and "does not favour swapping" in why
    assert f"Balanced − control {row['difference']:+.2f} ± {row['±95% t']:.2f} ({int(row['seeds'])} seeds)" in why


def test_the_drift_demo_is_the_packages_drift_on_one_length_in_three_directions():
    import numpy as np

    from experiments import teaching_pubswap as teach

    demo = teach.drift_demo()
    assert list(demo["δ_pair / u"]) == [round(np.sqrt(2), 2), 0.0, 2.0] and set(demo["u"]) == {3.0}
    assert list(demo["δ_pair"]) == [round(3 * np.sqrt(2), 2), 0.0, 6.0]


def test_advantages_by_hand_divide_by_k_minus_1_as_group_advantages_does():
    import torch

    from experiments import teaching_pubswap as teach
    from fedrl_kit.grpo import group_advantages

    line = teach.advantage_by_hand(8, 4)
    adv = group_advantages(torch.tensor([1.0] * 4 + [0.0] * 4), 8)
    assert f"= {float(adv[0]):.2f} for a right answer, {float(adv[-1]):.2f} for a wrong one" in line
    assert "√(2 / 7) = 0.53" in line and "dividing by K instead: ±1.00" in line


def test_the_drift_split_lists_every_control_tau_with_its_length_and_names_where_each_part_is_firm():
    from experiments import teaching_pubswap as teach

    split = findings.pubswap_drift_split()
    table, note = teach.drift_split()
    assert list(table.index) == [f"τ = {t}" for t in split.index] and len(table) <= 5
    assert list(table["local steps per client"]) == list(split["local steps per client"])
    swap = [str(t) for t, d, h in zip(split.index, split["swap: Balanced − control"], split["±95% t (swap)"])
            if abs(d) > h]
    assert f"The swap's interval excludes 0 at τ = {', '.join(swap)}, " in note.data
    assert f"With {int(split['seeds'].min())} seeds a row can flip by chance" in note.data
    base = teach.split_drift()
    for t, p, w in zip(split.index, split["public steps: control − FedAvg-GRPO"], split["swap: Balanced − control"]):
        assert table.loc[f"τ = {t}", "FedAvg-GRPO's δ_pair"] == f"{base[t]:.2f}"
        assert table.loc[f"τ = {t}", "in % of FedAvg-GRPO's δ_pair: shared · swap"] == (
            f"{100 * p / base[t]:+.0f} % · {100 * w / base[t]:+.0f} %")
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    tau = max(r["tau"] for r in rows)
    seeds = {r["seed"] for r in rows if r["tau"] == tau and r["method"] == "pubswap_noswap"}
    fedavg = [r["drift_end_pairwise_effective"] for r in rows if r["tau"] == tau and r["method"] == "fedavg_grpo"
              and r["table"] in ("table1", "control") and r["seed"] in seeds]
    assert abs(base[tau] - np.mean(fedavg)) < 1e-9
    assert note.data.count(". ") <= 2
    for t, d, h in zip(split.index, split["swap: Balanced − control"], split["±95% t (swap)"]):
        assert table.loc[f"τ = {t}", "swap: Balanced − control"] == f"{d:+.2f} ± {h:.2f}" + (
            ": inconclusive" if abs(d) <= h else "")


def test_randoms_view_drops_the_own_answer_column_and_names_the_owner_of_every_slot():
    import pandas as pd

    from experiments import teaching_pubswap as teach

    view = pd.DataFrame({"own answer": ["1", "2"], "own correct": [False, True], "group": ["3", "2"],
                         "correct": [True, True], "from": ["client_2 #0", "own #1"]})
    view.attrs["alpha"] = 0.5
    out = teach.random_view(view, "client_0")
    assert list(out.columns) == ["group", "correct", "from"] and out.attrs["alpha"] == 0.5
    assert list(out["from"]) == ["client_2 #0", "client_0 (own) #1"]


def test_the_drift_findings_quote_the_findings_tables_and_call_an_interval_holding_0_inconclusive():
    from experiments import teaching_pubswap as teach

    f, r = findings.pubswap_teaching_tables()
    text = teach.drift_findings().data
    for row in (f.loc["F1"], r.loc["R2"]):  # F2 and F3 are the split table's row at this τ
        d, h, n = row["difference"], row["±95% t"], int(row["seeds"])
        quoted = f"{d:+.2f} ± {h:.2f} ({n} seeds)"
        assert quoted in text and (f"{quoted}: inconclusive" in text) == (abs(d) <= h)
    assert "within noise" not in text and "(12_pubswap_report.ipynb#findings)" in text and text.count(". ") <= 2


def test_the_settings_box_says_how_the_optimiser_state_runs_and_which_runs_are_which(tiny_dir):
    from conftest import small_config

    from experiments import teaching_pubswap as teach
    from fedrl_kit.runs import REPO_ROOT, Run

    cfg = small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base"), method="pubswap_balanced", local_steps=2,
                       pubswap={"period": 2})
    run = Run(cfg, progress=False).build()
    box = teach.settings_box(cfg, run.world, run.policy, 6)["setting"]
    assert box["optimiser"].endswith("started afresh each round" if cfg.reset_optimizer else "kept across rounds")
    assert box["live runs (§3–4)"] == f"τ = 6, one round, seed {cfg.seed}"
    assert f"clipped to [{1 - cfg.epsilon:g}, {1 + cfg.epsilon_high:g}]" in box["GRPO"]
    assert f"μ = {cfg.num_iterations} updates" in box["GRPO"]
    s = findings.pubswap_setting()
    assert box["stored runs (§5–6)"].startswith(f"τ = {s['tau']} × {s['rounds']} rounds = {s['steps']} local steps")


def test_the_live_drift_figure_draws_three_panels_with_markers_not_glyphs():
    import pandas as pd

    from experiments import teaching_pubswap as teach

    drift = pd.DataFrame([{"arm": a, "tau": 4, "step": j, "step_kind": "public" if j % 2 else "private",
                           "δ_pair": 1.0 + j, "u": 1.0 + j} for a in teach.ARMS.values() for j in range(4)])
    fig = teach.drift_figure(drift)
    assert len(fig.layout.annotations) == 3  # the three panels' titles
    ratio = [t for t in fig.data if t.xaxis == "x3" and t.mode == "markers"]
    assert len(ratio) == 4 and all(list(t.y) == [1.0] * 4 for t in ratio)  # δ_pair / u from j = 1
    assert {s for t in fig.data if t.mode == "markers" and t.x[0] is not None for s in t.marker.symbol} == {
        "circle", "star"}


def test_exercise_6_tops_up_the_never_right_clients_from_the_always_right_one():
    from experiments import teaching_pubswap as teach

    answer, why = teach.exercise_top_up(8, (0, 0, 0, 8))
    assert answer == (4, 4, 4, 0) and "Donors in this draw: client_3" in why
    assert "Gradients now: client_0, client_1, client_2." in why and "client_3: min((4 − 8)+, 0) = 0" in why
    answer, why = teach.exercise_top_up(4, (0, 1, 4))  # the notebook's setting: the target counts own right answers
    assert answer == (2, 1, 0) and "Gradients now: client_0, client_1." in why and "mostly the same string" in why


def test_live_taus_are_the_presets_two_unless_given():
    from experiments import teaching_pubswap as teach

    assert teach.live_taus("quick") == (2, 6) and teach.live_taus("full") == (10, 120)
    assert teach.live_taus("quick", [3, 5]) == (3, 5)


def test_step_vectors_flatten_every_clients_scaled_product_and_gradient():
    from experiments import teaching_pubswap as teach

    A, B = np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]])  # rank 1: ΔW = s B A is 2 × 2
    st = {"m.lora_A.weight": A, "m.lora_B.weight": B}
    t = {"global": {k: 0 * v for k, v in st.items()},
         0: {"client_1": {**st, "grad": np.array([1.0, 0.0])},
             "client_0": {"m.lora_A.weight": -A, "m.lora_B.weight": B, "grad": np.array([0.0, 1.0])}}}
    dW, dW_p, g = teach.step_vectors(t, 0, 2.0)
    assert np.allclose(dW[1], 2 * (B @ A).ravel()) and np.allclose(dW[0], -2 * (B @ A).ravel())  # sorted clients
    assert np.allclose(dW_p, 0) and np.allclose(g, [[0, 1], [1, 0]])


def test_the_split_ratios_and_the_firm_sentence_cover_every_control_tau():
    from experiments import teaching_pubswap as teach

    split = findings.pubswap_drift_split()
    ratios = teach.split_ratios()
    assert sorted(ratios) == list(split.index) and all(len(v.split(" · ")) == 3 for v in ratios.values())
    text = teach.firm_sentence()
    swap = [str(t) for t, d, h in zip(split.index, split["swap: Balanced − control"], split["±95% t (swap)"])
            if abs(d) > h]
    assert f"the swap's at τ = {', '.join(swap)}" in text
    f, _ = findings.pubswap_teaching_tables()
    total = f.loc["F2", "difference"] + f.loc["F3", "difference"]
    assert abs(teach.control_seeds_gain() - total) < 0.02


def test_the_stored_grid_names_each_grids_length_control_and_seeds():
    from experiments import teaching_pubswap as teach

    grid = teach.stored_grid()
    split = findings.pubswap_drift_split()
    s = findings.pubswap_setting()
    assert len(grid) == len(findings.PUBSWAP_RESULTS)
    for tau, row in split.iterrows():  # every split row's length is its grid's
        g = grid[grid["no-swap control at τ"].str.split(", ").apply(lambda ts: str(tau) in ts)]
        assert g["local steps per client (τ × rounds)"].item() == str(int(row["local steps per client"]))
    big = grid.loc[f"{s['steps']} local steps", "seeds per arm"]
    assert big.startswith(str(min(len(v) for v in s["seeds"].values())))
    assert f"({max(len(v) for v in s['seeds'].values())} for FedAvg-GRPO and PubSwap Balanced at τ = {s['tau']})" in big
    assert "update size u" not in teach.stored_means().columns


def test_the_settings_and_stored_grid_sentences_are_one_sentence_each_with_the_tables_numbers(tiny_dir):
    from conftest import small_config

    from experiments import teaching_pubswap as teach
    from fedrl_kit.runs import REPO_ROOT, Run

    cfg = small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base"), method="pubswap_balanced", local_steps=2,
                       pubswap={"period": 2})
    run = Run(cfg, progress=False).build()
    box = teach.settings_box(cfg, run.world, run.policy, 6)["setting"]
    text = teach.settings_sentence(cfg, run.world, run.policy, 6).data
    assert text.count(". ") == 0 and text.endswith(".")
    assert f"K = {cfg.num_generations} answers" in text and box["live runs (§3–4)"] in text
    assert f"LoRA rank {cfg.lora_rank} on its" in text and "linear modules" in text and "μ =" not in text
    grpo = teach.grpo_settings(cfg).data  # GRPO's settings come once GRPO is explained
    assert f"μ = {cfg.num_iterations} updates" in grpo and f"η = {cfg.learning_rate:g}" in grpo
    grid = teach.stored_grid()
    text = teach.stored_grid_sentence().data
    s = findings.pubswap_setting()
    assert text.count(". ") == 0 and all(f"τ = {t}" in text for t in grid["τ"])
    assert f"{s['steps']} local steps in all (so {s['rounds']} rounds at τ = {s['tau']})" in text
    assert "5 for FedAvg-GRPO and PubSwap Balanced at τ = 48" in text


def test_exercise_3_counts_prompts_without_gradient_under_this_random_draw_and_under_balanced():
    import pandas as pd
    from types import SimpleNamespace

    from experiments import teaching_pubswap as teach
    from fedrl_kit.pubswap.swap import ResponsePool, balanced_swap

    K = 4
    c = [[0, 0, 0, 0], [4, 4, 4, 4], [0, 0, 0, 4], [1, 0, 0, 0]]  # [prompts, clients]: all wrong, all right, …
    correct = pd.DataFrame(c, columns=[f"client_{n}" for n in range(4)], index=[f"p{x} (gold 1)" for x in range(4)])
    rng = np.random.default_rng(0)
    pools = [ResponsePool([["a"] * K] * 4, np.arange(K)[None, :] < np.array(row)[:, None]) for row in c]
    random = [SimpleNamespace(correct=np.array([[False] * K] * 4)) for _ in c]  # a draw with no right answer anywhere
    random[2] = SimpleNamespace(correct=np.array([[True, False, False, False]] * 4))
    random[1] = SimpleNamespace(correct=np.array([[True] * K] * 4))
    swaps = {"balanced": [balanced_swap(p, K, rng) for p in pools], "random": random}
    gen = SimpleNamespace(num_generations=K, client_ids=list(correct.columns))
    (rnd, bal), why = teach.exercise_no_spread(gen, swaps, correct)
    assert (rnd, bal) == (2, 2)  # whatever Random draws: p0, p1 (pool uniform); Balanced: p0, p1 only
    assert "this draw left 3 without gradient" in why  # p3 by chance as well
    assert "'p3' (1 of 16 right: a 75% chance)" in why  # C(15, 4) / C(16, 4) = 0.75


def test_the_remember_note_is_three_short_bullets_without_a_table_of_numbers():
    from experiments import teaching_pubswap as teach

    text = teach.remember_note().data
    assert text.count("\n- ") == 2 and "±" not in text


def test_the_fedit_exercise_compares_the_product_of_means_with_the_mean_of_the_products():
    from experiments import teaching_pubswap as teach

    (product, mean_dw), why = teach.exercise_fedit(((2.0, 2.0), (-1.0, -4.0)))
    assert (product, mean_dw) == (-0.5, 4.0)  # (2 − 1)/2 · (2 − 4)/2 against (4 + 4)/2
    assert "-0.5" in why and "ΔW = 4" in why
    (product, mean_dw), _ = teach.exercise_fedit(((1.0, 3.0), (1.0, 3.0)))  # identical clients: no cross-term error
    assert product == mean_dw == 3.0


def test_read_tensors_gives_the_broadcast_and_every_client_step(tmp_path):
    from experiments import teaching_pubswap as teach

    folder = tmp_path / "drift_tensors" / "round0001"
    folder.mkdir(parents=True)
    np.savez(folder / "global.npz", **{"m.lora_A.weight": np.ones((1, 2), np.float32)})
    for step in (0, 1):
        for cid in ("client_0", "client_1"):
            np.savez(folder / f"step{step:04d}_{cid}.npz", **{"m.lora_A.weight": np.full((1, 2), step, np.float32),
                                                             "grad": np.arange(3, dtype=np.float32)})
    t = teach.read_tensors(tmp_path)
    assert sorted(k for k in t if k != "global") == [0, 1] and sorted(t[1]) == ["client_0", "client_1"]
    assert t[1]["client_0"]["m.lora_A.weight"].dtype == np.float64 and t[1]["client_1"]["grad"].tolist() == [0, 1, 2]
    assert t["global"]["m.lora_A.weight"].sum() == 2


def test_the_control_accuracy_is_paired_by_seed_where_the_control_ran_and_shown_in_the_claims_table():
    from experiments import teaching_pubswap as teach
    from experiments.sweep import _compare

    rows = teach._grid()
    ctl = teach.control_accuracy()
    assert set(ctl) == set(rows.query("method == 'pubswap_noswap'").tau)
    for tau, (m, h, n) in ctl.items():
        mean, _, half, k = _compare(rows[rows.table.isin(["table1", "control"])], {"method": "pubswap_noswap", "tau": tau},
                                    {"method": "fedavg_grpo", "tau": tau}, "pass@1_final")
        assert (round(m, 6), round(h, 6), n) == (round(100 * mean, 6), round(100 * half, 6), k)
    table, _ = teach.accuracy_claims()
    for tau in table.index:
        t = int(tau.split("= ")[1])
        cell = table.loc[tau, "control − FedAvg-GRPO"]
        assert cell.startswith(f"{ctl[t][0]:+.2f} ± {ctl[t][1]:.2f}") if t in ctl else cell == "not run"
    assert f"{ctl[48][0]:+.2f} ± {ctl[48][1]:.2f}" in teach.drift_accuracy_note().data


def test_pubswaps_round_diagram_draws_each_arrow_on_the_edge_it_travels():
    import re

    from fedrl_kit.diagrams import round_diagram

    svg = round_diagram("pubswap").svg
    num = r'"([-\d.]+)"'
    line = re.compile(rf'<line x1={num} y1={num} x2={num} y2={num} stroke="([^"]+)"')
    edges = [tuple(map(float, m.groups()[:4])) for m in line.finditer(svg) if m.group(5) == "#9aa0a6"]
    arrows = [(tuple(map(float, m.groups()[:4])), m.group(5)) for m in line.finditer(svg) if m.group(5) != "#9aa0a6"]
    assert len(arrows) == 6 and len(edges) == 3

    def on(edge, x, y):  # (x, y) on the edge's line, to the pixel
        x1, y1, x2, y2 = edge
        return abs((x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)) / ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5 < 1.5
    for (x1, y1, x2, y2), colour in arrows:  # down arrows on the first client's edge, up on the last one's
        edge = edges[0] if colour == "#1a73e8" else edges[-1]
        assert on(edge, x1, y1) and on(edge, x2, y2)


def test_fedit_error_is_the_cross_term_of_the_factor_deviations_and_sees_a_sign_flip_delta_pair_misses():
    from experiments import teaching_pubswap as teach
    from fedrl_kit.drift import mean_pairwise_drift

    def client(b, a):
        return {"m.lora_A": np.array([[a]], float), "m.lora_B": np.array([[b]], float), "grad": np.zeros(3)}
    flipped = [client(1.0, 1.0), client(-1.0, -1.0)]  # ΔW_n = 1 for both: δ_pair = 0
    adapters = [{"m": (c["m.lora_A"], c["m.lora_B"])} for c in flipped]
    assert mean_pairwise_drift(adapters) == 0
    assert teach.fedit_error(flipped, 1.0) == 1.0  # mean ΔW 1, B̄Ā = 0
    assert teach.fedit_error([client(2.0, 3.0), client(2.0, 3.0)], 2.0) == 0.0  # identical factors: no error
    rng = np.random.default_rng(0)
    cs = [{"m.lora_A": rng.normal(size=(2, 5)), "m.lora_B": rng.normal(size=(4, 2))} for _ in range(3)]
    A_bar, B_bar = (np.mean([c[k] for c in cs], axis=0) for k in ("m.lora_A", "m.lora_B"))
    cross = 0.5 / 3 * sum((c["m.lora_B"] - B_bar) @ (c["m.lora_A"] - A_bar) for c in cs)
    assert np.isclose(teach.fedit_error(cs, 0.5), np.linalg.norm(cross))
