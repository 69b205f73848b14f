"""A deployed federation: each node holds only its own folder, the server only its own; same numbers as in-process.

These tests use :class:`~fedrl_kit.flower.LoopbackGrid` with deployed node configs (``data-dir``), and a fresh
:class:`~fedrl_kit.deploy.Node` per message, as Flower's deployment engine starts a fresh ClientApp process per
message (no real-time waits: they run beside the other tests). ``tests/test_flower_deployment.py`` runs the real
processes (SuperLink, SuperNodes, TLS).
"""

import pytest

from conftest import small_config
from fedrl_kit import deploy
from fedrl_kit.flower import FlowerRuntime, LoopbackGrid, client_app
from fedrl_kit.runs import Run


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


class _FreshProcess:
    """Forget every built node before each message, as a fresh ClientApp process would."""

    def __init__(self, app):
        self.app = app

    def __call__(self, message, context):
        deploy._NODES.clear()
        return self.app(message, context)


def _deployed(cfg, fed, run_dir=None, fresh=True, stop_after=None):
    nodes = [{"data-dir": p} for p in sorted(str(p) for p in fed.glob("node_*"))]
    grid = LoopbackGrid(_FreshProcess(client_app) if fresh else client_app, len(nodes), node_configs=nodes)

    def runtime(clients, faults, timeout=None, replies=None, expect=None):
        return FlowerRuntime(grid, list(clients), cfg.to_json(), 600.0, faults=faults, replies=replies, expect=expect)

    run = Run(cfg, run_dir, progress=False, runtime=runtime, server_data=fed / "server")
    try:
        return run, run.run(stop_after=stop_after)
    finally:
        assert grid.drain()


def test_split_gives_each_node_its_partition_and_the_server_none(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir)
    out = deploy.split_federation(cfg, tmp_path / "fed")
    run = Run(cfg, progress=False).build()
    assert len(out["nodes"]) == cfg.num_clients
    for i, node in enumerate(out["nodes"]):
        n = deploy.Node(node)
        client = n.client(cfg.to_json())
        assert n.cid == f"client_{i}" and client.data["prompt"] == run.clients[n.cid].data["prompt"]
    world = deploy.load_server_world(out["server"], cfg)
    assert world.test["prompt"] == run.world.test["prompt"] and world.client_ids == list(run.clients)
    with pytest.raises(AttributeError, match="private data stays on the clients"):
        world.train  # noqa: B018
    assert sorted(p.name for p in (tmp_path / "fed" / "server").iterdir()) == ["aux", "manifest.json", "public",
                                                                                "test"]


@pytest.mark.parametrize("method,extra", [("fedavg_grpo", {}), ("fedprox_grpo", {"fedprox.mu": 0.1}),
                                          ("fedavg_grpo", {"reset_optimizer": False, "rounds": 3})])
def test_a_deployed_run_gives_the_in_process_numbers(tiny_dir, tmp_path, method, extra):
    cfg = small_config(tiny_dir, method=method, **extra)
    deploy.split_federation(cfg, tmp_path / "fed")
    ref = Run(cfg, progress=False)
    want = ref.run()
    run, got = _deployed(cfg, tmp_path / "fed")
    assert _strip(got) == _strip(want)
    assert run.runtime.ledger.to_rows() == ref.runtime.ledger.to_rows()
    if not cfg.reset_optimizer:  # each node kept its Adam moments on disk, round by round
        kept = sorted(p.name for p in (tmp_path / "fed" / "node_0" / "state").rglob("moments_r*.pt"))
        assert kept == [f"moments_r{r}.pt" for r in range(1, cfg.rounds + 1)]


