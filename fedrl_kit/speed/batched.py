"""Lockstep clients: K clients' LoRA adapters in one generate and one forward/backward (per-row adapters)."""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from fedrl_kit.grpo import GRPOSettings, group_advantages, grpo_loss, step_summary
from fedrl_kit.policy.memory import layer_widths
from fedrl_kit.rollout import Rollouts, generate, per_token_logps
from fedrl_kit.speed.buckets import scored_in_passes, trimmed_rows
from fedrl_kit.speed.compact import plain_lora
from fedrl_kit.sft import completion_logprob

if TYPE_CHECKING:  # peft is imported on first use: method modules register lockstep handlers cheaply
    from peft.tuners.lora.layer import Linear as LoraLinear

Groups = list[tuple[str, int, int]]
"""(adapter name, first row, one past the last row) per client, contiguous and in row order"""


def row_groups(names: list[str], sizes: list[int]) -> Groups:
    """Contiguous row groups for clients ``names`` with ``sizes`` rows each, in that order."""
    bounds, start = [], 0
    for name, n in zip(names, sizes):
        bounds.append((name, start, start + n))
        start += n
    return bounds


def clip_groups(groups: Groups, start: int, stop: int) -> Groups:
    """The groups' share of rows ``start … stop − 1``, renumbered from 0 (a group with no row there is left out)."""
    return [(name, max(a, start) - start, min(b, stop) - start) for name, a, b in groups if a < stop and b > start]


