"""Resuming a run from its folder's checkpoint, every file checked against what the checkpoint recorded (imported by
``Run.run`` only when its folder holds a config or a checkpoint)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import torch

from fedrl_kit.config import RunConfig, migrate
from fedrl_kit.federation.replies import adapter_spec
from fedrl_kit.run_files import atomic_write, config_digest, flat_config, read_jsonl_lines, sha256_hex, state_digest


def check_config(run, cfg_path: Path) -> None:
    """config.json must parse and hold this run's config (``rounds`` may grow)."""
    try:
        saved = flat_config(migrate(json.loads(cfg_path.read_text())))
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, AttributeError) as e:
        raise ValueError(f"run directory {run.run_dir} is damaged: {cfg_path} is not a readable config "
                         f"({type(e).__name__}: {e}); use a new run_dir") from None
    mine = flat_config(run.config.to_dict())
    # a field missing from an older config.json had its default then: fields are only ever added
    # with the default that keeps the old behaviour (e.g. trace_drift = False)
    default = flat_config(RunConfig().to_dict())
    diff = sorted(k for k in mine if k != "rounds" and saved.get(k, default[k]) != mine[k])
    if diff:
        raise ValueError(f"run directory {run.run_dir} holds a run with a different config "
                         f"(fields {diff}); use a new run_dir or the same config")


def read_state(run, ck: Path) -> dict:
    """state.json, checked against its own checksum and the files it lists."""
    path = ck / "state.json"
    try:
        state = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise run._damaged(f"{path} is not JSON ({e})") from None
    if not isinstance(state, dict) or not isinstance(state.get("round"), int) \
            or not isinstance(state.get("n_records"), int) or not isinstance(state.get("n_ledger"), int):
        raise run._damaged(f"{path} lacks round, n_records or n_ledger")
    if state.get("format") is None:  # written before checksums: the line counts and the records' rounds still hold
        return state
    if state.get("sha256") != state_digest(state):
        raise run._damaged(f"{path} was edited (its checksum does not match its content)")
    for name, digest in state["files"].items():
        f = ck / name
        if not f.exists():
            raise run._damaged(f"{f} is missing")
        if sha256_hex(f.read_bytes()) != digest:
            raise run._damaged(f"{f} is not the file the checkpoint wrote (checksum mismatch)")
    return state


def load_adapter(run, path: Path) -> dict:
    """global.npz without pickle, with the run's tensor names, shapes and dtypes, finite."""
    try:
        with np.load(path, allow_pickle=False) as z:
            state = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise run._damaged(f"{path} is not a readable adapter ({type(e).__name__}: {e})") from None
    if adapter_spec(state) != run.runtime.expect["adapter"] or \
            not all(np.isfinite(v).all() for v in state.values()):
        raise run._damaged(f"{path} does not hold this run's finite LoRA adapter")
    return state


def load_checkpoint(run, ck: Path, state: dict, cfg_path: Path) -> int:
    """Check the run folder's files against checkpoint ``ck`` (its ``state``, read by :func:`read_state`), load the
    adapter, the method's state and the optimisers into ``run``; return the checkpoint's round."""
    if state.get("format") is not None:
        if not cfg_path.exists():
            raise run._damaged(f"{cfg_path} is missing (the checkpoint of round {state['round']} was written "
                               "with it; without it a changed config would go unnoticed)")
        if config_digest(cfg_path.read_text()) != state["config_sha256"]:
            raise run._damaged(f"{cfg_path} was changed after the checkpoint of round {state['round']}")
    kept, parsed = {}, {}
    for name, n, key in (("metrics.jsonl", state["n_records"], "metrics_sha256"),
                         ("ledger.jsonl", state.get("ledger_lines", state["n_ledger"]), "ledger_sha256")):
        path = run.run_dir / name
        if not path.exists():
            if n:
                raise run._damaged(f"{path} is missing (the checkpoint covers {n} lines of it)")
            lines = []
        else:
            lines = path.read_bytes().split(b"\n")[:-1] if path.stat().st_size else []
            if state.get("format") is not None and len(lines) < n:
                raise run._damaged(f"{path} has {len(lines)} complete lines, the checkpoint of round "
                                   f"{state['round']} covers {n}")
            lines = lines[:n]
            parsed[name] = read_jsonl_lines(path, lines)  # a garbage line is named before any checksum
            if state.get("format") is not None and sha256_hex(b"".join(x + b"\n" for x in lines)) != state[key]:
                raise run._damaged(f"{path}'s first {n} lines are not the ones the checkpoint recorded "
                                   "(checksum mismatch)")
        kept[name] = lines
    records, ledger = parsed.get("metrics.jsonl", []), parsed.get("ledger.jsonl", [])
    last = max((r.get("round", -1) for r in records), default=-1)
    if last != state["round"]:
        raise run._damaged(f"{ck / 'state.json'} says round {state['round']}, but the last record it covers in "
                           f"{run.run_dir / 'metrics.jsonl'} is of round {last}")
    run.server.global_state = load_adapter(run, ck / "global.npz")
    if run.spec.load_state is not None:
        run.spec.load_state(run.server, ck)
    if (ck / "optimizers.pt").exists():
        opt = torch.load(ck / "optimizers.pt", weights_only=True)
        for cid, sd in opt.items():  # kept as a parked client keeps them, loaded when it next trains
            run.clients[cid].keep_moments(sd)
    for name, lines in kept.items():
        atomic_write(run.run_dir / name, "".join(x.decode() + "\n" for x in lines))
        run._digest[name] = hashlib.sha256(b"".join(x + b"\n" for x in lines))
    run.records, run.runtime.ledger.records = records, ledger
    run._ledger_lines = len(ledger)
    return state["round"]