def test_a_deployed_server_resumes_and_its_nodes_continue_from_their_kept_state(tiny_dir, tmp_path):
    import torch

    cfg = small_config(tiny_dir, reset_optimizer=False, rounds=3)
    deploy.split_federation(cfg, tmp_path / "fed")
    want = Run(cfg, progress=False).run()
    with pytest.raises(Exception, match="stopped after round 1"):
        _deployed(cfg, tmp_path / "fed", tmp_path / "run", stop_after=1)
    for node in (tmp_path / "fed").glob("node_*"):  # as if each node had trained a round 2 the server never recorded
        kept = next((node / "state").rglob("moments_r1.pt"))
        sd = torch.load(kept, weights_only=True)
        for s in sd["state"].values():
            s["exp_avg"] = s["exp_avg"] * 10
        torch.save(sd, kept.with_name("moments_r2.pt"))
    _, got = _deployed(cfg, tmp_path / "fed", tmp_path / "run")
    assert _strip(got) == _strip(want)  # round 2 started from the moments of round 1, the last the server kept


def test_a_node_refuses_a_run_split_with_other_data(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir)
    deploy.split_federation(cfg, tmp_path / "fed")
    with pytest.raises(ValueError, match=r"manifest.json was split with other data settings than this run's: seed="):
        Run(cfg.replace(seed=1), progress=False, runtime=lambda *a, **k: None, server_data=tmp_path / "fed" / "server")
    node = deploy.Node(tmp_path / "fed" / "node_1")
    with pytest.raises(ValueError, match=r"node_1/node.json was split with other data settings.*num_clients=3 "):
        node.connect(1, cfg.replace(num_clients=4).to_json(), {"faults": {}, "threads": 0})


def test_deployment_refuses_what_it_cannot_run_before_writing_anything(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir)
    with pytest.raises(ValueError, match="method .pubswap_balanced. cannot be deployed yet"):
        deploy.split_federation(small_config(tiny_dir, method="pubswap_balanced", local_steps=2), tmp_path / "a")
    assert not (tmp_path / "a").exists()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("")
    with pytest.raises(ValueError, match="exists and is not an empty folder"):
        deploy.split_federation(cfg, tmp_path / "b")
    deploy.split_federation(cfg, tmp_path / "fed")
    with pytest.raises(ValueError, match="through Flower"):
        Run(cfg, progress=False, server_data=tmp_path / "fed" / "server")
    (tmp_path / "fed" / "server" / "manifest.json").write_text("{")
    with pytest.raises(deploy.DamagedFolder, match=r"server/manifest.json is not valid JSON"):
        Run(cfg, progress=False, runtime=lambda *a, **k: None, server_data=tmp_path / "fed" / "server")
    (tmp_path / "fed" / "node_0" / "node.json").unlink()
    with pytest.raises(deploy.DamagedFolder, match=r"node_0/node.json is missing"):
        deploy.Node(tmp_path / "fed" / "node_0")


def test_the_audit_logs_the_files_a_process_opens_under_its_root(tmp_path):
    import subprocess
    import sys

    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("x")
    code = ("from fedrl_kit import deploy; deploy.audit_from_env(); open(r'%s').read(); open(r'%s', 'w').close()"
            % (tmp_path / "root" / "a.txt", tmp_path / "elsewhere.txt"))
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={**__import__("os").environ, "FEDRL_AUDIT_ROOT": str(tmp_path / "root"),
                        "FEDRL_AUDIT_LOG": str(tmp_path / "log")})
    logs = list((tmp_path / "log").glob("*.log"))
    assert len(logs) == 1 and logs[0].read_text().splitlines() == [str((tmp_path / "root" / "a.txt").resolve())]


