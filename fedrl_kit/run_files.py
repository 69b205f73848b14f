"""The files of a run folder: checksums, JSON lines, atomic writes; shared by the run loop (:mod:`fedrl_kit.runs`)
and its resume (:mod:`fedrl_kit.resume`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from fedrl_kit.config import migrate


class DamagedRunDir(ValueError):
    """A run directory whose files do not match what its checkpoint recorded; the message names the file."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def config_digest(text: str) -> str:
    """The checksum a checkpoint records of config.json: of the fields it holds (read as resume reads them), every one
    but ``rounds`` (a resumed run may extend it).
    """
    saved = flat_config(migrate(json.loads(text)))
    meaning = {k: v for k, v in saved.items() if k != "rounds"}
    return sha256_hex(json.dumps(meaning, sort_keys=True, default=str).encode())


def state_digest(state: dict) -> str:
    """The checksum state.json carries of itself (every key but ``sha256``, canonical JSON)."""
    return sha256_hex(json.dumps({k: v for k, v in state.items() if k != "sha256"}, sort_keys=True).encode())


def read_jsonl_lines(path: Path, lines: list[bytes], skip_blank: bool = False) -> list[dict]:
    """The records in ``lines`` of JSON-lines file ``path``; DamagedRunDir names the file and line of a bad one."""
    out = []
    for i, line in enumerate(lines, 1):
        if skip_blank and not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DamagedRunDir(f"{path} line {i} is not a JSON record ({e}): {line[:60]!r}") from None
        if not isinstance(rec, dict):
            raise DamagedRunDir(f"{path} line {i} is not a JSON object: {line[:60]!r}")
        out.append(rec)
    return out


def flat_config(d: dict, prefix: str = "") -> dict:
    """A config dict with its sections flattened to dotted names (``fedgrpo.num_experts``)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat_config(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
