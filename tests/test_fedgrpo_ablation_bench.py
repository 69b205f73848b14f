"""benchmarks/fedgrpo_ablation.py: the K/M grid's --set and --eval-every (long runs, other label settings)."""

import json

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("fedgrpo_ablation")


@pytest.mark.parametrize("item", ["num_clients=4", "fedgrpo.num_experts=1", "fedgrpo.questions_per_step=8"])
def test_set_may_not_change_what_the_grid_sets(bench, tmp_path, item):
    out = tmp_path / "grid.json"
    with pytest.raises(SystemExit, match=f"--set {item.split('=')[0]}: the grid sets this at each point"):
        bench.main(["--set", item, "--out", str(out)])
    assert not out.exists()


def test_every_run_takes_the_set_fields_and_keeps_its_curve_and_resume_checks_both(bench, tmp_path, monkeypatch):
    seen = []

    class FakeRun:  # records the config each point would run with; three scored rounds, one server record
        def __init__(self, cfg, progress=False, policy=None):
            seen.append(cfg)

        def run(self):
            glob = [dict(kind="global", round=r, **{"pass@1": 0.1 * r}) for r in range(3)]
            return glob + [dict(kind="client", client="server", round=1, expert_hit_rate_major=0.5,
                                random_hit_rate_major=0.25, reward_gap=0.3, ae_share=0.2)]

    monkeypatch.setattr(bench, "Run", FakeRun)
    out = tmp_path / "grid.json"
    argv = ["--seeds", "0", "--M", "1", "--K", "4", "--rounds", "2", "--eval-every", "1",
            "--set", "fedgrpo.ae_holders=all", "--out", str(out)]
    bench.main(argv)
    assert [(c.num_clients, c.fedgrpo.num_experts) for c in seen] == [(8, 1), (4, 2)]
    assert all(c.fedgrpo.ae_holders == "all" and c.eval_every == 1 for c in seen)
    stored = json.loads(out.read_text())
    assert stored["settings"]["set"] == ["fedgrpo.ae_holders=all"] and stored["settings"]["eval_every"] == 1
    assert stored["runs"][0]["curve"] == [[0, 0.0], [1, 0.1], [2, 0.2]]
    bench.main(argv + ["--resume"])  # everything done: nothing runs again
    assert len(seen) == 2
    with pytest.raises(SystemExit, match=r"other settings: set=\['fedgrpo.ae_holders=all'\] \(now \[\]\)"):
        bench.main(argv[:-4] + ["--out", str(out), "--resume"])
