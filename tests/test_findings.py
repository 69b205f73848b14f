"""experiments.findings: the teaching notebooks' findings tables, at most five rows each, read from the stored results
by the same functions as the reports (so a finding and its report row are the same numbers)."""

import json

import pytest

from experiments import findings
from fedrl_kit.runs import REPO_ROOT

RESULTS = REPO_ROOT / "benchmarks" / "results"


@pytest.mark.parametrize("table", [findings.fedgrpo_findings, findings.pubswap_findings, findings.fedmoa_findings])
def test_a_findings_table_is_short_complete_and_read_from_the_stored_results(table):
    df = table()
    assert 3 <= len(df) <= 5 and list(df.columns) == findings.COLUMNS
    assert df[["difference", "±95% t", "seeds"]].notna().all().all()
    assert (df["seeds"] >= 3).all()  # a verdict over seeds, never one run


def test_a_fedgrpo_finding_is_its_report_rows_number():
    from experiments.fedgrpo_claims import long_claims

    long = [json.loads((RESULTS / n).read_text()) for n in ("fedgrpo_compare_pool_long.json",
                                                            "fedgrpo_compare_pool_long30.json")]
    row = long_claims(long).set_index("claim").loc["FedGRPO beats Fedpetuning+GRPO, trained until flat"]
    got = findings.fedgrpo_findings().iloc[0]
    assert (got["difference"], got["±95% t"]) == (round(row["mean"], 2), round(row["±95% t"], 2))
    assert got["verdict"] == row["verdict"].split(" (")[0]


def test_the_pubswap_findings_read_the_largest_tau_and_the_no_swap_control():
    df = findings.pubswap_findings()
    tau = max(r["tau"] for r in json.loads((RESULTS / "pubswap_paper_quick_large_tau.json").read_text()))
    assert all(f"τ = {tau}" in f for f in df["finding"])
    assert any("no-swap control" in f for f in df["finding"])
