"""Each prompt once for its G rows: the shared prompt pass, in sampling and in scoring."""

from __future__ import annotations

import copy

import torch
from transformers.modeling_outputs import CausalLMOutputWithPast

from fedrl_kit.rollout import Rollouts, hf_sample, per_token_logps, token_logps
from fedrl_kit.speed.buckets import check_length_buckets, scored_in_passes

CACHE_ARG = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"
"""the KV cache's name in a model's outputs and keyword arguments (and ``generate``'s): ``cache`` from transformers
5.24 on, ``past_key_values`` before (pyproject admits transformers >= 5.0)"""


def model_cache(out):
    """The KV cache of a model's output (None when it returned none)."""
    return getattr(out, CACHE_ARG, None)


@torch.no_grad()
def _shared_prefill(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, num_generations: int):
    """The KV cache of every prompt but its last token, computed once per group and repeated to its G rows."""
    G = num_generations
    p_ids, p_mask = prompt_ids[::G, :-1], prompt_mask[::G, :-1]  # [B, P - 1]
    out = model(input_ids=p_ids, attention_mask=p_mask, position_ids=(p_mask.cumsum(dim=1) - 1).clamp(min=0),
                use_cache=True, logits_to_keep=1)
    cache = model_cache(out)
    cache.batch_repeat_interleave(G)  # [B, …] -> [N, …]
    return cache


def shared_prefill_sample(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, num_generations: int,
                          max_new_tokens: int, temperature: float, eos_token_id: int, pad_token_id: int,
                          logits_processor=None) -> torch.Tensor:
    """:func:`fedrl_kit.rollout.hf_sample` with each prompt prefilled once for its G rows (a ``Sample``)."""
    if logits_processor is not None:
        raise ValueError("prompt_pass='shared' does not go with a lockstep sampler (its rows are not groups of one "
                         "adapter); use prompt_pass='per_row'")
    extra = {}
    if num_generations > 1 and prompt_ids.shape[1] > 1:
        extra[CACHE_ARG] = _shared_prefill(model, prompt_ids, prompt_mask, num_generations)
    return hf_sample(model, prompt_ids, prompt_mask, num_generations, max_new_tokens, temperature, eos_token_id,
                     pad_token_id, **extra)


def shared_prompt_logps(model, rollouts: Rollouts, temperature: float = 1.0, batch_size: int | None = None,
                        length_buckets: int = 1, fallback=per_token_logps) -> torch.Tensor:
    """A ``Score``: each group's prompt scored once, its G completions against the prompt's cached keys and values,
    whole groups per chunk of about ``batch_size`` rows; with ``length_buckets`` = k > 1 the completions of a chunk
    in up to k passes of similar length (:mod:`fedrl_kit.speed.buckets`). A batch whose G-row blocks do not share
    one prompt is scored by ``fallback`` (default: the per-row pass).  -> [N, T]"""
    check_length_buckets(length_buckets)
    n, G = len(rollouts), rollouts.num_generations
    if not (G > 1 and n % G == 0 and groups_share_prompts(rollouts)):
        return fallback(model, rollouts, temperature, batch_size)
    batch_size = batch_size or n
    step = max(G, batch_size - batch_size % G)  # whole groups per chunk
    if length_buckets == 1:
        return torch.cat([_shared_prompt_logps(model, rollouts, s, min(n, s + step), temperature)
                          for s in range(0, n, step)], dim=0)  # [N, T]
    return torch.cat([_shared_prompt_logps_bucketed(model, rollouts, s, min(n, s + step), temperature, length_buckets)
                      for s in range(0, n, step)], dim=0)  # [N, T]


def groups_share_prompts(rollouts: Rollouts) -> bool:
    """Whether every block of G consecutive rows has one prompt (ids and mask): what the shared pass needs."""
    G = rollouts.num_generations
    for t in (rollouts.prompt_ids, rollouts.prompt_mask):
        blocks = t.view(-1, G, t.shape[1])  # [B, G, P]
        if not bool((blocks == blocks[:, :1]).all()):
            return False
    return True


