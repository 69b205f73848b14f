"""One frozen base model in memory, one LoRA adapter per client (peft multi-adapter)."""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

GLOBAL = "global"
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

AdapterState = dict[str, np.ndarray]


def resolve_lora_targets(model, lora_targets: str = "auto") -> list[str] | str:
    """The ``target_modules`` peft gets for ``RunConfig.lora_targets`` on ``model``.

    Args:
        model: the base model (not yet peft-wrapped).
        lora_targets: "auto", "all-linear", or a comma-separated list of module names (each the last part
            of a module's name, or a dotted suffix such as ``self_attn.q_proj``).

    Returns:
        ``list(DEFAULT_TARGETS)`` (auto, on a model that has all seven), ``"all-linear"``, or the listed names.
    """
    spec = lora_targets.strip() if isinstance(lora_targets, str) else ""
    names = [n for n, _ in model.named_modules() if n]
    leaves = {n.rsplit(".", 1)[-1] for n in names}
    if spec == "auto":
        return list(DEFAULT_TARGETS) if set(DEFAULT_TARGETS) <= leaves else "all-linear"
    if spec == "all-linear":
        return spec
    wanted = [t.strip() for t in spec.split(",") if t.strip()]
    missing = [t for t in wanted if not any(n == t or n.endswith("." + t) for n in names)]
    if not wanted or missing:
        linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                         if isinstance(m, torch.nn.Linear) or type(m).__name__ == "Conv1D"})
        raise ValueError(f'lora_targets must be "auto", "all-linear" or module names of this model (its linear '
                         f"modules: {linear}); {missing or 'nothing'} not found in {lora_targets!r}")
    return wanted


def attach_lora(model, rank: int = 8, alpha: float = 16.0, target_modules=DEFAULT_TARGETS, dropout: float = 0.0,
                seed: int = 0):
    """Wrap ``model`` with peft and create the server's ``"global"`` adapter (B = 0, A random; eq. 3)."""
    if rank < 1:
        raise ValueError(f"lora rank must be >= 1, got {rank}")
    torch.manual_seed(seed)
    targets = target_modules if isinstance(target_modules, str) else list(target_modules)
    cfg = LoraConfig(r=rank, lora_alpha=alpha, target_modules=targets, lora_dropout=dropout,
                     bias="none", task_type="CAUSAL_LM")
    with warnings.catch_warnings():
        # peft 0.21 still calls transformers' deprecated gradient-checkpointing names; nothing for users to act on
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*gradient_checkpointing.*")
        # GPT-2's Conv1D stores W transposed; peft notices and sets fan_in_fan_out itself, which is right
        warnings.filterwarnings("ignore", category=UserWarning, message=".*fan_in_fan_out.*")
        return get_peft_model(model, cfg, adapter_name=GLOBAL)


def ensure_adapter(model, name: str) -> None:
    """Create adapter ``name`` (same LoRA config as the global one) if it does not exist yet."""
    if name not in model.peft_config:
        model.add_adapter(name, model.peft_config[GLOBAL])


def drop_adapter(model, name: str) -> None:
    """Delete adapter ``name`` from the model, freeing its factors (no-op when absent; never the global one)."""
    if name == GLOBAL:
        raise ValueError(f"the {GLOBAL!r} adapter cannot be dropped")
    if name not in model.peft_config:
        return
    if model.active_adapter == name:
        activate(model, GLOBAL)
    model.delete_adapter(name)


class _Layout:
    """Cached references into one peft model: its LoRA layers and, per adapter, (state key, parameter) pairs."""

    def __init__(self, model):
        from peft.tuners.lora.layer import LoraLayer
        from peft.utils.other import AuxiliaryTrainingWrapper

        self.adapters = tuple(model.peft_config)
        modules = list(model.modules())
        self.layers = [m for m in modules if isinstance(m, LoraLayer)]  # the modules peft's set_adapter visits
        self.fast = bool(self.layers) and getattr(model.base_model, "tuner_layer_cls", None) is LoraLayer and not any(isinstance(m, AuxiliaryTrainingWrapper) for m in modules) and \
            not any(getattr(m, "frozen_peft_weight_names", None) for m in self.layers)
        self.lora_params = [p for n, p in model.named_parameters() if "lora_" in n]  # every adapter's, in order
        self.entries: dict[str, tuple | None] = {}  # name → (keys, params) or None where peft's path must run

    def entry(self, model, name: str):
        """(state keys, parameters) of adapter ``name`` in peft's order, or None (use peft's own path)."""
        if not USE_CACHE:
            return None
        cached = self.entries.get(name)
        if cached is not None and not _entry_current(cached, name):
            self.__init__(model)  # the adapter was deleted and re-created: new parameters, rebuild everything
        if name not in self.entries:
            self.entries[name] = _build_entry(model, name) if self.fast else None
        return self.entries[name]


def _build_entry(model, name: str):
    named = [(n, p) for n, p in model.named_parameters() if f".{name}." in n and "lora_" in n]
    by_ptr = {p.data_ptr(): (n, p) for n, p in named}
    sd = get_peft_model_state_dict(model, adapter_name=name, save_embedding_layers=False)
    keys, params = [], []
    for k, v in sd.items():
        n, p = by_ptr.get(v.data_ptr(), (None, None))
        if p is None or n.replace(f".{name}", "") != k or v.shape != p.shape:
            return None  # a key that does not map one-to-one onto a parameter: keep peft's path
        keys.append(k)
        params.append(p)
    if len(params) != len(named) or len({id(p) for p in params}) != len(params):
        return None
    from peft.tuners.lora.layer import LoraLayer

    layer = next((m for m in model.modules() if isinstance(m, LoraLayer) and name in m.lora_A), None)
    if layer is None or not params:
        return None
    return keys, params, [p for _, p in named], (layer, layer.lora_A[name].weight)