def test_credentials_give_a_ca_signed_server_certificate_and_node_keys_flower_reads(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key, load_ssh_public_key

    made = deploy.make_credentials(tmp_path / "cred", 2, ["127.0.0.1", "superlink.example"])
    ca = x509.load_pem_x509_certificate((tmp_path / "cred" / "ca.crt").read_bytes())
    server = x509.load_pem_x509_certificate((tmp_path / "cred" / "server.crt").read_bytes())
    server.verify_directly_issued_by(ca)  # raises if the CA did not sign it
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert sans.get_values_for_type(x509.DNSName) == ["superlink.example"]
    for node in made["nodes"]:  # what flower-supernode and `flwr supernode register` load
        key = load_ssh_private_key(open(node["private_key"], "rb").read(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp384r1"
        assert load_ssh_public_key(open(node["public_key"], "rb").read()).public_numbers() == \
            key.public_key().public_numbers()
    for private in ("server.key", "node_0", "node_1"):
        assert (tmp_path / "cred" / private).stat().st_mode & 0o077 == 0, private
    with pytest.raises(ValueError, match="exists and is not an empty folder"):
        deploy.make_credentials(tmp_path / "cred", 1)


def test_fedrl_deploy_split_writes_the_folders_and_names_them(tiny_dir, tmp_path, capsys):
    from fedrl_kit.cli import main

    assert main(["deploy", "split", "--set", f"base={tiny_dir}", "--set", "num_clients=2", "--set", "n_train=40",
                 "--out", str(tmp_path / "fed")]) == 0
    out = capsys.readouterr().out
    assert f"data-dir='{tmp_path / 'fed' / 'node_1'}'" in out
    assert sorted(p.name for p in (tmp_path / "fed").iterdir()) == ["node_0", "node_1", "server"]
    assert main(["deploy", "split", "--method", "fedmoa", "--out", str(tmp_path / "x")]) == 2
    assert "cannot be deployed yet" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_fedrl_deploy_loopback_refuses_a_run_that_does_not_match_its_split_before_starting_anything(tiny_dir, tmp_path,
                                                                                                   capsys):
    from fedrl_kit.cli import main

    cfg = small_config(tiny_dir, num_clients=2)
    deploy.split_federation(cfg, tmp_path / "fed")
    assert main(["deploy", "loopback", str(tmp_path / "fed"), "--run-dir", str(tmp_path / "run"),
                 "--set", "num_clients=3"]) == 2
    assert "was split with other data settings than this run's: num_clients=2 (run: 3)" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_copied_node_folder_an_edited_index_and_swapped_data_are_refused_in_one_line(tiny_dir, tmp_path):
    import json
    import shutil

    cfg = small_config(tiny_dir)
    split = deploy.split_federation(cfg, tmp_path / "fed")
    manifest = json.loads((tmp_path / "fed" / "server" / "manifest.json").read_text())
    for node in split["nodes"]:
        info = json.loads((tmp_path / "fed" / node / "node.json").read_text())
        assert info["data_digest"] == manifest["data_digests"][info["cid"]] == deploy.data_digest(f"{node}/data")
    ids = manifest["client_ids"]

    copied = tmp_path / "copied"
    shutil.copytree(tmp_path / "fed", copied)
    shutil.copytree(copied / "node_1", copied / "node_9")  # a fourth node started with node_1's folder
    with pytest.raises(RuntimeError, match=r"^Flower nodes \d+ \(node_1\) and \d+ \(node_9\) both play client_1: each "
                                           r"client's folder"):
        _deployed(cfg, copied)

    edited = deploy.Node(tmp_path / "fed" / "node_1")
    edited.info["index"] = 0
    with pytest.raises(deploy.DamagedFolder, match=r"node_1/node.json: index 0 is not client_1's place in the run \(1\)"):
        edited.check_identity(ids)

    swapped = tmp_path / "swapped"
    shutil.copytree(tmp_path / "fed", swapped)
    (swapped / "node_0" / "data").rename(swapped / "tmp")
    (swapped / "node_1" / "data").rename(swapped / "node_0" / "data")
    (swapped / "tmp").rename(swapped / "node_1" / "data")
    with pytest.raises(deploy.DamagedFolder, match=r"node_0/data is not the data the split wrote for client_0"):
        deploy.Node(swapped / "node_0").check_identity(ids)
    assert deploy.Node(tmp_path / "fed" / "node_0").check_identity(ids) == manifest["data_digests"]["client_0"]


def test_the_server_refuses_a_node_whose_data_is_not_the_one_its_manifest_records(tiny_dir, tmp_path):
    import json

    cfg = small_config(tiny_dir)
    deploy.split_federation(cfg, tmp_path / "fed")
    nodes = [{"data-dir": str(p)} for p in sorted((tmp_path / "fed").glob("node_*"))]
    digests = json.loads((tmp_path / "fed" / "server" / "manifest.json").read_text())["data_digests"]
    ids = sorted(digests)
    grid = LoopbackGrid(_FreshProcess(client_app), len(nodes), node_configs=nodes)
    FlowerRuntime(grid, ids, cfg.to_json(), 600.0, data_digests=digests)  # the split's own data: accepted
    assert grid.drain()
    grid = LoopbackGrid(_FreshProcess(client_app), len(nodes), node_configs=nodes)
    with pytest.raises(RuntimeError, match=r"plays client_\d with data whose digest is not the split's"):
        FlowerRuntime(grid, ids, cfg.to_json(), 600.0, data_digests={**digests, "client_2": "0" * 64})
    grid.drain()


def test_a_bad_deployed_node_stops_the_server_in_one_line_naming_the_node_and_its_file(tiny_dir, tmp_path):
    """What the server says when a node refuses the run: one line naming the node (its Flower id and folder) and the
    file, relative to the deployment folder; no run folder left. It used to be the node's absolute paths and a
    3-frame traceback of the ClientApp, after "could not build its client"."""
    import json
    import shutil

    cfg = small_config(tiny_dir)
    deploy.split_federation(cfg, tmp_path / "fed")
    deploy.split_federation(cfg.replace(seed=1), tmp_path / "other")

    def refused(fed) -> str:
        with pytest.raises(RuntimeError) as e:
            _deployed(cfg, fed, run_dir=tmp_path / "run")
        msg = str(e.value)
        assert "\n" not in msg and "Traceback" not in msg and str(tmp_path) not in msg, msg
        assert not (tmp_path / "run").exists()
        return msg

    edited = tmp_path / "edited"
    shutil.copytree(tmp_path / "fed", edited)
    info = json.loads((edited / "node_1" / "node.json").read_text())
    (edited / "node_1" / "node.json").write_text(json.dumps({**info, "index": 0}))
    assert refused(edited) == ("Flower node 1001 (node_1) refused the run: node_1/node.json: index 0 is not "
                               "client_1's place in the run (1): the file was edited; use the folder the split wrote")

    swapped = tmp_path / "swapped"
    shutil.copytree(tmp_path / "fed", swapped)
    (swapped / "node_0" / "data").rename(swapped / "tmp")
    (swapped / "node_1" / "data").rename(swapped / "node_0" / "data")
    (swapped / "tmp").rename(swapped / "node_1" / "data")
    assert refused(swapped).startswith("Flower node 1000 (node_0) refused the run: node_0/data is not the data the "
                                       "split wrote for client_0")

    mixed = tmp_path / "mixed"  # node_2's folder from a split of another seed
    shutil.copytree(tmp_path / "fed", mixed)
    shutil.rmtree(mixed / "node_2")
    shutil.copytree(tmp_path / "other" / "node_2", mixed / "node_2")
    assert refused(mixed).startswith("Flower node 1002 (node_2) refused the run: node_2/node.json was split with other "
                                     "data settings than this run's: seed=1 (run: 0)")

    copied = tmp_path / "copied"
    shutil.copytree(tmp_path / "fed", copied)
    shutil.copytree(copied / "node_1", copied / "node_9")
    assert refused(copied).startswith("Flower nodes 1001 (node_1) and 1003 (node_9) both play client_1")


def test_a_clientapp_error_reaches_the_server_as_its_one_line():
    """An error reply (not a refusal: a node that crashed) is named in one line, whichever way Flower wraps it."""
    from fedrl_kit.flower import _first_line

    assert _first_line("<class 'flwr.clientapp.client_app.ClientAppException'>:<'\nException ClientAppException "
                       "occurred. Message: disk I/O error\nTraceback (most recent call last):\n  File x'>") == \
        "disk I/O error"
    assert _first_line("<class 'ZeroDivisionError'>:<'division by zero'>") == "ZeroDivisionError: division by zero"
    assert _first_line("OSError: bad\nTraceback (most recent call last):\n  File y") == "OSError: bad"
