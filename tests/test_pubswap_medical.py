"""PubSwap's medical setting end to end: a MedQA-format fixture through `fedrl run --world medqa`."""

import json
from pathlib import Path

from fedrl_kit.cli import main
from fedrl_kit.config import preset
from fedrl_kit.rewards.mcq import mcq_accuracy_reward
from fedrl_kit.runs import load_records
from fedrl_kit.world.registry import build_world

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "medqa"


def test_the_fixture_is_read_as_medqa_rows_the_mcq_reward_scores():
    cfg = preset("quick", world="medqa", dataset=str(FIXTURE), n_train=24, n_test=6, n_public=6, n_aux=0)
    world = build_world(cfg)
    assert (len(world.train), len(world.test), len(world.public)) == (24, 6, 6)
    assert cfg.rewards == ("mcq_accuracy", "format") and world.accuracy_reward == "mcq_accuracy"
    row = world.test[0]
    assert row["answer"] in "ABCD" and "\nA. " in row["prompt"] and "\nD. " in row["prompt"]
    wrong = next(x for x in "ABCD" if x != row["answer"])
    scores = mcq_accuracy_reward([row["prompt"]] * 2, [f"<answer>{row['answer']}</answer>", f"<answer>{wrong}</answer>"],
                                 answer=[row["answer"]] * 2)
    assert scores == [1.0, 0.0]
    # the server's test and public problems come from the test split, the clients' from the training split
    test_questions = {json.loads(line)["question"] for line in (FIXTURE / "test.jsonl").read_text().splitlines()}
    assert all(p.split("\n")[0] in test_questions for p in list(world.test["prompt"]) + list(world.public["prompt"]))
    assert not any(p.split("\n")[0] in test_questions for p in world.train["prompt"])


def test_fedrl_run_world_medqa_runs_pubswap_on_the_fixture(tiny_dir, tmp_path, capsys):
    run_dir = tmp_path / "med"
    argv = ["run", "--method", "pubswap_balanced", "--world", "medqa", "--dataset", str(FIXTURE), "--quiet",
            "--run-dir", str(run_dir), "--set", f"base={tiny_dir}"]
    for kv in ("n_train=24", "n_test=6", "n_public=6", "n_aux=0", "num_clients=2", "rounds=1", "local_steps=2",
               "prompts_per_step=2", "num_generations=2", "max_new_tokens=8", "eval_samples=1", "lora_rank=2"):
        argv += ["--set", kv]
    assert main(argv) == 0
    assert "run directory" in capsys.readouterr().out
    cfg = json.loads((run_dir / "config.json").read_text())
    assert (cfg["world"], cfg["method"], cfg["aggregator"], cfg["weight_decay"]) == ("medqa", "pubswap_balanced",
                                                                                    "fedit", 0.01)
    records = load_records(run_dir)
    evals = [r for r in records if r["kind"] == "global"]
    assert [r["round"] for r in evals] == [0, 1] and all(r["n"] == 6 for r in evals)
    clients = [r for r in records if r["kind"] == "client"]
    assert len(clients) == 2 and all("replacement_fraction" in r for r in clients)
