"""The helpers notebook 02 (PubSwap) adds: findings with one verdict vocabulary and no comparison twice, each arm's
own levels in the stored grid, and the paper's Table 1 gains."""

import contextlib
import io
import json

import numpy as np
import pytest

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
    fedavg = [r for r in rows if r["tau"] == tau and r["method"] == "fedavg_grpo" and r["table"] == "table1"]
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
    assert r["δ_pair / u"] < f["δ_pair / u"] and r["end-of-round δ_pair"] > f["end-of-round δ_pair"]  # the premise
    measured = r["update size u"] / f["update size u"]
    assert answer == ("larger" if measured > 1.02 else "smaller" if measured < 1 / 1.02 else "equal")
    assert f"{r['end-of-round δ_pair']:.2f} ÷ {r['δ_pair / u']:.2f}" in why
    assert f"measured directly: {r['update size u']:.2f} against {f['update size u']:.2f}" in why


def test_exercise_1_counts_each_clients_right_answers_after_balanced_capped_by_what_the_others_hold():
    from experiments import teaching_pubswap as teach

    answer, why = teach.exercise_balanced_counts((0, 2, 0, 0), 8)
    assert answer == (2, 2, 2, 2)  # only 2 right answers elsewhere; client_1's own 2 go to all three others
    assert "client_0: D = 2, M = min((4 − 0)+, 2) = 2 → 2 right" in why
    assert "client_1: D = 0, M = min((4 − 2)+, 0) = 0 → 2 right" in why  # its right answers are the only ones
    assert "With the swap all 4 clients get a gradient" in why
    assert why.endswith("without it (the no-swap control) only client_1 would.")
    assert teach.exercise_balanced_counts((0, 3, 8, 5), 8)[0] == (4, 4, 8, 5)  # an all-right group stays so


def test_randoms_view_drops_the_own_answer_column_and_names_the_owner_of_every_slot():
    import pandas as pd

    from experiments import teaching_pubswap as teach

    view = pd.DataFrame({"own answer": ["1", "2"], "own correct": [False, True], "group": ["3", "2"],
                         "correct": [True, True], "from": ["client_2 #0", "own #1"]})
    view.attrs["swapped_in"] = 1
    out = teach.random_view(view, "client_0")
    assert list(out.columns) == ["group", "correct", "from"] and out.attrs["swapped_in"] == 1
    assert list(out["from"]) == ["client_2 #0", "client_0 (own) #1"]


def test_exercise_2_counts_prompts_without_gradient_under_this_random_draw_and_under_balanced():
    import pandas as pd
    from types import SimpleNamespace

    import pandas as pd

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
    assert "this draw left 3 prompts without gradient" in why  # p3 by chance as well
    assert "'p3' (1 of 16 right: a 75% chance)" in why  # C(15, 4) / C(16, 4) = 0.75


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


def test_live_tau_is_the_presets_unless_given():
    from experiments import teaching_pubswap as teach

    assert teach.live_tau("quick") == 6 and teach.live_tau("full") == 120 and teach.live_tau("quick", 3) == 3


def test_the_settings_table_states_each_setting_once_for_the_live_round_the_stored_runs_and_the_paper(tiny_dir):
    from conftest import small_config

    from experiments import teaching_pubswap as teach
    from fedrl_kit.runs import REPO_ROOT, Run

    cfg = small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base"), method="pubswap_balanced", local_steps=2,
                       pubswap={"period": 2})
    run = Run(cfg, progress=False).build()
    table, note = teach.settings_table(cfg, run.policy, 6)
    assert list(table.columns) == ["live round (§3–4)", "stored runs (§5)", "the paper"] and len(table) <= 7
    live, stored, paper = (table[c] for c in table.columns)
    # the paper's N, b × K and public set, from its Table 1 runs' presets (Tables 9–10 and appendix B.1)
    assert (paper["clients N"], paper["b prompts × K answers per step"], paper["public prompts"]) == (
        "4", "8 × 8", "1,250 (MATH)/3,000 (DeepMath)")
    assert live["public prompts"] == f"{cfg.n_public:,}"
    s = findings.pubswap_setting()
    assert live["seeds"] == str(cfg.seed) and live["clients N"] == str(cfg.num_clients)
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    rounds = [next(r["rounds"] for r in rows if r["tau"] == tau) for tau in sorted({r["tau"] for r in rows})]
    assert stored["local steps per client in all"] == (f"{s['steps']} at every τ: rounds = {s['steps']}/τ = "
                                                       f"{', '.join(map(str, rounds))}")  # a fixed budget
    assert stored["seeds"] == "3 per arm (5 for FedAvg-GRPO and Balanced at τ = 48)"
    assert stored["τ: local steps per round"] == ("2, 8, 32, 48 (τ is 2–50 % of the 96-step budget: local steps per "
                                                  "client, rounds × τ)")  # 2/96 … 48/96
    assert paper["τ: local steps per round"] == (", ".join(map(str, findings.PUBSWAP_PAPER_TAUS))
                                                 + " (τ is 3–33 % of the 360-step budget: local steps per client, rounds × τ)")  # 10/360 … 120/360
    assert live["τ: local steps per round"].startswith("6: all")
    # the rest in two lines: the topic split, then the policy, GRPO (quick's β = 0, full's 1e-4) and how pass@1 is measured
    assert f"Dirichlet concentration {cfg.dirichlet_alpha:g}" in note and f"μ = {cfg.num_iterations}" in note
    assert "no KL term (the paper: KL weight 0.0001)" in note and "140 test problems × 4 samples" in note


