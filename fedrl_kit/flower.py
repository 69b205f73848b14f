"""Any method on Flower: a ``ServerApp`` that runs the unchanged method loop and a ``ClientApp`` that runs
the same client handlers, talking through Flower's Message API (flwr 1.41).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from fedrl_kit.deploy import audit_from_env
from fedrl_kit.federation.parking import park_idle
from fedrl_kit.federation.server import draw_participants
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message, SERVER, _inject_after, _inject_before
from fedrl_kit.federation.wire import join_payload, split_payload

try:  # flwr is a dependency of the toolkit; the import error names it when it is missing
    from flwr.app import (Array, ArrayRecord, ConfigRecord, Context, Error, Message as FlowerMessage, MetricRecord,
                          RecordDict)
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
except ImportError as e:  # pragma: no cover - exercised only without flwr
    raise ImportError("the Flower runtime needs flwr: pip install 'flwr[simulation]==1.41.0'") from e

CONNECT = "query.connect"
audit_from_env()  # an operator's audit of which files this process opens (off unless its variables are set)


# -- payloads as Flower records ----------------------------------------------------------------------------
def message_type(kind: str) -> str:
    """Our message kind as a Flower message type (``category.action``)."""
    if kind.startswith("fit"):
        return f"train.{kind}"
    if kind.startswith("evaluate"):
        return f"evaluate.{kind}"
    return f"query.{kind}"


def to_records(kind: str, payload: dict) -> RecordDict:
    """A payload as a ``RecordDict``: arrays → ``ArrayRecord``, structure and texts → ``ConfigRecord``."""
    header, arrays = split_payload(payload)
    records = {"arrays": ArrayRecord({str(i): Array(np.ascontiguousarray(a)) for i, a in enumerate(arrays)}),
               "payload": ConfigRecord({"kind": kind, "header": header})}
    metrics = payload.get("metrics") if isinstance(payload, dict) else None
    if isinstance(metrics, dict) and metrics and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                     for v in metrics.values()):
        records["metrics"] = MetricRecord({k: float(v) for k, v in metrics.items()})
    return RecordDict(records)


def from_records(content: RecordDict) -> tuple[str, Any]:
    """The inverse of :func:`to_records`: (kind, payload)."""
    conf = content["payload"]
    arrays = content["arrays"]
    return str(conf["kind"]), join_payload(str(conf["header"]), [arrays[str(i)].numpy() for i in range(len(arrays))])


def flower_nbytes(content: RecordDict) -> int:
    """Bytes of the records' data as Flower holds them (array buffers, config and metric values)."""
    n = 0
    for rec in content.values():
        if isinstance(rec, ArrayRecord):
            n += sum(len(a.data) for a in rec.values())
        else:
            n += sum(len(v.encode()) if isinstance(v, str) else len(v) if isinstance(v, bytes) else 8
                     for v in rec.values())
    return n


