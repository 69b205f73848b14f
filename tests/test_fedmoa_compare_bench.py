"""benchmarks/fedmoa_compare.py: completing a grid from stored result files (``--collect-only --add-runs``)."""

import json
from pathlib import Path

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("fedmoa_compare")


def _row(variant, seed, acc, reward, setting="heter+heter", family="math", tuned=None, **fedmoa):
    """A stored row of one cell, with the setup fields a run of that cell at the cpu scale writes (``tuned``: a
    tuning file's choices, as ``--tuned`` gives them)."""
    from experiments.fedmoa_analysis import summary_row_fields
    from experiments.fedmoa_presets import setting_config, tuned_fields

    moa, more, _ = tuned_fields(str(tuned), variant) if tuned else ({}, {}, "")
    setup = summary_row_fields(setting_config("cpu", setting, variant, seed, family, fedmoa={**moa, **fedmoa},
                                              **more), [])
    return {"setting": setting, "variant": variant, "label": variant, "seed": seed, "seconds": 1.0,
            "round_seconds": 1.0, "read_back": False, "global_accuracy": acc, "aggregated_reward": reward,
            "local_accuracy": acc, "local_reward": reward, "length": 10.0, "best_round": 3,
            "best/global_accuracy": acc, "best/aggregated_reward": reward, **setup}


def _stored(tmp_path, runs, **env):
    import _machine

    from fedrl_kit.seeding import cpu_kernels

    env = {"packages": _machine.package_versions(), "cpu_kernels": cpu_kernels(), **env}
    path = tmp_path / "stored.json"
    path.write_text(json.dumps(dict(benchmark="fedmoa_compare", command="earlier", runs=runs, **env)))
    return path


def _tuning(tmp_path):
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"benchmark": "fedmoa_compare", "summary": {
        "tuning": True, "selected": {"lam": {"value": 100.0}, "learning_rate": {"value": 0.004}}}}))
    return path


def test_collect_only_takes_missing_cells_from_a_stored_file_and_pairs_them(bench, tmp_path):
    tuning = _tuning(tmp_path)
    runs = [_row(v, s, acc, 0.5 + acc, tuned=tuning) for s in (0, 1, 2)
            for v, acc in (("FedAvg-GRPO", 0.40 + 0.01 * s), ("FedMOA", 0.43 + 0.01 * s))]
    stored = _stored(tmp_path, runs)
    out = tmp_path / "grid.json"
    bench.main(["--scale", "cpu", "--settings", "heter+heter", "--seeds", "0", "1", "2", "--collect-only",
                "--tuned", str(tuning), "--add-runs", str(stored), "--run-root", str(tmp_path / "none"),
                "--out", str(out)])
    res = json.loads(out.read_text())
    assert [(r["variant"], r["seed"]) for r in res["runs"]] == [(v, s) for s in (0, 1, 2)
                                                                for v in ("FedAvg-GRPO", "FedMOA")]
    assert {r["read_back"] for r in res["runs"]} == {"stored.json"}
    assert res["summary"]["not_finished"] == []
    t1 = res["summary"]["table1"]["heter+heter"]
    assert t1["FedMOA"]["global_accuracy"] == pytest.approx(0.44)
    assert t1["FedAvg-GRPO"]["global_accuracy"] == pytest.approx(0.41)
    acc = next(c for c in res["summary"]["claims"] if "global accuracy" in c["claim"] and "Heter+Heter" in c["claim"])
    assert acc["differences"] == pytest.approx([0.03, 0.03, 0.03]) and acc["verdict"] == "holds"


def test_a_stored_row_is_read_back_only_into_its_own_family_and_setup(bench, tmp_path):
    """Homo cells of different families are different cells, and a row made with another λ (an earlier grid's) is
    not this cell's: it stays out and the cell is listed as not finished."""
    runs = [_row("FedAvg-GRPO", 0, 0.40, 0.9, "homo+heter", "gsm"), _row("FedMOA", 0, 0.42, 0.9, "homo+heter", "gsm"),
            _row("FedAvg-GRPO", 0, 0.30, 0.9, "homo+heter", "code"),
            _row("FedMOA", 0, 0.33, 0.9, "homo+heter", "code", lam_rule="fixed", lam=7.0)]
    stored = _stored(tmp_path, runs)
    out = tmp_path / "grid.json"
    bench.main(["--scale", "cpu", "--settings", "homo+heter", "--homo-family", "gsm", "code", "--seeds", "0",
                "--collect-only", "--add-runs", str(stored), "--run-root", str(tmp_path / "none"), "--out", str(out)])
    res = json.loads(out.read_text())
    assert [(r["homo_family"], r["variant"], r["global_accuracy"]) for r in res["runs"]] == [
        ("gsm", "FedAvg-GRPO", 0.40), ("gsm", "FedMOA", 0.42), ("code", "FedAvg-GRPO", 0.30)]
    assert res["summary"]["not_finished"] == [dict(setting="homo+heter", homo_family="code", variant="FedMOA", seed=0)]