def _shared_prompt_logps(model, rollouts: Rollouts, start: int, stop: int, temperature: float) -> torch.Tensor:
    """Rows ``start:stop`` (whole groups) scored with one pass over each group's prompt.

    Returns:
        [stop - start, T] log-probabilities.
    """
    G = rollouts.num_generations
    p_ids, p_mask = rollouts.prompt_ids[start:stop:G], rollouts.prompt_mask[start:stop:G]  # [B, P]
    c_ids, c_mask = rollouts.completion_ids[start:stop], rollouts.completion_mask[start:stop]  # [N, T]
    T = c_ids.shape[1]
    first, cache = _prompt_pass(model, p_ids, p_mask, T)  # [B, 1, V], keys and values of [B, P]
    first = first.repeat_interleave(G, dim=0)  # [N, 1, V] predicts completion token 0
    logits = first
    if T > 1:
        cache.batch_repeat_interleave(G)  # [B, …] -> [N, …] keys and values, autograd intact
        attn = torch.cat([rollouts.prompt_mask[start:stop], c_mask], dim=1)  # [N, P + T]
        position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)[:, -T:-1]  # [N, T - 1]
        rest = model(input_ids=c_ids[:, :-1], attention_mask=attn[:, :-1], position_ids=position_ids,
                     **{CACHE_ARG: cache}).logits  # [N, T - 1, V] predicts completion tokens 1..T-1
        logits = torch.cat([first, rest], dim=1)  # [N, T, V]
    return token_logps(logits, c_ids, temperature)  # [N, T]


def _shared_prompt_logps_bucketed(model, rollouts: Rollouts, start: int, stop: int, temperature: float,
                                  buckets: int) -> torch.Tensor:
    """:func:`_shared_prompt_logps` with the completions in up to ``buckets`` passes of similar length.

    Returns:
        [stop - start, T] log-probabilities, rows in their order.
    """
    G = rollouts.num_generations
    p_ids, p_mask = rollouts.prompt_ids[start:stop:G], rollouts.prompt_mask[start:stop:G]  # [B, P]
    c_ids, c_mask = rollouts.completion_ids[start:stop], rollouts.completion_mask[start:stop]  # [N, T]
    row_mask = rollouts.prompt_mask[start:stop]  # [N, P]
    T = c_ids.shape[1]
    first, cache = _prompt_pass(model, p_ids, p_mask, T, use_cache=T > 1)  # [B, 1, V], keys and values of [B, P]

    def score(idx, t):
        group = idx // G  # [b_k] each row's prompt
        logits = first[group]  # [b_k, 1, V]
        if t > 1:
            attn = torch.cat([row_mask[idx], c_mask[idx, :t]], dim=1)  # [b_k, P + t]
            position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)[:, -t:-1]  # [b_k, t - 1]
            rest = model(input_ids=c_ids[idx, :t - 1], attention_mask=attn[:, :-1], position_ids=position_ids,
                         **{CACHE_ARG: _rows_of(cache, group)}).logits  # [b_k, t - 1, V]
            logits = torch.cat([logits, rest], dim=1)  # [b_k, t, V]
        return token_logps(logits, c_ids[idx, :t], temperature)  # [b_k, t]

    return scored_in_passes(c_mask, buckets, score)  # [N, T]


def _prompt_pass(model, p_ids: torch.Tensor, p_mask: torch.Tensor, T: int, use_cache: bool = True):
    """The shared pass's one forward over the B prompts: (logits at each prompt's last position [B, 1, V], which
    predict the first completion token; the KV cache, or None). Raises when completions of ``T`` > 1 tokens need
    the cache and the model returned none."""
    out = model(input_ids=p_ids, attention_mask=p_mask, position_ids=(p_mask.cumsum(dim=1) - 1).clamp(min=0),
                use_cache=use_cache, logits_to_keep=1)
    cache = model_cache(out)
    if T > 1 and cache is None:
        raise RuntimeError("prompt_pass='shared' needs the model to return its KV cache (gradient "
                           "checkpointing turns the cache off); use prompt_pass='per_row'")
    return out.logits[:, -1:, :], cache


def _rows_of(cache, rows: torch.Tensor):
    """A copy of a KV cache holding only the batch rows ``rows`` (repeats allowed), the original left as it is."""
    out = copy.copy(cache)
    out.layers = [copy.copy(layer) for layer in cache.layers]
    out.batch_select_indices(rows)
    return out
