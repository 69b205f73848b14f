"""The helpers notebook 03 (FedMOA) adds: the one-component ablation arms of the stored cpu grid."""

import math

from experiments import findings


def test_fedmoa_ablation_findings_are_the_grids_one_component_arms_with_the_papers_table_2():
    table = findings.fedmoa_ablation_findings()
    assert list(table.columns) == findings.COLUMNS + ["unit", "paper"]
    assert len(table) == 4 and table.finding.str.contains("λ off, α on").sum() == 2
    assert table.finding.str.contains("λ on, α off").sum() == 2
    for _, r in table.iterrows():
        lo, hi = r["difference"] - r["±95% t"], r["difference"] + r["±95% t"]
        assert r["verdict"] == ("higher" if lo > 0 else "lower" if hi < 0 else "within noise")
        assert r["seeds"] >= 2
    alpha = table[table.finding.str.contains("λ off, α on")].set_index("unit")["paper"]
    assert math.isclose(alpha["points"], 64.0 - 62.6, abs_tol=1e-6)  # the paper's Table 2, MATH, in points
    assert math.isclose(alpha["reward"], 0.776 - 0.775, abs_tol=1e-6)
    assert table[table.finding.str.contains("λ on, α off")]["paper"].isna().all()  # no such row in the paper


def test_the_accuracy_weights_split_into_within_round_moves_and_boundary_jumps_that_add_up():
    import numpy as np
    import pytest

    from experiments import fedmoa_analysis as analysis

    def rec(client, rnd, start, end):
        return {"kind": "client", "client": client, "round": rnd, "w_move": 2 * abs(end - start), "lam": 10.0,
                "w_start/accuracy": start, "w/accuracy": end, "w_start/format": 1 - start, "w/format": 1 - end}

    # client a: +0.1 within round 1, jumps −0.3, +0.05 within round 2; client b: −0.1, jumps +0.1, 0
    recs = [rec("a", 1, 0.5, 0.6), rec("a", 2, 0.3, 0.35), rec("b", 1, 0.4, 0.3), rec("b", 2, 0.4, 0.4)]
    rows = [dict(setting="heter+heter", variant="FedMOA", seed=0, history=analysis.round_history(recs))]
    (s,) = analysis.accuracy_weight_split(rows)
    assert s["within"] == pytest.approx(np.mean([0.15, -0.1])) and s["boundary"] == pytest.approx(np.mean([-0.3, 0.1]))
    assert s["total"] == pytest.approx(np.mean([0.35 - 0.5, 0.4 - 0.4]))  # last end − first start
    assert analysis.accuracy_weight_split(rows, "homo+homo") == []


def test_the_stored_grids_split_adds_up_to_f4s_change_of_the_accuracy_weight():
    import json

    import pandas as pd
    import pytest

    from experiments import fedmoa_analysis as analysis

    runs = json.loads((findings.RESULTS / "fedmoa_compare_cpu.json").read_text())["runs"]
    split = pd.DataFrame(analysis.accuracy_weight_split(runs)).query("variant == 'FedMOA'").set_index("seed")
    paths = pd.DataFrame(analysis.accuracy_weight_paths(runs)).query("variant == 'FedMOA'")
    p = paths.pivot_table(index="seed", columns="round", values="mean_w0")
    assert (split.within + split.boundary).tolist() == pytest.approx((p[p.columns.max()] - p[0]).loc[split.index].tolist())
    table = findings.fedmoa_weight_split_findings()
    assert list(table.columns) == findings.COLUMNS and len(table) == 3
    f4 = findings.fedmoa_findings().iloc[3]
    assert table.difference[0] + table.difference[1] == pytest.approx(f4.difference, abs=1e-3)  # F4 is rounded


def test_the_boundary_change_splits_into_the_alpha_average_and_its_renormalisation():
    """Finding 3's split: per seed, eq. 12's α-average part plus its renormalisation part is the boundary change
    of accuracy_weight_split, and the α part pulls w_acc down (the α-average sits below the plain mean)."""
    import json

    import pandas as pd
    import pytest

    from experiments import fedmoa_analysis as analysis
    from experiments import teaching_fedmoa as tf

    grid = json.loads((findings.RESULTS / "fedmoa_compare_cpu.json").read_text())
    split = pd.DataFrame(analysis.accuracy_weight_split(grid["runs"])).query("variant == 'FedMOA'").set_index("seed")
    parts = tf.boundary_split(grid)
    both = parts.alpha_part + parts.renormalisation_part
    assert both.tolist() == pytest.approx(split.boundary.loc[parts.index].tolist())
    assert (parts.alpha_part < 0).all()


def test_project_simplex_in_the_notebook_matches_the_package_on_and_off_the_boundary():
    """The notebook's eight-line numpy eq. 10 (its project_simplex) against hypergradient_step, including a λ large
    enough to set a weight to 0 (the toy's larger λ)."""
    import numpy as np

    from fedrl_kit.fedmoa.weights import hypergradient_step

    def project_simplex(v):
        u = np.sort(v)[::-1]
        excess = np.cumsum(u) - 1
        j = np.arange(1, len(v) + 1)
        keep = j[u - excess / j > 0][-1]
        return np.maximum(v - excess[keep - 1] / keep, 0)

    rng = np.random.default_rng(0)
    w = np.array([0.5, 0.3, 0.2])
    g_prev, g_now = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), np.array([[2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])
    cases = [(g_now, g_prev, lam) for lam in (0.1, 0.25, 3.0)]
    cases += [(rng.normal(size=(4, 5)), rng.normal(size=(4, 5)), lam) for lam in (0.01, 0.5)]
    for gn, gp, lam in cases:
        w0 = w if len(gn) == 3 else np.full(4, 0.25)
        expected, _ = hypergradient_step(w0, gn, gp, lr=lam)
        assert np.allclose(project_simplex(w0 + lam * (gn * gp).sum(axis=1)), expected)
