"""Every method on Flower's Message API gives the numbers it gives in-process; failing clients are dropped.

Most tests use :class:`~fedrl_kit.flower.LoopbackGrid` (Flower's messages, records, contexts and
ClientApp, delivered in this process); one runs Flower's simulation engine (Ray) end to end.
"""

import json
import time

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.flower import (FlowerRuntime, LoopbackGrid, client_app, from_records, message_type,
                                         run_many_on_flower, run_on_flower, to_records)
from fedrl_kit.methods import METHODS
from fedrl_kit.runs import Run
from test_boundary import SETTINGS

pytestmark = pytest.mark.serial  # real-time timeouts: `make test` runs these alone, after the others


LIVE_STATE = {"evaluator_sft_loss"}
"""Diagnostics that read state a client builds while answering (FedGRPO's evaluator SFT loss): on Flower the
simulator truth is the server process's copy of the clients, which holds their data but never answers."""


def _strip(records, drop=()):
    return [{k: v for k, v in r.items() if k != "seconds" and k not in drop} for r in records]


def _on_loopback(cfg, round_timeout=600.0, hang_seconds=3600.0, nodes=None):
    grid = LoopbackGrid(client_app, nodes or cfg.num_clients)

    def runtime(clients, faults, timeout=None, replies=None, expect=None):
        return FlowerRuntime(grid, list(clients), cfg.to_json(), round_timeout, faults=faults, replies=replies,
                             expect=expect, hang_seconds=hang_seconds)

    run = Run(cfg, progress=False, runtime=runtime)
    records = run.run()
    assert grid.drain(), "a late message was still being handled"  # nothing left running when the test ends
    return run, records


def test_payloads_cross_as_flower_records_exactly():
    payload = {"adapter": {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "m": np.array([True, False])},
               "texts": [["x", "ü"], []], "n": 3, "f": float("nan"), "none": None, "t": (1, "2"),
               "metrics": {"loss": 0.5, "accuracy": 1}}
    rd = to_records("fit_result", payload)
    assert set(rd) == {"arrays", "payload", "metrics"}  # ArrayRecord, ConfigRecord, MetricRecord
    assert len(rd["arrays"]) == 2 and rd["metrics"]["loss"] == 0.5
    kind, back = from_records(rd)
    assert kind == "fit_result"
    assert back["adapter"]["a"].dtype == np.float32 and np.array_equal(back["adapter"]["a"], payload["adapter"]["a"])
    assert back["adapter"]["m"].dtype == bool and back["texts"] == [["x", "ü"], []] and np.isnan(back["f"])
    assert back["none"] is None and back["t"] == (1, "2") and back["metrics"] == {"loss": 0.5, "accuracy": 1}


def test_message_kinds_map_onto_flower_message_types():
    assert message_type("fit") == "train.fit" and message_type("fit_begin") == "train.fit_begin"
    assert message_type("evaluate") == "evaluate.evaluate"
    assert message_type("competence") == "query.competence" and message_type("properties") == "query.properties"


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_identical_metrics_on_flowers_message_api(tiny_dir, method):
    cfg = small_config(tiny_dir, method=method, rounds=1, **SETTINGS.get(method, {}))
    direct = Run(cfg, progress=False)
    expected = direct.run()
    flower, got = _on_loopback(cfg)
    assert _strip(got) == _strip(expected, drop=LIVE_STATE)
    assert flower.runtime.ledger.records == direct.runtime.ledger.records  # our payload bytes, message by message
    if direct.clients:
        assert flower.runtime.flower_bytes["down"] > 0 and flower.runtime.flower_bytes["up"] > 0


def test_a_raising_and_a_hanging_client_are_dropped_and_the_run_goes_on(tiny_dir):
    cfg = small_config(tiny_dir, method="fedavg_grpo", rounds=2, fail_client="client_0@1,client_2@2:hang")
    t0 = time.time()
    run, records = _on_loopback(cfg, round_timeout=6.0, hang_seconds=12.0)
    fails = [r for r in records if r["kind"] == "failure"]
    assert [(f["round"], f["client"], f["reason"]) for f in fails] == [(1, "client_0", "raised"),
                                                                        (2, "client_2", "timeout")]
    assert "injected failure" in fails[0]["error"] and "ClientTimeout" in fails[1]["error"]
    clients = {(r["round"], r["client"]) for r in records if r["kind"] == "client"}
    assert clients == {(1, "client_1"), (1, "client_2"), (2, "client_0"), (2, "client_1")}
    assert [r["round"] for r in records if r["kind"] == "global"] == [0, 1, 2]  # both rounds aggregated and scored
    assert time.time() - t0 < 90