def _entry_current(entry, name) -> bool:
    """Whether the adapter's parameters are still the cached objects (not deleted and re-created)."""
    layer, weight = entry[3]
    return name in layer.lora_A and layer.lora_A[name].weight is weight


USE_CACHE = True  # False: every call takes peft's own walks (the reference the cached path is tested against)
_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _layout(model) -> _Layout:
    """The model's cached :class:`_Layout`, rebuilt when its adapters were added or deleted."""
    layout = _LAYOUTS.get(model)
    if layout is None or layout.adapters != tuple(model.peft_config):
        old, layout = layout, _Layout(model)
        if old is not None and layout.fast:  # adapters that are still the same objects keep their entries
            layout.entries = {n: e for n, e in old.entries.items()
                              if n in layout.adapters and e is not None and _entry_current(e, n)}
        _LAYOUTS[model] = layout
    return layout


def get_state(model, name: str = GLOBAL) -> AdapterState:
    """The adapter's LoRA factors as plain float32 numpy arrays (copies)."""
    entry = _layout(model).entry(model, name) if name in model.peft_config else None
    if entry is not None:
        keys, params = entry[0], entry[1]
        return {k: p.detach().to("cpu", torch.float32).numpy().copy() for k, p in zip(keys, params)}
    # save_embedding_layers=False: adapters never train embeddings, and peft's "auto" would look for the base's
    # config.json on the Hub (a network call per state online, a warning for a GGUF folder offline)
    sd = get_peft_model_state_dict(model, adapter_name=name, save_embedding_layers=False)
    return {k: v.detach().to("cpu", torch.float32).numpy().copy() for k, v in sd.items()}


def set_state(model, name: str, state: AdapterState) -> None:
    """Load plain-data LoRA factors into adapter ``name`` (created if missing)."""
    ensure_adapter(model, name)
    entry = _layout(model).entry(model, name)
    if entry is not None and set(entry[0]) == set(state):
        keys, params = entry[0], entry[1]
        dtype = params[0].dtype
        values = [torch.as_tensor(np.asarray(state[k])).to(dtype) for k in keys]
        bad = [k for k, v, p in zip(keys, values, params) if v.shape != p.shape]
        if bad:
            raise ValueError(f"adapter state for {name!r}: {bad[0]} has shape {tuple(np.shape(state[bad[0]]))}, "
                             f"the model's is {tuple(params[keys.index(bad[0])].shape)}")
        with torch.no_grad():
            for p, v in zip(params, values):
                p.copy_(v)
        return
    ref = get_peft_model_state_dict(model, adapter_name=name, save_embedding_layers=False)
    missing = set(ref) - set(state)
    if missing:
        raise ValueError(f"adapter state for {name!r} lacks {len(missing)} tensors, e.g. {sorted(missing)[0]}")
    dtype = next(iter(ref.values())).dtype
    tensors = {k: torch.as_tensor(np.asarray(v)).to(dtype) for k, v in state.items()}
    set_peft_model_state_dict(model, tensors, adapter_name=name)


def activate(model, name: str) -> list[torch.nn.Parameter]:
    """Make ``name`` the active (and only trainable) adapter; returns its parameters."""
    layout = _layout(model)
    entry = layout.entry(model, name) if name in model.peft_config else None
    if entry is None or any(m.merged for m in layout.layers):
        model.set_adapter(name)
        params = [p for n, p in model.named_parameters() if f".{name}." in n and "lora_" in n]
    else:
        params = entry[2]
        if model.active_adapter != name or any(m.active_adapters != [name] for m in layout.layers):
            model.active_adapter = name  # what PeftModel.set_adapter, the tuner's and each layer's record
            for m in layout.layers:
                m._active_adapter = [name]
            model.base_model.active_adapter = name
        own = {id(p) for p in params}  # the trainable flags peft's walk sets: only this adapter's
        for p in layout.lora_params:
            if p.requires_grad and id(p) not in own:
                p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    return params


def save_peft(model, state: AdapterState, path, base_model_name_or_path: str | None = None) -> None:
    """Write ``state`` as a PEFT adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``).

    Args:
        model: the peft-wrapped model the state belongs to (gives the LoRA config).
        state: LoRA factors as :func:`get_state` returns them (e.g. a run's ``checkpoint/global.npz``).
        path: the folder to write (created).
        base_model_name_or_path: recorded in the config (default: the model's own).
    """
    import copy
    from pathlib import Path

    from safetensors.torch import save_file

    ref = get_peft_model_state_dict(model, adapter_name=GLOBAL, save_embedding_layers=False)
    if set(ref) != set(state):
        extra, missing = sorted(set(state) - set(ref)), sorted(set(ref) - set(state))
        raise ValueError(f"adapter state does not match this model's LoRA layout: "
                         f"{len(missing)} tensors missing (e.g. {missing[:1]}), {len(extra)} unknown (e.g. {extra[:1]})")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    cfg = copy.deepcopy(model.peft_config[GLOBAL])
    cfg.base_model_name_or_path = base_model_name_or_path or cfg.base_model_name_or_path
    cfg.save_pretrained(str(out))
    save_file({k: torch.as_tensor(np.ascontiguousarray(v)) for k, v in state.items()},
              str(out / "adapter_model.safetensors"), metadata={"format": "pt"})


def initial_state(model, seed: int) -> AdapterState:
    """The LoRA factors a fresh ``"global"`` adapter gets with ``seed`` (A random, B = 0; eq. 3)."""
    tmp = "__initial__"
    active = model.active_adapter
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.add_adapter(tmp, model.peft_config[GLOBAL])
        state = get_state(model, tmp)
    model.delete_adapter(tmp)
    model.set_adapter(active)
    return state

