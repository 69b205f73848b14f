"""A trained adapter leaves the toolkit as a PEFT folder that plain peft loads."""

import numpy as np
import pytest
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

from fedrl_kit.policy.adapters import GLOBAL, save_peft
from fedrl_kit.policy.engine import Policy


def test_a_trained_adapter_loads_with_plain_peft_and_gives_the_same_logits(tiny_dir, tmp_path):
    policy = Policy.load(tiny_dir, lora_rank=2, lora_alpha=4.0, seed=0)
    rng = np.random.default_rng(0)
    state = {k: rng.normal(0, 0.2, v.shape).astype(np.float32) for k, v in policy.get_state(GLOBAL).items()}
    policy.set_state("client_3", state)  # stands in for a trained client's adapter (B ≠ 0)
    policy.save_adapter("client_3", tmp_path / "adapter", base_model_name_or_path=tiny_dir)
    assert {p.name for p in (tmp_path / "adapter").iterdir()} == {"adapter_config.json", "adapter_model.safetensors"}

    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_dir), tmp_path / "adapter").eval()
    ids = policy.tokenizer("12+7=", return_tensors="pt")["input_ids"]
    policy.trainable("client_3")
    policy.model.eval()
    with torch.no_grad():
        ours, theirs = policy.model(input_ids=ids).logits, loaded(input_ids=ids).logits
        with policy.reference():
            base = policy.model(input_ids=ids).logits
    assert torch.allclose(ours, theirs, atol=1e-5)
    assert not torch.allclose(ours, base, atol=1e-3)  # the adapter changes the model: the check can fail


def test_a_state_of_another_layout_is_refused(tiny_dir, tmp_path):
    policy = Policy.load(tiny_dir, lora_rank=2, seed=0)
    state = policy.get_state(GLOBAL)
    state.pop(next(iter(state)))
    with pytest.raises(ValueError, match="1 tensors missing"):
        save_peft(policy.model, state, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
