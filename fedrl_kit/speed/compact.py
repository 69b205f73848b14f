"""fedrl_kit's own sampling loop: the adapter folded into the weights, finished rows out of the batch."""

from __future__ import annotations

import functools
from contextlib import contextmanager

import torch

from fedrl_kit.speed.lean_decode import lean_decoder
from fedrl_kit.speed.shared_prompt import CACHE_ARG, model_cache


def compact_sample(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, num_generations: int,
                   max_new_tokens: int, temperature: float, eos_token_id: int, pad_token_id: int,
                   logits_processor=None, shared: bool = False) -> torch.Tensor:
    """A ``Sample``: the compact loop; ``shared``: each whole prompt prefilled once for its G rows.  -> [N, T']"""
    if logits_processor is not None:
        raise ValueError("the compact generation loop does not go with a lockstep sampler (its rows carry several "
                         "adapters, which cannot be folded into one weight); use generation_loop='hf'")
    group = num_generations if shared and num_generations > 1 and prompt_ids.shape[1] > 1 else 1
    with folded_lora(model):
        return _compact_sample(model, prompt_ids, prompt_mask, group, max_new_tokens, temperature, eos_token_id,
                               pad_token_id)  # [N, T']


@torch.no_grad()
def _compact_sample(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, group: int, max_new_tokens: int,
                    temperature: float, eos_token_id: int, pad_token_id: int) -> torch.Tensor:
    """Sample up to T = ``max_new_tokens`` tokens per row, the rows that have emitted eos leaving the batch.

    Returns:
        [N, T'] completion ids, T' ≤ T the steps until every row finished.
    """
    _check_plain_sampling(model)
    N, device = prompt_ids.shape[0], prompt_ids.device
    position_ids = (prompt_mask.cumsum(dim=1) - 1).clamp(min=0)  # [N, P]
    out = model(input_ids=prompt_ids[::group], attention_mask=prompt_mask[::group],
                position_ids=position_ids[::group], use_cache=True, logits_to_keep=1)  # [N / group] rows
    cache, logits = model_cache(out), out.logits  # [N / group, 1, V]
    if group > 1:
        cache.batch_repeat_interleave(group)  # [B, …] -> [N, …]
        logits = logits.repeat_interleave(group, dim=0)  # [N, 1, V]
    step = lean_decoder(model)  # None: the model is called for every decode step
    if step is not None and not all(isinstance(getattr(layer, "keys", None), torch.Tensor) for layer in cache.layers):
        step = None  # a cache that does not keep plain key and value tensors per layer
    if step is not None:
        keys, values = [layer.keys for layer in cache.layers], [layer.values for layer in cache.layers]
    mask, position = prompt_mask, position_ids[:, -1:]  # the live rows' [n, P + t] mask and [n, 1] last position
    live = torch.arange(N, device=device)  # [n] which rows are still generating
    tokens = torch.full((N, max_new_tokens), pad_token_id, dtype=prompt_ids.dtype, device=device)  # [N, T]
    probs = None
    for t in range(max_new_tokens):
        scores = logits[:, -1, :].float()  # [n, V] as generate: float32 logits of the last position
        if temperature > 0:
            if temperature != 1.0:
                scores = scores / temperature
            if probs is None:
                probs = torch.zeros(N, scores.shape[-1], device=device)  # [N, V]
                probs[:, pad_token_id] = 1.0  # a finished row's: any distribution draws the same random numbers
            probs[live] = torch.softmax(scores, dim=-1)
            new = torch.multinomial(probs, num_samples=1).squeeze(1)[live]  # [n] one draw for all N rows, as generate
        else:
            new = scores.argmax(dim=-1)  # [n]
        tokens[live, t] = new
        going = new != eos_token_id  # [n]
        if t == max_new_tokens - 1 or not bool(going.any()):
            return tokens[:, :t + 1]
        if not bool(going.all()):
            keep = going.nonzero().squeeze(1)  # [n'] positions in the live batch
            if probs is not None:
                probs[live[~going]] = 0.0
                probs[live[~going], pad_token_id] = 1.0
            live, new, mask, position = live[keep], new[keep], mask[keep], position[keep]
            if step is None:
                cache.batch_select_indices(keep)
            else:
                keys, values = [k[keep] for k in keys], [v[keep] for v in values]
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)  # [n, P + t + 1]
        position = position + 1
        if step is None:
            logits = model(input_ids=new[:, None], attention_mask=mask, position_ids=position, **{CACHE_ARG: cache},
                           use_cache=True).logits  # [n, 1, V]
        else:
            logits = step(new, mask, position, keys, values)  # the same operations without the module stack
    return tokens  # max_new_tokens == 0 does not reach here (generate needs T >= 1)


