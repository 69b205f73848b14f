"""The helpers notebooks 02 (PubSwap) and 03 (FedMOA) teach with: exercise checks that always end with the answer and
why, a widget's default drawn as a static output, the findings' labels and interval sentences, the stored settings
the findings ran in, and PubSwap's round as a time line."""

import json
import re

import ipywidgets as widgets
import numpy as np
import pandas as pd
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


def test_an_explained_checks_table_is_folded_with_the_answer_until_a_prediction_is_set(capsys):
    import pandas as pd

    table = pd.DataFrame({"u": [1.5, 2.25]}, index=["Balanced", "Random"])
    folded = notebook._Answer("Answer: 'larger'.", table)._repr_html_()
    assert folded.startswith("<details>") and folded.index("2.25") < folded.index("</details>")
    notebook.check_explained(None, "larger", "u is larger.", table=table)
    out = capsys.readouterr().out
    assert "Answer: 'larger'." in out and "2.25" in out
    notebook.check_explained("larger", "larger", "u is larger.", table=table)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("✔ Right") and lines[1] == "Why: u is larger." and "2.25" in lines[-1]


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
    at = [r for r in rows if r["tau"] == tau]
    assert all(r["rounds"] == s["rounds"] for r in at) and s["period"] == 2  # every table shares the budget
    assert {r["pubswap_period"] for r in at if r["table"] == "table1"} == {s["period"]}  # Table 5 varies τ_swap
    assert {r["pubswap_period"] for r in at if r["table"] == "table5"} == {4, 8}
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


# -- notebook 03's loaders and its figure of the live run -----------------------------------------------------------
def _client_record(client, rnd, cluster, names, start, end, alpha=0.5):
    return {"kind": "client", "client": client, "round": rnd, "cluster": float(cluster), "alpha": alpha,
            "w_move": sum(abs(a - b) for a, b in zip(end, start)),
            **{f"w_start/{n}": w for n, w in zip(names, start)}, **{f"w/{n}": w for n, w in zip(names, end)}}


def test_the_w_acc_table_reads_each_clients_first_weight_as_sent_and_after_its_round():
    """w_acc is a client's first reward weight (code_accuracy for a code client), whatever the other rewards are
    called; server and communication records are skipped, and a stored run's history (no "kind") reads the same."""
    from experiments import teaching_fedmoa as tf

    recs = [_client_record("client_1", 1, 1, ["code_accuracy", "code_format", "tag_count"], [0.5, 0.25, 0.25],
                           [0.49, 0.26, 0.25], alpha=1.0),
            _client_record("client_0", 1, 0, ["accuracy", "format"], [0.4, 0.6], [0.41, 0.59]),
            _client_record("client_0", 2, 0, ["accuracy", "format"], [0.45, 0.55], [0.45, 0.55]),
            {"kind": "client", "client": "server", "round": 1}, {"kind": "comm", "round": 1}]
    w = tf.w_acc_table(recs)
    assert list(w.client) == ["client_0", "client_0", "client_1"] and list(w["round"]) == [1, 2, 1]
    assert w.start.tolist() == [0.4, 0.45, 0.5] and w.end.tolist() == [0.41, 0.45, 0.49]
    assert w.cluster.tolist() == [0, 0, 1] and w.alpha.tolist() == [0.5, 0.5, 1.0]
    stored = [{k: v for k, v in r.items() if k != "kind"} for r in recs[:3]]
    assert tf.w_acc_table(stored).equals(w)


def test_the_delta_ratios_divide_each_steps_delta_by_its_rounds_gradient_size_and_skip_what_cannot_be_divided():
    """|Δ_k| / ‖g_k‖² per client, round, step ≥ 1 and reward: step 0 (no g^(t−1)) and a reward whose gradient was 0
    are left out; server and communication records are skipped."""
    from experiments import teaching_fedmoa as tf

    def rec(client, rnd, deltas, gsq):  # two rewards, three local steps
        r = {"kind": "client", "client": client, "round": rnd, "w_move": 0.0}
        for n, g in zip(("accuracy", "format"), gsq):
            r.update({f"w_start/{n}": 0.5, f"gsq/{n}": g, **{f"w@{s}/{n}": 0.5 for s in range(3)}})
            r.update({f"delta@{s}/{n}": d for s, d in enumerate([0.0, *deltas[n]])})
        return r

    recs = [rec("client_0", 1, {"accuracy": [0.2, -0.1], "format": [0.0, 0.3]}, [2.0, 0.0]),
            {"kind": "client", "client": "server", "round": 1}, {"kind": "comm", "round": 1}]
    d = tf.delta_ratios(recs)
    assert d[["step", "reward"]].values.tolist() == [[1, "accuracy"], [2, "accuracy"]]
    assert d.ratio.tolist() == pytest.approx([0.1, 0.05])


