"""benchmarks/pubswap_power.py: paired contrasts over the seeds two arms share, across summary files."""

import json

import numpy as np
import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("pubswap_power")


def _row(method, seed, drift, acc, table="table1", tau=48):
    return {"name": f"{table}/{method}/tau{tau}/seed{seed}", "table": table, "method": method, "tau": tau,
            "seed": seed, "drift_end_pairwise_effective": drift, "pass@1_final": acc}


def test_contrasts_pair_by_seed_and_use_the_t_interval_with_n_minus_1_degrees(bench):
    rows = [_row("fedavg_grpo", s, 10.0 + s, 0.30) for s in range(4)]
    rows += [_row("pubswap_balanced", s, 9.0 + s + 0.1 * s, 0.30 + 0.01 * s) for s in range(4)]
    rows += [_row("pubswap_noswap", s, 10.0 + s, 0.30, table="control") for s in (0, 2)]  # two seeds only
    rows += [_row("pubswap_balanced", 9, 0.0, 0.0, tau=32)]  # another τ: left out
    table = bench.contrasts(rows, 48).set_index(["contrast", "measure"])
    d = np.array([-1.0 + 0.1 * s for s in range(4)])
    half = 3.182446305284263 * d.std(ddof=1) / 2  # t_0.975 with 3 degrees of freedom, times the SE
    row = table.loc[("pubswap_balanced − fedavg_grpo", "drift δ_pair")]
    assert (row["difference"], row["±95% t"], row["seeds"]) == (f"{d.mean():+.2f}", f"{half:.2f}", 4)
    assert row["verdict"] == "below 0"
    assert table.loc[("pubswap_balanced − pubswap_noswap", "drift δ_pair")]["seeds"] == 2  # the shared seeds
    acc = table.loc[("pubswap_balanced − fedavg_grpo", "final pass@1 (points)")]
    assert acc["difference"] == f"{100 * 0.015:+.2f}"  # in points


def test_a_run_given_twice_is_refused(bench, tmp_path, monkeypatch):
    stored = [_row("fedavg_grpo", 0, 10.0, 0.3), _row("pubswap_balanced", 0, 9.0, 0.3)]
    (tmp_path / "pubswap_paper_quick_large_tau.json").write_text(json.dumps(stored))
    (tmp_path / "extra.json").write_text(json.dumps([stored[0]]))
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match="appears twice"):
        bench.main(["--tau", "48", "--extra", str(tmp_path / "extra.json")])
