"""Deployment: every node holds only its own data, the server holds none of it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from fedrl_kit.federation import split
from fedrl_kit.federation.split import (FORMAT, SERVER_SPLITS, SPLIT_FIELDS, DamagedFolder, check_same_split,
                                        load_server_world, read_json, split_fields)
from fedrl_kit.methods import check_deployable as check_method

__all__ = ["SPLIT_FIELDS", "DamagedFolder", "check_deployable", "load_server_world", "split_federation",
           "Node", "node_for", "make_credentials", "audit_opens", "audit_from_env"]


def check_deployable(cfg, server_data) -> None:
    """Refuse, in one line, a deployed run that cannot work: a method that keeps client state
    (:func:`fedrl_kit.methods.check_deployable`), then :func:`fedrl_kit.federation.split.check_deployable`."""
    check_method(cfg.method)
    split.check_deployable(cfg, server_data)


def config_digest(config_json: str) -> str:
    """A short name for a run's config: what a node keeps its client state under."""
    from fedrl_kit import run_files

    return run_files.config_digest(config_json)[:16]


# -- splitting a federation ------------------------------------------------------------------------------------
def data_digest(folder: str | Path) -> str:
    """SHA-256 of a node's ``data/`` folder: every file's path and bytes, in path order (what the split wrote)."""
    import hashlib

    folder, h = Path(folder), hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def split_federation(cfg, out: str | Path) -> dict:
    """Deal the world of ``cfg`` out into a server folder and one folder per client (docs/flower.md, deployment)."""
    import datasets

    from fedrl_kit.world.partition import partition
    from fedrl_kit.world.registry import build_world

    check_method(cfg.method)
    cfg = cfg.validate()
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder: a split is written into a new one")
    world = build_world(cfg)
    if not isinstance(world.train, datasets.Dataset):
        raise ValueError(f"world {cfg.world!r} has no single training pool to split (a multi-family world's clients "
                         "are planned by their method)")
    parts = partition(world.train, cfg.num_clients, cfg.partition, cfg.dirichlet_alpha, cfg.topics_per_client,
                      cfg.equal_size, cfg.seed)
    tmp = out.with_name(out.name + ".splitting")
    shutil.rmtree(tmp, ignore_errors=True)
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # a bar per saved split says nothing
    try:
        fields = split_fields(cfg)
        cids = [f"client_{i}" for i in range(len(parts))]
        (tmp / "server").mkdir(parents=True)
        for name in SERVER_SPLITS:
            getattr(world, name).save_to_disk(str(tmp / "server" / name))
        digests = {}
        for i, (cid, part) in enumerate(zip(cids, parts)):
            node = tmp / f"node_{i}"
            node.mkdir()
            part.save_to_disk(str(node / "data"))
            digests[cid] = data_digest(node / "data")
            (node / "node.json").write_text(json.dumps({"format": FORMAT, "split": fields, "cid": cid, "index": i,
                                                        "data_digest": digests[cid]}, indent=1))
        (tmp / "server" / "manifest.json").write_text(json.dumps(
            {"format": FORMAT, "split": fields, "client_ids": cids, "splits": list(SERVER_SPLITS),
             "accuracy_reward": world.accuracy_reward, "default_rewards": list(world.default_rewards),
             "data_digests": digests}, indent=1))
        out.mkdir(parents=True, exist_ok=True)
        for child in sorted(tmp.iterdir()):
            os.replace(child, out / child.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if bars:
            datasets.enable_progress_bars()
    return {"server": str(out / "server"), "nodes": [str(out / f"node_{i}") for i in range(len(parts))]}


# -- the node side ---------------------------------------------------------------------------------------------
class Node:
    """One deployed node: the client of its folder, built in this process, and its state folder.

    Args:
        data_dir: the node's folder (``node.json`` and ``data/``).
        state_dir: where the node keeps its client's state between messages (default ``<data_dir>/state``).
    """

    def __init__(self, data_dir: str | Path, state_dir: str | Path | None = None):
        self.data_dir = Path(data_dir)
        self.state_dir = Path(state_dir) if state_dir else self.data_dir / "state"
        self.info = read_json(self.data_dir / "node.json", "the node's folder of a split federation "
                                                           "(fedrl deploy split)")
        self.cid = str(self.info["cid"])
        self.folder = self.data_dir.name
        self._client = None
        self._digest = None

    def shown(self, path: Path) -> str:
        """``path`` (in the node's folder) as the deployment names it: relative to the folder ``fedrl deploy split``
        wrote (``node_1/node.json``), the same on the node's machine and in the server's error."""
        return str(Path(self.folder) / Path(path).relative_to(self.data_dir))

    # which run this node plays, kept on disk: the next message may come to a fresh process
    def _plays_path(self, run_id) -> Path:
        return self.state_dir / "runs" / f"{int(run_id)}.json"

    def check_identity(self, client_ids: list[str]) -> str:
        """The node's data digest, after checking that its folder is the one the split wrote for its client: its
        ``index`` is the client's place in the run (an edited index would change the client's seeds) and its
        ``data/`` has the digest the split recorded (data swapped between nodes, or edited). One-line errors."""
        where = self.shown(self.data_dir / "node.json")
        if self.cid not in client_ids:
            raise DamagedFolder(f"{where}: this node plays {self.cid!r}, which is not a client of the run "
                                f"({', '.join(client_ids)})")
        if int(self.info["index"]) != client_ids.index(self.cid):
            raise DamagedFolder(f"{where}: index {self.info['index']!r} is not {self.cid}'s place in the run "
                                f"({client_ids.index(self.cid)}): the file was edited; use the folder the split wrote")
        digest = data_digest(self.data_dir / "data")
        if "data_digest" in self.info and digest != self.info["data_digest"]:
            raise DamagedFolder(f"{self.shown(self.data_dir / 'data')} is not the data the split wrote for {self.cid} "
                                "(its digest differs): were two nodes' data folders swapped or edited?")
        return digest

    def connect(self, run_id, config_json: str, extra: dict) -> str:
        """Take part in run ``run_id`` (config JSON from the server): check the node's data was split for it, keep
        the run's settings for later messages, build the client now. Returns the client id it plays."""
        from fedrl_kit.config import RunConfig

        cfg = RunConfig.from_dict(json.loads(config_json))
        check_method(cfg.method)
        check_same_split(self.info["split"], cfg, self.shown(self.data_dir / "node.json"))
        path = self._plays_path(run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"config": config_json, **extra}))
        os.replace(tmp, path)
        self.client(config_json)
        return self.cid

    def plays(self, run_id) -> dict:
        """What :meth:`connect` kept for ``run_id``; a clear error if the server never connected this node to it."""
        try:
            return json.loads(self._plays_path(run_id).read_text())
        except FileNotFoundError:
            raise RuntimeError(f"node {self.cid} ({self.folder}) got a message of run {run_id} before the server "
                               "connected it to that run") from None

    def client(self, config_json: str):
        """The node's one client for this config (built once per process): the class, data, policy and seeds the
        in-process run gives it."""
        digest = config_digest(config_json)
        if self._client is None or self._digest != digest:
            import datasets
            import torch

            from fedrl_kit.config import RunConfig
            from fedrl_kit.federation.client import GRPOClient
            from fedrl_kit.rewards import make_reward_set
            from fedrl_kit.runs import load_policy

            cfg = RunConfig.from_dict(json.loads(config_json))
            try:
                data = datasets.load_from_disk(str(self.data_dir / "data"))
            except Exception as e:  # noqa: BLE001
                raise DamagedFolder(f"{self.shown(self.data_dir / 'data')} cannot be read as a dataset "
                                    f"({type(e).__name__}: {e})") from None
            torch.manual_seed(cfg.seed)
            policy = load_policy(cfg)
            self._client = GRPOClient(self.cid, int(self.info["index"]), data, policy,
                                      make_reward_set(cfg.rewards, cfg.reward_weights or None), cfg.local_settings(),
                                      cfg.grpo_settings(), cfg.seed)
            self._digest = digest
        return self._client

    def _moments_dir(self) -> Path:
        return self.state_dir / self._digest

    def before(self, round: int) -> None:
        """Give the client the Adam moments it ended its last round before ``round`` with (kept on disk)."""
        rounds = sorted(int(p.stem.split("_r")[1]) for p in self._moments_dir().glob("moments_r*.pt")
                        if p.stem.split("_r")[1].isdigit()) if self._moments_dir().exists() else []
        earlier = [r for r in rounds if r < round]
        if earlier:
            import torch

            self._client.keep_moments(torch.load(self._moments_dir() / f"moments_r{earlier[-1]}.pt",
                                                 weights_only=True))
        else:
            self._client.optimizer = self._client._moments = None

    def after(self, round: int) -> None:
        """Keep the client's Adam moments of ``round`` on disk (written beside, then renamed into place)."""
        state = self._client.optimizer_state()
        if state is None:
            return
        import torch

        self._moments_dir().mkdir(parents=True, exist_ok=True)
        tmp = self._moments_dir() / f".moments_r{round}.tmp"
        torch.save(state, tmp)
        os.replace(tmp, self._moments_dir() / f"moments_r{round}.pt")