# -- the server side ---------------------------------------------------------------------------------------
class FlowerRuntime(InProcessRuntime):
    """The in-process runtime's interface, delivered through a Flower ``Grid``.

    Args:
        grid: the ``Grid`` the ``ServerApp``'s main receives.
        client_ids: the run's client ids (one Flower node plays each).
        config_json: the run's config, sent to every node so its ClientApp builds the same client side.
        round_timeout: seconds to wait for one send's or broadcast's replies; a late client is dropped for it.
        connect_timeout: seconds to wait for the nodes to connect and build their client side.
        faults: as the in-process runtime's, without ``"exit"`` (it would end Flower's ClientApp process).
        hang_seconds: how long a ``"hang"`` fault sleeps before the client answers.
        torch_threads: torch's thread count for the ClientApp process (None: the client's own).
        data_digests: client id → the digest of the data the split wrote for it (a deployment's manifest); a node
            answering with other data is refused. None: not checked (simulation).
    """

    def __init__(self, grid: Grid, client_ids: list[str], config_json: str, round_timeout: float = 3600.0,
                 connect_timeout: float = 120.0, faults: dict | None = None, replies: dict | None = None,
                 expect: dict | None = None, hang_seconds: float = 3600.0, torch_threads: int | None = None,
                 data_digests: dict[str, str] | None = None):
        super().__init__({cid: None for cid in client_ids}, faults=faults, replies=replies, expect=expect)
        self.data_digests = data_digests
        if any(kind == "exit" for fs in self.faults.values() for _, kind in fs):
            raise ValueError("fail_client kind 'exit' is not available on Flower (it would end the ClientApp process)")
        self.grid, self.round_timeout, self.torch_threads = grid, float(round_timeout), torch_threads
        self.flower_bytes = {"down": 0, "up": 0}
        client_faults = {cid: {"faults": [[r, kind] for r, kind in fs], "hang_seconds": float(hang_seconds)}
                         for cid, fs in self.faults.items()}
        self._nodes = self._connect(config_json, client_faults, connect_timeout)

    def _connect(self, config_json: str, faults: dict, timeout: float) -> dict[str, int]:
        """Wait for the nodes, send each the run's config; each answers which client it plays."""
        need, deadline = len(self.client_ids), time.time() + timeout
        nodes = sorted(self.grid.get_node_ids())
        while len(nodes) < need and time.time() < deadline:
            time.sleep(0.5)
            nodes = sorted(self.grid.get_node_ids())
        if len(nodes) < need:
            raise RuntimeError(f"only {len(nodes)} Flower nodes connected within {timeout:.0f} s; "
                               f"this run has {need} clients")
        payload = {"config": config_json, "client_ids": self.client_ids, "faults": json.dumps(faults)}
        if self.torch_threads is not None:
            payload["torch_threads"] = int(self.torch_threads)
        msgs = [FlowerMessage(to_records("connect", payload), dst_node_id=n, message_type=CONNECT, group_id="0")
                for n in nodes]
        cids: dict[str, int] = {}
        folders: dict[int, str] = {}
        for node, reply in self._exchange(msgs, timeout).items():
            if reply is None or reply.has_error():
                reason = f"no reply within {timeout:.0f} s" if reply is None else _first_line(reply.error.reason)
                raise RuntimeError(f"Flower node {node} could not build its client: {reason}")
            answer = from_records(reply.content)[1]
            # a deployed node names its folder (node_1): its messages name files relative to the deployment folder
            folders[node] = f"{node} ({answer['folder']})" if answer.get("folder") else str(node)
            if answer.get("refused"):  # a deployed node that cannot play the run (its folder edited, copied, …)
                raise RuntimeError(f"Flower node {folders[node]} refused the run: {answer['refused']}")
            cid = answer["cid"]
            if not cid:
                continue
            if cid in cids:  # a copied node folder: two nodes would answer for one client
                raise RuntimeError(f"Flower nodes {folders[cids[cid]]} and {folders[node]} both play {cid}: each "
                                   "client's folder must be on one node only")
            known = (self.data_digests or {}).get(cid)
            if known is not None and answer.get("data_digest") != known:
                where = f"{answer['folder']}/data" if answer.get("folder") else "its data/ folder"
                raise RuntimeError(f"Flower node {folders[node]} plays {cid} with data whose digest is not the "
                                   f"split's: {where} is not the one written for it")
            cids[cid] = node
        missing = [c for c in self.client_ids if c not in cids]
        if missing:
            raise RuntimeError(f"no Flower node plays client(s) {missing}; nodes answered {sorted(cids)}")
        return cids

    def _exchange(self, msgs: list, timeout: float) -> dict[int, Any]:
        """Push ``msgs``; return node → reply (None for a node that did not answer in time)."""
        ids = list(self.grid.push_messages(msgs))
        pending = {mid: m.metadata.dst_node_id for mid, m in zip(ids, msgs)}
        out: dict[int, Any] = {node: None for node in pending.values()}
        deadline = time.time() + timeout
        while pending and time.time() < deadline:
            for reply in self.grid.pull_messages(list(pending)):
                node = pending.pop(reply.metadata.reply_to_message_id, None)
                if node is not None:
                    out[node] = reply
            if pending:
                time.sleep(0.05)
        return out

    def send(self, message: Message) -> Message | ClientFailure:
        return self._deliver_many([message])[message.receiver]

    def broadcast(self, kind: str, round: int, payloads: dict, receivers=None, progress=None) -> dict:
        messages = self.outgoing(kind, round, payloads, receivers)
        t0 = time.time()
        out = self._deliver_many(messages)  # all at once: nodes work in parallel where Flower can
        if progress is not None:
            for m in messages:
                progress(m.receiver, (time.time() - t0) / max(1, len(messages)))
        return out

    def _deliver_many(self, messages: list[Message]) -> dict[str, Message | ClientFailure]:
        """Send every message at once (nodes work in parallel where Flower can), then log as in-process."""
        for m in messages:
            if m.receiver not in self._nodes:
                raise ValueError(f"unknown client {m.receiver!r}; known: {self.client_ids}")
        flower = [FlowerMessage(to_records(m.kind, m.payload), dst_node_id=self._nodes[m.receiver],
                                message_type=message_type(m.kind), group_id=str(m.round)) for m in messages]
        self.flower_bytes["down"] += sum(flower_nbytes(f.content) for f in flower)
        replies = self._exchange(flower, self.round_timeout)
        out: dict[str, Message | ClientFailure] = {}
        for m in messages:  # the ledger in the in-process order: each message, then its reply
            self._log(m)
            reply = replies[self._nodes[m.receiver]]
            if reply is None:
                out[m.receiver] = self._fail(m, "timeout", f"ClientTimeout: {m.receiver} did not answer {m.kind!r} "
                                             f"within {self.round_timeout:g} s; its late reply is never read")
            elif reply.has_error():
                out[m.receiver] = self._fail(m, "raised", f"ClientError: {reply.error.reason}")
            else:
                self.flower_bytes["up"] += flower_nbytes(reply.content)
                try:
                    kind, payload = from_records(reply.content)
                except Exception as e:  # noqa: BLE001 - whatever a node sends drops that client, never the run
                    out[m.receiver] = self._fail(m, "bad_reply", f"BadReply: unreadable Flower records "
                                                 f"({type(e).__name__}: {str(e)[:200]})")
                    continue
                # the same check of every reply against its declared format as in-process
                out[m.receiver] = self._accept(m, Message(kind, m.receiver, m.sender, m.round, payload))
        return out