def _grouped_lora_forward(layer: LoraLinear, groups: Groups, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """peft's ``lora.Linear.forward`` with client k's adapter on client k's rows (x: [N, ..., d])."""
    result = layer.base_layer(x, *args, **kwargs)  # [N, ..., m]
    if layer.disable_adapters:  # π_ref under peft's disable_adapter(): the base alone, as peft does
        return result
    if x.shape[0] != groups[-1][2]:
        raise ValueError(f"per-row adapters expect {groups[-1][2]} rows, got a batch of {x.shape[0]}")
    dtype = result.dtype
    sizes = {stop - start for _, start, stop in groups}
    if len(groups) > 1 and len(sizes) == 1 and len({layer.scaling[n] for n, _, _ in groups}) == 1 and \
            all(isinstance(layer.lora_dropout[n], torch.nn.Identity) for n, _, _ in groups):
        # equal groups: two batched matmuls over the K stacked adapters instead of a loop over them
        K, names = len(groups), [n for n, _, _ in groups]
        A = torch.stack([layer.lora_A[n].weight for n in names])  # [K, r, d]
        B = torch.stack([layer.lora_B[n].weight for n in names])  # [K, m, r]
        xk = layer._cast_input_dtype(x, A.dtype).reshape(K, -1, x.shape[-1])  # [K, n_k·…, d]
        delta = torch.bmm(torch.bmm(xk, A.transpose(1, 2)), B.transpose(1, 2)) * layer.scaling[names[0]]  # [K, n_k·…, m]
        return (result + delta.reshape(result.shape)).to(dtype)  # [N, ..., m]
    deltas = []
    for name, start, stop in groups:
        a, b = layer.lora_A[name], layer.lora_B[name]
        xk = layer._cast_input_dtype(x[start:stop], a.weight.dtype)  # [n_k, ..., d]
        deltas.append(b(a(layer.lora_dropout[name](xk))) * layer.scaling[name])  # [n_k, ..., m]
    return (result + torch.cat(deltas, dim=0)).to(dtype)  # [N, ..., m]


@contextmanager
def per_row_adapters(model, groups: Groups):
    """Within this context every LoRA layer of ``model`` applies adapter k to the rows of group k.

    Args:
        model: the peft-wrapped policy model (plain LoRA on ``Linear``/``Conv1D`` layers; no DoRA, not merged).
        groups: :data:`Groups`, covering the batch's rows 0..N−1 contiguously.
    """
    if not groups or groups[0][1] != 0 or any(g[2] != h[1] for g, h in zip(groups, groups[1:])) or \
            any(stop <= start for _, start, stop in groups):
        raise ValueError(f"row groups must tile the rows contiguously from 0, got {groups}")
    from peft.tuners.lora.layer import LoraLayer

    layers = [m for m in model.modules() if isinstance(m, LoraLayer)]
    for layer in layers:
        if not plain_lora(layer):
            raise ValueError(f"per-row adapters handle plain, unmerged LoRA on linear layers; {type(layer).__name__} "
                             "is not one")
        missing = {name for name, _, _ in groups} - set(layer.lora_A)
        if missing:
            raise ValueError(f"no adapter {sorted(missing)} in the model")
    try:
        for layer in layers:
            layer.forward = functools.partial(_grouped_lora_forward, layer, groups)
        yield
    finally:
        for layer in layers:
            vars(layer).pop("forward", None)


class GroupSampler:
    """A logits processor for ``generate``: each client's rows sampled from that client's own generator."""

    def __init__(self, groups: Groups, seeds: list[int], temperature: float, device):
        if temperature <= 0:
            raise ValueError(f"lockstep sampling needs temperature > 0, got {temperature}")
        self.groups, self.temperature = groups, temperature
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.temperature != 1.0:  # HF adds its temperature warper only then
            scores = scores / self.temperature  # [N, V]
        probs = torch.softmax(scores, dim=-1)  # [N, V]
        tokens = torch.cat([torch.multinomial(probs[start:stop], num_samples=1, generator=g)
                            for (_, start, stop), g in zip(self.groups, self.generators)])  # [N, 1]
        return torch.full_like(scores, float("-inf")).scatter_(1, tokens, 0.0)  # [N, V]


def generate_lockstep(policy, prompts: dict[str, list[str]], num_generations: int, seeds: dict[str, int] | None,
                      temperature: float | None = None) -> dict[str, Rollouts]:
    """G completions per prompt for every adapter in ``prompts``, in one ``generate`` over all rows.

    Args:
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy` (HF generation).
        prompts: adapter name → its B_k raw prompts (at least one each).
        num_generations: G.
        seeds: adapter name → its sampling seed (``Policy.rollout``'s in sequential mode).
        temperature: default the policy's; 0 decodes greedily.

    Returns:
        Adapter name → :class:`Rollouts` laid out as ``Policy.rollout`` lays them out for that adapter alone.
    """
    names = list(prompts)
    t = policy.temperature if temperature is None else temperature
    groups = row_groups(names, [len(prompts[a]) * num_generations for a in names])
    device = next(policy.model.parameters()).device
    sampler = GroupSampler(groups, [seeds[a] for a in names], t, device) if t > 0 else None  # 0: greedy, no draws
    with per_row_adapters(policy.model, groups):
        every = generate(policy.model, policy.tokenizer, [p for a in names for p in prompts[a]], num_generations,
                         policy.max_new_tokens, t, None, policy.chat, logits_processor=sampler)
    return {name: trim(every.select(range(start, stop))) for name, start, stop in groups}


def trim(r: Rollouts) -> Rollouts:
    """Drop the prompt columns that are padding in every row and the completion columns after every row ended."""
    P = max(1, int(r.prompt_mask.sum(dim=1).max()))
    T = max(1, int(r.completion_mask.sum(dim=1).max()))
    return Rollouts(r.prompt_ids[:, -P:], r.prompt_mask[:, -P:], r.completion_ids[:, :T], r.completion_mask[:, :T],
                    r.prompts, r.completions, r.num_generations)


def sequence_logprob_lockstep(policy, pairs: dict[str, tuple[list[str], list[str]]],
                              batch_size: int = 256) -> dict[str, np.ndarray]:
    """:func:`fedrl_kit.sft.sequence_logprob` for several adapters, each on its own pairs, in one pass.

    Args:
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy`.
        pairs: adapter name → (prompts, completions) it scores (either may be empty).

    Returns:
        Adapter name → [n_k] float64 log-probs, as ``sequence_logprob`` up to batching's float effects.
    """
    names = [n for n in pairs if len(pairs[n][0])]
    groups = row_groups(names, [len(pairs[n][0]) for n in names])
    every = completion_logprob(policy, [p for n in names for p in pairs[n][0]], [c for n in names for c in pairs[n][1]],
                               batch_size, rows=lambda start, stop: per_row_adapters(
                                   policy.model, clip_groups(groups, start, stop))) if names else np.zeros(0)  # [Σn]
    out = {n: np.zeros(0) for n in pairs}
    out.update({n: every[start:stop] for n, start, stop in groups})
    return out


def concat_rollouts(parts: list[Rollouts], pad_token_id: int) -> Rollouts:
    """Rows of several rollouts in one batch: prompts left-padded, completions right-padded to the longest."""
    P = max(r.prompt_ids.shape[1] for r in parts)
    T = max(r.completion_ids.shape[1] for r in parts)

    def left(x, value):
        return F.pad(x, (P - x.shape[1], 0), value=value)

    def right(x, value):
        return F.pad(x, (0, T - x.shape[1]), value=value)

    return Rollouts(
        torch.cat([left(r.prompt_ids, pad_token_id) for r in parts]),  # [ΣN, P]
        torch.cat([left(r.prompt_mask, 0) for r in parts]),  # [ΣN, P]
        torch.cat([right(r.completion_ids, pad_token_id) for r in parts]),  # [ΣN, T]
        torch.cat([right(r.completion_mask, 0) for r in parts]),  # [ΣN, T]
        [p for r in parts for p in r.prompts], [c for r in parts for c in r.completions], parts[0].num_generations,
    )


def lockstep_logps(model, names: list[str], parts: list[Rollouts], temperature: float,
                   pad_token_id: int, length_buckets: int = 1) -> list[torch.Tensor]:
    """Each client's [N_k, T_k] per-token log-probs under its own adapter, from one forward over all rows."""
    groups = row_groups(names, [len(r) for r in parts])
    every = concat_rollouts(parts, pad_token_id)
    if length_buckets == 1:
        with per_row_adapters(model, groups):
            logps = per_token_logps(model, every, temperature)  # [ΣN, T]
    else:
        logps = _bucketed_lockstep_logps(model, groups, every, temperature, length_buckets)
    return [logps[start:stop, :r.completion_ids.shape[1]] for (_, start, stop), r in zip(groups, parts)]


def _bucketed_lockstep_logps(model, groups: Groups, every: Rollouts, temperature: float,
                             buckets: int) -> torch.Tensor:
    """:func:`lockstep_logps`'s passes by length: [ΣN, T] log-probs, rows in their order (0 past a pass's longest)."""
    owner = torch.empty(len(every), dtype=torch.long, device=every.completion_mask.device)  # [ΣN] each row's group
    for g, (_, start, stop) in enumerate(groups):
        owner[start:stop] = g

    def score(idx, t):  # idx ascending: client order, each client's rows contiguous
        counts = torch.bincount(owner[idx], minlength=len(groups)).tolist()
        bounds = torch.tensor([0, *counts]).cumsum(0).tolist()
        pass_groups = [(groups[g][0], bounds[g], bounds[g + 1]) for g in range(len(groups)) if counts[g]]
        with per_row_adapters(model, pass_groups):
            return per_token_logps(model, trimmed_rows(every, idx, t), temperature)  # [b_k, t]

    return scored_in_passes(every.completion_mask, buckets, score)  # [ΣN, T]


CPU_PASS_BYTES = 32 << 20
"""on a CPU, the most bytes one activation of a lockstep training pass may take (see :func:`packed_passes`)"""


def activation_bytes(model) -> int:
    """Bytes per token position of the model's widest activation: max(hidden, MLP width) × the element size."""
    try:
        width = max(layer_widths(model.config))
    except (AttributeError, ValueError):  # no config, or one without a hidden size: a 1,024-wide model's MLP
        width = 4 * 1024
    return width * next(model.parameters()).element_size()


def packed_passes(chunk: list[tuple[int, range]], lengths: list[tuple[int, int]], per_position: int,
                  budget: int | None = None) -> list[list[tuple[int, range]]]:
    """A micro-batch's clients packed, in order, into passes whose widest tensor stays within ``budget`` bytes.

    Args:
        chunk: (client, rows) of one micro-batch, in client order.
        lengths: per client, its rows' (prompt, completion) columns.
        per_position: bytes per row and position of the widest activation (:func:`activation_bytes`).
        budget: the bytes an activation may take (default :data:`CPU_PASS_BYTES`).
    """
    budget = CPU_PASS_BYTES if budget is None else budget
    passes, rows, prompt, completion = [], 0, 0, 0
    for k, r in chunk:
        p, c = max(prompt, lengths[k][0]), max(completion, lengths[k][1])  # the pass padded with client k in it
        if passes and (rows + len(r)) * (p + c) * per_position <= budget:
            passes[-1].append((k, r))
            rows, prompt, completion = rows + len(r), p, c
        else:
            passes.append([(k, r)])
            rows, (prompt, completion) = len(r), lengths[k]
    return passes


LOGITS_BYTES_PER_ELEMENT = 14
"""bytes a training pass holds per logit: the model's logits, their float32 copy, the log-softmax and the gradient
(:mod:`fedrl_kit.policy.memory` counts the same 14)"""


def device_pass_budget(model) -> tuple[int, int]:
    """(bytes per row and position, bytes a pass may take) for :func:`packed_passes` on the model's device."""
    device = next(model.parameters()).device
    if device.type == "cpu":
        return activation_bytes(model), CPU_PASS_BYTES
    vocab = int(model.get_output_embeddings().weight.shape[0])
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else 16 << 30
    return vocab * LOGITS_BYTES_PER_ELEMENT, free // 2


def grpo_step_lockstep(model, names: list[str], optimizers: list, rollouts: list[Rollouts],
                       rewards: list[torch.Tensor], settings: GRPOSettings, pad_token_id: int, ref_model_ctx=None,
                       extra_losses: list | None = None, on_first_grads: list | None = None) -> list[dict]:
    """One GRPO step of K clients at once: :func:`fedrl_kit.grpo.grpo_step` per client, one pass for all.

    Args:
        model: the peft-wrapped policy holding the K adapters ``names`` (row order).
        optimizers, rollouts, rewards: per client: its optimiser, its N_k = B_k·G rollouts, its [N_k] rewards.
        settings: :class:`~fedrl_kit.grpo.GRPOSettings` shared by the clients.
        pad_token_id: fills the rows to a common length.
        ref_model_ctx: as in ``grpo_step`` (beta > 0).
        extra_losses, on_first_grads: per client, None or ``grpo_step``'s ``extra_loss`` / ``on_first_grad``.

    Returns:
        Per client, the diagnostics ``grpo_step`` returns for it.
    """
    K = len(names)
    extra_losses = extra_losses or [None] * K
    on_first_grads = on_first_grads or [None] * K
    G = rollouts[0].num_generations
    masks = [r.completion_mask for r in rollouts]  # K × [N_k, T_k]
    advantages = [group_advantages(rw, G, settings.scale_rewards) for rw in rewards]  # K × [N_k]
    n = [len(r) for r in rollouts]
    mb = settings.micro_batch_size
    # micro-batch j holds rows [j·mb, (j+1)·mb) of every client that has them (grpo_step's split, per client)
    chunks = [[(k, range(s, min(n[k], s + mb))) for k in range(K) if s < n[k]] for s in range(0, max(n), mb)]
    lengths = [(r.prompt_ids.shape[1], r.completion_ids.shape[1]) for r in rollouts]
    per_position, budget = device_pass_budget(model)  # K clients' rows in one pass must fit: see packed_passes
    chunks = [p for chunk in chunks for p in packed_passes(chunk, lengths, per_position, budget)]
    old_logps = [torch.zeros_like(m, dtype=torch.float32) for m in masks]  # K × [N_k, T_k] filled in epoch 0
    ref_logps = [None] * K
    if settings.beta > 0:
        if ref_model_ctx is None:
            raise ValueError("beta > 0 needs ref_model_ctx (the policy with its adapter disabled)")
        with torch.no_grad(), ref_model_ctx():
            every = (settings.score or per_token_logps)(model, concat_rollouts(rollouts, pad_token_id),
                                                        settings.temperature, mb)
        bounds = row_groups(names, n)
        ref_logps = [every[s:e, :m.shape[1]] for (_, s, e), m in zip(bounds, masks)]  # K × [N_k, T_k]
    params = [[p for g in opt.param_groups for p in g["params"]] for opt in optimizers]
    for p in (p for ps in params for p in ps):  # peft re-freezes all but its active adapter after disable_adapter()
        p.requires_grad_(True)
    model.train()
    diags: list[list[dict]] = [[] for _ in range(K)]
    n_tok_total = [m.sum().clamp(min=1) for m in masks]
    for epoch in range(settings.num_iterations):
        for opt in optimizers:
            opt.zero_grad()
        for chunk in chunks:
            parts = [rollouts[k].select(rows) if mb < n[k] else rollouts[k] for k, rows in chunk]
            logps = lockstep_logps(model, [names[k] for k, _ in chunk], parts, settings.temperature, pad_token_id,
                                   getattr(settings.score, "length_buckets", 1))
            total = 0.0
            for (k, rows), lp in zip(chunk, logps):
                sl = slice(rows.start, rows.stop)
                if epoch == 0:
                    old_logps[k][sl] = lp.detach()
                loss, diag = grpo_loss(lp, old_logps[k][sl], advantages[k][sl], masks[k][sl], settings.epsilon,
                                       settings.epsilon_high, settings.beta,
                                       None if ref_logps[k] is None else ref_logps[k][sl], settings.loss_type)
                share = (masks[k][sl].sum() / n_tok_total[k]) if settings.loss_type == "dapo" \
                    else (len(rows) / n[k])
                total = total + loss * share  # client k's loss reaches only client k's factors
                diag["loss"] = loss.item()
                diags[k].append(diag)
            total.backward()
        for k in range(K):
            if extra_losses[k] is not None:
                extra_losses[k]().backward()
            if epoch == 0 and on_first_grads[k] is not None:
                on_first_grads[k](params[k])
            torch.nn.utils.clip_grad_norm_(params[k], settings.max_grad_norm)
            optimizers[k].step()
    return [step_summary(diags[k], rewards[k], G, masks[k]) for k in range(K)]
