"""Runs: build a federation from a config, run its rounds, log metrics, checkpoint, resume.

A run directory holds::

    config.json       the validated RunConfig
    metrics.jsonl     one line per record: kind "global" (test-split evaluation of the global
                      model), "client" (each client's local-training metrics), "failure",
                      "comm" (bytes per round by direction), "drift" (per local step, with
                      ``trace_drift``; see fedrl_kit.pubswap.instrument)
    ledger.jsonl      every message (kind, sender, receiver, round, bytes)
    checkpoint/       the global adapter and state of the last completed round (resume point)

Resuming: ``Run(cfg, run_dir).run()`` on a directory with a checkpoint continues from the last
completed round. All randomness is keyed by (seed, round, client, step), so the resumed run
ends bit-identical to an uninterrupted one on the same CPU (a test checks this).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import datasets
import numpy as np
import torch

from fedrl_kit.config import RunConfig, migrate
from fedrl_kit.evaluate import eval_seed, evaluate
from fedrl_kit.federation.runtime import InProcessRuntime, SerialisingRuntime
from fedrl_kit.federation.server import Server, ServerWorld
from fedrl_kit.federation.truth import SimulatorTruth
from fedrl_kit.methods import method_spec
from fedrl_kit.policy.adapters import GLOBAL, initial_state
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rewards import REWARDS, make_reward_set
from fedrl_kit.world.partition import partition
from fedrl_kit.policy.hub import check_model_available
from fedrl_kit.world.registry import build_world, check_dataset_available

REPO_ROOT = Path(__file__).resolve().parents[1]


class Interrupted(RuntimeError):
    """Raised by ``Run.run(stop_after=…)`` to simulate a crash after a round (tests, demos)."""


def resolve_base(base: str) -> str:
    """A local checkpoint folder (relative to the cwd or to the repo root), else the hub id as given."""
    for cand in (Path(base), REPO_ROOT / base):
        if cand.is_dir():
            return str(cand)
    if base == "data/base":
        raise FileNotFoundError(
            f"the embedded base checkpoint {REPO_ROOT / base} is missing: build it with `fedrl pretrain` "
            "(a few CPU minutes) or check out data/base from the repository")
    return base


def _flat(d: dict, prefix: str = "") -> dict:
    """A config dict with its sections flattened to dotted names (``fedgrpo.num_experts``)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class Run:
    """One method on one federation, with a run directory.

    Args:
        config: a :class:`~fedrl_kit.config.RunConfig` (validated here).
        run_dir: where config, metrics and checkpoints go; None keeps everything in memory.
        progress: show tqdm progress bars (notebook-aware).
        policy: reuse an already loaded :class:`Policy` (notebooks running several methods).
        runtime: how messages travel: ``"inprocess"`` (default) or ``"serialising"`` (every payload through
            bytes and back, clients out of the server's reach; same results — a test checks it for every method).
    """

    RUNTIMES = {"inprocess": InProcessRuntime, "serialising": SerialisingRuntime}

    def __init__(self, config: RunConfig, run_dir: str | Path | None = None, progress: bool = True,
                 policy: Policy | None = None, runtime: str = "inprocess"):
        if runtime not in self.RUNTIMES:
            raise ValueError(f"runtime must be one of {tuple(self.RUNTIMES)}, got {runtime!r}")
        self.runtime_kind = runtime
        self.config = config.validate()
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.progress = progress
        self.records: list[dict] = []
        self._policy = policy
        self._built = False

    # -- construction ------------------------------------------------------------------------------
    def build(self) -> "Run":
        """Make the world, the partition, the policy, the clients and the runtime."""
        if self._built:
            return self
        cfg = self.config
        # a missing dataset or model is reported in one line before any problem is built (file-system checks only)
        check_dataset_available(cfg.world, cfg.dataset)
        if self._policy is None:
            check_model_available(resolve_base(cfg.base))
        torch.manual_seed(cfg.seed)
        self.world = build_world(cfg)
        # a world with one training pool is partitioned here; a multi-family world's clients are planned by
        # their method (fedrl_kit.fedmoa.plan.client_plan), which sets run.partitions in build_clients
        self.partitions = (partition(self.world.train, cfg.num_clients, cfg.partition, cfg.dirichlet_alpha,
                                     cfg.topics_per_client, cfg.equal_size, cfg.seed)
                           if isinstance(self.world.train, datasets.Dataset) else None)
        if self._policy is None:
            dtype = getattr(torch, cfg.dtype)
            self._policy = Policy.load(resolve_base(cfg.base), cfg.lora_rank, cfg.lora_alpha, cfg.seed, cfg.chat,
                                       cfg.max_new_tokens, cfg.temperature, cfg.device, dtype, cfg.lora_targets)
        self.policy = self._policy
        self.reward_set = make_reward_set(cfg.rewards, cfg.reward_weights or None)
        self.grpo, self.local = cfg.grpo_settings(), cfg.local_settings()
        self.spec = method_spec(cfg.method)
        # what a method's build_clients may add: splits its protocol gives the server (FedGRPO's D_s questions),
        # and facts only its diagnostics may read (who holds which of them)
        self.server_splits: dict = {}
        self.truth_facts: dict = {}
        clients = self.spec.build_clients(self)  # simulation side: the objects the runtime holds
        faults = {}
        if cfg.fail_client:
            cid, r = cfg.fail_client.split("@")
            if cid not in clients:
                raise ValueError(f"fail_client names {cid!r}, which is not a client of this run: {sorted(clients)}")
            faults[cid] = int(r)
        self.probe = None
        if cfg.trace_drift:  # simulation-side: snapshots each client's adapter after every local step
            from fedrl_kit.pubswap.instrument import DriftProbe

            self.probe = DriftProbe(cfg.lora_alpha / cfg.lora_rank)
            for c in clients.values():
                c.probe = self.probe
        self.clients = clients
        self.runtime = self.RUNTIMES[self.runtime_kind](clients, faults=faults)
        # the seed's fresh adapter, also when the policy is reused from an earlier run (its "global" moved)
        start = initial_state(self.policy.model, cfg.seed)
        self.policy.set_state(GLOBAL, start)
        self.server = Server(self.runtime, self.policy, cfg, ServerWorld.of(self.world, **self.server_splits), start)
        self.truth = SimulatorTruth(clients, self.truth_facts)  # for the method's diagnostics only, never the server
        if clients:  # round 0: each client says what the server may know of it (data size, reward names, …)
            ok, _ = self.server.split_replies(self.runtime.broadcast("properties", 0, {}))
            self.server.properties = {cid: r.payload for cid, r in ok.items()}
        self._initial_state = {k: v.copy() for k, v in self.server.global_state.items()}
        self._built = True
        return self

    # -- bookkeeping -----------------------------------------------------------------------------
    def _record(self, rec: dict, fh) -> None:
        self.records.append(rec)
        if fh is not None:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()

    def _checkpoint(self, round: int) -> None:
        if self.run_dir is None:
            return
        ck = self.run_dir / "checkpoint"
        tmp = self.run_dir / "checkpoint.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        np.savez(tmp / "global.npz", **self.server.global_state)
        if not self.config.reset_optimizer:
            opt = {cid: c.optimizer.state_dict() for cid, c in self.clients.items()
                   if getattr(c, "optimizer", None) is not None}
            torch.save(opt, tmp / "optimizers.pt")
        if self.spec.save_state is not None:
            self.spec.save_state(self.server, tmp)
        (tmp / "state.json").write_text(json.dumps({"round": round, "n_records": len(self.records),
                                                    "n_ledger": len(self.runtime.ledger.records)}))
        shutil.rmtree(ck, ignore_errors=True)
        os.replace(tmp, ck)  # the checkpoint switches in one rename: a crash never leaves half of one

    def _resume(self) -> int:
        """Load the last checkpoint if there is one; return the last completed round (-1 if none)."""
        if self.run_dir is None:
            return -1
        cfg_path = self.run_dir / "config.json"
        if cfg_path.exists():
            try:
                saved = _flat(migrate(json.loads(cfg_path.read_text())))
            except (json.JSONDecodeError, UnicodeDecodeError, ValueError, AttributeError) as e:
                raise ValueError(f"run directory {self.run_dir} is damaged: {cfg_path} is not a readable config "
                                 f"({type(e).__name__}: {e}); use a new run_dir") from None
            mine = _flat(self.config.to_dict())
            # a field missing from an older config.json had its default then: fields are only ever added
            # with the default that keeps the old behaviour (e.g. trace_drift = False)
            default = _flat(RunConfig().to_dict())
            diff = sorted(k for k in mine if k != "rounds" and saved.get(k, default[k]) != mine[k])
            if diff:
                raise ValueError(f"run directory {self.run_dir} holds a run with a different config "
                                 f"(fields {diff}); use a new run_dir or the same config")
        ck = self.run_dir / "checkpoint"
        if not (ck / "state.json").exists():
            return -1
        state = json.loads((ck / "state.json").read_text())
        with np.load(ck / "global.npz") as z:
            self.server.global_state = {k: z[k] for k in z.files}
        if self.spec.load_state is not None:
            self.spec.load_state(self.server, ck)
        if (ck / "optimizers.pt").exists():
            opt = torch.load(ck / "optimizers.pt")
            for cid, sd in opt.items():
                client = self.clients[cid]
                self.policy.set_state(cid, self.server.global_state)  # creates the adapter the moments belong to
                client.optimizer = torch.optim.Adam(self.policy.trainable(cid), lr=self.config.learning_rate)
                client.optimizer.load_state_dict(sd)
        for name, n in (("metrics.jsonl", state["n_records"]), ("ledger.jsonl", state["n_ledger"])):
            path = self.run_dir / name
            lines = path.read_text().splitlines()[:n] if path.exists() else []
            _atomic_write(path, "".join(line + "\n" for line in lines))
            if name == "metrics.jsonl":
                self.records = [json.loads(line) for line in lines]
            else:
                self.runtime.ledger.records = [json.loads(line) for line in lines]
        return state["round"]

    # -- the loop ------------------------------------------------------------------------------------
    def evaluate_global(self, round: int) -> dict:
        """Load the global adapter into the policy and score it on the test split."""
        self.policy.set_state(GLOBAL, self.server.global_state)
        # a method's world may score answers its own way (FedMOA's code family runs programs in the sandbox)
        accuracy_fn = REWARDS[getattr(self.world, "accuracy_reward", "accuracy")]
        res = evaluate(self.policy, GLOBAL, self.world.test, self.config.eval_samples,
                       seed=eval_seed(self.config.seed), accuracy_fn=accuracy_fn)
        return {"kind": "global", "round": round, **res}

    def run(self, stop_after: int | None = None) -> list[dict]:
        """Run (or resume) all rounds; returns the metric records.

        Args:
            stop_after: raise :class:`Interrupted` right after this round is checkpointed (to test resume).
        """
        from tqdm.auto import tqdm

        self.build()
        cfg = self.config
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        last = self._resume()
        if self.run_dir is not None:
            _atomic_write(self.run_dir / "config.json", cfg.to_json())
        mode = "a" if last >= 0 else "w"
        fh = open(self.run_dir / "metrics.jsonl", mode) if self.run_dir else None
        lh = open(self.run_dir / "ledger.jsonl", mode) if self.run_dir else None
        try:
            if last < 0:
                self._record(self.evaluate_global(0), fh)
                self._checkpoint(0)
                last = 0
            rounds = range(last + 1, (cfg.rounds if self.spec.trains else 0) + 1)
            bar = tqdm(rounds, desc=cfg.method, disable=not self.progress, initial=last, total=cfg.rounds)
            for r in bar:
                n_ledger = len(self.runtime.ledger.records)
                t0 = time.time()
                if self.probe is not None:
                    self.probe.start_round(self.server.global_state)
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
                if lh is not None:
                    lh.writelines(json.dumps(x) + "\n" for x in new)
                    lh.flush()
                self._record({"kind": "comm", "round": r, "seconds": round(time.time() - t0, 2),
                              "down": sum(x["nbytes"] for x in new if x["direction"] == "down"),
                              "up": sum(x["nbytes"] for x in new if x["direction"] == "up")}, fh)
                if r % cfg.eval_every == 0 or r == cfg.rounds:
                    ev = self.evaluate_global(r)
                    self._record(ev, fh)
                    bar.set_postfix({"pass@1": f"{ev['pass@1']:.3f}"})
                if r % cfg.checkpoint_every == 0 or r == cfg.rounds:
                    self._checkpoint(r)
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
    """The metric records of a run directory."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