# -- the client side ---------------------------------------------------------------------------------------
_SIDES: dict[str, dict] = {}  # config JSON → {"clients": {cid: client}, "faults": {...}}, per ClientApp process
_LOCK = threading.Lock()


def _client_side(config_json: str) -> dict:
    """The clients of a run, built in this process exactly as the in-process runtime builds them."""
    with _LOCK:
        if config_json not in _SIDES:
            from fedrl_kit.config import RunConfig
            from fedrl_kit.runs import Run

            run = Run(RunConfig.from_dict(json.loads(config_json)), progress=False).build()
            _SIDES[config_json] = {"clients": run.clients, "config": run.config, "round": 0}
        return _SIDES[config_json]


def _partition_id(context: Context) -> int:
    return int(context.node_config.get("partition-id", context.node_id))


class _NodeState:
    """Which run and client this node plays, and torch's thread count for it (per process, keyed by node id)."""

    plays: dict[int, tuple[str, str, dict, int]] = {}


def _first_line(reason: str) -> str:
    """The message of a ClientApp's error reply in one line, without what Flower (or :class:`LoopbackGrid`) adds
    around it: the ``<class 'X'>:<'…'>`` wrapper, "Exception ClientAppException occurred. Message:" and a traceback.
    ``X: message``, at most 300 characters."""
    import re

    text = str(reason)
    wrapped = re.fullmatch(r"<class '([\w.]+)'>:<'(.*)'>", text.strip(), flags=re.DOTALL)
    if wrapped:
        name, text = wrapped.group(1).rsplit(".", 1)[-1], wrapped.group(2)
        text = re.sub(r"^\s*Exception \w+ occurred\. Message: ", "", text)
        if name != "ClientAppException" and not text.startswith(name):
            text = f"{name}: {text}"
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line[:300]


