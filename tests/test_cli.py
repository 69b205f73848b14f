import json

from fedrl_kit.cli import main


def test_cli_run_writes_a_run_directory(tiny_dir, tmp_path, capsys):
    rc = main(["run", "--method", "fedavg_grpo", "--run-dir", str(tmp_path / "r"), "--quiet",
               "--set", f"base={tiny_dir}", "--set", "n_train=40", "--set", "n_test=7", "--set", "num_clients=2",
               "--set", "rounds=1", "--set", "local_steps=1", "--set", "prompts_per_step=2",
               "--set", "num_generations=2", "--set", "max_new_tokens=4", "--set", "eval_samples=1"])
    assert rc == 0
    assert json.loads((tmp_path / "r" / "config.json").read_text())["num_clients"] == 2
    assert "pass@1" in capsys.readouterr().out


def test_cli_bad_value_is_a_clear_error(capsys):
    assert main(["run", "--set", "num_clients=0"]) == 2
    assert "num_clients must be in [1, 1000]" in capsys.readouterr().err
    assert main(["run", "--set", "nope=1"]) == 2
    assert "unknown config field 'nope'" in capsys.readouterr().err


def test_full_preset_without_its_model_stops_in_one_line_before_writing_anything(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_dir = tmp_path / "full"
    assert main(["run", "--preset", "full", "--run-dir", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Qwen/Qwen2.5-1.5B-Instruct" in err and "--set base=PATH" in err
    assert "Traceback" not in err and not run_dir.exists()


def test_missing_local_model_folder_is_named_as_a_folder(tmp_path, capsys):
    missing = tmp_path / "models" / "nothing-here"
    assert main(["run", "--set", f"base={missing}", "--run-dir", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(missing) in err and "folder" in err


def test_full_preset_world_fits_the_embedded_world():
    from fedrl_kit.config import preset
    from fedrl_kit.world.registry import build_world

    world = build_world(preset("full"))
    assert len(world.train) == 2000 and len(world.test) == 500 and len(world.public) == 500


def test_run_help_lists_every_field_of_the_run_and_of_the_method(capsys):
    from dataclasses import fields

    from fedrl_kit.config import RunConfig, SECTIONS

    assert main(["run", "--method", "fedgrpo", "--help"]) == 0
    out = capsys.readouterr().out
    for f in fields(RunConfig):
        if f.name not in SECTIONS:
            assert f"\n  {f.name} " in out, f.name
    for section in ("fedgrpo", "evaluator"):
        for f in fields(SECTIONS[section]):
            assert f"{section}.{f.name} " in out
    assert "fedmoa.setting" not in out  # only the method's own sections
    assert main(["run", "--method", "fedmoa", "--help"]) == 0
    assert "fedmoa.lambda_on " in capsys.readouterr().out


def test_set_names_the_field_that_does_not_parse(capsys):
    assert main(["run", "--set", "rounds=two"]) == 2
    assert "rounds must be an integer, got 'two'" in capsys.readouterr().err
    assert main(["run", "--method", "fedgrpo", "--set", "fedgrpo.num_experts=9"]) == 2
    assert "fedgrpo.num_experts must be an integer in [1, num_clients = 4], got 9" in capsys.readouterr().err


def test_report_plot_eval_and_export_work_on_a_run_folder(tiny_dir, tmp_path, capsys):
    run_dir = tmp_path / "r"
    assert main(["run", "--set", f"base={tiny_dir}", "--set", "rounds=1", "--set", "num_clients=2", "--set", "n_train=40",
                 "--set", "n_test=6", "--set", "local_steps=1", "--set", "prompts_per_step=2", "--set",
                 "num_generations=2", "--set", "lora_rank=2", "--run-dir", str(run_dir), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    assert "method      fedavg_grpo" in capsys.readouterr().out
    assert main(["plot", str(run_dir), "--no-png"]) == 0
    assert (run_dir / "figures" / "pass_at_1.html").exists()
    assert main(["eval", "--run-dir", str(run_dir), "--n-test", "4"]) == 0  # no base restated: the run's own
    assert '"pass@1"' in capsys.readouterr().out
    assert main(["export", str(run_dir)]) == 0
    assert (run_dir / "peft_global" / "adapter_model.safetensors").exists()
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "no run folder at" in capsys.readouterr().err


def test_a_second_run_into_a_folder_in_use_stops_in_one_line(tmp_path, capsys):
    import os

    from fedrl_kit.runs import RunLock

    held = RunLock(tmp_path).acquire()  # as `fedrl run` in another terminal would
    try:
        assert main(["run", "--run-dir", str(tmp_path), "--quiet"]) == 2
    finally:
        held.release()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"in use by pid {os.getpid()}" in err and "Traceback" not in err


def test_faster_sets_the_speed_options_and_a_dry_run_shows_them(capsys):
    assert main(["run", "--dry-run", "--faster"]) in (0, 2)  # 2 only if the estimate would not fit this machine
    assert "prompt_pass shared, generation_loop compact, length_buckets 2" in capsys.readouterr().out
    assert main(["run", "--dry-run"]) in (0, 2)
    assert "prompt_pass per_row, generation_loop hf, length_buckets 1" in capsys.readouterr().out
