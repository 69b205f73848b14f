"""Runs end to end on an untrained tiny policy: determinism, resume, client failures, central and zero-shot."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import interrupted_and_resumed, small_config
from fedrl_kit.runs import Run, load_records


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_same_seed_same_run_bit_for_bit(tiny_dir):
    a, b = Run(small_config(tiny_dir), progress=False), Run(small_config(tiny_dir), progress=False)
    ra, rb = _strip(a.run()), _strip(b.run())
    assert ra == rb
    for k in a.server.global_state:
        assert np.array_equal(a.server.global_state[k], b.server.global_state[k])
    c = Run(small_config(tiny_dir, seed=1), progress=False)
    c.run()
    assert any(not np.array_equal(a.server.global_state[k], c.server.global_state[k]) for k in a.server.global_state)


@pytest.mark.parametrize("reset_optimizer", [True, False])
def test_interrupted_run_resumes_to_the_same_end(tiny_dir, tmp_path, reset_optimizer):
    whole, resumed = interrupted_and_resumed(small_config(tiny_dir, rounds=3, reset_optimizer=reset_optimizer),
                                             tmp_path)
    for k in whole.server.global_state:
        assert np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))
    ledger = lambda d: (d / "ledger.jsonl").read_text()  # noqa: E731
    assert ledger(tmp_path / "whole") == ledger(tmp_path / "cut")


def test_resume_refuses_a_different_config(tiny_dir, tmp_path):
    Run(small_config(tiny_dir, rounds=1), tmp_path, progress=False).run()
    with pytest.raises(ValueError, match="learning_rate"):
        Run(small_config(tiny_dir, rounds=1, learning_rate=0.5), tmp_path, progress=False).run()


def test_resume_accepts_a_config_written_before_a_field_existed(tiny_dir, tmp_path, monkeypatch):
    from fedrl_kit.config import RunConfig

    to_dict = RunConfig.to_dict
    # a version without drift tracing writes config.json, and its checkpoint's digest, without the field
    monkeypatch.setattr(RunConfig, "to_dict",
                        lambda self: {k: v for k, v in to_dict(self).items() if k != "trace_drift"})
    Run(small_config(tiny_dir, rounds=1), tmp_path, progress=False).run()
    assert "trace_drift" not in json.loads((tmp_path / "config.json").read_text())
    monkeypatch.setattr(RunConfig, "to_dict", to_dict)  # today's version resumes it
    recs = Run(small_config(tiny_dir, rounds=2), tmp_path, progress=False).run()
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]
    with pytest.raises(ValueError, match="trace_drift"):  # but a changed value is still refused
        Run(small_config(tiny_dir, rounds=3, trace_drift=True), tmp_path, progress=False).run()


def test_resume_accepts_a_folder_written_before_a_settings_section_was_added(tiny_dir, tmp_path, monkeypatch):
    """Adding a method's settings block made every checkpointed folder "damaged: config.json was changed after the
    checkpoint": the digest filled the fields config.json lacked from today's defaults, so it changed with the code."""
    from fedrl_kit.config import RunConfig

    Run(small_config(tiny_dir, rounds=1), tmp_path, progress=False).run()  # before the section existed
    to_dict = RunConfig.to_dict
    monkeypatch.setattr(RunConfig, "to_dict", lambda self: {**to_dict(self), "newmethod": {"knob": 1}})
    recs = Run(small_config(tiny_dir, rounds=2), tmp_path, progress=False).run()
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]
    assert json.loads((tmp_path / "config.json").read_text())["newmethod"] == {"knob": 1}
    recs = Run(small_config(tiny_dir, rounds=3), tmp_path, progress=False).run()  # and its own checkpoint resumes
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2, 3]
    (tmp_path / "config.json").write_text((tmp_path / "config.json").read_text().replace('"knob": 1', '"knob": 2'))
    with pytest.raises(ValueError, match="newmethod.knob"):  # a changed value of the new section is still refused
        Run(small_config(tiny_dir, rounds=4), tmp_path, progress=False).run()


def test_a_failing_client_is_dropped_and_recorded(tiny_dir):
    run = Run(small_config(tiny_dir, fail_client="client_1@2"), progress=False)
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert len(failures) == 1 and failures[0]["client"] == "client_1" and failures[0]["round"] == 2
    assert "injected failure" in failures[0]["error"] and failures[0]["message"] == "fit"
    clients_round2 = {r["client"] for r in recs if r["kind"] == "client" and r["round"] == 2}
    assert clients_round2 == {"client_0", "client_2"}
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]


def test_fedavg_moves_lora_factors_and_sizes_in_ledger():
    # the committed base, not the untrained tiny policy: its rewards are mixed, so advantages are not all zero
    base = str(Path(__file__).resolve().parents[1] / "data" / "base")
    run = Run(small_config(base, rounds=1, prompts_per_step=4, num_generations=8, max_new_tokens=16), progress=False)
    start = {k: v.copy() for k, v in run.build().server.global_state.items()}
    run.run()
    assert any(not np.array_equal(start[k], run.server.global_state[k]) for k in start)
    adapter_bytes = sum(v.nbytes for v in start.values())
    by = run.runtime.ledger.bytes_by_kind()
    assert by[("fit", "down")] >= 3 * adapter_bytes and by[("fit_result", "up")] >= 3 * adapter_bytes


