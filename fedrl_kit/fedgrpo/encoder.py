"""The frozen encoder φ of FedGRPO's expert selection (Algorithm 1 lines 1 and 4); why layer 1: docs/fedgrpo.md."""

from __future__ import annotations

import numpy as np
import torch

from fedrl_kit.fedgrpo.args import ENCODERS


def check_encoder_layer(layer: int, num_layers: int) -> None:
    """Refuse a ``fedgrpo.encoder_layer`` the model does not have: its hidden states are 0 (token embeddings) …
    ``num_layers`` (after the last decoder layer); -1 counts from the end."""
    if not -(num_layers + 1) <= layer <= num_layers:
        raise ValueError(f"fedgrpo.encoder_layer must be in [-1, {num_layers}] for this model ({num_layers} decoder "
                         f"layers), got {layer}")


@torch.no_grad()
def encode(policy, texts: list[str], encoder: str = "policy", layer: int = 1, batch_size: int = 256) -> np.ndarray:
    """φ(x): ℓ2-normalised embeddings of ``texts``.  -> [N, d] float64

    Args:
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy` (its base model, adapters off).
        texts: the questions (raw text: no chat template or system prompt is added, whatever ``policy.chat`` is).
        encoder: ``"policy"`` or ``"minilm"`` (``fedgrpo.encoder``).
        layer: which hidden states ``"policy"`` pools: 0 = token embeddings, i = after decoder layer i,
            -1 = last (``fedgrpo.encoder_layer``).
        batch_size: texts per forward pass.
    """
    if encoder not in ENCODERS:
        raise ValueError(f"fedgrpo.encoder must be one of {ENCODERS}, got {encoder!r}")
    if encoder == "minilm":
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError("encoder='minilm' needs the sentence-transformers package (and the "
                              "all-MiniLM-L6-v2 weights available locally); install it or use encoder='policy'") from e
        model = SentenceTransformer("all-MiniLM-L6-v2")
        emb = np.asarray(model.encode(list(texts), batch_size=batch_size), dtype=np.float64)  # [N, d]
    else:
        tok, model = policy.tokenizer, policy.model
        side = tok.padding_side
        tok.padding_side = "right"  # position ids then start at 0 for every row
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        out = []
        try:
            with policy.reference():
                for s in range(0, len(texts), batch_size):
                    enc = tok(list(texts[s:s + batch_size]), return_tensors="pt", padding=True,
                              add_special_tokens=False)  # the question's own tokens, not the chat-rendered prompt
                    ids, mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)  # [b, P]
                    # logits_to_keep=1: the hidden states are all φ needs; a real vocabulary's logits at every
                    # position would cost far more memory than the whole pass (100 × 19 × 151,936 floats: 1.1 GiB)
                    hs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                               logits_to_keep=1).hidden_states
                    check_encoder_layer(layer, len(hs) - 1)
                    h = hs[layer]  # [b, P, d]
                    m = mask.unsqueeze(-1).to(h.dtype)  # [b, P, 1]
                    out.append(((h * m).sum(1) / m.sum(1).clamp(min=1)).float().cpu().numpy())  # [b, d]
        finally:
            tok.padding_side = side
            model.train(was_training)
        emb = np.concatenate(out).astype(np.float64)  # [N, d]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)  # [N, 1]
    return emb / np.where(norms > 0, norms, 1.0)  # [N, d]
