"""Runs: build a federation from a config, run its rounds, log metrics, checkpoint, resume."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import time
import warnings
from pathlib import Path

import datasets
import numpy as np
import torch

from fedrl_kit.config import RunConfig
from fedrl_kit.evaluate import eval_seed, evaluate
from fedrl_kit.federation.parking import park_idle
from fedrl_kit.federation.replies import REPLIES, UpdateBound, adapter_spec
from fedrl_kit.federation.runtime import InProcessRuntime, parse_faults
from fedrl_kit.federation.server import Server, ServerWorld
from fedrl_kit.federation.truth import SimulatorTruth
from fedrl_kit.methods import method_spec
from fedrl_kit.policy.adapters import GLOBAL, initial_state
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rewards import REWARDS, make_reward_set
from fedrl_kit.world.partition import partition
from fedrl_kit.run_files import (DamagedRunDir, atomic_write, config_digest, read_jsonl_lines, sha256_hex,
                                 state_digest)  # DamagedRunDir and read_jsonl_lines: also imported from here
from fedrl_kit.policy.folder import REPO_ROOT, is_model_folder, resolve_base  # the first two: also imported from here
from fedrl_kit.seeding import cpu_kernels, cpu_model
from fedrl_kit.speed import Sampler
from fedrl_kit.speed.compact import compact_applies
from fedrl_kit.world.registry import build_world, check_dataset_available


class Interrupted(RuntimeError):
    """Raised by ``Run.run(stop_after=…)`` to simulate a crash after a round (tests, demos)."""


class RunDirInUse(ValueError):
    """Another live process is running in this run directory (it holds the lock); a ValueError, as a run_dir that
    cannot be used now (the CLI prints it in one line)."""


class WriteFailed(ValueError):
    """A run could not write its folder (a full disk, a quota); the message names the file, the reason and the round
    the folder resumes from. A ValueError, so that the CLI prints it in one line (with the command that resumes:
    ``file``, ``reason``, ``run_dir`` and ``keeps`` let it say so); a notebook shows it in one line too
    (``_render_traceback_``, as :class:`fedrl_kit.notebook.NotebookStop`)."""

    def __init__(self, file, reason: str, run_dir, keeps: str):
        self.file, self.reason, self.run_dir, self.keeps = file, reason, run_dir, keeps
        super().__init__(f"cannot write {file} ({reason}); {run_dir} keeps {keeps}: free some space and run it again "
                         "(the same command, or the same cell) to resume from there")

    def __reduce__(self):
        return type(self), (self.file, self.reason, self.run_dir, self.keeps)

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


CHECKPOINT_FORMAT = 2
"""state.json's format: 2 records checksums; a state.json without ``format`` was written before them"""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_device(device: str) -> None:
    """Fail fast, in one line, when ``device`` (``cuda`` / ``cuda:N``) is not on this machine."""
    if not device.startswith("cuda"):
        return
    index = int(device.partition(":")[2] or 0)
    if not torch.cuda.is_available():
        raise ValueError(f"device={device!r}, but torch sees no CUDA GPU on this machine "
                         f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); use --set device=cpu")
    if index >= torch.cuda.device_count():
        raise ValueError(f"device={device!r}, but this machine has {torch.cuda.device_count()} CUDA GPU(s) "
                         f"(cuda:0 … cuda:{torch.cuda.device_count() - 1})")