def test_the_live_runs_figure_draws_each_clients_rounds_with_the_boundaries_shaded():
    import numpy as np

    from experiments import teaching_fedmoa as tf

    recs = [_client_record(c, r, k, ["accuracy", "format"], [0.1 * r + i, 0.5], [0.1 * r + i + 0.01, 0.5])
            for i, (c, k) in enumerate([("client_0", 0), ("client_1", 0), ("client_2", 1)]) for r in (1, 2, 3)]
    w = tf.w_acc_table(recs)
    fig = tf.w_acc_figure(w, {"client_0": "A", "client_1": "B", "client_2": "A"})
    assert len(fig.data) == 3 and [t.name for t in fig.data] == ["config A", "config B", "config A"]
    assert [t.showlegend for t in fig.data] == [True, True, False]  # one legend entry per config
    first = w[w.client == "client_0"]
    assert list(fig.data[0].y) == pytest.approx(np.ravel(first[["start", "end"]].to_numpy()).tolist())
    assert len(fig.layout.shapes) == 2 * 2  # two boundaries in each of the two clusters' panels
    labels = [a.text for a in fig.layout.annotations if a.text.startswith("client")]
    assert sorted(labels) == ["client 0", "client 1", "client 2"]  # each config's clients at their lines' end
    assert list(fig.layout.xaxis.ticktext) == ["round 1<br>start", "end", "round 2<br>start", "end",
                                               "round 3<br>start", "end"]
    assert list(fig.layout.xaxis.tickvals) == pytest.approx([0, 0.6, 1, 1.6, 2, 2.6])
    same = [_client_record(c, 1, 0, ["accuracy", "format"], [0.5, 0.5], [0.5, 0.5]) for c in ("client_3", "client_4")]
    fig = tf.w_acc_figure(tf.w_acc_table(same), {"client_3": "B", "client_4": "B"})
    assert [a.text for a in fig.layout.annotations if a.text.startswith("client")] == ["clients 3, 4"]


def test_the_front_figure_rings_the_front_in_order_with_one_span_on_both_axes():
    """One trace per arm (points labelled by seed), then the front: exactly the non-dominated models, ascending in
    accuracy, drawn as a staircase down then across; both axes hold every point and span the same width (the wider
    range, padded), so a narrow format range is not zoomed, and the y title gives the range and the span."""
    import pandas as pd

    from experiments import teaching_fedmoa as tf
    from experiments.fedmoa_pareto import non_dominated, pareto_front_order

    models = pd.DataFrame(dict(variant=["FedAvg-GRPO"] * 3 + ["FedMOA"] * 3, seed=[0, 1, 2] * 2,
                               acc=[0.30, 0.28, 0.25, 0.27, 0.31, 0.24],
                               fmt=[0.975, 0.990, 0.980, 0.985, 0.970, 0.995]))
    xy = models[["acc", "fmt"]].to_numpy()
    order = pareto_front_order(xy, non_dominated(xy))
    fig = tf.front_figure(models, order, x="acc", y="fmt")
    arms, front = fig.data[:2], fig.data[2]
    assert [t.name for t in arms] == ["FedAvg-GRPO", "FedMOA"] and list(arms[1].text) == ["s0", "s1", "s2"]
    assert [(a.x, a.text) for a in fig.layout.annotations] == list(zip(models.acc, [f"s{s}" for s in models.seed]))
    assert list(front.x) == [0.24, 0.28, 0.30, 0.31] and list(front.y) == [0.995, 0.990, 0.975, 0.970]
    assert front.line.shape == "vh"  # from a front model down to the next one's format, then across to it
    lo, hi = fig.layout.yaxis.range
    assert lo < models.fmt.min() and hi > models.fmt.max() <= 1
    x0, x1 = fig.layout.xaxis.range
    assert x0 < models.acc.min() and x1 > models.acc.max()
    assert hi - lo == pytest.approx(x1 - x0, abs=1e-3) == pytest.approx(1.3 * 0.07, abs=1e-3)  # accuracy's range
    assert fig.layout.yaxis.title.text == "format reward (models: 0.970–0.995)"  # the data's range, apart from
    assert fig.layout.xaxis.title.text == "accuracy (pass@1); each axis spans 0.091"  # the axes' common width
    bare = tf.front_figure(models, x="acc", y="fmt")  # the points alone, for a reader to find the front
    assert [t.name for t in bare.data] == ["FedAvg-GRPO", "FedMOA"] and bare.layout.yaxis.range == fig.layout.yaxis.range


