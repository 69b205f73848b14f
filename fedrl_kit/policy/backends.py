"""Where rollouts are sampled: Hugging Face ``generate`` (default, CPU or GPU) or vLLM (GPU, optional)."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from fedrl_kit.policy import adapters
from fedrl_kit.policy.engine import hf_rollouts
from fedrl_kit.rollout import Rollouts, completion_mask_from_ids, render_prompts

BACKENDS = ("hf", "vllm")


class RolloutBackend(Protocol):
    """Samples G completions per prompt from one adapter of a policy."""

    def rollouts(self, policy, adapter: str, prompts: list[str], num_generations: int, seed: int,
                 temperature: float) -> Rollouts: ...


class HFBackend:
    """The adapter active, then :func:`fedrl_kit.rollout.generate` with the policy's sampler."""

    def rollouts(self, policy, adapter, prompts, num_generations, seed, temperature) -> Rollouts:
        return hf_rollouts(policy, adapter, prompts, num_generations, seed, temperature)


def _vllm_api():
    try:
        import vllm
        from vllm.lora.request import LoRARequest
    except ImportError as e:
        raise ImportError("rollout_backend='vllm' needs vLLM on a GPU machine: pip install -e '.[gpu]'") from e
    return vllm.LLM, vllm.SamplingParams, LoRARequest


class VLLMBackend:
    """One vLLM engine for the frozen base; each adapter a per-request LoRA.

    Args:
        base: the base model's folder or hub id (what the policy was loaded from).
        max_loras: adapters one engine batch may mix (the number of clients that sample together).
        max_lora_rank: the runs' LoRA rank r.
        gpu_memory_utilization, dtype: vLLM's, for the engine (the training model shares the GPU).
        engine, api: a ready engine and ``(LLM, SamplingParams, LoRARequest)`` — tests pass stand-ins; by
            default vLLM is imported and the engine built here.
        workdir: where adapters are written as PEFT folders (default: a temporary folder).
    """

    def __init__(self, base: str, max_loras: int = 8, max_lora_rank: int = 8, gpu_memory_utilization: float = 0.4,
                 dtype: str = "bfloat16", engine=None, api=None, workdir: str | Path | None = None):
        self.LLM, self.SamplingParams, self.LoRARequest = api or _vllm_api()
        self.engine = engine if engine is not None else self.LLM(
            model=base, enable_lora=True, max_loras=max_loras, max_lora_rank=max_lora_rank,
            gpu_memory_utilization=gpu_memory_utilization, dtype=dtype)
        self.base = base
        self._tmp = None if workdir is not None else tempfile.TemporaryDirectory(prefix="fedrl_vllm_")
        self.workdir = Path(workdir if workdir is not None else self._tmp.name)
        self._published: dict[str, tuple[str, int, str]] = {}  # adapter → (digest, lora id, folder)
        self._next_id = 1

    def _request(self, policy, adapter: str):
        """The adapter's current factors as a LoRARequest (a new PEFT folder and id when they changed)."""
        state = policy.get_state(adapter)
        digest = hashlib.sha256(b"".join(k.encode() + np.ascontiguousarray(v).tobytes()
                                         for k, v in sorted(state.items()))).hexdigest()[:16]
        known = self._published.get(adapter)
        if known is None or known[0] != digest:  # vLLM caches by id: changed factors need a new id
            folder = self.workdir / f"{adapter}-{digest}"
            adapters.save_peft(policy.model, state, folder, self.base)
            known = (digest, self._next_id, str(folder))
            self._published[adapter] = known
            self._next_id += 1
        return self.LoRARequest(f"{adapter}-{known[0]}", known[1], known[2])

    def rollouts(self, policy, adapter, prompts, num_generations, seed, temperature) -> Rollouts:
        return self.rollouts_many(policy, {adapter: prompts}, num_generations, seed, temperature)[adapter]

    def rollouts_many(self, policy, prompts_by_adapter: dict[str, list[str]], num_generations: int, seed: int,
                      temperature: float) -> dict[str, Rollouts]:
        """Every adapter's prompts in one engine call; one :class:`Rollouts` per adapter, in the HF layout."""
        if num_generations < 1:
            raise ValueError(f"num_generations must be >= 1, got {num_generations}")
        tok = policy.tokenizer
        order = [(a, p) for a, ps in prompts_by_adapter.items() for p in ps]
        requests = {a: self._request(policy, a) for a in prompts_by_adapter}
        params = self.SamplingParams(n=num_generations, temperature=temperature, top_p=1.0, top_k=-1,
                                     max_tokens=policy.max_new_tokens, seed=seed)
        outputs = self.engine.generate(render_prompts(tok, [p for _, p in order], policy.chat), params,
                                       lora_request=[requests[a] for a, _ in order])
        rows: dict[str, list[list[int]]] = {a: [] for a in prompts_by_adapter}
        for (a, _), out in zip(order, outputs):
            for c in out.outputs:
                ids = list(c.token_ids)[:policy.max_new_tokens]
                if getattr(c, "finish_reason", None) == "stop" and (not ids or ids[-1] != tok.eos_token_id) \
                        and len(ids) < policy.max_new_tokens:
                    ids.append(tok.eos_token_id)  # stopped at eos: keep it, as generate's rows do
                rows[a].append(ids)
        return {a: self._as_rollouts(tok, prompts_by_adapter[a], rows[a], num_generations, policy.chat)
                for a in prompts_by_adapter}

    @staticmethod
    def _as_rollouts(tok, prompts: list[str], rows: list[list[int]], G: int, chat: bool) -> Rollouts:
        repeated = [p for p in prompts for _ in range(G)]  # [N]
        tok.padding_side = "left"
        enc = tok(render_prompts(tok, repeated, chat), return_tensors="pt", padding=True, add_special_tokens=False)
        T = max(1, max((len(r) for r in rows), default=1))
        completion_ids = torch.full((len(rows), T), tok.pad_token_id, dtype=enc["input_ids"].dtype)  # [N, T]
        for n, r in enumerate(rows):
            completion_ids[n, :len(r)] = torch.as_tensor(r, dtype=completion_ids.dtype)
        completion_mask = completion_mask_from_ids(completion_ids, tok.eos_token_id)  # [N, T]
        texts = tok.batch_decode(completion_ids * completion_mask + tok.pad_token_id * (1 - completion_mask),
                                 skip_special_tokens=True)
        return Rollouts(enc["input_ids"], enc["attention_mask"], completion_ids, completion_mask, repeated, texts, G)


def make_backend(name: str, base: str = "", **kwargs) -> RolloutBackend:
    """The backend named by ``RunConfig.rollout_backend``."""
    if name == "hf":
        return HFBackend()
    if name == "vllm":
        return VLLMBackend(base, **kwargs)
    raise ValueError(f"rollout_backend must be one of {BACKENDS}, got {name!r}")
