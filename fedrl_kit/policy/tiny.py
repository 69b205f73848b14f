"""The embedded world's tiny policy: a character-level tokenizer and a ~1.6 M-parameter Qwen2."""

from __future__ import annotations

import string

import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from fedrl_kit.tags import TAGS

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
CHARS = string.digits + string.ascii_letters + " +-*/%=(),.?:;!'\"<>[]{}_#\n"


def build_tokenizer() -> transformers.PreTrainedTokenizerFast:
    """A character-level tokenizer whose four format tags are single tokens.

    Returns:
        A ``PreTrainedTokenizerFast`` with pad/bos/eos/unk set and left padding (for generation).
    """
    vocab = {tok: i for i, tok in enumerate([PAD, BOS, EOS, UNK, *TAGS, *CHARS])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # Every character is its own pre-token; added tokens (the tags) are matched before this.
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, bos_token=BOS, eos_token=EOS, unk_token=UNK, padding_side="left"
    )
    # Not "special": decode(skip_special_tokens=True) must keep the tags the rewards look for.
    fast.add_tokens(list(TAGS))
    return fast


def tiny_config(vocab_size: int, hidden_size: int = 192, num_layers: int = 4, **overrides) -> transformers.Qwen2Config:
    """A small Qwen2 configuration (~1.6 M parameters at the defaults)."""
    cfg = dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 8 // 3,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    cfg.update(overrides)
    return transformers.Qwen2Config(**cfg)


def build_tiny_model(tokenizer, seed: int = 0, **config_overrides) -> transformers.Qwen2ForCausalLM:
    """A freshly initialised Qwen2 causal LM (seeded, float32): ``tiny_config``'s settings and ``config_overrides``."""
    torch.manual_seed(seed)
    vocab_size = config_overrides.pop("vocab_size", len(tokenizer))
    model = transformers.Qwen2ForCausalLM(tiny_config(vocab_size, **config_overrides))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model