_NEUTRAL_PROCESSORS = {"repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0,
                       "min_p": None, "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0,
                       "bad_words_ids": None, "suppress_tokens": None, "begin_suppress_tokens": None,
                       "forced_bos_token_id": None, "forced_eos_token_id": None, "min_length": 0,
                       "min_new_tokens": None, "sequence_bias": None, "renormalize_logits": False,
                       "encoder_no_repeat_ngram_size": 0, "exponential_decay_length_penalty": None,
                       "guidance_scale": 1.0, "watermarking_config": None, "top_h": None, "stop_strings": None,
                       "num_beams": 1, "num_return_sequences": 1, "max_time": None, "prompt_lookup_num_tokens": None}
"""what HF ``generate`` would take from a model's generation config besides the settings :func:`generate` passes
(logits processors, stopping criteria, beams), at their neutral values"""


def _check_plain_sampling(model) -> None:
    """Refuse a model whose generation config makes ``generate`` change the logits, stop or search in ways the
    compact loop does not (it applies the temperature only and stops at eos or the token cap, as ``generate`` does
    with the settings :func:`generate` passes)."""
    config = getattr(model, "generation_config", None)
    set_ = {k: getattr(config, k) for k, neutral in _NEUTRAL_PROCESSORS.items()
            if config is not None and getattr(config, k, neutral) not in (neutral, None, [], ())}
    if set_:
        raise ValueError(f"the compact generation loop applies only the temperature, but the model's generation config "
                         f"sets {set_}; use generation_loop='hf', or reset them in model.generation_config")


def _foldable_layers(model) -> list | None:
    """The LoRA layers :func:`folded_lora` folds (None without peft); ValueError for one it cannot fold exactly."""
    try:
        from peft.tuners.lora.layer import LoraLayer
    except ImportError:
        return None
    layers = [m for m in model.modules() if isinstance(m, LoraLayer) and not m.disable_adapters]
    for layer in layers:
        if not plain_lora(layer) or layer.fan_in_fan_out or not isinstance(layer.base_layer, torch.nn.Linear):
            raise ValueError(f"the compact generation loop folds plain LoRA on linear layers; a "
                             f"{type(layer).__name__} layer is not one (use generation_loop='hf')")
        if layer.base_layer.weight.dtype != torch.float32:
            raise ValueError(f"the compact generation loop folds each adapter into float32 weights; this model's are "
                             f"{layer.base_layer.weight.dtype} (use generation_loop='hf')")
    return layers


def compact_applies(model) -> bool:
    """Whether the compact loop can sample from ``model`` exactly as ``generate`` would: its LoRA layers fold
    (:func:`folded_lora`) and its generation config asks for nothing but the temperature. ``generation_loop="auto"``
    takes the compact loop only then."""
    try:
        _foldable_layers(model)
        _check_plain_sampling(model)
    except ValueError:
        return False
    return True


def plain_lora(layer) -> bool:
    """Whether a LoRA layer is peft's plain, unmerged ``Linear`` LoRA with no forward patched in: the layers whose
    computation :func:`folded_lora` and :func:`fedrl_kit.speed.batched.per_row_adapters` reproduce exactly."""
    from peft.tuners.lora.layer import Linear as LoraLinear

    return type(layer) is LoraLinear and not layer.merged and not layer.lora_variant and "forward" not in vars(layer)


@contextmanager
def folded_lora(model):
    """Within this context every LoRA layer computes ``x · (W₀ + Σ_a (α/r)·B_a·A_a)ᵀ + b`` with its active adapters
    folded into a copy of its weight: one matmul instead of three (inference only; no gradients reach A or B).
    """
    layers = _foldable_layers(model)
    if layers is None:  # no peft: no adapters to fold
        yield
        return
    try:
        for layer in layers:
            weight = layer.base_layer.weight
            for name in layer.active_adapters:
                if name in layer.lora_A:
                    update = layer.lora_B[name].weight @ layer.lora_A[name].weight  # [m, d]
                    weight = weight + update.to(weight.dtype) * layer.scaling[name]
            layer.forward = functools.partial(torch.nn.functional.linear, weight=weight.detach(),
                                              bias=layer.base_layer.bias)
        yield
    finally:
        for layer in layers:
            vars(layer).pop("forward", None)