def test_a_stored_file_from_another_environment_is_refused_before_anything_is_written(bench, tmp_path):
    stored = _stored(tmp_path, [_row("FedMOA", 0, 0.4, 0.9)], cpu_kernels="AVX512")
    out = tmp_path / "grid.json"
    with pytest.raises(SystemExit, match="stored.json ran with other package versions: torch CPU kernels AVX512"):
        bench.main(["--scale", "cpu", "--settings", "heter+heter", "--seeds", "0", "--collect-only",
                    "--add-runs", str(stored), "--run-root", str(tmp_path / "none"), "--out", str(out)])
    assert not out.exists()


def test_add_runs_needs_collect_only(bench, tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--scale", "cpu", "--add-runs", str(tmp_path / "x.json")])
    assert "--add-runs goes with --collect-only" in capsys.readouterr().err


def test_tuned_values_go_to_the_variants_they_were_tuned_for(bench, tmp_path):
    """--tuned: the chosen learning rate to every variant (the paper keeps hyperparameters identical between its
    arms), the chosen λ (fixed) to every variant with λ on; each in its own run folder; a file that has not chosen
    both is refused, naming it."""
    from experiments.fedmoa_presets import tuned_fields

    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"benchmark": "fedmoa_compare", "summary": {
        "tuning": True, "selected": {"lam": {"value": 100.0}, "learning_rate": {"value": 0.004}}}}))
    assert tuned_fields(str(path), "FedMOA") == ({"lam_rule": "fixed", "lam": 100.0}, {"learning_rate": 0.004},
                                                       "lam=100,lr=0.004")
    assert tuned_fields(str(path), "FedMOA, uniform w_0")[2] == "lam=100,lr=0.004"
    assert tuned_fields(str(path), "λ on, α off")[0]["lam"] == 100.0
    assert tuned_fields(str(path), "FedAvg-GRPO") == ({}, {"learning_rate": 0.004}, "lr=0.004")
    assert tuned_fields(str(path), "λ off, α on") == ({}, {"learning_rate": 0.004}, "lr=0.004")
    ten = tmp_path / "ten.json"  # a variant that names its own λ keeps it, and takes the chosen learning rate
    ten.write_text(json.dumps({"summary": {"selected": {"lam": {"value": 10.0}, "learning_rate": {"value": 0.002}}}}))
    assert tuned_fields(str(ten), "FedMOA")[0]["lam"] == 10.0
    assert tuned_fields(str(ten), "FedMOA, λ=100") == ({"lam_rule": "fixed", "lam": 100.0}, {"learning_rate": 0.002},
                                                          "lam=100,lr=0.002")
    half = tmp_path / "half.json"
    half.write_text(json.dumps({"summary": {"selected": {"lam": {"value": 100.0}}}}))
    with pytest.raises(SystemExit, match="half.json has not chosen both"):
        tuned_fields(str(half), "FedMOA")
    root = tmp_path / "runs"
    assert bench.run_dir_of(root, "cpu", "heter+heter", "FedMOA", 0, tag="lam=100") == \
        root / "cpu" / "heter+heter" / "FedMOA" / "lam=100" / "seed0"
    assert bench.run_dir_of(root, "cpu", "homo+homo", "FedMOA", 1, "gsm") == root / "cpu" / "homo+homo-gsm" / "FedMOA" / "seed1"
    assert bench.run_dir_of(root, "cpu", "homo+homo", "FedMOA", 1, "math") == root / "cpu" / "homo+homo" / "FedMOA" / "seed1"


