import json
import shlex

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

    from fedrl_kit.config import RunConfig, sections

    assert main(["run", "--method", "fedgrpo", "--help"]) == 0
    out = capsys.readouterr().out
    for f in fields(RunConfig):
        if f.name != "sections":
            assert f"\n  {f.name} " in out, f.name
    for section in ("fedgrpo", "evaluator"):
        for f in fields(sections()[section]):
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


def test_a_dry_run_shows_the_path_and_reference_path_turns_the_speed_options_off(capsys):
    assert main(["run", "--dry-run"]) in (0, 2)  # 2 only if the estimate would not fit this machine
    assert "path prompt_pass shared, generation_loop compact, length_buckets 2" in capsys.readouterr().out
    assert main(["run", "--dry-run", "--reference-path"]) in (0, 2)
    assert "path prompt_pass per_row, generation_loop hf, length_buckets 1" in capsys.readouterr().out
    assert main(["run", "--dry-run", "--set", "client_batching=lockstep"]) in (0, 2)
    assert "path prompt_pass per_row, generation_loop hf, length_buckets 2" in capsys.readouterr().out


def _tiny(tiny_dir, *extra):
    """``fedrl run`` arguments for a seconds-long run on the tiny policy."""
    sets = [f"base={tiny_dir}", "n_train=40", "n_test=6", "n_public=4", "n_aux=4", "num_clients=2", "rounds=1",
            "local_steps=1", "prompts_per_step=2", "num_generations=2", "max_new_tokens=4", "eval_samples=1",
            "lora_rank=2", *extra]
    return [x for s in sets for x in ("--set", s)]


def _one_line_error(capsys) -> str:
    """fedrl's one line on stderr (transformers' own "Loading weights" bar may stand above it), no traceback."""
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("fedrl:")]
    assert len(ours) == 1 and "Traceback" not in err and err.rstrip().endswith(ours[0]), err
    return ours[0]


def test_set_method_works_as_method_and_a_field_given_twice_is_named(capsys):
    """`--set method=X` used to end in a TypeError traceback (preset() got two values for 'method')."""
    assert main(["run", "--set", "method=fedsgd"]) == 2
    assert "method must be one of" in _one_line_error(capsys)
    assert main(["run", "--method", "fedgrpo", "--set", "method=fedmoa"]) == 2
    assert "method is given twice, as --method fedgrpo and as --set method=fedmoa" in _one_line_error(capsys)
    assert main(["run", "--world", "arith", "--set", "world=families"]) == 2
    assert "world is given twice" in _one_line_error(capsys)
    assert main(["run", "--set", "preset=full"]) == 2
    assert "preset is picked with --preset" in _one_line_error(capsys)
    assert main(["run", "--set", "method=fedgrpo", "--dry-run"]) in (0, 2)  # 2 only if it would not fit
    assert "method fedgrpo" in capsys.readouterr().out
    assert main(["run", "--method", "fedgrpo", "--set", "method=fedgrpo", "--dry-run"]) in (0, 2)
    assert "method fedgrpo" in capsys.readouterr().out


def test_a_repeated_reward_is_named_before_anything_is_written(tmp_path, capsys):
    run_dir = tmp_path / "r"
    assert main(["run", "--set", "rewards=accuracy,accuracy", "--run-dir", str(run_dir), "--quiet"]) == 2
    assert "rewards must be names without repeats" in _one_line_error(capsys) and not run_dir.exists()


def test_a_run_dir_that_is_a_file_or_holds_a_folder_for_metrics_is_refused_in_one_line(tiny_dir, tmp_path, capsys):
    afile = tmp_path / "notes.txt"
    afile.write_text("keep me")
    assert main(["run", "--run-dir", str(afile), "--quiet", *_tiny(tiny_dir)]) == 2
    assert f"run_dir {afile} is a file, not a folder" in _one_line_error(capsys) and afile.read_text() == "keep me"
    run_dir = tmp_path / "r"
    assert main(["run", "--run-dir", str(run_dir), "--quiet", *_tiny(tiny_dir)]) == 0
    capsys.readouterr()
    (run_dir / "metrics.jsonl").unlink()
    (run_dir / "metrics.jsonl").mkdir()
    before = sorted((p.name, p.stat().st_mtime_ns) for p in run_dir.iterdir())
    assert main(["run", "--run-dir", str(run_dir), "--quiet", *_tiny(tiny_dir, "rounds=2")]) == 2
    assert f"{run_dir / 'metrics.jsonl'} is not a file" in _one_line_error(capsys)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in run_dir.iterdir()) == before  # nothing written


