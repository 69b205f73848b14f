"""A base model from a local folder (``save_pretrained`` / ``hf download`` layout), such as the embedded ``data/base``.

Hub ids, GGUF files and packaged aliases go through :mod:`fedrl_kit.policy.hub`, an optional part that
:meth:`fedrl_kit.policy.engine.Policy.load` imports only for them.
"""

from __future__ import annotations

import json
from pathlib import Path

import transformers

REPO_ROOT = Path(__file__).resolve().parents[2]

_GENERIC_TOKENIZERS = {"TokenizersBackend", "PreTrainedTokenizerFast"}


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


def is_model_folder(base) -> bool:
    """Whether ``base`` is a folder holding a model's config.json."""
    return (Path(base) / "config.json").is_file()


def load_tokenizer(name: str, gguf_file: str | None = None) -> transformers.PreTrainedTokenizerBase:
    """AutoTokenizer, except that a local folder whose tokenizer is a plain ``tokenizers`` one stays one.

    transformers 5 maps some model types (qwen2, phi3, ...) to their own tokenizer class whatever
    tokenizer_config.json says; that class rebuilds a custom vocabulary (like the embedded world's
    word-level one) into a different, wrong tokenizer. A folder that declares a generic class gets it.
    A GGUF file carries its tokenizer (vocabulary, merges, special tokens, chat template).
    """
    if gguf_file is not None:
        return transformers.AutoTokenizer.from_pretrained(name, gguf_file=gguf_file)
    config_file = Path(name) / "tokenizer_config.json"
    if config_file.is_file():
        declared = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
        if declared in _GENERIC_TOKENIZERS:
            return transformers.PreTrainedTokenizerFast.from_pretrained(name)
    return transformers.AutoTokenizer.from_pretrained(name)


def ready(model, tokenizer, device=None):
    """``(model, tokenizer)`` set up for left-padded batched generation: a pad token (eos when the checkpoint has
    none), left padding, the model on ``device`` (None: where it is) and in eval mode."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token  # generate() needs a pad id; eos is masked out anyway
    tokenizer.padding_side = "left"
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if device is not None:
        model = model.to(device)
    return model.eval(), tokenizer


def load_folder(folder: str, dtype=None, device=None):
    """The causal LM and tokenizer of a local model folder, :func:`ready` for generation (``dtype`` None: the
    checkpoint's own)."""
    tokenizer = load_tokenizer(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype="auto" if dtype is None else dtype)
    return ready(model, tokenizer, device)
