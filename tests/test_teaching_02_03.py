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


def test_the_widgets_lambdas_are_multiples_of_the_rules_median_and_the_lambda_line_quotes_each_run():
    from experiments import teaching_fedmoa as tf

    probes, cfg = _probes_and_cfg()
    lams = tf.replay_lambdas(probes)
    values = list(lams.values())
    assert [k.split(" ×")[0] for k in lams] == ["1", "10", "100"]
    assert values[1] == pytest.approx(10 * values[0]) and values[2] == pytest.approx(100 * values[0])
    records = [dict(kind="client", client=f"client_{i}", round=r, cluster=float(i % 2), lam=lam)
               for i, r, lam in [(0, 1, 4.0), (1, 1, 50.0), (0, 2, 12.5), (1, 2, 300.0)]] + \
              [dict(kind="server", client="server", round=1)]
    cfg.fedmoa.lam_rule, cfg.fedmoa.normalise, cfg.fedmoa.lam = "target", False, 0.1
    line = tf.lambda_line(cfg, records).data
    hh = findings.fedmoa_setting()
    assert "target 0.05" in line and "cluster 0: 4 to 12.5; cluster 1: 50 to 300" in line
    assert f"λ = {hh['lam']['FedMOA']:g} for every client" in line
    cfg.fedmoa.normalise = True
    assert "λ = 0.1, fixed" in tf.lambda_line(cfg, records).data


def test_the_replay_words_quote_the_measured_cosines_and_moves():
    import numpy as np

    from experiments import teaching_fedmoa as tf

    probes, cfg = _probes_and_cfg()
    words = tf.replay_words(probes, cfg, tf.replay_lambdas(probes)).data
    cos = np.abs(tf.consecutive_cosines(probes))
    assert f"{np.median(cos):.2f} in the median and at most {cos.max():.2f}" in words
    assert "eq. 10 moves w_acc by at most" in words and "eq. 12 then moves it by up to" in words


def test_the_replay_splits_into_a_shown_why_and_a_folded_answer_holding_every_lambda():
    from experiments import teaching_fedmoa as tf

    probes, cfg = _probes_and_cfg()
    lams = tf.replay_lambdas(probes)
    why, answer = tf.replay_why(probes, cfg, lams).data, tf.replay_answer(probes, cfg, lams)
    assert why in tf.replay_words(probes, cfg, lams).data and "no w_acc reaches 0" not in why
    html = answer._repr_html_()
    assert html.startswith("<details>") and html.count("<table") == 1  # the all-λ table stays in the fold
    assert list(answer.table.columns) == list(tf.replay_all(probes, cfg, lams).columns)
    assert repr(answer).startswith("Answer: ")


def test_an_interval_reads_as_no_difference_only_when_it_holds_zero():
    from experiments import teaching_fedmoa as tf

    assert tf.interval_reading(0.01, 0.81) == "no difference detected"
    assert tf.interval_reading(-0.0018, 0.0015) == "a small detected loss"
    assert tf.interval_reading(5.0, 2.0) == "a small detected gain"
    box = tf.findings_box().data
    f1 = findings.fedmoa_findings().iloc[0]
    mean, half, _, _ = findings.fedmoa_claim_interval("FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter")
    assert f"Accuracy: {tf.interval_reading(f1.difference, f1['±95% t'])}" in box or "Accuracy and" in box
    assert ("excludes 0" in box) == (abs(mean) > half)


def test_nearer_the_front_compares_the_arms_mean_distance_to_the_front_with_their_spread():
    """Exercise 7's answer: a model's distance to the front is the accuracy it lacks against the best model with at
    least its format (0 on the front); an arm is nearer only when its mean distance is smaller by more than either
    arm's sd over seeds."""
    from experiments import teaching_fedmoa as tf

    pts = tf.front_distance()
    assert (pts.distance >= 0).all() and (pts.distance[pts["on the front"]] == 0).all()
    assert (pts.distance[~pts["on the front"]] > 0).all()
    d = tf.arm_distance()
    assert list(d.index) == ["FedAvg-GRPO", "FedMOA"] and (d.seeds >= 3).all()
    gap = d.loc["FedMOA", "mean"] - d.loc["FedAvg-GRPO", "mean"]
    answer, why = tf.nearer_front()
    assert (answer == "neither") == (abs(gap) <= d.sd.max())
    assert f"FedMOA {d.loc['FedMOA', 'mean']:.3f} ± {d.loc['FedMOA', 'sd']:.3f}" in why
    grid = tf.stored_grid()
    moved = {**grid, "runs": [{**r, "history": {**r["history"], "server": [
        {**r["history"]["server"][-1], "math/accuracy": r["history"]["server"][-1]["math/accuracy"] + 0.2}]}}
        if r["variant"] == "FedMOA" and r["setting"] == "heter+heter" else r for r in grid["runs"]]}
    assert tf.nearer_front(moved)[0] == "FedMOA"  # every FedMOA model on the front, FedAvg-GRPO's far behind


