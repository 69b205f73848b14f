"""FedMOA's Fig. 3–5 verdicts (experiments/fedmoa_figure_claims.py) on hand-made histories with known answers, and
recomputed by hand for one cell of the stored grid."""

import json
from pathlib import Path

import numpy as np
import pytest

from experiments import fedmoa_figure_claims as fc
from experiments.stats import t_quantile

ROOT = Path(__file__).resolve().parents[1]
T2 = t_quantile(0.975, 2)  # 3 seeds


def _history(acc, fmt, tag, length, w_acc, fam="math"):
    """A Homo+Homo history (MATH-like unless ``fam``): server curves per round, and one client whose accuracy weight after each
    local step of round i is w_acc[i] (the other two weights share the rest)."""
    server = [{"round": i + 1, f"{fam}/accuracy": a, f"{fam}/format": f, f"{fam}/tag_count": t, f"{fam}/length": n}
              for i, (a, f, t, n) in enumerate(zip(acc, fmt, tag, length))]
    clients = []
    for i, steps in enumerate(w_acc):
        c = {"client": "client_0", "round": i + 1}
        for s, w in enumerate(steps):
            c.update({f"w@{s}/accuracy": w, f"w@{s}/format": (1 - w) / 2, f"w@{s}/tag_count": (1 - w) / 2})
        c.update({"w/accuracy": steps[-1], "w/format": (1 - steps[-1]) / 2, "w/tag_count": (1 - steps[-1]) / 2,
                  "w_start/accuracy": steps[0]})
        clients.append(c)
    return {"server": server, "clients": clients}


def _row(variant, seed, history, move=0.05, fam="math"):
    return dict(setting="homo+homo", homo_family=fam, variant=variant, seed=seed, history=history,
                lambda_on=variant == "FedMOA", lam_rule="fixed", mean_w_move=move if variant == "FedMOA" else None)


FLAT_W = [[0.4, 0.4], [0.4, 0.4], [0.4, 0.4]]


def _cell(rows, figure, statistic_has="", fam="math", schedule="constant"):
    out = [r for r in fc.figure_claims(rows, settings=("homo+homo",), families=(fam,), lr_schedule=schedule)
           if r["figure"] == figure and statistic_has in r["statistic"]]
    assert len(out) == 1
    return out[0]


def test_per_seed_statistics_on_known_curves():
    assert fc.accuracy_drops([0.2, 0.1, 0.3, 0.25]) == pytest.approx(0.15)
    assert fc.accuracy_drops([0.1, 0.2, 0.5]) == 0.0  # a monotone rise has no falls, whatever its steps
    assert fc.length_slope([10.0, 9.0, 8.0]) == pytest.approx(-1.0)
    assert fc.length_slope([10.0, 12.0, 10.0]) == pytest.approx(0.0)
    recs = [{"kind": "client", **c} for c in _history([0.1] * 2, [1] * 2, [1] * 2, [9] * 2,
                                                      [[0.5, 0.55, 0.6], [0.3, 0.3, 0.5]])["clients"]]
    assert fc.within_round_rise(recs) == (pytest.approx(0.15), "per-step")  # (0.1 + 0.2) / 2
    for r in recs:  # without per-step weights: the round's end minus its start, and it says so
        for k in [k for k in r if k.startswith("w@")]:
            del r[k]
    assert fc.within_round_rise(recs) == (pytest.approx(0.15), "round-level")


def test_fig3_accuracy_decides_with_the_auxiliary_rewards_as_a_condition():
    rows = []
    for s, gain in enumerate((0.02, 0.03, 0.04)):  # FedMOA ahead by 2, 3, 4 points, same format and tag count
        rows += [_row("FedAvg-GRPO", s, _history([0.1, 0.2, 0.3], [0.9] * 3, [0.9] * 3, [9] * 3, FLAT_W)),
                 _row("FedMOA", s, _history([0.1, 0.2, 0.3 + gain], [0.9] * 3, [0.9] * 3, [9] * 3, FLAT_W))]
    r = _cell(rows, "Fig. 3")
    assert r["values"] == pytest.approx([2.0, 3.0, 4.0])
    assert r["mean"] == pytest.approx(3.0) and r["half_width"] == pytest.approx(T2 * 1.0 / np.sqrt(3))
    assert r["verdict"] == "holds" and "non-dominated on 3 of 3 seeds" in r["detail"]
    # the same accuracy gain bought with a clearly lower format reward: not "comparable auxiliary rewards"
    for row, drop in zip([x for x in rows if x["variant"] == "FedMOA"], (0.10, 0.11, 0.12)):
        row["history"]["server"][-1]["math/format"] = 0.9 - drop
    r = _cell(rows, "Fig. 3")
    assert r["verdict"] == "does not hold: lower format" and "format -0.1100" in r["detail"]
    # seed 0: FedAvg-GRPO's final point dominates FedMOA's (FedMOA behind on accuracy, equal elsewhere)
    rows = [_row("FedAvg-GRPO", 0, _history([0.1, 0.3], [0.9] * 2, [0.9] * 2, [9] * 2, FLAT_W[:2])),
            _row("FedMOA", 0, _history([0.1, 0.2], [0.9] * 2, [0.9] * 2, [9] * 2, FLAT_W[:2])),
            _row("FedAvg-GRPO", 1, _history([0.1, 0.3], [0.9] * 2, [0.9] * 2, [9] * 2, FLAT_W[:2])),
            _row("FedMOA", 1, _history([0.1, 0.2], [0.9] * 2, [0.95] * 2, [9] * 2, FLAT_W[:2]))]
    r = _cell(rows, "Fig. 3")
    assert "non-dominated on 1 of 2 seeds" in r["detail"] and r["values"] == pytest.approx([-10.0, -10.0])
    assert r["verdict"] == "does not hold"  # both seeds 10 points behind: interval of width 0 below 0


