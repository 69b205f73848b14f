"""Rollouts: G completions per prompt for the active adapter, and their per-token log-probabilities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from transformers import LogitsProcessorList

from fedrl_kit.tags import SYSTEM_PROMPT


@dataclass
class Rollouts:
    """A batch of B prompts × G completions, flattened to N = B·G rows (prompt-major)."""

    prompt_ids: torch.Tensor  # [N, P] left-padded
    prompt_mask: torch.Tensor  # [N, P]
    completion_ids: torch.Tensor  # [N, T] right-padded, ends with eos when finished
    completion_mask: torch.Tensor  # [N, T] 1 up to and including the first eos
    prompts: list[str]  # [N] the raw prompts, repeated G times each
    completions: list[str]  # [N] decoded completions (tags kept, eos/pad dropped)
    num_generations: int  # G

    def __len__(self) -> int:
        return len(self.completions)

    def select(self, rows) -> "Rollouts":
        """The rollouts at ``rows`` (a list of flat indices); G is kept only if whole groups are taken."""
        idx = torch.as_tensor(list(rows), dtype=torch.long)
        return Rollouts(
            self.prompt_ids[idx], self.prompt_mask[idx], self.completion_ids[idx], self.completion_mask[idx],
            [self.prompts[i] for i in idx.tolist()], [self.completions[i] for i in idx.tolist()],
            self.num_generations,
        )


Sample = Callable[..., torch.Tensor]
"""``sample(model, prompt_ids [N, P], prompt_mask [N, P], num_generations, max_new_tokens, temperature,
eos_token_id, pad_token_id, logits_processor=None) -> completion ids [N, T']``: how :func:`generate` draws the
completions of N = B·G prompt rows (prompt-major groups of G identical rows), T' ≤ max_new_tokens."""

Score = Callable[..., torch.Tensor]
"""``score(model, rollouts, temperature=1.0, batch_size=None) -> [N, T]``: how the GRPO step gets the per-token
log-probabilities of a batch of rollouts (``batch_size`` rows per forward pass; None: all at once)."""


def render_prompts(tokenizer, prompts: list[str], chat: bool) -> list[str]:
    """Wrap raw problems for the model: a chat template with the format's system prompt for real
    chat models, the raw text for the embedded world's tiny policy (it was warm-started on raw text)."""
    if not chat:
        return list(prompts)
    return [
        tokenizer.apply_chat_template(
            [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": p}],
            tokenize=False, add_generation_prompt=True,
        )
        for p in prompts
    ]


def completion_mask_from_ids(completion_ids: torch.Tensor, eos_token_id: int) -> torch.Tensor:
    """1 for every token up to and including the first eos, 0 after it.  [N, T] -> [N, T]"""
    is_eos = completion_ids == eos_token_id  # [N, T]
    seen_before = (is_eos.cumsum(dim=1) - is_eos.long()) > 0  # [N, T] an eos occurred strictly earlier
    return (~seen_before).long()


@torch.no_grad()
def hf_sample(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, num_generations: int,
              max_new_tokens: int, temperature: float, eos_token_id: int, pad_token_id: int,
              logits_processor=None, **generate_kwargs) -> torch.Tensor:
    """The reference :data:`Sample`: Hugging Face ``generate`` with a KV cache, multinomial sampling at
    ``temperature`` from torch's global generator (greedy at 0). ``logits_processor``: one that draws each row's
    token itself and returns scores whose argmax is that token (the lockstep path's
    :class:`fedrl_kit.speed.batched.GroupSampler`); ``generate`` then decodes greedily.  -> [N, T']"""
    if logits_processor is not None:
        sampling = dict(do_sample=False, logits_processor=LogitsProcessorList([logits_processor]))
    elif temperature > 0:
        sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
    else:
        sampling = dict(do_sample=False)
    out = model.generate(input_ids=prompt_ids, attention_mask=prompt_mask, max_new_tokens=max_new_tokens,
                         pad_token_id=pad_token_id, eos_token_id=eos_token_id, **sampling,
                         **generate_kwargs)  # [N, P + T']
    return out[:, prompt_ids.shape[1]:]  # [N, T']


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], num_generations: int, max_new_tokens: int,
             temperature: float = 1.0, seed: int | None = None, chat: bool = False, logits_processor=None,
             sample: Sample | None = None) -> Rollouts:
    """Sample G = ``num_generations`` completions for each prompt with the model's active adapter.

    Args:
        model, tokenizer: a causal LM (peft-wrapped or not) and its tokenizer (left padding forced).
        prompts: B raw problems.
        num_generations, max_new_tokens: G completions per prompt, of at most T tokens.
        temperature: sampling temperature; 0 means greedy decoding.
        seed: seeds torch's generator for a reproducible batch.
        chat: wrap prompts in the chat template (real chat models).
        logits_processor: passed to ``sample``.
        sample: the :data:`Sample` that draws (default :func:`hf_sample`; faster: :class:`fedrl_kit.speed.Sampler`).

    Returns:
        :class:`Rollouts` with N = B·G rows, prompt-major (rows g·… of prompt b are contiguous).
    """
    if num_generations < 1:
        raise ValueError(f"num_generations must be >= 1, got {num_generations}")
    if seed is not None:
        torch.manual_seed(seed)
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    repeated = [p for p in prompts for _ in range(num_generations)]  # [N]
    enc = tokenizer(render_prompts(tokenizer, repeated, chat), return_tensors="pt", padding=True, add_special_tokens=False)
    prompt_ids, prompt_mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)  # [N, P]
    was_training = model.training
    model.eval()
    completion_ids = (sample or hf_sample)(model, prompt_ids, prompt_mask, num_generations, max_new_tokens,
                                           temperature, tokenizer.eos_token_id, tokenizer.pad_token_id,
                                           logits_processor=logits_processor)  # [N, T]
    model.train(was_training)
    if completion_ids.shape[1] == 0:  # every row stopped at once: keep one pad column so shapes stay 2-D
        completion_ids = torch.full((len(repeated), 1), tokenizer.pad_token_id, dtype=prompt_ids.dtype, device=device)
    completion_mask = completion_mask_from_ids(completion_ids, tokenizer.eos_token_id)  # [N, T]
    texts = tokenizer.batch_decode(completion_ids * completion_mask + tokenizer.pad_token_id * (1 - completion_mask),
                                   skip_special_tokens=True)
    return Rollouts(prompt_ids, prompt_mask, completion_ids, completion_mask, repeated, texts, num_generations)


