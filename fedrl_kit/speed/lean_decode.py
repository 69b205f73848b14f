"""The compact generation loop's decode step without the module stack: the same operations as the model's forward."""

from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.nn.functional as F

ARCHITECTURES = ("llama", "qwen2")
"""``config.model_type`` values whose decoder layer :func:`lean_decoder` reproduces"""


def _linear(module) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """(weight, bias) that ``module`` applies as one ``linear``, or None if its forward is something else."""
    patched = vars(module).get("forward")
    if patched is not None:  # folded_lora's partial(linear, weight=…, bias=…); anything else is not ours
        if isinstance(patched, functools.partial) and patched.func is F.linear and not patched.args:
            return patched.keywords["weight"], patched.keywords.get("bias")
        return None
    if type(module) is torch.nn.Linear:
        return module.weight, module.bias
    if hasattr(module, "base_layer") and getattr(module, "disable_adapters", False):  # LoRA switched off: the base
        base = module.base_layer
        return (base.weight, base.bias) if type(base) is torch.nn.Linear and "forward" not in vars(base) else None
    return None  # an unfolded LoRA layer, a quantised layer, …


def _stacked(*linears) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One (weight, bias) computing the given linears' outputs side by side (a missing bias: zeros, added exactly)."""
    weight = torch.cat([w for w, _ in linears])
    if all(b is None for _, b in linears):
        return weight, None
    return weight, torch.cat([b if b is not None else w.new_zeros(w.shape[0]) for w, b in linears])


def _has_hooks(module: torch.nn.Module) -> bool:
    from torch.nn.modules import module as module_lib

    if module_lib._global_forward_hooks or module_lib._global_forward_pre_hooks:
        return True
    # accelerate's hook is a plain attribute: in vars(), and cheaper to look for there than by hasattr on a Module
    return any(m._forward_hooks or m._forward_pre_hooks or "_hf_hook" in vars(m) for m in module.modules())


def _supported(base, config) -> bool:
    rope = getattr(config, "rope_parameters", None) or {}
    layer_types = getattr(config, "layer_types", None) or ()
    return (getattr(config, "model_type", None) in ARCHITECTURES
            and getattr(config, "_attn_implementation", None) == "sdpa"
            and rope.get("rope_type", "default") == "default"
            and all(t == "full_attention" for t in layer_types)
            and not getattr(config, "use_sliding_window", False)
            and getattr(config, "hidden_act", None) == "silu"
            and getattr(config, "pretraining_tp", 1) in (1, None)
            and getattr(base, "lm_head", None) is not None and getattr(base, "model", None) is not None)


def lean_decoder(model) -> Callable | None:
    """A decode step for ``model`` (a causal LM, peft-wrapped or not) that skips the module stack, or None."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(base, "config", None)
    if config is None or not _supported(base, config):
        return None
    inner = base.model
    if _has_hooks(base):
        return None
    if any(vars(m).get("forward") is not None  # a forward patched in: not the computation reproduced here
           for m in (base, inner, *inner.layers, inner.norm, inner.embed_tokens, inner.rotary_emb)):
        return None
    layers = []
    for layer in inner.layers:
        attn, mlp = layer.self_attn, layer.mlp
        linears = [_linear(m) for m in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj,
                                        mlp.gate_proj, mlp.up_proj, mlp.down_proj)]
        if any(lin is None for lin in linears):
            return None
        q_, k_, v_, o_, gate, up, down = linears
        layers.append((_stacked(q_, k_, v_), o_, _stacked(gate, up), down,
                       (layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon),
                       (layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon)))
    head = _linear(base.lm_head)
    if head is None or type(inner.embed_tokens) is not torch.nn.Embedding:
        return None
    embed = inner.embed_tokens.weight
    norm = (inner.norm.weight, inner.norm.variance_epsilon)
    inv_freq, rope_scale = inner.rotary_emb.inv_freq, inner.rotary_emb.attention_scaling
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    groups, scale = heads // kv_heads, head_dim ** -0.5
    q_width, kv_width, intermediate = heads * head_dim, kv_heads * head_dim, layers[0][3][0].shape[1]

    def rms_norm(x, norm_):  # Qwen2RMSNorm / LlamaRMSNorm
        weight, eps = norm_
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return weight * h.to(x.dtype)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def step(ids, mask, position, keys, values):
        n = ids.shape[0]
        h = F.embedding(ids[:, None], embed)  # [n, 1, H]
        freqs = position[..., None].float() * inv_freq  # [n, 1, head_dim / 2]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * rope_scale).to(h.dtype)[:, None]  # [n, 1, 1, head_dim]
        sin = (emb.sin() * rope_scale).to(h.dtype)[:, None]
        attend = mask.bool()[:, None, None, :]  # [n, 1, 1, L]
        for i, (qkv_, o_, gate_up, down, norm1, norm2) in enumerate(layers):
            x = rms_norm(h, norm1)
            q, k, v = F.linear(x, *qkv_).split([q_width, kv_width, kv_width], dim=-1)  # one product for the three
            q = q.reshape(n, 1, heads, head_dim).transpose(1, 2)  # [n, heads, 1, d]
            k = k.reshape(n, 1, kv_heads, head_dim).transpose(1, 2)  # [n, kv_heads, 1, d]
            v = v.reshape(n, 1, kv_heads, head_dim).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            keys[i] = torch.cat([keys[i], k], dim=-2)  # [n, kv_heads, L, d]
            values[i] = torch.cat([values[i], v], dim=-2)
            out = F.scaled_dot_product_attention(q.reshape(n, kv_heads, groups, head_dim), keys[i], values[i],
                                                 attn_mask=attend, scale=scale)  # [n, kv_heads, groups, d]
            out = out.reshape(n, heads, 1, head_dim).transpose(1, 2).reshape(n, 1, heads * head_dim)
            h = h + F.linear(out, *o_)
            x = rms_norm(h, norm2)
            g, u = F.linear(x, *gate_up).split(intermediate, dim=-1)
            h = h + F.linear(F.silu(g) * u, *down)
        return F.linear(rms_norm(h, norm), *head)  # [n, 1, V]

    return step