def test_the_notebooks_paired_rows_reproduce_the_findings_tables():
    """The notebook pairs the stored runs by seed in view (its `paired`); the same sums must give the findings tables'
    numbers, which the report shows."""
    from experiments import teaching_pubswap as teach
    from experiments.stats import t_interval

    runs = teach.stored_runs()
    assert set(runs.arm) == set(teach.ARMS.values()) and runs["pass@1"].between(0, 100).all()

    def paired(value, a, b, tau):
        both = runs[runs.tau == tau].pivot_table(index="seed", columns="arm", values=value)[[a, b]].dropna()
        mean, half, n = t_interval(both[a] - both[b])
        return round(mean, 2), round(half, 2), n
    f, r = findings.pubswap_teaching_tables()
    big, small = runs.tau.max(), runs.tau.min()
    for row, (value, a, b, tau) in ((f.loc["F1"], ("δ_pair", "PubSwap Balanced", "FedAvg-GRPO", big)),
                                    (f.loc["F2"], ("δ_pair", "PubSwap Balanced", "no-swap control", big)),
                                    (f.loc["F4"], ("pass@1", "PubSwap Balanced", "FedAvg-GRPO", big)),
                                    (r.loc["R2"], ("δ_pair", "PubSwap Random", "FedAvg-GRPO", big))):
        assert paired(value, a, b, tau) == (row["difference"], row["±95% t"], int(row["seeds"]))
    tau, mean, half, n = findings.pubswap_small_tau_random()
    assert tau == small and paired("pass@1", "PubSwap Random", "PubSwap Balanced", small) == (
        round(mean, 2), round(half, 2), n)


def test_the_stored_figure_draws_a_line_per_seed_and_a_mean_per_arm_in_two_panels():
    from experiments import teaching_pubswap as teach

    fig = teach.stored_drift_figure()
    seeds = teach.stored_runs().query("tau == tau.max()").seed.nunique()
    lines = [t for t in fig.data if t.name == teach.SEED_LINE]
    assert "one seed" in teach.SEED_LINE and "breaks" in teach.SEED_LINE  # the legend says how to read a line
    means = [t for t in fig.data if t.name == "mean ± 95 % t-interval"]
    assert len(lines) == 2 * seeds and len(means) == 2 and all(len(t.x) == len(teach.ORDER) for t in means)
    runs = teach.stored_runs().query("tau == tau.max()")
    for seed, trace in zip(sorted(runs.seed.unique()), lines[::2]):  # a seed's points: only the arms it ran
        ran = set(runs[runs.seed == seed].arm)
        assert {teach.ORDER[int(x)] for x, y in zip(trace.x, trace.y) if y == y} == ran
        assert trace.connectgaps is False  # no line across an arm that did not run the seed
    xs = [round(x, 6) for trace in lines[::2] for x, y in zip(trace.x, trace.y) if y == y]
    assert len(xs) == len(set(xs))  # each seed's dot sits apart, so tied seeds (Balanced's 3 and 4) stay visible
    levels = teach.update_sizes()
    assert [round(y, 2) for y in means[0].y] == list(levels["end-of-round δ_pair"])
    assert sum(t.showlegend is not False for t in fig.data) == 2  # one legend entry for the seeds, one for the means