def _use_threads(threads: int) -> None:
    """torch's intra-op threads for the message being handled (0: leave them). Set per message, not once: the
    ClientApp may handle messages on other threads, and OpenMP keeps the count per thread."""
    if threads:
        import torch

        # always set: torch.get_num_threads() reports the process's pool, not this thread's OpenMP count, so a thread
        # that never set its own would pass a "same count" check and still use OpenMP's default
        torch.set_num_threads(threads)


def _handle(message: FlowerMessage, context: Context) -> FlowerMessage:
    if "data-dir" in context.node_config:  # a deployed node: its own folder, nothing else
        return _handle_deployed(message, context)
    node = context.node_id
    if message.metadata.message_type == CONNECT:
        _, p = from_records(message.content)
        threads = int(p.get("torch_threads") or 0)
        _use_threads(threads)
        side = _client_side(p["config"])
        pid = _partition_id(context)
        cid = p["client_ids"][pid] if pid < len(p["client_ids"]) else ""
        _NodeState.plays[node] = (p["config"], cid, json.loads(p["faults"]), threads)
        _ = side  # built now so that the first real message does not pay for it
        return FlowerMessage(to_records("connect_result", {"cid": cid}), reply_to=message)
    if node not in _NodeState.plays:
        raise RuntimeError(f"node {node} got {message.metadata.message_type!r} before query.connect "
                           "(its ClientApp process was restarted: its client state is gone)")
    config_json, cid, faults, threads = _NodeState.plays[node]
    _use_threads(threads)
    side = _client_side(config_json)
    client = side["clients"][cid]
    rnd = int(message.metadata.group_id)
    k = side["config"].clients_per_round
    if k and rnd > side["round"]:  # a new round: the clients not drawn for it hold nothing live, as in-process
        side["round"] = rnd
        park_idle(side["clients"], draw_participants(side["clients"], k, side["config"].seed, rnd))
    return _answer(message, client, cid, faults)


def _answer(message: FlowerMessage, client, cid: str, faults: dict, before=None, after=None) -> FlowerMessage:
    """``client``'s reply to ``message``, with the fault injection the server asked for (``before``/``after``: what a
    deployed node does around it, with the round)."""
    kind, payload = from_records(message.content)
    rnd = int(message.metadata.group_id)
    mine = faults.get(cid, {"faults": []})
    fault = next((k for r, k in mine["faults"] if r is None or int(r) == rnd), None)
    request = Message(kind, SERVER, cid, rnd, payload)
    if fault == "hang":  # answers, but only after the server has stopped waiting
        time.sleep(mine["hang_seconds"])
    else:
        _inject_before(fault, request)
    if before is not None:
        before(rnd)
    reply = client.handle(request)
    if after is not None:
        after(rnd)
    reply = _inject_after(fault, reply)
    return FlowerMessage(to_records(reply.kind, reply.payload), reply_to=message)


def _handle_deployed(message: FlowerMessage, context: Context) -> FlowerMessage:
    """A SuperNode of a deployment (node config ``data-dir``): the one client of its folder, its state on disk
    (:mod:`fedrl_kit.deploy`: Flower starts a fresh ClientApp process for every message)."""
    from fedrl_kit.deploy import node_for

    node, run_id = node_for(context.node_config), message.metadata.run_id
    if message.metadata.message_type == CONNECT:
        _, p = from_records(message.content)
        threads = int(p.get("torch_threads") or 0)
        _use_threads(threads)
        try:
            digest = node.check_identity(list(p["client_ids"]))
            cid = node.connect(run_id, p["config"], {"faults": json.loads(p["faults"]), "threads": threads})
        except ValueError as e:  # DamagedFolder, another split: the node's one line, no traceback, for the server
            return FlowerMessage(to_records("connect_result", {"cid": "", "folder": node.folder,
                                                               "refused": str(e).splitlines()[0]}), reply_to=message)
        return FlowerMessage(to_records("connect_result", {"cid": cid, "data_digest": digest, "folder": node.folder}),
                             reply_to=message)
    plays = node.plays(run_id)
    _use_threads(int(plays["threads"]))
    client = node.client(plays["config"])
    return _answer(message, client, node.cid, plays["faults"], node.before, node.after)