def test_fig4_smoothness_and_length_trend_on_known_curves():
    rows = []
    for s, fall in enumerate((0.05, 0.06, 0.07)):
        rows += [_row("FedAvg-GRPO", s, _history([0.2, 0.2 - fall, 0.3], [0.9] * 3, [0.9] * 3, [9, 9, 9], FLAT_W)),
                 _row("FedMOA", s, _history([0.2, 0.25, 0.3], [0.9] * 3, [0.9] * 3, [10 - s, 8 - s, 6 - s], FLAT_W))]
    smooth = _cell(rows, "Fig. 4", "falls")
    assert smooth["values"] == pytest.approx([-5.0, -6.0, -7.0])  # FedMOA never falls; FedAvg-GRPO by 5, 6, 7
    assert smooth["verdict"] == "holds"  # the claim predicts FedMOA − FedAvg-GRPO below 0
    length = _cell(rows, "Fig. 4", "length")
    assert length["values"] == pytest.approx([-2.0] * 3) and length["verdict"] == "holds"
    assert "FedAvg-GRPO's slope +0.0000" in length["detail"]
    for r in rows:  # neither arm falls: nothing to be smoother than
        r["history"]["server"][1]["math/accuracy"] = 0.25
        for rec in r["history"]["server"]:
            del rec["math/length"]
    smooth = _cell(rows, "Fig. 4", "falls")
    assert smooth["verdict"].startswith("not tested: neither arm's server accuracy fell")
    length = [r for r in fc.figure_claims(rows, settings=("homo+homo",), families=("math",))
              if r["figure"] == "Fig. 4" and r["statistic"] == ""]
    assert [r["verdict"] for r in length] == ["not tested: length not recorded"]


def test_fig5_within_round_rise_and_the_not_tested_rules():
    rows = []
    for s, rise in enumerate((0.02, 0.03, 0.04)):  # mean 0.03, half-width 0.0248
        paths = [[0.4, 0.4 + rise / 2, 0.4 + rise]] * 2  # w_acc rises by `rise` within each of two rounds
        h = dict(acc=[0.1, 0.2], fmt=[0.9] * 2, tag=[0.9] * 2, length=[9] * 2, fam="gsm")
        rows += [_row("FedAvg-GRPO", s, _history(w_acc=FLAT_W[:2], **h), fam="gsm"),
                 _row("FedMOA", s, _history(w_acc=paths, **h), fam="gsm")]
    r = _cell(rows, "Fig. 5", fam="gsm", schedule="cosine")  # the paper's figure: GSM8K, cosine decay
    assert r["values"] == pytest.approx([0.02, 0.03, 0.04]) and r["verdict"] == "holds"
    assert "last local step − after its first" in r["statistic"]
    # the same weights under a constant learning rate, or on a family the figure does not draw: not tested
    assert _cell(rows, "Fig. 5", fam="gsm")["verdict"].startswith("not tested: constant learning rate")
    for row in rows:
        row["homo_family"] = "math"
        row["history"] = json.loads(json.dumps(row["history"]).replace('"gsm/', '"math/'))
    r = _cell(rows, "Fig. 5", schedule="cosine")
    assert r["verdict"].startswith("not tested: outside the paper's Fig. 5")
    assert r["values"] == pytest.approx([0.02, 0.03, 0.04])  # the interval is still given
    for row in rows:  # the weights barely moved: the module's rule says the runs do not test the claim
        if row["variant"] == "FedMOA":
            row["mean_w_move"] = 0.005
    verdicts = [x["verdict"] for x in fc.figure_claims(rows, settings=("homo+homo",), families=("math",))]
    # Fig. 3 and Fig. 4's length take λ's reason; Fig. 4's smoothness and Fig. 5 keep the setting's own
    assert [v.startswith("not tested: the weights did not move") for v in verdicts] == [True, False, True, False]
    assert verdicts[1].startswith("not tested: neither arm's server accuracy fell")
    assert verdicts[3].startswith("not tested: outside the paper's Fig. 5")


