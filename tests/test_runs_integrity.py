"""Resume trusts nothing it cannot check: damaged run folders are refused naming the file; one process per folder.

One finished 1-round run is copied for each damage; resuming it to 2 rounds must raise an error that names the
damaged file (and line), or — for the damage a checkpoint swap can leave — resume to the uninterrupted result.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.runs import DamagedRunDir, Interrupted, Run, RunDirInUse, RunLock, load_records


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


@pytest.fixture(scope="module")
def finished(tiny_dir, tmp_path_factory):
    """A run folder checkpointed after round 1 (of 2), and the records of the uninterrupted 2-round run."""
    root = tmp_path_factory.mktemp("integrity")
    cfg = small_config(tiny_dir, rounds=2)
    with pytest.raises(Interrupted):
        Run(cfg, root / "cut", progress=False).run(stop_after=1)
    whole = Run(cfg, root / "whole", progress=False)
    whole.run()
    return root / "cut", cfg, whole


def _copy(finished, tmp_path):
    src, cfg, whole = finished
    dst = tmp_path / "run"
    shutil.copytree(src, dst)
    return dst, cfg, whole


def _lines(path):
    return path.read_text().splitlines(keepends=True)


def _truncate_metrics(d):
    (d / "metrics.jsonl").write_text("".join(_lines(d / "metrics.jsonl")[:-2]))


def _garbage_line(d):
    lines = _lines(d / "metrics.jsonl")
    lines[2] = "this is not json\n"
    (d / "metrics.jsonl").write_text("".join(lines))


def _edit_metric(d):
    lines = _lines(d / "metrics.jsonl")
    rec = json.loads(lines[0])
    rec["pass@1"] = 0.99
    lines[0] = json.dumps(rec) + "\n"
    (d / "metrics.jsonl").write_text("".join(lines))


def _state_round(d):
    state = json.loads((d / "checkpoint" / "state.json").read_text())
    state["round"] = 999
    (d / "checkpoint" / "state.json").write_text(json.dumps(state))


def _config_changed(d):
    saved = json.loads((d / "config.json").read_text())
    saved["learning_rate"] = 0.5  # and the resuming run says 0.5 too: only the checkpoint knows it was 2e-3
    (d / "config.json").write_text(json.dumps(saved))


def _zero_npz(d):
    p = d / "checkpoint" / "global.npz"
    p.write_bytes(b"\0" * p.stat().st_size)


def _truncate_npz(d):
    p = d / "checkpoint" / "global.npz"
    p.write_bytes(p.read_bytes()[:100])


DAMAGES = {
    "metrics.jsonl truncated": (_truncate_metrics, r"metrics\.jsonl has \d+ complete lines"),
    "metrics.jsonl deleted": (lambda d: (d / "metrics.jsonl").unlink(), r"metrics\.jsonl is missing"),
    "metrics.jsonl garbage line": (_garbage_line, r"metrics\.jsonl line 3 is not a JSON record"),
    "metrics.jsonl edited": (_edit_metric, r"metrics\.jsonl's first \d+ lines"),
    "ledger.jsonl deleted": (lambda d: (d / "ledger.jsonl").unlink(), r"ledger\.jsonl is missing"),
    "config.json deleted": (lambda d: (d / "config.json").unlink(), r"config\.json is missing"),
    "state.json round 999": (_state_round, r"state\.json was edited"),
    "global.npz zero-filled": (_zero_npz, r"global\.npz is not the file the checkpoint wrote"),
    "global.npz truncated": (_truncate_npz, r"global\.npz is not the file the checkpoint wrote"),
    "global.npz deleted": (lambda d: (d / "checkpoint" / "global.npz").unlink(), r"global\.npz is missing"),
    # without a checkpoint the run used to start again from round 0 and overwrite metrics.jsonl and ledger.jsonl
    "state.json deleted": (lambda d: (d / "checkpoint" / "state.json").unlink(),
                           r"checkpoint/state\.json is missing, but .*metrics\.jsonl records rounds up to 1"),
    "checkpoint/ deleted": (lambda d: shutil.rmtree(d / "checkpoint"),
                            r"checkpoint is missing, but .*metrics\.jsonl records rounds up to 1"),
    "metrics.jsonl a folder": (lambda d: ((d / "metrics.jsonl").unlink(), (d / "metrics.jsonl").mkdir()),
                               r"metrics\.jsonl is not a file"),
    "checkpoint/ a file": (lambda d: (shutil.rmtree(d / "checkpoint"), (d / "checkpoint").write_text("x")),
                           r"checkpoint is not a folder"),
}


def _snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else None) for p in sorted(d.rglob("*"))}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_run_folder_is_refused_naming_the_file(finished, tmp_path, damage):
    d, cfg, _ = _copy(finished, tmp_path)
    hurt, message = DAMAGES[damage]
    hurt(d)
    before = _snapshot(d)
    with pytest.raises(DamagedRunDir, match=message) as refused:
        Run(cfg, d, progress=False).run()
    assert "\n" not in str(refused.value)  # one line
    assert _snapshot(d) == before  # nothing written, nothing lost


def test_a_run_killed_before_its_first_checkpoint_starts_again(finished, tmp_path):
    """Only round 0's evaluation and no checkpoint: nothing of value to lose, so the run starts from round 0."""
    d, cfg, whole = _copy(finished, tmp_path)
    first = _lines(d / "metrics.jsonl")[0]
    assert json.loads(first)["round"] == 0
    shutil.rmtree(d / "checkpoint")
    (d / "metrics.jsonl").write_text(first)
    (d / "ledger.jsonl").write_text("")
    assert _strip(Run(cfg, d, progress=False).run()) == _strip(whole.records)