def test_the_grids_front_is_ringed_in_the_accuracy_format_plane_and_its_words_give_no_verdict():
    from experiments import teaching_fedmoa as tf

    fig, words = tf.grid_pareto()
    pts = tf.grid_points()
    front = [t for t in fig.data if t.name == "on the Pareto front"]
    assert len(front) == 1 and front[0].marker.symbol == "circle-open"  # the arm's marker stays visible inside
    on = pts[pts["on the front"]]
    assert sorted(zip(front[0].x, front[0].y)) == sorted(zip(on.accuracy, on["format"]))  # ringed = non-dominated
    lo, hi = fig.layout.yaxis.range  # the format axis is zoomed, and its title states the range
    assert lo <= pts["format"].min() and hi >= pts["format"].max() and hi - lo < 0.1
    assert f"{lo:.3f}–{hi:.3f}" in fig.layout.yaxis.title.text
    assert f"holds {len(on)} of the {len(pts)} models" in words.data
    assert "neither" not in words.data and "nearer" not in words.data  # Exercise 7's answer stays in its fold


def test_the_settings_table_names_each_runs_clients_tau_and_lambda():
    from types import SimpleNamespace

    from experiments import teaching_fedmoa as tf
    from experiments.findings import fedmoa_setting

    cfg = SimpleNamespace(num_clients=6, rounds=3, local_steps=2)
    records = [dict(kind="client", client="client_0", lam=4.0), dict(kind="client", client="client_1", lam=20.0)]
    t = tf.settings_table(cfg, records)
    assert list(t.columns) == ["clients", "rounds", "τ", "λ", "why"] and len(t) == 4
    assert t.loc["live run (§4)", "λ"] == "scale rule (§2): 4 to 20" and t.loc["live run (§4)", "τ"] == 2
    hh = fedmoa_setting()
    assert t.loc["stored grid (§6)", "τ"] == hh["tau"] and t.loc["stored grid (§6)", "clients"] == hh["clients"]
    assert t.loc["stored grid (§6)", "λ"].startswith(f"{hh['lam']['FedMOA']:g} (tuned over 0.01")
    assert t.loc["paper (Heter+Heter)", "λ"] == "0.01 fixed" and t.loc["replay of its round 1 (§5)", "τ"] == 3


def test_the_findings_table_sets_the_grid_beside_the_paper_in_four_rows():
    from experiments import teaching_fedmoa as tf

    t = tf.findings_table()
    assert len(t) == 4 and list(t.columns) == ["paper", "stored grid"]
    move = tf.weight_move()
    assert t.iloc[2]["stored grid"] == f"{move[0]:.4f} ± {move[1]:.4f}"
    diff = tf.accuracy_differences()
    assert t.iloc[0]["stored grid"].startswith(f"{diff.loc['mean', 'MATH-like tests']:+.2f}")


def test_the_grids_first_boundary_table_gives_what_exercise_7_needs():
    """Per config the end-of-round-1 w_acc and α, and the α-average below the plain mean (the α tilt); the configs
    below the α-average are the ones whose w_acc rises (only accuracy is shared there)."""
    import re

    from experiments import teaching_fedmoa as tf

    table, words = tf.grid_first_boundary()
    moves = tf.boundary_moves()
    assert list(table.index) == list(moves.index) == ["A", "B", "C"]
    assert table["w_acc, end of round 1"].tolist() == pytest.approx(moves["end of round 1"].tolist(), abs=5e-4)
    assert table["α per client"].is_monotonic_increasing and table.clients.sum() == 10
    plain, wbar = (float(x) for x in re.findall(r"is (\d\.\d+)", words.data))
    assert wbar < plain
    assert set(moves.index[moves.rises]) == set(table.index[table["w_acc, end of round 1"] < wbar])