def test_the_stored_runs_give_the_notebooks_numbers_as_the_findings_table_has_them():
    """Notebook 03 and report 13 compute their grid numbers from stored_runs; done as they do them, they agree with
    the findings table (F4: w_acc's change over the rounds) and with the stored format of each final model."""
    import pandas as pd

    from experiments import teaching_fedmoa as tf
    from experiments.stats import t_interval

    grid = tf.stored_runs()
    assert set(grid.setting) == {"heter+heter"} and {"FedAvg-GRPO", "FedMOA"} <= set(grid.variant)
    assert grid["math/format"].tolist() == [h["server"][-1]["math/format"] for h in grid.history]
    moa = grid[grid.variant == "FedMOA"]
    w = pd.concat([tf.w_acc_table(h["clients"]).assign(seed=s) for s, h in zip(moa.seed, moa.history)])
    first = w[w["round"] == 1].set_index(["seed", "client"]).start
    last = w[w["round"] == w["round"].max()].set_index(["seed", "client"]).end
    drift, half, n = t_interval((last - first).groupby("seed").mean())
    f4 = findings.fedmoa_findings().iloc[3]
    assert (round(drift, 3), round(half, 3), n) == (f4.difference, f4["±95% t"], f4.seeds)
    move, table = tf.grid_w_acc_change(moa)  # what report 13 shows: the same number in its last row
    assert table.loc["all clients", ["change", "± 95 %", "seeds"]].tolist() == [f4.difference, f4["±95% t"], f4.seeds]
    assert move == pytest.approx(moa.mean_w_move.mean())


def test_the_grids_change_of_w_acc_reads_per_config_with_the_plans_rewards_clients_and_starts():
    """Per config of the plan (Heter+Heter, 15 clients: A, B, C, A, B per family), its MATH-/GSM8K-like rewards,
    clients and starting w_acc beside w_acc's change; the configs table names the same clients and starts for the
    grid, and the live run's 6 clients on A and B."""
    from experiments import teaching_fedmoa as tf

    grid = tf.stored_runs()
    _, table = tf.grid_w_acc_change(grid[grid.variant == "FedMOA"])
    assert table.index.tolist() == ["A", "B", "C", "all clients"]
    assert table["rewards (MATH-, GSM8K-like)"].tolist() == ["accuracy, format, tag_count", "accuracy, format",
                                                            "accuracy, tag_count", ""]
    assert table.clients.tolist() == [6, 6, 3, 15]
    assert table["w_acc at round 1's start"].tolist()[:3] == ["0.5, 0.45", "0.4, 0.35", "0.3"]
    assert table.loc["A", "change"] < table.loc["B", "change"] < 0 < table.loc["C", "change"]  # notebook 03's finding 2
    configs = tf.configs_table(6)
    assert configs.index.tolist() == ["A", "B", "C"] and configs.columns.name == "config"
    assert configs["rewards: MATH-, GSM8K-like"].tolist() == table["rewards (MATH-, GSM8K-like)"].tolist()[:3]
    assert configs["rewards: MBPP-like"].tolist()[1:] == ["code_accuracy, code_format, length_short",
                                                          "code_accuracy, code_format, char_repetition"]
    assert configs["live run: clients (w_acc at start)"].tolist() == ["3 (0.5)", "3 (0.4)", "—"]
    assert configs["stored grid: clients (w_acc at start)"].tolist() == [
        f"{k} ({w})" for k, w in zip(table.clients[:3], table["w_acc at round 1's start"][:3])]