class FedrlClientApp(ClientApp):
    """A ClientApp that hands every message type (``train.*``, ``evaluate.*``, ``query.*``) to the run's client."""

    def __call__(self, message: FlowerMessage, context: Context) -> FlowerMessage:
        with self._lifespan(context):
            return _handle(message, context)


client_app = FedrlClientApp()
server_app = ServerApp()

_JOB: dict | None = None  # set by run_on_flower in this process; ``flwr run`` reads the run config instead
_RESULTS: list[dict] = []


def _job_from_run_config(run_config: dict) -> dict:
    """``[tool.flwr.app.config]`` → a job: ``method``, ``preset``, ``run-dir``, and ``set`` (``a.b=v;c=w``)."""
    from fedrl_kit.config import preset
    from fedrl_kit.set_syntax import parse_set

    sets = parse_set([kv.strip() for kv in str(run_config.get("set", "")).split(";") if kv.strip()])
    for key in ("method", "preset"):  # keys of the run config themselves (with two values, preset() had a TypeError)
        if key in sets:
            raise ValueError(f"{key} is a key of the run config: give it as --run-config \"{key}='{sets[key]}'\", "
                             f"not inside set")
    cfg = preset(str(run_config.get("preset", "quick")), method=str(run_config.get("method", "fedavg_grpo")), **sets)
    timeout = run_config.get("round-timeout", "")
    return {"runs": [(cfg, run_config.get("run-dir") or None)], "progress": False,
            "round_timeout": None if timeout in ("", None) else float(timeout), "faults": {},
            "server_data": run_config.get("server-data") or None}


def _run_one(grid: Grid, job: dict, cfg, run_dir) -> dict:
    from fedrl_kit.runs import Run

    made: list[FlowerRuntime] = []
    digests = None
    if job.get("server_data"):  # a deployment: the split's record of each node's data
        manifest = Path(job["server_data"]) / "manifest.json"
        digests = json.loads(manifest.read_text()).get("data_digests") if manifest.is_file() else None

    def runtime(clients: dict, faults: dict, timeout=None, replies=None, expect=None) -> FlowerRuntime:
        # cfg.fail_client's faults happen on the client side here; a job's round timeout, when it names one, replaces
        # `timeout` (the run's client_timeout, as in-process: 0 or None = no limit)
        # building the clients (imports, world, policy) in the ClientApp actor is a round's worth of work on a busy
        # machine: it gets the round's deadline, and never less than the default connect wait
        limit = job["round_timeout"] if job["round_timeout"] is not None else timeout
        limit = float(limit) if limit else math.inf
        made.append(FlowerRuntime(grid, list(clients), cfg.to_json(), limit, connect_timeout=max(120.0, limit),
                                  faults={**faults, **job["faults"]}, replies=replies, expect=expect,
                                  hang_seconds=job.get("hang_seconds", 3600.0),
                                  torch_threads=job.get("torch_threads"), data_digests=digests))
        return made[-1]

    # the simulation runs this in a thread of its own, and OpenMP keeps the thread count per thread: take the
    # caller's, or server-side training (central_grpo, FedGRPO's server step) sums floats in another order
    _use_threads(int(job.get("torch_threads") or 0))
    try:
        run = Run(cfg, run_dir, progress=job["progress"], runtime=runtime, server_data=job.get("server_data"))
        records = run.run()
    except BaseException as e:  # noqa: BLE001 - the simulation runs this in a thread: hand the error to the caller
        return {"error": e}
    return {"records": records, "ledger": run.runtime.ledger.to_rows(), "failures": list(run.runtime.failures),
            "flower_bytes": dict(made[-1].flower_bytes) if made else {}}


