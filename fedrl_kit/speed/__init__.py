"""Faster ways to sample and to score, each an implementation of the reference path's signatures; skip on first read.

:mod:`fedrl_kit.rollout` is the reference: HF ``generate`` samples (its ``Sample``) and one forward per row scores
(its ``Score``). Everything here computes the same numbers to float tolerance, in less time:

==========================  =============================================  ===========================================
module                      what                                           turned on by
==========================  =============================================  ===========================================
:mod:`.shared_prompt`       each prompt runs once for its G rows, in       ``RunConfig.prompt_pass = "shared"``
                            sampling and in scoring
:mod:`.compact`             fedrl_kit's own sampling loop: the adapter     ``RunConfig.generation_loop = "compact"``
                            folded into the weights, finished rows out
:mod:`.lean_decode`         the compact loop's decode step of Llama- and   (used by the compact loop by itself)
                            Qwen2-style models without the module stack
:mod:`.buckets`             completions scored in up to k passes of        ``RunConfig.length_buckets = k``
                            similar length
:mod:`.batched`             K clients' adapters in one generate and one    ``RunConfig.client_batching = "lockstep"``
                            forward/backward (per-row adapters)            (:mod:`fedrl_kit.federation.lockstep`)
:mod:`.allocator`           freed memory kept in the process (lockstep     (a lockstep run on a CPU, by itself)
                            on a CPU)
``policy.backends``         vLLM (GPU)                                     ``RunConfig.rollout_backend = "vllm"``
==========================  =============================================  ===========================================

:class:`Sampler` and :class:`Scorer` pick the implementation a config asks for; the policy keeps its sampler
(``Policy.sampler``) and :class:`~fedrl_kit.grpo.GRPOSettings` its scorer (``score``), so the engine's code reads
the same whichever is on. docs/performance.md has what each one saves and how it was measured.
"""

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
