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