def test_a_flower_run_takes_the_configs_client_timeout_unless_the_job_names_one(tiny_dir):
    """The job `fedrl run --runtime flower` and `flwr run` make: a hanging client is dropped after the run's
    client_timeout (here 2 s), not after a fixed 3,600 s; `round-timeout` "" in the app's run config means the same."""
    from fedrl_kit.flower import _job_from_run_config, _run_one

    assert _job_from_run_config({"round-timeout": ""})["round_timeout"] is None
    assert _job_from_run_config({"round-timeout": 30})["round_timeout"] == 30.0
    with pytest.raises(ValueError, match=r"method is a key of the run config: give it as --run-config \"method='fedgrpo'\""):
        _job_from_run_config({"set": "rounds=1;method=fedgrpo"})  # a TypeError of preset() before
    cfg = small_config(tiny_dir, method="fedavg_grpo", rounds=1, fail_client="client_2@1:hang", client_timeout=2.0)
    grid = LoopbackGrid(client_app, cfg.num_clients)
    t0 = time.time()
    out = _run_one(grid, {"round_timeout": None, "faults": {}, "progress": False, "hang_seconds": 4.0}, cfg, None)
    assert "error" not in out, out.get("error")
    fails = [r for r in out["records"] if r["kind"] == "failure"]
    assert [(f["client"], f["reason"]) for f in fails] == [("client_2", "timeout")] and "within 2 s" in fails[0]["error"]
    assert grid.drain() and time.time() - t0 < 60


def test_a_nan_adapter_on_flower_is_dropped_by_the_same_reply_check(tiny_dir):
    cfg = small_config(tiny_dir, method="fedavg_grpo", rounds=1, fail_client="client_1@1:nan")
    _, records = _on_loopback(cfg)
    fails = [r for r in records if r["kind"] == "failure"]
    assert [(f["client"], f["reason"]) for f in fails] == [("client_1", "bad_reply")]


def test_a_run_needs_a_node_per_client(tiny_dir):
    cfg = small_config(tiny_dir, method="fedavg_grpo", rounds=1)
    grid = LoopbackGrid(client_app, 2)
    with pytest.raises(RuntimeError, match="only 2 Flower nodes connected within 1 s; this run has 3 clients"):
        FlowerRuntime(grid, ["client_0", "client_1", "client_2"], cfg.to_json(), connect_timeout=1.0)


def test_the_client_process_takes_the_servers_torch_threads_when_told(tiny_dir, monkeypatch):
    """A simulation sends its thread count in query.connect (Ray may give its actor another OMP_NUM_THREADS, and
    other threads sum floats in another order); the client answers every message with it, on whichever thread
    handles the message. Without one, the client keeps its own."""
    from fedrl_kit.federation.client import GRPOClient

    seen = []
    answer = GRPOClient.on_properties
    monkeypatch.setattr(GRPOClient, "on_properties",
                        lambda self, r, p: (seen.append(torch.get_num_threads()), answer(self, r, p))[1])
    cfg = small_config(tiny_dir, method="fedavg_grpo", rounds=1)
    ids = ["client_0", "client_1", "client_2"]
    for threads in (1, 3, None):
        grid, connects = LoopbackGrid(client_app, 3), []
        push = grid.push_messages
        grid.push_messages = lambda msgs: (connects.extend(from_records(m.content)[1] for m in msgs
                                                           if m.metadata.message_type == "query.connect"), push(msgs))[1]
        runtime = FlowerRuntime(grid, ids, cfg.to_json(), connect_timeout=30.0, torch_threads=threads)
        assert len(connects) == 3 and all(c.get("torch_threads") == threads for c in connects)
        if threads is not None:
            seen.clear()
            replies = runtime.broadcast("properties", 0, {})
            assert sorted(replies) == ids and seen == [threads] * 3