def test_a_cell_without_an_arm_or_without_histories_says_so():
    h = _history([0.1, 0.2], [0.9] * 2, [0.9] * 2, [9] * 2, FLAT_W[:2])
    only_moa = [_row("FedMOA", 0, h)]
    out = fc.figure_claims(only_moa, settings=("homo+homo", "homo+heter"), families=("math", "gsm"))
    assert len(out) == 4 * len(fc.CLAIMS) and {r["verdict"] for r in out} == {"not tested: not run"}
    no_history = [{k: v for k, v in _row(v, 0, h).items() if k != "history"} for v in ("FedMOA", "FedAvg-GRPO")]
    out = fc.figure_claims(no_history, settings=("homo+homo",), families=("math",))
    assert {r["verdict"] for r in out} == {"not tested: no per-round history stored in these rows"}


def test_the_rows_recompute_from_the_stored_grid_for_one_cell():
    rows = json.loads((ROOT / "benchmarks/results/fedmoa_compare_cpu.json").read_text())["runs"]
    got = {r["figure"] + ("/length" if "length" in r["statistic"] else ""): r
           for r in fc.figure_claims(rows, settings=("homo+homo",), families=("gsm",))}
    cell = {(r["variant"], r["seed"]): r for r in rows if r["setting"] == "homo+homo" and r["homo_family"] == "gsm"}
    seeds = sorted(s for v, s in cell if v == "FedMOA")
    assert got["Fig. 3"]["seeds"] == seeds == [0, 1, 2]
    # Fig. 3's accuracy differences are the rows' own last-round pass@1 (read from the summary, not the history)
    d = [100 * (cell["FedMOA", s]["gsm/pass@1"] - cell["FedAvg-GRPO", s]["gsm/pass@1"]) for s in seeds]
    assert got["Fig. 3"]["values"] == pytest.approx(d)
    assert got["Fig. 3"]["half_width"] == pytest.approx(T2 * np.std(d, ddof=1) / np.sqrt(3))
    # Fig. 5 by hand: w@5 − w@0 of the accuracy weight, mean over the ten clients and three rounds
    rise = [np.mean([c["w@5/accuracy"] - c["w@0/accuracy"] for c in cell["FedMOA", s]["history"]["clients"]])
            for s in seeds]
    assert got["Fig. 5"]["values"] == pytest.approx(rise)
    # Fig. 4's length slope by hand: three rounds, so (last − first) / 2
    slope = [(cell["FedMOA", s]["history"]["server"][-1]["gsm/length"]
              - cell["FedMOA", s]["history"]["server"][0]["gsm/length"]) / 2 for s in seeds]
    assert got["Fig. 4/length"]["values"] == pytest.approx(slope)
    assert got["Fig. 3"]["verdict"] == "within noise (95 % t interval contains 0)"  # mean move 0.0117 ≥ 0.01


def test_fig5_under_the_papers_cosine_decay_recomputes_from_its_stored_grid():
    grid = json.loads((ROOT / "benchmarks/results/fedmoa_compare_cpu_cosine_homo+homo_gsm.json").read_text())
    assert fc.lr_schedule_of(grid) == "cosine" and "--set lr_schedule=cosine" in grid["command"]
    assert fc.lr_schedule_of(json.loads((ROOT / "benchmarks/results/fedmoa_compare_cpu.json").read_text())) == "constant"
    got = [r for r in fc.figure_claims(grid["runs"], settings=("homo+homo",), families=("gsm",), lr_schedule="cosine")
           if r["figure"] == "Fig. 5"][0]
    moa = {r["seed"]: r for r in grid["runs"] if r["variant"] == "FedMOA"}
    rise = [np.mean([c["w@5/accuracy"] - c["w@0/accuracy"] for c in moa[s]["history"]["clients"]]) for s in (0, 1, 2)]
    assert got["values"] == pytest.approx(rise)
    assert got["half_width"] == pytest.approx(T2 * np.std(rise, ddof=1) / np.sqrt(3))
    assert got["mean"] - got["half_width"] > 0 and got["verdict"] == "holds"  # every seed's w_acc rose within rounds
    assert np.mean([moa[s]["mean_w_move"] for s in moa]) >= 0.01  # λ acted: the move rule does not apply