def test_the_fedit_exercise_asks_for_the_sign_of_the_product_of_the_averaged_factors():
    from experiments import teaching_pubswap as teach

    answer, why = teach.exercise_fedit(((2.0, 2.0), (-1.0, -4.0)))
    assert answer == "negative" and "= 0.5 · -1 = -0.5" in why and "ΔW = 4, 4" in why  # (2 − 1)/2 · (2 − 4)/2
    assert teach.exercise_fedit(((1.0, 3.0), (1.0, 3.0)))[0] == "positive"  # identical clients: no cross-term error
    assert teach.exercise_fedit(((1.0, 1.0), (-1.0, -1.0)))[0] == "zero"  # the same ΔW = 1 averages to 0


def test_the_bound_exercise_names_the_control_and_random_whose_public_steps_add_nothing():
    from experiments import teaching_pubswap as teach
    from fedrl_kit import notebook

    answer, why = teach.exercise_bound()
    assert answer == {"no-swap control", "Random"} and "ω_n = 0" in why and "one and the same group" in why
    assert "does not favour Balanced's swap" in why
    for guess, right in (({"Random", "no-swap control"}, True), ({"no-swap control"}, False), ({"Balanced"}, False)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            notebook.check_explained(guess, answer, why)
        assert out.getvalue().startswith("✔" if right else "✘")  # a set is right only whole


def test_pass1_by_tau_gives_the_untrained_start_once_per_seed_and_each_arms_mean():
    from experiments import teaching_pubswap as teach

    t = teach.pass1_by_tau()
    rows = json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text())
    rows = [r for r in rows if r["table"] in ("table1", "control") and r["method"] in teach.ARMS]
    for tau in t.index:
        at = [r for r in rows if r["tau"] == tau]
        start = {r["seed"]: r["pass@1_start"] for r in at}  # one start per seed, whatever arm ran it
        assert t.loc[tau, "before GRPO"] == round(100 * np.mean(list(start.values())), 1)
        for method, arm in teach.ARMS.items():
            mine = [r["pass@1_final"] for r in at if r["method"] == method]
            assert t.loc[tau, arm] == (round(100 * np.mean(mine), 1) if mine else "not run")


def test_the_live_drift_figure_draws_each_arm_in_two_panels_and_shades_the_public_steps():
    from experiments import teaching_pubswap as teach

    def record(d, u):
        return {"pairwise_effective": d, "to_global_effective": u}
    drifts = {"FedAvg-GRPO": {j: record(1.0 + j, 1.0) for j in range(4)},
              "PubSwap Balanced": {j: record(0.5 + j, 2.0) for j in range(4)}}
    fig = teach.live_drift_figure(drifts, period=2)
    lines = [t for t in fig.data if t.name in drifts]
    assert len(lines) == 4 and all(list(t.x) == [1, 2, 3, 4] for t in lines)  # steps numbered from 1, as τ's boxes
    balanced = [t for t in lines if t.name == "PubSwap Balanced"]
    assert list(balanced[0].y) == [0.5, 1.5, 2.5, 3.5] and list(balanced[1].y) == [0.25, 0.75, 1.25, 1.75]
    shaded = [s for s in fig.layout.shapes if s.type == "rect"]
    assert sorted({(s.x0, s.x1) for s in shaded}) == [(1.5, 2.5), (3.5, 4.5)]  # steps 2 and 4: public at τ_swap = 2
    assert len(shaded) == 4  # in both panels


def test_a_live_round_keeps_tensors_only_when_asked_and_replays_its_last_public_step(tiny_dir):
    from conftest import small_config

    from experiments import teaching_pubswap as teach
    from fedrl_kit.pubswap.method import sample_public_batch
    from fedrl_kit.runs import REPO_ROOT, Run

    cfg = small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base"), method="pubswap_balanced", local_steps=3,
                       pubswap={"period": 2})
    policy = Run(cfg, progress=False).build().policy
    run, drift = teach.live_round(cfg, policy, "pubswap_balanced", 3, tensors=False)
    assert run.tensors == {} and sorted(drift) == [0, 1, 2]
    gen = teach.replay_last_public(run, 3)
    assert gen.step == 1  # of steps 0, 1, 2 only step 1 is public at τ_swap = 2
    sent = sample_public_batch(run.world.public, cfg.prompts_per_step, cfg.seed, 1, 0)
    assert list(gen.batch["prompt"]) == list(sent["prompt"])  # the step's own prompts


