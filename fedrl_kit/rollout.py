"""Rollouts: G completions per prompt for the active adapter, and their per-token log-probabilities.

Generation is Hugging Face ``generate`` with a KV cache (CPU or GPU), or with ``loop="compact"`` fedrl_kit's own
sampling loop (:func:`_compact_sample`: the active LoRA adapter folded into a copy of each weight, finished rows
dropped from the batch; the same random draws as ``generate``). vLLM is an optional GPU backend and is never
imported on a CPU path. Log-probabilities are computed from logits divided
by the sampling temperature, as TRL does, so that the GRPO importance ratio compares the policy
with the distribution the completions were actually sampled from.
"""

from __future__ import annotations

import copy
import functools
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from transformers import LogitsProcessorList
from transformers.modeling_outputs import CausalLMOutputWithPast

from fedrl_kit.config import GENERATION_LOOPS, PROMPT_PASSES
from fedrl_kit.policy.decode import lean_decoder
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
    prompt_pass: str = "per_row",
    loop: str = "hf",
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
        prompt_pass: ``"per_row"`` (every row prefills its own copy of the prompt) or ``"shared"`` (each prompt
            but its last token is prefilled once and its KV cache copied to its G rows; the random draws are the
            same, the logits equal to float tolerance, so the completions are the same unless a draw falls
            within that tolerance of a token's boundary). Not with ``sampler``.
        loop: ``"hf"`` (HF ``generate``) or ``"compact"`` (:func:`_compact_sample`: each LoRA layer computes
            with its active adapter folded into a float32 copy of its weight, W₀ + (α/r)·B·A, one matmul instead of
            three, and rows that have emitted eos leave the batch; the same random draws in the same order, logits
            equal to float tolerance, so the same completions unless a draw falls within that tolerance of a
            token's boundary; with ``prompt_pass="shared"`` each whole prompt is prefilled once for its G rows).
            The folded copies are held while sampling: about one more copy of the adapted weights in memory.
            Not with ``sampler``.

    Returns:
        :class:`Rollouts` with N = B·G rows, prompt-major (rows g·… of prompt b are contiguous).
    """
    if num_generations < 1:
        raise ValueError(f"num_generations must be >= 1, got {num_generations}")
    _check_prompt_pass(prompt_pass)
    if prompt_pass == "shared" and sampler is not None:
        raise ValueError("prompt_pass='shared' does not go with a lockstep sampler (its rows are not groups of one "
                         "adapter); use prompt_pass='per_row'")
    if loop not in GENERATION_LOOPS:
        raise ValueError(f"generation loop must be one of {GENERATION_LOOPS}, got {loop!r}")
    if loop == "compact" and sampler is not None:
        raise ValueError("the compact generation loop does not go with a lockstep sampler (its rows carry several "
                         "adapters, which cannot be folded into one weight); use loop='hf'")
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
    shared = prompt_pass == "shared" and num_generations > 1 and prompt_ids.shape[1] > 1
    if loop == "compact":
        with folded_lora(model):
            completion_ids = _compact_sample(model, prompt_ids, prompt_mask, num_generations if shared else 1,
                                             max_new_tokens, temperature, tokenizer.eos_token_id,
                                             tokenizer.pad_token_id)  # [N, T]
    else:
        if shared:
            sampling[CACHE_ARG] = _shared_prefill(model, prompt_ids, prompt_mask, num_generations)
        out = model.generate(
            input_ids=prompt_ids, attention_mask=prompt_mask, max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, **sampling,
        )  # [N, P + T]
        completion_ids = out[:, prompt_ids.shape[1]:]  # [N, T]
    model.train(was_training)
    if completion_ids.shape[1] == 0:  # every row stopped at once: keep one pad column so shapes stay 2-D
        completion_ids = torch.full((len(repeated), 1), tokenizer.pad_token_id, dtype=prompt_ids.dtype, device=device)
    completion_mask = completion_mask_from_ids(completion_ids, tokenizer.eos_token_id)  # [N, T]
    texts = tokenizer.batch_decode(completion_ids * completion_mask + tokenizer.pad_token_id * (1 - completion_mask),
                                   skip_special_tokens=True)
    return Rollouts(prompt_ids, prompt_mask, completion_ids, completion_mask, repeated, texts, num_generations)


def per_token_logps(model, rollouts: Rollouts, temperature: float = 1.0, batch_size: int | None = None,
                    prompt_pass: str = "per_row", length_buckets: int = 1) -> torch.Tensor:
    """log π(o_t | q, o_<t) for every completion token, with logits scaled by 1/temperature.

    Position ids follow the attention mask (left padding), as in ``generate``, so the scores
    match the distribution the completions were sampled from.

    ``prompt_pass``: ``"per_row"`` scores every row's prompt and completion in one pass; ``"shared"``
    scores each group's prompt once and its G completions against the prompt's cached keys and values
    (:func:`_shared_prompt_logps`: the same log-probs and gradients to float tolerance, not bit for bit).
    A batch whose G-row blocks do not share one prompt is scored per row.

    ``length_buckets``: 1 scores each chunk of rows in one pass, every row padded to the chunk's longest
    completion; k > 1 scores them in up to k passes of rows with similar completion lengths, each padded only to
    its own longest (and, per row, only from its bucket's first prompt token), which skips most of the padding's
    work when completion lengths vary (:func:`length_buckets_of`). The log-probs and gradients are the one pass's
    to float tolerance, not bit for bit (other matrix shapes sum in another order).

    Returns:
        [N, T] log-probabilities (values at masked positions are meaningless; use the mask).
    """
    _check_prompt_pass(prompt_pass)
    _check_length_buckets(length_buckets)
    n = len(rollouts)
    batch_size = batch_size or n
    G = rollouts.num_generations
    if prompt_pass == "shared" and G > 1 and n % G == 0 and _groups_share_prompts(rollouts):
        step = max(G, batch_size - batch_size % G)  # whole groups per chunk
        score = _shared_prompt_logps if length_buckets == 1 else functools.partial(
            _shared_prompt_logps_bucketed, buckets=length_buckets)
        return torch.cat([score(model, rollouts, s, min(n, s + step), temperature)
                          for s in range(0, n, step)], dim=0)  # [N, T]
    out = []
    for s in range(0, n, batch_size):
        p_ids, p_mask = rollouts.prompt_ids[s:s + batch_size], rollouts.prompt_mask[s:s + batch_size]
        c_ids, c_mask = rollouts.completion_ids[s:s + batch_size], rollouts.completion_mask[s:s + batch_size]
        if length_buckets == 1:
            out.append(_per_row_logps(model, p_ids, p_mask, c_ids, c_mask, temperature))  # [b, T]
            continue
        chunk = rollouts if batch_size >= n else rollouts.select(range(s, min(n, s + batch_size)))

        def score(idx, t, chunk=chunk):
            rows = trimmed_rows(chunk, idx, t)
            return _per_row_logps(model, rows.prompt_ids, rows.prompt_mask, rows.completion_ids, rows.completion_mask,
                                  temperature)  # [b_k, t]

        out.append(scored_in_passes(c_mask, length_buckets, score))  # [b, T]
    return torch.cat(out, dim=0)  # [N, T]


def _per_row_logps(model, p_ids, p_mask, c_ids, c_mask, temperature: float) -> torch.Tensor:
    """Rows scored with their own copy of their prompt, in one pass.  [b, P] and [b, T] -> [b, T]"""
    input_ids = torch.cat([p_ids, c_ids], dim=1)  # [b, P + T]
    attn = torch.cat([p_mask, c_mask], dim=1)  # [b, P + T]
    position_ids = (attn.cumsum(dim=1) - 1).clamp(min=0)  # [b, P + T]
    T = c_ids.shape[1]
    logits = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids).logits  # [b, P+T, V]
    return _token_logps(logits[:, -T - 1:-1, :], c_ids, temperature)  # [b, T] from the logits that predict each


def _token_logps(logits: torch.Tensor, ids: torch.Tensor, temperature: float) -> torch.Tensor:
    """log-softmax of logits / temperature at the tokens ``ids``.  [b, T, V] and [b, T] -> [b, T]"""
    logits = logits / max(temperature, 1e-6)
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def trimmed_rows(rollouts: Rollouts, idx: torch.Tensor, t: int) -> Rollouts:
    """The rows ``idx`` with their completions cut to ``t`` tokens and the prompt columns that are padding in all
    of them dropped (left padding): one pass of :func:`scored_in_passes`."""
    used = rollouts.prompt_mask[idx].any(dim=0).nonzero()
    keep = int(used[0]) if len(used) else 0
    return Rollouts(rollouts.prompt_ids[idx, keep:], rollouts.prompt_mask[idx, keep:],
                    rollouts.completion_ids[idx, :t], rollouts.completion_mask[idx, :t],
                    [rollouts.prompts[i] for i in idx.tolist()], [rollouts.completions[i] for i in idx.tolist()],
                    rollouts.num_generations)


def scored_in_passes(completion_mask: torch.Tensor, buckets: int, score) -> torch.Tensor:
    """Log-probs of every row from up to ``buckets`` passes by completion length (:func:`length_buckets_of`).

    ``score(idx, t)`` scores the rows ``idx`` (ascending) with completions cut to ``t`` tokens and returns
    [len(idx), t]; the passes are put back in the rows' order, 0 past a pass's longest.  -> [N, T]
    """
    T = completion_mask.shape[1]
    parts, order = [], []
    for idx, t in length_buckets_of(completion_mask, buckets):
        idx = idx.sort().values
        parts.append(torch.nn.functional.pad(score(idx, t), (0, T - t)))  # [b_k, T]
        order.append(idx)
    return torch.cat(parts, dim=0)[torch.argsort(torch.cat(order))]  # [N, T]


def length_buckets_of(completion_mask: torch.Tensor, buckets: int) -> list[tuple[torch.Tensor, int]]:
    """Rows grouped into at most ``buckets`` passes of similar completion length, padding work minimised.

    Rows sorted by length (the mask's row sums, at least 1) are cut into contiguous runs so that the sum over runs
    of rows × the run's longest length, the token positions the passes compute, is the least possible (an exact
    dynamic programme over the distinct lengths). Runs that would save nothing are not split off.

    Returns:
        [(row indices, their longest length)], shortest first; every row in exactly one.
    """
    lengths = completion_mask.sum(dim=1).clamp(min=1)  # [b]
    order = torch.argsort(lengths, stable=True)  # [b]
    values, counts = torch.unique_consecutive(lengths[order], return_counts=True)
    values, ends = values.tolist(), counts.cumsum(dim=0).tolist()  # distinct lengths, rows up to each
    D, inf = len(values), float("inf")
    # cost[k][j]: least positions for the rows of the first j distinct lengths in k runs; cut[k][j]: its last cut
    cost = [[0.0] + [inf] * D] + [[inf] * (D + 1) for _ in range(min(buckets, D))]
    cut = [[0] * (D + 1) for _ in cost]
    for k in range(1, len(cost)):
        for j in range(k, D + 1):
            for i in range(k - 1, j):
                c = cost[k - 1][i] + ((ends[j - 1] - (ends[i - 1] if i else 0)) * values[j - 1])
                if c < cost[k][j]:
                    cost[k][j], cut[k][j] = c, i
    k = min(range(1, len(cost)), key=lambda k: (cost[k][D], k))  # fewest passes among the cheapest
    runs, j = [], D
    while k:
        i = cut[k][j]
        runs.append((order[(ends[i - 1] if i else 0):ends[j - 1]], int(values[j - 1])))
        j, k = i, k - 1
    return runs[::-1]


def _check_length_buckets(length_buckets) -> None:
    if isinstance(length_buckets, bool) or not isinstance(length_buckets, int) or length_buckets < 1:
        raise ValueError(f"length_buckets must be an integer >= 1, got {length_buckets!r}")


def _shared_prompt_logps_bucketed(model, rollouts: Rollouts, start: int, stop: int, temperature: float,
                                  buckets: int) -> torch.Tensor:
    """:func:`_shared_prompt_logps` with the completions in up to ``buckets`` passes of similar length.

    The B prompts run once with a KV cache, as there; each pass (:func:`length_buckets_of`) takes its rows'
    prompts' keys and values from it by index (autograd intact, so the prompt pass gets every row's gradient) and
    runs its completions padded only to its own longest.

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
        return _token_logps(logits, c_ids[idx, :t], temperature)  # [b_k, t]

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
    """A copy of a KV cache holding only the batch rows ``rows`` (repeats allowed), the original left as it is.

    The cache's layers are copied shallowly and select their rows as ``generate`` does (new key and value tensors,
    autograd intact), so each layer keeps its own bookkeeping, e.g. a sliding-window layer's count of the tokens
    seen, which a cache rebuilt from the kept keys and values would lose.
    """
    out = copy.copy(cache)
    out.layers = [copy.copy(layer) for layer in cache.layers]
    out.batch_select_indices(rows)
    return out


CACHE_ARG = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"
"""the KV cache's name in a model's outputs and keyword arguments (and ``generate``'s): ``cache`` from transformers
5.24 on, ``past_key_values`` before (pyproject admits transformers >= 5.0)"""


def model_cache(out):
    """The KV cache of a model's output (None when it returned none)."""
    return getattr(out, CACHE_ARG, None)


@torch.no_grad()
def _shared_prefill(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, num_generations: int):
    """The KV cache of every prompt but its last token, computed once per group and repeated to its G rows.

    ``generate`` given this cache runs only the last prompt token and then decodes, as it would after its
    own prefill of all N rows. [N, P] ids and mask, prompt-major groups of G identical rows.
    """
    G = num_generations
    p_ids, p_mask = prompt_ids[::G, :-1], prompt_mask[::G, :-1]  # [B, P - 1]
    out = model(input_ids=p_ids, attention_mask=p_mask, position_ids=(p_mask.cumsum(dim=1) - 1).clamp(min=0),
                use_cache=True, logits_to_keep=1)
    cache = model_cache(out)
    cache.batch_repeat_interleave(G)  # [B, …] -> [N, …]
    return cache


@torch.no_grad()
def _compact_sample(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, group: int, max_new_tokens: int,
                    temperature: float, eos_token_id: int, pad_token_id: int) -> torch.Tensor:
    """Sample up to T = ``max_new_tokens`` tokens per row, the rows that have emitted eos leaving the batch.

    What HF ``generate`` (sampling, no logits warper but the temperature; or greedy) does, with its random draws:
    every step scores the live rows' last tokens against the KV cache, and ``torch.multinomial`` draws once over
    the probabilities of all N rows (a finished row's are a one-hot on the pad token), so torch's generator
    advances exactly as in ``generate``, which keeps computing finished rows. A finished row gets the pad
    token, as there. ``group``: G > 1 when the rows come in prompt-major groups of G identical prompts
    (``prompt_pass="shared"``): each prompt is prefilled once, and its KV cache and last logits serve its G rows
    (the per-row prefill's to float tolerance); 1 prefills every row. For Llama- and Qwen2-style models the
    decode steps run :func:`fedrl_kit.policy.decode.lean_decoder`'s step (the model's operations without its module
    stack) on the prefill's key and value tensors; for other models, the model.

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


def plain_lora(layer) -> bool:
    """Whether a LoRA layer is peft's plain, unmerged ``Linear`` LoRA with no forward patched in: the layers whose
    computation :func:`folded_lora` and :func:`fedrl_kit.policy.batched.per_row_adapters` reproduce exactly."""
    from peft.tuners.lora.layer import Linear as LoraLinear

    return type(layer) is LoraLinear and not layer.merged and not layer.lora_variant and "forward" not in vars(layer)


@contextmanager
def folded_lora(model):
    """Within this context every LoRA layer computes ``x · (W₀ + Σ_a (α/r)·B_a·A_a)ᵀ + b`` with its active adapters
    folded into a copy of its weight: one matmul instead of three (inference only; no gradients reach A or B).

    A model without LoRA layers, or with its adapters disabled, is left as it is. Raises ValueError for a LoRA
    layer it cannot fold exactly (not a plain ``Linear``, DoRA or another variant, fan-in-fan-out, already merged
    or already patched) and for weights that are not float32: added to a bfloat16 or float16 weight, an adapter's
    small update would be mostly rounded away.
    """
    try:
        from peft.tuners.lora.layer import LoraLayer
    except ImportError:  # no peft: no adapters to fold
        yield
        return
    layers = [m for m in model.modules() if isinstance(m, LoraLayer) and not m.disable_adapters]
    for layer in layers:
        if not plain_lora(layer) or layer.fan_in_fan_out or not isinstance(layer.base_layer, torch.nn.Linear):
            raise ValueError(f"the compact generation loop folds plain LoRA on linear layers; a "
                             f"{type(layer).__name__} layer is not one (use generation_loop='hf')")
        if layer.base_layer.weight.dtype != torch.float32:
            raise ValueError(f"the compact generation loop folds each adapter into float32 weights; this model's are "
                             f"{layer.base_layer.weight.dtype} (use generation_loop='hf')")
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


def _check_prompt_pass(prompt_pass: str) -> None:
    if prompt_pass not in PROMPT_PASSES:
        raise ValueError(f"prompt_pass must be one of {PROMPT_PASSES}, got {prompt_pass!r}")


def _groups_share_prompts(rollouts: Rollouts) -> bool:
    """Whether every block of G consecutive rows has one prompt (ids and mask): what the shared pass needs."""
    G = rollouts.num_generations
    for t in (rollouts.prompt_ids, rollouts.prompt_mask):
        blocks = t.view(-1, G, t.shape[1])  # [B, G, P]
        if not bool((blocks == blocks[:, :1]).all()):
            return False
    return True


def _shared_prompt_logps(model, rollouts: Rollouts, start: int, stop: int, temperature: float) -> torch.Tensor:
    """Rows ``start:stop`` (whole groups) scored with one pass over each group's prompt.

    The B prompts run once with a KV cache; the cache is repeated G times along the batch and the N = B·G
    completions run against it. The logits at a prompt's last position predict its completions' first token;
    the completion pass predicts the rest. Mathematically the same log-probs (and, through the cache, the
    same gradients) as the per-row pass, in about P·B + T·N token positions instead of (P + T)·N.

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
    return _token_logps(logits, c_ids, temperature)  # [N, T]