def test_central_and_zero_shot(tiny_dir):
    central = Run(small_config(tiny_dir, method="central_grpo", rounds=1), progress=False)
    recs = central.run()
    assert {r["client"] for r in recs if r["kind"] == "client"} == {"central"}
    assert central.clients["central"].num_examples == 80
    zs = Run(small_config(tiny_dir, method="zero_shot"), progress=False).run()
    assert [r["kind"] for r in zs] == ["global"]


def test_optimizer_state_lives_for_a_round_not_a_step(tiny_dir):
    """reset_optimizer resets Adam at round start; within a round the τ steps share one optimiser."""
    run = Run(small_config(tiny_dir, rounds=1, local_steps=3), progress=False).build()
    client = run.clients["client_0"]
    seen = []
    original = client._optimizer

    def spy(params, *when):
        opt = original(params, *when)
        seen.append(id(opt))
        return opt

    client._optimizer = spy
    run.run()
    assert len(seen) == 3 and len(set(seen)) == 1
    assert client.optimizer is None  # released after the round when reset_optimizer is on


def test_a_reused_policy_starts_each_run_from_the_seeds_fresh_adapter(tiny_dir):
    # a notebook that runs several methods on one loaded policy must not chain them: each run starts
    # from its seed's initial adapter, not from the global adapter the previous run left behind
    first = Run(small_config(tiny_dir, rounds=1), progress=False)
    a = first.run()
    again = Run(small_config(tiny_dir, rounds=1), progress=False, policy=first.policy).run()
    assert _strip(again) == _strip(a)


def test_initial_state_is_what_attach_lora_made_and_leaves_the_rng_alone(tiny_dir):
    import torch

    from fedrl_kit.policy.adapters import initial_state
    from fedrl_kit.policy.engine import Policy

    policy = Policy.load(tiny_dir, lora_rank=2, seed=5)
    made = policy.get_state("global")
    policy.set_state("global", {k: v + 1.0 for k, v in made.items()})  # as if it had trained
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    again = initial_state(policy.model, 5)
    assert torch.equal(torch.rand(3), expected_next)
    assert all(np.array_equal(made[k], again[k]) for k in made)
    other = initial_state(policy.model, 6)
    assert any(not np.array_equal(made[k], other[k]) for k in made)
    assert list(policy.model.peft_config) == ["global"] and policy.model.active_adapter == "global"


def test_fresh_run_dir_empties_only_a_run_folder_this_toolkit_wrote_and_no_live_one(tiny_dir, tmp_path):
    """The quickstart notebook's "start afresh": it deleted whatever folder it was given (a user's file was lost)."""
    from fedrl_kit.runs import RUN_MARKER, RunDirInUse, RunLock, fresh_run_dir

    mine = tmp_path / "mine"  # a user's folder, not a run folder: nothing in it may go
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match=rf"not a run folder \(it has no {RUN_MARKER}") as refused:
        fresh_run_dir(mine)
    assert "\n" not in str(refused.value) and (mine / "thesis.tex").read_text() == "years of work"
    afile = tmp_path / "notes.txt"
    afile.write_text("keep me")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        fresh_run_dir(afile)
    assert afile.read_text() == "keep me"

    run_dir = tmp_path / "run"
    Run(small_config(tiny_dir, rounds=1), run_dir, progress=False).run()
    (run_dir / "figures").mkdir()  # what `fedrl plot` and the notebooks add
    (run_dir / "figures" / "pass_at_1.html").write_text("<html/>")
    (run_dir / "data.csv").write_text("a user's file put into a run folder")

    held = RunLock(run_dir).acquire()  # a live run in the folder
    try:
        with pytest.raises(RunDirInUse, match="in use by pid"):
            fresh_run_dir(run_dir)
    finally:
        held.release()
    assert (run_dir / "checkpoint" / "state.json").exists()

    assert fresh_run_dir(run_dir) == run_dir  # the run's files go; what it did not write stays
    assert sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")) == \
        ["data.csv", "figures", "figures/pass_at_1.html"]
    assert fresh_run_dir(tmp_path / "new") == tmp_path / "new" and not (tmp_path / "new").exists()
    recs = Run(small_config(tiny_dir, rounds=1), run_dir, progress=False).run()  # starts at round 0 again
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1]


def test_a_refused_run_leaves_no_folder_it_made(tiny_dir, tmp_path):
    run_dir = tmp_path / "a" / "b"
    with pytest.raises(ValueError, match="client_9"):  # refused in build, after the folder was made and locked
        Run(small_config(tiny_dir, fail_client="client_9@1"), run_dir, progress=False).run()
    assert not (tmp_path / "a").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(ValueError, match="client_9"):
        Run(small_config(tiny_dir, fail_client="client_9@1"), existing, progress=False).run()
    assert existing.is_dir() and not list(existing.iterdir())  # a folder it did not make stays
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(ValueError, match=r"run_dir .*file is a file, not a folder"):
        Run(small_config(tiny_dir), afile, progress=False).run()
    with pytest.raises(ValueError, match=r"cannot make the run folder .*file/run"):
        Run(small_config(tiny_dir), afile / "run", progress=False).run()
    assert afile.read_text() == "x"