def test_the_findings_box_quotes_the_stored_verdicts_and_the_weights_move():
    from experiments import teaching_fedmoa as tf
    from experiments.fedmoa_analysis import MIN_WEIGHT_MOVE

    box = tf.findings_box().data
    move = tf.weight_move()
    f1 = findings.fedmoa_findings().iloc[0]
    assert f"{move[0]:.4f} ± {move[1]:.4f}" in box and box.count("([report](13_fedmoa_report.ipynb))") == 3
    assert ('"not tested"' in box) == (f1.verdict.startswith("not tested") and move[0] < MIN_WEIGHT_MOVE)
    assert "build" not in box  # the stored runs show w_acc draining


def test_exercise_5s_answer_is_the_smallest_lambda_that_sets_a_weight_to_0():
    from experiments import teaching_fedmoa as tf
    from fedrl_kit.fedmoa import probe

    probes, cfg = _probes_and_cfg()
    lams = tf.replay_lambdas(probes)
    answer = tf.first_zero(probes, cfg, lams)
    zero = [any(r["trajectory"][-1][0] == 0 for r in probe.replay_round(
        probes, lam=lam, cluster_key="accuracy", eps=1e-6, temperature=1.0)) for lam in lams.values()]
    assert answer == ([1, 10, 100][zero.index(True)] if any(zero) else "none")
    assert tf.first_zero(probes, cfg, {"1 × the rule = 0": 0.0}) == "none"  # λ = 0 leaves every weight as sent


def test_the_accuracy_differences_are_paired_by_seed_and_agree_with_finding_1():
    from experiments import teaching_fedmoa as tf

    diff = tf.accuracy_differences()
    f1 = findings.fedmoa_findings().iloc[0]
    assert diff.loc["mean", "all three families' tests"] == pytest.approx(f1.difference, abs=0.01)
    assert diff.loc["± 95 % t", "all three families' tests"] == pytest.approx(f1["±95% t"], abs=0.01)
    gap = tf.arm_spread().loc["FedMOA", "mean"] - tf.arm_spread().loc["FedAvg-GRPO", "mean"]
    assert diff.loc["mean", "MATH-like tests"] == pytest.approx(100 * gap, abs=0.1)  # Exercise 7's gap, in points
    box = tf.findings_box().data
    assert f"{diff.loc['mean', 'MATH-like tests']:+.2f}".replace("-", "−") in box


def test_the_replay_explains_why_ten_times_lambda_lowers_what_is_sent_back():
    """§5's middle λ: the client whose α grows most, its w_acc after eq. 10 and the w_acc its cluster is sent, at 1 and
    10 × the rule, as the all-λ table has them."""
    from experiments import teaching_fedmoa as tf

    probes, cfg = _probes_and_cfg()
    lams = tf.replay_lambdas(probes)
    why = tf.replay_why(probes, cfg, lams).data
    mid = list(lams)[1]
    assert f"In the column {mid}, eq. 10 lowers client_" in why
    client = why.split(f"In the column {mid}, eq. 10 lowers ")[1].split("'s")[0]
    table = tf.replay_all(probes, cfg, lams)
    named = why.split("): ")[-1].rstrip(".").split(", ")  # "client_0 0.374 → 0.329", …: each sent value by name
    assert client in [n.split(" ")[0] for n in named]
    for part in named:
        cid = part.split(" ")[0]
        one, ten = (table.loc[cid, f"λ = {k}"] for k in list(lams)[:2])
        assert part == f"{cid} {one:.3f} → {ten:.3f}"


