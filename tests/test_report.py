"""A run folder summarised in text and drawn into its own figures folder."""

import pytest

from conftest import small_config
from fedrl_kit.report import load_run, plot_run, summary
from fedrl_kit.runs import Run


@pytest.fixture(scope="module")
def run_dir(tiny_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "run"
    Run(small_config(tiny_dir, method="fedavg_grpo", rounds=2, fail_client="client_1@2"), path, progress=False).run()
    return path


def test_summary_reads_the_setting_the_curve_the_failures_and_the_bytes(run_dir):
    config, records, ledger = load_run(run_dir)
    text = summary(run_dir)
    g = [r for r in records if r["kind"] == "global"]
    assert "method      fedavg_grpo" in text and "3 clients, 2 rounds" in text
    assert f"last: {g[-1]['pass@1']:.3f} (round 2)" in text
    assert "failures    1: client_1 ×1" in text and "injected failure" in text
    up = sum(r["nbytes"] for r in ledger if r["direction"] == "up")
    assert f"{len(ledger)} messages" in text and up > 0


def test_plot_writes_the_runs_figures_into_its_own_folder(run_dir):
    written = plot_run(run_dir, png=False)
    assert set(written) == {"pass_at_1", "clients", "communication"}
    for paths in written.values():
        assert paths["html"].parent == run_dir / "figures" and paths["html"].stat().st_size > 1000


def test_a_folder_that_is_not_a_run_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json, metrics.jsonl missing"):
        summary(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "metrics.jsonl").write_text('{"kind": "global"}\nnot json\n')
    with pytest.raises(ValueError, match="metrics.jsonl line 2 is not JSON"):
        summary(tmp_path)