def test_the_swap_widget_shows_the_chosen_clients_group_under_the_chosen_rule(monkeypatch, capsys):
    from types import SimpleNamespace

    import pandas as pd

    from experiments import teaching_pubswap as teach
    from fedrl_kit.pubswap import public_step

    def fake_group_table(gen, results, client, prompt):  # results: the rule's swap, here a tag to check it was used
        v = pd.DataFrame({"own answer": ["1"], "own correct": [False], "group": ["3"], "correct": [True],
                          "from": [f"client_{1 - client} #0"]})
        v.attrs["swapped_in"] = results
        return v

    monkeypatch.setattr(public_step, "group_table", fake_group_table)
    gen = SimpleNamespace(client_ids=["client_0", "client_1"], num_generations=8, batch={"prompt": ["1+2=", "5-1="]})
    show, controls = teach.swap_widget(gen, {"balanced": 1, "random": 7}, prompt=1)
    assert set(controls) == {"rule", "client", "prompt"} and controls["prompt"].value == 1
    show("random", 0, 1)
    out = capsys.readouterr().out
    assert out.startswith("random: 7 of client_0's 8 answers on '5-1=' come from other clients; the group holds 1 "
                          "right, its own 8 held 0 right")  # what Random took or gave, beside what the client had
    assert "own answer" not in out  # Random's group has no own answer per slot
    show("balanced", 1, 0)
    assert "balanced: 1 of client_1's 8 answers" in capsys.readouterr().out
    _, controls = teach.swap_widget(gen, {"balanced": 1, "random": 7}, "random", 0, 1)  # a chosen first view
    assert (controls["rule"].value, controls["client"].value, controls["prompt"].value) == ("random", 0, 1)


def test_random_loss_finds_the_client_and_prompt_where_randoms_group_lost_most_right_answers():
    from types import SimpleNamespace

    from experiments import teaching_pubswap as teach

    def result(own, right_in_group):  # one prompt: each client's own right answers, and the right ones in its group
        return SimpleNamespace(own_correct=np.array(own),
                               correct=np.array([[k < r for k in range(8)] for r in right_in_group]))

    swaps = {"random": [result([2, 5, 0], [3, 3, 3]), result([1, 6, 2], [2, 2, 2])]}
    assert teach.random_loss(swaps) == (1, 1)  # client 1 had 6 right on prompt 1 and gets a group with 2
    assert teach.random_loss({"random": [result([0, 1], [4, 4])]}) == (0, 0)  # Random took nothing from anyone


def test_pass1_by_tau_with_same_seeds_averages_only_the_seeds_every_arm_at_that_tau_ran():
    from experiments import teaching_pubswap as teach

    t = teach.pass1_by_tau(same_seeds=True)
    runs = teach.stored_runs()
    for tau in t.index:
        at = runs[runs.tau == tau]
        seeds = set.intersection(*(set(g) for _, g in at.groupby("arm").seed))
        mine = at[at.seed.isin(seeds)]
        assert t.loc[tau, "before GRPO"] == round(mine.drop_duplicates("seed").start.mean(), 1)
        for arm, g in mine.groupby("arm"):
            assert t.loc[tau, arm] == round(g["pass@1"].mean(), 1) and len(g) == len(seeds)


def test_the_bound_report_works_the_sum_and_turns_the_share_into_an_angle():
    from experiments import teaching_pubswap as teach

    terms = {"M": np.array([0, 1, 3]), "beta": np.array([0.0, 0.3, 0.1]), "bound": 0.2, "omega": 0.05,
             "on_policy": 0.5}
    text = teach.bound_report(terms)
    assert "bound on ω_0 (a gradient length): (1/b) Σ_x M_0(x) β_0(x) = (1·0.300 + 3·0.100) / 3 = 0.200" in text
    assert "measured ω_0 = 0.050 (0.200 / 0.050 = 4.0× below the bound)" in text and "relative distortion (a share): ω_0 / ‖ĝ(own groups)‖ = 0.050 / 0.500 = 10%" in text
    assert "at most arcsin(0.050 / 0.500) = 6°" in text and "arcsin(0.20" not in text and "cosine ≥ 0.99" in text
    assert teach.bound_report({**terms, "omega": 0.0}).endswith("nothing swapped in")


def test_the_heterogeneity_figure_names_clients_as_the_tables_do():
    from experiments import teaching_pubswap as teach

    parts = [{"topic": ["add", "add", "max"]}, {"topic": ["max"]}]
    fig = teach.heterogeneity_figure(parts, 0.3)
    assert set(fig.data[0].x) == {"client_0", "client_1"} and all(t.startswith("client_") for t in fig.data[0].text)


