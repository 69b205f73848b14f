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