def test_an_encoder_layer_the_model_lacks_is_refused_before_round_0_is_written(tiny_dir, tmp_path, capsys):
    """It used to be refused only in round 1, after round 0's evaluation and checkpoint were written."""
    run_dir = tmp_path / "r"
    assert main(["run", "--method", "fedgrpo", "--run-dir", str(run_dir), "--quiet",
                 *_tiny(tiny_dir, "fedgrpo.encoder_layer=999", "fedgrpo.neighbours=2", "fedgrpo.num_experts=1",
                        "evaluator.sft_steps=1")]) == 2
    err = _one_line_error(capsys)
    assert "fedgrpo.encoder_layer must be in [-1, 2] for this model (2 decoder layers), got 999" in err
    assert not run_dir.exists()


def test_ctrl_c_during_a_run_prints_one_line_on_how_to_resume_and_exits_130(tiny_dir, tmp_path, capsys, monkeypatch):
    from fedrl_kit.runs import Run

    honest = Run.evaluate_global

    def interrupted_in_round_2(self, round):
        if round == 2:
            raise KeyboardInterrupt
        return honest(self, round)

    run_dir = tmp_path / "r"
    argv = ["run", "--run-dir", str(run_dir), "--quiet", *_tiny(tiny_dir, "rounds=2")]
    monkeypatch.setattr(Run, "evaluate_global", interrupted_in_round_2)
    assert main(argv) == 130
    err = _one_line_error(capsys)
    assert f"interrupted; {run_dir} keeps its checkpoint of round 1; to resume from there: fedrl run --run-dir" in err
    monkeypatch.setattr(Run, "evaluate_global", honest)
    assert main(argv) == 0  # the same command resumes
    out = capsys.readouterr().out
    assert "round   1" in out and "round   2" in out

    def interrupted_while_loading(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Run, "build", interrupted_while_loading)  # before any checkpoint: nothing to resume
    assert main(["run", "--run-dir", str(tmp_path / "new"), "--quiet", *_tiny(tiny_dir)]) == 130
    assert "interrupted before" in _one_line_error(capsys) and not (tmp_path / "new").exists()


def test_a_full_disk_during_a_run_prints_one_line_naming_the_file_and_the_command_that_resumes(tiny_dir, tmp_path,
                                                                                             capsys, monkeypatch):
    """np.savez of round 2's global.npz fails for space: one line naming the file, the checkpoint kept and the command
    (it was a 14-40-line traceback; then a line saying "run the same command again" without the command); the same
    command resumes once there is space. An ENOSPC outside a run's checkpoint (here: fedrl export) is one line too."""
    import errno
    import os

    import numpy as np

    real, calls = np.savez, []

    def savez(path, *a, **kw):
        calls.append(path)
        if len(calls) == 3:  # round 2's checkpoint (after round 0's and round 1's)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, *a, **kw)

    run_dir = tmp_path / "r"
    argv = ["run", "--run-dir", str(run_dir), "--quiet", *_tiny(tiny_dir, "rounds=2")]
    monkeypatch.setattr(np, "savez", savez)
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert f"fedrl: error: cannot write {run_dir}/checkpoint.tmp/global.npz (No space left on device); {run_dir} " \
           "keeps its checkpoint of round 1; free some space, then to resume from there: fedrl run --run-dir" in err
    assert err.endswith(shlex.join(argv[1:]))
    monkeypatch.setattr(np, "savez", real)
    assert main(argv) == 0  # the same command resumes from round 1
    assert "round   2" in capsys.readouterr().out
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["round"] for r in records if r["kind"] == "global"] == [0, 1, 2]  # each round once: resumed, not rerun
    assert json.loads((run_dir / "checkpoint" / "state.json").read_text())["round"] == 2

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "peft" / "adapter_model.safetensors"))

    monkeypatch.setattr("fedrl_kit.policy.adapters.save_peft", full)
    assert main(["export", str(run_dir), "--out", str(tmp_path / "peft")]) == 2
    assert _one_line_error(capsys) == (f"fedrl: error: cannot write {tmp_path}/peft/adapter_model.safetensors: No space "
                                       "left on device; free some space and run the command again")


def test_flower_runs_get_the_client_timeout(monkeypatch, tmp_path, capsys):
    """`fedrl run --runtime flower` left every client 3,600 s per message whatever client_timeout said."""
    import fedrl_kit.flower

    calls = []

    def fake_run_on_flower(cfg, run_dir, **kwargs):  # no Ray: what the CLI hands the Flower run
        calls.append((cfg, kwargs))
        return {"records": []}

    monkeypatch.setattr(fedrl_kit.flower, "run_on_flower", fake_run_on_flower)
    assert main(["run", "--runtime", "flower", "--set", "client_timeout=7", "--run-dir", str(tmp_path / "r"),
                 "--quiet"]) == 0
    (cfg, kwargs), = calls
    assert cfg.client_timeout == 7.0 and kwargs["round_timeout"] == 7.0
