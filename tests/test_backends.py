"""Rollout backends: HF generate is the default path; the vLLM backend's plumbing against a stand-in engine."""

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.policy.backends import HFBackend, VLLMBackend, make_backend
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rollout import generate


@dataclass
class Out:
    token_ids: list
    finish_reason: str


@dataclass
class Request:
    prompt: str
    outputs: list


class FakeEngine:
    """Answers every prompt with G fixed completions: '7' then eos (stopped), and '1 2 3 4 …' (cut at max_tokens)."""

    def __init__(self, tok):
        self.tok, self.calls = tok, []

    def generate(self, prompts, params, lora_request):
        self.calls.append((list(prompts), params, list(lora_request)))
        seven = self.tok("7", add_special_tokens=False)["input_ids"]
        long = self.tok("1 2 3 4 5 6 7 8 9 1 2 3 4 5 6 7 8 9", add_special_tokens=False)["input_ids"]
        outs = [Out(seven, "stop") if g % 2 == 0 else Out(long[:params.max_tokens], "length") for g in range(params.n)]
        return [Request(p, outs) for p in prompts]


class Params:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class LoRA:
    def __init__(self, name, lora_id, path):
        self.name, self.id, self.path = name, lora_id, path


@pytest.fixture()
def policy(tiny_dir):
    return Policy.load(tiny_dir, lora_rank=2, seed=0, max_new_tokens=6)


def test_the_default_backend_is_hf_generate_bit_for_bit(policy):
    a = policy.rollout(GLOBAL, ["1+2=", "3+4="], 3, seed=5)
    policy.trainable(GLOBAL)
    b = generate(policy.model, policy.tokenizer, ["1+2=", "3+4="], 3, 6, 1.0, 5, False)
    assert torch.equal(a.completion_ids, b.completion_ids) and a.completions == b.completions
    assert isinstance(make_backend("hf"), HFBackend)
    with pytest.raises(ValueError, match="rollout_backend must be one of"):
        make_backend("sglang")


def test_vllm_backend_builds_rollouts_and_serves_each_adapter_as_a_peft_folder(policy, tmp_path):
    engine = FakeEngine(policy.tokenizer)
    backend = VLLMBackend("tiny", engine=engine, api=(None, Params, LoRA), workdir=tmp_path)
    policy.backend = backend
    for cid in ("client_0", "client_1"):
        policy.set_state(cid, policy.get_state(GLOBAL))
    out = backend.rollouts_many(policy, {"client_0": ["1+2="], "client_1": ["3+4=", "5+6="]}, 2, seed=3,
                                temperature=1.0)
    prompts, params, loras = engine.calls[0]
    assert len(engine.calls) == 1 and len(prompts) == 3  # both adapters in one engine call
    assert [r.name.split("-")[0] for r in loras] == ["client_0", "client_1", "client_1"]
    assert params.n == 2 and params.max_tokens == 6 and params.seed == 3
    for r in loras:
        assert {p.name for p in Path(r.path).iterdir()} == {"adapter_config.json", "adapter_model.safetensors"}
    r1 = out["client_1"]
    eos = policy.tokenizer.eos_token_id
    assert r1.prompts == ["3+4=", "3+4=", "5+6=", "5+6="] and r1.num_generations == 2
    assert r1.completion_ids.shape == (4, 6) and r1.completions[0] == "7"
    assert r1.completion_ids[0, 1].item() == eos and r1.completion_mask[0].tolist() == [1, 1, 0, 0, 0, 0]
    assert r1.completion_mask[1].tolist() == [1] * 6  # cut at max_tokens: no eos, every token counts
    # unchanged factors reuse the folder and id; changed ones get a new id (vLLM caches adapters by id)
    policy.rollout("client_1", ["3+4="], 2, seed=4)
    assert engine.calls[1][2][0].id == loras[1].id
    state = policy.get_state("client_1")
    policy.set_state("client_1", {k: v + 0.1 for k, v in state.items()})
    policy.rollout("client_1", ["3+4="], 2, seed=4)
    assert engine.calls[2][2][0].id not in {r.id for r in loras}
    assert "vllm" not in sys.modules  # the stand-in engine: vLLM itself was never imported


def test_vllm_backend_without_vllm_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # as on a CPU machine
    with pytest.raises(ImportError, match=r"pip install -e '.\[gpu\]'"):
        make_backend("vllm", "tiny")