@server_app.main()
def _server_main(grid: Grid, context: Context) -> None:
    """Run the job's runs one after the other on this simulation's nodes (the same nodes serve every run)."""
    job = _JOB if _JOB is not None else _job_from_run_config(dict(context.run_config))
    try:
        _serve(grid, job)
    finally:  # the runs are done: a client still hanging in its actor must not keep the simulation from ending
        if _JOB is not None:
            _free_busy_actors()


def _serve(grid: Grid, job: dict) -> None:
    for cfg, run_dir in job["runs"]:
        _RESULTS.append(_run_one(grid, job, cfg, run_dir))
        if _JOB is None:  # under `flwr run`: the curve goes to the run's log (`flwr run . --stream`, `flwr log`)
            result = _RESULTS[-1]
            if "error" in result:
                raise result["error"]
            for r in (r for r in result["records"] if r["kind"] == "global"):
                print(f"{cfg.method} round {r['round']:>3}  pass@1 {r['pass@1']:.3f}  format {r['format']:.3f}")
            print(f"run directory: {run_dir or '(none: set run-dir to an absolute path to keep the run)'}")


class LoopbackGrid:
    """A ``Grid`` that hands each message to a ``ClientApp`` in this process: Flower's message types, records,
    contexts and error replies, without Ray or a SuperLink (fast tests, step-by-step debugging).
    """

    def __init__(self, client_app: ClientApp, num_nodes: int, node_configs: list[dict] | None = None):
        import queue

        from flwr.supercore.task_identity import TaskIdentity

        if TaskIdentity._run_id is None:  # what Flower's ServerApp process sets before a server creates messages
            TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0
        self.client_app = client_app
        configs = node_configs or [{"partition-id": i, "num-partitions": num_nodes} for i in range(num_nodes)]
        self.contexts = {1000 + i: Context(run_id=1, node_id=1000 + i, state=RecordDict(), run_config={},
                                           node_config=dict(c)) for i, c in enumerate(configs)}
        self._replies: dict[str, FlowerMessage] = {}
        self._inbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._work, daemon=True, name="loopback-clientapp").start()

    def _work(self) -> None:
        while True:
            msg = self._inbox.get()
            try:
                reply = self.client_app(msg, self.contexts[msg.metadata.dst_node_id])
            except Exception as e:  # noqa: BLE001 - as Flower does: the exception becomes an error reply
                reply = FlowerMessage(Error(code=0, reason=f"{type(e).__name__}: {e}\n"
                                                            f"{traceback.format_exc(limit=3)}"), reply_to=msg)
            self._replies[msg.metadata.message_id] = reply
            self._inbox.task_done()

    def drain(self, timeout: float = 600.0) -> bool:
        """Wait until every pushed message was handled (late ones too); True if none is left."""
        deadline = time.time() + timeout
        while self._inbox.unfinished_tasks and time.time() < deadline:
            time.sleep(0.05)
        return not self._inbox.unfinished_tasks

    def get_node_ids(self) -> list[int]:
        return list(self.contexts)

    def push_messages(self, messages) -> list[str]:
        ids = []
        for msg in messages:
            msg.metadata.__dict__["_message_id"] = str(uuid.uuid4())
            ids.append(msg.metadata.message_id)
            self._inbox.put(msg)
        return ids

    def pull_messages(self, message_ids) -> list[FlowerMessage]:
        return [self._replies.pop(m) for m in list(message_ids) if m in self._replies]


_BACKENDS: list = []
"""the Ray backends of the simulation :func:`run_many_on_flower` runs (one), for :func:`_free_busy_actors`"""


def _tracked_ray_backend():
    """A subclass of Flower's ``RayBackend`` that records each instance in :data:`_BACKENDS` (Flower makes it inside
    ``run_simulation``, out of reach otherwise)."""
    from flwr.server.superlink.fleet.vce.backend.raybackend import RayBackend

    class TrackedRayBackend(RayBackend):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            _BACKENDS.append(self)

    return TrackedRayBackend


class _QuietTeardown:
    """A logging filter dropping Flower's records while :func:`_free_busy_actors` tears down a hung actor (the
    runs are over; its worker logs the killed actor's ``ActorDiedError`` with a traceback)."""

    def filter(self, record) -> bool:
        return False