def per_token_logps(model, rollouts: Rollouts, temperature: float = 1.0, batch_size: int | None = None) -> torch.Tensor:
    """The reference :data:`Score`: log π(o_t | q, o_<t) for every completion token, logits scaled by 1/temperature.

    Returns:
        [N, T] log-probabilities (values at masked positions are meaningless; use the mask).
    """
    n = len(rollouts)
    batch_size = batch_size or n
    return torch.cat([row_logps(model, rollouts.prompt_ids[s:s + batch_size], rollouts.prompt_mask[s:s + batch_size],
                                rollouts.completion_ids[s:s + batch_size], rollouts.completion_mask[s:s + batch_size],
                                temperature) for s in range(0, n, batch_size)], dim=0)  # [N, T]


def row_logps(model, p_ids, p_mask, c_ids, c_mask, temperature: float) -> torch.Tensor:
    """Rows scored with their own copy of their prompt, in one pass.  [b, P] and [b, T] -> [b, T]"""
    input_ids = torch.cat([p_ids, c_ids], dim=1)  # [b, P + T]
    attn = torch.cat([p_mask, c_mask], dim=1)  # [b, P + T]
    position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)  # [b, P + T]
    T = c_ids.shape[1]
    logits = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids).logits  # [b, P+T, V]
    return token_logps(logits[:, -T - 1:-1, :], c_ids, temperature)  # [b, T] from the logits that predict each


def token_logps(logits: torch.Tensor, ids: torch.Tensor, temperature: float) -> torch.Tensor:
    """log-softmax of logits / temperature at the tokens ``ids``.  [b, T, V] and [b, T] -> [b, T]"""
    logits = logits / max(temperature, 1e-6)
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


LOGITS_BYTES = 1 << 30
"""the most bytes one pass's float32 logits [rows, positions, vocabulary] may take in :func:`fedrl_kit.sft.sft_step` and
:func:`fedrl_kit.sft.completion_logprob`: a batch over it is cut into row chunks that fit (:func:`row_chunks`)"""


def row_chunks(rows: int, positions: int, vocab: int, budget: int | None = None) -> list[range]:
    """``range(rows)`` cut into consecutive chunks whose float32 logits (chunk × positions × vocab × 4 bytes) stay
    within ``budget`` (default :data:`LOGITS_BYTES`); one chunk when the whole batch fits.

    With a real model's vocabulary the logits, not the weights, set a scoring pass's memory: 32 SFT pairs of 137
    tokens over Qwen2.5's 151,936 tokens are 2.5 GiB in float32, and the cross-entropy and its gradient hold more
    of that size; FedGRPO's evaluators train on such batches. The embedded world's vocabulary keeps every batch of
    its presets in one chunk, so their numbers do not change.
    """
    budget = LOGITS_BYTES if budget is None else budget
    per_row = max(1, positions * vocab * 4)
    size = max(1, min(rows, budget // per_row))
    return [range(s, min(rows, s + size)) for s in range(0, rows, size)]
