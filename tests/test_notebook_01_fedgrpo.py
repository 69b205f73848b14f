"""The helpers notebook 01 (FedGRPO) added: the paper's Table 1 gaps, the stored arms' absolute plateaus, the
window-by-window sentence, and a round diagram that names clients as the notebook's tables do."""

import re

import pytest

from experiments.findings import (FEDGRPO_PAPER_TABLE1, fedgrpo_findings, fedgrpo_paper_table, fedgrpo_plateaus,
                                  fedgrpo_window_note)
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
