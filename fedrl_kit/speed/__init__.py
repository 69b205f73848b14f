"""Faster ways to sample and to score, each an implementation of the reference path's signatures; skip on first read."""

from __future__ import annotations

import functools
from dataclasses import dataclass

PROMPT_PASSES = ("per_row", "shared")
"""how prompts go through the model (``RunConfig.prompt_pass``): every row its own copy, or each prompt once"""
GENERATION_LOOPS = ("hf", "compact")
"""which loop samples HF rollouts (``RunConfig.generation_loop``)"""


def check_choice(name: str, value, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


@dataclass(frozen=True)
class Sampler:
    """The ``Sample`` for a generation loop and a prompt pass (:func:`fedrl_kit.rollout.generate`'s ``sample``)."""

    loop: str = "hf"
    prompt_pass: str = "per_row"

    def __post_init__(self):
        check_choice("generation loop", self.loop, GENERATION_LOOPS)
        check_choice("prompt_pass", self.prompt_pass, PROMPT_PASSES)

    def __call__(self, model, prompt_ids, prompt_mask, num_generations, max_new_tokens, temperature, eos_token_id,
                 pad_token_id, logits_processor=None):
        if self.loop == "compact":
            from fedrl_kit.speed.compact import compact_sample as sample

            sample = functools.partial(sample, shared=self.prompt_pass == "shared")
        elif self.prompt_pass == "shared":
            from fedrl_kit.speed.shared_prompt import shared_prefill_sample as sample
        else:
            from fedrl_kit.rollout import hf_sample as sample
        return sample(model, prompt_ids, prompt_mask, num_generations, max_new_tokens, temperature, eos_token_id,
                      pad_token_id, logits_processor=logits_processor)


@dataclass(frozen=True)
class Scorer:
    """The ``Score`` for a prompt pass and a number of length buckets (:class:`fedrl_kit.grpo.GRPOSettings`'s
    ``score``)."""

    prompt_pass: str = "per_row"
    length_buckets: int = 1

    def __post_init__(self):
        check_choice("prompt_pass", self.prompt_pass, PROMPT_PASSES)
        from fedrl_kit.speed.buckets import check_length_buckets

        check_length_buckets(self.length_buckets)

    def __call__(self, model, rollouts, temperature: float = 1.0, batch_size: int | None = None):
        from fedrl_kit.rollout import per_token_logps as score

        if self.length_buckets > 1:
            from fedrl_kit.speed.buckets import bucketed_logps

            score = functools.partial(bucketed_logps, length_buckets=self.length_buckets)
        if self.prompt_pass == "shared":
            from fedrl_kit.speed.shared_prompt import shared_prompt_logps

            score = functools.partial(shared_prompt_logps, length_buckets=self.length_buckets, fallback=score)
        return score(model, rollouts, temperature, batch_size)