class RunLock:
    """An exclusive ``flock`` on the run folder itself, held by the one process that runs there; the file
    ``run_dir/lock`` names the holder (pid and host) for the message that refuses a second process.
    """

    NOTE = re.compile(rb"pid \d+ on \S*\n?")
    """what a holder writes into ``lock``"""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "lock"
        self.fd: int | None = None
        self._note: tuple[int, int] | None = None  # (device, inode) of the lock file this holder wrote
        self._text = b""  # and its text

    def holder(self) -> str:
        """Who the ``lock`` file says holds the folder ("another process" when it is gone or not a holder's note)."""
        try:
            with open(self.path, "rb") as f:
                note = f.read(200)
        except OSError:
            return "another process"
        return note.decode().strip() if self.NOTE.fullmatch(note) else "another process"

    def acquire(self) -> "RunLock":
        try:
            fd = os.open(self.run_dir, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as e:
            raise ValueError(f"cannot open the run folder {self.run_dir}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RunDirInUse(f"run directory {self.run_dir} is in use by {self.holder()} (it holds a lock on the "
                              "folder); wait for that run to end, or use another run_dir") from None
        try:
            self._note = self._write_note()
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def _write_note(self) -> tuple[int, int]:
        note = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._text = f"pid {os.getpid()} on {socket.gethostname()}\n".encode()
        try:
            os.write(note, self._text)
            st = os.fstat(note)
        except OSError as e:  # a full disk: leave no empty lock behind
            os.close(note)
            self.path.unlink(missing_ok=True)
            raise ValueError(f"cannot write {self.path}: {e.strerror or e}; free some space, or use another "
                             "run_dir") from None
        os.close(note)
        return st.st_dev, st.st_ino

    def _note_is_mine(self) -> bool:
        """Whether ``lock`` is still the file this holder wrote: its inode (a new file may reuse it) and its text."""
        try:
            with open(self.path, "rb") as f:
                st, text = os.fstat(f.fileno()), f.read(200)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._note and text == self._text

    def check(self) -> None:
        """Raise :class:`RunDirInUse` if the folder at ``run_dir`` is no longer the one this holder locked (deleted or
        moved away, and maybe another run in the new one): going on would write into another run's folder."""
        try:
            same = os.path.samestat(os.fstat(self.fd), os.stat(self.run_dir))
        except OSError:
            same = False
        if not same:
            raise RunDirInUse(f"run directory {self.run_dir} was deleted or replaced while this run was writing it: "
                              "stopping, so that two runs never write into one folder")

    def release(self) -> None:
        if self.fd is None:
            return
        if self._note_is_mine():
            self.path.unlink(missing_ok=True)
        else:
            warnings.warn(f"{self.path} was deleted or replaced while this run held {self.run_dir}; the folder "
                          "stayed locked all along (the lock is on the folder), and the file there now is left as "
                          "it is", stacklevel=2)
        os.close(self.fd)  # closing releases the flock
        self.fd = None


RUN_MARKER = "fedrl-run.json"
"""the file that marks a folder as a run folder: written by a run before anything else (with what a fresh start
deletes), never by a user; :func:`fresh_run_dir` empties only a folder that has it (or a checkpoint a run wrote)"""

RUN_FILES = {"config.json": "file", "metrics.jsonl": "file", "ledger.jsonl": "file", "lock": "file",
             "checkpoint": "folder", "checkpoint.old": "folder", "checkpoint.tmp": "folder", RUN_MARKER: "file"}
"""what a run writes into its folder, and as what: a name that exists as the other kind is a damaged folder"""

WRITTEN_BESIDE = ("config.json.tmp", "metrics.jsonl.tmp", "ledger.jsonl.tmp", RUN_MARKER + ".tmp")
"""what else a run writes there: a write cut short"""

DRIFT_TENSOR = re.compile(r"drift_tensors/round\d{4}/(global|step\d{4}_[\w.-]+)\.npz")
"""a file of ``trace_tensors`` (:mod:`fedrl_kit.drift_probe`), the one part of ``drift_tensors/`` a run wrote"""


def check_layout(run_dir: Path) -> None:
    """Refuse, naming it, a name of :data:`RUN_FILES` that is a folder where a file belongs or the reverse (say a
    ``metrics.jsonl`` that is a folder), and a ``run_dir`` that is a file. Reads nothing; writes nothing."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"run_dir {run_dir} is a file, not a folder: pass a folder for the run (a new one, or a run "
                         "folder to resume)")
    for name, kind in RUN_FILES.items():
        path = run_dir / name
        if (path.exists() or path.is_symlink()) and not (path.is_file() if kind == "file" else path.is_dir()):
            raise DamagedRunDir(f"run directory {run_dir} is damaged: {path} is not a {kind} (a run writes a {kind} "
                                "there); move it away, or use a new run_dir")


def _has_marker(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / RUN_MARKER).read_text()).get("written_by") == "fedrl-kit"
    except (OSError, ValueError, AttributeError):
        return False


def is_run_folder(run_dir: Path) -> bool:
    """Whether a run of this toolkit wrote ``run_dir``: it holds :data:`RUN_MARKER`, or (a folder from before the
    marker) a checkpoint whose ``state.json`` holds up (its own checksum; the round and line counts of one written
    before checksums). A ``config.json`` proves nothing: users have their own."""
    if _has_marker(run_dir):
        return True
    for ck in ("checkpoint", "checkpoint.old"):
        try:
            state = json.loads((run_dir / ck / "state.json").read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(state, dict):
            continue
        if state.get("format") is None and all(type(state.get(k)) is int for k in ("round", "n_records", "n_ledger")):
            return True
        if state.get("format") is not None and state.get("sha256") == state_digest(state):
            return True
    return False


def check_owned(run_dir: Path) -> None:
    """Refuse, in one line naming the file, a folder that holds a file by one of a run's names (``config.json``,
    ``metrics.jsonl``, …) but that no run wrote (:func:`is_run_folder`): a run would overwrite it. Writes nothing."""
    if not run_dir.is_dir() or is_run_folder(run_dir):
        return
    for name in (*RUN_FILES, *WRITTEN_BESIDE):
        path = run_dir / name
        if not (path.exists() or path.is_symlink()):
            continue
        if name == "lock" and path.is_file() and not path.is_symlink() and (
                not (note := path.read_bytes()[:200]) or RunLock.NOTE.fullmatch(note)):
            continue  # left by a run killed before it wrote anything else
        raise ValueError(f"{path} was not written by a run of this toolkit ({run_dir} has no {RUN_MARKER}): "
                         "refusing to overwrite or delete it; move it away, or pass another run_dir")


def fresh_run_dir(run_dir: str | Path) -> Path:
    """Delete what a run wrote into ``run_dir`` so that a run starts there from round 0; return it as a Path.

    Only a run folder is touched, and in it only the run's own files: ``figures/``, ``peft_global/`` and any other file
    stay (docs/reliability.md, "Run folders and resume").
    """
    run_dir = Path(run_dir)
    check_layout(run_dir)
    entries = sorted(run_dir.iterdir()) if run_dir.exists() else []
    if not entries:
        return run_dir
    if not is_run_folder(run_dir):
        check_owned(run_dir)  # names a file of a run's name that no run wrote
        raise ValueError(f"{run_dir} is not a run folder (it has no {RUN_MARKER}, which every run writes): refusing "
                         "to delete what it holds; pass a new or empty folder as run_dir")
    lock = RunLock(run_dir).acquire()  # a live run keeps its folder: RunDirInUse names it
    try:
        for name in (*RUN_FILES, *WRITTEN_BESIDE):
            path = run_dir / name
            if name in ("lock", RUN_MARKER):
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        tensors = run_dir / "drift_tensors"
        if tensors.is_dir() and not tensors.is_symlink():
            for f in sorted(tensors.rglob("*.npz")):
                if DRIFT_TENSOR.fullmatch(f.relative_to(run_dir).as_posix()) and f.is_file() and not f.is_symlink():
                    f.unlink()
            folders = [p for p in tensors.rglob("*") if p.is_dir() and not p.is_symlink()]
            for d in sorted(folders, reverse=True) + [tensors]:  # deepest first; emptied ones only
                if not any(d.iterdir()):
                    d.rmdir()
        (run_dir / RUN_MARKER).unlink(missing_ok=True)  # last: a fresh start cut short is still a run folder
    finally:
        lock.release()
    return run_dir


def mark_run_folder(run_dir: Path) -> None:
    """Write :data:`RUN_MARKER` into ``run_dir`` (once): it is a run folder, and what a fresh start deletes there."""
    if not _has_marker(run_dir):
        atomic_write(run_dir / RUN_MARKER, json.dumps({
            "written_by": "fedrl-kit",
            "a_fresh_start_deletes": sorted(n for n in (*RUN_FILES, *WRITTEN_BESIDE) if n != "lock")
            + ["drift_tensors/round*/*.npz"]}, indent=1) + "\n")


def _write_failure(e: BaseException) -> str | None:
    """Why a write into the run folder failed, in a few words, when ``e`` is such a failure: a full disk or quota
    (``OSError`` ENOSPC, EDQUOT), or ``torch.save`` cut short by one (its ``RuntimeError`` of the zip writer, e.g.
    "[enforce fail at inline_container.cc] … unexpected pos"); else None."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return e.strerror or os.strerror(e.errno)
    text = str(e)
    if isinstance(e, RuntimeError) and any(w in text for w in ("PytorchStreamWriter", "unexpected pos",
                                                                "file write failed")):
        return f"torch.save failed: {text.splitlines()[0][:120]}; is the disk full?"
    return None


def _make_run_dir(run_dir: Path) -> list[Path]:
    """Make ``run_dir`` (and missing parents); return the folders made, deepest first (a refused run removes them)."""
    made = []
    for d in (run_dir, *run_dir.parents):
        if d.exists():
            break
        made.append(d)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"cannot make the run folder {run_dir}: {e.strerror or e}") from None
    return made