def test_the_settings_and_tuning_tables_read_the_stored_grid_and_the_live_config():
    from experiments import teaching_fedmoa as tf

    if not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
        pytest.skip("no CPU base policy")
    cfg = tf.config_maker(0)("quick")
    table = tf.settings_table(cfg, 0, tf.stored_runs())
    assert table.columns.tolist() == ["live run (§4–5)", "Homo+Homo runs (§5)", "stored grid (§6)", "paper"]
    assert table.loc["λ"].tolist() == ["10", "10", "10", "0.01"]
    assert table.loc["λ chosen by"].tolist() == ["the stored grid's λ", "the stored grid's λ",
                                                 "validation at η = 0.002, seed 10 (best)", "not given"]
    tried = table["stored grid (§6)"]  # validation pass@1 (%) of every λ tried at the grid's learning rate, best first
    assert tried["validation pass@1 (%) by λ at η = 0.004"] == "1: 41.6; 3: 41.4; 0.01: 41.0; 10: 40.7; 100: 39.9"
    # the binomial noise of a difference of two validation scores: 300 validation prompts × 4 samples each
    p = np.mean([0.416, 0.414, 0.410, 0.407, 0.399])
    assert tried["noise on two λ's difference (95 %)"] == (f"at least ± {196 * np.sqrt(2 * p * (1 - p) / 1200):.1f} "
                                                            "points (binomial)")
    assert table.loc["eq. 10 updates a round (τ − 1)"].tolist() == [cfg.local_steps - 1, 5, 5, "not given"]
    assert table.loc["model"].tolist()[:3] == ["base_moa (1.6 M parameters)"] * 3
    assert table.loc["LoRA"].tolist()[:3] == ["rank 8: q, k, v, o, gate, up, down"] * 3  # "auto" on base_moa
    assert table.loc["tokens an answer (at most)"].tolist() == [32, 32, 32, "1,024"]  # the paper's §4.1
    assert table.loc["pass@1 averages"].tolist()[1:3] == ["200 test prompts × 4", "600 test prompts × 4"]
    assert table.loc["clients", "Homo+Homo runs (§5)"] == "10, all alike (GSM8K-like)"
    assert table.map(lambda v: len(str(v))).to_numpy().max() <= 50  # shown whole, not cut with "…"
    assert table.loc["clip: c, c′", "live run (§4–5)"] == f"{cfg.epsilon:g}, {cfg.epsilon_high:g}"
    assert table.loc["seeds"].tolist() == ["1 (seed 0)", 3, 5, "not given"]
    assert table.loc["learning rate η"].tolist()[:3] == [f"{cfg.learning_rate:g}", "0.004: constant, and cosine decay",
                                                         "0.004"]  # the grid's tuned rate
    assert table.loc["μ: Adam updates a local step (one batch)", "live run (§4–5)"] == cfg.num_iterations
    assert table.loc["clients per config (w_acc at start: ours)"].tolist()[::2] == [
        "A: 3 (0.5); B: 3 (0.4); C: —", "A: 6 (0.5, 0.45); B: 6 (0.4, 0.35); C: 3 (0.3)"]  # configs_table's, one row
    tuning = tf.tuning_table()
    assert tuning.index.tolist() == ["0.01", "10", "100"] and tuning.columns.name.startswith("λ (tuning seed ")
    assert tuning.index.name is None  # no empty row under the header


def test_fig_5_under_the_cosine_decay_rises_within_rounds_as_the_docs_report():
    """Notebook 03's finding 3, whose table report 13 shows: the stored cosine-decay grid (Homo+Homo, GSM8K-like)
    read by the figure-claims rule, and beside it the same cell of the main grid at a constant learning rate, as
    docs/fedmoa.md reports both."""
    from experiments import teaching_fedmoa as tf

    mean, half, seeds, verdict = tf.cosine_w_acc_rise()
    assert (f"{mean:+.4f}", f"{half:.4f}", seeds, verdict) == ("+0.0034", "0.0021", 3, "holds")
    table = tf.fig5_rise_table()
    assert table.columns.name == "learning rate" and table.index.tolist() == ["constant (the grids')",
                                                                             "cosine decay (the paper's)"]
    assert table["w_acc's rise within a round"].tolist() == ["+0.0009", "+0.0034"]
    assert table["± 95 %"].tolist() == ["0.0047", "0.0021"] and table.seeds.tolist() == [3, 3]
    assert table.reads.tolist() == ["holds 0", "above 0"]
    assert table.loc["cosine decay (the paper's)", "95 % interval"] == "+0.0013 to +0.0055"


