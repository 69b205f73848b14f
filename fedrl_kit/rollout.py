"""Rollouts: G completions per prompt for the active adapter, and their per-token log-probabilities.

Generation is Hugging Face ``generate`` with a KV cache (CPU or GPU). vLLM is an optional GPU
backend and is never imported on a CPU path. Log-probabilities are computed from logits divided
by the sampling temperature, as TRL does, so that the GRPO importance ratio compares the policy
with the distribution the completions were actually sampled from.
"""

from __future__ import annotations

from dataclasses import dataclass

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
def generate(
    model,
    tokenizer,
    prompts: list[str],
    num_generations: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    seed: int | None = None,
    chat: bool = False,
    sampler=None,
) -> Rollouts:
    """Sample G = ``num_generations`` completions for each prompt with the model's active adapter.

    Args:
        model: a causal LM (peft-wrapped or not); generation uses whatever adapter is active.
        tokenizer: its tokenizer (left padding is forced for generation).
        prompts: B raw problems.
        num_generations: G completions per prompt.
        max_new_tokens: cap on completion length T.
        temperature: sampling temperature; 0 means greedy decoding.
        seed: seeds torch's generator for a reproducible batch.
        chat: wrap prompts in the chat template (real chat models).
        sampler: a logits processor that draws each row's token itself and returns scores whose argmax is
            that token (:class:`fedrl_kit.policy.batched.GroupSampler`: one random stream per client in a
            lockstep batch); ``generate`` then decodes greedily. None: HF's sampling from torch's global stream.

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
    sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else dict(do_sample=False)
    if sampler is not None:
        sampling = dict(do_sample=False, logits_processor=LogitsProcessorList([sampler]))
    was_training = model.training
    model.eval()
    out = model.generate(
        input_ids=prompt_ids, attention_mask=prompt_mask, max_new_tokens=max_new_tokens,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, **sampling,
    )  # [N, P + T]
    model.train(was_training)
    completion_ids = out[:, prompt_ids.shape[1]:]  # [N, T]
    if completion_ids.shape[1] == 0:  # every row stopped at once: keep one pad column so shapes stay 2-D
        completion_ids = torch.full((len(repeated), 1), tokenizer.pad_token_id, dtype=out.dtype, device=device)
    completion_mask = completion_mask_from_ids(completion_ids, tokenizer.eos_token_id)  # [N, T]
    texts = tokenizer.batch_decode(completion_ids * completion_mask + tokenizer.pad_token_id * (1 - completion_mask),
                                   skip_special_tokens=True)
    return Rollouts(prompt_ids, prompt_mask, completion_ids, completion_mask, repeated, texts, num_generations)


def per_token_logps(model, rollouts: Rollouts, temperature: float = 1.0, batch_size: int | None = None) -> torch.Tensor:
    """log π(o_t | q, o_<t) for every completion token, with logits scaled by 1/temperature.

    Position ids follow the attention mask (left padding), as in ``generate``, so the scores
    match the distribution the completions were sampled from.

    Returns:
        [N, T] log-probabilities (values at masked positions are meaningless; use the mask).
    """
    n = len(rollouts)
    batch_size = batch_size or n
    out = []
    for s in range(0, n, batch_size):
        p_ids, p_mask = rollouts.prompt_ids[s:s + batch_size], rollouts.prompt_mask[s:s + batch_size]
        c_ids, c_mask = rollouts.completion_ids[s:s + batch_size], rollouts.completion_mask[s:s + batch_size]
        input_ids = torch.cat([p_ids, c_ids], dim=1)  # [b, P + T]
        attn = torch.cat([p_mask, c_mask], dim=1)  # [b, P + T]
        position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)  # [b, P + T]
        T = c_ids.shape[1]
        logits = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids).logits  # [b, P+T, V]
        logits = logits[:, -T - 1:-1, :] / max(temperature, 1e-6)  # [b, T, V] logits that predict each completion token
        logps = torch.log_softmax(logits.float(), dim=-1).gather(-1, c_ids.unsqueeze(-1)).squeeze(-1)  # [b, T]
        out.append(logps)
    return torch.cat(out, dim=0)  # [N, T]