def _remove_made(made: list[Path]) -> None:
    """Remove the folders a refused run made, deepest first, if they are still empty."""
    for d in made:
        try:
            d.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def _writing(path):
    """Name ``path`` in a write failure raised inside (a full disk's ``OSError`` from ``write`` or ``fsync`` carries no
    file name, nor does ``torch.save``'s ``RuntimeError``), so that the one line a full disk ends a run with says which
    file it was writing."""
    try:
        yield
    except (OSError, RuntimeError) as e:
        if getattr(e, "filename", None) is None:
            e.filename = str(path)
        raise


def load_policy(cfg: RunConfig, policy: Policy | None = None) -> Policy:
    """The run's shared policy (``policy``, when one is reused, else ``cfg.base`` with a fresh adapter of the seed) with
    the sampling path ``cfg`` picks: what :meth:`Run.build` uses, and what a deployed node loads for its one client."""
    if policy is None:
        policy = Policy.load(resolve_base(cfg.base), cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.chat,
                             cfg.max_new_tokens, cfg.temperature, cfg.device, getattr(torch, cfg.dtype),
                             cfg.lora_targets)
        if cfg.rollout_backend != "hf":  # vLLM serves every client's adapter from one engine (GPU only)
            from fedrl_kit.policy.backends import make_backend

            policy.backend = make_backend(cfg.rollout_backend, resolve_base(cfg.base),
                                          max_loras=max(1, cfg.num_clients), max_lora_rank=cfg.lora_rank)
    path = cfg.speed_path()
    if cfg.generation_loop == "auto" and path["generation_loop"] == "compact" and not compact_applies(
            policy.model):  # e.g. a real model whose generation config sets more than the temperature
        path["generation_loop"] = "hf"
    policy.sampler = Sampler(path["generation_loop"], path["prompt_pass"])
    return policy


