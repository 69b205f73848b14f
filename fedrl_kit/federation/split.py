"""What a split federation's folders hold and how the server reads its own (:mod:`fedrl_kit.deploy` splits a
federation and runs its nodes; this module is what :class:`fedrl_kit.runs.Run` needs of it, below the run loop).
"""

from __future__ import annotations

import json
from pathlib import Path

FORMAT = 1
SPLIT_FIELDS = ("world", "dataset", "seed", "num_clients", "n_train", "n_test", "n_public", "n_aux", "partition",
                "dirichlet_alpha", "topics_per_client", "equal_size")
"""the config fields that decide which data each client and the server hold: a run must match its split on all"""
SERVER_SPLITS = ("test", "public", "aux")


class DamagedFolder(ValueError):
    """A split federation's folder that cannot be read; the message names the file."""


def split_fields(cfg) -> dict:
    """The fields of ``cfg`` that decide the data (:data:`SPLIT_FIELDS`)."""
    return {k: getattr(cfg, k) for k in SPLIT_FIELDS}


def read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise DamagedFolder(f"{path} is missing: {what}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DamagedFolder(f"{path} is not valid JSON ({e}): {what}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DamagedFolder(f"{path} is not a format-{FORMAT} file of a split federation: {what}")
    return data


def check_same_split(made: dict, cfg, path: Path) -> None:
    want = split_fields(cfg)
    diff = [f"{k}={made.get(k)!r} (run: {want[k]!r})" for k in SPLIT_FIELDS
            if json.dumps(made.get(k)) != json.dumps(want[k])]
    if diff:
        raise ValueError(f"{path} was split with other data settings than this run's: {', '.join(diff)}")



def check_deployable(cfg, server_data) -> None:
    """Refuse, in one line, a deployed run that cannot work: simulation-side tracing, or a server folder split
    with other data settings (a method that keeps client state: :func:`fedrl_kit.methods.check_deployable`)."""
    if cfg.trace_drift:
        raise ValueError("trace_drift reads every client's adapter in the simulator: it is not available deployed")
    manifest = read_json(Path(server_data) / "manifest.json", "the server's folder of a split federation "
                                                              "(fedrl deploy split)")
    check_same_split(manifest["split"], cfg, Path(server_data) / "manifest.json")


def load_server_world(server_data: str | Path, cfg):
    """The server's view of a deployed federation: its splits (read from its folder) and the client ids."""
    import datasets

    from fedrl_kit.federation.server import ServerWorld

    server_data = Path(server_data)
    manifest = read_json(server_data / "manifest.json", "the server's folder of a split federation")
    check_same_split(manifest["split"], cfg, server_data / "manifest.json")
    splits = {}
    for name in manifest["splits"]:
        try:
            splits[name] = datasets.load_from_disk(str(server_data / name))
        except Exception as e:  # noqa: BLE001 - named in one line, whatever datasets raises
            raise DamagedFolder(f"{server_data / name} cannot be read as a dataset ({type(e).__name__}: {e})") from None
    return ServerWorld(**splits, accuracy_reward=manifest["accuracy_reward"],
                       default_rewards=tuple(manifest["default_rewards"]), client_ids=list(manifest["client_ids"]))
