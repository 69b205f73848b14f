"""A run folder is recognised by what only a run writes, a fresh start deletes only what the run wrote, and the lock
on a live run's folder survives the deletion of its ``lock`` file.

Each test replays an attack that used to succeed: the quickstart notebook, pointed at a user's folder holding a
``config.json`` of their own, overwrote it and deleted their ``figures/``; a second run started on a live run's folder
once its ``lock`` file was deleted, and the first then crashed releasing a lock it no longer owned.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import small_config
from fedrl_kit.notebook import NotebookStop, start_run_dir
from fedrl_kit.runs import RUN_MARKER, Run, RunDirInUse, RunLock, fresh_run_dir

PNG = b"\x89PNG\r\n\x1a\n a user's plot"


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def _users_project(tmp_path) -> Path:
    """The folder of the report: a config.json of the user's own and a plot in figures/."""
    p = tmp_path / "project"
    (p / "figures").mkdir(parents=True)
    (p / "config.json").write_text(json.dumps({"name": "my project"}))
    (p / "figures" / "my_plot.png").write_bytes(PNG)
    return p


def test_the_notebooks_fresh_start_refuses_a_users_folder_with_a_config_json_in_one_line(tmp_path):
    """The notebook's `start_run_dir` (what `papermill … -p run_dir P` reaches) used to take any config.json as a run
    folder: it deleted figures/my_plot.png and the run then overwrote config.json."""
    p = _users_project(tmp_path)
    before = _snapshot(p)
    with pytest.raises(NotebookStop) as refused:
        start_run_dir(p)
    msg = str(refused.value)
    assert "\n" not in msg and RUN_MARKER in msg and "config.json" in msg and str(p) in msg
    assert _snapshot(p) == before


@pytest.mark.parametrize("name", ["config.json", "metrics.jsonl", "ledger.jsonl"])
def test_a_run_refuses_to_overwrite_a_file_of_a_runs_name_no_run_wrote(tiny_dir, tmp_path, name):
    """`Run(cfg, P).run()` on a user's folder holding a file by one of a run's names: refused in one line naming the
    file, before anything is written (a metrics.jsonl of the user's own used to be overwritten from round 0)."""
    p = _users_project(tmp_path)
    if name != "config.json":
        (p / "config.json").unlink()
        (p / name).write_text('{"my": "own records"}\n')
    before = _snapshot(p)
    with pytest.raises(ValueError, match=rf"{name} was not written by a run") as refused:
        Run(small_config(tiny_dir, rounds=1), p, progress=False).run()
    assert "\n" not in str(refused.value)
    assert _snapshot(p) == before


def test_a_fresh_start_deletes_what_the_run_wrote_and_keeps_a_users_files_beside_it(tiny_dir, tmp_path):
    """A real run's folder, into which the user put a plot of their own (in figures/, beside the toolkit's) and notes:
    a fresh start deletes the run's files and keeps every file the run did not write."""
    d = tmp_path / "run"
    cfg = small_config(tiny_dir, rounds=1, trace_drift=True, trace_tensors=True)
    Run(cfg, d, progress=False).run()
    assert json.loads((d / RUN_MARKER).read_text())["written_by"] == "fedrl-kit"
    assert any((d / "drift_tensors").rglob("*.npz"))
    (d / "figures").mkdir()
    (d / "figures" / "my_plot.png").write_bytes(PNG)
    (d / "drift_tensors" / "my_notes.txt").write_text("mine")
    (d / "notes.txt").write_text("mine too")
    assert fresh_run_dir(d) == d
    assert _snapshot(d) == {"drift_tensors": None, "drift_tensors/my_notes.txt": b"mine", "figures": None,
                            "figures/my_plot.png": PNG, "notes.txt": b"mine too"}
    recs = Run(small_config(tiny_dir, rounds=1), d, progress=False).run()  # and a run starts there from round 0
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1]
    assert (d / "figures" / "my_plot.png").read_bytes() == PNG


def test_a_run_folder_from_before_the_marker_is_still_recognised_by_its_checkpoint(tiny_dir, tmp_path):
    d = tmp_path / "old"
    Run(small_config(tiny_dir, rounds=1), d, progress=False).run()
    (d / RUN_MARKER).unlink()  # as a run of an earlier version left it
    fresh_run_dir(d)
    assert not any(d.iterdir())
    d.mkdir(exist_ok=True)
    (d / "checkpoint").mkdir()
    (d / "checkpoint" / "state.json").write_text(json.dumps({"format": 2, "round": 1, "sha256": "forged"}))
    with pytest.raises(ValueError, match="was not written by a run"):
        fresh_run_dir(d)  # a state.json whose checksum does not hold proves nothing
    assert (d / "checkpoint" / "state.json").exists()


