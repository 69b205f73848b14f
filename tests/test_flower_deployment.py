"""Flower's deployment engine on loopback: a SuperLink and three SuperNodes as processes, TLS and node authentication
on, each node with its own folder of a split federation, the server with its own.

The deployed run gives the in-process run's records; no process opens another's data (an audit hook logs every
file each process opens under the federation's folder); a SuperNode killed mid-round is dropped for that round and,
restarted, answers the next; nothing is left running after either test.
"""

import json
import threading
import time
from pathlib import Path

import pytest

from conftest import small_config
from fedrl_kit import deploy
from fedrl_kit.deploy_loopback import LoopbackDeployment, _descendants
from fedrl_kit.runs import Run

pytestmark = pytest.mark.serial  # several processes and real-time waits: `make test` runs these alone

TINY = dict(n_train=80, n_test=14, n_public=8, n_aux=8, num_clients=3, rounds=2, local_steps=1, prompts_per_step=2,
            num_generations=4, max_new_tokens=8, eval_samples=1, lora_rank=2)


def _run_config(cfg, tiny_dir, run_dir, server, round_timeout, **extra) -> dict:
    sets = ";".join(f"{k}={v}" for k, v in {"base": tiny_dir, **TINY, **extra}.items())
    return {"set": sets, "run-dir": str(run_dir), "server-data": server, "round-timeout": str(round_timeout)}


def _records(run_dir: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_deployment_with_tls_gives_the_in_process_numbers_and_no_process_reads_anothers_data(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir)
    fed = deploy.split_federation(cfg, tmp_path / "fed")
    want = Run(cfg, tmp_path / "inprocess", progress=False)
    want.run()
    audit = tmp_path / "audit"
    with LoopbackDeployment(tmp_path / "deployment", fed["nodes"],
                            env={"FEDRL_AUDIT_ROOT": str(tmp_path / "fed"), "FEDRL_AUDIT_LOG": str(audit)}) as d:
        result = d.run(_run_config(cfg, tiny_dir, tmp_path / "deployed", fed["server"], 300))
    assert result["status"] == "finished:completed", result["details"] + result["stream"][-2000:]
    assert not d.left_running()
    assert _records(tmp_path / "deployed") == _records(tmp_path / "inprocess")
    assert (tmp_path / "deployed" / "ledger.jsonl").read_text() == (tmp_path / "inprocess" / "ledger.jsonl").read_text()
    # which folder of the federation each process opened files in: one each, the server's never a node's
    owners = []
    for log in audit.glob("*.log"):
        opened = {Path(p).relative_to((tmp_path / "fed").resolve()).parts[0] for p in log.read_text().split()}
        assert len(opened) == 1, (log.name, opened)
        owners += opened
    assert set(owners) == {"server", "node_0", "node_1", "node_2"}  # and each of them read its own


def test_a_node_killed_mid_round_is_dropped_and_rejoins_from_its_kept_state(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir, rounds=3)
    fed = deploy.split_federation(cfg, tmp_path / "fed")
    run_dir, events = tmp_path / "deployed", {}
    with LoopbackDeployment(tmp_path / "deployment", fed["nodes"]) as d:
        def chaos():
            # node 1 answers round 0 (connect, properties); it is killed while it works on round 1's message
            while not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text():
                time.sleep(0.2)
            node = d.procs["supernode_1"]
            deadline = time.time() + 60
            while time.time() < deadline and not any("flwr-clientapp" in _cmdline(p) for p in _descendants([node.pid])):
                time.sleep(0.1)
            events["killed_while_answering"] = time.time() < deadline
            d.kill_node(1)
            # the SuperLink takes a node for offline after two missed heartbeats (about a minute); until then a node
            # with its key cannot activate again. Offline, its messages are answered "Node Unavailable": restart then
            while not any(r["kind"] == "failure" for r in _records(run_dir)):
                time.sleep(0.2)
            d.start_node(1)  # the same key: the same node id
            d.wait_node(1, connections=2)
            events["restarted_in_round"] = max(r["round"] for r in _records(run_dir))

        t = threading.Thread(target=chaos, daemon=True)
        t.start()
        result = d.run(_run_config(cfg, tiny_dir, run_dir, fed["server"], 120, rounds=3))
        t.join(timeout=120)
    assert result["status"] == "finished:completed", result["details"] + result["stream"][-2000:]
    assert events == {"killed_while_answering": True, "restarted_in_round": 1}
    assert not d.left_running()
    recs = _records(run_dir)
    failed = {(r["round"], r["client"]) for r in recs if r["kind"] == "failure"}
    # dropped in the round it was killed in; while offline (round 2, if it began before the node was back) its
    # message is answered "Node Unavailable"; back online it trains again
    assert (1, "client_1") in failed and failed <= {(1, "client_1"), (2, "client_1")}
    assert sorted(r["client"] for r in recs if r["kind"] == "client" and r["round"] == 1) == ["client_0", "client_2"]
    assert sorted(r["client"] for r in recs if r["kind"] == "client" and r["round"] == 3) == \
        ["client_0", "client_1", "client_2"]
    # it answered from the run it kept on disk: the server connected it once, before round 0 (received, answered)
    assert d.log("supernode_1").count("query.connect message") == 2


def _cmdline(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        return ""