def test_an_edited_config_json_is_refused_even_when_it_matches_the_new_config(finished, tmp_path):
    d, cfg, _ = _copy(finished, tmp_path)
    _config_changed(d)
    with pytest.raises(DamagedRunDir, match=r"config\.json was changed"):
        Run(cfg.replace(learning_rate=0.5), d, progress=False).run()


def test_a_checkpoint_written_before_checksums_is_still_read_safely(finished, tmp_path):
    """state.json without ``format`` (an older run folder): no checksums, but a bad npz or line is named, never unpickled."""
    d, cfg, _ = _copy(finished, tmp_path)
    state = json.loads((d / "checkpoint" / "state.json").read_text())
    legacy = {k: state[k] for k in ("round", "n_records", "n_ledger")}
    (d / "checkpoint" / "state.json").write_text(json.dumps(legacy))
    _zero_npz(d)
    with pytest.raises(DamagedRunDir, match=r"global\.npz is not a readable adapter"):
        Run(cfg, d, progress=False).run()
    legacy["round"] = 999
    (d / "checkpoint" / "state.json").write_text(json.dumps(legacy))
    with pytest.raises(DamagedRunDir, match="says round 999"):
        Run(cfg, d, progress=False).run()


def test_a_run_made_with_other_cpu_kernels_is_not_resumed_or_read_back(finished, tmp_path, monkeypatch):
    """AVX2 and AVX-512 kernels round floats differently: a checkpoint says which ran, and a process running the
    other is refused before anything is written (the same seed would otherwise continue as a different run)."""
    import fedrl_kit.runs as runs
    from fedrl_kit.seeding import cpu_kernels

    d, cfg, whole = _copy(finished, tmp_path)
    assert json.loads((d / "checkpoint" / "state.json").read_text())["cpu_kernels"] == cpu_kernels()
    before = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    monkeypatch.setattr(runs, "cpu_kernels", lambda: "OTHER")
    with pytest.raises(ValueError, match=rf"{d}.* computed with torch's {cpu_kernels()} CPU kernels .* runs OTHER"):
        Run(cfg, d, progress=False).run()
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()} == before
    monkeypatch.undo()
    assert _strip(Run(cfg, d, progress=False).run()) == _strip(whole.records)  # the same kernels resume