def _free_busy_actors(grace: float = 1.0) -> int:
    """Kill the actors of the simulation still busy with a message once the runs are done; returns how many.

    A client the server stopped waiting for (its timeout) may still be inside its ClientApp (a hang, a long kernel).
    Flower's simulation engine waits for every worker thread before it shuts Ray down, and a worker waits on its
    actor's task: without this the process never exits once the rounds are done. ``grace`` seconds let a reply that
    is arriving arrive first."""
    import logging

    import ray

    busy = [a for b in _BACKENDS for a in list(getattr(getattr(b, "pool", None), "_future_to_actor", {}).values())]
    if not busy:
        return 0
    time.sleep(grace)
    busy = [a for b in _BACKENDS for a in list(getattr(getattr(b, "pool", None), "_future_to_actor", {}).values())]
    if busy:
        logging.getLogger("flwr").addFilter(_QuietTeardown())  # removed by run_many_on_flower
    for actor in busy:
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
    return len(busy)


def run_on_flower(config, run_dir=None, progress: bool = True, round_timeout: float | None = None,
                  faults: dict | None = None, num_supernodes: int | None = None, hang_seconds: float = 3600.0) -> dict:
    """Run ``config`` on Flower's simulation engine (Ray) in this process and return what it produced.

    Returns:
        ``{"records": metric records, "ledger": ledger rows, "failures": [ClientFailure], "flower_bytes": …}``.
    """
    return run_many_on_flower([(config, run_dir)], progress, round_timeout, faults, num_supernodes, hang_seconds)[0]


def run_many_on_flower(runs: list[tuple], progress: bool = True, round_timeout: float | None = None,
                       faults: dict | None = None, num_supernodes: int | None = None,
                       hang_seconds: float = 3600.0) -> list[dict]:
    """Several ``(config, run_dir)`` runs, one after the other, in one Flower simulation (Ray starts once)."""
    global _JOB
    from flwr.simulation import run_simulation

    n = num_supernodes or max(cfg.num_clients for cfg, _ in runs)
    import torch

    _JOB = {"runs": list(runs), "progress": progress, "round_timeout": round_timeout, "faults": dict(faults or {}),
            "hang_seconds": hang_seconds, "torch_threads": torch.get_num_threads()}
    _RESULTS.clear()
    cpus = os.cpu_count() or 1
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    from flwr.server.superlink.fleet.vce.backend import raybackend

    real_backend, _BACKENDS[:] = raybackend.RayBackend, []
    raybackend.RayBackend = _tracked_ray_backend()  # Flower's vce imports it by name when it starts the backend
    try:
        run_simulation(server_app=server_app, client_app=client_app, num_supernodes=n,
                       backend_config={"client_resources": {"num_cpus": cpus, "num_gpus": 0.0},
                                       "init_args": {"num_cpus": cpus, "include_dashboard": False,
                                                     "logging_level": "ERROR", "log_to_driver": True}})
    except RuntimeError as e:
        failed = next((r["error"] for r in _RESULTS if "error" in r), None)
        if failed is not None:
            raise failed from e
        raise RuntimeError(f"Flower's simulation engine failed ({e}); if the log above says the Ray node "
                           "'timed out during startup', Ray's agents missed their start-up deadline on a busy "
                           "machine: run again when fewer jobs compete for the CPU") from e
    finally:
        _JOB = None
        raybackend.RayBackend = real_backend
        _BACKENDS.clear()
        import logging

        flwr_log = logging.getLogger("flwr")
        for f in [f for f in flwr_log.filters if isinstance(f, _QuietTeardown)]:
            flwr_log.removeFilter(f)
    failed = next((r["error"] for r in _RESULTS if "error" in r), None)
    if failed is not None:
        raise failed
    if len(_RESULTS) != len(runs):
        raise RuntimeError(f"the Flower simulation ended after {len(_RESULTS)} of {len(runs)} runs (see the log above)")
    return list(_RESULTS)