class Run:
    """One method on one federation, with a run directory.

    Args:
        config: a :class:`~fedrl_kit.config.RunConfig` (validated here).
        run_dir: where config, metrics and checkpoints go; None keeps everything in memory.
        progress: show tqdm progress bars (notebook-aware).
        policy: reuse an already loaded :class:`Policy` (notebooks running several methods).
        runtime: ``"inprocess"`` (default), ``"serialising"`` (every payload through bytes; same results), or a
            callable ``runtime(clients, faults) -> runtime`` (Flower's: :mod:`fedrl_kit.flower`).
        server_data: deployed (:mod:`fedrl_kit.deploy`): the server's folder of a split federation; the server
            builds only its own splits, every client lives on its own node.
    """

    RUNTIMES = ("inprocess", "serialising")

    def __init__(self, config: RunConfig, run_dir: str | Path | None = None, progress: bool = True,
                 policy: Policy | None = None, runtime: str = "inprocess", server_data: str | Path | None = None):
        if not callable(runtime) and runtime not in self.RUNTIMES:
            raise ValueError(f"runtime must be one of {tuple(self.RUNTIMES)} or a callable, got {runtime!r}")
        if server_data is not None:  # refused in one line before anything is built or written
            from fedrl_kit.federation.split import check_deployable
            from fedrl_kit.methods import check_deployable as check_method

            if not callable(runtime):
                raise ValueError(f"a deployed run reaches its clients through Flower (fedrl_kit.flower), not runtime "
                                 f"{runtime!r}")
            check_method(config.method)
            check_deployable(config, server_data)
        self.server_data = Path(server_data) if server_data is not None else None
        self.runtime_kind = runtime
        self.config = config.validate()
        if self.config.client_batching == "lockstep" and runtime != "inprocess":
            raise ValueError(f'client_batching "lockstep" needs the in-process runtime, not {runtime!r} (Flower and '
                             'the serialising runtime run clients one by one: use "sequential")')
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.progress = progress
        self.records: list[dict] = []
        self._policy = policy
        self.initial_state: dict | None = None
        """The global adapter before round 1 (LoRA's B at 0: the base model), set by build(); before/after reads it."""
        self._built = False

    # -- construction ------------------------------------------------------------------------------
    def check_available(self) -> None:
        """A missing dataset or model, or an absent GPU, in one line before anything is built or written
        (file-system checks only; once per run)."""
        if getattr(self, "_available", False):
            return
        check_dataset_available(self.config.world, self.config.dataset)
        if self._policy is None:
            base = resolve_base(self.config.base)
            if not is_model_folder(base):  # a hub id, a GGUF file, an alias: the hub part says what is missing
                from fedrl_kit.policy.hub import check_model_available

                check_model_available(base)
            check_device(self.config.device)
            from fedrl_kit.policy.memory import check_fits, model_config

            check_fits(self.config.replace(base=base))  # refuse a run that will not fit
            arch = model_config(base)
        else:
            arch = getattr(self._policy.model, "config", None)
        check_model = method_spec(self.config.method).check_model
        if check_model is not None and arch is not None:  # limits the model puts on the method's fields
            check_model(self.config, arch)
        self._available = True

    def build(self) -> "Run":
        """Make the world, the partition, the policy, the clients and the runtime."""
        if self._built:
            return self
        cfg = self.config
        self.check_available()
        torch.manual_seed(cfg.seed)
        if self.server_data is None:
            self.world = build_world(cfg)
            # a world with one training pool is partitioned here; a multi-family world's clients are planned by
            # their method (fedrl_kit.fedmoa.plan.client_plan), which sets run.partitions in build_clients
            self.partitions = (partition(self.world.train, cfg.num_clients, cfg.partition, cfg.dirichlet_alpha,
                                         cfg.topics_per_client, cfg.equal_size, cfg.seed)
                               if isinstance(self.world.train, datasets.Dataset) else None)
        else:  # deployed: the server's own splits from its folder; the clients' data is on their nodes
            from fedrl_kit.federation.split import load_server_world

            self.world, self.partitions = load_server_world(self.server_data, cfg), None
        self.policy = self._policy = load_policy(cfg, self._policy)
        self.reward_set = make_reward_set(cfg.rewards, cfg.reward_weights or None)
        self.grpo, self.local = cfg.grpo_settings(), cfg.local_settings()
        self.spec = method_spec(cfg.method)
        # what a method's build_clients may add: splits its protocol gives the server (FedGRPO's D_s questions),
        # and facts only its diagnostics may read (who holds which of them)
        self.server_splits: dict = {}
        self.truth_facts: dict = {}
        if self.server_data is None:
            clients = self.spec.build_clients(self)  # simulation side: the objects the runtime holds
        else:  # deployed: the runtime reaches each client on its own node; the server holds no client object
            clients = {cid: None for cid in self.world.client_ids}
        faults = parse_faults(cfg.fail_client)
        for cid in faults:
            if cid not in clients:
                raise ValueError(f"fail_client names {cid!r}, which is not a client of this run: {sorted(clients)}")
        self.probe = None
        if cfg.trace_drift:  # simulation-side: snapshots each client's adapter after every local step
            from fedrl_kit.drift_probe import DriftProbe

            if cfg.trace_tensors and self.run_dir is None:
                raise ValueError("trace_tensors needs a run directory to write the tensors to (Run(config, run_dir))")
            self.probe = DriftProbe(cfg.lora_alpha / cfg.lora_rank,
                                    tensors_dir=self.run_dir / "drift_tensors" if cfg.trace_tensors else None)
            for c in clients.values():
                c.probe = self.probe
        self.clients = clients
        # the seed's fresh adapter, also when the policy is reused from an earlier run (its "global" moved)
        start = initial_state(self.policy.model, cfg.seed)
        # every reply is checked against its declared format (the adapter against this one's names and shapes)
        make = self.runtime_kind if callable(self.runtime_kind) else InProcessRuntime
        if self.runtime_kind == "serialising":  # every payload through bytes and back (fedrl_kit.federation.wire)
            from fedrl_kit.federation.wire import SerialisingRuntime

            make = SerialisingRuntime
        if cfg.client_batching == "lockstep":  # clients step together (fedrl_kit.federation.lockstep)
            from fedrl_kit.federation.lockstep import LockstepRuntime

            if cfg.device == "cpu":  # K clients' activations in one batch: keep freed memory
                from fedrl_kit.speed.allocator import keep_freed_memory

                keep_freed_memory()

            make = functools.partial(LockstepRuntime, kinds=self.spec.lockstep)
        self.runtime = make(
            clients, faults=faults, timeout=cfg.client_timeout, replies={**REPLIES, **self.spec.replies},
            expect={"adapter": adapter_spec(start), "num_generations": cfg.num_generations,
                    # no reply may move a value further than the clients' own Adam(W) can in a round
                    "update_bound": UpdateBound(cfg.learning_rate, cfg.local_steps * cfg.num_iterations,
                                                cfg.weight_decay, cfg.reset_optimizer)})
        self.policy.set_state(GLOBAL, start)
        self.server = Server(self.runtime, self.policy, cfg, ServerWorld.of(self.world, **self.server_splits), start)
        self.truth = SimulatorTruth(clients, self.truth_facts)  # for the method's diagnostics only, never the server
        if clients:  # round 0: each client says what the server may know of it (data size, reward names, …)
            plan = self._planned_sizes(clients)
            if plan is not None:  # simulation: the plan says each client's size; a claim of another is refused
                self.runtime.expect["num_examples"] = plan
            ok, _ = self.server.split_replies(self.runtime.broadcast("properties", 0, {}))
            self.server.properties = {cid: r.payload for cid, r in ok.items()}
            # FedAvg's weights: what the server knows, never what a later reply claims (replies.examples)
            self.server.sizes = plan if plan is not None else {cid: p["num_examples"] for cid, p in
                                                               self.server.properties.items()}
            self.runtime.expect["num_examples"] = self.server.sizes
        self.initial_state = {k: v.copy() for k, v in self.server.global_state.items()}
        self._built = True
        return self

    def _planned_sizes(self, clients: dict) -> dict[str, int] | None:
        """Each client's size as the simulation planned it: the length of the data it handed the client when it made
        it (before any message); None when deployed (the clients are on their nodes)."""
        if self.server_data is not None:
            return None
        try:
            return {cid: len(c.data) for cid, c in clients.items()}
        except (AttributeError, TypeError):  # a client class without a sized `data`: its round-0 properties then
            return None

    # -- bookkeeping -----------------------------------------------------------------------------
    def _record(self, rec: dict, fh) -> None:
        self.records.append(rec)
        if fh is not None:
            line = (json.dumps(rec) + "\n").encode()
            with _writing(self.run_dir / "metrics.jsonl"):
                fh.write(line)
                fh.flush()
            self._digest["metrics.jsonl"].update(line)

    def _write_ledger(self, rows: list[dict], lh) -> None:
        if lh is None:
            return
        with _writing(self.run_dir / "ledger.jsonl"):
            for row in rows:
                line = (json.dumps(row) + "\n").encode()
                lh.write(line)
                self._digest["ledger.jsonl"].update(line)
            lh.flush()
        self._ledger_lines += len(rows)

    def _checkpoint(self, round: int, handles=()) -> None:
        """Write the resume point of ``round``: beside the old one, fsync'd, swapped in by renames, old one deleted."""
        if self.run_dir is None:
            return
        if getattr(self, "_lock", None) is not None:  # still our folder: never write into another run's
            self._lock.check()
        for h in handles:  # the lines this checkpoint vouches for are on disk before it is
            if h is not None:
                with _writing(h.name):
                    os.fsync(h.fileno())
        ck, tmp, old = (self.run_dir / n for n in ("checkpoint", "checkpoint.tmp", "checkpoint.old"))
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with _writing(tmp / "global.npz"):
            np.savez(tmp / "global.npz", **self.server.global_state)
        if not self.config.reset_optimizer:
            opt = {cid: sd for cid, c in self.clients.items()
                   if hasattr(c, "optimizer_state") and (sd := c.optimizer_state()) is not None}
            with _writing(tmp / "optimizers.pt"):
                torch.save(opt, tmp / "optimizers.pt")
        if self.spec.save_state is not None:
            with _writing(tmp):  # a method's state files (their own names, when the error has one)
                self.spec.save_state(self.server, tmp)
        files = {}
        for f in sorted(tmp.iterdir()):
            files[f.name] = sha256_hex(f.read_bytes())
            with open(f, "rb+") as fh, _writing(f):
                os.fsync(fh.fileno())
        state = {"format": CHECKPOINT_FORMAT, "round": round, "n_records": len(self.records),
                 "n_ledger": len(self.runtime.ledger.records), "ledger_lines": self._ledger_lines,
                 "metrics_sha256": self._digest["metrics.jsonl"].hexdigest(),
                 "ledger_sha256": self._digest["ledger.jsonl"].hexdigest(),
                 "config_sha256": config_digest((self.run_dir / "config.json").read_text()), "files": files,
                 "cpu_kernels": cpu_kernels(), "cpu_model": cpu_model()}
        state["sha256"] = state_digest(state)
        with open(tmp / "state.json", "w") as fh, _writing(tmp / "state.json"):
            fh.write(json.dumps(state))
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(tmp)
        if ck.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(ck, old)
        os.replace(tmp, ck)
        _fsync_dir(self.run_dir)
        shutil.rmtree(old, ignore_errors=True)

    def _damaged(self, what: str) -> DamagedRunDir:
        return DamagedRunDir(f"run directory {self.run_dir} is damaged: {what}; it cannot be resumed safely "
                             "(use a new run_dir, or restore the file)")

    def _refuse_lost_checkpoint(self, ck: Path) -> None:
        """A folder without a checkpoint starts from round 0, overwriting metrics.jsonl and ledger.jsonl: refuse
        that when they hold a round past 0 (the checkpoint was deleted, not yet to be written)."""
        for name in ("metrics.jsonl", "ledger.jsonl"):
            path = self.run_dir / name
            if not path.exists():
                continue
            lines = path.read_bytes().split(b"\n")[:-1]  # complete lines: a kill may cut the last one short
            done = [r["round"] for r in read_jsonl_lines(path, lines, skip_blank=True)
                    if isinstance(r.get("round"), int) and not isinstance(r.get("round"), bool) and r["round"] > 0]
            if done:
                missing = ck / "state.json" if ck.is_dir() else ck
                raise self._damaged(f"{missing} is missing, but {path} records rounds up to {max(done)}: starting "
                                    "again from round 0 would overwrite them")

    def _resume(self) -> int:
        """Load the last checkpoint if there is one (:mod:`fedrl_kit.resume`); return the last completed round (-1 if
        none)."""
        if self.run_dir is None:
            return -1
        cfg_path = self.run_dir / "config.json"
        if cfg_path.exists():
            from fedrl_kit.resume import check_config

            check_config(self, cfg_path)
        ck = self.run_dir / "checkpoint"
        if not (ck / "state.json").exists() and (self.run_dir / "checkpoint.old" / "state.json").exists():
            ck = self.run_dir / "checkpoint.old"  # killed between the two renames of a checkpoint swap
        if not (ck / "state.json").exists():
            self._refuse_lost_checkpoint(ck)
            return -1
        from fedrl_kit.resume import load_checkpoint, read_state  # only a folder with a checkpoint reads one back

        state = read_state(self, ck)
        check_kernels(self.run_dir, state.get("cpu_kernels"))
        return load_checkpoint(self, ck, state, cfg_path)

    # -- the loop ------------------------------------------------------------------------------------
    @property
    def accuracy_fn(self):
        """How this run's world scores an answer (a method's world may score its own way: FedMOA's code family
        runs programs in the sandbox)."""
        return REWARDS[getattr(self.world, "accuracy_reward", "accuracy")]

    def evaluate_global(self, round: int) -> dict:
        """Load the global adapter into the policy and score it on the test split."""
        self.policy.set_state(GLOBAL, self.server.global_state)
        res = evaluate(self.policy, GLOBAL, self.world.test, self.config.eval_samples,
                       seed=eval_seed(self.config.seed), batch_size=self.config.eval_batch_size,
                       accuracy_fn=self.accuracy_fn)
        return {"kind": "global", "round": round, **res}

    def run(self, stop_after: int | None = None) -> list[dict]:
        """Run (or resume) all rounds; returns the metric records.

        Args:
            stop_after: raise :class:`Interrupted` right after this round is checkpointed (to test resume).
        """
        self.check_available()
        lock, made = None, []
        self._wrote = False
        if self.run_dir is not None:  # a second run into this folder stops here, before loading anything
            check_layout(self.run_dir)
            check_owned(self.run_dir)  # a config.json (…) of the user's own is never overwritten
            made = _make_run_dir(self.run_dir)
            try:
                lock = RunLock(self.run_dir).acquire()
            except BaseException:
                _remove_made(made)
                raise
        self._lock = lock
        try:
            self.build()
            return self._run_locked(stop_after)
        except (OSError, RuntimeError) as e:
            if self.run_dir is None or not _write_failure(e):
                raise
            where = getattr(e, "filename", None) or self.run_dir
            raise WriteFailed(where, _write_failure(e), self.run_dir, self._resume_point()) from None
        finally:
            if lock is not None:
                lock.release()
            if not self._wrote:  # refused (or stopped) before writing anything: leave no folder it made
                _remove_made(made)

    def _resume_point(self) -> str:
        """What a folder whose writing failed resumes from, in words."""
        for ck in ("checkpoint", "checkpoint.old"):
            try:
                return f"its checkpoint of round {json.loads((self.run_dir / ck / 'state.json').read_text())['round']}"
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return "no checkpoint yet (the run starts again from round 0)"

    def _run_locked(self, stop_after: int | None) -> list[dict]:
        from tqdm.auto import tqdm

        cfg = self.config
        self._digest = {"metrics.jsonl": hashlib.sha256(), "ledger.jsonl": hashlib.sha256()}
        self._ledger_lines = 0
        last = self._resume()
        if self.run_dir is not None:
            self._wrote = True
            mark_run_folder(self.run_dir)  # first: a folder holding anything a run wrote is marked as a run's
            atomic_write(self.run_dir / "config.json", cfg.to_json())
        mode = "ab" if last >= 0 else "wb"
        fh = open(self.run_dir / "metrics.jsonl", mode) if self.run_dir else None
        lh = open(self.run_dir / "ledger.jsonl", mode) if self.run_dir else None
        try:
            if last < 0:
                self._record(self.evaluate_global(0), fh)
                self._checkpoint(0, (fh, lh))
                last = 0
            rounds = range(last + 1, (cfg.rounds if self.spec.trains else 0) + 1)
            bar = tqdm(rounds, desc=cfg.method, disable=not self.progress, initial=last, total=cfg.rounds)
            for r in bar:
                n_ledger = len(self.runtime.ledger.records)
                t0 = time.time()
                if self.probe is not None:
                    self.probe.start_round(self.server.global_state, r)
                self.runtime.expect["broadcast"] = self.server.global_state  # what the update bound is measured from
                if cfg.clients_per_round:  # a client sitting this round out holds nothing live (GRPOClient.park)
                    park_idle(self.clients, self.server.participants(r))
                out = self.spec.run_round(self.server, r)
                if self.spec.diagnostics is not None:  # analysis with simulator truth, after the server's round
                    for cid, m in self.spec.diagnostics(self.truth, r, out).items():
                        out["clients"].setdefault(cid, {}).update(m)
                out.pop("trace", None)
                for cid, m in out["clients"].items():
                    self._record({"kind": "client", "round": r, "client": cid, **m}, fh)
                for f in out["failed"]:
                    self._record({"kind": "failure", "round": r, **f}, fh)
                for d in (self.probe.end_round() if self.probe is not None else []):
                    self._record({"kind": "drift", "round": r, **d}, fh)
                new = self.runtime.ledger.records[n_ledger:]
                self._write_ledger(new, lh)
                comm = {"kind": "comm", "round": r, "seconds": round(time.time() - t0, 2),
                        "down": sum(x["nbytes"] for x in new if x["direction"] == "down"),
                        "up": sum(x["nbytes"] for x in new if x["direction"] == "up")}
                if cfg.clients_per_round:  # who took part (absent when every client does, as before)
                    comm["participants"] = self.server.participants(r)
                self._record(comm, fh)
                if r % cfg.eval_every == 0 or r == cfg.rounds:
                    ev = self.evaluate_global(r)
                    self._record(ev, fh)
                    bar.set_postfix({"pass@1": f"{ev['pass@1']:.3f}"})
                if r % cfg.checkpoint_every == 0 or r == cfg.rounds:
                    self._checkpoint(r, (fh, lh))
                if stop_after is not None and r == stop_after:
                    raise Interrupted(f"stopped after round {r} (stop_after)")
        finally:
            for h in (fh, lh):
                if h is not None:
                    h.close()
        return self.records

    # -- views -----------------------------------------------------------------------------------------
    def global_curve(self) -> list[dict]:
        return [r for r in self.records if r["kind"] == "global"]

    def client_records(self) -> list[dict]:
        return [r for r in self.records if r["kind"] == "client"]