HOLDER = """
import sys, warnings
from fedrl_kit.runs import RunLock
warnings.simplefilter("always")
lock = RunLock(sys.argv[1]).acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""


def _holder(d: Path) -> subprocess.Popen:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(d)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=root, env=env)
    assert proc.stdout.readline().strip() == "held", proc.stderr.read()
    return proc


@pytest.mark.parametrize("attack", ["deleted", "replaced"])
def test_deleting_a_live_runs_lock_file_does_not_free_its_folder(tiny_dir, tmp_path, attack):
    """Another process holds the folder; its `lock` file is deleted (or replaced by another file). A second run is
    still refused, writing nothing; the holder then ends without a traceback, says its lock file went, and removes
    no lock file it did not write."""
    d = tmp_path / "run"
    d.mkdir()
    holder = _holder(d)
    try:
        (d / "lock").unlink()
        if attack == "replaced":
            (d / "lock").write_text("pid 1 on elsewhere\n")
        with pytest.raises(RunDirInUse, match="is in use by"):
            RunLock(d).acquire()
        before = _snapshot(d)
        with pytest.raises(RunDirInUse):
            Run(small_config(tiny_dir, rounds=1), d, progress=False).run()
        assert _snapshot(d) == before
    finally:
        out, err = holder.communicate("\n", timeout=60)
    assert holder.returncode == 0 and "Traceback" not in err, err
    assert out.strip() == "released" and "lock" in err and "deleted or replaced" in err
    assert ((d / "lock").read_text() == "pid 1 on elsewhere\n") if attack == "replaced" else not (d / "lock").exists()


def test_a_run_whose_folder_is_replaced_under_it_stops_instead_of_writing_into_the_new_one(tmp_path):
    """`rm -r` of a live run's folder and a new folder at its path: the holder's next check refuses to go on, so
    two runs never write into one folder (each would write checkpoint.tmp there)."""
    d = tmp_path / "run"
    d.mkdir()
    lock = RunLock(d).acquire()
    lock.check()  # its own folder: goes on
    d.rename(tmp_path / "moved")
    d.mkdir()
    other = RunLock(d).acquire()  # the new folder is free
    try:
        with pytest.raises(RunDirInUse, match="deleted or replaced while this run was writing it") as stopped:
            lock.check()
        assert "\n" not in str(stopped.value)
    finally:
        other.release()
        with pytest.warns(UserWarning, match="deleted or replaced"):  # its folder's lock file is not its own
            lock.release()


def test_a_lock_that_cannot_be_written_leaves_no_folder_and_no_empty_lock(tiny_dir, tmp_path, monkeypatch):
    """A full disk while the lock names its holder: one line, and the new folder is removed (it used to stay behind
    holding an empty `lock`)."""
    import errno

    real_write = os.write

    def full(fd, data):
        if b"pid " in bytes(data[:4]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    d = tmp_path / "new" / "run"
    t0 = time.time()
    with pytest.raises(ValueError, match=r"cannot write .*lock: No space left on device") as refused:
        Run(small_config(tiny_dir, rounds=1), d, progress=False).run()
    assert "\n" not in str(refused.value) and time.time() - t0 < 60
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("what", ["adapter", "optimizers"])
def test_a_full_disk_mid_run_is_one_line_with_the_round_to_resume_from(tiny_dir, tmp_path, monkeypatch, what):
    """The disk fills while round 1's checkpoint is written: np.savez's OSError, or torch.save's RuntimeError of its
    zip writer (both used to end the run in a 14–40-line traceback). One line names the reason and the checkpoint the
    folder keeps; once there is space again the same run resumes and finishes."""
    import errno

    import numpy as np
    import torch

    cfg = small_config(tiny_dir, rounds=2, reset_optimizer=False)
    calls = []
    if what == "adapter":
        real = np.savez

        def savez(path, *a, **kw):
            calls.append(path)
            if len(calls) == 2:  # round 1's checkpoint
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(path, *a, **kw)

        monkeypatch.setattr(np, "savez", savez)
    else:
        real = torch.save

        def save(obj, path, *a, **kw):
            calls.append(path)
            if len(calls) == 2:
                raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")
            return real(obj, path, *a, **kw)

        monkeypatch.setattr(torch, "save", save)
    d = tmp_path / "run"
    with pytest.raises(ValueError) as failed:
        Run(cfg, d, progress=False).run()
    msg = str(failed.value)
    assert "\n" not in msg and "keeps its checkpoint of round 0" in msg and "run it again" in msg
    assert msg.startswith(f"cannot write {d}/checkpoint.tmp/{'global.npz' if what == 'adapter' else 'optimizers.pt'} (")
    assert ("No space left on device" if what == "adapter" else "torch.save failed") in msg
    monkeypatch.undo()
    recs = Run(cfg, d, progress=False).run()
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]


def test_a_full_disk_in_a_notebooks_run_cell_is_one_line_and_the_cell_run_again_resumes(tiny_dir, tmp_path,
                                                                                       monkeypatch, capsys):
    """A notebook runs `records = run.run()` in a cell: a full disk there showed IPython's traceback of the
    WriteFailed; it is now one line (as a NotebookStop), and running the cell again once there is space resumes."""
    import errno

    import numpy as np
    from IPython.core.interactiveshell import InteractiveShell

    from fedrl_kit.runs import WriteFailed

    real, calls = np.savez, []

    def savez(path, *a, **kw):
        calls.append(path)
        if len(calls) == 2:  # round 1's checkpoint
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, *a, **kw)

    monkeypatch.setattr(np, "savez", savez)
    shell = InteractiveShell.instance()
    shell.user_ns["run"] = Run(small_config(tiny_dir, rounds=2), tmp_path / "run", progress=False)
    capsys.readouterr()
    result = shell.run_cell("records = run.run()")
    assert isinstance(result.error_in_exec, WriteFailed)
    shown = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(shown) == 1 and shown[0].startswith(f"WriteFailed: cannot write {tmp_path}/run/checkpoint.tmp/global.npz "
                                                   "(No space left on device)"), shown
    assert "keeps its checkpoint of round 0" in shown[0] and "the same cell" in shown[0]
    monkeypatch.setattr(np, "savez", real)
    assert shell.run_cell("records = run.run()").success
    assert [r["round"] for r in shell.user_ns["records"] if r["kind"] == "global"] == [0, 1, 2]