def test_phi_is_the_middle_layers_lora_factors_and_g_k_has_their_size(tmp_path):
    """The live run's φ: layer n // 2 of the model's n decoder layers, and g_k as long as its LoRA factors."""
    from experiments import teaching_fedmoa as tf
    from fedrl_kit.runs import Run

    if not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
        pytest.skip("no CPU base policy")
    run = Run(tf.config_maker(0)("quick"), tmp_path, progress=False)
    run.build()
    layer, layers, size = tf.hyper_layer_size(run)
    assert (layer, layers) == (layers // 2, 4)
    rank, hidden = run.config.lora_rank, run.policy.model.config.hidden_size
    assert size > 0 and size % rank == 0 and size >= 2 * rank * hidden  # at least one adapted hidden × hidden map


def test_the_notebooks_cpu_runs_take_the_grids_lambda_and_the_paper_preset_the_papers():
    from experiments import teaching_fedmoa as tf

    if not (REPO_ROOT / "data" / "base_moa" / "model.safetensors").exists():
        pytest.skip("no CPU base policy")
    make_config = tf.config_maker(0)
    for preset in ("quick", "smoke"):
        moa = make_config(preset).fedmoa
        assert (moa.lam_rule, moa.lam) == ("fixed", findings.fedmoa_setting()["lam"]["FedMOA"])
    assert make_config("full").fedmoa.lam == 0.01 and not make_config("quick", "FedAvg-GRPO").fedmoa.lambda_on


# -- notebook 03's exercises: each answer with its why, from the numbers the check cell computed -------------------
def test_exercise_1_names_the_weights_eq_10_raised_and_the_projections_shift():
    import numpy as np

    from experiments import teaching_fedmoa as tf
    from fedrl_kit.fedmoa.weights import hypergradient_step

    w, g_prev = np.array([0.5, 0.3, 0.2]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    g_now = np.array([[2.0, 0.0], [0.0, 0.3], [-1.0, 0.0]])  # the notebook's: format's Δ = 0.3 > 0, yet it falls
    after, _ = hypergradient_step(w, g_now, g_prev, lr=0.1)
    assert after[1] < w[1] and after == pytest.approx([0.6567, 0.2867, 0.0567], abs=1e-4)
    why = tf.why_1(["accuracy", "format", "tag_count"], w, (g_now * g_prev).sum(axis=1), after, after, lam=0.1)
    assert why.startswith("Δ = (2, 0.3, -1), each gradient dotted with its previous one; the average Δ is 0.43, and "
                          "only accuracy's Δ beats it. Format's Δ = 0.3 is above 0 but below it, so its weight falls.")
    assert "sums to 1.13, so the projection takes ν = 0.13 / 3 from every weight: (0.657, 0.287, 0.057) in numpy" in why
    assert why.endswith("a weight rises only when its Δ_k beats the average Δ; Δ_k > 0 is not enough.")  # the rule
    g_now[1, 1] = 0.0  # format's gradient gone: Δ = 0, below the average too
    after, _ = hypergradient_step(w, g_now, g_prev, lr=0.1)
    why = tf.why_1(["accuracy", "format", "tag_count"], w, (g_now * g_prev).sum(axis=1), after, after, lam=0.1)
    assert "Format's Δ = 0 is below it, so its weight falls." in why and "ν = 0.1 / 3 from every weight" in why


@pytest.mark.parametrize("w_p, w_q, answer, ending", [
    ([0.6, 0.2, 0.2], [0.3, 0.7], "below", "here the tilt wins"),  # the notebook's P and Q
    ([0.35, 0.15, 0.5], [0.3, 0.7], "above", "to 0.395: here inflation wins.")])  # a smaller gap: inflation wins
def test_exercise_2_weighs_the_alpha_tilt_against_inflation(w_p, w_q, answer, ending):
    import numpy as np

    from experiments import teaching_fedmoa as tf
    from fedrl_kit.fedmoa.weights import accuracy_aware_weights

    alpha = accuracy_aware_weights([w_p[0], w_q[0]])
    u = alpha @ np.array([w_p[:2], w_q[:2]])
    w_acc, plain = u[0] / u.sum(), (w_p[0] + w_q[0]) / 2  # the notebook's rule
    got = "below" if w_acc < plain else "above" if w_acc > plain else "at"
    why = tf.why_2(got, alpha, u)
    assert got == answer and ending in why and why.startswith("α = [")


def test_exercise_3_names_the_diluted_config_and_the_reward_it_alone_holds():
    import pandas as pd

    from experiments import teaching_fedmoa as tf

    end = pd.DataFrame({"accuracy": [0.5, 0.4], "format": [0.25, 0.6], "tag_count": [0.25, None]},
                       index=["client_0", "client_3"])
    by_config = pd.DataFrame({"u sums to": [1.156, 0.906], "w_acc the run sent": [0.378, 0.483]}, index=["A", "B"])
    answer = by_config["w_acc the run sent"].idxmin()  # the notebook's rule
    why = tf.why_3(answer, end, pd.Series({"client_0": "A", "client_3": "B"}), by_config)
    assert answer == "A"
    assert why.startswith("config A also holds tag_count, which the cluster does not share. Its u sums to 1.156, so "
                          "rescaling dilutes its w_acc. Config B holds only shared rewards. Its u sums to 0.906")
    assert why.endswith("α favours config A: the ranking follows which rewards a client holds, not its progress.")


def test_exercise_4s_why_reads_the_median_ratio_against_pure_noise_and_lambda_times_delta():
    import pandas as pd

    from experiments import teaching_fedmoa as tf

    deltas = pd.DataFrame({"ratio": [0.02, 0.03, 0.5], "delta": [1e-4, -2e-4, 3e-4]})
    why = tf.why_4(deltas, lam=10.0, prompts=4, dims=10_000)
    assert why.startswith("‖n‖ / ‖s‖ ≈ √(1/0.030 − 1) = 5.7, from |Δ_k| / ‖g_k‖² ≈ ‖s‖² / (‖s‖² + ‖n‖²): the batch "
                          "noise is 5.7 times the signal. The median |Δ_k| / ‖g_k‖² is 0.030 (largest 0.50)")
    assert "pure noise's 1/√10,000 = 0.010" in why and "batch of only 4 prompts" in why
    assert why.endswith("λ = 10, λ|Δ_k| then has median 0.0020: eq. 10 hardly moves the weights.")
    why = tf.why_4(deltas, lam=10.0, prompts=4, dims=10_000, on=pd.Series([True, False, True]))  # two rows read
    assert why.startswith("‖n‖ / ‖s‖ ≈ √(1/0.260 − 1) = 1.7,") and "(largest 0.50)" in why
    zero = pd.DataFrame({"reward": ["format", "length_short"], "ratio": [0.03, 0.0], "delta": [1e-4, 0.0]})
    why = tf.why_4(zero, lam=10.0, prompts=4, dims=10_000, max_tokens=32)
    assert why.endswith("length_short's Δ_k is 0 at every step: its reward barely varies within a group (answers "
                        "are capped at 32 tokens, so almost all score 1), so its advantages, hence g_k, are 0 at one "
                        "step or both.")


def test_the_arms_gains_pair_each_part_of_fedmoa_with_fedavg_grpo_by_seed_beside_the_papers_table_2():
    """Exercise 5's table: FedMOA, eq. 10 alone (λ on, α off) and α alone (λ off, α on) minus FedAvg-GRPO on the
    stored grid's MATH-like tests, paired by seed, as docs/fedmoa.md reports them, beside the paper's Table 2."""
    from experiments import teaching_fedmoa as tf

    gains = tf.arm_gains(tf.stored_runs())
    acc, rew = gains["accuracy (points)"], gains["aggregated reward"]
    assert list(gains.index) == ["FedMOA", "eq. 10 alone", "α alone"]
    assert [f"{x:+.3f}" for x in acc["stored grid"]] == ["-0.175", "-0.375", "-0.583"]  # docs: −0.17, −0.38, −0.58
    assert [f"{x:.2f}" for x in acc["± 95 %"]] == ["1.02", "2.96", "3.53"]
    assert gains[("", "seeds")].tolist() == [5, 3, 3]
    assert acc.paper["FedMOA"] == pytest.approx(2.2) and acc.paper["α alone"] == pytest.approx(1.4)
    assert acc.paper.isna()["eq. 10 alone"] and rew.paper["FedMOA"] == pytest.approx(0.052)
    assert f"{rew['stored grid']['FedMOA']:+.4f} ± {rew['± 95 %']['FedMOA']:.4f}" == "+0.0003 ± 0.0047"


def test_exercise_5_names_the_arms_above_0_and_says_whether_each_interval_holds_the_papers_gain():
    import pandas as pd

    from experiments import teaching_fedmoa as tf

    gains = pd.DataFrame({("accuracy (points)", "paper"): [2.2, float("nan"), 1.4],
                          ("accuracy (points)", "stored grid"): [-0.2, 1.5, -0.6],
                          ("accuracy (points)", "± 95 %"): [1.0, 1.0, 3.5]}, index=["FedMOA", "eq. 10 alone", "α alone"])
    acc = gains["accuracy (points)"]
    answer = set(acc.index[acc["stored grid"] - acc["± 95 %"] > 0])  # the notebook's rule
    assert answer == {"eq. 10 alone"}
    why = tf.why_5(answer, gains, lam_delta=0.0006)
    assert why.startswith("only eq. 10 alone's interval lies above 0 (accuracy, points, 95 %: FedMOA -1.20 to +0.80; "
                          "eq. 10 alone +0.50 to +2.50; α alone -4.10 to +2.90); FedMOA's excludes the paper's +2.2 "
                          "and α alone's holds the paper's +1.4.")
    assert "median λ|Δ_k| of 0.0006 a step" in why
    assert "Power: the interval of α alone (±3.50) holds both 0 and a gain as large as the paper's" in why
    assert tf.why_5(set(), gains, 0.0006).startswith("no interval lies above 0")
    stored = tf.why_5(set(), tf.arm_gains(tf.stored_runs()), 0.0006)  # the notebook's: the 3-seed arms can't tell
    assert ("Power: the intervals of eq. 10 alone (±2.96, 3 seeds) and α alone (±3.53, 3 seeds) hold both 0 and a "
            "gain as large as the paper's") in stored
    assert "FedMOA's (±1.02, 5 seeds) is narrow enough to rule out the paper's gain." in stored
    assert "FedMOA +0.0003 ± 0.0047 (the paper's +0.052)" in stored  # Table 2's aggregated reward


def test_the_weights_view_blanks_what_a_client_does_not_hold():
    import numpy as np
    import pandas as pd

    from experiments import teaching_fedmoa as tf

    end = pd.DataFrame({"accuracy": [0.49981, 0.4], "tag_count": [0.25, np.nan], "config": ["A", "B"]},
                       index=["client_0", "client_3"]).rename_axis(index="client", columns="reward")
    view = tf.weights_view(end)
    assert view.loc["client_0", "accuracy"] == 0.4998 and view.loc["client_3", "tag_count"] == ""
    assert view.columns.name == "client" and view.index.name is None and view.loc["client_3", "config"] == "B"


def test_exercise_6_says_whose_models_the_front_holds_and_how_often_chance_gives_as_many():
    import pandas as pd

    from experiments import teaching_fedmoa as tf
    from experiments.fedmoa_pareto import non_dominated, pareto_front_order

    models = pd.DataFrame(dict(variant=["FedAvg-GRPO"] * 2 + ["FedMOA"] * 2, seed=[0, 1, 0, 1],
                               acc=[0.30, 0.20, 0.25, 0.10], fmt=[0.97, 0.96, 0.99, 0.95]))
    xy = models[["acc", "fmt"]].to_numpy()
    order = pareto_front_order(xy, non_dominated(xy))
    arms = set(models.variant.iloc[order])  # the notebook's rule
    assert arms == {"FedAvg-GRPO", "FedMOA"}  # FedAvg-GRPO's seed 0 (most accurate) and FedMOA's seed 0 (format)
    why = tf.why_6(models, order, chance=5 / 6, x="acc", y="fmt")
    assert why.startswith("format spans only 0.950 to 0.990, so the front is nearly an accuracy ranking: the most "
                          "accurate model (FedAvg-GRPO's seed 0, 0.300), then each less accurate one with a better "
                          "format: FedMOA's seed 0 (0.250, 0.990). 1 of the front's 2 models are FedMOA's.")
    assert why.endswith("FedMOA would get 1 or more with chance 0.83: the front does not separate the arms.")
    assert tf.why_6(models, order, chance=0.01, x="acc", y="fmt").endswith("with chance 0.01.")


def test_the_grids_w_acc_table_stacks_each_seeds_table_with_its_seed():
    """§5's τ = 6 check: one row per seed, client and round, each seed's rows those of w_acc_table."""
    from experiments import teaching_fedmoa as tf

    moa = tf.stored_runs().query("variant == 'FedMOA'")
    w = tf.grid_w_acc_table(moa)
    assert len(w) == sum(len(tf.w_acc_table(h["clients"])) for h in moa.history)
    assert sorted(w.seed.unique()) == sorted(moa.seed)
    first = moa.iloc[0]
    mine = w[w.seed == first.seed].drop(columns="seed").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, tf.w_acc_table(first.history["clients"]))


def test_the_rewards_table_defines_every_reward_of_the_configs_with_the_codes_constants():
    from experiments import teaching_fedmoa as tf
    from fedrl_kit.fedmoa.plan import REWARD_CONFIGS
    from fedrl_kit.rewards import REWARDS
    from fedrl_kit.rewards.code import SHORT_TARGET_LEN

    table = tf.rewards_table()
    held = {r for family in REWARD_CONFIGS.values() for rewards in family.values() for r in rewards}
    assert set(table.index) == held and held <= set(REWARDS)
    assert str(SHORT_TARGET_LEN) in table.loc["length_short", "scores"]
    assert table.loc["tag_count", "held by configs"] == "A, C (MATH-, GSM8K-like); A (MBPP-like)"
    assert table.columns.name == "reward" and table.index.name is None
    assert table.scores.str.len().max() < 50  # shown whole, not cut with "…"


def test_the_arms_table_reads_each_arms_switches_and_seeds_from_the_grid():
    from experiments import teaching_fedmoa as tf

    grid = tf.stored_runs()
    table = tf.arms_table(grid)
    assert table.index.tolist() == ["FedAvg-GRPO", "FedMOA", "eq. 10 alone", "α alone"]
    assert table.loc["eq. 10 alone", "eq. 10 on the client"] == "on"
    assert table.loc["α alone", "eq. 10 on the client"].startswith("off")
    assert table.loc["α alone", "the server weighs a cluster's clients by"] == "α (eq. 11)"
    assert table.loc["FedAvg-GRPO", "the server weighs a cluster's clients by"] == "data size"
    assert table["eq. 12 averages the shared weights"].tolist() == [  # only with eq. 10 on (round_weights)
        "no: starting weights every round", "yes, by α", "yes, by data size", "no: starting weights every round"]
    assert table.seeds.tolist() == [grid[grid.variant == v].seed.nunique()
                                    for v in ["FedAvg-GRPO", "FedMOA", "λ on, α off", "λ off, α on"]]


def test_fold_shows_a_try_answer_with_its_table(capsys):
    notebook.fold("Balanced keeps its own K.", table="a table")
    out = capsys.readouterr().out
    assert "Balanced keeps its own K." in out and "a table" in out


def test_the_notebooks_bookkeeping_helpers_config_means_front_chance_and_aux_gap():
    """config_means averages w_acc and α over a config's clients; front_chance is the hypergeometric tail (2 of a
    3-model front for an arm holding 5 of 10 models: 0.5); aux_gap pairs the stored final models by seed."""
    import pandas as pd

    from experiments import teaching_fedmoa as tf

    w = pd.DataFrame({"client": ["a", "b", "c", "a", "b", "c"], "cluster": [0, 0, 0, 0, 0, 0],
                      "round": [1, 1, 1, 2, 2, 2], "start": [0.5, 0.3, 0.4, 0.4, 0.2, 0.5],
                      "alpha": [0.2, 0.4, 0.4, 0.3, 0.3, 0.4]})
    table = tf.config_means(w, pd.Series({"a": "A", "b": "A", "c": "B"}))
    assert table.columns.tolist() == ["w_acc as sent, config A", "w_acc as sent, config B",
                                      "α at the round's end, config A", "α at the round's end, config B"]
    assert table.loc[1].tolist() == pytest.approx([0.4, 0.4, 0.3, 0.4])
    final = pd.DataFrame({"variant": ["FedMOA"] * 5 + ["FedAvg-GRPO"] * 5})
    assert tf.front_chance(final, [0, 1, 5]) == pytest.approx(0.5)  # P(≥ 2 of 3) = (C(5,2)·5 + C(5,3)) / C(10,3) = 60 / 120
    assert tf.front_chance(final, [5, 6, 7]) == pytest.approx(1.0)  # 0 or more: certain
    grid = tf.stored_runs()
    mean, half, n = tf.aux_gap(grid[grid.variant.isin(["FedMOA", "FedAvg-GRPO"])])
    assert (f"{mean:+.4f}", f"{half:.4f}", n) == ("+0.0014", "0.0043", 5)  # docs/fedmoa.md's Fig. 3 conditions