def test_balanced_beside_works_m_for_the_case_the_widget_shows_for_random(monkeypatch):
    from types import SimpleNamespace

    import pandas as pd

    from experiments import teaching_pubswap as teach
    from fedrl_kit.pubswap import public_step

    def fake_group_table(gen, results, client, prompt):  # Balanced's group: client 1 keeps its own 5 right of 8
        return pd.DataFrame({"correct": [True] * 5 + [False] * 3})

    monkeypatch.setattr(public_step, "group_table", fake_group_table)
    correct = pd.DataFrame([[0, 5, 2], [3, 1, 0]], columns=["client_0", "client_1", "client_2"])
    gen = SimpleNamespace(client_ids=list(correct.columns), num_generations=8, batch={"prompt": ["1+2=", "5-1="]})
    random = [SimpleNamespace(correct=np.array([[k < 2 for k in range(8)]] * 3)), None]
    text, view = teach.balanced_beside(gen, {"balanced": None, "random": random}, correct, 1, 0)
    assert "c = 5, D = 2, M = min((4 − 5)+, 2) = 0: it keeps its own K, 5 of 8 right" in text
    assert "(Random's group above: 2)" in text and len(view) == 8
    done = SimpleNamespace(num_replaced=np.array([0, 1, 0]))  # a swap that replaced one answer where M = 0
    with pytest.raises(AssertionError, match=r"M worked by hand \(0\) is not what swap_public replaced \(1\)"):
        teach.balanced_beside(gen, {"balanced": [done, None], "random": random}, correct, 1, 0)


def test_the_swap_try_draws_randoms_costliest_case_then_its_widgets_then_balanced_folded(monkeypatch):
    from experiments import teaching_pubswap as teach
    from fedrl_kit import notebook

    calls = []

    class Control:
        def __init__(self, value):
            self.value = value

    monkeypatch.setattr(teach, "random_loss", lambda swaps: (2, 1))
    monkeypatch.setattr(teach, "swap_widget", lambda gen, swaps, rule, client, prompt: (
        lambda **v: calls.append(("show", v)), {"rule": Control(rule), "client": Control(client),
                                                "prompt": Control(prompt)}))
    monkeypatch.setattr(notebook, "knobs", lambda update, **controls: calls.append(("knobs", sorted(controls))) or "box")
    monkeypatch.setattr(teach, "balanced_beside", lambda gen, swaps, correct, client, prompt: ("why", (client, prompt)))
    monkeypatch.setattr(notebook, "fold", lambda text, table=None: calls.append(("fold", text, table)))
    monkeypatch.setattr("IPython.display.display", lambda obj: calls.append(("display", obj)))
    teach.swap_try(None, {}, None)
    assert calls == [("show", {"rule": "random", "client": 2, "prompt": 1}), ("knobs", ["client", "prompt", "rule"]),
                     ("display", "box"), ("fold", "why", (2, 1))]  # static first, widgets shown, answer folded last


def test_the_settings_sentences_say_the_settings_table_in_two_lines(tiny_dir):
    from conftest import small_config

    from experiments import teaching_pubswap as teach
    from fedrl_kit.runs import REPO_ROOT, Run

    cfg = small_config(tiny_dir, base=str(REPO_ROOT / "data" / "base"), method="pubswap_balanced", local_steps=2,
                       pubswap={"period": 2})
    run = Run(cfg, progress=False).build()
    table, note = teach.settings_table(cfg, run.policy, 6)
    text = teach.settings_sentences(cfg, run.policy, 6)
    first, second = text.split("\n")
    assert first.startswith("Live round (§3–4): one round of τ = 6 local steps, seed ")
    for cell in (table.loc["τ: local steps per round", "stored runs (§5)"], table.loc["seeds", "stored runs (§5)"],
                 table.loc["τ: local steps per round", "the paper"]):
        assert cell in first  # nothing the table says about τ and seeds is lost
    assert first.endswith(note.split("\n")[0]) and second == note.split("\n")[1]
    # the notebook's sizes: a row both of ours share names the paper's value where it differs
    mine = teach.settings_sentences(cfg.replace(num_clients=4, n_public=140, prompts_per_step=8, num_generations=8),
                                    run.policy, 6).split("\n")[0]
    assert ("in both of ours and in the paper, unless said: clients N = 4; b prompts × K answers per step = 8 × 8; "
            "public prompts = 140 (the paper: 1,250 (MATH)/3,000 (DeepMath)); τ_swap = 2;") in mine