def load_records(run_dir: str | Path) -> list[dict]:
    """The metric records of a run directory (DamagedRunDir names the line of a bad one)."""
    path = Path(run_dir) / "metrics.jsonl"
    return read_jsonl_lines(path, path.read_bytes().splitlines(), skip_blank=True)


def check_kernels(run_dir: str | Path, kernels: str | None) -> None:
    """Refuse a run directory computed with other torch CPU kernels than this process runs (``kernels`` as its
    checkpoint records them; None or "not recorded" for checkpoints written before they were recorded).
    """
    if kernels not in (None, "not recorded") and kernels != cpu_kernels():
        raise ValueError(f"run directory {run_dir} was computed with torch's {kernels} CPU kernels and "
                         f"this process runs {cpu_kernels()}: they round floats differently, so resuming or "
                         f"reading it back here would mix two different runs. Set ATEN_CPU_CAPABILITY="
                         f"{kernels.lower()} before torch is imported, or use a new run_dir")


def recorded_kernels(run_dir: str | Path) -> str:
    """The torch CPU kernels a finished or checkpointed run directory was computed with, as its checkpoint
    records them; ``"not recorded"`` for checkpoints written before they were recorded.
    """
    return _checkpoint_state(run_dir).get("cpu_kernels", "not recorded")


def recorded_cpu_model(run_dir: str | Path) -> str:
    """The CPU model a run directory's checkpoint was written on (``"not recorded"`` for older checkpoints)."""
    return _checkpoint_state(run_dir).get("cpu_model", "not recorded")


def _checkpoint_state(run_dir: str | Path) -> dict:
    path = Path(run_dir) / "checkpoint" / "state.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {run_dir} holds no checkpoint")
    return json.loads(path.read_text())