_NODES: dict[str, Node] = {}


def node_for(node_config) -> Node:
    """This process's :class:`Node` for a SuperNode's node config (``data-dir``, optional ``state-dir``)."""
    key = f"{node_config['data-dir']}|{node_config.get('state-dir', '')}"
    if key not in _NODES:
        _NODES[key] = Node(str(node_config["data-dir"]), node_config.get("state-dir") or None)
    return _NODES[key]


# -- credentials: TLS and node keys -----------------------------------------------------------------------------
def make_credentials(out: str | Path, nodes: int, hosts=("127.0.0.1", "localhost"), days: int = 365) -> dict:
    """A deployment's TLS and node-authentication files, made with ``cryptography``; returns the paths written.

    ``ca.crt`` (the federation's own CA), ``server.crt`` / ``server.key`` (the SuperLink's, valid for ``hosts``) and
    ``node_<i>`` / ``node_<i>.pub`` (each SuperNode's EC P-384 key pair, OpenSSH format); keys readable by their owner
    only. ``out`` must be new or empty; keep it out of version control (``.gitignore`` lists ``credentials/``).
    """
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, got {nodes}")
    if not hosts:
        raise ValueError("the SuperLink's certificate needs at least one host name or IP address")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder: credentials are written into a new one")
    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(subject, issuer, public_key, signer, ca: bool, sans=None):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=days))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return b.sign(signer, hashes.SHA256())

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def sans_of(h):
        try:
            return x509.IPAddress(ipaddress.ip_address(h))
        except ValueError:
            return x509.DNSName(h)

    def private(path: Path, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    pem = serialization.Encoding.PEM
    ca_key, server_key = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP384R1())
    ca = cert(name("fedrl-kit federation CA"), name("fedrl-kit federation CA"), ca_key.public_key(), ca_key, True)
    server = cert(name(hosts[0]), ca.subject, server_key.public_key(), ca_key, False, [sans_of(h) for h in hosts])
    out.mkdir(parents=True, exist_ok=True)
    (out / "ca.crt").write_bytes(ca.public_bytes(pem))
    (out / "server.crt").write_bytes(server.public_bytes(pem))
    private(out / "server.key", server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    made = {"ca": str(out / "ca.crt"), "server_cert": str(out / "server.crt"), "server_key": str(out / "server.key"),
            "nodes": []}
    for i in range(nodes):
        key = ec.generate_private_key(ec.SECP384R1())
        private(out / f"node_{i}", key.private_bytes(pem, serialization.PrivateFormat.OpenSSH,
                                                     serialization.NoEncryption()))
        (out / f"node_{i}.pub").write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                                          serialization.PublicFormat.OpenSSH))
        made["nodes"].append({"private_key": str(out / f"node_{i}"), "public_key": str(out / f"node_{i}.pub")})
    return made


# -- auditing which files a process opens ----------------------------------------------------------------------
def audit_opens(root: str | Path, log: str | Path) -> None:
    """Append the path of every file this process opens under ``root`` to ``log/<pid>.log`` (one per line)."""
    root = os.path.realpath(root)
    Path(log).mkdir(parents=True, exist_ok=True)
    log = os.path.realpath(log)
    out = os.path.join(log, f"{os.getpid()}.log")

    def hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            try:
                path = os.path.realpath(os.fsdecode(args[0]))
            except (TypeError, ValueError):
                return
            if path.startswith(root + os.sep) and not path.startswith(log + os.sep):
                with open(out, "a") as fh:
                    fh.write(path + "\n")

    sys.addaudithook(hook)


def audit_from_env() -> None:
    """:func:`audit_opens` when ``FEDRL_AUDIT_ROOT`` and ``FEDRL_AUDIT_LOG`` are set (once per process)."""
    root, log = os.environ.get("FEDRL_AUDIT_ROOT"), os.environ.get("FEDRL_AUDIT_LOG")
    if root and log and not getattr(audit_from_env, "_on", False):
        audit_from_env._on = True
        audit_opens(root, log)