def test_recorded_kernels_read_the_checkpoint_and_say_when_it_has_none(finished, tmp_path):
    from fedrl_kit.runs import recorded_kernels
    from fedrl_kit.seeding import cpu_kernels

    d, _, _ = _copy(finished, tmp_path)
    assert recorded_kernels(d) == cpu_kernels()
    state = json.loads((d / "checkpoint" / "state.json").read_text())
    del state["cpu_kernels"]
    (d / "checkpoint" / "state.json").write_text(json.dumps(state))
    assert recorded_kernels(d) == "not recorded"
    with pytest.raises(FileNotFoundError, match="holds no checkpoint"):
        recorded_kernels(tmp_path / "empty")


def test_a_checkpoint_records_the_cpu_model_so_summary_rows_can_say_which_cpu_made_them(finished, tmp_path):
    from fedrl_kit.runs import recorded_cpu_model
    from fedrl_kit.seeding import cpu_model

    d, _, _ = _copy(finished, tmp_path)
    assert recorded_cpu_model(d) == cpu_model() and cpu_model()  # a non-empty name, this machine's
    state = json.loads((d / "checkpoint" / "state.json").read_text())
    del state["cpu_model"]  # a checkpoint written before the model was recorded
    (d / "checkpoint" / "state.json").write_text(json.dumps(state))
    assert recorded_cpu_model(d) == "not recorded"


def test_a_kill_between_the_renames_of_a_checkpoint_swap_resumes_to_the_same_end(finished, tmp_path):
    d, cfg, whole = _copy(finished, tmp_path)
    os.replace(d / "checkpoint", d / "checkpoint.old")  # the old checkpoint moved aside, the new one not yet in
    (d / "checkpoint.tmp").mkdir()  # and a half-written new one
    resumed = Run(cfg, d, progress=False)
    resumed.run()
    assert _strip(load_records(d)) == _strip(whole.records)
    assert all(np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])
               for k in whole.server.global_state)
    assert sorted(p.name for p in d.iterdir() if p.name.startswith("checkpoint")) == ["checkpoint"]


def test_extra_lines_of_a_round_cut_short_are_dropped_and_the_run_ends_as_uninterrupted(finished, tmp_path):
    d, cfg, whole = _copy(finished, tmp_path)
    with open(d / "metrics.jsonl", "a") as f:
        f.write('{"kind": "client", "round": 2, "client": "client_0"}\n{"kind": "comm", "ro')  # killed mid-round 2
    with open(d / "ledger.jsonl", "a") as f:
        f.write('{"kind": "fit"}\n')
    Run(cfg, d, progress=False).run()
    assert _strip(load_records(d)) == _strip(whole.records)
    assert (d / "ledger.jsonl").read_text() == (whole.run_dir / "ledger.jsonl").read_text()


def test_a_second_run_into_a_folder_in_use_is_refused_and_a_stale_lock_is_not(finished, tmp_path):
    d, cfg, _ = _copy(finished, tmp_path)
    held = RunLock(d).acquire()  # another process running there
    try:
        with pytest.raises(RunDirInUse, match=rf"in use by pid {os.getpid()}"):
            Run(cfg, d, progress=False).run()
    finally:
        held.release()
    # a lock file left by a process killed with -9: no process holds it any more
    child = subprocess.run([sys.executable, "-c", "import os, sys; sys.path.insert(0, os.getcwd()); "
                            "from fedrl_kit.runs import RunLock; RunLock(sys.argv[1]).acquire(); os._exit(0)", str(d)],
                           cwd=Path(__file__).resolve().parents[1], check=True)
    assert child.returncode == 0 and "pid" in (d / "lock").read_text()
    recs = Run(cfg, d, progress=False).run()
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]
    assert not (d / "lock").exists()


def test_load_records_names_the_line_it_cannot_read(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"kind": "global"}\n{oops\n')
    with pytest.raises(DamagedRunDir, match=r"metrics\.jsonl line 2"):
        load_records(tmp_path)