def test_flowers_simulation_engine_runs_every_method_as_in_process(tiny_dir, tmp_path):
    """The real thing: ServerApp + ClientApp on Flower's Ray-based simulation engine, every method in one
    simulation (Ray starts once), one round each on three clients."""
    cfgs = [small_config(tiny_dir, method=m, rounds=1, **SETTINGS.get(m, {})) for m in METHODS]
    expected = [Run(cfg, progress=False).run() for cfg in cfgs]
    out = run_many_on_flower([(cfg, tmp_path / m) for cfg, m in zip(cfgs, METHODS)], progress=False,
                             round_timeout=600)
    for m, want, got in zip(METHODS, expected, out):
        assert _strip(got["records"]) == _strip(want, drop=LIVE_STATE), m
    on_disk = [json.loads(line) for line in (tmp_path / "fedavg_grpo" / "metrics.jsonl").read_text().splitlines()]
    assert _strip(on_disk) == _strip(expected[METHODS.index("fedavg_grpo")])
    assert out[METHODS.index("fedavg_grpo")]["flower_bytes"]["up"] > 0


def test_on_flowers_simulation_engine_a_raising_and_a_hanging_client_are_dropped(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir, method="fedavg_grpo", rounds=2, fail_client="client_0@1,client_2@2:hang")
    out = run_on_flower(cfg, tmp_path / "run", progress=False, round_timeout=20.0, hang_seconds=30.0)
    fails = [r for r in out["records"] if r["kind"] == "failure"]
    assert [(f["round"], f["client"], f["reason"]) for f in fails] == [(1, "client_0", "raised"),
                                                                        (2, "client_2", "timeout")]
    assert [r["round"] for r in out["records"] if r["kind"] == "global"] == [0, 1, 2]  # the run went on


def test_a_flower_run_whose_client_hangs_ends_by_itself_once_its_rounds_are_done(tiny_dir, tmp_path):
    """`fedrl run --runtime flower` with a client hanging for good (the fault's hour): the client is dropped after
    client_timeout, the records and checkpoint are written, and the process exits. It used to wait until killed:
    Flower's simulation engine joins its worker threads before it shuts Ray down, and the hung client's worker waits
    on its actor."""
    import os
    import signal
    import subprocess
    import sys

    from test_cli import _tiny

    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "fedrl_kit.cli", "run", "--method", "fedavg_grpo", "--runtime", "flower",
           "--run-dir", str(run_dir), "--quiet", *_tiny(tiny_dir, "num_clients=3", "fail_client=client_2@1:hang",
                                                        "client_timeout=20")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    t0 = time.time()
    try:
        out, _ = proc.communicate(timeout=420)  # Ray's start on a busy machine, one round, the 20 s timeout
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"still running {time.time() - t0:.0f} s after it started, long after its one round:\n"
                             f"{out[-3000:]}") from None
    assert proc.returncode == 0, out[-3000:]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(r["round"], r["client"], r["reason"]) for r in records if r["kind"] == "failure"] == [
        (1, "client_2", "timeout")]
    assert [r["round"] for r in records if r["kind"] == "global"] == [0, 1]
    assert json.loads((run_dir / "checkpoint" / "state.json").read_text())["round"] == 1
    assert "round   1" in out and "1 client failure(s) recorded" in out
    assert "ActorDiedError" not in out and "Traceback" not in out, out[-3000:]


def test_the_app_bundle_flwr_run_packs_is_the_package_well_under_flowers_limit():
    """`flwr run .` packs the repository as a FAB of at most 10 MiB; by Flower's defaults every .py, .md and .json
    (the stored results among them) would go in and pass that limit, so pyproject.toml names what the apps need."""
    import io
    import zipfile

    from flwr.cli.build import build_fab_from_disk

    from fedrl_kit.runs import REPO_ROOT

    fab = build_fab_from_disk(REPO_ROOT)
    names = zipfile.ZipFile(io.BytesIO(fab)).namelist()
    assert len(fab) < 4 * 2**20, f"the FAB is {len(fab):,} bytes"
    assert "fedrl_kit/flower.py" in names and "data/base/config.json" in names
    assert not any(n.startswith(("benchmarks/", "docs/", "notebooks/", "tests/")) for n in names)
