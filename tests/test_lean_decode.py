"""The compact loop's lean decode step (fedrl_kit/speed/lean_decode.py) computes what the model's forward computes, for
Qwen2- and Llama-style models with folded adapters, and steps aside (returns None) for what it does not reproduce."""

import pytest
import torch

from fedrl_kit.speed.lean_decode import lean_decoder
from fedrl_kit.speed.compact import folded_lora
from fedrl_kit.speed.shared_prompt import CACHE_ARG, model_cache


def _lora_model(model, seed=0):
    """``model`` with a LoRA adapter on the seven projections, its values non-zero."""
    from fedrl_kit.policy import adapters

    model = adapters.attach_lora(model, rank=4, alpha=8.0, seed=seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return model.eval()


def _qwen2(tiny_dir):
    from fedrl_kit.policy.hub import load_pretrained

    return _lora_model(load_pretrained(tiny_dir)[0])


def _llama():
    import transformers

    config = transformers.LlamaConfig(vocab_size=50, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      attention_bias=True, tie_word_embeddings=False)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return _lora_model(transformers.LlamaForCausalLM(config))


def _decode_both(model, steps=4):
    """Left-padded prompts prefilled by the model, then ``steps`` decode steps by the model and by the lean step from
    the same cache, rows leaving the batch after the second step. Returns the two lists of [n, 1, V] logits."""
    vocab = model.get_base_model().config.vocab_size
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, vocab, (5, 7), generator=g)
    mask = torch.ones_like(ids)
    for row, pad in enumerate([0, 2, 3, 0, 5]):  # left padding of different lengths
        mask[row, :pad] = 0
    position = (mask.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad(), folded_lora(model):
        step = lean_decoder(model)
        assert step is not None
        out = model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True, logits_to_keep=1)
        cache = model_cache(out)
        keys, values = [layer.keys.clone() for layer in cache.layers], [layer.values.clone() for layer in cache.layers]
        new, pos = out.logits[:, -1].argmax(-1), position[:, -1:]
        by_model, by_lean = [], []
        for t in range(steps):
            if t == 2:  # rows 1 and 3 finish
                keep = torch.tensor([0, 2, 4])
                cache.batch_select_indices(keep)
                keys, values = [k[keep] for k in keys], [v[keep] for v in values]
                new, mask, pos = new[keep], mask[keep], pos[keep]
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
            pos = pos + 1
            by_model.append(model(input_ids=new[:, None], attention_mask=mask, position_ids=pos, **{CACHE_ARG: cache},
                                  use_cache=True).logits)
            by_lean.append(step(new, mask, pos, keys, values))
            new = torch.randint(3, vocab, (new.shape[0],), generator=g)
    return by_model, by_lean


@pytest.mark.parametrize("family", ["qwen2", "llama"])
def test_lean_step_computes_the_models_decode_step(tiny_dir, family):
    model = _qwen2(tiny_dir) if family == "qwen2" else _llama()
    by_model, by_lean = _decode_both(model)
    for a, b in zip(by_model, by_lean):
        assert a.shape == b.shape
        assert torch.allclose(a, b, rtol=0, atol=1e-5), (a - b).abs().max()
    assert not torch.allclose(by_model[0], by_model[1], atol=1e-3)  # the steps differ: each sees its own token


def test_lean_step_reads_the_folded_adapter(tiny_dir):
    """The adapter changes the logits, and the lean step has them with the adapter (not the base's)."""
    model = _qwen2(tiny_dir)
    by_model, by_lean = _decode_both(model)
    with model.disable_adapter():
        base_model, base_lean = _decode_both(model)
    assert (by_model[0] - base_model[0]).abs().max() > 1e-3
    assert torch.allclose(base_model[0], base_lean[0], rtol=0, atol=1e-5)  # adapters off: the base's weights


def test_lean_decoder_steps_aside_for_what_it_does_not_reproduce(tiny_dir):
    model = _qwen2(tiny_dir)
    assert lean_decoder(model) is None  # outside folded_lora: the LoRA layers are not one linear
    with folded_lora(model):
        assert lean_decoder(model) is not None
        layer = model.get_base_model().model.layers[0]
        handle = layer.mlp.register_forward_hook(lambda *a: None)  # e.g. FedMOA's eq. 8 hook
        assert lean_decoder(model) is None
        handle.remove()
        assert lean_decoder(model) is not None
        layer.mlp._hf_hook = object()  # accelerate's offloading hook
        assert lean_decoder(model) is None
        del layer.mlp._hf_hook
        assert lean_decoder(model) is not None
        config = model.get_base_model().config
        config._attn_implementation = "eager"
        assert lean_decoder(model) is None
        config._attn_implementation = "sdpa"
        config.hidden_act = "gelu"
        assert lean_decoder(model) is None
        config.hidden_act = "silu"
        config.rope_parameters = dict(config.rope_parameters, rope_type="linear", factor=2.0)
        assert lean_decoder(model) is None


def test_compact_loop_uses_the_lean_step_and_samples_what_the_model_samples(tiny_dir, monkeypatch):
    """The compact loop with the lean step and with the model called at every step sample the same completions."""
    import fedrl_kit.speed.compact as compact
    from fedrl_kit.policy.hub import load_pretrained
    from fedrl_kit.rollout import generate
    from fedrl_kit.speed import Sampler

    model = _qwen2(tiny_dir)
    tokenizer = load_pretrained(tiny_dir)[1]
    calls = []
    real = compact.lean_decoder
    monkeypatch.setattr(compact, "lean_decoder", lambda m: calls.append(1) or real(m))
    prompts = ["1+1=", "12+30=", "7*8="]
    lean = generate(model, tokenizer, prompts, 4, 10, 1.0, seed=3, sample=Sampler("compact"))
    monkeypatch.setattr(compact, "lean_decoder", lambda m: None)
    called = generate(model, tokenizer, prompts, 4, 10, 1.0, seed=3, sample=Sampler("compact"))
    assert calls and lean.completion_ids.shape[1] > 2
    assert torch.equal(lean.completion_ids, called.completion_ids)