def test_a_finished_run_made_with_another_config_is_refused(bench, tmp_path):
    from experiments.fedmoa_presets import setting_config

    cfg = setting_config("smoke", "heter+heter", "FedMOA", 0)
    run_dir = tmp_path / "run"
    (run_dir / "checkpoint").mkdir(parents=True)
    (run_dir / "checkpoint" / "state.json").write_text(json.dumps({"round": cfg.rounds}))
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict()))
    assert bench.finished(cfg, run_dir)
    other = setting_config("smoke", "heter+heter", "FedMOA", 0, fedmoa={"lam": 100.0})
    with pytest.raises(SystemExit, match=r"another config \(fields \['fedmoa'\]\)"):
        bench.finished(other, run_dir)
    assert not bench.finished(cfg.replace(rounds=cfg.rounds + 1), run_dir)


def test_a_grid_with_tuned_values_records_them(bench, tmp_path):
    """--tuned end to end through main (nothing finished: every cell is listed as not finished): the result file's
    settings name the tuning file and its choices."""
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"benchmark": "fedmoa_compare", "summary": {
        "tuning": True, "selected": {"lam": {"value": 100.0}, "learning_rate": {"value": 0.004}}}}))
    out = tmp_path / "grid.json"
    bench.main(["--scale", "cpu", "--settings", "heter+heter", "--seeds", "0", "--ablations", "--collect-only",
                "--tuned", str(path), "--run-root", str(tmp_path / "none"), "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["settings"]["tuned"]["lam"]["value"] == 100.0 and res["settings"]["tuned"]["file"] == str(path)
    # the setting's own record holds what FedMOA's runs use, not the scale's untuned defaults
    assert res["settings"]["heter+heter"]["learning_rate"] == 0.004
    assert res["settings"]["heter+heter"]["fedmoa"]["lam"] == 100.0
    assert res["settings"]["heter+heter"]["fedmoa"]["lam_rule"] == "fixed"
    assert [c["variant"] for c in res["summary"]["not_finished"]] == ["FedAvg-GRPO", "λ off, α on", "FedMOA",
                                                                       "λ on, α off", "FedMOA, uniform w_0",
                                                                       "FedMOA, λ=100"]


def test_more_seeds_add_seeds_only_to_the_named_heter_variants_and_their_claims(bench, tmp_path):
    """``--more-seeds``: seeds 3 and 4 for FedAvg-GRPO and FedMOA only; a claim pairs the seeds both arms have (5 for
    Table 1's Heter+Heter row, 3 for an ablation row), and no ablation cell of seeds 3–4 is listed as unfinished."""
    tuning = _tuning(tmp_path)
    runs = [_row(v, s, 0.40 + 0.01 * s + d, 0.5, tuned=tuning) for s in range(5)
            for v, d in (("FedAvg-GRPO", 0.0), ("FedMOA", 0.02))]
    runs += [_row("λ off, α on", s, 0.40 + 0.01 * s + 0.01, 0.5, tuned=tuning) for s in range(3)]
    stored = _stored(tmp_path, runs)
    out = tmp_path / "grid.json"
    bench.main(["--scale", "cpu", "--settings", "heter+heter", "--seeds", "0", "1", "2", "--more-seeds", "3", "4",
                "--ablations", "--variants", "FedAvg-GRPO", "FedMOA", "λ off, α on", "--collect-only",
                "--tuned", str(tuning), "--add-runs", str(stored), "--run-root", str(tmp_path / "none"),
                "--out", str(out)])
    res = json.loads(out.read_text())
    got = sorted((r["variant"], r["seed"]) for r in res["runs"])
    assert got == sorted([(v, s) for s in range(5) for v in ("FedAvg-GRPO", "FedMOA")] +
                         [("λ off, α on", s) for s in range(3)])
    assert res["summary"]["not_finished"] == []
    claims = {c["claim"]: c for c in res["summary"]["claims"]}
    table1 = claims["FedMOA > FedAvg-GRPO on global accuracy (Heter+Heter, all families, ours)"]
    assert table1["seeds"] == [0, 1, 2, 3, 4] and table1["differences"] == pytest.approx([0.02] * 5)
    alpha = claims["α helps: λ off, α on > FedAvg-GRPO on accuracy (Table 2, all families, ours)"]
    assert alpha["seeds"] == [0, 1, 2] and alpha["differences"] == pytest.approx([0.01] * 3)


def test_the_homo_heter_ablation_adds_alpha_alone_on_the_named_families_only(bench, tmp_path):
    """``--homo-heter-ablation code``: "λ off, α on" joins Homo+Heter on the code family, not on the others nor in
    Homo+Homo; its claims pair it with FedAvg-GRPO (α alone) and FedMOA with it (λ added), per family."""
    out = tmp_path / "grid.json"
    bench.main(["--scale", "cpu", "--settings", "homo+homo", "homo+heter", "--homo-family", "math", "code",
                "--homo-heter-ablation", "code", "--seeds", "0", "--collect-only", "--run-root", str(tmp_path / "none"),
                "--out", str(out)])
    cells = [(c["setting"], c["homo_family"], c["variant"]) for c in
             json.loads(out.read_text())["summary"]["not_finished"]]
    assert [c for c in cells if c[2] == "λ off, α on"] == [("homo+heter", "code", "λ off, α on")]
    assert len(cells) == 2 * 2 * 2 + 1
    from experiments import fedmoa_analysis as analysis

    rows = [{"setting": "homo+heter", "homo_family": "code", "seed": s, "variant": v, "lambda_on": v == "FedMOA",
             "lam_rule": "fixed", "mean_w_move": 0.02 if v == "FedMOA" else None, "local_accuracy": acc + 0.01 * s}
            for s in range(3) for v, acc in (("FedAvg-GRPO", 0.30), ("λ off, α on", 0.34), ("FedMOA", 0.35))]
    claims = {c["claim"]: c for c in analysis.paired_claims(rows)}
    alpha = claims["α alone: λ off, α on > FedAvg-GRPO on local accuracy, each client's own model (Homo+Heter, code, ours)"]
    lam = claims["λ added to α: FedMOA > λ off, α on on local accuracy, each client's own model (Homo+Heter, code, ours)"]
    assert alpha["verdict"] == "holds" and alpha["mean_difference"] == pytest.approx(0.04)
    assert lam["verdict"] == "holds" and lam["mean_difference"] == pytest.approx(0.01)
    assert claims["α alone: λ off, α on > FedAvg-GRPO on local accuracy, each client's own model "
                  "(Homo+Heter, math, ours)"]["verdict"] == "not run"


def test_lambda_tuned_at_another_learning_rate_gets_run_folders_of_its_own(bench, tmp_path, capsys):
    """--tune with ``--set learning_rate=…``: FedMOA's λ runs are tagged with that learning rate, so they never meet
    the default-rate tuning runs' folders; FedAvg-GRPO's runs keep their own learning-rate tags."""
    def left_out(*more):
        bench.main(["--scale", "cpu", "--tune", "--collect-only", "--lam-grid", "10", "--lr-grid", "0.004",
                    "--run-root", str(tmp_path / "none"), "--out", str(tmp_path / "t.json"), *more])
        return [line.rsplit("/", 2)[-2] for line in capsys.readouterr().out.splitlines()
                if line.startswith("not finished")]

    assert left_out() == ["lam=10", "lr=0.004"]
    assert left_out("--set", "learning_rate=0.004") == ["lam=10,lr=0.004", "lr=0.004"]
    assert left_out("--set", "learning_rate=0.004", "--lr-grid") == ["lam=10,lr=0.004"]  # λ alone


@pytest.mark.parametrize("name", ["fedmoa_compare_cpu.json", "fedmoa_compare_cpu_homo+homo_tuned_partial.json",
                                  "fedmoa_compare_cpu_cosine_homo+homo_gsm.json"])
def test_a_stored_tuned_grid_records_the_learning_rate_and_lambda_its_fedmoa_runs_used(name):
    """The settings block of a grid run with ``--tuned`` says what FedMOA ran with, as its rows do (it once kept the
    untuned 0.002 and λ = 0.01 while every row ran 0.004 and λ = 10)."""
    grid = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / name).read_text())
    assert "tuned" in grid["settings"]
    for setting, fields in grid["settings"].items():
        if setting == "tuned":
            continue
        runs = [r for r in grid["runs"] if r["setting"] == setting and r["variant"] == "FedMOA"]
        assert runs and {(r["learning_rate"], r["lam"], r["lam_rule"]) for r in runs} == {
            (fields["learning_rate"], fields["fedmoa"]["lam"], fields["fedmoa"]["lam_rule"])}
