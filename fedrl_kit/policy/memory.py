"""How much device memory a run needs, estimated before anything is loaded, and a refusal when it will not fit.
Details: docs/gpu.md, "Module notes".
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import transformers

from fedrl_kit.policy.folder import REPO_ROOT
from fedrl_kit.rollout import LOGITS_BYTES, row_chunks  # noqa: F401 - also from here
from fedrl_kit.world.registry import arith_selection, family_kind

GiB = 2 ** 30

KNOWN_ARCHITECTURES: dict[str, dict] = {
    # the papers' models, from their published config.json (architecture fields only), so that a preset's
    # estimate needs neither the weights nor the network
    "Qwen/Qwen3-1.7B": dict(model_type="qwen3", hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                            num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                            tie_word_embeddings=True),
    "Qwen/Qwen2.5-Math-1.5B": dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960,
                                   num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                                   vocab_size=151936, tie_word_embeddings=True),
    "Qwen/Qwen2.5-1.5B-Instruct": dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960,
                                       num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                                       vocab_size=151936, tie_word_embeddings=True),
    "Qwen/Qwen3-4B-Instruct-2507": dict(model_type="qwen3", hidden_size=2560, intermediate_size=9728,
                                        num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
                                        head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "meta-llama/Llama-3.2-3B-Instruct": dict(model_type="llama", hidden_size=3072, intermediate_size=8192,
                                             num_hidden_layers=28, num_attention_heads=24, num_key_value_heads=8,
                                             head_dim=128, vocab_size=128256, tie_word_embeddings=True),
}
"""hub id -> the architecture fields of its config.json"""

REFERENCE_GPU_BYTES = 80 * 10 ** 9
"""an 80 GB H100 (the PubSwap paper's device, Tables 9–12): what a dry run on a machine without the run's
device compares against"""

_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
EVALUATOR_METHODS = ("fedgrpo", "dpsda_grpo", "dpsda_sft")
"""methods whose clients train their own model (an evaluator, a labeller) by SFT on their private data"""


class DoesNotFitError(ValueError):
    """A run's estimated peak memory exceeds its device's memory."""


@dataclass
class MemoryEstimate:
    """Bytes of each part of a run's peak memory (docs/gpu.md, "Module notes"); ``total`` is what must fit."""

    n_params: int
    n_lora: int
    weights: int
    adapters: int
    optimiser: int
    gradients: int
    rollout: int
    training: int
    evaluation: int
    overhead: int
    total: int
    evaluators: int = 0

    def lines(self) -> list[str]:
        """One line per part, in GiB."""
        parts = ("weights", "adapters", "optimiser", "gradients", "rollout", "training", "evaluation", "evaluators",
                 "overhead", "total")
        out = [f"base parameters {self.n_params / 1e6:,.1f} M, LoRA factors per adapter {self.n_lora / 1e6:,.2f} M"]
        out += [f"  {p:<11} {getattr(self, p) / GiB:8.2f} GiB" for p in parts]
        return out

    def to_dict(self) -> dict:
        return asdict(self)


def model_config(base: str) -> transformers.PretrainedConfig | None:
    """The architecture of ``base`` without loading weights: its folder's config.json, the papers' models from
    :data:`KNOWN_ARCHITECTURES`, else the local Hugging Face cache; None when none of them has it (GGUF files,
    unknown hub ids offline)."""
    for cand in (Path(base), REPO_ROOT / base):
        if (cand / "config.json").is_file():
            try:
                return transformers.AutoConfig.from_pretrained(str(cand))
            except (OSError, ValueError):  # a model type this transformers does not know
                return None
    if base in KNOWN_ARCHITECTURES:
        fields = dict(KNOWN_ARCHITECTURES[base])
        return transformers.AutoConfig.for_model(fields.pop("model_type"), **fields)
    try:
        return transformers.AutoConfig.from_pretrained(base, local_files_only=True)
    except (OSError, ValueError):
        return None


def _lora_entries(model: torch.nn.Module, targets: str, rank: int) -> int:
    """LoRA factor entries r·(d + m) over the linear modules the run's ``lora_targets`` selects."""
    from fedrl_kit.policy.adapters import resolve_lora_targets

    chosen = resolve_lora_targets(model, targets)
    total = 0
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or name.endswith("lm_head"):
            continue
        if chosen == "all-linear" or any(name == t or name.endswith("." + t) for t in chosen):
            total += rank * (module.in_features + module.out_features)
    return total


def estimate_memory(config, arch: transformers.PretrainedConfig | None = None,
                    prompt_tokens: int | None = None) -> MemoryEstimate | None:
    """Peak memory of a run (docs/gpu.md, "Module notes").

    Args:
        config: the ``RunConfig``.
        arch: the base model's config (default: :func:`model_config` of ``config.base``).
        prompt_tokens: prompt length assumed for the KV cache and activations (default: 1,024 for a real
            world, 64 for the embedded ones).

    Returns:
        The estimate, or None when the base model's architecture is not known here.
    """
    arch = arch if arch is not None else model_config(config.base)
    if arch is None:
        return None
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(arch)
    n_params = sum(p.numel() for p in model.parameters())
    n_lora = _lora_entries(model, config.lora_targets, config.lora_rank)
    text = arch.get_text_config() if hasattr(arch, "get_text_config") else arch
    (h, inter), layers, vocab = layer_widths(arch), text.num_hidden_layers, text.vocab_size
    heads = text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or h // heads
    b = _DTYPE_BYTES[config.dtype]
    if prompt_tokens is None:
        embedded = arith_selection(config.world) is not None or family_kind(config.world) == "families"
        prompt_tokens = 64 if embedded else 1024  # the embedded worlds' prompts are short
    tokens = prompt_tokens + config.max_new_tokens
    kv_per_token = 2 * layers * kv_heads * head_dim * b
    N = config.num_clients
    rows = config.prompts_per_step * config.num_generations  # b·K sequences per GRPO step
    mb = min(config.micro_batch_size, rows)
    per_token = layers * (10 * h + 5 * inter) * b  # saved activations of one token through the decoder
    evaluators = 0
    if config.method in EVALUATOR_METHODS and config.evaluator.training == "sft":
        e_rows = len(row_chunks(config.evaluator.sft_batch, tokens, vocab)[0])
        evaluators = e_rows * tokens * (per_token + vocab * 14)
    # with clients_per_round only a round's participants hold a live adapter and gradients; the others are parked
    # (GRPOClient.park), keeping Adam's moments, as numpy arrays, only when the optimiser is not reset each round
    live = min(N, getattr(config, "clients_per_round", 0) or N)
    parts = dict(
        weights=n_params * b,
        adapters=(live + 1 + (N if evaluators else 0)) * n_lora * 4,
        optimiser=(live if config.reset_optimizer else N) * 2 * n_lora * 4,
        gradients=live * n_lora * 4,
        rollout=rows * tokens * kv_per_token,
        training=mb * tokens * per_token + mb * config.max_new_tokens * vocab * 14,
        evaluation=min(config.eval_batch_size, config.n_test * config.eval_samples) * tokens * kv_per_token,
        evaluators=evaluators,
        overhead=GiB,
    )
    total = (parts["weights"] + parts["adapters"] + parts["optimiser"] + parts["gradients"]
             + max(parts["rollout"], parts["training"], parts["evaluation"], parts["evaluators"]) + parts["overhead"])
    return MemoryEstimate(n_params=n_params, n_lora=n_lora, total=total, **parts)


def layer_widths(config) -> tuple[int, int]:
    """(hidden size, MLP width) of a decoder from its config: a multimodal config's text part, GPT-2's names
    (``n_embd``, ``n_inner``) where the usual ones are absent, and an MLP of 4 × hidden where the config gives none.
    Raises ValueError when the config names no hidden size."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden = getattr(text, "hidden_size", None) or getattr(text, "n_embd", None)
    if not hidden:
        raise ValueError(f"the model config {type(config).__name__} gives no hidden size (hidden_size or n_embd)")
    return hidden, getattr(text, "intermediate_size", None) or getattr(text, "n_inner", None) or 4 * hidden


def device_memory(device: str) -> int | None:
    """Bytes of memory of ``device`` on this machine ("cpu": physical RAM); None when it is not here."""
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return None
        index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
        return torch.cuda.get_device_properties(index).total_memory
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(config, estimate: MemoryEstimate | None = None, capacity: int | None = None) -> MemoryEstimate | None:
    """Raise :class:`DoesNotFitError` when ``config``'s estimated peak exceeds its device's memory.

    Args:
        config, estimate, capacity: the ``RunConfig``; a precomputed :func:`estimate_memory` and the device's bytes
            (defaults: computed here, :func:`device_memory` of ``config.device``).

    Returns:
        The estimate (None, and no check, when the architecture or the device is unknown here).
    """
    estimate = estimate if estimate is not None else estimate_memory(config)
    capacity = capacity if capacity is not None else device_memory(config.device)
    if estimate is None or capacity is None or estimate.total <= capacity:
        return estimate
    raise DoesNotFitError(
        f"preset {config.preset!r} with base {config.base!r} needs about {estimate.total / GiB:.1f} GiB on "
        f"{config.device} (weights {estimate.weights / GiB:.1f}, rollout {estimate.rollout / GiB:.1f}, training "
        f"{estimate.training / GiB:.1f}, evaluation {estimate.evaluation / GiB:.1f} GiB), which has "
        f"{capacity / GiB:.1f} GiB; lower micro_batch_size ({config.micro_batch_size}), eval_batch_size "
        f"({config.eval_batch_size}), prompts_per_step ({config.prompts_per_step}) or max_new_tokens "
        f"({config.max_new_tokens}), or see `fedrl run --preset {config.preset} --dry-run`")