def test_one_local_step_written_out_matches_the_packages_weights():
    """The notebook's inline step (eqs. 8–10 on the LoRA factors of the hooked layer) gives the package's weights."""
    import copy

    import numpy as np
    import torch

    from experiments import teaching_fedmoa as tf
    from fedrl_kit.fedmoa.client import hooked_lora_parameters
    from fedrl_kit.fedmoa.weights import per_objective_advantages, project_to_simplex
    from fedrl_kit.grpo import grpo_loss
    from fedrl_kit.rollout import per_token_logps

    make_config = tf.config_maker(0)
    cfg = make_config("smoke")
    from fedrl_kit.runs import REPO_ROOT

    if not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
        pytest.skip("no CPU base policy")
    client, path = tf.client_mid_round(make_config, cfg, None)
    K, G, s = len(client.names), client.local.num_generations, client.grpo
    rollouts, scores = client.rollout_scores(1, 1)
    adv = torch.tensor(per_objective_advantages(scores.reshape(-1, G, K)).reshape(-1, K), dtype=torch.float32)
    phi = hooked_lora_parameters(client.policy.model, client.layer)
    logps = per_token_logps(client.policy.model, rollouts, s.temperature)
    g = np.stack([torch.cat([x.flatten() for x in torch.autograd.grad(grpo_loss(
        logps, logps.detach(), adv[:, k], rollouts.completion_mask, s.epsilon, s.epsilon_high, loss_type=s.loss_type
    )[0], phi, retain_graph=True)]).double().numpy() for k in range(K)])
    w = project_to_simplex(path.weights + path.lam * (g * path.g_prev).sum(axis=1))
    pkg = copy.deepcopy(path)
    client.adapt_weights(rollouts, scores, pkg)
    assert np.allclose(w, pkg.weights, atol=1e-6)
    table = tf.step_table(client.names, g, path.g_prev, path.lam, path.weights, w, pkg.weights)
    assert list(table.index) == list(client.names) and len(table.columns) == 7


def test_the_folded_whys_of_exercises_1_6_and_8_quote_the_computed_values():
    """Exercises 1, 6 and 8 keep their rule in a helper, so the check cell's visible code gives nothing away."""
    import numpy as np

    from experiments import teaching_fedmoa as tf
    from fedrl_kit.fedmoa.weights import hypergradient_step

    w, g_now, g_prev = np.array([0.5, 0.3, 0.2]), np.array([[2.0, 0], [0, 0], [-1.0, 0]]), np.array([[1.0, 0], [0, 1.0], [1.0, 0]])
    w_big, delta = hypergradient_step(w, g_now, g_prev, lr=0.25)
    why = tf.projection_why(w + 0.25 * delta, w_big)
    assert "stops at 0 and the other 2 share ν" in why and "0.1500" in why and "[0.85, 0.15, 0.0]" in why
    w_small, delta = hypergradient_step(w, g_now, g_prev, lr=0.1)
    assert "stops at 0" not in tf.projection_why(w + 0.1 * delta, w_small)
    six = tf.leaves_front_why([0.46, 0.82])
    assert "dominates ['P2', 'P3']" in six and "P1 and P4 each beat it" in six
    moves = tf.boundary_moves()
    eight = tf.boundary_why(moves)
    assert "w̄_acc / (w̄_acc + 1 − w_acc)" in eight
    assert all(f"{c} {r['end of round 1']:.3f} → {r['sent for round 2']:.3f}" in eight for c, r in moves.iterrows())


def test_the_configs_table_holds_each_configs_rewards_and_initial_accuracy_weights():
    from types import SimpleNamespace

    from experiments import teaching_fedmoa as tf

    t = tf.configs_table(SimpleNamespace(clients=[f"client_{i}" for i in range(6)]))
    assert list(t.index) == ["A", "B", "C"]
    assert t.loc["B", "rewards (MBPP-like)"].endswith("length_short") and t.loc["C", "initial w_acc, live run"] == "—"
    assert t.loc["A", "initial w_acc, stored grid"] == "0.5, 0.45" and t.loc["B", "initial w_acc, stored grid"] == "0.4, 0.35"


def test_flat_grad_is_one_vector_over_the_parameters_and_keeps_the_graph():
    import numpy as np
    import torch

    from experiments import teaching_fedmoa as tf

    a, b = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)
    loss = (2 * a).sum() + (b ** 2).sum()
    assert np.allclose(tf.flat_grad(loss, [a, b]), [2, 2, 2, 2, 2])
    assert np.allclose(tf.flat_grad(loss, [a]), [2, 2])  # the graph was kept for a second objective
