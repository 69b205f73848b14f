"""benchmarks/fedgrpo_compare.py: the per-round server curve kept for long runs."""

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("fedgrpo_compare")


def test_server_curve_means_each_round_and_leaves_out_what_a_round_lacks(bench):
    server = [dict(round=1, reward_mean=0.2, reward_gap=0.5), dict(round=1, reward_mean=0.4, reward_gap=0.3),
              dict(round=2, reward_mean=0.9, ae_share=0.25), dict(round=3, loss=1.0)]
    curve = bench.server_curve(server)
    assert [c["round"] for c in curve] == [1, 2, 3]
    assert curve[0] == pytest.approx(dict(round=1, reward_mean=0.3, reward_gap=0.4))
    assert curve[1] == dict(round=2, reward_mean=0.9, ae_share=0.25)
    assert curve[2] == dict(round=3)  # loss is not a curve key


def _stored(tmp_path, bench, settings_extra=None, **extra):
    """A one-run result file with the script's default settings (so only the environment can differ), or with
    ``settings_extra`` over them."""
    import json

    settings = dict(bench.SETTINGS, rounds=5, eval_every=5, no_gt=False, set=[], **(settings_extra or {}))
    path = tmp_path / "stored.json"
    path.write_text(json.dumps(dict(settings=settings, command="earlier", **extra,
                                    runs=[dict(method="fedgrpo", seed=0, final_pass_at_1=0.3, base_pass_at_1=0.2)])))
    return path


@pytest.mark.parametrize("packages", [None, {"torch": "0.0.1"}])
def test_resume_refuses_runs_from_another_environment_before_running_anything(bench, tmp_path, packages):
    path = _stored(tmp_path, bench, **({"packages": packages} if packages else {}))
    before = path.read_text()
    with pytest.raises(SystemExit, match="stored.json .*(no package versions|torch 0.0.1 \\(here)"):
        bench.main(["--resume", "--seeds", "0", "1", "--methods", "fedgrpo", "--out", str(path)])
    assert path.read_text() == before  # nothing run, nothing written


def test_resume_in_the_same_environment_is_allowed_and_mixing_needs_the_flag(bench, tmp_path, capsys):
    import _machine

    from fedrl_kit.seeding import cpu_kernels

    same = {"packages": _machine.package_versions(), "cpu_kernels": cpu_kernels()}
    assert _machine.resume_environment_problem(same, "f.json") is None
    other = {"packages": dict(same["packages"], numpy="1.0")}
    assert "numpy 1.0 (here " in _machine.resume_environment_problem(other, "f.json")
    unknown_kernels = {"packages": same["packages"]}  # written before the kernels were recorded
    assert "torch CPU kernels not recorded (here " in _machine.resume_environment_problem(unknown_kernels, "f.json")
    _machine.check_resume_environment(other, "f.json", allow_mixed=True)  # warns, goes on
    assert "warning: f.json ran with other package versions" in capsys.readouterr().out


def test_resume_refuses_a_file_scored_another_way_and_the_file_records_the_me_score(bench, tmp_path):
    path = _stored(tmp_path, bench, settings_extra={"me_score": "agreement"})
    with pytest.raises(SystemExit, match="me_score='agreement' \\(now 'probability'\\)"):
        bench.main(["--resume", "--seeds", "0", "--methods", "fedgrpo", "--out", str(path)])
    path = _stored(tmp_path, bench, settings_extra={"me_score": "probability"})  # matches: only the environment
    with pytest.raises(SystemExit, match="no package versions"):  # is then checked (this file records none)
        bench.main(["--resume", "--seeds", "0", "--methods", "fedgrpo", "--out", str(path)])
    with pytest.raises(SystemExit, match="me_score='probability' \\(now 'agreement'\\)"):
        bench.main(["--resume", "--seeds", "0", "--methods", "fedgrpo", "--out", str(path),
                    "--set", "fedgrpo.me_score=agreement"])
