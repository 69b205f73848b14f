"""One frozen base model in memory, one LoRA adapter per client (peft multi-adapter).

A client costs one adapter and its optimiser state, never a copy of the model. Adapters leave
and enter the model as *plain data* — ``dict[str, numpy.ndarray]`` keyed by peft's
adapter-independent parameter names — so they can travel in federation messages unchanged.

LoRA factor naming (PubSwap eq. 3): for a frozen weight W_0 [m, d], ``…lora_A.weight`` is
A [r, d] and ``…lora_B.weight`` is B [m, r]; the update is ΔW = (alpha / r) · B A.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

GLOBAL = "global"
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

AdapterState = dict[str, np.ndarray]


def attach_lora(model, rank: int = 8, alpha: float = 16.0, target_modules=DEFAULT_TARGETS, dropout: float = 0.0,
                seed: int = 0):
    """Wrap ``model`` with peft and create the server's ``"global"`` adapter (B = 0, A random; eq. 3).

    The base weights are frozen. Returns the ``PeftModel``.
    """
    if rank < 1:
        raise ValueError(f"lora rank must be >= 1, got {rank}")
    torch.manual_seed(seed)
    cfg = LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(target_modules), lora_dropout=dropout,
                     bias="none", task_type="CAUSAL_LM")
    with warnings.catch_warnings():
        # peft 0.21 still calls transformers' deprecated gradient-checkpointing names; nothing for users to act on
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*gradient_checkpointing.*")
        return get_peft_model(model, cfg, adapter_name=GLOBAL)


def ensure_adapter(model, name: str) -> None:
    """Create adapter ``name`` (same LoRA config as the global one) if it does not exist yet."""
    if name not in model.peft_config:
        model.add_adapter(name, model.peft_config[GLOBAL])


def get_state(model, name: str = GLOBAL) -> AdapterState:
    """The adapter's LoRA factors as plain float32 numpy arrays (copies)."""
    sd = get_peft_model_state_dict(model, adapter_name=name)
    return {k: v.detach().to("cpu", torch.float32).numpy().copy() for k, v in sd.items()}


def set_state(model, name: str, state: AdapterState) -> None:
    """Load plain-data LoRA factors into adapter ``name`` (created if missing)."""
    ensure_adapter(model, name)
    ref = get_peft_model_state_dict(model, adapter_name=name)
    missing = set(ref) - set(state)
    if missing:
        raise ValueError(f"adapter state for {name!r} lacks {len(missing)} tensors, e.g. {sorted(missing)[0]}")
    dtype = next(iter(ref.values())).dtype
    tensors = {k: torch.as_tensor(np.asarray(v)).to(dtype) for k, v in state.items()}
    set_peft_model_state_dict(model, tensors, adapter_name=name)


def activate(model, name: str) -> list[torch.nn.Parameter]:
    """Make ``name`` the active (and only trainable) adapter; returns its parameters."""
    model.set_adapter(name)
    params = [p for n, p in model.named_parameters() if f".{name}." in n and "lora_" in n]
    for p in params:
        p.requires_grad_(True)
    return params


def initial_state(model, seed: int) -> AdapterState:
    """The LoRA factors a fresh ``"global"`` adapter gets with ``seed`` (A random, B = 0; eq. 3).

    Equal to what :func:`attach_lora` created for that seed (tested), but computed on a model that
    may have trained since: a run that reuses a loaded policy starts from its own seed's adapter,
    not from whatever the previous run left in ``"global"``. The global torch RNG is left as it was.
    """
    tmp = "__initial__"
    active = model.active_adapter
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.add_adapter(tmp, model.peft_config[GLOBAL])
        state = get_state(model, tmp)
    model.delete_adapter(tmp)
    model.set_adapter(active)
    return state

