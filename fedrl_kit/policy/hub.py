"""Real Hugging Face causal LMs — by hub name or local folder — behind the policy's interface.

``load_pretrained`` returns a ``(model, tokenizer)`` pair ready for batched generation: the
tokenizer pads on the left (a decoder-only model continues from the last token of every
row, so padding must not sit between prompt and completion) and has a pad token (the eos
token when the checkpoint defines none). Offline, a model that is not in the local cache
raises ``ModelNotAvailableError`` naming the model and the one-line command that fetches it,
instead of a stack of HTTP retries.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
import transformers
from huggingface_hub.errors import HfHubHTTPError

from fedrl_kit.world.real import hub_offline_requested, hub_offline_scope


class ModelNotAvailableError(RuntimeError):
    """A model is neither a local folder nor in the local Hugging Face cache, and the Hub is unreachable."""


def _looks_like_path(name_or_path: str) -> bool:
    """A hub id is ``name`` or ``owner/name``; anything else that names a file system location is a path."""
    return name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1 or "\\" in name_or_path


_GENERIC_TOKENIZERS = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def _load_tokenizer(name: str) -> transformers.PreTrainedTokenizerBase:
    """AutoTokenizer, except that a local folder whose tokenizer is a plain ``tokenizers`` one stays one.

    transformers 5 maps some model types (qwen2, phi3, ...) to their own tokenizer class whatever
    tokenizer_config.json says; that class rebuilds a custom vocabulary (like the embedded world's
    word-level one) into a different, wrong tokenizer. A folder that declares a generic class gets it.
    """
    config_file = Path(name) / "tokenizer_config.json"
    if config_file.is_file():
        declared = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
        if declared in _GENERIC_TOKENIZERS:
            return transformers.PreTrainedTokenizerFast.from_pretrained(name)
    return transformers.AutoTokenizer.from_pretrained(name)


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
        name_or_path: a hub id ("Qwen/Qwen2.5-0.5B-Instruct") or a local folder written by
            ``save_pretrained`` or ``hf download``.
        dtype: weights dtype (``torch.bfloat16`` or "bfloat16"); None keeps the checkpoint's own.
        device: where to put the model ("cpu", "cuda"); None leaves it where transformers loads it (CPU).

    Returns:
        ``(model, tokenizer)``: the model in eval mode; the tokenizer with ``padding_side="left"``
        and a pad token.

    Raises:
        ModelNotAvailableError: the folder does not exist or is not a model folder, or the hub
            model is not cached and the Hub cannot be reached (offline mode or no network).
    """
    name = str(name_or_path)
    local = Path(name).expanduser()
    if local.is_dir():
        if not (local / "config.json").exists():
            raise ModelNotAvailableError(
                f"Model folder {name!r} has no config.json: it is not a model folder (one written by "
                "save_pretrained or hf download).\n" + _fix_hint(name)
            )
        name = str(local)
    elif _looks_like_path(name):
        raise ModelNotAvailableError(f"Model path {name!r} does not exist (no such folder).\n" + _fix_hint(name))
    try:
        with hub_offline_scope():
            tokenizer = _load_tokenizer(name)
            model = transformers.AutoModelForCausalLM.from_pretrained(name, dtype="auto" if dtype is None else dtype)
    except (OSError, HfHubHTTPError) as err:  # transformers turns "not cached, no network" into OSError
        mode = "offline mode is on" if hub_offline_requested() else "the Hub could not be reached"
        raise ModelNotAvailableError(
            f"Model {name!r} is not available: it is not in the local Hugging Face cache and {mode} "
            f"({type(err).__name__}).\n" + _fix_hint(name)
        ) from err
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token  # generate() needs a pad id; eos is masked out anyway
    tokenizer.padding_side = "left"
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if device is not None:
        model = model.to(device)
    return model.eval(), tokenizer


def describe_model(model: torch.nn.Module) -> dict[str, Any]:
    """Summarise a model: parameter counts, dtype, architecture.

    Args:
        model: a transformers model (or a peft model wrapping one).

    Returns:
        ``{"n_params", "n_trainable", "dtype", "architecture"}``; ``dtype`` is the first
        parameter's ("float32"), ``architecture`` the config's (``"Qwen2ForCausalLM"``).
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
